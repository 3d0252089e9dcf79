; PureScript: definitions only.
(function) @def.function
(data) @def.type
(class_declaration) @def.interface
