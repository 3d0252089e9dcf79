"""C and C++ rules: declarator chains to names, ``Class::method`` owners, visibility, includes.

Exported means not ``static`` for free functions; for C++ members, under a ``public:``
section (or in a struct with no access specifier before it).
"""

from __future__ import annotations

import re

from tree_sitter import Node

from engine.semantic.lang_base import DefName, LangRules, collapse, text
from engine.semantic.model import ImportRef

_DECLARATOR_WRAPPERS = frozenset(
    {
        "pointer_declarator",
        "reference_declarator",
        "parenthesized_declarator",
        "attributed_declarator",
        "function_declarator",
    }
)
_CLASS_BODIES = frozenset({"field_declaration_list"})
# Exception and specifier macros that end without a semicolon (Boost, nlohmann/json, Qt, ...):
# ``BOOST_TRY { } BOOST_CATCH(...) { BOOST_RETHROW } BOOST_CATCH_END`` derails the parse for
# hundreds of lines. Spelled as what they expand to, padded to the same length.
_STATEMENT_MACROS = re.compile(
    rb"\b[A-Z][A-Z0-9_]*_(?:TRY|CATCH|CATCH_END|RETHROW|NOEXCEPT|NOEXCEPT_OR_NOTHROW"
    rb"|CONSTEXPR|CXX14_CONSTEXPR|FORCEINLINE|NOINLINE)\b"
)
_MACRO_SPELLING = {b"TRY": b"try", b"CATCH": b"catch", b"RETHROW": b"throw;", b"NOEXCEPT": b"noexcept"}


def _spelled(match: re.Match[bytes]) -> bytes:
    word = match.group()
    return _MACRO_SPELLING.get(word.rsplit(b"_", 1)[1] if not word.endswith(b"_END") else b"", b"").ljust(
        len(word)
    )


# Comments, string and character literals (whose braces do not count), and braces.
_BRACE_TOKENS = re.compile(rb'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|[{}]', re.DOTALL)


def _function_declarator(node: Node) -> Node | None:
    current = node.child_by_field_name("declarator")
    while current is not None and current.type != "function_declarator":
        if current.type not in _DECLARATOR_WRAPPERS:
            return None
        current = current.child_by_field_name("declarator")
    return current


class CRules(LangRules):
    name = "c"
    grammar = "c"
    comment_types = frozenset({"comment"})
    call_name_types = frozenset({"identifier"})
    call_member_types = {"field_expression": ("argument", "field")}

    def repaired_end(self, node: Node, src: bytes) -> int | None:
        """The byte after the brace that closes a function's body, when the parse ran past it.

        Macros that end without a semicolon (``BOOST_TRY {...} BOOST_CATCH(...) {...}
        BOOST_CATCH_END``, an inline ``asm``) make tree-sitter's recovery stretch a function
        over the methods after it; counting the body's braces finds its real end.
        """
        if node.type != "function_definition":
            return None
        body = node.child_by_field_name("body")
        start = body.start_byte if body is not None else src.find(b"{", node.start_byte, node.end_byte)
        if start < 0:
            return None
        depth = 0
        for match in _BRACE_TOKENS.finditer(src, start, node.end_byte):
            token = match.group()
            if token == b"{":
                depth += 1
            elif token == b"}":
                depth -= 1
                if depth == 0:
                    end = match.end()
                    return end if end < node.end_byte else None
        return None

    def def_name(self, node: Node, kind: str, src: bytes) -> DefName | None:
        node_type = node.type
        if node_type == "function_definition":
            func = _function_declarator(node)
            target = func.child_by_field_name("declarator") if func is not None else None
            if target is None:
                return None
            if node.child_by_field_name("type") is None and text(target, src).isupper():
                return None  # BOOST_CATCH(...) { ... }: a macro and its block, no definition
            if target.type == "qualified_identifier":
                full = text(target, src)
                owner, _, name = full.rpartition("::")
                return DefName(name, "method", owner=owner.replace("::", ".") or None)
            return DefName(text(target, src), kind)
        if node_type == "type_definition":
            declarator = node.child_by_field_name("declarator")
            if declarator is None or declarator.type != "type_identifier":
                return None
            return DefName(text(declarator, src), kind)
        return super().def_name(node, kind, src)

    def outer_node(self, node: Node) -> Node:
        parent = node.parent
        if parent is not None and parent.type == "template_declaration":
            return parent
        return node

    def arity(self, node: Node, kind: str, src: bytes) -> int:
        func = _function_declarator(node) if node.type == "function_definition" else None
        params = func.child_by_field_name("parameters") if func is not None else None
        if params is None:
            return 0
        named = [c for c in params.named_children if c.type != "comment"]
        if (
            len(named) == 1
            and named[0].type == "parameter_declaration"
            and text(named[0], src).strip() == "void"
        ):
            return 0
        return len(named)

    def exported(self, node: Node, name: str, kind: str, src: bytes, qualified: str = "") -> bool:
        if any(c.type == "storage_class_specifier" and text(c, src) == "static" for c in node.children):
            return False
        parent = node.parent
        if parent is None or parent.type not in _CLASS_BODIES:
            return True
        prev = node.prev_named_sibling
        while prev is not None:
            if prev.type == "access_specifier":
                return text(prev, src).startswith("public")
            prev = prev.prev_named_sibling
        owner = parent.parent
        return owner is not None and owner.type == "struct_specifier"

    def signature(self, node: Node, src: bytes) -> str:
        if node.type == "function_definition":
            return _signature_to_body(node, src)
        return super().signature(node, src)

    def callee_parts(self, func: Node, src: bytes) -> tuple[str, str | None] | None:
        if func.type == "qualified_identifier":
            scope, _, name = text(func, src).rpartition("::")
            return name.split("<", 1)[0], scope or None
        if func.type == "template_function":
            inner = func.child_by_field_name("name")
            return self.callee_parts(inner, src) if inner is not None else None
        return super().callee_parts(func, src)

    def call_parts(self, node: Node, src: bytes) -> tuple[str, str | None] | None:
        if node.type == "new_expression":
            kind = node.child_by_field_name("type")
            return (text(kind, src).split("<", 1)[0].rsplit("::", 1)[-1], None) if kind is not None else None
        return super().call_parts(node, src)

    def imports(self, node: Node, src: bytes) -> list[ImportRef]:
        line = node.start_point.row + 1
        if node.type == "using_declaration":
            target = node.named_children[-1] if node.named_children else None
            if target is None:
                return []
            return [ImportRef(text(target, src), (), None, line)]
        path = node.child_by_field_name("path")
        if path is None:
            return []
        return [ImportRef(text(path, src).strip('<>"'), (), None, line)]


def _signature_to_body(node: Node, src: bytes) -> str:
    body = node.child_by_field_name("body")
    end = body.start_byte if body is not None else node.end_byte
    raw = src[node.start_byte : min(end, node.start_byte + 800)].decode("utf-8", "replace")
    if body is None:
        raw = raw.rstrip().rstrip(";")
    return collapse(raw.rstrip().rstrip("{").rstrip())


class CppRules(CRules):
    name = "cpp"
    grammar = "cpp"

    def without_macros(self, src: bytes) -> bytes | None:
        if b"_TRY" not in src and b"_NOEXCEPT" not in src and b"_CONSTEXPR" not in src:
            return None
        spelled = _STATEMENT_MACROS.sub(_spelled, src)
        return spelled if spelled != src else None

    call_name_types = frozenset({"identifier"})
    call_member_types = {"field_expression": ("argument", "field")}
