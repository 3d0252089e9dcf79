; hlsl: definitions only.
(function_definition) @def.function
(struct_specifier name: (_) body: (_)) @def.struct
