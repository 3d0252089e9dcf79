; Bash: functions; commands as calls; source and . as imports.
(function_definition) @def.function

(command) @call

(command
  name: (command_name) @_source
  (#match? @_source "^(source|\\.)$")) @import

[
  (if_statement) (elif_clause) (for_statement) (c_style_for_statement) (while_statement) (case_item)
] @branch
(list ["&&" "||"] @branch)

[(if_statement) (for_statement) (c_style_for_statement) (while_statement) (case_statement)] @nest
