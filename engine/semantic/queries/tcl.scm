; Tcl: definitions only.
(procedure) @def.function
