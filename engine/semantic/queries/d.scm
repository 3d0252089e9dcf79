; D: definitions only.
(class_declaration) @def.class
(struct_declaration) @def.struct
(interface_declaration) @def.interface
(enum_declaration) @def.enum
(function_declaration) @def.function
