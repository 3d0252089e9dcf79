; C#: classes, structs, interfaces, enums, records, methods, constructors; calls; using.
(class_declaration) @def.class
(struct_declaration) @def.struct
(interface_declaration) @def.interface
(enum_declaration) @def.enum
(record_declaration) @def.class
(method_declaration) @def.function
(constructor_declaration) @def.function
(local_function_statement) @def.function

(invocation_expression) @call
(object_creation_expression) @call

(using_directive) @import

[(catch_clause) (conditional_expression) (switch_section)] @branch
[(if_statement) (for_statement) (foreach_statement) (while_statement) (do_statement)] @branching
(binary_expression operator: ["&&" "||" "??"]) @branch

[(switch_statement) (try_statement)] @nest

(try_statement body: (block) @try)

(await_expression (invocation_expression) @awaited)
