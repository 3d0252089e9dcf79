; GDScript: definitions only.
(function_definition) @def.function
(class_definition) @def.class
