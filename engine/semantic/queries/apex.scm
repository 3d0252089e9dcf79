; Apex: definitions only.
(class_declaration) @def.class
(interface_declaration) @def.interface
(enum_declaration) @def.enum
(method_declaration) @def.function
(constructor_declaration) @def.function
