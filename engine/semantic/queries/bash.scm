; Bash: functions; commands as calls; source and . as imports.
(function_definition) @def.function

(command) @call

(command
  name: (command_name) @_source
  (#match? @_source "^(source|\\.)$")) @import

[(elif_clause) (case_item)] @branch
[(if_statement) (for_statement) (c_style_for_statement) (while_statement)] @branching
(list ["&&" "||"] @branch)

[(case_statement)] @nest
