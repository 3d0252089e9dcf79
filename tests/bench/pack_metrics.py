"""How much of a task's gold code a context pack hands the model: the scoring rules of bench_context.

Owns the per-gold-symbol judgements (code, body, digest and file coverage) and the simulated
model of the two-round figure (which gold names it can see and would ask for). Pure functions
over plain data: a pack item is the dict that ``semfora context --json`` prints (``file``,
``symbol``, ``start_line``, ``end_line``, ``kind``, ``text``); a gold symbol is a ``GoldSpan``
read from the corpus at the indexed commit. It never builds packs, reads the index or times
anything (bench_context does).

The rules, and what each one is meant to let through or stop:

- **code** (the issue's primary rule): the gold symbol's *definition line* (the first line of
  the symbol that spells its name, so a decorator line such as ``@property`` never counts) is,
  whitespace-stripped, one of the lines of the text of an item of the gold file whose stated
  line range (when it states one) contains that line. A summary that quotes the signature
  verbatim passes this rule; that is why there is a second one.
- **body** (the guard): the same item must also hold, in order after the definition line, the
  first ``BODY_LINES`` *body* lines of the symbol: lines after the end of its signature that are
  not blank, not comments and not the docstring. A digest (signature plus doc sentence), a
  signature line in a summary, a locator or an elision placeholder cannot satisfy it; only the
  symbol's real code can. An elided middle is fine: the lines are matched as a subsequence.
- **digest** (the old ``gold recall``): an item of the gold file (not the overview or memory)
  names the symbol or states a line range that spans it, whatever its text. This is "touched",
  not "the model can quote it".
- **file**: the gold file has an item of any kind (overview and memory excluded).
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Body lines the guard asks for: enough that only the symbol's real code can match, few enough
# that a long definition shown as head + elided middle still passes (its head holds them).
BODY_LINES = 5
# Lines scanned from a symbol's first line for the one that spells its name (decorators,
# attributes and annotations come first in every language indexed here).
MAX_HEAD_SCAN = 12
# Lines scanned from the definition line for the `{` that opens a brace language's body: long
# signatures (one parameter per line) stay well under this.
MAX_SIGNATURE_SCAN = 20
# A numeric gutter some renderers put before each code line ("  42 | code", "42: code"): a line
# matches with or without it, so a pack that numbers its lines is not penalised.
GUTTER = re.compile(r"^\d+\s*[|:\u2502]\s?")
COMMENT_PREFIXES = ("#", "//", "/*", "*", "*/", "--", "<!--")
# Item kinds that say nothing about one file: the repository overview and turn memory.
NON_FILE_KINDS = frozenset({"overview", "memory"})
# How many symbols the simulated model asks for in its one NEED round (the figure).
MAX_NEED_SYMBOLS = 6
IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*(?:(?:\.|::|#|->)[A-Za-z_$][A-Za-z0-9_$]*)*")


@dataclass(frozen=True)
class GoldSpan:
    """A gold symbol as the corpus has it: where it is and the lines of its definition."""

    file: str
    symbol: str  # qualified name as semfora names it
    start_line: int
    end_line: int
    def_line_no: int  # 1-based line of the definition line
    def_line: str  # stripped text of that line
    body: tuple[str, ...]  # stripped body lines the guard asks for, in order (at most BODY_LINES)

    @property
    def short_name(self) -> str:
        return re.split(r"\.|::|#", self.symbol)[-1]


# --- reading a gold symbol from the file -----------------------------------------------------


def _is_comment(stripped: str) -> bool:
    return stripped.startswith(COMMENT_PREFIXES)


def definition_line(lines: Sequence[str], start: int, end: int, short_name: str) -> int:
    """1-based number of the first line in [start, end] that spells ``short_name`` as a word.

    Falls back to the first non-blank line that is not a decorator or comment."""
    word = re.compile(rf"(?<![A-Za-z0-9_$]){re.escape(short_name)}(?![A-Za-z0-9_$])")
    last = min(end, start + MAX_HEAD_SCAN, len(lines))
    for no in range(start, last + 1):
        if word.search(lines[no - 1]):
            return no
    for no in range(start, last + 1):
        s = lines[no - 1].strip()
        if s and not s.startswith("@") and not _is_comment(s):
            return no
    return start


def _python_body_start(lines: Sequence[str], def_no: int, end: int) -> tuple[int, set[int]]:
    """(first body line, lines of the docstring) of a Python def/class, by parsing it."""
    chunk = textwrap.dedent("\n".join(lines[def_no - 1 : end]))
    try:
        tree = ast.parse(chunk)
    except SyntaxError:
        return def_no + 1, set()
    node = tree.body[0] if tree.body else None
    body = getattr(node, "body", None)
    if not body:
        return def_no + 1, set()
    doc: set[int] = set()
    first = body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        doc = set(range(def_no - 1 + first.lineno, def_no - 1 + (first.end_lineno or first.lineno) + 1))
        rest = body[1:]
        if not rest:
            return end + 1, doc
        first = rest[0]
    decorators = getattr(first, "decorator_list", [])
    lineno = min([first.lineno, *(d.lineno for d in decorators)])
    return def_no - 1 + lineno, doc


def _brace_body_start(lines: Sequence[str], def_no: int, end: int, ruby: bool) -> int:
    """First body line of a brace-language definition: the line after the one opening it."""
    if ruby:
        return def_no + 1
    last = min(end, def_no + MAX_SIGNATURE_SCAN)
    for no in range(def_no, last + 1):
        code = lines[no - 1].split("//", 1)[0].rstrip()
        if code.endswith("{") or code.endswith("=> {"):
            return no + 1
    return def_no + 1


def gold_span(file: str, symbol: str, start: int, end: int, source: str) -> GoldSpan:
    """The gold symbol ``symbol`` of ``file`` (lines start..end of ``source``), read for scoring."""
    lines = source.splitlines()
    end = max(start, min(end, len(lines)))
    short = re.split(r"\.|::|#", symbol)[-1]
    def_no = definition_line(lines, start, end, short)
    doc: set[int] = set()
    if file.endswith((".py", ".pyi")):
        body_start, doc = _python_body_start(lines, def_no, end)
    else:
        body_start = _brace_body_start(lines, def_no, end, ruby=file.endswith(".rb"))
    body: list[str] = []
    for no in range(max(body_start, def_no + 1), end + 1):
        s = lines[no - 1].strip()
        if not s or no in doc or _is_comment(s):
            continue
        body.append(s)
        if len(body) >= BODY_LINES:
            break
    return GoldSpan(file, symbol, start, end, def_no, lines[def_no - 1].strip(), tuple(body))


# --- judging one pack --------------------------------------------------------------------------


def _line_forms(text: str) -> list[set[str]]:
    """Each line of an item's text as the set of forms it matches: stripped, and without a gutter."""
    out = []
    for raw in text.splitlines():
        s = raw.strip()
        forms = {s}
        bare = GUTTER.sub("", s, count=1).strip()
        if bare != s:
            forms.add(bare)
        out.append(forms)
    return out


