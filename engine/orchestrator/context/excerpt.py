"""Code as the model reads it: a definition whole, or its head, the lines that matter and marked gaps.

Owns the shape of a ``source`` item's text. A definition that fits its share of the budget
is sent whole. A longer one keeps its signature and first body lines, the lines the ranking
points at (those holding the task's terms) with a little context, and its last line; every
gap is one marker line, ``    ... (lines 120-180 elided) ...``, so the model knows the code
goes on and can ask for it (NEED). Lines are never altered: what is shown can be quoted in
a SEARCH block. It reads nothing itself; callers hand it the file's lines.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from engine.tokens import estimate_tokens

# A gap of at most this many lines is shown instead of marked: the marker costs as much.
MIN_GAP_LINES = 2
# Context kept around each line the ranking points at: enough to see the whole statement and
# the condition around it, which is where fixes go.
CONTEXT_BEFORE = 2
CONTEXT_AFTER = 2
# The signature's end is looked for this far: a long parameter list spans many lines (one
# parameter per line, as formatters write them; a builder with 20 keyword arguments takes 25).
MAX_SIGNATURE_LINES = 40
# Before brackets were counted, the end was the first line ending like a signature within this
# many lines; it is still the answer when the brackets never balance (a bracket in a string).
MAX_UNBALANCED_SIGNATURE_LINES = 12
# The head of a long definition after its signature: the docstring's first lines (the rest of
# a long docstring is elided) and then the first statements, which show how it starts working.
HEAD_DOC_LINES = 2
HEAD_CODE_LINES = 5
# The last lines are kept (a closing brace, the final return) so the model sees where it ends.
TAIL_LINES = 1
ELISION_MARK = "{indent}... (lines {first}-{last} elided) ..."
# Below this many tokens an excerpt says too little to be worth an item.
MIN_EXCERPT_TOKENS = 40

_SIGNATURE_END = re.compile(r"(:|\{|=>|\bdo|\bthen|\bbegin)\s*(#.*|//.*)?$")
_DOCSTRING_OPEN = re.compile(r"""^[rRbBuU]{0,2}(\"\"\"|\'\'\')""")
_COMMENT = re.compile(r"^(#|//|/\*|\*|--)")


@dataclass(frozen=True)
class Excerpt:
    """The text of a source item and the lines it stands for (the whole definition)."""

    text: str
    first: int
    last: int
    elided: bool
    shown: tuple[int, ...]  # the line numbers whose text is in ``text``


def estimate(text: str) -> int:
    """The budget's own estimate (chars/4), used while choosing lines; the item is counted exactly later."""
    return estimate_tokens(text)


def signature_end(lines: Sequence[str], start: int, end: int) -> int:
    """The line where the definition's signature ends (``def f(\\n a,\\n b):`` -> the ``):`` line).

    It is the first line that ends like a signature with every ``(`` and ``[`` opened since
    ``start`` closed: a parameter line ending in ``:`` or ``{`` (a dict default, an annotation)
    is inside the brackets and does not end it."""
    depth = 0
    fallback = None
    for n in range(start, min(end, start + MAX_SIGNATURE_LINES - 1) + 1):
        line = lines[n - 1]
        depth += line.count("(") + line.count("[") - line.count(")") - line.count("]")
        if not _SIGNATURE_END.search(line.rstrip()):
            continue
        if depth <= 0:
            return n
        if fallback is None and n < start + MAX_UNBALANCED_SIGNATURE_LINES:
            fallback = n
    return fallback if fallback is not None else start


def doc_lines(lines: Sequence[str], start: int, end: int) -> set[int]:
    """The lines of a definition that are documentation: its docstring (the string right after
    its signature) and every comment line."""
    end = min(end, len(lines))
    out = {n for n in range(start, end + 1) if _COMMENT.match(lines[n - 1].strip())}
    n = signature_end(lines, start, end) + 1
    while n <= end and not lines[n - 1].strip():
        n += 1
    quote = _DOCSTRING_OPEN.match(lines[n - 1].strip()) if n <= end else None
    if quote is not None:
        close = quote.group(1)
        last = n
        if close not in lines[n - 1].strip()[quote.end() :]:
            last = next((m for m in range(n + 1, end + 1) if close in lines[m - 1]), n)
        out.update(range(n, last + 1))
    return out


def head_lines(lines: Sequence[str], start: int, end: int) -> tuple[list[int], list[int]]:
    """(signature lines, opening lines of the body): the docstring's first ``HEAD_DOC_LINES``
    (a longer docstring's rest is left out) and the first ``HEAD_CODE_LINES`` statements."""
    sig_end = signature_end(lines, start, end)
    signature = list(range(start, sig_end + 1))
    opening: list[int] = []
    n = sig_end + 1
    while n <= end and not lines[n - 1].strip():
        n += 1
    if n <= end:
        first = lines[n - 1].strip()
        quote = _DOCSTRING_OPEN.match(first)
        if quote:
            close = quote.group(1)
            rest = first[quote.end() :]
            doc_end = n
            if close not in rest:
                doc_end = next((m for m in range(n + 1, end + 1) if close in lines[m - 1]), n)
            opening += list(range(n, min(doc_end, n + HEAD_DOC_LINES - 1) + 1))
            n = doc_end + 1
    code = 0
    while n <= end and code < HEAD_CODE_LINES:
        stripped = lines[n - 1].strip()
        opening.append(n)
        if stripped and not _COMMENT.match(stripped):
            code += 1
        n += 1
    return signature, opening


