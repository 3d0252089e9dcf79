; C: functions, structs, unions, enums, typedefs; calls; #include.
(function_definition) @def.function
(struct_specifier name: (_) body: (_)) @def.struct
(union_specifier name: (_) body: (_)) @def.struct
(enum_specifier name: (_) body: (_)) @def.enum
(type_definition) @def.type
(preproc_function_def) @def.macro

(call_expression) @call

(preproc_include) @import

[
  (if_statement) (for_statement) (while_statement) (do_statement) (case_statement)
  (conditional_expression)
] @branch
(binary_expression operator: ["&&" "||"]) @branch

[
  (if_statement) (for_statement) (while_statement) (do_statement) (switch_statement)
] @nest
