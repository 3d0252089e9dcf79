; OCaml: definitions only.
(let_binding pattern: (value_name) (parameter)) @def.function
(type_binding) @def.type
(module_binding) @def.module
