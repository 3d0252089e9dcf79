; R: definitions only (name <- function(...)).
(binary_operator lhs: (identifier) rhs: (function_definition)) @def.function
