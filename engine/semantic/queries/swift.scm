; Swift: classes, structs, enums, actors, protocols, functions, initialisers; calls; imports.
(class_declaration declaration_kind: ["class" "struct" "enum" "actor"]) @def.class
(class_declaration declaration_kind: "extension") @scope
(protocol_declaration) @def.interface
(function_declaration) @def.function
(protocol_function_declaration) @def.function
(init_declaration) @def.function

(call_expression) @call

(import_declaration) @import

[(switch_entry) (catch_block) (ternary_expression) (conjunction_expression) (disjunction_expression) (nil_coalescing_expression)] @branch
[(if_statement) (guard_statement) (for_statement) (while_statement) (repeat_while_statement)] @branching

[(switch_statement) (do_statement)] @nest

(do_statement (statements) @try)

(await_expression (call_expression) @awaited)
