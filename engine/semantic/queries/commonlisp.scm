; Common Lisp: definitions only.
(defun) @def.function
