; Python: definitions, calls, imports, branches and nesting for the generic extractor.
(function_definition) @def.function
(class_definition) @def.class

; The callee, not the call: it starts where its call starts, and only these two shapes name
; something callable, so Python never asks the call node for its ``function`` field.
(call function: [(identifier) (attribute)] @callee)

(import_statement) @import
(import_from_statement) @import

[
  (elif_clause) (except_clause) (boolean_operator) (conditional_expression) (case_clause) (for_in_clause)
  (if_clause)
] @branch

[(if_statement) (for_statement) (while_statement)] @branching

[(try_statement) (with_statement) (match_statement)] @nest

(try_statement body: (block) @try)

(global_statement) @global

(await (call function: (_) @awaited))

(assignment
  left: (subscript value: (attribute object: (identifier) @_os attribute: (identifier) @_environ))
  (#eq? @_os "os") (#eq? @_environ "environ")) @global
(assignment
  left: (attribute object: (identifier) @_module)
  (#match? @_module "^(sys|builtins|os)$")) @global
