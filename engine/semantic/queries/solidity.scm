; Solidity: definitions only.
(contract_declaration) @def.class
(interface_declaration) @def.interface
(library_declaration) @def.module
(struct_declaration) @def.struct
(enum_declaration) @def.enum
(function_definition) @def.function
(modifier_definition) @def.function
(event_definition) @def.function
