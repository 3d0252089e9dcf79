"""Turn one file's bytes into a FileAnalysis: symbols, calls, imports, complexity and risk.

One tree-sitter parse and one compiled query per file; a single sweep over the captures
(sorted by position) assigns calls, branches and nesting to the innermost definition.
Never raises on bad input and never reads files itself: callers pass the bytes.
"""

from __future__ import annotations

import codecs
import hashlib
import importlib
import logging
import re
from dataclasses import dataclass, field
from functools import cache, partial
from itertools import count, repeat
from operator import attrgetter, neg
from pathlib import Path
from typing import TYPE_CHECKING

from engine.repo.text import as_utf8
from engine.semantic.lang_base import CLASS_LIKE, LangRules
from engine.semantic.languages import FULL_LANGUAGES, language_for_path, language_info
from engine.semantic.model import CallSite, FileAnalysis, ImportRef, Risk, Symbol, symbol_id
from engine.semantic.risk import GLOBAL_STATE, NO_RISK, assess, import_aliases

if TYPE_CHECKING:
    from tree_sitter import Language, Node, Parser, Query

QUERY_DIR = Path(__file__).with_name("queries")
_log = logging.getLogger(__name__)
# Above this size a file is generated or data, and its syntax tree would cost gigabytes: it is
# counted and hashed but not parsed (discovery already skips files over 1 MB by default).
MAX_SOURCE_BYTES = 16 * 1024 * 1024
# How much of a .h file is searched for C++-only syntax before it is parsed as C.
CPP_SNIFF_BYTES = 64 * 1024
_CPP_HEADER = re.compile(
    rb"^\s*(?:class\s+\w+[^;]*\{|namespace\s+\w*\s*\{|template\s*<|(?:public|private|protected)\s*:)", re.M
)

# language name -> "module:ClassName" of its rules; definition-level languages use the base rules.
RULES_CLASSES: dict[str, str] = {
    "python": "engine.semantic.lang_python:PythonRules",
    "javascript": "engine.semantic.lang_javascript:JavaScriptRules",
    "typescript": "engine.semantic.lang_javascript:TypeScriptRules",
    "tsx": "engine.semantic.lang_javascript:TsxRules",
    "go": "engine.semantic.lang_go:GoRules",
    "rust": "engine.semantic.lang_rust:RustRules",
    "java": "engine.semantic.lang_jvm:JavaRules",
    "kotlin": "engine.semantic.lang_jvm:KotlinRules",
    "csharp": "engine.semantic.lang_jvm:CSharpRules",
    "c": "engine.semantic.lang_c:CRules",
    "cpp": "engine.semantic.lang_c:CppRules",
    "ruby": "engine.semantic.lang_scripting:RubyRules",
    "php": "engine.semantic.lang_scripting:PhpRules",
    "swift": "engine.semantic.lang_swift:SwiftRules",
    "bash": "engine.semantic.lang_scripting:BashRules",
    "clojure": "engine.semantic.lang_definitions:ClojureRules",
    "elixir": "engine.semantic.lang_definitions:ElixirRules",
    "hcl": "engine.semantic.lang_definitions:HclRules",
    "commonlisp": "engine.semantic.lang_definitions:CommonLispRules",
    "julia": "engine.semantic.lang_definitions:JuliaRules",
}
FULL_NAMES = frozenset(info.name for info in FULL_LANGUAGES)

# ``CallSite(*fields)`` with every field given, without the named tuple's Python ``__new__``
# (one frame per call: 170k of them on Django).
_new_call = partial(tuple.__new__, CallSite)
_START = attrgetter("start_byte")
_END = attrgetter("end_byte")

