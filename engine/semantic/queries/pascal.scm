; Pascal: definitions only.
(defProc) @def.function
