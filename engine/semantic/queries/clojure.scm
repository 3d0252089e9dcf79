; Clojure: definitions only ((defn name ...) and friends).
(list_lit . (sym_lit) @_kw (#match? @_kw "^(defn|defn-|defmacro|defmulti)$")) @def.function
(list_lit . (sym_lit) @_kw (#match? @_kw "^(defprotocol|definterface)$")) @def.interface
(list_lit . (sym_lit) @_kw (#match? @_kw "^(defrecord|deftype)$")) @def.struct
