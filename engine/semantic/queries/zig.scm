; Zig: definitions only.
(FnProto function: (_)) @def.function
(VarDecl variable_type_function: (_) (ErrorUnionExpr (SuffixExpr (ContainerDecl)))) @def.struct
