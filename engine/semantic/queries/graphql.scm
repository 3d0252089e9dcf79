; GraphQL: definitions only.
(object_type_definition) @def.type
(interface_type_definition) @def.interface
(enum_type_definition) @def.enum
(input_object_type_definition) @def.type
(operation_definition) @def.function
(fragment_definition) @def.function
