"""The edit protocol the model emits: SEARCH/REPLACE and SYMBOL blocks.

``parse_blocks`` turns a reply into ``EditBlock``s; ``apply_blocks`` applies them
to file texts in memory. Either every block of a reply applies or an
``EditBlockError`` lists each failure with the nearest real lines, for a retry
prompt. Nothing here writes to disk; staging is the session's job.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from engine.edits.errors import FileRefused, PathDenied, SecretPathDenied
from engine.edits.sandbox import normalize_rel, resolve_in_repo
from engine.errors import SemforaError
from engine.repo import git

# The markers, exactly: seven characters, alone on the line (surrounding blanks aside). Anything
# else is content; a Markdown/RST underline of 5-9 "=" must never end a SEARCH section.
OPEN_SEARCH = "<<<<<<< SEARCH"
_OPEN_SYMBOL = re.compile(r"^<{7} SYMBOL[ \t]+(\S.*?)$")
DIVIDER = "======="
CLOSE = ">>>>>>> REPLACE"
# A line that looks like a marker but is not one (10 "<", no space, lower case): the reply is
# malformed, and guessing what was meant could write garbage, so the whole reply fails.
_NEAR_MARKER = re.compile(r"^(<{2,}\s*(SEARCH|SYMBOL)|>{2,}\s*REPLACE)\b", re.IGNORECASE)
# Failures found while reading the reply itself: their ``nearest`` lines are the reply's.
PARSE_REASONS = frozenset({"malformed_marker", "ambiguous_divider", "truncated", "missing_path"})
_FENCE = re.compile(r"^\s*(```|~~~)")
_LIST_MARKER = re.compile(r"^(?:[-+*]|\d{1,3}[.)])\s+")
# A reply may start with a byte-order mark (some clients add one); it is never content.
BOM = "\ufeff"
# How many numbered lines of the real file a failure shows the model at most.
NEAREST_MAX_LINES = 12
# Candidate windows scored with difflib when looking for the nearest real lines.
NEAREST_CANDIDATES = 8

# A path line with spaces that names no existing file is a new file's path only when it ends in
# an extension and uses none of these words (the small words and verbs of a sentence).
_EXTENSION = re.compile(r"\.[A-Za-z0-9][A-Za-z0-9_+-]{0,11}$")
_PROSE_TEXT = (
    "a an and are as at be by for from here i i'll in into is it it's its let's now of on or so "
    "that the then this to we we'll will with you add change create delete edit fix make modify "
    "put remove replace update write"
)
_PROSE_WORDS = frozenset(_PROSE_TEXT.split())

BlockKind = Literal["search", "symbol"]


@dataclass(frozen=True)
class EditBlock:
    """One edit block of a model reply. ``index`` is its 1-based position in the reply."""

    path: str
    kind: BlockKind
    replace: str
    search: str = ""
    symbol: str | None = None
    index: int = 0
    line: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class BlockFailure:
    """Why one block failed. ``reason`` is a stable word; ``nearest`` shows real file lines."""

    index: int
    path: str
    reason: str
    message: str
    nearest: str = ""
    # The path sandbox's own code when the block's file was refused (``SECRET_PATH_DENIED``).
    code: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class EditBlockError(SemforaError):
    """At least one block of a reply failed; nothing of that reply may be staged (exit 1)."""

    code = "EDIT_BLOCK_FAILED"

    def __init__(self, failures: Sequence[BlockFailure]) -> None:
        self.failures = tuple(failures)
        # Said to the model when a retry is asked for (e.g. that a file has staged changes).
        self.note_for_model: str | None = None
        first = self.failures[0]
        more = f" (and {len(self.failures) - 1} more)" if len(self.failures) > 1 else ""
        where = f"block {first.index} ({first.path or 'no path'})"
        super().__init__(f"{where}: {first.message}{more}; nothing was staged")

    def to_json(self) -> dict[str, object]:
        payload = super().to_json()
        payload["failures"] = [f.to_json() for f in self.failures]
        return payload

    def retry_prompt(self) -> str:
        """A message for the model: each failed block, why, and the file's nearest real lines."""
        parts = ["None of your edit blocks were applied because these failed:"]
        for f in self.failures:
            parts.append(f"\nBlock {f.index} for {f.path or '(no path)'}: {f.message}")
            if f.nearest and f.reason in PARSE_REASONS:
                parts.append("Your reply around there (numbered lines of the reply):\n" + f.nearest)
            elif f.nearest:
                parts.append("The nearest real lines of the file are:\n" + f.nearest)
        if self.note_for_model:
            parts.append("\n" + self.note_for_model)
        parts.append("\nSend corrected blocks for every change (SEARCH must copy the file's lines exactly).")
        return "\n".join(parts)


