; PowerShell: definitions only.
(function_statement) @def.function
(class_statement) @def.class
(class_method_definition) @def.function
