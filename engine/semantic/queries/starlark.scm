; Starlark (Bazel): definitions only.
(function_definition) @def.function
