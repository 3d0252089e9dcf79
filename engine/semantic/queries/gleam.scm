; Gleam: definitions only.
(function) @def.function
(type_definition) @def.type
