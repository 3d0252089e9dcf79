"""Rust rules: ``impl Type`` methods are ``Type.method``; exported means ``pub``.

Only interprets nodes the Rust query captured; the walk is in ``extract.py``.
"""

from __future__ import annotations

from tree_sitter import Node

from engine.semantic.lang_base import LangRules, collapse, text
from engine.semantic.model import ImportRef

_GENERIC_WRAPPERS = frozenset({"generic_type", "reference_type", "pointer_type"})


class RustRules(LangRules):
    name = "rust"
    grammar = "rust"
    comment_types = frozenset({"line_comment", "block_comment"})
    doc_skip_types = frozenset({"attribute_item"})
    leading_types = doc_skip_types
    param_skip_types = frozenset({"self_parameter", "attribute_item", "line_comment", "block_comment"})
    call_name_types = frozenset({"identifier"})
    call_member_types = {"field_expression": ("value", "field"), "scoped_identifier": ("path", "name")}

    def scope_name(self, node: Node, src: bytes) -> str | None:
        target = node.child_by_field_name("type")
        while target is not None and target.type in _GENERIC_WRAPPERS:
            target = target.child_by_field_name("type")
        if target is None:
            return None
        return text(target, src).rsplit("::", 1)[-1]

    def callee_parts(self, func: Node, src: bytes) -> tuple[str, str | None] | None:
        if func.type == "generic_function":
            inner = func.child_by_field_name("function")
            return self.callee_parts(inner, src) if inner is not None else None
        return super().callee_parts(func, src)

    def decorators(self, node: Node, src: bytes) -> tuple[str, ...]:
        return tuple(collapse(text(a, src)[2:-1], 60) for a in self.preceding(node, self.doc_skip_types))

    def is_async(self, node: Node, src: bytes) -> bool:
        return any(c.type == "function_modifiers" and "async" in text(c, src) for c in node.children)

    def exported(self, node: Node, name: str, kind: str, src: bytes, qualified: str = "") -> bool:
        if any(c.type == "visibility_modifier" for c in node.children):
            return True
        container = node.parent.parent if node.parent is not None else None
        # Trait items and trait-impl methods are as public as the trait.
        return container is not None and (
            container.type == "trait_item"
            or (container.type == "impl_item" and container.child_by_field_name("trait") is not None)
        )

    def imports(self, node: Node, src: bytes) -> list[ImportRef]:
        line = node.start_point.row + 1
        arg = node.child_by_field_name("argument")
        if arg is None:
            return []
        return _use_refs(arg, "", src, line, 0)


def _join(prefix: str, part: str) -> str:
    return f"{prefix}::{part}" if prefix else part


# Nested ``use a::{b::{c}}`` groups deeper than this are flattened into one text import.
_MAX_USE_DEPTH = 16


def _use_refs(node: Node, prefix: str, src: bytes, line: int, depth: int) -> list[ImportRef]:
    kind = node.type
    if depth > _MAX_USE_DEPTH:
        return [ImportRef(_join(prefix, text(node, src)[:200]), (), None, line)]
    if kind == "scoped_identifier":
        path = node.child_by_field_name("path")
        name = text(node.child_by_field_name("name"), src)
        module = _join(prefix, text(path, src)) if path is not None else prefix
        return [ImportRef(module, (name,), None, line)]
    if kind == "use_as_clause":
        path = node.child_by_field_name("path")
        alias = text(node.child_by_field_name("alias"), src)
        if path is not None and path.type == "scoped_identifier":
            (ref,) = _use_refs(path, prefix, src, line, depth + 1)
            return [ImportRef(ref.module, ref.names, alias, line)]
        return [ImportRef(_join(prefix, text(path, src)), (), alias, line)]
    if kind == "scoped_use_list":
        path = node.child_by_field_name("path")
        base = _join(prefix, text(path, src)) if path is not None else prefix
        listing = node.child_by_field_name("list")
        return _use_refs(listing, base, src, line, depth + 1) if listing is not None else []
    if kind == "use_list":
        names: list[str] = []
        out: list[ImportRef] = []
        for child in node.named_children:
            if child.type in ("identifier", "self"):
                names.append(text(child, src))
            elif child.type in ("line_comment", "block_comment"):
                continue
            else:
                out.extend(_use_refs(child, prefix, src, line, depth + 1))
        return ([ImportRef(prefix, tuple(names), None, line)] if names else []) + out
    if kind == "use_wildcard":
        inner = node.named_children[0] if node.named_children else None
        return [
            ImportRef(_join(prefix, text(inner, src)) if inner is not None else prefix, ("*",), None, line)
        ]
    return [ImportRef(_join(prefix, text(node, src)), (), None, line)]