# Statements that leave a definition without behaviour of its own (an abstract method, a stub).
_STUB_STATEMENTS = frozenset({"pass", "...", "raise NotImplementedError", "raise NotImplementedError()"})


def is_stub(lines: Sequence[str], start: int, end: int) -> bool:
    """Whether a Python definition's body is a docstring and nothing that runs (at most ``pass``,
    ``...`` or ``raise NotImplementedError``): a hook specification, a protocol or abstract method."""
    end = min(end, len(lines))
    sig_end = signature_end(lines, start, end)
    if not lines[sig_end - 1].split("#", 1)[0].rstrip().endswith(":"):
        return False
    n = sig_end + 1
    while n <= end and not lines[n - 1].strip():
        n += 1
    quote = _DOCSTRING_OPEN.match(lines[n - 1].strip()) if n <= end else None
    if quote is None:
        return False
    close = quote.group(1)
    if close not in lines[n - 1].strip()[quote.end() :]:
        n = next((m for m in range(n + 1, end + 1) if close in lines[m - 1]), end)
    for m in range(n + 1, end + 1):
        stripped = lines[m - 1].strip()
        if stripped and not _COMMENT.match(stripped) and stripped not in _STUB_STATEMENTS:
            return False
    return True


def doc_above(lines: Sequence[str], line: int, floor: int) -> int:
    """The first line of the comment block right above ``line`` (``/** ... */``, ``///``,
    ``#`` lines; not above ``floor``), or ``line`` itself when there is none."""
    n = line - 1
    while n >= floor and n <= len(lines) and _COMMENT.match(lines[n - 1].strip()):
        n -= 1
    return n + 1


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def render(lines: Sequence[str], shown: Sequence[int], first: int, last: int) -> str:
    """``shown`` lines of ``first..last`` in order, each gap replaced by one elision mark."""
    out: list[str] = []
    prev = first - 1
    for n in sorted(shown):
        if n > prev + 1:
            out.append(_mark(lines, prev + 1, n - 1))
        out.append(lines[n - 1])
        prev = n
    if prev < last:
        out.append(_mark(lines, prev + 1, last))
    return "\n".join(out)


def _mark(lines: Sequence[str], first: int, last: int) -> str:
    """The gap's marker, indented like the gap's first non-blank line."""
    line = next((lines[n - 1] for n in range(first, last + 1) if lines[n - 1].strip()), "")
    return ELISION_MARK.format(indent=_indent(line), first=first, last=last)


def excerpt(
    lines: Sequence[str],
    start: int,
    end: int,
    weights: Mapping[int, float],
    max_tokens: int,
    *,
    hidden: Sequence[tuple[int, int]] = (),
    count: Callable[[str], int] = estimate,
    read_on: bool = False,
) -> Excerpt | None:
    """The text for lines ``start..end`` within ``max_tokens``, or None when not even its head fits.

    ``weights`` (line -> how strongly the ranking points at it) decides which lines of a long
    definition are kept; ``hidden`` ranges are never shown (a class's methods that compete as
    items of their own). Whole when it fits and nothing is hidden. ``read_on`` spends what is
    left of ``max_tokens`` on the lines after the head, in reading order (a NEED answer: the
    model asked for this definition, so as much of it as fits).
    """
    end = min(end, len(lines))
    if start < 1 or end < start or max_tokens < MIN_EXCERPT_TOKENS:
        return None
    whole = range(start, end + 1)
    if not hidden:
        text = "\n".join(lines[n - 1] for n in whole)
        if count(text) <= max_tokens:
            return Excerpt(text, start, end, False, tuple(whole))

    def visible(n: int) -> bool:
        return start <= n <= end and not any(a <= n <= b for a, b in hidden)

    signature, opening = head_lines(lines, start, end)
    head = [n for n in signature if visible(n)]
    body_head = [n for n in opening if visible(n)]
    tail = [n for n in range(end - TAIL_LINES + 1, end + 1) if visible(n) and n > signature[-1]]
    chosen: set[int] = set()
    if head and estimate(render(lines, head, start, end)) > max_tokens:
        head = head[:1]  # a signature too long for the room: its first line still names it
    for group in (head, body_head, tail):
        trial = chosen | set(group)
        if estimate(render(lines, sorted(trial), start, end)) <= max_tokens:
            chosen = trial
        elif not chosen:
            return None  # not even the signature fits
    for n in sorted((n for n in weights if visible(n)), key=lambda n: (-weights[n], n)):
        window = {m for m in range(n - CONTEXT_BEFORE, n + CONTEXT_AFTER + 1) if visible(m)}
        if window <= chosen:
            continue
        trial = chosen | window
        if estimate(render(lines, sorted(trial), start, end)) <= max_tokens:
            chosen = trial
    if read_on:
        for n in range(start, end + 1):
            if n in chosen or not visible(n):
                continue
            trial = chosen | {n}
            if estimate(render(lines, sorted(trial), start, end)) > max_tokens:
                break
            chosen = trial
    # Close small gaps: a marker for one or two lines costs as much as the lines.
    ordered = sorted(chosen)
    for a, b in zip(ordered, ordered[1:], strict=False):
        gap = [m for m in range(a + 1, b) if visible(m)]
        if gap and len(gap) == b - a - 1 and len(gap) <= MIN_GAP_LINES:
            trial = chosen | set(gap)
            if estimate(render(lines, sorted(trial), start, end)) <= max_tokens:
                chosen = trial
    shown = tuple(sorted(chosen))
    text = render(lines, shown, start, end)
    return Excerpt(text, start, end, len(shown) < end - start + 1, shown)
