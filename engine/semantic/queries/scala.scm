; Scala: definitions only.
(class_definition) @def.class
(object_definition) @def.class
(trait_definition) @def.trait
(enum_definition) @def.enum
(function_definition) @def.function
(function_declaration) @def.function
