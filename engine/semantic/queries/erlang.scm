; Erlang: definitions only.
(fun_decl) @def.function
(record_decl) @def.struct
