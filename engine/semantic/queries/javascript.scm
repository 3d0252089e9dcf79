; JavaScript (and the shared part of TypeScript/TSX): definitions, calls, imports, branches.
(function_declaration) @def.function
(generator_function_declaration) @def.function
(class_declaration) @def.class
(method_definition) @def.function
(variable_declarator
  name: (identifier)
  value: [(function_expression) (arrow_function) (generator_function)]) @def.function
(variable_declarator name: (identifier) value: (class)) @def.class
(assignment_expression
  left: [(member_expression) (identifier)]
  right: [(function_expression) (arrow_function) (generator_function)]) @def.function
(assignment_expression left: [(member_expression) (identifier)] right: (class)) @def.class
(assignment_expression
  left: (member_expression object: (identifier) @_module property: (property_identifier) @_exports)
  (#eq? @_module "module") (#eq? @_exports "exports")) @def.variable
(assignment_expression
  left: (member_expression object: (identifier) @_exp)
  (#eq? @_exp "exports")) @def.variable
(pair key: (_) value: [(function_expression) (arrow_function) (generator_function)]) @def.function
; An anonymous default export is named `default`, as an importer's module object names it:
; `export default function (config) {...}` and axios's `export default isSupported && function (config) {...}`.
(export_statement value: [(function_expression) (arrow_function) (generator_function)] @def.function)
(export_statement value: (binary_expression right: [(function_expression) (arrow_function)] @def.function))
(export_statement value: (class) @def.class)

(call_expression) @call
(new_expression) @call

(import_statement) @import
(export_statement source: (_)) @import
(call_expression
  function: (identifier) @_require
  arguments: (arguments . (string))
  (#eq? @_require "require")) @import

[(switch_case) (catch_clause) (ternary_expression)] @branch
(binary_expression operator: ["&&" "||" "??"]) @branch

[(if_statement) (for_statement) (for_in_statement) (while_statement) (do_statement)] @branching

[(switch_statement) (try_statement)] @nest

(try_statement body: (statement_block) @try)

(assignment_expression left: (member_expression) @global)

(await_expression (call_expression) @awaited)
