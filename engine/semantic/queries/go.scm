; Go: functions, methods (named Receiver.Method), structs, interfaces, types; calls; imports.
(function_declaration) @def.function
(method_declaration) @def.method
(type_spec type: (struct_type)) @def.struct
(type_spec type: (interface_type)) @def.interface
(type_spec) @def.type
(method_elem) @def.function

(call_expression) @call

(import_spec) @import

[(expression_case) (type_case) (communication_case)] @branch
[(if_statement) (for_statement)] @branching
(binary_expression operator: ["&&" "||"]) @branch

[(expression_switch_statement) (type_switch_statement) (select_statement)] @nest