def _file_items(gold: GoldSpan, items: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    out = []
    for item in items:
        if item.get("file") != gold.file or item.get("kind") in NON_FILE_KINDS:
            continue
        first, last = item.get("start_line"), item.get("end_line")
        if first is not None and last is not None and not (first <= gold.def_line_no <= last):
            continue  # another part of the file (e.g. a same-named method of another class)
        out.append(item)
    return out


def _def_positions(gold: GoldSpan, forms: list[set[str]]) -> list[int]:
    return [i for i, f in enumerate(forms) if gold.def_line and gold.def_line in f]


def code_covered(gold: GoldSpan, items: Iterable[Mapping[str, Any]]) -> bool:
    """The issue's rule: the definition line is a line of an item of the gold file."""
    return any(_def_positions(gold, _line_forms(str(i.get("text") or ""))) for i in _file_items(gold, items))


def body_covered(gold: GoldSpan, items: Iterable[Mapping[str, Any]]) -> bool:
    """The guard: definition line, then the first body lines in order, in one item's text."""
    for item in _file_items(gold, items):
        forms = _line_forms(str(item.get("text") or ""))
        for pos in _def_positions(gold, forms):
            want = list(gold.body)
            for f in forms[pos + 1 :]:
                if not want:
                    break
                if want[0] in f:
                    want.pop(0)
            if not want:
                return True
    return False


def digest_covered(gold: GoldSpan, items: Iterable[Mapping[str, Any]]) -> bool:
    """The old rule: an item of the file names the symbol or spans its lines, whatever it says."""
    for item in items:
        if item.get("file") != gold.file or item.get("kind") in NON_FILE_KINDS:
            continue
        if item.get("symbol") == gold.symbol:
            return True
        first, last = item.get("start_line"), item.get("end_line")
        if first is not None and last is not None and first <= gold.start_line and gold.end_line <= last:
            return True
    return False


def file_covered(file: str, items: Iterable[Mapping[str, Any]]) -> bool:
    return any(i.get("file") == file and i.get("kind") not in NON_FILE_KINDS for i in items)


# --- the simulated model of the NEED round -----------------------------------------------------


def visible_names(items: Iterable[Mapping[str, Any]]) -> tuple[set[str], set[str]]:
    """(dotted names, single identifiers) a model reading the pack can see.

    Dotted names are the items' ``symbol`` fields and every dotted identifier in their texts
    (``Session.resolve_redirects``, ``res.send``); single identifiers are every word-like
    identifier in the texts plus each segment of those names."""
    dotted: set[str] = set()
    words: set[str] = set()
    for item in items:
        sym = item.get("symbol")
        if sym:
            dotted.add(str(sym))
        for match in IDENT.finditer(str(item.get("text") or "")):
            dotted.add(match.group(0))
    for name in list(dotted):
        words.update(p for p in re.split(r"\.|::|#|->", name) if p)
    return dotted, words


def need_request(golds: Sequence[GoldSpan], items: Sequence[Mapping[str, Any]]) -> list[str]:
    """The names the simulated model asks for: the gold symbols not yet shown as code (body rule) that the
    pack names somewhere, qualified when it sees the qualified name, else by their own name;
    at most MAX_NEED_SYMBOLS, and nothing else. An oracle on *which* names to ask (it knows
    the gold), blind to names the pack never shows: the best one NEED round can do."""
    dotted, words = visible_names(items)
    asks: list[str] = []
    for gold in golds:
        if body_covered(gold, items):
            continue  # it already has the code; a signature alone is not enough to edit
        if gold.symbol in dotted:
            name = gold.symbol
        elif gold.short_name in words:
            name = gold.short_name
        else:
            continue
        if name not in asks:
            asks.append(name)
        if len(asks) >= MAX_NEED_SYMBOLS:
            break
    return asks
