"""The "security-sensitive logic changed" rule: a change to code that enforces a security concern.

Reads each changed symbol's changed lines (comments and docstrings left out), its name and the
calls it makes, and matches them against the concern catalogue (engine.review.concerns). A fix
to ``safe_join``, to the headers stripped on redirect or to a sandbox check is raised with what
it touched, so the reviewer looks at it. Test, documentation and example code is left out;
changes that only rename, re-annotate or re-format are left out too.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Mapping

from engine.review.concerns import DISPLAY_ESCAPERS, REDOS, Concern, Match, match, named_concerns
from engine.review.findings import Finding
from engine.review.regexes import removed_backtracking
from engine.semantic.diff import FileChange, SemanticDiff, SymbolChange
from engine.semantic.graph import family
from engine.semantic.model import DEFAULT_EXPORT
from engine.words import plural

# Findings per file: past this many, the rest are named in the last finding's message, so a
# large refactor of a security module reads as one story rather than a wall.
MAX_PER_FILE = 3
# Kinds whose own lines carry logic (a class's own lines hold its attributes: a header list,
# a default, a flag).
CODE_KINDS = frozenset({"function", "method", "class", "struct", "impl", "module"})
# An added symbol is judged only on strong evidence: new code that merely sits in a security
# module is what the rest of the change calls.
ADDED_MIN_STRENGTH = 3
# A call to a concern-named function added in the same change weighs like a name word.
CALLED_CHECK_STRENGTH = 2
# Shorter function names (``get``, ``run``) say nothing about what they check.
MIN_CALLED_NAME = 5
_CALLED = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_TRAILING_COMMENT = re.compile(r"\s+(#|//).*$")
# Lines shorter than this (``return x``, ``else:``, ``)``) recur everywhere; they say nothing
# about whether code moved.
MIN_MOVED_LINE = 12


def _code(
    lines: Iterable[tuple[int, str]],
    first: int | None,
    last: int | None,
    prose: frozenset[int],
    moved: frozenset[str] = frozenset(),
) -> str:
    if first is None or last is None:
        return ""
    out = []
    for n, text in lines:
        if first <= n <= last and n not in prose and " ".join(text.split()) not in moved:
            out.append(_TRAILING_COMMENT.sub("", text))
    return "\n".join(out)


def _without_own_name(text: str, name: str) -> str:
    """The definition's own name in its header (``def redirect(``) is name evidence, counted as
    such; as a term of the changed code it would make any edit of the header look like one."""
    if not name:
        return text
    return re.sub(rf"\b(def|class|function|fn|func)(\s+){re.escape(name)}\b", r"\1\2_", text)


Lines = tuple[tuple[int, str], ...]


def _drop_same(
    added: Lines, removed: Lines, key: Callable[[str], str], removed_key: Callable[[str], str] | None = None
) -> tuple[Lines, Lines]:
    """Added and removed lines that pair up once read through ``key`` (``removed_key`` for the
    removed side, when it differs): both sides dropped, one pair at a time."""
    removed_key = removed_key or key
    wanted: dict[str, int] = {}
    for _, text in removed:
        k = removed_key(text)
        wanted[k] = wanted.get(k, 0) + 1
    same: dict[str, int] = {}
    kept_added = []
    for item in added:
        k = key(item[1])
        if wanted.get(k, 0) > same.get(k, 0):
            same[k] = same.get(k, 0) + 1
        else:
            kept_added.append(item)
    kept_removed = []
    for item in removed:
        k = removed_key(item[1])
        if same.get(k, 0) > 0:
            same[k] -= 1
        else:
            kept_removed.append(item)
    return tuple(kept_added), tuple(kept_removed)


def _drop_case_only(added: Lines, removed: Lines) -> tuple[Lines, Lines]:
    """Lines that changed only in letter case or layout (``"content-length"`` spelled
    ``"Content-Length"``) say nothing about what the code does; both sides are dropped."""
    return _drop_same(added, removed, lambda text: " ".join(text.lower().split()))


# A token of code: a name (with JavaScript's ``#`` and ``$``) or one other character.
_TOKEN = re.compile(r"[#$\w]+|\S")
# A substitution seen on at least this many line pairs is a rename the change applies throughout.
MIN_RENAME_LINES = 2
# Added lines of the same shape compared with each removed line: a bound for files of thousands of
# look-alike lines (the pairs a rename leaves are near each other in the shape's list anyway).
MAX_RENAME_CANDIDATES = 32


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def file_renames(f: FileChange) -> dict[str, str]:
    """Names the change swapped for others throughout the file (``_internals`` -> ``#internals``):
    removed and added lines of the same shape that differ only in one name, on at least
    ``MIN_RENAME_LINES`` line pairs, and always the same way."""
    if not f.added_lines or not f.removed_lines:
        return {}
    by_shape: dict[tuple[str, ...], list[list[str]]] = {}
    for _, text in f.added_lines:
        tokens = _tokens(text)
        shape = tuple("n" if t[0].isalnum() or t[0] in "_#$" else t for t in tokens)
        by_shape.setdefault(shape, []).append(tokens)
    seen: dict[tuple[str, str], int] = {}
    for _, text in f.removed_lines:
        old = _tokens(text)
        shape = tuple("n" if t[0].isalnum() or t[0] in "_#$" else t for t in old)
        if "n" not in shape:
            continue
        for new in by_shape.get(shape, ())[:MAX_RENAME_CANDIDATES]:
            if new == old:
                break  # the same line on both sides: moved, not renamed
            pairs = {(a, b) for a, b in zip(old, new, strict=True) if a != b}
            if len(pairs) == 1:
                pair = next(iter(pairs))
                seen[pair] = seen.get(pair, 0) + 1
                break
    targets: dict[str, set[str]] = {}
    for (a, b), n in seen.items():
        if n >= MIN_RENAME_LINES:
            targets.setdefault(a, set()).add(b)
    return {a: next(iter(bs)) for a, bs in targets.items() if len(bs) == 1}


def _drop_renamed(added: Lines, removed: Lines, renames: dict[str, str]) -> tuple[Lines, Lines]:
    """Removed lines that read as an added line once the file's renames are applied: both sides
    dropped, as letter-case-only edits are (the line does what it did)."""
    if not renames:
        return added, removed
    return _drop_same(
        added,
        removed,
        lambda text: " ".join(_tokens(text)),
        lambda text: " ".join(renames.get(t, t) for t in _tokens(text)),
    )


TYPESCRIPT = frozenset({"typescript", "tsx"})
_AS = re.compile(r"\s+(?:as|satisfies)\s+(?=[\w${(\[\'\"])")
_PARENTHESISED_NAME = re.compile(r"\(\s*([\w$.]+)\s*\)")
_NON_NULL = re.compile(r"(?<=[\w$\])])!(?=[.;,)\]\s]|$)")


def _type_end(text: str, i: int) -> int:
    """Where the type that starts at ``text[i]`` ends (``Record<string, unknown>[] | null``)."""
    depth = 0
    while i < len(text):
        ch = text[i]
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            if depth == 0:
                return i
            depth -= 1
        elif depth == 0 and not _in_type(text, i):
            return i
        i += 1
    return i


def _in_type(text: str, i: int) -> bool:
    """``text[i]``, outside brackets, still belongs to a type: a name, a dot, a quote, a ``|`` or
    ``&`` union and the spaces around one."""
    ch = text[i]
    if ch == " ":
        return bool(re.match(r"\s*[|&]", text[i:]) or re.search(r"[|&]\s*$", text[:i]))
    return ch.isalnum() or ch in "_$.'\"|&"


def typescript_runtime(text: str) -> str:
    """A TypeScript line as it runs: type assertions (``x as T``, ``x satisfies T``), non-null
    assertions (``x!``) and the parentheses they leave around a name dropped."""
    out = text
    while (m := _AS.search(out)) is not None:
        out = out[: m.start()] + out[_type_end(out, m.end()) :]
    out = _NON_NULL.sub("", out)
    return _PARENTHESISED_NAME.sub(r"\1", out)


def _drop_type_only(added: Lines, removed: Lines) -> tuple[Lines, Lines]:
    """TypeScript lines that changed only in their type assertions: both sides dropped."""
    return _drop_same(added, removed, lambda text: " ".join(typescript_runtime(text).split()))


def moved_lines(diff: SemanticDiff) -> frozenset[str]:
    """Lines the change only moved: added somewhere and removed elsewhere, same text (layout aside).

    A refactor that moves a parser into a class method changes where code lives, not what it does.
    """
    added: set[str] = set()
    removed: set[str] = set()
    for f in diff.files:
        added.update(k for _, t in f.added_lines if len(k := " ".join(t.split())) > MIN_MOVED_LINE)
        removed.update(k for _, t in f.removed_lines if len(k := " ".join(t.split())) > MIN_MOVED_LINE)
    return frozenset(added & removed)


def _line_number(item: tuple[int, str]) -> int:
    return item[0]


def changed_span(
    lines: tuple[tuple[int, str], ...], first: int | None, last: int | None
) -> tuple[tuple[int, str], ...]:
    """The changed lines between ``first`` and ``last`` (lines are in line order): a symbol's own
    share of its file's change, found without reading the whole file's change for every symbol."""
    if first is None or last is None:
        return ()
    return lines[bisect_left(lines, first, key=_line_number) : bisect_right(lines, last, key=_line_number)]


class _Nesting:
    """The line ranges of a file's changed symbols on one side, sorted, to find those nested in a
    symbol by bisection: scanning every symbol for every symbol took minutes on a file of 20,000
    added functions."""

    def __init__(self, ranges: Iterable[tuple[int | None, int | None]]) -> None:
        self.ranges = sorted((a, b) for a, b in ranges if a is not None and b is not None)
        self.starts = [a for a, _ in self.ranges]

    def inside(self, start: int | None, end: int | None) -> list[tuple[int, int]]:
        """The ranges nested in ``start..end`` (not that range itself): their lines are theirs."""
        if start is None or end is None:
            return []
        first, last = bisect_left(self.starts, start), bisect_right(self.starts, end)
        return [(a, b) for a, b in self.ranges[first:last] if b <= end and (a, b) != (start, end)]


def _own(lines: tuple[tuple[int, str], ...], inner: list[tuple[int, int]]) -> tuple[tuple[int, str], ...]:
    if not inner:
        return lines
    # Merged, so each line is one bisection (a class of thousands of methods has as many ranges).
    merged: list[list[int]] = []
    for a, b in sorted(inner):
        if merged and a <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    starts = [a for a, _ in merged]

    def covered(n: int) -> bool:
        i = bisect_right(starts, n) - 1
        return i >= 0 and n <= merged[i][1]

    return tuple((n, t) for n, t in lines if not covered(n))


# Normalized statements that keep house rather than decide anything: imports, ``pass``, logging
# and warnings. A symbol whose change is only these is in a security concern by its name alone,
# which is not evidence that its logic changed. (Which exceptions a handler catches is logic: a
# containment check that lets an error through is a fix.)
_HOUSEKEEPING = re.compile(
    r"^(import |from \S+ import |pass$|(\w+\.)*(warn|warning|debug|info|error|exception|critical|log)\()"
    r"|^(\w+\.)*(log|logger|_log|_logger|logging|warnings)\.\w+\("
)
_STRING = re.compile(r"""(?:[rbuf]{0,2})('(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*")""", re.I)


# The start of a line that writes a message for a reader: a warning or a log line, in Python or
# JavaScript (``warnings.warn(``, ``logger.info(``, ``console.warn(``, ``this.log.debug(``).
_MESSAGE_CALL = re.compile(
    r"^\s*(?:await\s+)?(?:(?:[\w$]+\.)*(?:warn|warning|debug|info|exception|critical|trace)\("
    r"|(?:[\w$]+\.)*(?:console|log|logger|_log|_logger|logging|warnings)\.\w+\()"
)
_TEMPLATE = re.compile(r"`(?:\\.|[^`\\])*`")


# Prose: two words in a row (``(generated by waitress)``); a status line (``HTTP/1.1 400 Bad
# Request``) or a header (``Connection: close``) in the same string is framing, not prose.
_PROSE = re.compile(r"[A-Za-z]{2,} [A-Za-z]{2,}")
_WIRE_TEXT = re.compile(r"HTTP/|[\w-]+:\s")
_ESCAPED_LINE_END = re.compile(r"\\[rn]")


def _prose_line_end(m: re.Match[str]) -> str:
    text = m.group(0)
    if _ESCAPED_LINE_END.search(text) and _PROSE.search(text) and not _WIRE_TEXT.search(text):
        return _ESCAPED_LINE_END.sub(" ", text)
    return text


def without_prose_line_ends(code: str) -> str:
    """``code`` with the line endings inside prose strings blanked: ``"\\r\\n\\r\\n(generated by
    waitress)"``, the text of an error page's body, is layout for a reader, not HTTP framing
    (waitress 4d07f401)."""
    return _STRING.sub(_prose_line_end, code) if "\\" in code else code


def _masked(code: str) -> str:
    return _TEMPLATE.sub("``", _STRING.sub("''", code))


def _texts_only(added: str, removed: str) -> tuple[str, str] | None:
    """(added, removed) with their strings emptied, when the change is only the text of strings:
    the same statements once their strings are masked; else None."""
    if not added.strip() or not removed.strip():
        return None
    plus = sorted(" ".join(_masked(x).split()) for x in added.splitlines() if x.strip())
    minus = sorted(" ".join(_masked(x).split()) for x in removed.splitlines() if x.strip())
    return (_masked(added), _masked(removed)) if plus == minus else None


def without_message_texts(code: str) -> str:
    """``code`` with the strings of its warning and log lines emptied, continuation lines of a
    call that spans lines too (``log.debug(\n    "redirect to %s", url)``)."""
    if not code:
        return code
    out: list[str] = []
    depth = 0
    for line in code.split("\n"):
        if depth > 0 or _MESSAGE_CALL.match(line):
            line = _masked(line)
            depth = max(0, depth + line.count("(") - line.count(")"))
        out.append(line)
    return "\n".join(out)


# An ``except`` clause's names, to compare handlers with import fallbacks left out.
_EXCEPT = re.compile(r"^except\s*\(?([\w.,\s]*?)\)?(\s+as\s+\w+)?:$")
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError"})


def _without_import_fallback(statement: str) -> str:
    """``except (ImportError, KeyError):`` is ``except KeyError:``: whether a handler also
    catches a failed import is about which modules are installed, not about what the code
    allows (a clean-up of old import fallbacks changes nothing a reviewer must check)."""
    m = _EXCEPT.match(statement)
    if m is None:
        return statement
    names = sorted(n.strip() for n in m.group(1).split(",") if n.strip() and n.strip() not in _IMPORT_ERRORS)
    return f"except ({', '.join(names)}){m.group(2) or ''}:"


def housekeeping_only(delta: tuple[tuple[str, ...], tuple[str, ...]]) -> bool:
    """The change touches imports, logging, warnings, import fallbacks or the texts of
    messages only."""
    added = [_without_import_fallback(x) for x in delta[0] if _HOUSEKEEPING.match(x) is None]
    removed = [_without_import_fallback(x) for x in delta[1] if _HOUSEKEEPING.match(x) is None]
    if not added and not removed:
        return True
    # Only the text of messages changed: the same statements with their strings masked.
    return sorted(_STRING.sub("''", x) for x in added) == sorted(_STRING.sub("''", x) for x in removed)


def _nesting(f: FileChange) -> tuple[_Nesting, _Nesting]:
    """(target side, base side) nesting of the file's changed symbols."""
    return (
        _Nesting((c.start_line, c.end_line) for c in f.symbols if c.change != "removed"),
        _Nesting((c.old_start_line, c.old_end_line) for c in f.symbols if c.old_start_line),
    )


def _changed_code(
    f: FileChange,
    s: SymbolChange,
    moved: frozenset[str],
    nesting: tuple[_Nesting, _Nesting] | None = None,
    renames: dict[str, str] | None = None,
) -> tuple[str, str]:
    """(added, removed) code of the symbol's own changed lines: prose, case-only edits, moved
    lines and inner definitions left out (``nesting``: the file's, from ``_nesting``)."""
    new_side, old_side = nesting or _nesting(f)
    added_lines = (
        _own(changed_span(f.added_lines, s.start_line, s.end_line), new_side.inside(s.start_line, s.end_line))
        if s.change != "removed"
        else ()
    )
    removed_lines = (
        _own(
            changed_span(f.removed_lines, s.old_start_line, s.old_end_line),
            old_side.inside(s.old_start_line, s.old_end_line),
        )
        if s.old_start_line is not None
        else ()
    )
    added_lines, removed_lines = _drop_case_only(added_lines, removed_lines)
    added_lines, removed_lines = _drop_renamed(added_lines, removed_lines, renames or {})
    if f.language in TYPESCRIPT:
        added_lines, removed_lines = _drop_type_only(added_lines, removed_lines)
    leaf = s.qualified_name.rsplit(".", 1)[-1]
    added = _without_own_name(_code(added_lines, s.start_line, s.end_line, f.prose_added, moved), leaf)
    removed = _code(removed_lines, s.old_start_line, s.old_end_line, f.prose_removed, moved)
    removed = _without_own_name(removed, (s.old_qualified_name or s.qualified_name).rsplit(".", 1)[-1])
    return added, removed


def _display_escapes(calls: Iterable[str]) -> frozenset[str]:
    """Local names of the display escapers ``calls`` resolve to, when no other call shares them."""
    display = {c for c in calls if c.endswith(DISPLAY_ESCAPERS)}
    names = {c.rsplit(".", 1)[-1] for c in display}
    others = {c.rsplit(".", 1)[-1] for c in calls if c not in display}
    return frozenset(names - others)


def _without_calls(text: str, names: frozenset[str]) -> str:
    """``escape(url)`` -> ``_(url)`` for each of ``names``: the call is no evidence."""
    if not names:
        return text
    return re.sub(rf"\b(?:{'|'.join(map(re.escape, sorted(names)))})\s*\(", "_(", text)


def _symbol_matches(
    f: FileChange,
    s: SymbolChange,
    moved: frozenset[str] = frozenset(),
    named_here: Mapping[str, tuple[Concern, ...]] | None = None,
    nesting: tuple[_Nesting, _Nesting] | None = None,
    renames: dict[str, str] | None = None,
) -> list[Match]:
    if s.kind not in CODE_KINDS or not s.logic_changed:
        return []
    added, removed = _changed_code(f, s, moved, nesting, renames)
    if not added.strip() and not removed.strip():
        return []
    if s.change == "added" and s.kind == "class" and _constants_only(added):
        return []  # an enumeration of header values (werkzeug 0d29255f: ``CORP.SAME_ORIGIN``) decides nothing
    chore = s.code_delta is not None and housekeeping_only(s.code_delta)
    # A term inside the text of a warning or a log line (``warnings.warn("JWS support is
    # deprecated")``, ``console.warn(`each redirect is followed`)``) is words for a reader, not
    # code, whatever else the change does (a returned or raised string is still code).
    added = without_prose_line_ends(without_message_texts(added))
    removed = without_prose_line_ends(without_message_texts(removed))
    confirm = (
        "\n".join(
            _STRING.sub("''", x) if _HOUSEKEEPING.match(x) else x
            for x in (*s.code_delta[0], *s.code_delta[1])
        )
        if s.code_delta is not None
        else None
    )
    confirm = without_prose_line_ends(confirm) if confirm is not None else None
    if s.code_delta is None and (text_only := _texts_only(added, removed)) is not None:
        # Only the text of a message changed, in a language compared by its lines (node-fetch
        # 1e99050f: a thrown error's wording, "redirect mode is set to error"): words, not logic.
        chore = True
        added, removed = text_only
    calls: Iterable[str] = s.calls
    if display := _display_escapes(s.calls):
        added, removed = _without_calls(added, display), _without_calls(removed, display)
        confirm = _without_calls(confirm, display) if confirm is not None else None
        calls = [c for c in s.calls if not c.endswith(DISPLAY_ESCAPERS)]
    found = match(
        s.qualified_name,
        added,
        calls,
        family(s.language),
        removed_code=removed,
        confirm=confirm,
        strong_only=s.signature_only or chore,
        path=s.file,
    )
    if not found and named_here and s.change != "added":
        found = _calls_changed_check(s, added, named_here)
    if s.change != "added" and (redos := removed_backtracking(added, removed, family(s.language))):
        shown = ", ".join(f"`{p}`" for p in redos[:2])
        found = [Match(REDOS, (f"removes {shown}, which backtracks on a crafted input",), 3), *found]
    if s.change == "added" and not _overrides(s, added):
        found = [m for m in found if m.strength >= ADDED_MIN_STRENGTH]
    return found


def _overrides(s: SymbolChange, added: str) -> bool:
    """An added method that calls the base class's method of its own name (``super().
    get_redirect_target(resp)``) changes what an existing operation does, as an edit of it would
    (pip e407d065: redirects to ``file://`` refused in an override)."""
    leaf = s.qualified_name.rsplit(".", 1)[-1]
    return (
        s.kind == "method"
        and re.search(rf"\bsuper\b(?:\(\s*[\w.,\s]*\))?\s*\.\s*{re.escape(leaf)}\s*\(", added) is not None
    )


_CONSTANT = re.compile(
    r"""^\s*[A-Za-z_]\w*\s*(?::[^=]*)?=\s*(?:[rbuf]*(['"]).*\1|-?[\d.]+|None|True|False)\s*,?$"""
)
_CLASS_HEADER = re.compile(r"^\s*class\b.*:\s*$")


def _constants_only(added: str) -> bool:
    """A class's own new lines are its header and names given literal values: an enumeration."""
    lines = [t for t in added.splitlines() if t.strip() and not _CLASS_HEADER.match(t)]
    return bool(lines) and all(_CONSTANT.match(t) for t in lines)


def _calls_changed_check(
    s: SymbolChange, added: str, named_here: Mapping[str, tuple[Concern, ...]]
) -> list[Match]:
    """Call-graph evidence: the symbol's new code calls a function this same change adds and
    whose name places it in a concern (``run`` now calls the new ``_ensure_authed``):
    the caller is where the check takes effect."""
    own = s.qualified_name.rsplit(".", 1)[-1]
    out: list[Match] = []
    seen: set[str] = set()
    for name in dict.fromkeys(_CALLED.findall(added)):
        if name == own or name not in named_here:
            continue
        for concern in named_here[name]:
            if concern.id not in seen:
                seen.add(concern.id)
                out.append(Match(concern, (f"calls `{name}`, added here",), CALLED_CHECK_STRENGTH))
    return out


def _named_here(diff: SemanticDiff) -> dict[str, tuple[Concern, ...]]:
    """Functions the change adds (library code) whose name alone places them in a concern, by
    their last name part: a new check the rest of the change routes through."""
    out: dict[str, tuple[Concern, ...]] = {}
    for f in diff.files:
        if f.status == "deleted" or not diff.in_library(f.path):
            continue
        for s in f.symbols:
            if s.kind in ("function", "method") and s.change == "added":
                leaf = s.qualified_name.rsplit(".", 1)[-1]
                if len(leaf) >= MIN_CALLED_NAME and (concerns := named_concerns(s.qualified_name)):
                    out[leaf] = concerns
    return out


# More findings than this in one change whose evidence is only the symbols' names are a sweep:
# one finding names them (a typing pass over an HTTP client's auth and cookie code).
MAX_NAME_ONLY = 5
# The changed line quoted in a finding whose evidence is only the symbol's name, cut to this many
# characters: enough to recognise the statement, short enough for one line of a report.
EXCERPT_CHARS = 80


def _code_evidence(matches: list[Match]) -> bool:
    """Some evidence is a strong term of the changed code (not only the symbol's name, its calls
    or a common word such as `iss`)."""
    return any(m.from_code for m in matches[:2])


_HEADER = re.compile(r"^(?:async\s+def|def|class|(?:export\s+)?(?:async\s+)?function)\b")
# Characters of a long changed statement shown before the point where it differs from the old one.
HEADER_LEAD = 24


def _common_prefix(a: str, b: str) -> int:
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    return i


def _around_difference(new: str, old: str) -> str:
    """``new`` from a little before where it stops matching ``old``: ``…httponly=False, partitioned=False)``."""
    start = max(0, _common_prefix(new, old) - HEADER_LEAD)
    return ("…" if start else "") + new[start:]


def _delta_or_lines(
    f: FileChange,
    s: SymbolChange,
    moved: frozenset[str],
    nesting: tuple[_Nesting, _Nesting],
    renames: dict[str, str],
) -> tuple[str, str]:
    """What to quote of a change: Python's normalized statements when there are some (a header
    re-annotated is not the change; ``cookie.value = value.replace(...)`` is), else the lines."""
    if s.code_delta is not None:
        added, removed = (
            [x for x in side if not x.startswith(("<def ", "<class ")) and x != "pass"]
            for side in s.code_delta
        )
        if added or removed:
            return "\n".join(added), "\n".join(removed)
    return _changed_code(f, s, moved, nesting, renames)


def _what_changed(added: str, removed: str) -> str:
    """``the change: `if not isinstance(iss, str):` (+3 -1 lines)``: what a name-only finding
    leaves the reader to look up (pyjwt ``PyJWT._validate_iss``: "its name (`jwt`)")."""
    plus = [t.strip() for t in added.splitlines() if t.strip()]
    minus = [t.strip() for t in removed.splitlines() if t.strip()]
    if not plus and not minus:
        return ""
    first = plus[0] if plus else minus[0]
    if plus and _HEADER.match(first):
        # A body statement says more than the header; a header alone is quoted where it differs
        # (werkzeug 32e69512: ``def set_cookie(self, key, value='', max_age=None, …`` hid the new
        # ``partitioned=False`` at its end).
        body = [t for t in plus if not _HEADER.match(t)]
        if body:
            first = body[0]
    if plus and len(first) > EXCERPT_CHARS:
        # A long statement edited at its end: quoted from near the edit, against the removed
        # statement that shares most of its start.
        old = max(minus, key=lambda t: _common_prefix(first, t), default="")
        if _common_prefix(first, old) > HEADER_LEAD:
            first = _around_difference(first, old)
    if len(first) > EXCERPT_CHARS:
        first = first[: EXCERPT_CHARS - 1] + "…"
    shown = f"`{first.replace('`', chr(39))}`" if plus else f"removed `{first.replace('`', chr(39))}`"
    return f"; the change: {shown} (+{len(plus)} -{len(minus)})"


def _message(s: SymbolChange, matches: list[Match], what: str = "") -> str:
    """What the change touched, the evidence, what the change is when the evidence is only the
    name, and what goes wrong if it is wrong."""
    concerns = ", ".join(m.concern.title for m in matches[:2])
    evidence = "; ".join(", ".join(m.evidence) for m in matches[:2] if m.evidence)
    verb = "added" if s.change == "added" else "changed"
    stakes = f"; if wrong, {matches[0].concern.stakes}" if matches[0].concern.stakes else ""
    return f"security-sensitive logic {verb} in {shown_name(s)} ({concerns}): {evidence}{what}{stakes}"


def shown_name(s: SymbolChange) -> str:
    """The symbol as a reader knows it: a JavaScript module's anonymous ``export default
    function (config) {...}`` is named ``default`` (axios's XHR adapter), which says nothing alone."""
    if family(s.language) == "js" and s.qualified_name.split(".", 1)[0] == DEFAULT_EXPORT:
        return f"the default export of {s.file}" + s.qualified_name[len(DEFAULT_EXPORT) :]
    return s.qualified_name


def _nested_in_scored(scored: list[tuple[int, SymbolChange, list[Match]]]) -> dict[str, str]:
    """Functions defined inside another function that has a finding too, mapped to that function:
    the digest helpers ``md5_utf8``, ``sha_utf8`` of ``build_digest_header`` are one change to
    read, not four findings."""
    functions = {s.qualified_name for _, s, _ in scored if s.kind in ("function", "method")}
    out: dict[str, str] = {}
    for _, s, _ in scored:
        parts = s.qualified_name.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            outer = ".".join(parts[:cut])
            if outer in functions:
                out[s.qualified_name] = outer
                break
    return out


def rule_security_logic(diff: SemanticDiff) -> list[Finding]:
    out: list[Finding] = []
    name_only: list[tuple[Finding, Concern]] = []
    moved = moved_lines(diff)
    named_here = _named_here(diff)
    for f in diff.files:
        if f.status == "deleted" or not diff.in_library(f.path):
            continue
        scored: list[tuple[int, SymbolChange, list[Match]]] = []
        nesting = _nesting(f)
        renames = file_renames(f)
        for s in f.symbols:
            matches = _symbol_matches(f, s, moved, named_here, nesting, renames)
            if matches:
                scored.append((sum(m.strength for m in matches), s, matches))
        if not scored:
            continue
        nested = _nested_in_scored(scored)
        scored = [item for item in scored if item[1].qualified_name not in nested]
        scored.sort(key=lambda item: (-item[0], item[1].start_line))
        kept, rest = scored[:MAX_PER_FILE], scored[MAX_PER_FILE:]
        for i, (_score, s, matches) in enumerate(sorted(kept, key=lambda item: item[1].start_line)):
            by_name = not _code_evidence(matches)
            what = _what_changed(*_delta_or_lines(f, s, moved, nesting, renames)) if by_name else ""
            message = _message(s, matches, what)
            inner = [n for n, outer in nested.items() if outer == s.qualified_name]
            if inner:
                message += "; with its nested " + ", ".join(n.rsplit(".", 1)[-1] for n in inner[:6])
            if rest and i == len(kept) - 1:
                message += "; also " + ", ".join(r[1].qualified_name for r in rest[:6])
            finding = Finding(
                "medium",
                "security",
                message,
                f.path,
                s.start_line,
                s.qualified_name,
                rule="security-logic",
                count=1 + len(inner) + (len(rest) if rest and i == len(kept) - 1 else 0),
            )
            if by_name:
                name_only.append((finding, matches[0].concern))
            else:
                out.append(finding)
    if len(name_only) > MAX_NAME_ONLY:
        return [*out, _sweep(name_only)]
    return out + [finding for finding, _ in name_only]


def _sweep(items: list[tuple[Finding, Concern]]) -> Finding:
    """Many symbols placed in a concern by their names alone, in one change: a sweep (requests
    561e4b68 "Add inline types": fourteen findings, each "its name (`auth`)" and a small rewrite
    that came with the annotations). One finding names them; the reader checks each for a
    change of behaviour."""
    concerns = list(dict.fromkeys(c.title for _, c in items))
    stakes = items[0][1].stakes
    files = sorted({f.file for f, _ in items if f.file})
    names = ", ".join(f.symbol or "" for f, _ in items[:8]) + (" ..." if len(items) > 8 else "")
    return Finding(
        "medium",
        "security",
        f"security-sensitive logic changed in {len(items)} symbols that only their names place in "
        f"a concern ({', '.join(concerns[:3])}), across {plural(len(files), 'file')}: {names}; a sweep "
        "(typing, renames, a refactor) touches many at once: read each for a change of behaviour"
        + (f"; if one is wrong, {stakes}" if stakes else ""),
        files[0] if len(files) == 1 else None,
        None,
        None,
        rule="security-logic",
        count=sum(f.count for f, _ in items),
    )