# Event codes for the sweep; the order breaks ties between captures starting at one byte.
# ``_CALLEE`` is a call's function node (``@callee``), captured instead of the call by queries
# that can tell the callable shapes apart (Python): it starts where its call starts.
# ``_NAME_CALLEE`` (``@callee.name``) is a callee that is one identifier: its text is the name.
_DEF, _SCOPE, _NEST, _TRY, _BRANCH, _CALL, _GLOBAL, _NEST_BRANCH, _CALLEE, _NAME_CALLEE = range(10)
# When two patterns capture one node, the more specific kind wins ("struct" over "type").
_KIND_RANK = {"variable": 0, "type": 1}
_FUNCTION_KINDS = frozenset({"function", "method"})
# The sweep's stack entry for module level: ends after any file, no owner, not in try, depth 0.
_ROOT_TOP = (1 << 62, None, False, 0, None)
# "branching" marks a node that is both a branch and a nesting level (if/for/while): one event, not two.
_SIMPLE_CAPTURES = {
    "branching": _NEST_BRANCH,
    "scope": _SCOPE,
    "nest": _NEST,
    "try": _TRY,
    "branch": _BRANCH,
    "call": _CALL,
    "callee": _CALLEE,
    "callee.name": _NAME_CALLEE,
    "global": _GLOBAL,
}


@dataclass(frozen=True)
class _Compiled:
    rules: LangRules
    query: Query
    language: Language


@cache
def _compiled(language: str) -> _Compiled | None:
    """Parser language, rules and query for one language: built once per process."""
    from tree_sitter import Query
    from tree_sitter_language_pack import get_language

    info = language_info(language)
    if info is None:
        return None
    target = RULES_CLASSES.get(language)
    module_name, _, class_name = (target or "engine.semantic.lang_definitions:GenericRules").partition(":")
    rules_class = getattr(importlib.import_module(module_name), class_name)
    rules: LangRules = rules_class() if info.level == "full" else rules_class(language)
    files = [QUERY_DIR / f"{name}.scm" for name in (rules.query_files or (language,))]
    if not all(path.exists() for path in files):
        return None
    source = "\n".join(path.read_text(encoding="utf-8") for path in files)
    ts_language = get_language(rules.grammar or language)  # type: ignore[arg-type]
    return _Compiled(rules, Query(ts_language, source), ts_language)


@cache
def _parser(language: str) -> Parser:
    from tree_sitter import Parser

    compiled = _compiled(language)
    assert compiled is not None
    return Parser(compiled.language)


@dataclass
class _Def:
    """A definition being assembled during the sweep (mutable; becomes a frozen Symbol)."""

    node: Node
    name: str
    kind: str
    qualified: str
    parent: str | None
    calls: list[CallSite] = field(default_factory=list)
    control_flow: int = 0
    max_nesting: int = 0
    marks: list[tuple[str, str]] = field(default_factory=list)
    # Defined inside a function body: local, so never exported.
    local: bool = False


def _count_errors(root: Node) -> int:
    """ERROR and MISSING nodes; walked only when the tree reports an error."""
    if not root.has_error:
        return 0
    count = 0
    cursor = root.walk()
    while True:
        node = cursor.node
        if node is not None and (node.is_error or node.is_missing):
            count += 1
        if node is not None and node.has_error and cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return count


