; Kotlin: classes, interfaces, enums, objects, functions; calls; imports.
(class_declaration) @def.class
(object_declaration) @def.class
(companion_object) @scope
(function_declaration) @def.function
(secondary_constructor) @def.function

(call_expression) @call

(import_header) @import

[(when_entry) (catch_block) (conjunction_expression) (disjunction_expression) (elvis_expression)] @branch
[(if_expression) (for_statement) (while_statement) (do_while_statement)] @branching

[(when_expression) (try_expression)] @nest

(try_expression (statements) @try)
