; CMake: definitions only.
(function_def) @def.function
(macro_def) @def.macro
