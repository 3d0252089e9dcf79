"""Python rules: names, docstrings, decorators, imports and call receivers.

Only interprets nodes the Python query captured; the walk is in ``extract.py``.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from engine.semantic.lang_base import RECEIVER_MAX_BYTES, LangRules, first_doc_line, short_text, text
from engine.semantic.model import ImportRef

# A callee of only these bytes is a dotted name whose tree its text decides: ``a.b.c`` is
# attribute(object: ``a.b``, attribute: ``c``), so its parts come from splitting at the last dot.
_DOTTED = re.compile(rb"[A-Za-z0-9_.]+")
# Bytes that any skipped parameter (comment, keyword or positional separator) contains.
_MAY_SKIP = re.compile(rb"[#*/]")
# Bytes that only a comment or a line continuation (``\\``) puts in a definition's header.
_HEADER_EXTRAS = re.compile(rb"[#\\]")
# Docstrings are recognised by these string prefixes (after optional r/b/u/f letters).
_QUOTES = ('"""', "'''", '"', "'")


def _string_body(raw: str) -> str:
    raw = raw.lstrip("rRbBuUfF")
    for quote in _QUOTES:
        if raw.startswith(quote) and raw.endswith(quote) and len(raw) >= 2 * len(quote):
            return raw[len(quote) : -len(quote)]
    return raw


class PythonRules(LangRules):
    name = "python"
    grammar = "python"
    comment_types = frozenset({"comment"})
    self_names = frozenset({"self", "cls"})
    param_skip_types = frozenset({"comment", "keyword_separator", "positional_separator"})
    comment_marker = b"#"
    decorators_need_wrapper = True

    def outer_node(self, node: Node) -> Node:
        parent = node.parent
        if parent is not None and parent.type == "decorated_definition":
            return parent
        return node

    def signature(self, node: Node, src: bytes) -> str:
        body = node.child_by_field_name("body")
        if body is not None and not node.has_error:
            header = src[node.start_byte : body.start_byte]
            if header.isascii() and header.rstrip().endswith(b":") and not _HEADER_EXTRAS.search(header):
                # Nothing but whitespace follows the header's ``:``, and there is no comment to cut:
                # its text up to the body is the signature (the trailing ``:`` and blanks are
                # stripped either way). Not listing the def's children: ~0.04 s on Django.
                return self._header(src, node.start_byte, body.start_byte, [], body)
        return super().signature(node, src)

    def doc(self, node: Node, src: bytes) -> str:
        body = node.child_by_field_name("body")
        if body is None or body.named_child_count == 0:
            return ""
        string = body.named_child(0)
        kind = string.type
        if kind == "expression_statement":
            if string.named_child_count == 0:
                return ""
            string = string.named_child(0)
            kind = string.type
        if kind != "string":
            return ""
        return first_doc_line(_string_body(text(string, src)))

    def decorators(self, node: Node, src: bytes) -> tuple[str, ...]:
        parent = node.parent
        if parent is None or parent.type != "decorated_definition":
            return ()
        out = []
        for child in parent.named_children:
            if child.type == "decorator":
                raw = text(child, src).lstrip("@").split("#", 1)[0].strip()
                out.append(raw.split("(", 1)[0].strip())
        return tuple(out)

    def is_async(self, node: Node, src: bytes) -> bool:
        first = node.child(0)
        return first is not None and first.type == "async"

    def arity(self, node: Node, kind: str, src: bytes) -> int:
        params = node.child_by_field_name("parameters")
        if params is None:
            return 0
        if not _MAY_SKIP.search(src, params.start_byte, params.end_byte):
            # No comment, bare ``*`` or ``/`` among the parameters: each named child counts
            # but a leading self (~0.03 s on Django, against asking every child its type).
            count = params.named_child_count
            if count and kind == "method":
                first = params.named_child(0)
                if first is not None and first.type == "identifier" and text(first, src) in self.self_names:
                    count -= 1
            return count
        count = 0
        for index, child in enumerate(params.named_children):
            if child.type in self.param_skip_types:
                continue
            if (
                index == 0
                and kind == "method"
                and child.type == "identifier"
                and text(child, src) in self.self_names
            ):
                continue
            count += 1
        return count

    def exported(self, node: Node, name: str, kind: str, src: bytes, qualified: str = "") -> bool:
        return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))

    def call_parts(self, node: Node, src: bytes) -> tuple[str, str | None] | None:
        func = node.child_by_field_name("function")
        if func is None:
            return None
        return self.callee_parts(func, src)

    def callee_parts(self, func: Node, src: bytes) -> tuple[str, str | None] | None:
        """(name, receiver) of a call's function node; the query captures these (``@callee``)."""
        kind = func.type
        if kind == "identifier":
            return src[func.start_byte : func.end_byte].decode("utf-8", "replace"), None
        if kind == "attribute":
            raw = src[func.start_byte : func.end_byte]
            if _DOTTED.fullmatch(raw) is not None and not func.has_error:
                # Split from its bytes: asking the tree for both fields cost ~0.1 s on Django.
                receiver, _, name = raw.decode("ascii").rpartition(".")
                return name, receiver if len(receiver) <= RECEIVER_MAX_BYTES else None
            attr = func.child_by_field_name("attribute")
            return text(attr, src), short_text(func.child_by_field_name("object"), src)
        return None

    def imports(self, node: Node, src: bytes) -> list[ImportRef]:
        line = node.start_point.row + 1
        if node.type == "import_statement":
            out = []
            for child in node.children_by_field_name("name"):
                if child.type == "aliased_import":
                    module = text(child.child_by_field_name("name"), src)
                    alias = text(child.child_by_field_name("alias"), src)
                    out.append(ImportRef(module, (), alias, line))
                else:
                    out.append(ImportRef(text(child, src), (), None, line))
            return out
        module = text(node.child_by_field_name("module_name"), src)
        plain: list[str] = []
        aliased: list[ImportRef] = []
        for child in node.children_by_field_name("name"):
            if child.type == "aliased_import":
                name = text(child.child_by_field_name("name"), src)
                alias = text(child.child_by_field_name("alias"), src)
                aliased.append(ImportRef(module, (name,), alias, line))
            else:
                plain.append(text(child, src))
        if any(child.type == "wildcard_import" for child in node.named_children):
            plain.append("*")
        out = [ImportRef(module, tuple(plain), None, line)] if plain or not aliased else []
        return out + aliased

    marked_calls = frozenset({"open"})

    def call_mark(self, node: Node, name: str, src: bytes) -> tuple[str, str] | None:
        args = node.child_by_field_name("arguments")
        if args is None:
            return None
        mode: Node | None = None
        positional = 0
        for child in args.named_children:
            if child.type == "keyword_argument":
                if text(child.child_by_field_name("name"), src) == "mode":
                    mode = child.child_by_field_name("value")
            elif child.type != "comment":
                positional += 1
                if positional == 2:
                    mode = child
        if mode is None or mode.type != "string":
            return None
        flags = _string_body(text(mode, src))
        if any(flag in flags for flag in "wax+"):
            return "filesystem-write", f"open(mode={flags!r})"
        return None

    def global_mutation(self, node: Node, src: bytes) -> str | None:
        if node.type == "assignment":  # os.environ["X"] = ..., sys.path = ...
            return short_text(node.child_by_field_name("left"), src)
        names = [text(c, src) for c in node.named_children if c.type == "identifier"]
        return "global " + ", ".join(names)