def analyze_source(
    rel_path: str, source: bytes, language: str | None = None, *, sha256: str | None = None
) -> FileAnalysis:
    """Extract everything semfora knows about one file. Unknown language → no symbols.

    ``sha256`` is the hex digest of ``source`` when the caller already computed it.
    """
    digest = sha256 or hashlib.sha256(source).hexdigest()
    line_count = source.count(b"\n") + (1 if source and not source.endswith(b"\n") else 0)
    lang = language or language_for_path(rel_path, source[:128].split(b"\n", 1)[0])
    if lang == "c" and rel_path.endswith(".h") and _CPP_HEADER.search(source, 0, CPP_SNIFF_BYTES):
        lang = "cpp"  # .h is shared by C and C++; C++-only syntax decides
    compiled = _compiled(lang) if lang else None
    if compiled is None or lang is None or len(source) > MAX_SOURCE_BYTES:
        return FileAnalysis(rel_path, lang or "unknown", line_count=line_count, sha256=digest)
    # Query predicates (#eq?, #match?) decode node text strictly, so the tree is built from a
    # same-length copy with invalid bytes as "?"; text fields still come from the original.
    # A file that declares another encoding (`# -*- coding: latin-1 -*-`) is parsed as its
    # characters: its docstrings and signatures were stored with U+FFFD for every accent.
    parsed = _valid_utf8(source)
    if parsed is not source:  # not UTF-8: its declared encoding, if any, decides the characters
        source = as_utf8(source)
        parsed = _valid_utf8(source)
    tree = _parser(lang).parse(parsed)
    if tree.root_node.has_error:
        spelled = compiled.rules.without_macros(parsed)
        if spelled is not None:
            tree = _parser(lang).parse(spelled)  # same length: spans still index ``source``
    root = tree.root_node
    from tree_sitter import QueryCursor

    captures = QueryCursor(compiled.query).captures(root)
    try:
        return _Sweep(rel_path, lang, source, compiled.rules).run(captures, root, digest, line_count)
    except RecursionError:
        # Pathologically deep input: keep the file (counted, hashed) without its symbols.
        _log.warning("%s: nesting too deep to extract symbols", rel_path)
        return FileAnalysis(
            rel_path, lang, line_count=line_count, syntax_errors=_count_errors(root), sha256=digest
        )


def _same_length_replace(error: UnicodeError) -> tuple[str, int]:
    assert isinstance(error, UnicodeDecodeError)
    return "?" * (error.end - error.start), error.end


codecs.register_error("semfora-same-length", _same_length_replace)


def _valid_utf8(source: bytes) -> bytes:
    """The source itself when it is valid UTF-8, else a copy of equal length with "?" for bad bytes."""
    try:
        source.decode("utf-8")
    except UnicodeDecodeError:
        return source.decode("utf-8", "semfora-same-length").encode("utf-8")
    return source


