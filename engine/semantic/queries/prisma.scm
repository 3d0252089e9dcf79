; Prisma: definitions only.
(model_block) @def.struct
(enum_block) @def.enum
