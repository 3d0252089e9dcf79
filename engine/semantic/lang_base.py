"""Per-language extraction rules: the hooks the generic extractor calls on captured nodes.

A ``LangRules`` subclass knows one grammar's shapes (how a definition is named, how a
call splits into receiver and name, what an import binds). It never walks whole trees
and never touches I/O; the walk and the query live in ``extract.py`` and ``queries/``.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from engine.semantic.model import ImportRef

# Signatures are for display and prompts: long headers are cut here.
SIGNATURE_MAX_CHARS = 200
# Receivers longer than this are expressions, not names; they are dropped rather than quoted.
RECEIVER_MAX_BYTES = 80
# Kinds whose direct function children are methods. A module is one only where the language
# says so (``LangRules.module_members_are_methods``): a Ruby module's ``def`` is a mixin's
# method, but a TypeScript namespace, a Rust ``mod`` or an Elixir ``defmodule`` holds functions.
CLASS_LIKE = frozenset({"class", "struct", "interface", "trait", "enum", "module", "variable", "impl"})


@dataclass(frozen=True)
class DefName:
    """What a rules hook says about one captured definition node."""

    name: str
    kind: str
    # When set, the qualified-name prefix, overriding the enclosing definition (Go receivers).
    owner: str | None = None
    # A member set on an instance (JavaScript `this.x = function ...` in a constructor): it
    # belongs to ``owner``, not to the function it is written in, so it is not local to it.
    instance: bool = False


def text(node: Node | None, src: bytes) -> str:
    """Decoded text of a node (invalid UTF-8 replaced, never raised)."""
    if node is None:
        return ""
    return src[node.start_byte : node.end_byte].decode("utf-8", "replace")


def collapse(value: str, limit: int = SIGNATURE_MAX_CHARS) -> str:
    """Whitespace-collapsed, length-capped single line."""
    line = " ".join(value.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def short_text(node: Node | None, src: bytes) -> str | None:
    """Text of a short expression (a receiver), or None when it is long or absent."""
    if node is None:
        return None
    start, end = node.start_byte, node.end_byte
    if end - start > RECEIVER_MAX_BYTES:
        return None
    raw = src[start:end]
    value = raw.decode("utf-8", "replace")
    if b" " in raw or b"\n" in raw or b"\t" in raw:
        return collapse(value, RECEIVER_MAX_BYTES)
    return value


def strip_comment(raw: str) -> str:
    """First meaningful line of a comment, without its markers."""
    for line in raw.splitlines():
        line = line.strip()
        for marker in ("/**", "/*!", "/*", "*/", "///", "//!", "//", "##", "#", "--", ";;", "*"):
            if line.startswith(marker):
                line = line[len(marker) :]
        line = line.removesuffix("*/").strip()
        line = line.removeprefix("<summary>").removesuffix("</summary>").strip()
        if line:
            return line
    return ""


def first_doc_line(raw: str) -> str:
    for line in raw.splitlines():
        line = line.strip()
        if line:
            return collapse(line)
    return ""


class LangRules:
    """Default hooks; subclasses override what their grammar needs."""

    name: str = ""
    grammar: str = ""
    # Query files (queries/<name>.scm) concatenated into this language's query; () = (name,).
    query_files: tuple[str, ...] = ()
    comment_types: frozenset[str] = frozenset({"comment", "line_comment", "block_comment"})
    # Field that holds a definition's body (the signature ends where it starts).
    body_field: str = "body"
    params_field: str = "parameters"
    self_names: frozenset[str] = frozenset()
    param_skip_types: frozenset[str] = frozenset({"comment", "line_comment", "block_comment"})
    # Siblings allowed between a doc comment and its definition (Rust ``#[derive]``).
    doc_skip_types: frozenset[str] = frozenset()
    # Bytes every comment of the grammar contains (Python ``#``), when there is one: a header
    # without them has no comment to cut, so its children need not be asked their types.
    comment_marker: bytes | None = None
    # Whether a function defined directly in a ``module`` definition is a method (Ruby's
    # mixins) rather than a function of a namespace (TypeScript, Rust, Elixir, OCaml, ...).
    module_members_are_methods: bool = False

    # ---- definitions -------------------------------------------------------
    def without_macros(self, src: bytes) -> bytes | None:
        """A same-length copy of a file the parser choked on, its statement macros spelled out.

        None when there is nothing to spell out (the first parse stands).
        """
        return None

    def repaired_end(self, node: Node, src: bytes) -> int | None:
        """Where a definition that the parser ran past really ends (C-family braces), else None."""
        return None

    def def_name(self, node: Node, kind: str, src: bytes) -> DefName | None:
        name_node = node.child_by_field_name("name")
        if name_node is None:
            return None
        return DefName(text(name_node, src), kind)

    def scope_name(self, node: Node, src: bytes) -> str | None:
        """Name contributed by a non-symbol scope (Rust ``impl``), or None."""
        return None

    def outer_node(self, node: Node) -> Node:
        """The node whose lines the symbol spans (decorators, export wrappers included)."""
        return node

    # Sibling node types that belong to the definition after them (Rust attributes, TS decorators).
    leading_types: frozenset[str] = frozenset()

    def span_start(self, outer: Node) -> Node:
        """First node of the symbol's text: ``outer`` or the attributes right above it."""
        if not self.leading_types:
            return outer
        first = outer
        prev = outer.prev_named_sibling
        while prev is not None and prev.type in self.leading_types:
            first, prev = prev, prev.prev_named_sibling
        return first

    def signature(self, node: Node, src: bytes) -> str:
        """The definition's header up to its body, without comments: a comment on the ``def``
        line or just inside the body is not part of the signature."""
        body = node.child_by_field_name(self.body_field)
        start = node.start_byte
        end = body.start_byte if body is not None else node.end_byte
        comments: list[tuple[int, int]] = []
        if body is not None:
            marker = self.comment_marker
            if marker is not None and marker not in src[start : body.start_byte]:
                # No comment in the header (most of them): it ends with its last part before
                # the body. Skipping the walk over the parameters saved ~0.05 s on Django.
                for child in node.children:
                    if child.start_byte >= body.start_byte:
                        break
                    end = child.end_byte
                return self._header(src, start, end, comments, body)
            # The header ends with its last non-comment part (Python: the ``:``).
            for child in node.children:
                if child.start_byte >= body.start_byte:
                    break
                if child.type in self.comment_types:
                    comments.append((child.start_byte, child.end_byte))
                else:
                    end = child.end_byte
                    params = child if child.type in ("parameters", "formal_parameters") else None
                    if params is not None:
                        comments.extend(
                            (c.start_byte, c.end_byte)
                            for c in params.children
                            if c.type in self.comment_types
                        )
        return self._header(src, start, end, comments, body)

    def _header(
        self, src: bytes, start: int, end: int, comments: list[tuple[int, int]], body: Node | None
    ) -> str:
        """The signature text of ``src[start:end]`` with the ``comments`` spans cut out."""
        if end - start > SIGNATURE_MAX_CHARS * 4:
            end = start + SIGNATURE_MAX_CHARS * 4
        raw_bytes = src[start:end]
        if comments:
            for c_start, c_end in sorted(comments, reverse=True):
                if start <= c_start and c_end <= end:
                    raw_bytes = raw_bytes[: c_start - start] + b" " + raw_bytes[c_end - start :]
        raw = raw_bytes.decode("utf-8", "replace")
        if body is None:
            raw = raw.split("\n", 1)[0]
        return collapse(raw.rstrip().rstrip("{:;").rstrip())

    def signature_and_doc(self, node: Node, src: bytes) -> tuple[str, str]:
        """``(signature, doc)``: one hook, so a grammar can share the lookups both need."""
        return self.signature(node, src), self.doc(node, src)

    def doc(self, node: Node, src: bytes) -> str:
        """First line of the comment block right above the definition."""
        outer = self.outer_node(node)
        prev = outer.prev_named_sibling
        while prev is not None and prev.type in self.doc_skip_types:
            outer, prev = prev, prev.prev_named_sibling
        if prev is None or prev.type not in self.comment_types:
            return ""
        if outer.start_point.row - prev.end_point.row > 1:
            return ""
        # Walk up a run of line comments to the first one.
        first = prev
        while True:
            before = first.prev_named_sibling
            if before is None or before.type not in self.comment_types:
                break
            if first.start_point.row - before.end_point.row > 1:
                break
            first = before
        return collapse(strip_comment(text(first, src)))

    # True when a definition can have decorators only if ``outer_node`` wraps it (Python's
    # decorated_definition): the extractor then asks ``decorators`` only for wrapped ones.
    decorators_need_wrapper: bool = False

    def decorators(self, node: Node, src: bytes) -> tuple[str, ...]:
        return ()

    def is_async(self, node: Node, src: bytes) -> bool:
        return False

    def arity(self, node: Node, kind: str, src: bytes) -> int:
        params = node.child_by_field_name(self.params_field)
        if params is None:
            return 0
        count = 0
        for child in params.named_children:
            if child.type in self.param_skip_types:
                continue
            count += 1
        return count

    def exported(self, node: Node, name: str, kind: str, src: bytes, qualified: str = "") -> bool:
        return True

    def modifiers_text(self, node: Node, src: bytes, types: frozenset[str]) -> str:
        """Space-joined text of the node's modifier children (visibility, async, static...)."""
        return " ".join(text(c, src) for c in node.children if c.type in types)

    def preceding(self, node: Node, types: frozenset[str]) -> list[Node]:
        """Consecutive previous siblings of the given types (attributes above an item), nearest last."""
        out: list[Node] = []
        prev = node.prev_named_sibling
        while prev is not None and prev.type in types:
            out.insert(0, prev)
            prev = prev.prev_named_sibling
        return out

    # ---- calls and imports -------------------------------------------------
    # Field of a call node that holds the callee.
    call_function_field: str = "function"
    # Callee node types that are plain names.
    call_name_types: frozenset[str] = frozenset({"identifier"})
    # Callee node types that are ``receiver.name``: type -> (receiver field, name field).
    call_member_types: dict[str, tuple[str, str]] = {}

    def call_parts(self, node: Node, src: bytes) -> tuple[str, str | None] | None:
        """(name, receiver) for a captured call node, or None to ignore it."""
        func = node.child_by_field_name(self.call_function_field)
        if func is None:
            return None
        return self.callee_parts(func, src)

    def callee_parts(self, func: Node, src: bytes) -> tuple[str, str | None] | None:
        kind = func.type
        if kind in self.call_name_types:
            return text(func, src), None
        fields = self.call_member_types.get(kind)
        if fields is not None:
            name = func.child_by_field_name(fields[1])
            if name is None:
                return None
            return text(name, src), short_text(func.child_by_field_name(fields[0]), src)
        return None

    def imports(self, node: Node, src: bytes) -> list[ImportRef]:
        return []

    # Call names whose arguments decide their risk (Python ``open`` and its mode).
    marked_calls: frozenset[str] = frozenset()

    def call_mark(self, node: Node, name: str, src: bytes) -> tuple[str, str] | None:
        """(category, detail) for a call in ``marked_calls`` whose arguments make it risky."""
        return None

    def global_mutation(self, node: Node, src: bytes) -> str | None:
        """Short description of a captured global-state mutation, or None."""
        return None
