; Haxe: definitions only.
(class_declaration) @def.class
(interface_declaration) @def.interface
(function_declaration) @def.function
