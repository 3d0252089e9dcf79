; Ada: definitions only.
(package_body) @def.module
(package_declaration) @def.module
(subprogram_body) @def.function