class _Sweep:
    """One pass over sorted captures with a stack of open ranges."""

    def __init__(self, path: str, language: str, src: bytes, rules: LangRules) -> None:
        self.path = path
        self.language = language
        self.src = src
        self.rules = rules
        self.defs: list[_Def] = []
        self.module_calls: list[CallSite] = []
        # (start_byte, end_byte) -> kind, from the ``def.<kind>`` capture names.
        self._kinds: dict[tuple[int, int], str] = {}
        self._ids: set[str] = set()
        self._risk_memo: dict[tuple[str | None, str], tuple[str, str] | None] = {}

    def run(self, captures: dict[str, list[Node]], root: Node, digest: str, line_count: int) -> FileAnalysis:
        rules, src = self.rules, self.src
        # Events are plain int tuples (start, -end, code, index) so sorting stays in C.
        events: list[tuple[int, int, int, int]] = []
        nodes_by_index: list[Node] = []
        imports: list[ImportRef] = []
        awaited_calls: set[tuple[int, int]] = set()
        for cap, nodes in captures.items():
            if cap == "awaited":
                awaited_calls.update((n.start_byte, n.end_byte) for n in nodes)
                continue
            if cap.startswith("def."):
                code = _DEF
                self._kinds_by_id(nodes, cap[4:])
            elif cap == "import":
                for n in nodes:
                    imports.extend(rules.imports(n, src))
                continue
            else:
                found = _SIMPLE_CAPTURES.get(cap)
                if found is None:
                    continue
                code = found
            base = len(nodes_by_index)
            nodes_by_index.extend(nodes)
            # (start, -end, code, index) per node, built by C iterators (no Python frame per capture).
            events.extend(zip(map(_START, nodes), map(neg, map(_END, nodes)), repeat(code), count(base)))
        events.sort()
        # Stack entries: (end_byte, owner def, in_try, nesting depth, container (prefix, kind) or None).
        # Module level is the bottom entry, never popped (its end is past any file).
        stack: list[tuple[int, _Def | None, bool, int, tuple[str, str] | None]] = [_ROOT_TOP]
        kinds = self._kinds
        seen: set[tuple[int, int]] = set()
        module_calls = self.module_calls
        marked_calls = rules.marked_calls
        callee_parts = rules.callee_parts
        for start, neg_end, code, index in events:
            while stack[-1][0] <= start:
                stack.pop()
            top = stack[-1]
            node = nodes_by_index[index]
            if code == _DEF:
                key = (start, -neg_end)
                if key in seen:  # the same node captured by two patterns
                    continue
                seen.add(key)
                record = self._open_def(node, kinds[key], top[4])
                if record is not None:
                    stack.append((-neg_end, record, False, 0, (record.qualified, record.kind)))
                continue
            owner = top[1]
            if code in (_NAME_CALLEE, _CALLEE, _CALL):
                receiver: str | None
                if code == _NAME_CALLEE:
                    # The event's span is the identifier's: its bytes are the name, and no node is
                    # asked its type or fields (~0.05 s of Django's 169k calls).
                    name, receiver = src[start:-neg_end].decode("utf-8", "replace"), None
                else:
                    parts = callee_parts(node, src) if code == _CALLEE else rules.call_parts(node, src)
                    if parts is None:
                        continue
                    name, receiver = parts
                awaited = bool(awaited_calls) and (start, -neg_end) in awaited_calls
                call = _new_call((name, receiver, node.start_point.row + 1, awaited, top[2]))
                (owner.calls if owner is not None else module_calls).append(call)
                if owner is not None and name in marked_calls and receiver is None:
                    call_node = node if code == _CALL else node.parent
                    mark = rules.call_mark(call_node, name, src) if call_node is not None else None
                    if mark is not None:
                        owner.marks.append(mark)
            elif code == _BRANCH:
                if owner is not None:
                    owner.control_flow += 1
            elif code in (_NEST, _NEST_BRANCH):
                if code == _NEST_BRANCH and owner is not None:
                    owner.control_flow += 1
                depth = top[3] + 1
                if owner is not None and depth > owner.max_nesting:
                    owner.max_nesting = depth
                stack.append((-neg_end, owner, top[2], depth, top[4]))
            elif code == _TRY:
                stack.append((-neg_end, owner, True, top[3], top[4]))
            elif code == _SCOPE:
                scope = rules.scope_name(node, src)
                stack.append((-neg_end, owner, top[2], top[3], (scope, "impl") if scope else top[4]))
            elif code == _GLOBAL and owner is not None:
                detail = rules.global_mutation(node, src)
                if detail is not None:
                    owner.marks.append((GLOBAL_STATE, detail))
        # In line order, so a later import of the same name wins however captures were ordered.
        imports.sort(key=_import_line)
        aliases = import_aliases(imports)
        symbols = tuple(self._symbol(record, aliases) for record in self.defs)
        return FileAnalysis(
            path=self.path,
            language=self.language,
            symbols=symbols,
            imports=tuple(imports),
            module_calls=tuple(self.module_calls),
            line_count=line_count,
            syntax_errors=_count_errors(root),
            sha256=digest,
        )

    def _kinds_by_id(self, nodes: list[Node], kind: str) -> None:
        for n in nodes:
            key = (n.start_byte, n.end_byte)
            old = self._kinds.get(key)
            if old is None or _KIND_RANK.get(kind, 2) > _KIND_RANK.get(old, 2):
                self._kinds[key] = kind

    def _open_def(self, node: Node, kind: str, container: tuple[str, str] | None) -> _Def | None:
        named = self.rules.def_name(node, kind, self.src)
        if named is None or not named.name:
            return None
        prefix, container_kind = container if container is not None else (None, None)
        kind = named.kind
        if named.owner is not None:
            prefix = named.owner or None
            if kind == "function" and prefix:
                kind = "method"
        elif (
            kind == "function"
            and container_kind in CLASS_LIKE
            and (container_kind != "module" or self.rules.module_members_are_methods)
        ):
            kind = "method"
        qualified = f"{prefix}.{named.name}" if prefix else named.name
        local = container_kind in _FUNCTION_KINDS and not named.instance
        record = _Def(node, named.name, kind, qualified, prefix, local=local)
        self.defs.append(record)
        return record

    def _symbol(self, record: _Def, aliases: dict[str, str]) -> Symbol:
        rules, src, node = self.rules, self.src, record.node
        outer = rules.outer_node(node)
        first = rules.span_start(outer)
        arity = rules.arity(node, record.kind, src)
        end_byte, end_row = outer.end_byte, outer.end_point.row
        repaired = rules.repaired_end(node, src) if node.has_error else None
        if repaired is not None:  # the parse ran past the definition's closing brace
            end_byte = repaired
            end_row = first.start_point.row + src.count(b"\n", first.start_byte, end_byte)
        body = src[first.start_byte : end_byte]
        calls = tuple(record.calls)
        signature, doc = rules.signature_and_doc(node, src)
        ident = symbol_id(self.path, record.qualified, record.kind, arity)
        duplicate = 1
        while ident in self._ids:  # overloads and redefinitions: the n-th one gets a "#n" suffix
            duplicate += 1
            ident = symbol_id(self.path, f"{record.qualified}#{duplicate}", record.kind, arity)
        self._ids.add(ident)
        return _new_symbol(
            id=ident,
            name=record.name,
            qualified_name=record.qualified,
            kind=record.kind,
            file=self.path,
            language=self.language,
            start_line=first.start_point.row + 1,
            end_line=end_row + 1,
            signature=signature,
            doc=doc,
            parent=record.parent,
            exported=not record.local
            and rules.exported(node, record.name, record.kind, src, qualified=record.qualified),
            decorators=rules.decorators(node, src)
            if outer is not node or not rules.decorators_need_wrapper
            else (),
            is_async=rules.is_async(node, src),
            arity=arity,
            calls=calls,
            control_flow=record.control_flow,
            max_nesting=record.max_nesting,
            risk=assess(
                self.language,
                calls,
                aliases,
                control_flow=record.control_flow,
                max_nesting=record.max_nesting,
                extra=record.marks,
                memo=self._risk_memo,
            )
            if calls or record.marks or record.control_flow or record.max_nesting
            else NO_RISK,
            body_hash=hashlib.sha256(body).hexdigest(),
        )


def _new_symbol(**values: object) -> Symbol:
    """A ``Symbol`` with every field given, its ``__dict__`` filled at once.

    A frozen dataclass's ``__init__`` sets each of its 20 fields through ``object.__setattr__``:
    3.3 us a symbol, ~0.08 s of Django's extraction more than this. The object is the same
    (a test checks that extraction gives every field).
    """
    symbol: Symbol = object.__new__(Symbol)
    object.__setattr__(symbol, "__dict__", values)
    return symbol


def _import_line(ref: ImportRef) -> int:
    return ref.line


def symbol_at(analysis: FileAnalysis, qualified_name: str) -> Symbol | None:
    """The symbol with this qualified name (or plain name when unique), else None."""
    for symbol in analysis.symbols:
        if symbol.qualified_name == qualified_name:
            return symbol
    matches = [s for s in analysis.symbols if s.name == qualified_name]
    return matches[0] if len(matches) == 1 else None


def module_risk(analysis: FileAnalysis) -> Risk:
    """Risk of a file's module-level code (its top-level calls)."""
    return assess(analysis.language, analysis.module_calls, import_aliases(analysis.imports))


def is_full_language(language: str) -> bool:
    return language in FULL_NAMES