# ---------------------------------------------------------------------------- parsing


def _spaced_path(text: str, quoted: bool) -> bool:
    """Whether ``text``, a path line with a space that names no existing file, is still a path:
    a new file such as ``docs/release notes.md``. Quoted, bold or in backticks it is; bare, it must end in
    an extension and hold none of the small words and verbs prose is made of ("Create setup.py",
    "Then update the caller in app.py")."""
    if not _EXTENSION.search(text):
        return False
    if quoted:
        return True
    words = {w.lower() for w in re.findall(r"[A-Za-z']+", text)}
    return not words & _PROSE_WORDS


def _clean_path_line(line: str, is_file: Callable[[str], bool] | None = None) -> str | None:
    """The file path a line above a block names, or None for prose.

    A line with a space is prose ("Apply the discount after tax.") unless ``is_file`` says the
    repository has a file by that name (``docs/release notes.md``) or it reads as a new file's path
    (``_spaced_path``): otherwise such a file could never be edited or created, its block failing
    as "no file path".
    """
    text = line.strip()
    if not text or _FENCE.match(text):
        return None
    text = text.lstrip("#").strip()
    # A list item names a path as well as a line does: "- `src/app.py`", "2. src/app.py".
    text = _LIST_MARKER.sub("", text).rstrip(":").strip()  # "**src/app.py**:" is a bold path too
    quoted = len(text) > 2 and text[0] == text[-1] and text[0] in "`'\"*"
    text = text.strip("*`'\"").strip()
    if text.lower().startswith("file:"):
        text = text[5:].strip()
    text = text.rstrip(":").strip("`").strip()
    if not text:
        return None
    if "\\" in text and "/" not in text:
        # A Windows path (src\app.py): on POSIX it was one file named with backslashes, in the root.
        text = text.replace("\\", "/")
    if any(ch.isspace() for ch in text) and not (
        (is_file is not None and is_file(text)) or _spaced_path(text, quoted)
    ):
        return None
    return text


def repo_file_check(root: Path) -> Callable[[str], bool]:
    """``is_file`` for ``parse_blocks``: whether ``rel`` names a regular file under ``root``.

    Only decides whether a line is a path; the write sandbox still checks the path when it is used.
    """

    def is_file(rel: str) -> bool:
        if os.path.isabs(rel) or ".." in rel.replace("\\", "/").split("/"):
            return False
        return os.path.isfile(os.path.join(root, rel))

    return is_file


def _missing_path_message(above: str) -> str:
    message = "no file path before the block (put the path on the line above it)"
    if any(ch.isspace() for ch in above) and _EXTENSION.search(above.rstrip(":").strip("*`'\"")):
        # It may have been meant as a path: say how to write one with spaces.
        message += (
            f"; the line above it, {above!r}, reads as a sentence: a path with spaces goes alone on "
            "its line in backticks, like `docs/release notes.md`"
        )
    return message


