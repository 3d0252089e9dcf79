; Fortran: definitions only.
(module) @def.module
(subroutine) @def.function
(function) @def.function
(derived_type_definition) @def.type
