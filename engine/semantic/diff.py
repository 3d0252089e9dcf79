"""Semantic diff: what changed between two git refs (or a ref and the working tree), symbol by symbol.

Owns reading both sides from git, pairing symbols (stable id, then body similarity for moves
and renames), risk and signature deltas, new external calls and the callers a change reaches.
It never judges a change (that is engine.review) and never writes to the repository.
"""

from __future__ import annotations

import difflib
import os
import re
import subprocess
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from engine.errors import SemforaError, UsageError
from engine.semantic.model import CallSite, FileAnalysis, Symbol

WORKING = "WORKING"
# The index (what `git commit` would record now): the target a pre-commit hook reviews.
STAGED = "STAGED"
# git's well-known id of the empty tree: the "before" side of a repository's first commit.
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
# Files above this size are listed but not parsed: a generated or vendored blob tells a reviewer nothing.
MAX_ANALYZED_BYTES = 1_000_000
# Above this many bytes (both sides together), added/removed lines are found by counting instead of
# aligning: difflib's alignment is quadratic in the worst case, and a secret scan needs only the lines.
MAX_ALIGNED_BYTES = 400_000
# Bytes sniffed for a NUL to call a file binary (git uses the same first-8000-bytes rule).
BINARY_SNIFF_BYTES = 8000
# A removed and an added symbol of the same kind whose bodies are at least this similar (with the
# name masked) are one symbol that was renamed or moved; below it, a rewrite reads as remove + add.
RENAME_SIMILARITY = 0.75
# Past this many remove/add pairs, only exact body matches are considered: the similarity scan is
# quadratic and a diff that large is a rewrite, not a rename.
MAX_SIMILARITY_PAIRS = 40_000
# Callers listed per changed symbol; more are counted but not listed, to keep the diff readable.
MAX_CALLERS_PER_SYMBOL = 20
# Names this short (or dunder methods) match everywhere; searching callers for them is noise.
MIN_CALLER_NAME = 3
GIT_TIMEOUT = 60.0

RISK_ORDER = {"low": 0, "medium": 1, "high": 2}
ChangeKind = Literal["added", "removed", "modified", "moved", "renamed"]
FileStatus = Literal["added", "deleted", "modified", "renamed"]


class DiffError(SemforaError):
    """git could not produce the diff (a corrupt object, a failed command)."""

    code = "DIFF_FAILED"


class NotAGitRepository(UsageError):
    """A semantic diff needs a git repository."""

    code = "DIFF_NOT_GIT"


class RefNotFound(UsageError):
    """A ref given to diff or ci does not name a commit in this repository."""

    code = "DIFF_REF_NOT_FOUND"


class ShallowClone(RefNotFound):
    """The ref (or the merge base) is missing because the clone is shallow."""

    code = "DIFF_SHALLOW_CLONE"


# --------------------------------------------------------------------------- external calls

# Dynamic code execution: the risk tables (engine.semantic.risk) cover effects on the outside world;
# a reviewer also wants to know when a change starts running code built from data. Dynamic imports
# (importlib.import_module, __import__) are left out: lazy imports of constant names are everywhere.
_EVAL_CALLS = frozenset(
    {
        "eval",
        "exec",
        "compile",
        "Function",
        "pickle.loads",
        "pickle.load",
        "marshal.loads",
        "yaml.load",
        "yaml.unsafe_load",
        "vm.runInContext",
        "vm.runInNewContext",
        "vm.runInThisContext",
        "dill.loads",
        "jsonpickle.decode",
    }
)
# Risk categories (engine.semantic.risk) reported as new external calls, with the name the diff uses.
_EXTERNAL_CATEGORIES = {
    "network": "network",
    "subprocess": "subprocess",
    "filesystem-write": "filesystem",
    "database": "database",
}


def classify_call(call: CallSite, language: str, aliases: Mapping[str, str] | None = None) -> str | None:
    """The external effect of a call (network, subprocess, filesystem, database, eval), if any.

    Effects come from the per-language risk tables (with import aliases resolved); ``eval``
    covers dynamic code execution, which the risk tables do not classify.
    """
    from engine.semantic import risk

    aliases = aliases or {}
    if call.receiver:
        root, dot, rest = call.receiver.partition(".")
        dotted = f"{aliases.get(root, root)}{dot}{rest}.{call.name}"
    else:
        dotted = aliases.get(call.name, call.name)
    js_exec = call.name == "exec" and language in ("javascript", "typescript", "tsx")
    if not js_exec and (dotted in _EVAL_CALLS or (not call.receiver and call.name in _EVAL_CALLS)):
        return "eval"
    rules = risk.RULES_BY_LANGUAGE.get(language)
    if rules is not None:
        hit = risk.classify_call(rules, call, aliases)
        if hit is not None and hit[0] in _EXTERNAL_CATEGORIES:
            return _EXTERNAL_CATEGORIES[hit[0]]
    return None


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class ExternalCall:
    category: str
    call: str
    line: int


