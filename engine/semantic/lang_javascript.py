"""JavaScript, TypeScript and TSX rules: assignment definitions, exports, imports, receivers.

``res.send = function send() {}`` is named by what it is assigned to (``res.send``);
``module.exports = ...`` and ``exports.x = ...`` are definitions too. Object-literal
methods are qualified by the variable or property the object is bound to.
Import bindings: ``import x from 'm'`` and ``const x = require('m')`` give ``alias`` x;
``import {a} from 'm'`` and ``const {a} = require('m')`` give ``names`` (a,).
"""

from __future__ import annotations

from tree_sitter import Node

from engine.semantic.lang_base import DefName, LangRules, collapse, short_text, text
from engine.semantic.model import DEFAULT_EXPORT, ImportRef

_FUNCTION_VALUES = frozenset({"function_expression", "arrow_function", "generator_function", "function"})
_WRAPPERS = frozenset(
    {
        "lexical_declaration",
        "variable_declaration",
        "expression_statement",
        "export_statement",
        "ambient_declaration",  # TypeScript `declare function f(): T;`
    }
)
# Roots whose member assignment changes process-wide state.
_GLOBAL_ROOTS = ("window.", "globalThis.", "global.", "process.env", "document.", "self.")
_EXPORT_PREFIXES = ("exports.", "module.exports")
_MAX_STRING_BYTES = 300
# Object literals nested deeper than this are data, not namespaces worth naming.
_MAX_OWNER_DEPTH = 8
# Ancestors searched for the function or class a `this.x = ...` assignment is in.
_MAX_THIS_DEPTH = 40


def _default_export(node: Node) -> bool:
    """``node`` is the value of ``export default`` (``export default function (config) {...}``), or
    the function that value ends in (``export default isSupported && function (config) {...}``)."""
    parent = node.parent
    if (
        parent is not None
        and parent.type == "binary_expression"
        and parent.child_by_field_name("right") == node
    ):
        parent = parent.parent
    return (
        parent is not None
        and parent.type == "export_statement"
        and any(c.type == "default" for c in parent.children)
    )


def _string_value(node: Node | None, src: bytes) -> str | None:
    if node is None or node.type not in ("string", "template_string"):
        return None
    if node.end_byte - node.start_byte > _MAX_STRING_BYTES:
        return None
    return text(node, src)[1:-1]


