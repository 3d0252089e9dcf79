; Perl: definitions only.
(subroutine_declaration_statement) @def.function