@dataclass(frozen=True)
class CallerRef:
    """A line that calls a changed symbol, on the target side."""

    file: str
    line: int
    symbol: str | None
    text: str
    via: str = "text search"  # or "call graph" when the index resolved the edge


@dataclass(frozen=True)
class SymbolChange:
    """One symbol that was added, removed, modified, moved or renamed."""

    change: ChangeKind
    kind: str
    qualified_name: str
    file: str
    id: str
    start_line: int
    end_line: int
    language: str = ""
    old_qualified_name: str | None = None
    old_file: str | None = None
    old_id: str | None = None
    signature_before: str | None = None
    signature_after: str | None = None
    risk_before: str | None = None
    risk_after: str | None = None
    risk_reasons_added: tuple[str, ...] = ()
    risk_reasons_removed: tuple[str, ...] = ()
    new_external_calls: tuple[ExternalCall, ...] = ()
    similarity: float | None = None
    max_nesting: int = 0
    exported: bool = True
    callers: tuple[CallerRef, ...] = ()
    callers_total: int = 0

    @property
    def signature_changed(self) -> bool:
        return (
            self.signature_before is not None
            and self.signature_after is not None
            and self.signature_before != self.signature_after
        )

    @property
    def lines(self) -> int:
        return self.end_line - self.start_line + 1 if self.change != "removed" else 0

    @property
    def risk_raised(self) -> bool:
        before = RISK_ORDER.get(self.risk_before or "low", 0)
        after = RISK_ORDER.get(self.risk_after or "low", 0)
        return self.change != "removed" and after > before

    def to_json(self) -> dict[str, Any]:
        return {
            "change": self.change,
            "kind": self.kind,
            "qualified_name": self.qualified_name,
            "file": self.file,
            "id": self.id,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "old_qualified_name": self.old_qualified_name,
            "old_file": self.old_file,
            "old_id": self.old_id,
            "signature_before": self.signature_before,
            "signature_after": self.signature_after,
            "signature_changed": self.signature_changed,
            "risk_before": self.risk_before,
            "risk_after": self.risk_after,
            "risk_raised": self.risk_raised,
            "risk_reasons_added": list(self.risk_reasons_added),
            "risk_reasons_removed": list(self.risk_reasons_removed),
            "new_external_calls": [
                {"category": c.category, "call": c.call, "line": c.line} for c in self.new_external_calls
            ],
            "similarity": self.similarity,
            "lines": self.lines,
            "max_nesting": self.max_nesting,
            "exported": self.exported,
            "callers": [
                {"file": c.file, "line": c.line, "symbol": c.symbol, "via": c.via} for c in self.callers
            ],
            "callers_total": self.callers_total,
        }


@dataclass(frozen=True)
class FileChange:
    """One changed file with its symbol changes and its added lines (for rules that read text)."""

    path: str
    status: FileStatus
    old_path: str | None = None
    language: str | None = None
    binary: bool = False
    lines_added: int = 0
    lines_removed: int = 0
    note: str | None = None
    symbols: tuple[SymbolChange, ...] = ()
    added_lines: tuple[tuple[int, str], ...] = field(default=(), repr=False)
    removed_lines: tuple[tuple[int, str], ...] = field(default=(), repr=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "old_path": self.old_path,
            "status": self.status,
            "language": self.language,
            "binary": self.binary,
            "lines_added": self.lines_added,
            "lines_removed": self.lines_removed,
            "note": self.note,
            "symbols": [s.to_json() for s in self.symbols],
        }


