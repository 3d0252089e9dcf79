; Emacs Lisp: definitions only.
(function_definition) @def.function
(macro_definition) @def.macro
