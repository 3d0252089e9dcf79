; Verilog/SystemVerilog: definitions only.
(module_declaration) @def.module
