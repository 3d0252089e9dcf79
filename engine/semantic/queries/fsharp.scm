; F#: definitions only.
(function_or_value_defn) @def.function
(type_definition) @def.type
(module_defn) @def.module
