; Elixir: definitions only (def/defp/defmacro inside defmodule).
(call target: (identifier) @_kw (#match? @_kw "^(def|defp|defmacro|defmacrop|defguard)$")) @def.function
(call target: (identifier) @_kw (#match? @_kw "^(defmodule|defprotocol)$")) @def.module
