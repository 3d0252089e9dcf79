; Vim script: definitions only.
(function_definition) @def.function
