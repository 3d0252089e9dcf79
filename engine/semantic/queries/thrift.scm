; Thrift: definitions only.
(struct_definition) @def.struct
(service_definition) @def.interface
(function_definition) @def.function
(enum_definition) @def.enum
