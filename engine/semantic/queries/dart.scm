; Dart: definitions only.
(class_definition) @def.class
(mixin_declaration) @def.class
(enum_declaration) @def.enum
(function_signature) @def.function
