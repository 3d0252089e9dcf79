; Julia: definitions only.
(function_definition) @def.function
(struct_definition) @def.struct
(abstract_definition) @def.type
(module_definition) @def.module
(macro_definition) @def.macro