@dataclass(frozen=True)
class SemanticDiff:
    base: str
    target: str
    base_commit: str
    target_commit: str | None
    files: tuple[FileChange, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def symbols(self) -> list[SymbolChange]:
        return [s for f in self.files for s in f.symbols]

    def counts(self) -> dict[str, int]:
        out = {k: 0 for k in ("added", "removed", "modified", "moved", "renamed")}
        for s in self.symbols:
            out[s.change] += 1
        out["files"] = len(self.files)
        out["signature_changes"] = sum(1 for s in self.symbols if s.signature_changed)
        out["risk_raised"] = sum(1 for s in self.symbols if s.risk_raised)
        out["new_external_calls"] = sum(len(s.new_external_calls) for s in self.symbols)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "target": self.target,
            "base_commit": self.base_commit,
            "target_commit": self.target_commit,
            "notes": list(self.notes),
            "summary": self.counts(),
            "files": [f.to_json() for f in self.files],
        }

    def to_toon(self) -> str:
        """Compact TOON for a model: empty and default fields are dropped."""
        import toon_format

        def compact(value: Any) -> Any:
            if isinstance(value, dict):
                kept = {k: compact(v) for k, v in value.items()}
                return {
                    k: v
                    for k, v in kept.items()
                    if v not in (None, [], {}, "", False) and k not in ("id", "old_id", "signature_changed")
                }
            if isinstance(value, list):
                return [compact(v) for v in value]
            return value

        return toon_format.dumps(compact(self.to_json()))

    def to_text(self) -> str:
        counts = self.counts()
        head = f"semantic diff {self.base}..{self.target}: {counts['files']} files, " + ", ".join(
            f"{counts[k]} {k}" for k in ("added", "removed", "modified", "moved", "renamed") if counts[k]
        )
        lines = [head.rstrip(", ")]
        lines.extend(f"note: {n}" for n in self.notes)
        marks = {"added": "+", "removed": "-", "modified": "~", "moved": ">", "renamed": ">"}
        for f in self.files:
            where = f"{f.old_path} -> {f.path}" if f.old_path and f.old_path != f.path else f.path
            tail = " (binary)" if f.binary else f" +{f.lines_added} -{f.lines_removed}"
            lines.append(f"{f.status[0].upper()} {where}{tail}" + (f"  [{f.note}]" if f.note else ""))
            for s in f.symbols:
                text = f"  {marks[s.change]} {s.change} {s.kind} {s.qualified_name}"
                if s.old_qualified_name and s.old_qualified_name != s.qualified_name:
                    text += f" (was {s.old_qualified_name})"
                if s.old_file and s.old_file != s.file:
                    text += f" (from {s.old_file})"
                if s.similarity is not None and s.change in ("moved", "renamed"):
                    text += f" {round(s.similarity * 100)}% similar"
                lines.append(text)
                if s.signature_changed:
                    lines.append(f"      signature: {s.signature_before} -> {s.signature_after}")
                if s.change != "removed" and (s.risk_raised or s.risk_reasons_added):
                    reasons = ", ".join(f"+{r}" for r in s.risk_reasons_added)
                    reasons += ", ".join(f"-{r}" for r in s.risk_reasons_removed)
                    lines.append(
                        f"      risk: {s.risk_before or '-'} -> {s.risk_after or '-'} {reasons}".rstrip()
                    )
                for c in s.new_external_calls:
                    lines.append(f"      new {c.category} call: {c.call} (line {c.line})")
                if s.callers_total:
                    shown = ", ".join(f"{c.file}:{c.line}" for c in s.callers[:5])
                    lines.append(f"      callers ({s.callers_total}): {shown}")
        return "\n".join(lines)


# --------------------------------------------------------------------------- git plumbing


def _git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, timeout=GIT_TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DiffError(f"git {args[0]} failed: {exc}") from exc
    if check and proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise DiffError(f"git {' '.join(args[:2])} failed: {message[-1] if message else proc.returncode}")
    return proc


def is_shallow(root: Path) -> bool:
    out = _git(root, "rev-parse", "--is-shallow-repository", check=False)
    return out.stdout.decode().strip() == "true"


def _shallow_hint() -> str:
    return "run `git fetch --unshallow` (GitHub Actions: actions/checkout with `fetch-depth: 0`)"


def require_git(root: Path) -> None:
    if _git(root, "rev-parse", "--git-dir", check=False).returncode != 0:
        raise NotAGitRepository(f"{root} is not a git repository", hint="run `git init` or pass --path")


def resolve_commit(root: Path, ref: str) -> str:
    """The full sha of ``ref``; a typed error (with the unshallow fix) when it is missing."""
    proc = _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    if proc.returncode == 0:
        return proc.stdout.decode().strip()
    if is_shallow(root):
        raise ShallowClone(f"ref '{ref}' is not in this shallow clone", hint=_shallow_hint())
    raise RefNotFound(
        f"unknown revision '{ref}'", hint="check the branch or commit name (`git log --oneline`)"
    )


def first_parent(root: Path, commit: str) -> tuple[str, str | None]:
    """The commit to diff ``commit`` against, and a note when that is worth saying (merge, root)."""
    sha = resolve_commit(root, commit)
    parents = _git(root, "rev-list", "--parents", "-n", "1", sha).stdout.decode().split()[1:]
    if not parents:
        if is_shallow(root):
            raise ShallowClone(f"the parent of {sha[:12]} is not in this shallow clone", hint=_shallow_hint())
        return EMPTY_TREE, f"{sha[:12]} is a root commit: compared with the empty tree"
    if len(parents) > 1:
        return parents[0], f"{sha[:12]} is a merge commit: compared with its first parent {parents[0][:12]}"
    return parents[0], None


def merge_base(root: Path, base: str, head: str) -> str:
    b, h = resolve_commit(root, base), resolve_commit(root, head)
    proc = _git(root, "merge-base", b, h, check=False)
    if proc.returncode != 0:
        if is_shallow(root):
            raise ShallowClone(
                f"no merge base of {base} and {head} in this shallow clone", hint=_shallow_hint()
            )
        raise RefNotFound(f"{base} and {head} have no common history")
    return proc.stdout.decode().strip()


@dataclass(frozen=True)
class _Entry:
    status: FileStatus
    path: str
    old_path: str | None


_STATUS = {"A": "added", "D": "deleted", "M": "modified", "T": "modified", "R": "renamed", "C": "added"}


