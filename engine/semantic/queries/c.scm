; C: functions, structs, unions, enums, typedefs; calls; #include.
(function_definition) @def.function
(struct_specifier name: (_) body: (_)) @def.struct
(union_specifier name: (_) body: (_)) @def.struct
(enum_specifier name: (_) body: (_)) @def.enum
(type_definition) @def.type
(preproc_function_def) @def.macro

(call_expression) @call

(preproc_include) @import

[(case_statement) (conditional_expression)] @branch
[(if_statement) (for_statement) (while_statement) (do_statement)] @branching
(binary_expression operator: ["&&" "||"]) @branch

[(switch_statement)] @nest
