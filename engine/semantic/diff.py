"""Semantic diff: what changed between two git refs (or a ref and the working tree), symbol by symbol.

Owns reading both sides from git, pairing symbols (stable id, then body similarity for moves
and renames), risk and signature deltas, new external calls and the callers a change reaches.
It never judges a change (that is engine.review) and never writes to the repository.
"""

from __future__ import annotations

import difflib
import logging
import os
import re
import subprocess
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

from engine.errors import SemforaError, UsageError
from engine.repo import git
from engine.semantic.model import CallSite, FileAnalysis, Symbol
from engine.words import plural

if TYPE_CHECKING:
    from engine.semantic.surface import ModuleSurface, NormalizedCode, Param

_log = logging.getLogger(__name__)

WORKING = "WORKING"
# The index (what `git commit` would record now): the target a pre-commit hook reviews.
STAGED = "STAGED"
# git's well-known id of the empty tree: the "before" side of a repository's first commit.
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
# Callers named per symbol in the text format; the rest are counted (``--json`` lists up to
# MAX_CALLERS_PER_SYMBOL).
TEXT_CALLERS = 5
# Files above this size are listed but not parsed: a generated or vendored blob tells a reviewer nothing.
MAX_ANALYZED_BYTES = 1_000_000
# ``progress(phase, done, total)``: what a long diff is doing, in the words the index uses.
Progress = Callable[[str, int, int], None]
READING_PHASE = "reading changed files"
MOVES_PHASE = "matching moves and renames"
CALLERS_PHASE = "finding callers"
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
# (importlib.import_module, __import__) are no new effect: the risk tables class them as
# ``dynamic-import``, and lazy imports of constant names are everywhere.
# Functions of a module the risk tables count as filesystem writes as a whole (``shutil``) that
# only read: finding a program on PATH is no new write.
_READS_ONLY = frozenset({"shutil.which", "shutil.disk_usage", "shutil.get_terminal_size"})
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
    if dotted in _READS_ONLY:
        return None  # the risk tables count the module (``shutil``) as writing; this call only reads
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
    # "text search", "call graph" when the index resolved the edge, or "documentation" for a
    # mention in the docs (listed after every code caller).
    via: str = "text search"


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
    # Where the symbol was on the base side (modified, moved, renamed and removed symbols).
    old_start_line: int | None = None
    old_end_line: int | None = None
    lines_before: int = 0
    max_nesting_before: int = 0
    # Only comments, docstrings, annotations, exception chaining or layout changed.
    cosmetic: bool = False
    # Only identifiers were renamed, consistently with other symbols of the change or its parameters.
    rename_only: bool = False
    # What breaks for existing callers (parameters compared by name, kind and default).
    parameter_changes: tuple[str, ...] = ()
    # The dotted import path users reach the symbol by (Python library code), None when it is not
    # part of the import surface; for removed, moved and renamed symbols, whether the old path
    # still resolves on the target side (a re-export, a module ``__getattr__``, the same module).
    import_path: str | None = None
    still_importable: bool | None = None
    # Dotted names of the calls the symbol makes (import aliases resolved), for rules that read
    # the call graph; not part of the JSON.
    calls: tuple[str, ...] = field(default=(), repr=False)
    rename_pairs: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    # Python: the statements that changed, normalized (comments, docstrings, annotations, layout
    # and import spelling removed), as (added, removed); None when not computed. Rules that read
    # changed code confirm their evidence against it.
    code_delta: tuple[tuple[str, ...], tuple[str, ...]] | None = field(default=None, repr=False)
    # Only the header changed (parameters, defaults, decorators): the body behaves as before.
    signature_only: bool = False
    # Python, removed functions: their body as normalized statements (the form ``code_delta``
    # uses), so a rule can tell a helper folded into its caller from new behaviour.
    body_before: tuple[str, ...] = field(default=(), repr=False)
    # Python, removed module-level definitions: target-side ``from module import name`` lines
    # that still import it (each fails with ImportError).
    importers: tuple[CallerRef, ...] = ()
    # Python, a removed ``__init__`` of a class that stays: what now builds its instances, the
    # base ``__init__`` that answers (``Base.__init__``), a base from outside the change
    # (``Base``, parameters unknown), or ``object`` (no arguments); ``parameter_changes`` then
    # compares the removed constructor's parameters with that one's.
    constructor_from: str | None = None

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
    def logic_changed(self) -> bool:
        """Added code, or a modification beyond comments, annotations, layout and renames."""
        return self.change == "added" or (
            self.change in ("modified", "moved", "renamed") and not self.cosmetic and not self.rename_only
        )

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
            "old_start_line": self.old_start_line,
            "old_end_line": self.old_end_line,
            "lines_before": self.lines_before,
            "max_nesting_before": self.max_nesting_before,
            "cosmetic": self.cosmetic,
            "rename_only": self.rename_only,
            "parameter_changes": list(self.parameter_changes),
            "import_path": self.import_path,
            "still_importable": self.still_importable,
            "signature_only": self.signature_only,
            "importers": [{"file": c.file, "line": c.line, "text": c.text} for c in self.importers],
            "constructor_from": self.constructor_from,
        }