def _changed_entries(root: Path, base: str, target: str | None, *, staged: bool = False) -> list[_Entry]:
    args = ["diff", "--name-status", "-z", "-M", "--no-ext-diff", *(["--cached"] if staged else []), base]
    if target is not None:
        args.append(target)
    tokens = _git(root, *args).stdout.decode("utf-8", "surrogateescape").split("\0")
    entries: list[_Entry] = []
    i = 0
    while i < len(tokens) and tokens[i]:
        code = tokens[i][0]
        if code in "RC":
            old, new = tokens[i + 1], tokens[i + 2]
            status: FileStatus = "renamed" if code == "R" else "added"
            entries.append(_Entry(status, new, old if code == "R" else None))
            i += 3
            continue
        if code in _STATUS:
            entries.append(_Entry(_STATUS[code], tokens[i + 1], tokens[i + 1] if code != "A" else None))  # type: ignore[arg-type]
        i += 2
    if target is None and not staged:
        untracked = _git(root, "ls-files", "-z", "--others", "--exclude-standard").stdout.decode(
            "utf-8", "surrogateescape"
        )
        entries.extend(_Entry("added", p, None) for p in untracked.split("\0") if p)
    return entries


class _BlobReader:
    """Reads many blobs through one `git cat-file --batch` process."""

    def __init__(self, root: Path) -> None:
        self._proc = subprocess.Popen(
            ["git", "-C", str(root), "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

    def read(self, commit: str, path: str) -> bytes | None:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        if "\n" in path:
            return None
        self._proc.stdin.write(f"{commit}:{path}\n".encode("utf-8", "surrogateescape"))
        self._proc.stdin.flush()
        header = self._proc.stdout.readline().decode("utf-8", "replace").split()
        if len(header) < 3 or header[-1] == "missing" or header[1] != "blob":
            return None
        size = int(header[2])
        data = self._proc.stdout.read(size)
        self._proc.stdout.read(1)  # the newline after each object
        return data

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        self._proc.wait(timeout=GIT_TIMEOUT)
        if self._proc.stdout is not None:
            self._proc.stdout.close()


def _read_working(root: Path, rel: str) -> bytes | None:
    """A working-tree file, only if it resolves inside the repository root."""
    path = (root / rel).resolve()
    if not path.is_relative_to(root.resolve()) or not path.is_file():
        return None
    try:
        return path.read_bytes()
    except OSError:
        return None


# --------------------------------------------------------------------------- analysis


def _language(rel: str) -> str | None:
    from engine.semantic.languages import language_for_path

    lang = language_for_path(rel)
    if lang is None:
        return None
    return lang if isinstance(lang, str) else str(getattr(lang, "name", lang))


def _analyze(rel: str, data: bytes, language: str) -> FileAnalysis:
    from engine.semantic.extract import analyze_source

    return analyze_source(rel, data, language)


@dataclass
class _Side:
    """One side of one file: its symbols and the text of each symbol's own lines."""

    path: str
    lines: list[str]
    symbols: list[Symbol]
    own_text: dict[int, str]  # index in symbols -> dedented text minus nested symbols
    full_text: dict[int, str]
    aliases: dict[str, str]


def _split_lines(data: bytes) -> list[str]:
    return data.decode("utf-8", "replace").splitlines()


def _build_side(path: str, data: bytes, analysis: FileAnalysis) -> _Side:
    lines = _split_lines(data)
    symbols = sorted(analysis.symbols, key=lambda s: (s.start_line, -s.end_line))
    own: dict[int, str] = {}
    full: dict[int, str] = {}
    for i, sym in enumerate(symbols):
        covered: set[int] = set()
        j = i + 1
        while j < len(symbols) and symbols[j].start_line <= sym.end_line:
            inner = symbols[j]
            if inner.end_line <= sym.end_line and (inner.start_line, inner.end_line) != (
                sym.start_line,
                sym.end_line,
            ):
                covered.update(range(inner.start_line, inner.end_line + 1))
            j += 1
        body = lines[max(sym.start_line - 1, 0) : sym.end_line]
        full[i] = textwrap.dedent("\n".join(body))
        kept = [ln for n, ln in enumerate(body, start=sym.start_line) if n not in covered]
        own[i] = textwrap.dedent("\n".join(kept)).strip()
    from engine.semantic.risk import import_aliases

    return _Side(path, lines, symbols, own, full, import_aliases(analysis.imports))


def _external_calls(sym: Symbol, aliases: Mapping[str, str]) -> dict[tuple[str, str], ExternalCall]:
    found: dict[tuple[str, str], ExternalCall] = {}
    for call in sym.calls:
        if call.receiver and "(" in call.receiver:
            continue  # a method on a call's result (`requests.get(u).json()`): the inner call is the effect
        category = classify_call(call, sym.language, aliases)
        if category:
            name = f"{call.receiver}.{call.name}" if call.receiver else call.name
            found.setdefault((category, name), ExternalCall(category, name, call.line))
    return found


def _describe(
    change: ChangeKind,
    new: Symbol | None,
    old: Symbol | None,
    similarity: float | None = None,
    *,
    new_aliases: Mapping[str, str] | None = None,
    old_aliases: Mapping[str, str] | None = None,
) -> SymbolChange:
    sym = new or old
    assert sym is not None
    new_calls: tuple[ExternalCall, ...] = ()
    if new is not None:
        before = _external_calls(old, old_aliases or {}) if old is not None else {}
        new_calls = tuple(c for k, c in _external_calls(new, new_aliases or {}).items() if k not in before)
    reasons_new = set(new.risk.reasons) if new else set()
    reasons_old = set(old.risk.reasons) if old else set()
    return SymbolChange(
        change=change,
        kind=sym.kind,
        qualified_name=sym.qualified_name,
        file=sym.file,
        id=sym.id,
        start_line=sym.start_line,
        end_line=sym.end_line,
        language=sym.language,
        old_qualified_name=old.qualified_name if old is not None and new is not None else None,
        old_file=old.file if old is not None and new is not None else None,
        old_id=old.id if old is not None and new is not None else None,
        signature_before=old.signature if old is not None else None,
        signature_after=new.signature if new is not None else None,
        risk_before=old.risk.level if old is not None else None,
        risk_after=new.risk.level if new is not None else None,
        risk_reasons_added=tuple(sorted(reasons_new - reasons_old)),
        risk_reasons_removed=tuple(sorted(reasons_old - reasons_new)) if new is not None else (),
        new_external_calls=new_calls,
        similarity=similarity,
        max_nesting=sym.max_nesting,
        exported=sym.exported,
    )


def _masked(text: str, name: str) -> str:
    simple = name.rsplit(".", 1)[-1]
    return re.sub(rf"\b{re.escape(simple)}\b", "\x00", text) if simple else text


def _pair_file(old: _Side | None, new: _Side | None) -> tuple[list[SymbolChange], list, list]:
    """Match symbols of one file pair by (qualified name, kind, occurrence). Returns changes and leftovers."""
    changes: list[SymbolChange] = []

    def keyed(side: _Side | None) -> dict[tuple[str, str, int], int]:
        out: dict[tuple[str, str, int], int] = {}
        if side is None:
            return out
        seen: dict[tuple[str, str], int] = {}
        for i, s in enumerate(side.symbols):
            n = seen.get((s.qualified_name, s.kind), 0)
            seen[(s.qualified_name, s.kind)] = n + 1
            out[(s.qualified_name, s.kind, n)] = i
        return out

    old_keys, new_keys = keyed(old), keyed(new)
    for key, ni in new_keys.items():
        oi = old_keys.get(key)
        if oi is None or old is None or new is None:
            continue
        o, n = old.symbols[oi], new.symbols[ni]
        differs = old.own_text[oi] != new.own_text[ni] or o.signature != n.signature
        if differs:
            changes.append(_describe("modified", n, o, new_aliases=new.aliases, old_aliases=old.aliases))
        elif old.path != new.path:
            changes.append(
                _describe("moved", n, o, similarity=1.0, new_aliases=new.aliases, old_aliases=old.aliases)
            )
    left_old = [(old, i) for k, i in old_keys.items() if k not in new_keys] if old else []
    left_new = [(new, i) for k, i in new_keys.items() if k not in old_keys] if new else []
    return changes, left_old, left_new


def _match_moves(left_old: list[tuple[_Side, int]], left_new: list[tuple[_Side, int]]) -> list[SymbolChange]:
    """Pair leftover removed and added symbols by body similarity: these are moves and renames."""
    changes: list[SymbolChange] = []
    exhaustive = len(left_old) * len(left_new) <= MAX_SIMILARITY_PAIRS
    candidates: list[tuple[float, int, int]] = []
    for a, (nside, ni) in enumerate(left_new):
        nsym = nside.symbols[ni]
        ntext = _masked(nside.full_text[ni], nsym.name)
        for b, (oside, oi) in enumerate(left_old):
            osym = oside.symbols[oi]
            if osym.kind != nsym.kind:
                continue
            otext = _masked(oside.full_text[oi], osym.name)
            if otext == ntext:
                candidates.append((1.0, a, b))
                continue
            if not exhaustive:
                continue
            matcher = difflib.SequenceMatcher(None, otext.splitlines(), ntext.splitlines(), autojunk=False)
            if matcher.real_quick_ratio() < RENAME_SIMILARITY or matcher.quick_ratio() < RENAME_SIMILARITY:
                continue
            ratio = matcher.ratio()
            if ratio >= RENAME_SIMILARITY:
                candidates.append((ratio, a, b))
    used_new: set[int] = set()
    used_old: set[int] = set()
    for ratio, a, b in sorted(candidates, key=lambda c: -c[0]):
        if a in used_new or b in used_old:
            continue
        used_new.add(a)
        used_old.add(b)
        nside, ni = left_new[a]
        oside, oi = left_old[b]
        nsym, osym = nside.symbols[ni], oside.symbols[oi]
        kind: ChangeKind = "moved" if nsym.qualified_name == osym.qualified_name else "renamed"
        changes.append(
            _describe(kind, nsym, osym, round(ratio, 3), new_aliases=nside.aliases, old_aliases=oside.aliases)
        )
    for a, (nside, ni) in enumerate(left_new):
        if a not in used_new:
            changes.append(_describe("added", nside.symbols[ni], None, new_aliases=nside.aliases))
    for b, (oside, oi) in enumerate(left_old):
        if b not in used_old:
            changes.append(_describe("removed", None, oside.symbols[oi]))
    return changes


Lines = tuple[tuple[int, str], ...]


def _multiset_delta(a: list[str], b: list[str]) -> tuple[Lines, Lines]:
    """Lines of ``b`` not in ``a`` and vice versa, counting repeats: linear, for files too big to align."""
    from collections import Counter

    def only(x: list[str], y: list[str]) -> Lines:
        spare = Counter(y)
        out = []
        for n, line in enumerate(x, start=1):
            if spare[line]:
                spare[line] -= 1
            else:
                out.append((n, line))
        return tuple(out)

    return only(b, a), only(a, b)


def _line_delta(old: bytes | None, new: bytes | None) -> tuple[Lines, Lines]:
    a = _split_lines(old) if old else []
    b = _split_lines(new) if new else []
    if not a:
        return tuple(enumerate(b, start=1)), ()
    if not b:
        return (), tuple(enumerate(a, start=1))
    if len(old or b"") + len(new or b"") > MAX_ALIGNED_BYTES:
        return _multiset_delta(a, b)
    added: list[tuple[int, str]] = []
    removed: list[tuple[int, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag in ("replace", "delete"):
            removed.extend((n + 1, a[n]) for n in range(i1, i2))
        if tag in ("replace", "insert"):
            added.extend((n + 1, b[n]) for n in range(j1, j2))
    return tuple(added), tuple(removed)


def _is_binary(data: bytes | None) -> bool:
    return data is not None and b"\0" in data[:BINARY_SNIFF_BYTES]


# --------------------------------------------------------------------------- callers


_DEFINITION = re.compile(r"\b(def|function|class|fn|func|sub|interface|struct|trait|type)\s+\w+\s*$")


def _find_callers(
    root: Path, tree: str | None, changes: Sequence[SymbolChange], *, staged: bool = False
) -> dict[str, tuple[int, list[tuple[str, int, str]]]]:
    """One `git grep` for every changed name; returns name -> (total, refs) of call sites on the target side.

    A text search, so it is filtered the way a reader would: a method is called through a
    receiver (`x.name(`), a function bare (`name(`) or through its module (`module.name(`).
    """
    how: dict[str, set[str]] = {}  # name -> receivers that count ("" = bare call, "*" = any receiver)
    for s in changes:
        if s.change not in ("modified", "removed", "renamed", "moved") or s.kind in ("variable", "constant"):
            continue
        qualified = s.old_qualified_name or s.qualified_name
        name = qualified.rsplit(".", 1)[-1]
        if len(name) < MIN_CALLER_NAME or (name.startswith("__") and name.endswith("__")):
            continue
        allowed = how.setdefault(name, set())
        if s.kind == "method" or "." in qualified:
            allowed.add("*")
        else:
            allowed.update({"", PurePosixPath(s.old_file or s.file).stem})
    if not how:
        return {}
    names = sorted(how)
    pattern = r"\b(" + "|".join(re.escape(n) for n in names) + r")\s*\("
    args = ["grep", "-n", "-I", "-E", "--no-color", *(["--cached"] if staged else []), "-e", pattern]
    if tree is not None:
        args.append(tree)
    proc = _git(root, *args, check=False)
    found: dict[str, tuple[int, list[tuple[str, int, str]]]] = {n: (0, []) for n in names}
    regex = re.compile(r"(?:(\w+)\s*\.\s*)?\b(" + "|".join(re.escape(n) for n in names) + r")\s*\(")
    for raw in proc.stdout.decode("utf-8", "replace").splitlines():
        if tree is not None and raw.startswith(tree + ":"):
            raw = raw[len(tree) + 1 :]
        parts = raw.split(":", 2)
        if len(parts) < 3 or not parts[1].isdigit():
            continue
        file, line, text = parts[0], int(parts[1]), parts[2]
        for match in regex.finditer(text):
            receiver, name = match.group(1) or "", match.group(2)
            if _DEFINITION.search(text[: match.start(2)] + name):
                continue
            allowed = how[name]
            if not (receiver in allowed or (receiver and "*" in allowed)):
                continue
            total, refs = found[name]
            if len(refs) < MAX_CALLERS_PER_SYMBOL:
                refs.append((file, line, text.strip()[:160]))
            found[name] = (total + 1, refs)
            break
    return found


def _graph_callers(
    root: Path, changes: Sequence[SymbolChange]
) -> dict[str, tuple[int, tuple[CallerRef, ...]]]:
    """Callers from the index's resolved call graph, for modified and moved symbols it knows.

    Removed and renamed symbols are left to the text search: a fresh index no longer has them.
    """
    from engine.store.layout import RepoLayout, cache_home

    layout = RepoLayout(root)
    if not (cache_home() / layout.repo_id / "index.db").is_file():
        return {}
    from engine.errors import NotFoundError
    from engine.store.db import SymbolStore

    out: dict[str, tuple[int, tuple[CallerRef, ...]]] = {}
    with SymbolStore(layout) as store:
        for c in changes:
            if c.change not in ("modified", "moved"):
                continue
            try:
                nodes = store.callers(c.id, depth=1)
            except NotFoundError:
                continue  # not indexed yet: the text search answers for it
            refs = tuple(
                CallerRef(n.file, n.line, None if n.name == "<module>" else n.name, "", "call graph")
                for n in nodes[:MAX_CALLERS_PER_SYMBOL]
            )
            out[c.id] = (len(nodes), refs)
    return out


def _enclosing(sides: dict[str, _Side], file: str, line: int) -> str | None:
    side = sides.get(file)
    if side is None:
        return None
    best: Symbol | None = None
    for s in side.symbols:
        if s.start_line <= line <= s.end_line and (best is None or s.start_line >= best.start_line):
            best = s
    return best.qualified_name if best else None


# --------------------------------------------------------------------------- entry point


@dataclass(frozen=True)
class _Range:
    """The two sides being compared, resolved to commits (or the work tree / index)."""

    base_sha: str
    base_label: str
    target_label: str
    target_sha: str | None
    notes: tuple[str, ...] = ()

    @property
    def working(self) -> bool:
        return self.target_label == WORKING

    @property
    def staged(self) -> bool:
        return self.target_label == STAGED


def _resolve_range(repo: Path, base: str | None, target: str | None) -> _Range:
    notes: list[str] = []
    if base and "..." in base and target is None:
        left, right = base.split("...", 1)
        base, target = merge_base(repo, left, right or "HEAD"), right or "HEAD"
    elif base and ".." in base and target is None:
        base, target = base.split("..", 1)
        target = target or "HEAD"
    target = target or WORKING
    if base is None:
        if _git(repo, "rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode != 0:
            base_sha, base_label = EMPTY_TREE, "(empty)"
            notes.append("the repository has no commits yet: everything is new")
        else:
            base_sha, base_label = resolve_commit(repo, "HEAD"), "HEAD"
    elif base == EMPTY_TREE:
        base_sha, base_label = EMPTY_TREE, "(empty)"
    else:
        base_sha, base_label = resolve_commit(repo, base), base
    if target.upper() in (WORKING, STAGED):
        return _Range(base_sha, base_label, target.upper(), None, tuple(notes))
    return _Range(base_sha, base_label, target, resolve_commit(repo, target), tuple(notes))


class _Collector:
    """Accumulates file changes and per-file symbol pairings while the blobs stream in."""

    def __init__(self, max_file_bytes: int) -> None:
        self.max_file_bytes = max_file_bytes
        self.files: list[FileChange] = []
        self.new_sides: dict[str, _Side] = {}
        self.per_file: dict[str, list[SymbolChange]] = {}
        self.left_old: list[tuple[_Side, int]] = []
        self.left_new: list[tuple[_Side, int]] = []

    def _note(self, entry: _Entry, old: bytes | None, new: bytes | None, language: str | None) -> str | None:
        if _is_binary(old) or _is_binary(new):
            return "binary file: not analysed"
        if entry.status != "deleted" and new is None:
            return "unreadable on the target side (a symlink out of the repository or a special file)"
        if language is None:
            return "not a supported language: lines only"
        if max(len(old or b""), len(new or b"")) > self.max_file_bytes:
            return f"larger than {self.max_file_bytes} bytes: lines only"
        return None

    def add(self, entry: _Entry, old: bytes | None, new: bytes | None) -> None:
        language = _language(entry.path)
        binary = _is_binary(old) or _is_binary(new)
        note = self._note(entry, old, new, language)
        added, removed = ((), ()) if binary else _line_delta(old, new)
        self.files.append(
            FileChange(
                path=entry.path,
                status=entry.status,
                old_path=entry.old_path if entry.status == "renamed" else None,
                language=language,
                binary=binary,
                lines_added=len(added),
                lines_removed=len(removed),
                note=note,
                added_lines=added,
                removed_lines=removed,
            )
        )
        if note is not None or language is None:
            return
        old_side = (
            _build_side(entry.old_path, old, _analyze(entry.old_path, old, language))
            if entry.old_path and old is not None
            else None
        )
        new_side = (
            _build_side(entry.path, new, _analyze(entry.path, new, language)) if new is not None else None
        )
        if new_side:
            self.new_sides[new_side.path] = new_side
        changes, left_old, left_new = _pair_file(old_side, new_side)
        self.per_file.setdefault(entry.path, []).extend(changes)
        self.left_old.extend(left_old)
        self.left_new.extend(left_new)

    def match_moves(self) -> None:
        for change in _match_moves(self.left_old, self.left_new):
            key = change.file if change.change != "removed" else _file_of_removed(self.files, change)
            self.per_file.setdefault(key, []).append(change)

    def attach_callers(self, repo: Path, rng: _Range) -> None:
        all_changes = [c for cs in self.per_file.values() for c in cs]
        found = _find_callers(repo, rng.target_sha, all_changes, staged=rng.staged)
        # The index describes the work tree, so its call graph answers only for WORKING/STAGED.
        graph = _graph_callers(repo, all_changes) if rng.working or rng.staged else {}
        for key, changes in self.per_file.items():
            self.per_file[key] = [self._with_callers(c, found, graph) for c in changes]

    def _with_callers(
        self,
        c: SymbolChange,
        found: dict[str, tuple[int, list[tuple[str, int, str]]]],
        graph: dict[str, tuple[int, tuple[CallerRef, ...]]],
    ) -> SymbolChange:
        if c.change == "added":
            return c
        if c.id in graph:
            return replace(c, callers=graph[c.id][1], callers_total=graph[c.id][0])
        total, refs = found.get((c.old_qualified_name or c.qualified_name).rsplit(".", 1)[-1], (0, []))
        if not total:
            return c
        listed = tuple(CallerRef(f, ln, _enclosing(self.new_sides, f, ln), t) for f, ln, t in refs)
        return replace(c, callers=listed, callers_total=total)

    def result(self) -> tuple[FileChange, ...]:
        order = {"removed": 0, "renamed": 1, "moved": 2, "modified": 3, "added": 4}
        return tuple(
            replace(
                f,
                symbols=tuple(
                    sorted(self.per_file.get(f.path, []), key=lambda s: (s.start_line, order[s.change]))
                ),
            )
            for f in self.files
        )


def analyze_diff(
    root: str | os.PathLike[str],
    base: str | None = None,
    target: str | None = None,
    *,
    paths: Iterable[str] | None = None,
    callers: bool = True,
    max_file_bytes: int = MAX_ANALYZED_BYTES,
) -> SemanticDiff:
    """Semantic diff of ``base`` → ``target``.

    ``target`` may be a ref, ``WORKING`` (tracked changes plus untracked files) or ``STAGED``
    (the index: what the next commit records, for pre-commit hooks). Defaults:
    no refs → HEAD..WORKING; one ref → REF..WORKING. ``A...B`` as base diffs B against the
    merge base of A and B (what a pull request shows).
    """
    repo = Path(root).resolve()
    require_git(repo)
    rng = _resolve_range(repo, base, target)
    entries = _changed_entries(repo, rng.base_sha, rng.target_sha, staged=rng.staged)
    wanted = [p.strip("/") for p in paths] if paths else None
    if wanted:
        entries = [e for e in entries if any(e.path == w or e.path.startswith(w + "/") for w in wanted)]

    collector = _Collector(max_file_bytes)
    reader = _BlobReader(repo)
    try:
        for entry in sorted(entries, key=lambda e: e.path):
            old = reader.read(rng.base_sha, entry.old_path) if entry.old_path else None
            if entry.status == "deleted":
                new = None
            elif rng.staged:
                new = reader.read("", entry.path)  # ":path" is the path's staged blob
            elif rng.working:
                new = _read_working(repo, entry.path)
            else:
                new = reader.read(rng.target_sha or "", entry.path)
            collector.add(entry, old, new)
    finally:
        reader.close()
    collector.match_moves()
    if callers:
        collector.attach_callers(repo, rng)
    return SemanticDiff(
        base=rng.base_label,
        target=rng.target_label,
        base_commit=rng.base_sha,
        target_commit=rng.target_sha,
        files=collector.result(),
        notes=rng.notes,
    )


def _file_of_removed(files: Sequence[FileChange], change: SymbolChange) -> str:
    """Removed symbols are listed under the file they were removed from (its new name if renamed)."""
    for f in files:
        if f.old_path == change.file or (f.path == change.file):
            return f.path
    return change.file


def analyze_commit(root: str | os.PathLike[str], commit: str = "HEAD", **kwargs: Any) -> SemanticDiff:
    """One commit against its first parent (merge commits and root commits say so in ``notes``)."""
    repo = Path(root).resolve()
    require_git(repo)
    parent, note = first_parent(repo, commit)
    diff = analyze_diff(repo, parent, commit, **kwargs)
    return replace(
        diff,
        base=f"{commit}^" if parent != EMPTY_TREE else "(empty)",
        notes=diff.notes + ((note,) if note else ()),
    )


def analyze_range(root: str | os.PathLike[str], base: str, head: str, **kwargs: Any) -> SemanticDiff:
    """A pull request: ``head`` against the merge base of ``base`` and ``head``."""
    repo = Path(root).resolve()
    require_git(repo)
    mb = merge_base(repo, base, head)
    diff = analyze_diff(repo, mb, head, **kwargs)
    note = f"compared with the merge base {mb[:12]} of {base} and {head}"
    return replace(diff, base=base, notes=diff.notes + (note,))
