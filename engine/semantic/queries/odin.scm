; Odin: definitions only.
(procedure_declaration) @def.function
(struct_declaration) @def.struct
