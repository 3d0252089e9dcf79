"""Java, Kotlin and C# rules: visibility, annotations/attributes, imports and receivers.

Exported means ``public`` in Java and C# (their defaults are package/private), and
anything not ``private``/``protected``/``internal`` in Kotlin (its default is public).
"""

from __future__ import annotations

from tree_sitter import Node

from engine.semantic.lang_base import DefName, LangRules, short_text, text
from engine.semantic.model import ImportRef

_INTERFACE_BODIES = frozenset({"interface_body", "annotation_type_body"})


def _dotted_import(path: str, line: int, *, wildcard: bool = False, alias: str | None = None) -> ImportRef:
    """``a.b.C`` binds C from a.b; ``a.b.*`` binds everything from a.b."""
    if wildcard:
        return ImportRef(path, ("*",), None, line)
    module, _, name = path.rpartition(".")
    if not module:
        return ImportRef(path, (), alias, line)
    return ImportRef(module, (name,), alias, line)


class JavaRules(LangRules):
    name = "java"
    grammar = "java"
    comment_types = frozenset({"line_comment", "block_comment"})

    def _modifiers(self, node: Node) -> Node | None:
        for child in node.children:
            if child.type == "modifiers":
                return child
        return None

    def decorators(self, node: Node, src: bytes) -> tuple[str, ...]:
        mods = self._modifiers(node)
        if mods is None:
            return ()
        return tuple(
            text(c.child_by_field_name("name"), src)
            for c in mods.named_children
            if c.type in ("marker_annotation", "annotation")
        )

    def exported(self, node: Node, name: str, kind: str, src: bytes, qualified: str = "") -> bool:
        mods = self._modifiers(node)
        if mods is not None and "public" in text(mods, src).split():
            return True
        parent = node.parent
        return parent is not None and parent.type in _INTERFACE_BODIES

    def call_parts(self, node: Node, src: bytes) -> tuple[str, str | None] | None:
        if node.type == "object_creation_expression":
            kind = node.child_by_field_name("type")
            return (text(kind, src).split("<", 1)[0], None) if kind is not None else None
        name = node.child_by_field_name("name")
        if name is None:
            return None
        return text(name, src), short_text(node.child_by_field_name("object"), src)

    def imports(self, node: Node, src: bytes) -> list[ImportRef]:
        path_node = next(
            (c for c in node.named_children if c.type in ("scoped_identifier", "identifier")), None
        )
        if path_node is None:
            return []
        wildcard = any(c.type == "asterisk" for c in node.named_children)
        return [_dotted_import(text(path_node, src), node.start_point.row + 1, wildcard=wildcard)]


class CSharpRules(LangRules):
    name = "csharp"
    grammar = "csharp"
    comment_types = frozenset({"comment"})
    call_name_types = frozenset({"identifier", "generic_name"})
    call_member_types = {"member_access_expression": ("expression", "name")}

    def def_name(self, node: Node, kind: str, src: bytes) -> DefName | None:
        name = node.child_by_field_name("name")
        if name is None:
            return None
        return DefName(text(name, src), kind)

    def decorators(self, node: Node, src: bytes) -> tuple[str, ...]:
        out: list[str] = []
        for child in node.children:
            if child.type == "attribute_list":
                out.extend(
                    text(a.child_by_field_name("name"), src)
                    for a in child.named_children
                    if a.type == "attribute"
                )
        return tuple(out)

    def is_async(self, node: Node, src: bytes) -> bool:
        return any(c.type == "modifier" and text(c, src) == "async" for c in node.children)

    def exported(self, node: Node, name: str, kind: str, src: bytes, qualified: str = "") -> bool:
        if any(c.type == "modifier" and text(c, src) == "public" for c in node.children):
            return True
        grand = node.parent.parent if node.parent is not None else None
        return grand is not None and grand.type == "interface_declaration"

    def call_parts(self, node: Node, src: bytes) -> tuple[str, str | None] | None:
        if node.type == "object_creation_expression":
            kind = node.child_by_field_name("type")
            return (text(kind, src).split("<", 1)[0], None) if kind is not None else None
        return super().call_parts(node, src)

    def callee_parts(self, func: Node, src: bytes) -> tuple[str, str | None] | None:
        parts = super().callee_parts(func, src)
        if parts is not None and func.type == "generic_name":
            return parts[0].split("<", 1)[0], None
        return parts

    def imports(self, node: Node, src: bytes) -> list[ImportRef]:
        alias_node = node.child_by_field_name("name")
        target = next(
            (
                c
                for c in node.named_children
                if c.type in ("qualified_name", "identifier") and c != alias_node
            ),
            None,
        )
        if target is None:
            return []
        alias = text(alias_node, src) if alias_node is not None else None
        return [ImportRef(text(target, src), (), alias, node.start_point.row + 1)]


