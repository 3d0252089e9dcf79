; Ruby: classes, modules, methods, singleton methods; calls; require/require_relative/load.
(class) @def.class
(module) @def.module
(method) @def.function
(singleton_method) @def.function

(call) @call

(call
  method: (identifier) @_require
  (#match? @_require "^(require|require_relative|load)$")) @import

[(elsif) (when) (rescue) (conditional) (if_modifier) (unless_modifier) (while_modifier) (until_modifier)] @branch
[(if) (unless) (while) (until) (for)] @branching
(binary operator: ["&&" "||" "and" "or"]) @branch

[(case) (begin)] @nest

(begin) @try
(body_statement (rescue)) @try
