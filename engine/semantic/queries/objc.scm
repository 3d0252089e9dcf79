; Objective-C: definitions only.
(class_interface) @def.class
(class_implementation) @def.class
(protocol_declaration) @def.interface
(method_definition) @def.function
(method_declaration) @def.function
(function_definition) @def.function