def _body(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def _opener(line: str) -> tuple[str, str | None] | None:
    """``("search", None)`` or ``("symbol", name)`` when ``line`` is exactly an opening marker."""
    text = line.strip()
    if text == OPEN_SEARCH:
        return "search", None
    symbol = _OPEN_SYMBOL.match(text)
    if symbol:
        return "symbol", symbol.group(1)
    return None


def _near_marker(line: str) -> bool:
    text = line.strip()
    return (
        text not in (OPEN_SEARCH, CLOSE) and not _OPEN_SYMBOL.match(text) and bool(_NEAR_MARKER.match(text))
    )


def _reply_lines(lines: list[str], at: int) -> str:
    """The reply's own lines around line ``at`` (0-based), numbered, for a parse failure."""
    return numbered(lines, at - 3, at - 3 + NEAREST_MAX_LINES)


def parse_blocks(text: str, *, is_file: Callable[[str], bool] | None = None) -> list[EditBlock]:
    """Every block in ``text`` (fenced or not, LF or CRLF, with or without a leading BOM).

    ``is_file`` (a repository-relative path -> whether that file exists) lets a path line with
    spaces count as a path.

    Only exact markers count. A malformed marker, a doubled divider or a truncated block
    raises EditBlockError for the whole reply, with the reply's nearest lines.
    """
    lines = text.lstrip(BOM).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    blocks: list[EditBlock] = []
    failures: list[BlockFailure] = []
    last_path = ""
    prose_start = 0
    i = 0
    ordinal = 0
    while i < len(lines):
        opened = _opener(lines[i])
        if opened is None:
            if _near_marker(lines[i]):
                ordinal += 1
                failures.append(
                    BlockFailure(
                        ordinal,
                        last_path,
                        "malformed_marker",
                        f"line {i + 1} of the reply, {lines[i].strip()!r}, is not a marker: markers are "
                        f"exactly {OPEN_SEARCH!r}, {DIVIDER!r}, {CLOSE!r} or '<<<<<<< SYMBOL name', "
                        "alone on their line",
                        nearest=_reply_lines(lines, i),
                    )
                )
            i += 1
            continue
        kind, symbol = opened
        ordinal += 1
        start_line = i + 1
        path = None
        above = ""
        for back in range(i - 1, prose_start - 1, -1):
            if not lines[back].strip() or _FENCE.match(lines[back]):
                continue
            above = lines[back].strip()
            path = _clean_path_line(lines[back], is_file)
            break
        path = path or last_path
        i += 1
        first: list[str] = []
        second: list[str] = []
        section = first
        closed = False
        dividers = 0
        problem: tuple[str, str, int] | None = None
        while i < len(lines):
            cur = lines[i]
            if _opener(cur) is not None:
                break
            stripped = cur.strip()
            if stripped == CLOSE:
                closed = True
                i += 1
                break
            if problem is None and _near_marker(cur):
                problem = (
                    "malformed_marker",
                    f"line {i + 1} of the reply, {stripped!r}, is not a marker (markers are exactly "
                    f"{DIVIDER!r}, {CLOSE!r} and the openers, alone on their line)",
                    i,
                )
            if kind == "search" and stripped == DIVIDER:
                dividers += 1
                if dividers == 1:
                    section = second
                    i += 1
                    continue
                if problem is None:
                    problem = (
                        "ambiguous_divider",
                        f"the block has more than one {DIVIDER!r} divider (line {i + 1} of the reply); "
                        "a SEARCH block has exactly one; if the file really has such a line, "
                        "let SEARCH stop before it",
                        i,
                    )
            section.append(cur)
            i += 1
        prose_start = i
        if not path:
            failures.append(
                BlockFailure(
                    ordinal,
                    "",
                    "missing_path",
                    _missing_path_message(above),
                    nearest=_reply_lines(lines, start_line - 1),
                )
            )
            continue
        last_path = path
        if problem is not None:
            reason, message, at = problem
            failures.append(BlockFailure(ordinal, path, reason, message, nearest=_reply_lines(lines, at)))
            continue
        if not closed or (kind == "search" and not dividers):
            missing = f"{DIVIDER!r} divider" if kind == "search" and not dividers else f"{CLOSE!r} line"
            failures.append(
                BlockFailure(
                    ordinal,
                    path,
                    "truncated",
                    f"block is truncated: no {missing}",
                    nearest=_reply_lines(lines, start_line - 1),
                )
            )
            continue
        if kind == "symbol":
            blocks.append(
                EditBlock(
                    path=path,
                    kind="symbol",
                    replace=_body(first),
                    symbol=symbol,
                    index=ordinal,
                    line=start_line,
                )
            )
        else:
            blocks.append(
                EditBlock(
                    path=path,
                    kind="search",
                    search=_body(first),
                    replace=_body(second),
                    index=ordinal,
                    line=start_line,
                )
            )
    if failures:
        raise EditBlockError(failures)
    return blocks


# ---------------------------------------------------------------------------- applying


def split_lines(text: str) -> tuple[list[str], bool]:
    """LF text → lines without terminators, and whether it ended with a newline."""
    if text == "":
        return [], False
    final = text.endswith("\n")
    body = text[:-1] if final else text
    return body.split("\n"), final


def join_lines(lines: Sequence[str], final_newline: bool) -> str:
    if not lines:
        return ""
    return "\n".join(lines) + ("\n" if final_newline else "")


def _ws(line: str) -> str:
    return " ".join(line.split())


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def find_lines(hay: Sequence[str], needle: Sequence[str], key: Callable[[str], str]) -> list[int]:
    if not needle or len(needle) > len(hay):
        return []
    kh = [key(x) for x in hay]
    kn = [key(x) for x in needle]
    n = len(kn)
    return [i for i in range(len(kh) - n + 1) if kh[i] == kn[0] and kh[i : i + n] == kn]


def _reindent(replace: list[str], search_line: str, file_line: str) -> list[str]:
    """Shift replacement lines by the indentation difference between SEARCH and the file."""
    want, have = _indent(file_line), _indent(search_line)
    if want == have:
        return replace
    if want.startswith(have):
        extra = want[len(have) :]
        return [extra + r if r.strip() else r for r in replace]
    if have.startswith(want):
        cut = len(have) - len(want)
        return [r[cut:] if r[:cut].strip() == "" else r.lstrip() for r in replace]
    return replace


def _trim_blank(lines: list[str]) -> tuple[list[str], int, int]:
    lead = 0
    while lead < len(lines) and not lines[lead].strip():
        lead += 1
    tail = 0
    while tail < len(lines) - lead and not lines[len(lines) - 1 - tail].strip():
        tail += 1
    return lines[lead : len(lines) - tail], lead, tail


def _drop_blank(lines: list[str], lead: int, tail: int) -> list[str]:
    out = list(lines)
    while lead and out and not out[0].strip():
        out.pop(0)
        lead -= 1
    while tail and out and not out[-1].strip():
        out.pop()
        tail -= 1
    return out


def numbered(lines: Sequence[str], start: int, stop: int) -> str:
    start = max(0, start)
    stop = min(len(lines), stop)
    return "\n".join(f"{n + 1:>5}| {lines[n]}" for n in range(start, stop))


def nearest_lines(hay: Sequence[str], needle: Sequence[str]) -> str:
    """The window of ``hay`` most like ``needle``, numbered, for a retry prompt."""
    if not hay:
        return "(the file is empty)"
    size = max(1, min(len(needle), NEAREST_MAX_LINES))
    keys: dict[str, list[int]] = {}
    for j, line in enumerate(needle):
        if line.strip():
            keys.setdefault(_ws(line), []).append(j)
    votes: dict[int, int] = {}
    for i, line in enumerate(hay):
        for j in keys.get(_ws(line), ()):
            votes[i - j] = votes.get(i - j, 0) + 1
    if not votes:
        first = next((x for x in needle if x.strip()), "")
        best_i = max(range(len(hay)), key=lambda i: difflib.SequenceMatcher(None, hay[i], first).ratio())
        return numbered(hay, best_i, best_i + size)
    top = sorted(votes, key=lambda s: -votes[s])[:NEAREST_CANDIDATES]
    want = "\n".join(needle)

    def score(s: int) -> float:
        window = "\n".join(hay[max(0, s) : max(0, s) + len(needle)])
        return difflib.SequenceMatcher(None, window, want, autojunk=False).ratio()

    best = max(top, key=score)
    return numbered(hay, best, best + size)


def _apply_search(path: str, current: str | None, block: EditBlock) -> str | BlockFailure:
    if not block.search.strip():
        if current is not None and current.strip():
            return BlockFailure(
                block.index,
                path,
                "file_exists",
                "an empty SEARCH creates a new file, but this file already exists and is not empty",
                nearest=numbered(split_lines(current)[0], 0, NEAREST_MAX_LINES),
            )
        return block.replace
    if current is None:
        return BlockFailure(block.index, path, "unknown_file", f"{path} does not exist in the repository")
    hay, final = split_lines(current)
    needle, _ = split_lines(block.search)
    replace, _ = split_lines(block.replace)
    trimmed, lead, tail = _trim_blank(needle)
    attempts: list[tuple[list[str], list[str], Callable[[str], str], bool]] = [
        (needle, replace, str, False),
        (needle, replace, _ws, True),
    ]
    if (lead or tail) and trimmed:
        cut = _drop_blank(replace, lead, tail)
        attempts += [(trimmed, cut, str, False), (trimmed, cut, _ws, True)]
    for probe, repl, key, reindent in attempts:
        hits = find_lines(hay, probe, key)
        if len(hits) > 1:
            where = ", ".join(str(h + 1) for h in hits[:5])
            shown = "\n...\n".join(numbered(hay, h, h + min(len(probe), 4)) for h in hits[:3])
            return BlockFailure(
                block.index,
                path,
                "ambiguous",
                f"SEARCH matches {len(hits)} places (lines {where}); add surrounding lines to make it unique",
                nearest=shown,
            )
        if hits:
            at = hits[0]
            if reindent:
                first = next((k for k, s in enumerate(probe) if s.strip()), 0)
                repl = _reindent(repl, probe[first], hay[at + first])
            return join_lines(hay[:at] + repl + hay[at + len(probe) :], final or not hay)
    return BlockFailure(
        block.index, path, "no_match", "SEARCH does not match the file", nearest=nearest_lines(hay, needle)
    )


# At most this many real paths are named when a block's file does not exist.
PATH_HINTS = 3
# How alike (difflib ratio) a path must be to be named for a misspelt one.
PATH_HINT_CUTOFF = 0.8

AnalyzeFn = Callable[[str, bytes], Any]


def real_rel(root: str | Path, resolved: Path) -> str:
    """The repository-relative POSIX path of ``resolved`` (a path ``resolve_in_repo`` returned)."""
    return Path(os.path.relpath(resolved, os.path.realpath(root))).as_posix()


def _default_analyze() -> AnalyzeFn | None:
    try:
        from engine.semantic.extract import analyze_source
    except ImportError:
        return None
    return analyze_source


def _apply_symbol(
    path: str, current: str | None, block: EditBlock, analyze: AnalyzeFn | None
) -> str | BlockFailure:
    if current is None:
        return BlockFailure(block.index, path, "unknown_file", f"{path} does not exist in the repository")
    analyze = analyze or _default_analyze()
    if analyze is None:
        return BlockFailure(block.index, path, "symbol_unsupported", "symbol lookup is not available")
    try:
        analysis = analyze(path, current.encode("utf-8"))
    except (SemforaError, ImportError, ValueError, LookupError, RuntimeError) as exc:
        return BlockFailure(
            block.index, path, "symbol_unsupported", f"cannot parse {path} for symbols: {exc}"
        )
    if getattr(analysis, "language", "") == "unknown":
        return BlockFailure(
            block.index,
            path,
            "symbol_unsupported",
            f"{path} is not in a language semfora parses; use SEARCH/REPLACE",
        )
    symbols = list(getattr(analysis, "symbols", ()) or ())
    wanted = block.symbol or ""
    found = [s for s in symbols if s.qualified_name == wanted] or [s for s in symbols if s.name == wanted]
    hay, final = split_lines(current)
    if not found:
        names = sorted({s.qualified_name for s in symbols})
        close = difflib.get_close_matches(wanted, names, n=5, cutoff=0.5) or names[:10]
        return BlockFailure(
            block.index,
            path,
            "symbol_not_found",
            f"no symbol {wanted!r} in {path}",
            nearest="symbols in the file: " + ", ".join(close) if close else "",
        )
    if len(found) > 1:
        lines = ", ".join(str(s.start_line) for s in found)
        return BlockFailure(
            block.index,
            path,
            "symbol_ambiguous",
            f"{wanted!r} is defined {len(found)} times (lines {lines}); use SEARCH/REPLACE",
        )
    sym = found[0]
    start, end = sym.start_line - 1, sym.end_line
    new_lines, _ = split_lines(block.replace)
    first_new = next((ln for ln in new_lines if ln.strip()), "")
    if first_new.lstrip().startswith("@"):
        while start > 0 and hay[start - 1].lstrip().startswith("@"):
            start -= 1
    orig_indent = _indent(hay[start]) if start < len(hay) else ""
    new_indent = _indent(first_new)
    if len(new_indent) < len(orig_indent) and orig_indent.startswith(new_indent):
        extra = orig_indent[len(new_indent) :]
        new_lines = [extra + ln if ln.strip() else ln for ln in new_lines]
    return join_lines(hay[:start] + new_lines + hay[end:], final)


def apply_blocks(
    root: str | Path,
    blocks: Sequence[EditBlock],
    read_file: Callable[[str], str | None],
    *,
    deny: Sequence[str] | None = None,
    analyze: AnalyzeFn | None = None,
) -> dict[str, str]:
    """Apply ``blocks`` in order to texts from ``read_file(rel) -> LF text | None``.

    Returns ``{relative path: new LF text}`` for every touched file, or raises
    EditBlockError listing every failed block (then nothing may be staged).
    """
    working: dict[str, str] = {}
    created: dict[str, int] = {}  # files this reply creates -> the block that does
    failures: list[BlockFailure] = []
    for block in blocks:
        try:
            rel = normalize_rel(Path(root), block.path)
            rel = real_rel(root, resolve_in_repo(root, rel, deny=deny))
            current = working[rel] if rel in working else read_file(rel)
        except SecretPathDenied as exc:
            failures.append(BlockFailure(block.index, block.path, "secret_path", exc.message, code=exc.code))
            continue
        except PathDenied as exc:
            failures.append(BlockFailure(block.index, block.path, "outside_repo", exc.message, code=exc.code))
            continue
        except FileRefused as exc:
            failures.append(BlockFailure(block.index, block.path, "refused", exc.message))
            continue
        if block.kind == "symbol":
            result = _apply_symbol(rel, current, block, analyze)
        else:
            result = _apply_search(rel, current, block)
        if isinstance(result, BlockFailure):
            if result.reason == "file_exists" and rel in created:
                # The file exists only in this reply: "already exists" read as a stale view of disk.
                result = BlockFailure(
                    result.index,
                    result.path,
                    result.reason,
                    f"block {created[rel]} of this reply already creates {rel}; an empty SEARCH cannot add "
                    "to it: put the whole file in that block, or SEARCH for lines of the new file",
                    result.nearest,
                )
            failures.append(result)
        else:
            if current is None:
                created.setdefault(rel, block.index)
            working[rel] = result
    if failures:
        raise EditBlockError(_with_path_hints(root, failures, deny))
    return working


def _with_path_hints(
    root: str | Path, failures: list[BlockFailure], deny: Sequence[str] | None
) -> list[BlockFailure]:
    """``unknown_file`` failures that name the files the path most likely meant: a model that wrote a
    path relative to a subdirectory (``pkg/mod.py`` for ``src/pkg/mod.py``) learns the real one in
    its retry. Only for blocks that edit (an empty SEARCH creates the file and never fails so)."""
    if not any(f.reason == "unknown_file" for f in failures):
        return failures
    files = git.list_files(root) or []
    out = []
    for f in failures:
        near = _nearest_paths(root, f.path, files, deny) if f.reason == "unknown_file" else []
        if near:
            f = BlockFailure(f.index, f.path, f.reason, f"{f.message}; did you mean {' or '.join(near)}?")
        out.append(f)
    return out


def _nearest_paths(
    root: str | Path, path: str, files: Sequence[str], deny: Sequence[str] | None
) -> list[str]:
    """Up to PATH_HINTS repository files ``path`` most likely meant: those that end with it (it was
    written relative to a subdirectory), else the closest spellings with its extension; never one
    the sandbox would refuse."""
    suffix = [f for f in files if f.endswith("/" + path)]
    if not suffix:
        ext = os.path.splitext(path)[1]
        same_ext = [f for f in files if os.path.splitext(f)[1] == ext]
        suffix = difflib.get_close_matches(path, same_ext, n=PATH_HINTS * 2, cutoff=PATH_HINT_CUTOFF)
    found: list[str] = []
    for candidate in suffix:
        try:
            resolve_in_repo(root, candidate, deny=deny)
        except SemforaError:
            continue
        found.append(candidate)
        if len(found) == PATH_HINTS:
            break
    return found
