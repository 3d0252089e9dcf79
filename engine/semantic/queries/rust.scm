; Rust: functions, impl methods (Type.method), structs, enums, traits, modules, macros; calls; use.
(function_item) @def.function
(function_signature_item) @def.function
(struct_item) @def.struct
(union_item) @def.struct
(enum_item) @def.enum
(trait_item) @def.trait
(type_item) @def.type
(mod_item body: (_)) @def.module
(macro_definition) @def.macro
(impl_item) @scope

(call_expression) @call

(use_declaration) @import

[(match_arm)] @branch
[(if_expression) (for_expression) (while_expression) (loop_expression)] @branching
(binary_expression operator: ["&&" "||"]) @branch

[(match_expression)] @nest

(await_expression (call_expression) @awaited)
