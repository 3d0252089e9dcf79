; Elm: definitions only.
(value_declaration) @def.function
(type_declaration) @def.type
(type_alias_declaration) @def.type
