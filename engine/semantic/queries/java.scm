; Java: classes, interfaces, enums, records, annotations, methods, constructors; calls; imports.
(class_declaration) @def.class
(interface_declaration) @def.interface
(enum_declaration) @def.enum
(record_declaration) @def.class
(annotation_type_declaration) @def.interface
(method_declaration) @def.function
(constructor_declaration) @def.function

(method_invocation) @call
(object_creation_expression) @call

(import_declaration) @import

[(catch_clause) (ternary_expression) (switch_label)] @branch
[(if_statement) (for_statement) (enhanced_for_statement) (while_statement) (do_statement)] @branching
(binary_expression operator: ["&&" "||"]) @branch

[(switch_expression) (try_statement) (try_with_resources_statement)] @nest

(try_statement body: (block) @try)
(try_with_resources_statement body: (block) @try)
