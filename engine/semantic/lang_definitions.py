"""Rules for "definitions"-level languages: find a definition's name in any grammar.

These languages get symbols only (no calls, imports or risk beyond complexity). The name
is read from a named field when the grammar has one, else from the first identifier-like
child, searched breadth-first through the definition's header.
"""

from __future__ import annotations

from tree_sitter import Node

from engine.semantic.lang_base import DefName, LangRules, text

# Fields that hold a definition's name across the grammars we list.
NAME_FIELDS = ("name", "function", "variable_type_function", "lhs")
# Node types that are plain names in those grammars.
NAME_TYPES = frozenset(
    {
        "identifier",
        "name",
        "type_identifier",
        "constant",
        "atom",
        "bareword",
        "upper_case_identifier",
        "lower_case_identifier",
        "sym_name",
        "value_name",
        "type_constructor",
        "module_name",
        "constructor",
        "variable",
        "IDENTIFIER",
        "simple_identifier",
        "word",
        "function_name",
        "simple_name",
        "unquoted_argument",
        "symbol",
        "sym_lit",
        "simple_word",
        "package",
    }
)
# How far below the definition node the header search goes before giving up.
MAX_NAME_DEPTH = 4
# Names longer than this are expressions, not names.
MAX_NAME_CHARS = 120


def _find_name(node: Node, src: bytes) -> str | None:
    level = [node]
    for _ in range(MAX_NAME_DEPTH):
        below: list[Node] = []
        for current in level:
            for child in current.named_children:
                if child.type in NAME_TYPES:
                    return text(child, src)
                below.append(child)
        level = below
    return None


class GenericRules(LangRules):
    """Definitions only; the language and grammar names are set per instance."""

    def __init__(self, language: str = "") -> None:
        self.name = language
        self.grammar = language

    def def_name(self, node: Node, kind: str, src: bytes) -> DefName | None:
        declarator = node.child_by_field_name("declarator")
        if declarator is not None and node.child_by_field_name("name") is None:
            # C-like grammars: follow the declarator chain to the declared name.
            inner = declarator.child_by_field_name("declarator")
            while inner is not None:
                declarator, inner = inner, inner.child_by_field_name("declarator")
            if declarator.type in NAME_TYPES:
                return DefName(text(declarator, src), kind)
        for field in NAME_FIELDS:
            child = node.child_by_field_name(field)
            if child is None:
                continue
            if child.type in NAME_TYPES or child.end_byte - child.start_byte <= MAX_NAME_CHARS:
                value: str | None = text(child, src)  # may be dotted, such as Lua's M.run
            else:
                value = _find_name(child, src)
            if value:
                return DefName(value.replace(":", "."), kind)
        value = _find_name(node, src)
        return DefName(value, kind) if value else None

    def signature(self, node: Node, src: bytes) -> str:
        from engine.semantic.lang_base import collapse

        return collapse(text(node, src).split("\n", 1)[0])


class ClojureRules(GenericRules):
    """``(defn name ...)``: the name is the second element of the list."""

    def def_name(self, node: Node, kind: str, src: bytes) -> DefName | None:
        items = [c for c in node.named_children if c.type == "sym_lit"]
        return DefName(text(items[1], src), kind) if len(items) >= 2 else None


class ElixirRules(GenericRules):
    """``def name(args)`` / ``defmodule Name``: the name is the first argument."""

    def def_name(self, node: Node, kind: str, src: bytes) -> DefName | None:
        args = next((c for c in node.named_children if c.type == "arguments"), None)
        first = args.named_children[0] if args is not None and args.named_child_count else None
        if first is None:
            return None
        if first.type == "call":
            target = first.child_by_field_name("target")
            return DefName(text(target, src), kind) if target is not None else None
        if first.type == "binary_operator":  # def name(args) when guard
            left = first.child_by_field_name("left")
            target = left.child_by_field_name("target") if left is not None else None
            return DefName(text(target or left, src), kind) if left is not None else None
        return DefName(text(first, src), kind)


class HclRules(GenericRules):
    """``resource "type" "name" {}``: named by the block type and its labels."""

    def def_name(self, node: Node, kind: str, src: bytes) -> DefName | None:
        parts = [
            text(c, src).strip('"') for c in node.named_children if c.type in ("identifier", "string_lit")
        ]
        return DefName(".".join(parts), kind) if parts else None


class CommonLispRules(GenericRules):
    """``(defun name ...)``: the name is the header's ``function_name``."""

    def def_name(self, node: Node, kind: str, src: bytes) -> DefName | None:
        header = next((c for c in node.named_children if c.type == "defun_header"), None)
        name = header.child_by_field_name("function_name") if header is not None else None
        return DefName(text(name, src), kind) if name is not None else None


# Julia header nodes whose first named child leads to the defined name.
_JULIA_HEADS = frozenset(
    {
        "signature",
        "type_head",
        "where_expression",
        "typed_expression",
        "call_expression",
        "binary_expression",
        "parametrized_type_expression",
    }
)


class JuliaRules(GenericRules):
    """``function f(x)`` / ``function Base.show(io, x)::T where T`` / ``struct P{T} <: A``.

    The name is the head of the signature's call, never a name from the body (the generic
    breadth-first search found ``x`` in ``function f(x) x end``).
    """

    def def_name(self, node: Node, kind: str, src: bytes) -> DefName | None:
        current: Node | None = node.named_children[0] if node.named_child_count else None
        while current is not None and current.type in _JULIA_HEADS and current.named_child_count:
            current = current.named_children[0]
        if current is not None and current.type in ("identifier", "field_expression"):
            return DefName(text(current, src), kind)
        return super().def_name(node, kind, src)
