; Luau: definitions only.
(function_declaration) @def.function
