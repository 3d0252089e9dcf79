; Haskell: definitions only.
(declarations (function) @def.function)
(class_declarations (function) @def.function)
(instance_declarations (function) @def.function)
(data_type) @def.type
(newtype) @def.type
(class) @def.interface
