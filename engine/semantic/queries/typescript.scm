; TypeScript/TSX additions on top of javascript.scm.
(interface_declaration) @def.interface
(type_alias_declaration) @def.type
(enum_declaration) @def.enum
(abstract_class_declaration) @def.class
(abstract_method_signature) @def.function
(interface_body (method_signature) @def.function)
; Declarations without a body: a .d.ts file's functions and class methods, overload signatures.
(function_signature) @def.function
(class_body (method_signature) @def.function)
(internal_module) @def.module
; `declare module "fs-extra" { ... }`
(module) @def.module
