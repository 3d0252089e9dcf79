"""Swift rules: class/struct/enum/actor kinds, extensions as scopes, visibility, imports.

Exported means anything not ``private``/``fileprivate`` (Swift's default is internal,
visible to the whole module).
"""

from __future__ import annotations

from tree_sitter import Node

from engine.semantic.lang_base import DefName, LangRules, collapse, short_text, text
from engine.semantic.model import ImportRef

_KIND_BY_KEYWORD = {"class": "class", "struct": "struct", "enum": "enum", "actor": "class"}


class SwiftRules(LangRules):
    name = "swift"
    grammar = "swift"
    comment_types = frozenset({"comment", "multiline_comment"})

    def def_name(self, node: Node, kind: str, src: bytes) -> DefName | None:
        if node.type == "init_declaration":
            return DefName("init", kind)
        name = node.child_by_field_name("name")
        if name is None:
            return None
        if node.type == "class_declaration":
            keyword = node.child_by_field_name("declaration_kind")
            kind = _KIND_BY_KEYWORD.get(text(keyword, src), kind) if keyword is not None else kind
        return DefName(text(name, src), kind)

    def scope_name(self, node: Node, src: bytes) -> str | None:
        name = node.child_by_field_name("name")
        return text(name, src) if name is not None else None

    def signature(self, node: Node, src: bytes) -> str:
        body = node.child_by_field_name("body")
        end = body.start_byte if body is not None else node.end_byte
        raw = src[node.start_byte : min(end, node.start_byte + 800)].decode("utf-8", "replace")
        return collapse(raw.rstrip().rstrip("{").rstrip())

    def _modifiers(self, node: Node, src: bytes) -> list[str]:
        mods = next((c for c in node.children if c.type == "modifiers"), None)
        return text(mods, src).split() if mods is not None else []

    def decorators(self, node: Node, src: bytes) -> tuple[str, ...]:
        return tuple(w.lstrip("@").split("(", 1)[0] for w in self._modifiers(node, src) if w.startswith("@"))

    def is_async(self, node: Node, src: bytes) -> bool:
        return any(c.type == "async" for c in node.children)

    def arity(self, node: Node, kind: str, src: bytes) -> int:
        return sum(1 for c in node.named_children if c.type == "parameter")

    def exported(self, node: Node, name: str, kind: str, src: bytes, qualified: str = "") -> bool:
        return not any(w in ("private", "fileprivate") for w in self._modifiers(node, src))

    def call_parts(self, node: Node, src: bytes) -> tuple[str, str | None] | None:
        func = node.named_children[0] if node.named_child_count else None
        if func is None:
            return None
        suffix_node = node.named_children[-1]
        if (
            suffix_node.type == "call_suffix"
            and src[suffix_node.start_byte : suffix_node.start_byte + 1] == b"["
        ):
            return None  # subscripts parse as calls
        if func.type == "simple_identifier":
            return text(func, src), None
        if func.type == "navigation_expression":
            suffix = func.child_by_field_name("suffix")
            ident = suffix.child_by_field_name("suffix") if suffix is not None else None
            if ident is None:
                return None
            target = func.child_by_field_name("target")
            if target is not None and target.type in ("try_expression", "await_expression"):
                target = target.child_by_field_name("expr") or target
            return text(ident, src), short_text(target, src)
        return None

    def imports(self, node: Node, src: bytes) -> list[ImportRef]:
        ident = next((c for c in node.named_children if c.type == "identifier"), None)
        if ident is None:
            return []
        return [ImportRef(text(ident, src), (), None, node.start_point.row + 1)]
