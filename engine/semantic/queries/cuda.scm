; cuda: definitions only.
(function_definition) @def.function
(struct_specifier name: (_) body: (_)) @def.struct
(class_specifier name: (_) body: (_)) @def.class
