; Protocol Buffers: definitions only.
(message) @def.struct
(service) @def.interface
(rpc) @def.function
(enum) @def.enum
