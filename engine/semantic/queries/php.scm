; PHP: classes, interfaces, traits, enums, functions, methods; calls; use/require/include.
(class_declaration) @def.class
(interface_declaration) @def.interface
(trait_declaration) @def.trait
(enum_declaration) @def.enum
(function_definition) @def.function
(method_declaration) @def.function

(function_call_expression) @call
(member_call_expression) @call
(nullsafe_member_call_expression) @call
(scoped_call_expression) @call
(object_creation_expression) @call

(namespace_use_declaration) @import
(require_expression) @import
(require_once_expression) @import
(include_expression) @import
(include_once_expression) @import

[(else_if_clause) (case_statement) (catch_clause) (conditional_expression)] @branch
[(if_statement) (for_statement) (foreach_statement) (while_statement) (do_statement)] @branching
(binary_expression operator: ["&&" "||" "and" "or" "??"]) @branch

[(switch_statement) (try_statement)] @nest

(try_statement body: (compound_statement) @try)
