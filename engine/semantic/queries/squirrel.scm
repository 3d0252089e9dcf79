; Squirrel: definitions only.
(function_declaration) @def.function
(class_declaration) @def.class