# Callers of changed symbols from a resolved call graph (the index's): symbol id -> (how many
# callers in all, the first few). Passed in by a caller above the store; see ``analyze_diff``.
CallerGraph = Callable[[Sequence[SymbolChange]], dict[str, tuple[int, tuple[CallerRef, ...]]]]


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
    # Python: the module's dotted import path, and public names it re-exported (``__all__`` or a
    # package ``__init__``) that no longer resolve on the target side.
    module: str | None = None
    lost_exports: tuple[str, ...] = ()
    # Line numbers (target side, base side) of changed lines that are prose: comments and
    # docstrings; rules that read changed code skip them.
    prose_added: frozenset[int] = field(default=frozenset(), repr=False)
    prose_removed: frozenset[int] = field(default=frozenset(), repr=False)
    # Identifiers in the target-side text of a changed test file (what the tests refer to).
    test_identifiers: frozenset[str] = field(default=frozenset(), repr=False)
    # git file modes on each side ("100644", "100755" executable, "120000" a symlink whose
    # blob is its target); "" where the side has no file or the mode is not known.
    mode_before: str = ""
    mode_after: str = ""
    # Where a symlink on the target side points, as written in it.
    link_target: str | None = None

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
            "module": self.module,
            "lost_exports": list(self.lost_exports),
            "mode_before": self.mode_before or None,
            "mode_after": self.mode_after or None,
            "link_target": self.link_target,
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
    # Top-level packages of the project itself (calls into them are not external effects).
    packages: tuple[str, ...] = ()
    # Where the library lives when the layout says so (``("src/",)``); empty: anywhere.
    library_roots: tuple[str, ...] = ()
    # Language families (``python``, ``js``...) the target tree has test files in; None when not
    # looked up (the change touched tests itself, or no library code changed).
    test_families: frozenset[str] | None = None
    # Names of functions removed from a test file that another test file of the target side still
    # defines (a duplicate dropped, a test moved by an earlier change): no test is lost.
    tests_defined_elsewhere: frozenset[str] = frozenset()
    # The messages of the commits reviewed (``semfora ci``; empty for a work tree): what the
    # author says the change is, such as the advisory a dependency bump fixes.
    messages: tuple[str, ...] = ()

    def in_library(self, path: str) -> bool:
        """Code the project ships (not tests, docs, examples, tooling, or helpers outside ``src/``)."""
        from engine.semantic.surface import is_library_path

        return is_library_path(path, self.library_roots)

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
        head = f"semantic diff {self.base}..{self.target}: {plural(counts['files'], 'file')}, " + ", ".join(
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
                    shown = ", ".join(f"{c.file}:{c.line}" for c in s.callers[:TEXT_CALLERS])
                    more = s.callers_total - min(len(s.callers), TEXT_CALLERS)
                    shown += f", and {more} more" if more > 0 else ""
                    lines.append(f"      callers ({s.callers_total}): {shown}")
        return "\n".join(lines)


# --------------------------------------------------------------------------- git plumbing


def _git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    try:
        proc = git.call(root, *args, timeout=GIT_TIMEOUT)
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
    proc = _git(root, "rev-parse", "--git-dir", check=False)
    if proc.returncode == 0:
        return
    if git.OWNERSHIP_REFUSAL.encode() in proc.stderr:
        # `git init` (the usual hint) would not help: the repository is there, git distrusts it.
        raise NotAGitRepository(
            f"git refuses to work in {root}: the repository belongs to another user (dubious ownership)",
            hint=f"if you trust it: `{git.safe_directory_fix(root)}`",
        )
    raise NotAGitRepository(f"{root} is not a git repository", hint="run `git init` or pass --path")


def resolve_commit(root: Path, ref: str) -> str:
    """The full sha of ``ref``; a typed error (with the unshallow fix) when it is missing."""
    proc = _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    if proc.returncode == 0:
        return proc.stdout.decode().strip()
    kind = _git(root, "cat-file", "-t", ref, check=False)
    if kind.returncode == 0 and kind.stdout.strip():
        # ``HEAD^{tree}``, a blob's sha, ``HEAD:path``: git knows it, but it is no commit to diff.
        raise RefNotFound(
            f"'{ref}' names a {kind.stdout.decode().strip()}, not a commit",
            hint="pass a commit: a branch, a tag or a commit sha (`HEAD`, `main`, `git log --oneline` "
            "lists them)",
        )
    if is_shallow(root):
        raise ShallowClone(f"ref '{ref}' is not in this shallow clone", hint=_shallow_hint())
    if _git(root, "rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode != 0:
        raise RefNotFound(
            f"unknown revision '{ref}': the repository has no commits yet",
            hint="make a first commit, or review the work tree (`semfora diff`; `semfora ci --mode commit --commit WORKING`)",
        )
    remote, _, branch = ref.partition("/")
    remotes = _git(root, "remote", check=False).stdout.decode("utf-8", "replace").split()
    if branch and remote in remotes:
        # CI checkouts often fetch the pull request alone: the base branch is not there yet.
        raise RefNotFound(
            f"unknown revision '{ref}': not fetched from {remote}",
            hint=f"fetch it first (`git fetch {remote} {branch}`; GitHub Actions: actions/checkout with "
            "`fetch-depth: 0`)",
        )
    branches = _git(root, "for-each-ref", "--format=%(refname:short)", "refs/heads", "refs/tags", check=False)
    names = branches.stdout.decode("utf-8", "replace").split()
    # `main` in a repository whose branch is `master` (or the reverse) is the usual slip.
    close = (
        difflib.get_close_matches(ref, names, n=1, cutoff=0.5)
        or ([n for n in ("main", "master", "trunk") if n in names and ref in ("main", "master", "trunk")][:1])
    )
    if close:
        raise RefNotFound(
            f"unknown revision '{ref}'", hint=f"did you mean '{close[0]}'? `git branch -a` lists the branches"
        )
    raise RefNotFound(
        f"unknown revision '{ref}'", hint="check the branch or commit name: `git log --oneline`"
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
    # git file modes ("100644", "100755", "120000" a symlink); "" when the side has no file.
    old_mode: str = ""
    new_mode: str = ""
    # A symlink in the work tree: where it points (a committed one's blob is its target).
    link_target: str | None = None


_STATUS = {"A": "added", "D": "deleted", "M": "modified", "T": "modified", "R": "renamed", "C": "added"}
_NO_MODE = "000000"
SYMLINK_MODE = "120000"
# A gitlink: the commit a submodule points to.
SUBMODULE_MODE = "160000"
EXECUTABLE_MODE = "100755"


def _changed_entries(root: Path, base: str, target: str | None, *, staged: bool = False) -> list[_Entry]:
    # --raw rather than --name-status: the same entries with their modes (a file made executable,
    # a file turned into a symlink).
    args = ["diff", "--raw", "-z", "-M", "--no-ext-diff", *(["--cached"] if staged else []), base]
    if target is not None:
        args.append(target)
    tokens = _git(root, *args).stdout.decode("utf-8", "surrogateescape").split("\0")
    entries: list[_Entry] = []
    i = 0
    while i < len(tokens) and tokens[i]:
        meta = tokens[i].lstrip(":").split()
        if len(meta) < 5:
            i += 1
            continue
        old_mode, new_mode, code = meta[0], meta[1], meta[4][0]
        old_mode = "" if old_mode == _NO_MODE else old_mode
        new_mode = "" if new_mode == _NO_MODE else new_mode
        if code in "RC":
            old, new = tokens[i + 1], tokens[i + 2]
            status: FileStatus = "renamed" if code == "R" else "added"
            entries.append(
                _Entry(status, new, old if code == "R" else None, old_mode if code == "R" else "", new_mode)
            )
            i += 3
            continue
        if code in _STATUS:
            path = tokens[i + 1]
            entries.append(
                _Entry(_STATUS[code], path, path if code != "A" else None, old_mode, new_mode)  # type: ignore[arg-type]
            )
        i += 2
    if target is None and not staged:
        untracked = _git(root, "ls-files", "-z", "--others", "--exclude-standard").stdout.decode(
            "utf-8", "surrogateescape"
        )
        entries.extend(
            _Entry("added", p, None, "", _working_mode(root, p)) for p in untracked.split("\0") if p
        )
        entries = [
            replace(e, link_target=_working_link(root, e.path)) if e.new_mode == SYMLINK_MODE else e
            for e in entries
        ]
    return entries


def _working_link(root: Path, rel: str) -> str | None:
    try:
        return os.readlink(root / rel)
    except OSError:
        return None


def _link_target(entry: _Entry, new: bytes | None) -> str | None:
    if entry.new_mode != SYMLINK_MODE:
        return None
    if entry.link_target is not None:
        return entry.link_target
    return new.decode("utf-8", "surrogateescape") if new is not None else None


def _working_mode(root: Path, rel: str) -> str:
    """The git mode an untracked file would be committed with."""
    import stat

    try:
        st = os.lstat(root / rel)
    except OSError:
        return ""
    if stat.S_ISLNK(st.st_mode):
        return SYMLINK_MODE
    return EXECUTABLE_MODE if st.st_mode & stat.S_IXUSR else "100644"


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
    own_text: _SymbolTexts  # index in symbols -> dedented text minus nested symbols
    full_text: _SymbolTexts
    aliases: dict[str, str]
    # Local names bound by relative imports (``from .x import y``): the project's own code.
    relative: frozenset[str] = frozenset()
    text: str = ""
    # Python: line ranges of ``if TYPE_CHECKING:`` blocks (declarations for type checkers only).
    typing_blocks: tuple[tuple[int, int], ...] = ()

    def typing_only(self, sym: Symbol) -> bool:
        return any(a <= sym.start_line <= b for a, b in self.typing_blocks)


def _split_lines(data: bytes) -> list[str]:
    return data.decode("utf-8", "replace").splitlines()


class _SymbolTexts:
    """Each symbol's text, dedented on first use: a package move lists thousands of symbols whose
    text nobody reads (``own``: without the lines of nested symbols, stripped)."""

    def __init__(self, lines: list[str], symbols: list[Symbol], *, own: bool) -> None:
        self._lines = lines
        self._symbols = symbols
        self._own = own
        self._cache: dict[int, str] = {}

    def __getitem__(self, i: int) -> str:
        text = self._cache.get(i)
        if text is None:
            text = self._cache[i] = self._text(i)
        return text

    def _text(self, i: int) -> str:
        sym = self._symbols[i]
        body = self._lines[max(sym.start_line - 1, 0) : sym.end_line]
        if not self._own:
            return textwrap.dedent("\n".join(body))
        covered: set[int] = set()
        j = i + 1
        while j < len(self._symbols) and self._symbols[j].start_line <= sym.end_line:
            inner = self._symbols[j]
            if inner.end_line <= sym.end_line and (inner.start_line, inner.end_line) != (
                sym.start_line,
                sym.end_line,
            ):
                covered.update(range(inner.start_line, inner.end_line + 1))
            j += 1
        kept = [ln for n, ln in enumerate(body, start=sym.start_line) if n not in covered]
        return textwrap.dedent("\n".join(kept)).strip()


def _build_side(path: str, data: bytes, analysis: FileAnalysis) -> _Side:
    lines = _split_lines(data)
    symbols = sorted(analysis.symbols, key=lambda s: (s.start_line, -s.end_line))
    own = _SymbolTexts(lines, symbols, own=True)
    full = _SymbolTexts(lines, symbols, own=False)
    from engine.semantic.risk import import_aliases

    relative: set[str] = set()
    for ref in analysis.imports:
        if ref.module.startswith("."):
            relative.update(ref.names if ref.names else (ref.alias or ref.module.strip("."),))
            if ref.alias:
                relative.add(ref.alias)
    python = path.endswith(PY_SOURCE_SUFFIXES)
    return _Side(
        path,
        lines,
        symbols,
        own,
        full,
        import_aliases(analysis.imports),
        frozenset(relative),
        text="\n".join(lines) if python else "",
        typing_blocks=_typing_blocks(lines) if python else (),
    )


PY_SOURCE_SUFFIXES = (".py", ".pyi")
# ``if TYPE_CHECKING:``, ``if t.TYPE_CHECKING:``, ``if sys.version_info >= (3, 11) and TYPE_CHECKING:``
_TYPING_IF = re.compile(r"^(\s*)if\s+(.*)\bTYPE_CHECKING\s*:\s*(#.*)?$")
# What may stand before ``TYPE_CHECKING`` for the block to be checker-only: a module prefix, or
# other conditions joined by ``and`` (no ``or``, no ``not``).
_TYPING_CONJUNCT = re.compile(r"(?:(?:(?!\bor\b|\bnot\b).)*\band\s*)?(?:typing\.|t\.)?")


def _typing_blocks(lines: list[str]) -> tuple[tuple[int, int], ...]:
    """Line ranges (1-based, inclusive) of blocks that only run for a type checker."""
    out: list[tuple[int, int]] = []
    for i, line in enumerate(lines):
        if "TYPE_CHECKING" not in line:
            continue
        m = _TYPING_IF.match(line)
        if m is None:
            continue
        if _TYPING_CONJUNCT.fullmatch(m.group(2).strip()) is None:
            continue  # ``not TYPE_CHECKING``, ``x or TYPE_CHECKING``: runs at run time too
        indent = len(m.group(1))
        end = i + 1
        for j in range(i + 1, len(lines)):
            text = lines[j]
            if text.strip() and len(text) - len(text.lstrip()) <= indent:
                break
            end = j + 1
        out.append((i + 2, end))
    return tuple(out)


def _internal_call(call: CallSite, side: _Side | None, packages: frozenset[str]) -> bool:
    """A call into the project's own code: on self, through a relative import or an own package."""
    root = call.receiver.split(".", 1)[0] if call.receiver else call.name
    if root in ("self", "cls", "this", "super()", "super"):
        return True
    if side is None:
        return False
    if root in side.relative:
        return True
    dotted = side.aliases.get(root, "")
    return bool(dotted) and dotted.split(".", 1)[0] in packages


# Python ``open(path, mode)`` writes when the extraction marked it (engine.semantic.lang_python):
# the mark is in the symbol's risk reasons, ``filesystem-write: ..., open(mode='w')``.
_OPEN_WRITE_MARK = re.compile(r"\bopen\(mode='([^']*)'\)")
# Lines read after a call's first line to find its mode (``open(\n    path,\n    "w",\n)``).
OPEN_CALL_SPAN = 4


def _inner_call_is_effect(call: CallSite, language: str, aliases: Mapping[str, str]) -> bool:
    """``requests.get(u).json()``: the call on the receiver has the effect (``Path(p)`` has none)."""
    callee = (call.receiver or "").partition("(")[0]
    if not callee:
        return False  # ``(root / "x").write_text()``: a parenthesised expression, not a call
    receiver, _, name = callee.rpartition(".")
    return classify_call(CallSite(name, receiver or None, call.line), language, aliases) is not None


def _open_write(sym: Symbol, side: _Side | None) -> ExternalCall | None:
    """The first ``open()`` call of ``sym`` that writes, as the extraction marked it."""
    modes = [m for reason in sym.risk.reasons for m in _OPEN_WRITE_MARK.findall(reason)]
    opens = [c for c in sym.calls if c.name == "open" and c.receiver is None]
    if not modes or not opens:
        return None
    quoted = (f"'{modes[0]}'", f'"{modes[0]}"')
    lines = side.lines if side is not None else []
    at = next(
        (c for c in opens if any(q in "".join(lines[c.line - 1 : c.line + OPEN_CALL_SPAN]) for q in quoted)),
        opens[0],
    )
    return ExternalCall("filesystem", f"open(mode={modes[0]!r})", at.line)


def _external_calls(
    sym: Symbol, side: _Side | None, packages: frozenset[str]
) -> dict[tuple[str, str], ExternalCall]:
    aliases = side.aliases if side is not None else {}
    found: dict[tuple[str, str], ExternalCall] = {}
    for call in sym.calls:
        if call.receiver and "(" in call.receiver and _inner_call_is_effect(call, sym.language, aliases):
            continue  # a method on a call's result (`requests.get(u).json()`): the inner call is the effect
        if _internal_call(call, side, packages):
            continue  # the project's own helpers (`parse_url`, `self.urlopen`) are not external effects
        category = classify_call(call, sym.language, aliases)
        if category:
            name = f"{call.receiver}.{call.name}" if call.receiver else call.name
            found.setdefault((category, name), ExternalCall(category, name, call.line))
    write = _open_write(sym, side) if sym.language == "python" else None
    if write is not None:
        # Keyed ``open``: a write that only changed its mode (``"w"`` -> ``"wb"``) is no new one.
        found.setdefault(("filesystem", "open"), write)
    return found


def _dotted_calls(sym: Symbol, side: _Side | None) -> tuple[str, ...]:
    aliases = side.aliases if side is not None else {}
    out: dict[str, None] = {}
    for call in sym.calls:
        if call.receiver:
            root, dot, rest = call.receiver.partition(".")
            out[f"{aliases.get(root, root)}{dot}{rest}.{call.name}"] = None
        else:
            out[aliases.get(call.name, call.name)] = None
    return tuple(out)


@dataclass(frozen=True)
class _Texts:
    """What ``_describe`` compares beyond the symbols: each side's file and index."""

    new_side: _Side | None = None
    new_index: int | None = None
    old_side: _Side | None = None
    old_index: int | None = None
    # Both sides are the same file content (a pure rename).
    identical: bool = False


@dataclass(frozen=True)
class _Comparison:
    """What comparing a symbol's two versions beneath the text found."""

    cosmetic: bool = False
    rename_pairs: tuple[tuple[str, str], ...] = ()
    parameter_changes: tuple[str, ...] = ()
    local_rename: bool = False
    code_delta: tuple[tuple[str, ...], tuple[str, ...]] | None = None
    signature_only: bool = False


def _compare_code(new: Symbol, old: Symbol, texts: _Texts) -> _Comparison:
    """Cosmetic or not, rename pairs, parameter changes and the normalized code delta of a symbol
    on both sides.

    Never fails a review: source the comparison cannot read counts as a change of logic."""
    try:
        return _compare_code_unguarded(new, old, texts)
    except (ValueError, TypeError, AttributeError, RecursionError, MemoryError) as exc:
        _log.warning("%s: could not compare %s beyond its text: %s", new.file, new.qualified_name, exc)
        return _Comparison()


def _normalized_delta(
    before: NormalizedCode, after: NormalizedCode
) -> tuple[tuple[tuple[str, ...], tuple[str, ...]], bool]:
    """(added, removed) normalized statements, and whether only the header changed."""
    added: list[str] = []
    removed: list[str] = []
    header_only = True
    matcher = difflib.SequenceMatcher(None, before.lines, after.lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        removed.extend(before.lines[i1:i2])
        added.extend(after.lines[j1:j2])
        if i2 > before.header or j2 > after.header:
            header_only = False
    return (tuple(added), tuple(removed)), header_only and bool(added or removed)


def _compare_code_unguarded(new: Symbol, old: Symbol, texts: _Texts) -> _Comparison:
    from engine.semantic import surface

    if texts.new_side is None or texts.old_side is None or texts.new_index is None or texts.old_index is None:
        return _Comparison()
    if texts.identical and new.name == old.name:
        return _Comparison(cosmetic=True)
    new_text = texts.new_side.full_text[texts.new_index]
    old_text = texts.old_side.full_text[texts.old_index]
    masked_new = _masked(new_text, new.name) if new.name != old.name else new_text
    masked_old = _masked(old_text, old.name) if new.name != old.name else old_text
    language = new.language
    if masked_old == masked_new:
        return _Comparison(cosmetic=True)
    delta: tuple[tuple[str, ...], tuple[str, ...]] | None = None
    signature_only = False
    if language == "python":
        norm_before = surface.python_normalized(old_text, texts.old_side.aliases)
        norm_after = surface.python_normalized(new_text, texts.new_side.aliases)
        same_name = new.name == old.name
        cosmetic = False
        if norm_before is not None and norm_after is not None:
            cosmetic = norm_before.fingerprint == norm_after.fingerprint
            if not cosmetic:
                delta, signature_only = _normalized_delta(norm_before, norm_after)
                cosmetic = same_name and delta == ((), ())
        if not cosmetic and not same_name:
            before_fp = surface.fingerprint(masked_old, language)
            cosmetic = before_fp is not None and before_fp == surface.fingerprint(masked_new, language)
    else:
        before_fp = surface.fingerprint(masked_old, language)
        after_fp = surface.fingerprint(masked_new, language)
        cosmetic = before_fp is not None and before_fp == after_fp
    pairs: tuple[tuple[str, str], ...] = ()
    local_rename = False
    if not cosmetic and language == "python":
        found = surface.python_rename_pairs(masked_old, masked_new)
        if found is not None:
            pairs = tuple(sorted(found.pairs))
            local_rename = found.local
    params: tuple[str, ...] = ()
    if new.kind in ("function", "method") and not cosmetic:
        if language == "python":
            pb, pa = surface.python_params(old_text), surface.python_params(new_text)
        else:
            pb, pa = surface.generic_params(old.signature), surface.generic_params(new.signature)
        if pb is not None and pa is not None:
            if (
                new.kind == "method"
                and pb
                and pa
                and pb[0].name in ("self", "cls")
                and pa[0].name == pb[0].name
            ):
                pb, pa = pb[1:], pa[1:]
            params = surface.parameter_changes(
                pb, pa, named_arguments=language in surface.NAMED_ARGUMENT_LANGUAGES
            )
    return _Comparison(
        cosmetic=cosmetic,
        rename_pairs=pairs,
        parameter_changes=params,
        local_rename=local_rename,
        code_delta=None if cosmetic else delta,
        signature_only=signature_only and not cosmetic,
    )


def _describe(
    change: ChangeKind,
    new: Symbol | None,
    old: Symbol | None,
    similarity: float | None = None,
    *,
    texts: _Texts = _Texts(),
    packages: frozenset[str] = frozenset(),
) -> SymbolChange:
    sym = new or old
    assert sym is not None
    new_calls: tuple[ExternalCall, ...] = ()
    if new is not None:
        # Compared by effect and called name: ``Popen(...)`` becoming ``subprocess.Popen(...)``
        # is the same call spelled through its module.
        before = (
            {(cat, name.rsplit(".", 1)[-1]) for cat, name in _external_calls(old, texts.old_side, packages)}
            if old is not None
            else set()
        )
        new_calls = tuple(
            c
            for (cat, name), c in _external_calls(new, texts.new_side, packages).items()
            if (cat, name.rsplit(".", 1)[-1]) not in before
        )
    reasons_new = set(new.risk.reasons) if new else set()
    reasons_old = set(old.risk.reasons) if old else set()
    compared = _compare_code(new, old, texts) if new is not None and old is not None else _Comparison()
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
        old_start_line=old.start_line if old is not None else None,
        old_end_line=old.end_line if old is not None else None,
        lines_before=old.end_line - old.start_line + 1 if old is not None else 0,
        max_nesting_before=old.max_nesting if old is not None else 0,
        cosmetic=compared.cosmetic,
        rename_only=compared.local_rename,
        parameter_changes=compared.parameter_changes,
        calls=_dotted_calls(sym, texts.new_side if new is not None else texts.old_side),
        rename_pairs=compared.rename_pairs,
        code_delta=compared.code_delta,
        signature_only=compared.signature_only,
        body_before=_body_before(old, texts) if new is None and old is not None else (),
    )


def _body_before(old: Symbol, texts: _Texts) -> tuple[str, ...]:
    """A removed Python function's body as normalized statements; () when it cannot be read."""
    if old.language != "python" or old.kind not in ("function", "method"):
        return ()
    if texts.old_side is None or texts.old_index is None:
        return ()
    from engine.semantic import surface

    try:
        norm = surface.python_normalized(texts.old_side.full_text[texts.old_index], texts.old_side.aliases)
    except (ValueError, TypeError, AttributeError, RecursionError, MemoryError) as exc:
        _log.warning("%s: could not read the body of removed %s: %s", old.file, old.qualified_name, exc)
        return ()
    return norm.lines[norm.header :] if norm is not None else ()


def _is_overload(sym: Symbol) -> bool:
    """A ``typing.overload`` declaration (Python): a type signature, not a definition."""
    return any(d.rsplit(".", 1)[-1] == "overload" for d in sym.decorators)


# What a renamed symbol's own name becomes when its two versions are compared: an identifier,
# so the masked text still parses (a NUL byte made every renamed Python definition unparsable,
# and so never rename-only nor cosmetic).
OWN_NAME_MASK = "_semfora_own_name_"


def _masked(text: str, name: str) -> str:
    simple = name.rsplit(".", 1)[-1]
    return re.sub(rf"\b{re.escape(simple)}\b", OWN_NAME_MASK, text) if simple else text


def _pair_file(
    old: _Side | None, new: _Side | None, packages: frozenset[str] = frozenset()
) -> tuple[list[SymbolChange], list, list]:
    """Match symbols of one file pair by (qualified name, kind, occurrence). Returns changes and leftovers."""
    changes: list[SymbolChange] = []

    def keyed(side: _Side | None) -> dict[tuple[str, str, int], int]:
        out: dict[tuple[str, str, int], int] = {}
        if side is None:
            return out
        seen: dict[tuple[str, str], int] = {}
        for i, s in enumerate(side.symbols):
            if _is_overload(s) or side.typing_only(s):
                continue  # a typing declaration, not code: paired and reported never
            n = seen.get((s.qualified_name, s.kind), 0)
            seen[(s.qualified_name, s.kind)] = n + 1
            out[(s.qualified_name, s.kind, n)] = i
        return out

    old_keys, new_keys = keyed(old), keyed(new)
    # A file renamed without an edit: every symbol moved as it was, nothing to compare.
    same = old is not None and new is not None and old.lines == new.lines
    for key, ni in new_keys.items():
        oi = old_keys.get(key)
        if oi is None or old is None or new is None:
            continue
        o, n = old.symbols[oi], new.symbols[ni]
        differs = not same and (old.own_text[oi] != new.own_text[ni] or o.signature != n.signature)
        texts = _Texts(new, ni, old, oi, identical=same)
        if differs:
            changes.append(_describe("modified", n, o, texts=texts, packages=packages))
        elif old.path != new.path:
            changes.append(_describe("moved", n, o, similarity=1.0, texts=texts, packages=packages))
    left_old = [(old, i) for k, i in old_keys.items() if k not in new_keys] if old else []
    left_new = [(new, i) for k, i in new_keys.items() if k not in old_keys] if new else []
    return changes, left_old, left_new


def _match_moves(
    left_old: list[tuple[_Side, int]],
    left_new: list[tuple[_Side, int]],
    packages: frozenset[str] = frozenset(),
) -> list[SymbolChange]:
    """Pair leftover removed and added symbols by body similarity: these are moves and renames."""
    changes: list[SymbolChange] = []
    exhaustive = len(left_old) * len(left_new) <= MAX_SIMILARITY_PAIRS
    candidates: list[tuple[float, int, int]] = []
    masked_old = [_masked(oside.full_text[oi], oside.symbols[oi].name) for oside, oi in left_old]
    exact: dict[tuple[str, str], list[int]] = {}
    for b, (oside, oi) in enumerate(left_old):
        exact.setdefault((oside.symbols[oi].kind, masked_old[b]), []).append(b)
    for a, (nside, ni) in enumerate(left_new):
        nsym = nside.symbols[ni]
        ntext = _masked(nside.full_text[ni], nsym.name)
        same = exact.get((nsym.kind, ntext), [])
        candidates.extend((1.0, a, b) for b in same)
        if not exhaustive:
            continue
        for b, (oside, oi) in enumerate(left_old):
            osym = oside.symbols[oi]
            if osym.kind != nsym.kind or b in same:
                continue
            otext = masked_old[b]
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
            _describe(
                kind, nsym, osym, round(ratio, 3), texts=_Texts(nside, ni, oside, oi), packages=packages
            )
        )
    for a, (nside, ni) in enumerate(left_new):
        if a not in used_new:
            changes.append(
                _describe("added", nside.symbols[ni], None, texts=_Texts(nside, ni), packages=packages)
            )
    for b, (oside, oi) in enumerate(left_old):
        if b not in used_old:
            changes.append(
                _describe("removed", None, oside.symbols[oi], texts=_Texts(old_side=oside, old_index=oi))
            )
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


_COMMENT_ONLY = re.compile(r"^\s*(?://|/\*|\*|#|--|;)")
# Node types that hold a whole statement; a string that is one of these on its own is a docstring.
_STATEMENT_PARENTS = frozenset({"block", "module", "expression_statement"})


def _prose_lines(data: bytes | None, language: str | None, wanted: Iterable[int]) -> frozenset[int]:
    """Of the ``wanted`` lines, those that hold only prose for a program: comments, docstrings,
    and in Python annotations without a value and ``if TYPE_CHECKING:`` blocks."""
    wanted = sorted(set(wanted))
    if not data or not wanted or language is None:
        return frozenset()
    from engine.semantic.extract import is_full_language

    text_lines = data.split(b"\n")
    if not is_full_language(language):
        return frozenset(
            n
            for n in wanted
            if n <= len(text_lines) and _COMMENT_ONLY.match(text_lines[n - 1].decode("utf-8", "replace"))
        )
    from engine.semantic.extract import _parser

    root = _parser(language).parse(data).root_node
    prose: set[int] = set()
    for n in wanted:
        if n > len(text_lines):
            continue
        line = text_lines[n - 1]
        stripped = line.lstrip()
        if not stripped.strip():
            continue
        col = len(line) - len(stripped)
        node = root.descendant_for_point_range((n - 1, col), (n - 1, col))
        if node is not None and _is_prose(node, language, data):
            prose.add(n)
    return frozenset(prose)


def _is_prose(node: Any, language: str, data: bytes) -> bool:
    cur = node
    while cur is not None:
        kind = cur.type
        if "comment" in kind:
            return True
        parent = cur.parent
        if language == "python":
            docstring = kind == "string" and parent is not None and parent.type in _STATEMENT_PARENTS
            if docstring and (parent.type != "expression_statement" or parent.named_child_count == 1):
                return True
            if kind == "assignment" and cur.child_by_field_name("right") is None:
                return cur.child_by_field_name("type") is not None
            if kind == "if_statement":
                condition = cur.child_by_field_name("condition")
                if condition is not None and data[condition.start_byte : condition.end_byte].endswith(
                    b"TYPE_CHECKING"
                ):
                    return True
        cur = parent
    return False


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def _git_line_deltas(
    root: Path, base: str, target: str | None, *, staged: bool = False, paths: Sequence[str] | None = None
) -> dict[str, tuple[Lines, Lines]]:
    """Added and removed lines of every changed file from one `git diff -U0` (git's diff is in C:
    aligning a large file with difflib takes a second)."""
    args = ["-c", "core.quotePath=false", "diff", "-U0", "--no-color", "--no-ext-diff", "--no-textconv", "-M"]
    if staged:
        args.append("--cached")
    args.append(base)
    if target is not None:
        args.append(target)
    if paths:
        args.extend(["--", *paths])
    raw = _git(root, *args, check=False).stdout
    out: dict[str, tuple[list[tuple[int, str]], list[tuple[int, str]]]] = {}
    path: str | None = None
    old_path: str | None = None
    old_n = new_n = 0
    in_hunk = False
    for line in raw.decode("utf-8", "replace").split("\n"):
        if line.startswith("diff --git "):
            path = old_path = None
            in_hunk = False
        elif not in_hunk and line.startswith("--- "):
            old_path = _diff_path(line[4:], "a/")
        elif not in_hunk and line.startswith("+++ "):
            path = _diff_path(line[4:], "b/") or old_path
            if path is not None:
                out.setdefault(path, ([], []))
        elif line.startswith("@@"):
            m = _HUNK.match(line)
            if m is None or path is None:
                continue
            in_hunk = True
            old_n, new_n = int(m.group(1)), int(m.group(2))
        elif in_hunk and path is not None:
            if line.startswith("+"):
                out[path][0].append((new_n, line[1:]))
                new_n += 1
            elif line.startswith("-"):
                out[path][1].append((old_n, line[1:]))
                old_n += 1
    return {p: (tuple(a), tuple(r)) for p, (a, r) in out.items()}


def _diff_path(raw: str, prefix: str) -> str | None:
    raw = raw.rstrip("\t")
    if raw == "/dev/null":
        return None
    if raw.startswith('"') and raw.endswith('"'):
        raw = (
            raw[1:-1]
            .encode("latin-1", "backslashreplace")
            .decode("unicode_escape")
            .encode("latin-1")
            .decode("utf-8", "replace")
        )
    return raw[len(prefix) :] if raw.startswith(prefix) else raw


def _is_binary(data: bytes | None) -> bool:
    return data is not None and b"\0" in data[:BINARY_SNIFF_BYTES]


# --------------------------------------------------------------------------- callers


_DEFINITION = re.compile(r"\b(def|function|class|fn|func|sub|interface|struct|trait|type)\s+\w+\s*$")


@dataclass(frozen=True)
class _CallerSpec:
    """How a reader recognises a call to one changed symbol in plain text."""

    id: str
    name: str
    file: str
    owner: str | None  # the class of a method; None for a function
    receivers: frozenset[str]  # a function's accepted receivers ("" = a bare call)
    distinctive: bool  # a method name rare enough to trust on any receiver
    implicit_this: bool  # the language calls sibling methods without a receiver


def _caller_specs(changes: Sequence[SymbolChange]) -> list[_CallerSpec]:
    from engine.semantic.graph import COMMON_METHOD_NAMES, NO_IMPLICIT_RECEIVER, family
    from engine.semantic.surface import module_name

    specs = []
    for s in changes:
        if s.change not in ("modified", "removed", "renamed", "moved") or s.kind in ("variable", "constant"):
            continue
        qualified = s.old_qualified_name or s.qualified_name
        name = qualified.rsplit(".", 1)[-1]
        if len(name) < MIN_CALLER_NAME or (name.startswith("__") and name.endswith("__")):
            continue
        file = s.old_file or s.file
        if s.kind == "method" or "." in qualified:
            owner = qualified.rsplit(".", 1)[0].rsplit(".", 1)[-1]
            specs.append(
                _CallerSpec(
                    s.old_id or s.id,
                    name,
                    file,
                    owner,
                    frozenset(),
                    name not in COMMON_METHOD_NAMES,
                    family(s.language) not in NO_IMPLICIT_RECEIVER,
                )
            )
        else:
            # A function is called bare, through its module, or through a package that re-exports it.
            module = module_name(file) if s.language == "python" else None
            receivers = {"", PurePosixPath(file).stem}
            if module:
                receivers.update(module.split("."))
            specs.append(_CallerSpec(s.old_id or s.id, name, file, None, frozenset(receivers), True, False))
    return specs


def _names_type(word: str, owner: str) -> bool:
    """``session`` names a ``Session``, ``self.pool`` an ``HTTPConnectionPool``."""
    w, o = word.lower().replace("_", ""), owner.lower().replace("_", "")
    return len(w) >= 3 and (w == o or o.endswith(w))


def _receiver_matches(
    spec: _CallerSpec, receiver: str, file: str, packages: frozenset[str] = frozenset()
) -> bool:
    if spec.owner is None:
        return receiver in spec.receivers or receiver.rsplit(".", 1)[-1] in spec.receivers - {""}
    if not receiver:
        return spec.implicit_this and file == spec.file
    if receiver.split(".", 1)[0] in packages:
        return False  # ``flask.url_for()`` is the package's function, not a method
    last = receiver.rsplit(".", 1)[-1]
    if last in ("self", "cls", "this", "super()", "super", "$this", "@"):
        return spec.distinctive or file == spec.file
    return _names_type(last, spec.owner) or spec.distinctive


_PROSE_SUFFIXES = (".md", ".markdown", ".rst", ".txt", ".adoc")


def _path_rank(path: str) -> int:
    """Code first, then tests, examples, and documentation mentions last."""
    from engine.policy.paths import PathKind, classify_path

    if path.lower().endswith(_PROSE_SUFFIXES):
        return 4
    order = {
        PathKind.SOURCE: 0,
        PathKind.TEST: 1,
        PathKind.EXAMPLE: 2,
        PathKind.GENERATED: 3,
        PathKind.DOCS: 4,
    }
    return order.get(classify_path(path), 0)


def _find_callers(
    root: Path,
    tree: str | None,
    changes: Sequence[SymbolChange],
    *,
    staged: bool = False,
    packages: frozenset[str] = frozenset(),
) -> dict[str, tuple[int, list[tuple[str, int, str]]]]:
    """One `git grep` for every changed name; returns symbol id -> (total, refs) of call sites on the
    target side, code before tests before documentation mentions.

    A text search, so it is filtered the way a reader would: a function is called bare, through
    its module or through the package that re-exports it (``flask.send_file``); a method through
    ``self`` in its own file, through a receiver named like its class (``session.send``), or through
    any receiver only when its name is rare (``send``, ``get``, ``update`` are everybody's methods).
    """
    specs = _caller_specs(changes)
    if not specs:
        return {}
    by_name: dict[str, list[_CallerSpec]] = {}
    for spec in specs:
        by_name.setdefault(spec.name, []).append(spec)
    names = sorted(by_name)
    pattern = r"\b(" + "|".join(re.escape(n) for n in names) + r")\s*\("
    args = ["grep", "-n", "-I", "-E", "--no-color", *(["--cached"] if staged else []), "-e", pattern]
    if tree is not None:
        args.append(tree)
    proc = _git(root, *args, check=False)
    hits: dict[str, list[tuple[str, int, str]]] = {spec.id: [] for spec in specs}
    regex = re.compile(
        r"(?:([\w$@]+(?:\(\))?(?:\s*\.\s*[\w$]+)*)\s*(?:\.|->|::)\s*)?\b("
        + "|".join(re.escape(n) for n in names)
        + r")\s*\("
    )
    # A bare call in a file that defines the name itself, at its top level, calls that file's own
    # definition (every script of a repository calls its own ``main()``).
    defined_in: dict[str, set[str]] = {}
    bare: set[tuple[str, str, int]] = set()
    for raw in proc.stdout.decode("utf-8", "replace").splitlines():
        if tree is not None and raw.startswith(tree + ":"):
            raw = raw[len(tree) + 1 :]
        parts = raw.split(":", 2)
        if len(parts) < 3 or not parts[1].isdigit():
            continue
        file, line, text = parts[0], int(parts[1]), parts[2]
        matched: set[str] = set()
        for match in regex.finditer(text):
            receiver, name = re.sub(r"\s+", "", match.group(1) or ""), match.group(2)
            if _DEFINITION.search(text[: match.start(2)] + name):
                if not text[:1].isspace():  # a method or a nested function shadows nothing
                    defined_in.setdefault(name, set()).add(file)
                continue
            for spec in by_name[name]:
                if spec.id not in matched and _receiver_matches(spec, receiver, file, packages):
                    matched.add(spec.id)
                    hits[spec.id].append((file, line, text.strip()[:160]))
                    if not receiver:
                        bare.add((spec.id, file, line))
    for spec in specs:
        own = defined_in.get(spec.name, set()) - {spec.file}
        if own:
            hits[spec.id] = [r for r in hits[spec.id] if not (r[0] in own and (spec.id, r[0], r[1]) in bare)]
    prose = _prose_hits(root, tree, staged, {(f, ln) for refs in hits.values() for f, ln, _ in refs})
    out: dict[str, tuple[int, list[tuple[str, int, str]]]] = {}
    for sid, refs in hits.items():
        refs = [r for r in refs if (r[0], r[1]) not in prose]
        refs.sort(key=lambda r: (_path_rank(r[0]), r[0], r[1]))
        out[sid] = (len(refs), refs[:MAX_CALLERS_PER_SYMBOL])
    return out


# Files read to find the imports of removed definitions; past this many the name is common and
# the rest is left unread (the public-API finding still lists the call sites).
MAX_IMPORT_CHECK_FILES = 60


def _find_stale_importers(
    root: Path, tree: str | None, changes: Sequence[SymbolChange], *, staged: bool = False
) -> dict[str, list[CallerRef]]:
    """Removed module-level Python definitions that a target-side file still imports by name
    (``from pkg.core import render``, also relative and parenthesised): symbol id -> the lines."""
    import ast

    from engine.semantic.surface import module_name

    wanted: dict[tuple[str, str], str] = {}
    for c in changes:
        if c.change != "removed" or c.language != "python" or "." in c.qualified_name:
            continue
        if c.file.endswith(".pyi"):
            continue  # a stub removed beside its module: the module still defines the name
        module = module_name(c.file)
        if module and c.kind in ("function", "class"):
            wanted[(module, c.qualified_name)] = c.id
    if not wanted:
        return {}
    names = sorted({name for _, name in wanted})
    pattern = r"\b(" + "|".join(re.escape(n) for n in names) + r")\b"
    args = ["grep", "-l", "-I", "-E", *(["--cached"] if staged else []), "-e", pattern]
    if tree is not None:
        args.append(tree)
    args += ["--", "*.py"]
    proc = _git(root, *args, check=False)
    files = []
    for raw in proc.stdout.decode("utf-8", "replace").splitlines():
        files.append(raw[len(tree) + 1 :] if tree is not None and raw.startswith(tree + ":") else raw)
    out: dict[str, list[CallerRef]] = {}
    reader = git.BlobReader(root, GIT_TIMEOUT) if tree is not None or staged else None
    try:
        for path in files[:MAX_IMPORT_CHECK_FILES]:
            data = (
                reader.read("" if staged else tree or "", path)
                if reader is not None
                else _read_working(root, path)
            )
            if not data or b"import" not in data:
                continue
            text = data.decode("utf-8", "replace")
            try:
                parsed = ast.parse(text)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue
            here = module_name(path) or ""
            package = here if path.endswith("__init__.py") else here.rpartition(".")[0]
            lines = text.splitlines()
            for node in ast.walk(parsed):
                if not isinstance(node, ast.ImportFrom):
                    continue
                source = node.module or ""
                if node.level:
                    base = package.split(".") if package else []
                    base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                    source = ".".join([*base, *([source] if source else [])])
                for alias in node.names:
                    sid = wanted.get((source, alias.name))
                    if sid is not None:
                        line = lines[node.lineno - 1].strip()[:160] if node.lineno <= len(lines) else ""
                        out.setdefault(sid, []).append(CallerRef(path, node.lineno, None, line, "import"))
    finally:
        if reader is not None:
            reader.close()
    return out


# Files read to drop matches inside comments and docstrings; past this many a text search is
# about a common name anyway, and the rest is left as found.
MAX_PROSE_CHECK_FILES = 60


def _prose_hits(
    root: Path, tree: str | None, staged: bool, hits: set[tuple[str, int]]
) -> set[tuple[str, int]]:
    """Matches that sit in a comment or a docstring of a code file (an example, not a call)."""
    by_file: dict[str, set[int]] = {}
    for f, ln in hits:
        language = _language(f)
        if language is not None and _path_rank(f) < 4:
            by_file.setdefault(f, set()).add(ln)
    if not by_file or len(by_file) > MAX_PROSE_CHECK_FILES:
        return set()
    out: set[tuple[str, int]] = set()
    reader = git.BlobReader(root, GIT_TIMEOUT) if tree is not None or staged else None
    try:
        for f, lines in by_file.items():
            if reader is not None:
                data = reader.read("" if staged else tree or "", f)
            else:
                data = _read_working(root, f)
            out.update((f, n) for n in _prose_lines(data, _language(f), lines))
    finally:
        if reader is not None:
            reader.close()
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


_SUBPROJECT = re.compile(r"Subproject commit ([0-9a-f]{7,40})")


def _submodule_note(delta: tuple[Lines, Lines] | None) -> str:
    """``submodule: 1a2b3c4d5e6f -> 7d8e9f0a1b2c (its own changes are not reviewed here)``."""

    def commit(lines: Lines) -> str | None:
        found = [m.group(1)[:12] for _, t in lines if (m := _SUBPROJECT.search(t))]
        return found[0] if found else None

    added, removed = delta or ((), ())
    before, after = commit(removed), commit(added)
    if before and after:
        moved = f"{before} -> {after}"
    elif after:
        moved = f"added at {after}"
    elif before:
        moved = f"removed (was at {before})"
    else:
        moved = "changed"
    return f"submodule {moved}: its own changes are not reviewed here"


class _Collector:
    """Accumulates file changes and per-file symbol pairings while the blobs stream in."""

    def __init__(
        self, max_file_bytes: int, packages: frozenset[str] = frozenset(), roots: tuple[str, ...] = ()
    ) -> None:
        self.max_file_bytes = max_file_bytes
        self.packages = packages
        self.roots = roots
        # path -> (added, removed) lines from one `git diff`, when the target is a commit.
        self.deltas: dict[str, tuple[Lines, Lines]] | None = None
        self.files: list[FileChange] = []
        self.new_sides: dict[str, _Side] = {}
        self.old_sides: dict[str, _Side] = {}
        self.per_file: dict[str, list[SymbolChange]] = {}
        self.left_old: list[tuple[_Side, int]] = []
        self.left_new: list[tuple[_Side, int]] = []
        # Target-side module surfaces read for removed definitions, by path (one parse a file).
        self.bound_names: dict[str, ModuleSurface | None] = {}

    def _note(self, entry: _Entry, old: bytes | None, new: bytes | None, language: str | None) -> str | None:
        if SUBMODULE_MODE in (entry.old_mode, entry.new_mode):
            return _submodule_note(self.deltas.get(entry.path) if self.deltas is not None else None)
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
        from engine.policy.paths import is_test_path
        from engine.semantic.surface import is_library_path, module_name

        language = _language(entry.path)
        binary = _is_binary(old) or _is_binary(new)
        note = self._note(entry, old, new, language)
        known = self.deltas.get(entry.path) if self.deltas is not None else None
        added: Lines
        removed: Lines
        if binary or SUBMODULE_MODE in (entry.old_mode, entry.new_mode):
            added, removed = (), ()  # a submodule's "Subproject commit" line is no line of code
        elif known is not None:
            added, removed = known
        elif self.deltas is not None and entry.status in ("modified", "renamed") and old == new:
            added, removed = (), ()  # a pure rename or mode change: git shows no hunk
        else:
            added, removed = _line_delta(old, new)
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
                module=module_name(entry.path) if is_library_path(entry.path, self.roots) else None,
                prose_added=_prose_lines(new, language, (n for n, _ in added))
                if note is None and is_library_path(entry.path, self.roots)
                else frozenset(),
                prose_removed=_prose_lines(old, language, (n for n, _ in removed))
                if note is None and is_library_path(entry.old_path or entry.path, self.roots)
                else frozenset(),
                test_identifiers=frozenset(_IDENTIFIER.findall(new.decode("utf-8", "replace")))
                if new is not None and not binary and is_test_path(entry.path)
                else frozenset(),
                mode_before=entry.old_mode,
                mode_after=entry.new_mode,
                link_target=_link_target(entry, new),
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
        if old_side:
            self.old_sides[old_side.path] = old_side
        changes, left_old, left_new = _pair_file(old_side, new_side, self.packages)
        self.per_file.setdefault(entry.path, []).extend(changes)
        self.left_old.extend(left_old)
        self.left_new.extend(left_new)

    def match_moves(self) -> None:
        for change in _match_moves(self.left_old, self.left_new, self.packages):
            key = change.file if change.change != "removed" else _file_of_removed(self.files, change)
            self.per_file.setdefault(key, []).append(change)

    def mark_renames(self) -> None:
        """A change that only renames identifiers counts as a rename when the same rename recurs in
        another symbol of the change, renames one of the symbol's own parameters, or is the rename
        of a symbol the change renames (``same_origin`` -> ``_same_origin``: its call sites only
        follow it); a lone identifier swapped in one place is a change of logic."""
        from collections import Counter

        counts = Counter(pair for cs in self.per_file.values() for c in cs for pair in set(c.rename_pairs))
        for cs in self.per_file.values():
            for c in cs:
                if c.change == "renamed" and c.old_qualified_name:
                    old_leaf = c.old_qualified_name.rsplit(".", 1)[-1]
                    new_leaf = c.qualified_name.rsplit(".", 1)[-1]
                    if old_leaf != new_leaf:
                        counts[(old_leaf, new_leaf)] += 2
        for key, changes in self.per_file.items():
            out = []
            for c in changes:
                if c.rename_pairs and all(
                    counts[pair] > 1
                    or any(pc.startswith(f"parameter {pair[0]!r} ") for pc in c.parameter_changes)
                    for pair in c.rename_pairs
                ):
                    c = replace(c, rename_only=True)
                out.append(c)
            self.per_file[key] = out

    def attach_surface(self, repo: Path, rng: _Range, listing: _TreeListing) -> None:
        """Import paths of Python library symbols, and whether removed or moved ones still resolve."""
        surfaces = _TargetSurfaces(repo, rng, self.new_sides, listing)
        parsed: dict[tuple[str, str], object] = {}
        for key, changes in self.per_file.items():
            self.per_file[key] = [
                _with_constructor(
                    _with_import_path(c, self.old_sides, self.new_sides, surfaces, parsed, self.roots),
                    self.old_sides,
                    self.new_sides,
                )
                for c in changes
            ]
        self.files = [self._with_lost_exports(f, surfaces) for f in self.files]

    def _with_lost_exports(self, f: FileChange, surfaces: _TargetSurfaces) -> FileChange:
        from engine.semantic.surface import is_private_name, module_surface

        if f.module is None or f.status == "added":
            return f
        old_side = self.old_sides.get(f.old_path or f.path)
        if old_side is None or not old_side.text:
            return f
        before = module_surface(old_side.text)
        if before is None:
            return f
        if before.all_names is not None:
            offered = set(before.all_names)
        elif f.path.endswith("__init__.py"):
            offered = _reexported_names(old_side.text)
        else:
            return f
        offered = {n for n in offered if not is_private_name(n)}
        if not offered:
            return f
        after = surfaces.surface_of_module(f.module)
        lost = sorted(n for n in offered if after is None or not after.binds(n))
        removed_defs = {
            c.qualified_name for c in self.per_file.get(f.path, []) if c.change == "removed"
        }  # reported as removed symbols already
        lost = [n for n in lost if n not in removed_defs]
        return replace(f, lost_exports=tuple(lost)) if lost else f

    def attach_callers(self, repo: Path, rng: _Range, caller_graph: CallerGraph | None = None) -> None:
        # A symbol moved as it was with its whole file (a package moved under ``src/``) affects
        # no call site: its callers call it by the same name (what may break is the file's
        # import path, which the public-API rule judges); thousands of them would each cost a
        # text search.
        renamed = {(f.old_path, f.path) for f in self.files if f.status == "renamed"}
        all_changes = [c for cs in self.per_file.values() for c in cs if not _moved_with_file(c, renamed)]
        found = _find_callers(repo, rng.target_sha, all_changes, staged=rng.staged, packages=self.packages)
        # The index describes the work tree, so its call graph answers only for WORKING/STAGED.
        use_graph = caller_graph is not None and (rng.working or rng.staged)
        graph = caller_graph(all_changes) if caller_graph is not None and use_graph else {}
        importers = _find_stale_importers(repo, rng.target_sha, all_changes, staged=rng.staged)
        for key, changes in self.per_file.items():
            self.per_file[key] = [
                self._still_bound(
                    replace(c, importers=tuple(importers.get(c.id, ()))) if c.id in importers else c
                )
                for c in (self._with_callers(c, found, graph) for c in changes)
            ]

    def _still_bound(self, c: SymbolChange) -> SymbolChange:
        """A removed module-level Python definition whose module still binds its name another way
        (``from functools import cache as _cache`` beside a removed fallback ``def _cache``)."""
        if c.change != "removed" or c.language != "python" or "." in c.qualified_name:
            return c
        side = self.new_sides.get(c.file)
        if c.still_importable is not None or side is None or not side.text:
            return c
        from engine.semantic.surface import module_surface

        if c.file not in self.bound_names:
            self.bound_names[c.file] = module_surface(side.text)
        surface = self.bound_names[c.file]
        return (
            replace(c, still_importable=True)
            if surface is not None and surface.binds(c.qualified_name)
            else c
        )

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
        total, refs = found.get(c.old_id or c.id, (0, []))
        if not total:
            return c
        listed = tuple(
            CallerRef(
                f,
                ln,
                _enclosing(self.new_sides, f, ln),
                t,
                "documentation" if _path_rank(f) == 4 else "text search",
            )
            for f, ln, t in refs
        )
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


def _reexported_names(source: str) -> set[str]:
    """Names a package ``__init__`` binds by importing them from its own modules (``from .x import y``)."""
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return set()
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            out.update(a.asname or a.name for a in node.names if a.name != "*")
    return out


def _moved_with_file(c: SymbolChange, renamed: set[tuple[str | None, str]]) -> bool:
    return (
        c.change == "moved"
        and c.cosmetic
        and c.old_qualified_name in (None, c.qualified_name)
        and (c.old_file, c.file) in renamed
    )


class _TreeListing:
    """Every path of the target side, listed once on first use (one `git ls-tree`)."""

    def __init__(self, repo: Path, rng: _Range) -> None:
        self.repo = repo
        self.rng = rng
        self._paths: list[str] | None = None

    def paths(self) -> list[str]:
        if self._paths is None:
            if self.rng.target_sha is not None:
                out = _git(self.repo, "ls-tree", "-r", "--name-only", self.rng.target_sha).stdout
            else:
                out = _git(self.repo, "ls-files", *(["--cached"] if self.rng.staged else [])).stdout
            self._paths = out.decode("utf-8", "surrogateescape").splitlines()
        return self._paths


def _test_families(listing: _TreeListing) -> frozenset[str]:
    from engine.policy.paths import is_test_path
    from engine.semantic.graph import family

    out: set[str] = set()
    for path in listing.paths():
        if is_test_path(path):
            language = _language(path)
            if language is not None:
                out.add(family(language))
    return frozenset(out)


class _TargetSurfaces:
    """Module surfaces of the target side, read lazily: changed files from the diff, others from git."""

    def __init__(
        self, repo: Path, rng: _Range, new_sides: dict[str, _Side], listing: _TreeListing | None = None
    ) -> None:
        self.repo = repo
        self.rng = rng
        self.new_sides = new_sides
        self.listing = listing or _TreeListing(repo, rng)
        self._paths: dict[str, str] | None = None
        self._cache: dict[str, object] = {}
        self._sources: dict[str, str | None] = {}
        self._imports: dict[tuple[bool, str, str], set[str] | None] = {}

    def _module_paths(self) -> dict[str, str]:
        from engine.semantic.surface import module_name

        if self._paths is None:
            paths: dict[str, str] = {}
            for raw in self.listing.paths():
                module = module_name(raw)
                if module is not None:
                    paths.setdefault(module, raw)
            for path in self.new_sides:
                module = module_name(path)
                if module is not None:
                    paths.setdefault(module, path)
            self._paths = paths
        return self._paths

    def path_of_module(self, module: str) -> str | None:
        return self._module_paths().get(module)

    def surface_of_module(self, module: str):  # -> ModuleSurface | None
        from engine.semantic.surface import module_surface

        if module in self._cache:
            return self._cache[module]
        path = self.path_of_module(module)
        surface = None
        if path is not None:
            side = self.new_sides.get(path)
            if side is not None and side.text:
                surface = module_surface(side.text)
            else:
                data = self._read(path)
                surface = module_surface(data.decode("utf-8", "replace")) if data is not None else None
        self._cache[module] = surface
        return surface

    def package_source(self, package: str, *, old: bool = False) -> str | None:
        """The ``__init__`` source of a package, on the target side or (``old``) the base side."""
        key = f"{'old' if old else 'new'}:{package}"
        if key in self._sources:
            return self._sources[key]
        path = self.path_of_module(package)
        source: str | None = None
        if path is not None and path.endswith("__init__.py"):
            side = None if old else self.new_sides.get(path)
            if side is not None and side.text:
                source = side.text
            else:
                data = self._read_base(path) if old else self._read(path)
                source = data.decode("utf-8", "replace") if data is not None else None
        self._sources[key] = source
        return source

    def imported_from(self, package: str, module: str, source: str, *, old: bool) -> set[str] | None:
        from engine.semantic.surface import names_imported_from

        key = (old, package, module)
        if key not in self._imports:
            self._imports[key] = names_imported_from(source, package, module)
        return self._imports[key]

    def _read_base(self, path: str) -> bytes | None:
        proc = _git(self.repo, "cat-file", "blob", f"{self.rng.base_sha}:{path}", check=False)
        return proc.stdout if proc.returncode == 0 else None

    def _read(self, path: str) -> bytes | None:
        if self.rng.working:
            return _read_working(self.repo, path)
        rev = "" if self.rng.staged else (self.rng.target_sha or "")
        proc = _git(self.repo, "cat-file", "blob", f"{rev}:{path}", check=False)
        return proc.stdout if proc.returncode == 0 else None


def _with_import_path(
    c: SymbolChange,
    old_sides: dict[str, _Side],
    new_sides: dict[str, _Side],
    surfaces: _TargetSurfaces,
    parsed: dict[tuple[str, str], object],
    roots: tuple[str, ...] = (),
) -> SymbolChange:
    """The dotted path users import the symbol by, and whether a removed or moved one still resolves.

    Only computed where a rule needs it: removed, moved and renamed symbols, and modified ones
    whose parameters changed; ``parsed`` caches each side's module surface.
    """
    from engine.semantic.surface import (
        is_exported,
        is_library_path,
        is_private_name,
        is_public_module,
        is_vendored_module,
        module_name,
        module_surface,
    )

    if c.language != "python" or not c.exported or c.change == "added":
        return c
    if c.change == "modified" and not c.parameter_changes:
        return c
    old_file = c.old_file or c.file
    old_qualified = c.old_qualified_name or c.qualified_name
    removed = c.change == "removed"
    path_file, qualified = (old_file, old_qualified) if removed else (c.file, c.qualified_name)
    if not is_library_path(path_file, roots):
        return c
    module = module_name(path_file)
    if (
        module is None
        or not is_public_module(module)
        or any(is_private_name(p) for p in qualified.split("."))
    ):
        return c
    import_path = f"{module}.{qualified}"
    old_module = module_name(old_file) if is_library_path(old_file, roots) else None
    if c.change in ("moved", "renamed") and old_module == module and old_qualified == c.qualified_name:
        return replace(c, import_path=import_path, still_importable=True)
    key = ("old" if removed else "new", path_file)
    if key not in parsed:
        side = (old_sides if removed else new_sides).get(path_file)
        parsed[key] = module_surface(side.text) if side is not None and side.text else None
    if not is_exported(parsed[key], qualified.split(".", 1)[0]):  # type: ignore[arg-type]
        return c
    if is_vendored_module(module):
        return c

    def curated_out() -> bool:
        # The package that re-exports most of this module's names leaves this one out.
        side = (old_sides if removed else new_sides).get(path_file)
        return side is not None and _curated_out(
            module, qualified.split(".", 1)[0], side, surfaces, old=removed
        )

    if c.change == "modified":
        return c if curated_out() else replace(c, import_path=import_path)
    if old_module is None or not is_public_module(old_module):
        return replace(c, import_path=import_path, still_importable=True)
    target = surfaces.surface_of_module(old_module)
    if old_file.endswith(".pyi"):
        # A stub only describes its module: dropping it (annotations moved inline) removes nothing.
        return replace(c, import_path=import_path, still_importable=target is not None)
    top, _, rest = old_qualified.partition(".")
    still = target is not None and target.binds(top)
    if still and rest:
        # A method or nested name: it must still be defined under the same qualified name, or be
        # assigned in its class (``base_uri = csp_property(...)``).
        old_path = surfaces.path_of_module(old_module)
        target_side = new_sides.get(old_path or "")
        if target_side is not None:
            owner, _, leaf = old_qualified.rpartition(".")
            assigned = re.compile(rf"^\s*{re.escape(leaf)}\s*(:[^=]*)?=", re.M)
            still = (
                any(s.qualified_name == old_qualified for s in target_side.symbols)
                or any(
                    s.qualified_name == owner and assigned.search(target_side.own_text[i])
                    for i, s in enumerate(target_side.symbols)
                )
                or _inherited(owner, leaf, new_sides)
            )
    if not still and curated_out():
        return c
    return replace(
        c, import_path=f"{old_module}.{old_qualified}" if removed else import_path, still_importable=still
    )


def _curated_out(module: str, name: str, side: _Side, surfaces: _TargetSurfaces, *, old: bool) -> bool:
    """A package above ``module`` re-exports most of its public names, but not ``name``."""
    from engine.semantic.surface import curated_out, is_private_name

    if side.path.endswith("__init__.py") or "." not in module:
        return False
    public = {
        s.name
        for s in side.symbols
        if "." not in s.qualified_name and s.kind in ("function", "class") and not is_private_name(s.name)
    }
    parts = module.split(".")
    for depth in range(len(parts) - 1, 0, -1):
        package = ".".join(parts[:depth])
        source = surfaces.package_source(package, old=old)
        if source is None:
            continue
        names = surfaces.imported_from(package, module, source, old=old)
        if names is None:
            return False  # a star import re-exports everything
        if curated_out(names, public, name):
            return True
    return False


@dataclass(frozen=True)
class _Layout:
    packages: frozenset[str]
    library_roots: tuple[str, ...]


_BASES = re.compile(r"^class\s+\w+\s*\((.*)\)")


# Bases outside the project whose methods are known: the built-in containers and the
# collections ABCs, by the word their name ends with (``CallbackDict`` is a dict, ``MutableMapping``
# a mapping). A class that stops overriding ``get`` still has the ``get`` such a base defines.
_CONTAINER_METHODS: tuple[tuple[str, frozenset[str]], ...] = (
    ("dict", frozenset(dir(dict))),
    ("mapping", frozenset(dir(dict))),
    ("list", frozenset(dir(list))),
    ("sequence", frozenset(dir(list))),
    ("set", frozenset(dir(set))),
)


def _container_defines(base: str, method: str) -> bool:
    lowered = base.lower()
    return any(lowered.endswith(word) and method in methods for word, methods in _CONTAINER_METHODS)


# The method whose removal changes what a class's callers pass (``__new__`` removed beside an
# ``__init__`` leaves the arguments to that ``__init__``).
CONSTRUCTORS = frozenset({"__init__"})


def _with_constructor(
    c: SymbolChange, old_sides: dict[str, _Side], new_sides: dict[str, _Side]
) -> SymbolChange:
    """A removed Python ``__init__`` of a class the change keeps: the class still
    builds instances, through the constructor it now inherits, and what breaks is the arguments
    that constructor takes (a subclass's ``__init__(self, name, colour="red")`` removed leaves
    ``Base.__init__(self, name)``: ``Child("x", colour="blue")`` raises TypeError)."""
    from engine.semantic.surface import parameter_changes, python_params

    owner, _, leaf = c.qualified_name.rpartition(".")
    if c.change != "removed" or c.language != "python" or leaf not in CONSTRUCTORS or not owner:
        return c
    new_side, old_side = new_sides.get(c.file), old_sides.get(c.old_file or c.file)
    if new_side is None or old_side is None or not any(s.qualified_name == owner for s in new_side.symbols):
        return c
    old_index = next(
        (i for i, s in enumerate(old_side.symbols) if s.qualified_name == c.qualified_name), None
    )
    before = python_params(old_side.full_text[old_index]) if old_index is not None else None
    if before is None:
        return c
    source, after = _answering_constructor(owner, leaf, new_sides)
    if after is None:  # a base outside the change: its parameters are not read here
        return replace(c, constructor_from=source, still_importable=True)
    before, after = before[1:], after[1:]  # self / cls
    return replace(
        c, constructor_from=source, still_importable=True, parameter_changes=parameter_changes(before, after)
    )


def _answering_constructor(
    owner: str, leaf: str, sides: dict[str, _Side]
) -> tuple[str, tuple[Param, ...] | None]:
    """(who now answers ``owner(...)``, its parameters with ``self``): the first base, depth
    first, defined in the changed files with its own ``leaf``; a base from elsewhere (parameters
    None); or ``object`` when no base is left (``(self,)``: no arguments)."""
    from engine.semantic.surface import Param as _Param
    from engine.semantic.surface import python_params

    by_name = {s.qualified_name: (side, i) for side in sides.values() for i, s in enumerate(side.symbols)}
    seen: set[str] = set()
    todo = [owner]
    outside: str | None = None
    while todo:
        cls = todo.pop(0)
        if cls in seen:
            continue
        seen.add(cls)
        found = by_name.get(cls)
        if found is None:
            if cls not in ("object", "Generic", "Protocol") and outside is None:
                outside = cls
            continue
        if cls != owner and (method := by_name.get(f"{cls}.{leaf}")) is not None:
            side, i = method
            return f"{cls}.{leaf}", python_params(side.full_text[i])
        side, i = found
        m = _BASES.match(side.symbols[i].signature)
        if m:
            todo.extend(
                b.strip().split("[", 1)[0].rsplit(".", 1)[-1]
                for b in m.group(1).split(",")
                if b.strip() and "=" not in b
            )
    if outside is not None:
        return outside, None
    return "object", (_Param("self", "positional", None),)


def _inherited(owner: str, method: str, sides: dict[str, _Side]) -> bool:
    """``owner`` still has ``method`` through a base class defined in the changed files, or
    through a container base from outside the project that defines it (``dict.get``)."""
    seen: set[str] = set()
    todo = [owner]
    by_name = {s.qualified_name: s for side in sides.values() for s in side.symbols}
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        sym = by_name.get(cls)
        if sym is None:
            if cls != owner and _container_defines(cls, method):
                return True
            continue
        if cls != owner and f"{cls}.{method}" in by_name:
            return True
        m = _BASES.match(sym.signature)
        if m:
            todo.extend(
                b.strip().split("[", 1)[0].rsplit(".", 1)[-1] for b in m.group(1).split(",") if b.strip()
            )
    return False


def _project_layout(repo: Path, rng: _Range) -> _Layout:
    """Top-level package names of the project (``pkg/``, ``src/pkg/``, ``pkg.py``) on the target
    side, and ``src/`` as the library root when the project keeps its packages there."""
    names: list[str] = []
    if rng.target_sha is None:
        for base, prefix in ((repo, ""), (repo / "src", "src/"), (repo / "lib", "lib/")):
            try:
                names.extend(prefix + p.name for p in base.iterdir() if not p.name.startswith("."))
            except OSError:
                continue
    else:
        proc = _git(repo, "ls-tree", "--name-only", rng.target_sha, "--", ".", "src/", "lib/", check=False)
        if proc.returncode == 0:
            names.extend(proc.stdout.decode("utf-8", "replace").splitlines())
    out = set()
    src_packages = False
    for name in names:
        prefix, _, leaf = name.rpartition("/")
        stem = leaf[:-3] if leaf.endswith(".py") else leaf
        if not stem.isidentifier() or stem in ("src", "lib", "tests", "test", "docs"):
            continue
        out.add(stem)
        src_packages = src_packages or prefix == "src"
    return _Layout(frozenset(out), ("src/",) if src_packages else ())


def analyze_diff(
    root: str | os.PathLike[str],
    base: str | None = None,
    target: str | None = None,
    *,
    paths: Iterable[str] | None = None,
    callers: bool = True,
    max_file_bytes: int = MAX_ANALYZED_BYTES,
    caller_graph: CallerGraph | None = None,
    progress: Progress | None = None,
) -> SemanticDiff:
    """Semantic diff of ``base`` → ``target``.

    ``progress(phase, done, total)``, when given, hears each changed file read and each later
    phase begin (a change of thousands of files takes minutes).

    ``caller_graph`` (e.g. ``engine.store.callers.index_callers(root)``) adds callers from the
    index's resolved call graph for WORKING and STAGED; without it callers come from the text
    search alone. This module never opens the index itself.

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

    layout = _project_layout(repo, rng)
    collector = _Collector(max_file_bytes, layout.packages, layout.library_roots)
    if rng.target_sha is not None or rng.staged:
        collector.deltas = _git_line_deltas(
            repo, rng.base_sha, rng.target_sha, staged=rng.staged, paths=wanted
        )
    reader = git.BlobReader(repo, GIT_TIMEOUT)
    try:
        for done, entry in enumerate(sorted(entries, key=lambda e: e.path)):
            if progress is not None:
                progress(READING_PHASE, done, len(entries))
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
    if progress is not None:
        progress(MOVES_PHASE, 0, 0)
    collector.match_moves()
    collector.mark_renames()
    listing = _TreeListing(repo, rng)
    collector.attach_surface(repo, rng, listing)
    if callers:
        if progress is not None:
            progress(CALLERS_PHASE, 0, 0)
        collector.attach_callers(repo, rng, caller_graph)
    files = collector.result()
    return SemanticDiff(
        base=rng.base_label,
        target=rng.target_label,
        base_commit=rng.base_sha,
        target_commit=rng.target_sha,
        files=files,
        notes=rng.notes,
        packages=tuple(sorted(collector.packages)),
        library_roots=layout.library_roots,
        test_families=_test_families(listing) if _needs_test_families(files, layout.library_roots) else None,
        tests_defined_elsewhere=_tests_defined_elsewhere(repo, rng, files),
    )


# A definition of a function by name, in the languages whose tests are named functions.
_TEST_DEFINITION = r"(def|func|fn|function)[[:space:]]+({names})[[:space:]]*[(\[<]"


def _tests_defined_elsewhere(repo: Path, rng: _Range, files: Sequence[FileChange]) -> frozenset[str]:
    """Which functions removed from test files another test file still defines on the target side:
    one ``git grep`` over the test files, only when a change removes a function from a test."""
    from engine.policy.paths import is_test_path

    removed: dict[str, set[str]] = {}
    for f in files:
        if f.status == "deleted" or not is_test_path(f.path):
            continue  # a deleted test file is judged as a whole (engine.review.rules)
        for s in f.symbols:
            if s.change == "removed" and s.kind in ("function", "method"):
                leaf = (s.old_qualified_name or s.qualified_name).rsplit(".", 1)[-1]
                if re.fullmatch(r"\w+", leaf):
                    removed.setdefault(leaf, set()).add(f.path)
    if not removed:
        return frozenset()
    pattern = _TEST_DEFINITION.format(names="|".join(sorted(removed)))
    args = ["grep", "-o", "-I", "-E", "--no-color", *(["--cached"] if rng.staged else [])]
    args += ["-e", pattern, *([rng.target_sha] if rng.target_sha else [])]
    out = _git(repo, *args, check=False).stdout.decode("utf-8", "replace").splitlines()
    prefix = f"{rng.target_sha}:" if rng.target_sha else ""
    found: set[str] = set()
    for line in out:
        path, _, text = line.removeprefix(prefix).partition(":")
        m = re.match(r"\w+\s+(\w+)", text)
        if m is not None and m.group(1) in removed and path not in removed[m.group(1)] and is_test_path(path):
            found.add(m.group(1))
    return frozenset(found)


def _needs_test_families(files: Sequence[FileChange], roots: tuple[str, ...]) -> bool:
    """Only a change that touches library code and no test asks where the project keeps tests."""
    from engine.policy.paths import is_test_path
    from engine.semantic.surface import is_library_path

    if any(is_test_path(f.path) for f in files):
        return False
    return any(f.symbols and is_library_path(f.path, roots) for f in files)


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