class KotlinRules(LangRules):
    name = "kotlin"
    grammar = "kotlin"
    comment_types = frozenset({"comment", "line_comment", "multiline_comment"})

    def def_name(self, node: Node, kind: str, src: bytes) -> DefName | None:
        if node.type == "secondary_constructor":
            return DefName("constructor", kind)
        name_types = ("simple_identifier",) if node.type == "function_declaration" else ("type_identifier",)
        name = next((c for c in node.named_children if c.type in name_types), None)
        if name is None:
            return None
        if node.type == "class_declaration":
            if any(c.type == "interface" for c in node.children):
                kind = "interface"
            elif any(c.type == "enum_class_body" for c in node.named_children):
                kind = "enum"
        return DefName(text(name, src), kind)

    def scope_name(self, node: Node, src: bytes) -> str | None:
        return None  # companion members are qualified by their class

    def doc(self, node: Node, src: bytes) -> str:
        prev = node.prev_named_sibling
        # The grammar attaches a comment after the imports to the import list.
        if prev is not None and prev.type == "import_list" and prev.named_child_count:
            last = prev.named_children[-1]
            while last.named_child_count and last.type not in self.comment_types:
                last = last.named_children[-1]
            if last.type in self.comment_types and node.start_point.row - last.end_point.row <= 1:
                from engine.semantic.lang_base import collapse, strip_comment

                return collapse(strip_comment(text(last, src)))
        return super().doc(node, src)

    def _modifiers(self, node: Node, src: bytes) -> str:
        mods = next((c for c in node.children if c.type == "modifiers"), None)
        return text(mods, src) if mods is not None else ""

    def signature(self, node: Node, src: bytes) -> str:
        from engine.semantic.lang_base import collapse

        body = next(
            (c for c in node.named_children if c.type in ("function_body", "class_body", "enum_class_body")),
            None,
        )
        end = body.start_byte if body is not None else node.end_byte
        raw = src[node.start_byte : min(end, node.start_byte + 800)].decode("utf-8", "replace")
        return collapse(raw.rstrip().rstrip("{=").rstrip())

    def decorators(self, node: Node, src: bytes) -> tuple[str, ...]:
        mods = next((c for c in node.children if c.type == "modifiers"), None)
        if mods is None:
            return ()
        return tuple(
            text(c, src).lstrip("@").split("(", 1)[0] for c in mods.named_children if c.type == "annotation"
        )

    def is_async(self, node: Node, src: bytes) -> bool:
        return "suspend" in self._modifiers(node, src).split()

    def arity(self, node: Node, kind: str, src: bytes) -> int:
        params = next((c for c in node.named_children if c.type == "function_value_parameters"), None)
        return 0 if params is None else sum(1 for c in params.named_children if c.type == "parameter")

    def exported(self, node: Node, name: str, kind: str, src: bytes, qualified: str = "") -> bool:
        words = self._modifiers(node, src).split()
        return not any(w in ("private", "protected", "internal") for w in words)

    def call_parts(self, node: Node, src: bytes) -> tuple[str, str | None] | None:
        func = node.named_children[0] if node.named_child_count else None
        if func is None:
            return None
        if func.type == "simple_identifier":
            return text(func, src), None
        if func.type == "navigation_expression" and func.named_child_count >= 2:
            suffix = func.named_children[-1]
            ident = next((c for c in suffix.named_children if c.type == "simple_identifier"), None)
            if ident is None:
                return None
            return text(ident, src), short_text(func.named_children[0], src)
        return None

    def imports(self, node: Node, src: bytes) -> list[ImportRef]:
        ident = next((c for c in node.named_children if c.type == "identifier"), None)
        if ident is None:
            return []
        alias_node = next((c for c in node.named_children if c.type == "import_alias"), None)
        alias = None
        if alias_node is not None:
            inner = next((c for c in alias_node.named_children), None)
            alias = text(inner, src) if inner is not None else None
        wildcard = any(c.type == "wildcard_import" for c in node.named_children)
        return [_dotted_import(text(ident, src), node.start_point.row + 1, wildcard=wildcard, alias=alias)]
