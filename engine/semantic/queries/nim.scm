; Nim: definitions only.
(proc_declaration) @def.function
(func_declaration) @def.function
(method_declaration) @def.function
(iterator_declaration) @def.function
(template_declaration) @def.macro
(macro_declaration) @def.macro
(type_declaration) @def.type
