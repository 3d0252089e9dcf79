; C++: functions, methods (in-class and Class::method), classes, structs, enums; calls; #include.
(function_definition) @def.function
(class_specifier name: (_) body: (_)) @def.class
(struct_specifier name: (_) body: (_)) @def.struct
(union_specifier name: (_) body: (_)) @def.struct
(enum_specifier name: (_) body: (_)) @def.enum
(alias_declaration) @def.type
(preproc_function_def) @def.macro

(call_expression) @call
(new_expression) @call

(preproc_include) @import
(using_declaration) @import

[(case_statement) (conditional_expression) (catch_clause)] @branch
[(if_statement) (for_statement) (for_range_loop) (while_statement) (do_statement)] @branching
(binary_expression operator: ["&&" "||"]) @branch

[(switch_statement) (try_statement)] @nest

(try_statement body: (compound_statement) @try)