class JavaScriptRules(LangRules):
    name = "javascript"
    grammar = "javascript"
    query_files: tuple[str, ...] = ("javascript", "jsx")
    comment_types = frozenset({"comment"})
    leading_types = frozenset({"decorator"})
    doc_skip_types = leading_types
    # The names the last file exported by list, with that file's source (see _listed_exports).
    _exports_cache: tuple[bytes, frozenset[str]] | None = None

    # ---- helpers ---------------------------------------------------------
    def _value(self, node: Node) -> Node:
        """The function/class node behind a declarator, assignment or pair definition."""
        kind = node.type
        if kind == "variable_declarator":
            return node.child_by_field_name("value") or node
        if kind == "assignment_expression":
            return node.child_by_field_name("right") or node
        if kind == "pair":
            return node.child_by_field_name("value") or node
        return node

    def _object_owner(self, obj: Node, src: bytes) -> str | None:
        """Name an object literal is bound to: ``const o = {...}``, ``a.b = {...}``, ``k: {...}``."""
        keys: list[str] = []
        current: Node | None = obj
        for _ in range(_MAX_OWNER_DEPTH):
            parent = current.parent if current is not None else None
            if parent is None:
                return None
            if parent.type == "variable_declarator":
                name = parent.child_by_field_name("name")
                if name is None or name.type != "identifier":
                    return None
                return ".".join([text(name, src), *reversed(keys)])
            if parent.type == "assignment_expression":
                left = short_text(parent.child_by_field_name("left"), src)
                return ".".join([left, *reversed(keys)]) if left else None
            if parent.type != "pair":
                return None
            keys.append(text(parent.child_by_field_name("key"), src))
            current = parent.parent
            if current is None or current.type != "object":
                return ".".join(reversed(keys))
        return None

    def _this_owner(self, node: Node, src: bytes) -> str | None:
        """The class or constructor function whose instance ``this`` is at ``node``:
        ``class WebGLRenderer { constructor() { this.setSize = function () {} } }`` and
        ``function Foo() { this.bar = function () {} }``; None when it cannot be named."""
        current = node.parent
        for _ in range(_MAX_THIS_DEPTH):
            if current is None:
                return None
            kind = current.type
            if kind == "method_definition":  # any method: `this` is an instance of its class
                body = current.parent
                owner = body.parent if body is not None else None
                return self._bound_name(owner, src) if owner is not None else None
            if kind in ("function_declaration", "generator_function_declaration"):
                return text(current.child_by_field_name("name"), src) or None
            if kind in ("function_expression", "generator_function"):
                return self._bound_name(current, src)
            current = current.parent  # arrow functions and blocks keep the outer `this`
        return None

    def _bound_name(self, node: Node, src: bytes) -> str | None:
        """A class or function's own name, else the plain name it is bound to (``var Foo = ...``)."""
        own = node.child_by_field_name("name")
        if own is not None:
            return text(own, src)
        parent = node.parent
        if parent is not None and parent.type == "variable_declarator":
            name = parent.child_by_field_name("name")
            if name is not None and name.type == "identifier":
                return text(name, src)
        return None

    # ---- definitions -------------------------------------------------------
    def def_name(self, node: Node, kind: str, src: bytes) -> DefName | None:
        node_type = node.type
        if node_type == "assignment_expression":
            left = node.child_by_field_name("left")
            name = short_text(left, src)
            if not name:
                return None
            right = node.child_by_field_name("right")
            if kind == "variable" and right is not None:
                if right.type in _FUNCTION_VALUES:
                    kind = "function"
                elif right.type == "class":
                    kind = "class"
            if name.startswith("this.") and name.count(".") == 1:
                # A method the constructor sets on the instance: `WebGLRenderer.setPixelRatio`,
                # not `this.setPixelRatio` (which no search for the class's method found).
                owner = self._this_owner(node, src)
                if owner:
                    return DefName(name[5:], kind, owner=owner, instance=True)
            return DefName(name, kind, owner="") if "." in name else DefName(name, kind)
        if node_type == "pair":
            key = node.child_by_field_name("key")
            name = text(key, src).strip("'\"")
            parent = node.parent
            owner = self._object_owner(parent, src) if parent is not None else None
            return DefName(name, "method" if owner else kind, owner=owner)
        name_node = node.child_by_field_name("name")
        if name_node is None:
            return DefName(DEFAULT_EXPORT, kind) if _default_export(node) else None
        name = text(name_node, src)
        if node_type == "module":  # `declare module "fs-extra"`: the module's name, unquoted
            name = name.strip("'\"")
        if node_type == "method_definition":
            parent = node.parent
            if parent is not None and parent.type == "object":
                owner = self._object_owner(parent, src)
                return DefName(name, "method" if owner else "function", owner=owner)
        return DefName(name, kind)

    def outer_node(self, node: Node) -> Node:
        current = node
        parent = current.parent
        if current.type == "variable_declarator" and parent is not None:
            current, parent = parent, parent.parent
        while parent is not None and parent.type in _WRAPPERS:
            current, parent = parent, parent.parent
        return current

    def signature(self, node: Node, src: bytes) -> str:
        value = self._value(node)
        body = value.child_by_field_name("body")
        if body is None or body.type not in (
            "statement_block",
            "class_body",
            "interface_body",
            "object_type",
            "enum_body",
        ):
            if node.type == "assignment_expression" and value.type == "object":
                return collapse(text(node.child_by_field_name("left"), src) + " = {…}")
            first = src[node.start_byte : node.end_byte].decode("utf-8", "replace").split("\n", 1)[0]
            return collapse(first.rstrip().rstrip(";"))  # a declaration's `;` is not its signature
        raw = src[node.start_byte : body.start_byte].decode("utf-8", "replace")
        return collapse(raw.rstrip().rstrip("{").rstrip())

    def decorators(self, node: Node, src: bytes) -> tuple[str, ...]:
        found: list[str] = []
        for holder in (node, node.parent):
            if holder is None or holder.type not in (
                "class_declaration",
                "export_statement",
                "abstract_class_declaration",
            ):
                continue
            found.extend(text(c, src) for c in holder.children if c.type == "decorator")
        prev = node.prev_sibling
        while prev is not None and prev.type == "decorator":
            found.insert(0, text(prev, src))
            prev = prev.prev_sibling
        return tuple(d.lstrip("@").split("(", 1)[0].strip() for d in found)

    def is_async(self, node: Node, src: bytes) -> bool:
        value = self._value(node)
        return any(child.type == "async" for child in value.children[:3])

    def arity(self, node: Node, kind: str, src: bytes) -> int:
        value = self._value(node)
        params = value.child_by_field_name("parameters")
        if params is None:
            return 1 if value.child_by_field_name("parameter") is not None else 0
        count = 0
        for child in params.named_children:
            if child.type == "comment":
                continue
            pattern = child.child_by_field_name("pattern")
            if pattern is not None and pattern.type == "this":
                continue
            count += 1
        return count

    def exported(self, node: Node, name: str, kind: str, src: bytes, qualified: str = "") -> bool:
        if qualified.startswith(_EXPORT_PREFIXES):
            return True
        if node.type == "assignment_expression" and not qualified.startswith("this."):
            left = node.child_by_field_name("left")
            target = left.child_by_field_name("object") if left is not None else None
            if target is not None and target.type == "this":  # a method set on the instance
                return not name.startswith("#")
        if node.type in ("method_definition", "method_signature", "abstract_method_signature"):
            if name.startswith("#"):
                return False
            return not any(
                c.type == "accessibility_modifier" and text(c, src) in ("private", "protected")
                for c in node.children
            )
        outer = self.outer_node(node)
        if outer.type == "export_statement":
            return True
        program = outer.parent
        if program is None or program.type != "program" or "." in qualified:
            return False
        return name in self._listed_exports(program, src)

    def _listed_exports(self, program: Node, src: bytes) -> frozenset[str]:
        """The names a module exports by name rather than in place: ``class A {}`` then
        ``export { A, b as bee }`` or ``export default c`` (three.js exports every class so), or
        in CommonJS ``module.exports = { A }``.
        Worked out once per file (the last file's answer is kept)."""
        cached = self._exports_cache
        if cached is not None and cached[0] is src:
            return cached[1]
        names: set[str] = set()
        for statement in program.named_children:
            if statement.type == "expression_statement":
                names.update(self._commonjs_exports(statement, src))
                continue
            if statement.type != "export_statement" or statement.child_by_field_name("source") is not None:
                continue  # `export { d } from './d.js'` re-exports another module's names
            value = statement.child_by_field_name("value")
            if value is not None and value.type == "identifier":
                names.add(text(value, src))
            for clause in statement.named_children:
                if clause.type != "export_clause":
                    continue
                for spec in clause.named_children:
                    local = spec.child_by_field_name("name") if spec.type == "export_specifier" else None
                    if local is not None:
                        names.add(text(local, src))
        found = frozenset(names)
        self._exports_cache = (src, found)
        return found

    def _commonjs_exports(self, statement: Node, src: bytes) -> list[str]:
        """Names a CommonJS module exports by assignment: ``module.exports = Router``,
        ``module.exports = { a, bee: b }``, ``exports.d = d``, ``module.exports.C = C``."""
        assign = statement.named_children[0] if statement.named_child_count else None
        if assign is None or assign.type != "assignment_expression":
            return []
        target = short_text(assign.child_by_field_name("left"), src) or ""
        if target != "module.exports" and not target.startswith(("module.exports.", "exports.")):
            return []
        value = assign.child_by_field_name("right")
        if value is None:
            return []
        if value.type == "identifier":
            return [text(value, src)]
        if value.type != "object" or target != "module.exports":
            return []
        names = []
        for member in value.named_children:
            if member.type == "shorthand_property_identifier":
                names.append(text(member, src))
            elif member.type == "pair":
                bound = member.child_by_field_name("value")
                if bound is not None and bound.type == "identifier":
                    names.append(text(bound, src))
        return names

    # ---- calls and imports -------------------------------------------------
    def call_parts(self, node: Node, src: bytes) -> tuple[str, str | None] | None:
        if node.type in ("jsx_opening_element", "jsx_self_closing_element"):
            tag = node.child_by_field_name("name")
            if tag is None:
                return None
            if tag.type == "member_expression":
                return text(tag.child_by_field_name("property"), src), short_text(
                    tag.child_by_field_name("object"), src
                )
            name = text(tag, src)
            # Lower-case tags are HTML elements, not components.
            return (name, None) if name[:1].isupper() else None
        if node.type == "new_expression":
            ctor = node.child_by_field_name("constructor")
            if ctor is None:
                return None
            if ctor.type == "member_expression":
                return text(ctor.child_by_field_name("property"), src), short_text(
                    ctor.child_by_field_name("object"), src
                )
            return (text(ctor, src), None) if ctor.type == "identifier" else None
        func = node.child_by_field_name("function")
        if func is None:
            return None
        kind = func.type
        if kind == "identifier":
            return text(func, src), None
        if kind == "member_expression":
            prop = func.child_by_field_name("property")
            return text(prop, src), short_text(func.child_by_field_name("object"), src)
        if kind == "import":
            return "import", None
        return None

    def imports(self, node: Node, src: bytes) -> list[ImportRef]:
        line = node.start_point.row + 1
        if node.type == "call_expression":
            args = node.child_by_field_name("arguments")
            module = _string_value(args.named_children[0], src) if args and args.named_child_count else None
            if module is None:
                return []
            parent = node.parent
            if parent is not None and parent.type == "variable_declarator":
                target = parent.child_by_field_name("name")
                if target is not None and target.type == "identifier":
                    return [ImportRef(module, (), text(target, src), line)]
                if target is not None and target.type == "object_pattern":
                    bound = tuple(
                        text(c.child_by_field_name("key") or c, src)
                        for c in target.named_children
                        if c.type in ("shorthand_property_identifier_pattern", "pair_pattern")
                    )
                    return [ImportRef(module, bound, None, line)]
            return [ImportRef(module, (), None, line)]
        module = _string_value(node.child_by_field_name("source"), src)
        if module is None:
            return []
        refs: list[ImportRef] = []
        names: list[str] = []
        clause = next((c for c in node.named_children if c.type in ("import_clause", "export_clause")), None)
        if clause is not None:
            for child in clause.named_children:
                if child.type == "identifier":
                    refs.append(ImportRef(module, (), text(child, src), line))
                elif child.type == "namespace_import":
                    alias = next((c for c in child.named_children if c.type == "identifier"), None)
                    refs.append(ImportRef(module, (), text(alias, src) if alias else None, line))
                elif child.type in ("named_imports", "export_specifier", "import_specifier"):
                    specs = child.named_children if child.type == "named_imports" else [child]
                    for spec in specs:
                        if spec.type not in ("import_specifier", "export_specifier"):
                            continue
                        name = text(spec.child_by_field_name("name"), src)
                        alias_node = spec.child_by_field_name("alias")
                        if alias_node is not None:
                            refs.append(ImportRef(module, (name,), text(alias_node, src), line))
                        else:
                            names.append(name)
        if names or not refs:
            refs.insert(0, ImportRef(module, tuple(names), None, line))
        return refs

    def global_mutation(self, node: Node, src: bytes) -> str | None:
        target = short_text(node, src)
        if target and target.startswith(_GLOBAL_ROOTS):
            return target
        return None


class TypeScriptRules(JavaScriptRules):
    name = "typescript"
    grammar = "typescript"
    query_files: tuple[str, ...] = ("javascript", "typescript")


class TsxRules(TypeScriptRules):
    name = "tsx"
    grammar = "tsx"
    query_files: tuple[str, ...] = ("javascript", "typescript", "jsx")
