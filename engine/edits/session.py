"""EditSession: the pending change set a user reviews hunk by hunk, persisted across restarts.

It stages whole contents, edit blocks and deletions; keeps each file's original
text, hash and format; tracks hunk states; and commits the accepted hunks through
the atomic writer. It never writes a repository file itself and knows no UI.
"""

from __future__ import annotations

import copy
import difflib
import functools
import json
import secrets
import stat
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from engine.config import Settings
from engine.edits.aftercommit import CheckResult, GitCommitResult, git_commit_paths, run_check
from engine.edits.errors import EditConflict, FileRefused, HunkNotFound, NoEditBlocks, SessionCorrupt
from engine.edits.hunks import (
    Hunk,
    HunkId,
    HunkState,
    RawHunk,
    apply_selected,
    diff_hunks,
    file_views,
    hunk_id,
    unified_diff,
)
from engine.edits.lock import edit_lock
from engine.edits.protocol import (
    AnalyzeFn,
    EditBlock,
    EditBlockError,
    apply_blocks,
    find_lines,
    join_lines,
    parse_blocks,
    real_rel,
    repo_file_check,
    split_lines,
)
from engine.edits.sandbox import check_editable, normalize_rel, resolve_in_repo
from engine.edits.textformat import TextFormat, conform, decode, encode, sha256_bytes
from engine.edits.writer import FileWrite, apply_change_set, read_bytes_or_none, write_json_atomic
from engine.errors import NotFoundError, SandboxError, SemforaError
from engine.policy.redaction import redact
from engine.repo.layout import RepoLayout
from engine.words import plural

SESSION_VERSION = 1
# Shortest hunk-id prefix accepted from a user; shorter ones match too much.
MIN_ID_PREFIX = 4
# Lines of context around a hunk when looking for it again in a file changed on disk.
REBASE_CONTEXT = 3
DEFAULT_COMMIT_MESSAGE = "semfora: apply edits"


@dataclass
class _Record:
    """The persisted state of one staged file (mutable; never leaves this module)."""

    path: str
    kind: str
    base_hash: str | None
    original: str
    target: str
    fmt: TextFormat
    mode: int | None
    states: dict[str, str] = field(default_factory=dict)
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    syntax_error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "kind": self.kind,
            "base_hash": self.base_hash,
            "original": self.original,
            "target": self.target,
            "format": self.fmt.to_json(),
            "mode": self.mode,
            "states": self.states,
            "conflicts": self.conflicts,
            "syntax_error": self.syntax_error,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> _Record:
        return cls(
            path=data["path"],
            kind=data["kind"],
            base_hash=data.get("base_hash"),
            original=data["original"],
            target=data["target"],
            fmt=TextFormat.from_json(data.get("format", {})),
            mode=data.get("mode"),
            states=dict(data.get("states", {})),
            conflicts=list(data.get("conflicts", [])),
            syntax_error=data.get("syntax_error"),
        )


@dataclass(frozen=True)
class StagedFile:
    """One staged file as reviewers see it: its hunks and their states.

    Not ``engine.semantic.diff.FileChange`` (a file changed between two git trees, with its symbol
    changes): this is an edit waiting in the session, hunk by hunk, that may still be rejected.
    """

    path: str
    kind: str
    hunks: tuple[Hunk, ...]
    stale: bool = False
    syntax_error: str | None = None

    def count(self, state: HunkState) -> int:
        return sum(1 for h in self.hunks if h.state == state and not h.conflict)

    @property
    def pending(self) -> int:
        return self.count("pending")

    @property
    def accepted(self) -> int:
        return self.count("accepted")

    @property
    def rejected(self) -> int:
        return self.count("rejected")

    @property
    def conflicts(self) -> int:
        return sum(1 for h in self.hunks if h.conflict)

    @property
    def added(self) -> int:
        return sum(len(h.new_lines) for h in self.hunks if not h.conflict)

    @property
    def removed(self) -> int:
        return sum(len(h.old_lines) for h in self.hunks if not h.conflict)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "kind": self.kind,
            "stale": self.stale,
            "syntax_error": self.syntax_error,
            "added": self.added,
            "removed": self.removed,
            "counts": {
                "pending": self.pending,
                "accepted": self.accepted,
                "rejected": self.rejected,
                "conflicts": self.conflicts,
            },
            "hunks": [h.to_json() for h in self.hunks],
        }


@dataclass(frozen=True)
class CommitResult:
    """What a commit did; ``committed`` is False when no hunk was accepted (nothing changed)."""

    committed: bool
    message: str
    files: tuple[str, ...] = ()
    hunks: int = 0
    txid: str | None = None
    remaining: int = 0
    git: GitCommitResult | None = None
    checks: tuple[CheckResult, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": True,
            "committed": self.committed,
            "message": self.message,
            "files": list(self.files),
            "hunks": self.hunks,
            "txid": self.txid,
            "remaining": self.remaining,
            "git": self.git.to_json() if self.git else None,
            "checks": [c.to_json() for c in self.checks],
        }


@dataclass(frozen=True)
class RebaseReport:
    """Files whose disk content changed, hunks re-applied onto it, hunks now in conflict."""

    files: tuple[str, ...] = ()
    reapplied: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    already_applied: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": True,
            "files": list(self.files),
            "reapplied": list(self.reapplied),
            "conflicts": list(self.conflicts),
            "dropped": list(self.dropped),
            "already_applied": list(self.already_applied),
        }


@dataclass(frozen=True)
class UndoFollowUp:
    """What the hunks still staged did when an undo put their files back (``rebase_after_undo``).

    The undo itself is done whatever this says. ``conflicts`` maps a file to the ids of its hunks
    that no longer fit it (kept, marked as conflicts); ``problem`` is why the hunks could not be
    moved at all (they stay staged against the old text, marked as changed on disk).
    """

    report: RebaseReport = field(default_factory=RebaseReport)
    conflicts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    problem: SemforaError | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "reapplied": list(self.report.reapplied),
            "conflicts": {path: list(ids) for path, ids in self.conflicts.items()},
            "error_code": self.problem.code if self.problem else None,
            "error_message": self.problem.message if self.problem else None,
        }

    def notes(self) -> list[str]:
        """One line per thing the user should know, for a face to print after the undo's own line."""
        out = [
            f"{plural(len(ids), 'staged hunk')} in {path} no longer "
            f"{'fits' if len(ids) == 1 else 'fit'} the restored file and "
            f"{'is' if len(ids) == 1 else 'are'} kept as {'a conflict' if len(ids) == 1 else 'conflicts'}: "
            f"{', '.join(ids)} (reject {'it' if len(ids) == 1 else 'them'}, or stage the change again)"
            for path, ids in self.conflicts.items()
        ]
        if self.problem is not None:
            kept = (
                ""
                if isinstance(self.problem, SessionCorrupt)
                else "; they stay staged (`semfora edits rebase` tries again)"
            )
            out.append(
                "the undo is done, but the hunks still staged could not follow the restored files: "
                f"{self.problem.message}{kept}"
            )
        return out


def rebase_after_undo(
    layout: RepoLayout, settings: Settings | None, files: Collection[str], *, analyze: AnalyzeFn | None = None
) -> UndoFollowUp:
    """Move the hunks still staged in ``files`` (just put back by an undo) onto them.

    Never raises for the session's sake: the undo has happened, and a failure here (a damaged
    session file, a file now refused) must not be told as a failed undo.
    """
    try:
        session = EditSession.load_or_create(layout, settings, analyze=analyze)
        report = session.rebase(only=files)
        wanted = set(report.conflicts)
        conflicts: dict[str, tuple[str, ...]] = {}
        for f in session.files():
            ids = tuple(h.id for h in f.hunks if h.conflict and h.id in wanted)
            if ids:
                conflicts[f.path] = ids
        return UndoFollowUp(report, conflicts)
    except SemforaError as exc:
        return UndoFollowUp(problem=exc)
    except OSError as exc:
        return UndoFollowUp(
            problem=SemforaError(f"the edit session could not be saved: {exc.strerror or exc}")
        )


def _raw_hunks(rec: _Record) -> list[RawHunk]:
    if rec.kind == "delete":
        lines = tuple(split_lines(rec.original)[0])
        hid = hunk_id(rec.path, ("<delete>",), (rec.base_hash or "",), 0)
        return [RawHunk(hid, 0, len(lines), 0, 0, lines, ())]
    if _empty_new_file(rec):
        # No line to diff, yet a change to review: an empty package marker (``__init__.py``).
        return [RawHunk(hunk_id(rec.path, (), ("<empty file>",), 0), 0, 0, 0, 0, (), ())]
    return diff_hunks(rec.path, rec.original, rec.target)


def _empty_new_file(rec: _Record) -> bool:
    """A staged creation of an empty file (not a lost creation kept only for its conflicts)."""
    return rec.kind == "create" and rec.target == "" and not rec.conflicts


def _empty_file_patch(path: str) -> str:
    """The git patch that creates ``path`` empty: a unified diff has no way to say it."""
    return f"diff --git a/{path} b/{path}\nnew file mode 100644\n"


def _unique(hay: Sequence[str], probes: Sequence[list[str]]) -> int | None:
    """Index of the first probe found exactly once in ``hay`` (a probe found twice stops the search)."""
    for probe in probes:
        if not any(line.strip() for line in probe):
            continue
        hits = find_lines(hay, probe, str)
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            return None
    return None


def _relocate(
    original: str, raws: Sequence[RawHunk], new_text: str
) -> tuple[str, list[RawHunk], list[RawHunk], list[RawHunk]]:
    """Re-apply ``raws`` (made against ``original``) onto ``new_text``.

    Returns (text, placed, conflicted, already applied): a hunk whose new lines
    already sit in the file (the commit landed, or the user made the same change)
    is dropped rather than reported as a conflict.
    """
    a, _ = split_lines(original)
    hay, final = split_lines(new_text)
    spots: list[tuple[int, int, RawHunk]] = []
    conflicted: list[RawHunk] = []
    already: list[RawHunk] = []
    for r in raws:
        before = a[max(0, r.i1 - REBASE_CONTEXT) : r.i1]
        after = a[r.i2 : r.i2 + REBASE_CONTEXT]
        old = list(r.old_lines)
        attempts = [(before + old + after, len(before))]
        if old:
            attempts.append((old, 0))
        where: int | None = None
        for probe, offset in attempts:
            if not probe:
                continue
            hits = find_lines(hay, probe, str)
            if len(hits) == 1:
                where = hits[0] + offset
                break
            if len(hits) > 1:
                break
        if (
            where is None
            or any(where < end and start < where + len(old) for start, end, _ in spots)
            or any(start == where and not old for start, _e, _r in spots)
        ):
            new = list(r.new_lines)
            done = _unique(hay, [before + new + after] + ([new] if new else []))
            (already if done is not None else conflicted).append(r)
            continue
        spots.append((where, where + len(old), r))
    out = list(hay)
    for start, end, r in sorted(spots, key=lambda s: s[0], reverse=True):
        out[start:end] = list(r.new_lines)
    placed = [r for _s, _e, r in spots]
    return join_lines(out, final or not hay), placed, conflicted, already


def _hunk_label(states: Mapping[str, str], raw: RawHunk) -> str:
    return f"[{raw.id}] {states[raw.id]}"


P = ParamSpec("P")
R = TypeVar("R")


def _exclusive(method: Callable[Concatenate[EditSession, P], R]) -> Callable[Concatenate[EditSession, P], R]:
    """Run a change to the session under the edit lock, on the session as last saved.

    Two processes staging the same file at once used to load, change and save the session
    side by side, and the second save dropped the first one's hunk: now the second waits, then
    starts from the first one's result (its blocks apply to the text already staged).
    """

    @functools.wraps(method)
    def exclusive(self: EditSession, *args: P.args, **kwargs: P.kwargs) -> R:
        self.layout.edits_dir.mkdir(parents=True, exist_ok=True)
        with edit_lock(self.layout.edits_dir, timeout=self.settings.edits.lock_timeout):
            self._reload()
            return method(self, *args, **kwargs)

    return exclusive


class EditSession:
    """The pending change set of one repository. Load it with ``load_or_create``."""

    def __init__(
        self, layout: RepoLayout, settings: Settings | None = None, *, analyze: AnalyzeFn | None = None
    ) -> None:
        self.layout = layout
        self.settings = settings or Settings()
        self._analyze = analyze
        self.id = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)
        self.task: str | None = None
        self.created_at = time.time()
        self._records: dict[str, _Record] = {}
        # What this instance last read or wrote (per path, as JSON) and that file's revision:
        # a save merges its own changes into whatever another process saved since.
        self._base: dict[str, dict[str, Any]] = {}
        self._revision: str | None = None

    # ------------------------------------------------------------------ persistence

    @property
    def path(self) -> Path:
        return self.layout.edit_session_file

    @classmethod
    def load_or_create(
        cls, layout: RepoLayout, settings: Settings | None = None, *, analyze: AnalyzeFn | None = None
    ) -> EditSession:
        """The pending session of ``layout`` exactly as last saved, or a new empty one."""
        session = cls(layout, settings, analyze=analyze)
        path = session.path
        if not path.exists():
            return session
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            session.id = data["id"]
            session.task = data.get("task")
            session.created_at = data.get("created_at", session.created_at)
            session._records = {r["path"]: _Record.from_json(r) for r in data.get("files", [])}
            session._revision = data.get("revision")
            session._base = session._snapshot()
        except (OSError, ValueError, KeyError, TypeError) as exc:
            aside = path.with_name(f"session.corrupt-{int(time.time())}.json")
            path.replace(aside)
            raise SessionCorrupt(
                f"the pending edit session could not be read ({exc}); it was moved to {aside}",
                hint="run the command again to start a new session",
            ) from exc
        return session

    def _snapshot(self) -> dict[str, dict[str, Any]]:
        return {path: copy.deepcopy(rec.to_json()) for path, rec in self._records.items()}

    def save(self) -> None:
        """Persist the session. Two processes staging at once lose nothing: under the edit
        lock, a save that finds another process's newer file merges its own changes (the
        paths it staged, changed or dropped since it loaded) into that file."""
        self.layout.edits_dir.mkdir(parents=True, exist_ok=True)
        with edit_lock(self.layout.edits_dir, timeout=self.settings.edits.lock_timeout):
            mine = self._snapshot()
            on_disk = self._read_saved()
            if on_disk is None and self._revision is not None:
                on_disk = {"files": []}  # another process committed or discarded what was loaded
            if on_disk is not None and on_disk.get("revision") != self._revision:
                mine = self._merge_into(on_disk, mine)
                self.id = on_disk.get("id", self.id)
                self._records = {path: _Record.from_json(data) for path, data in mine.items()}
            if not mine:
                self.path.unlink(missing_ok=True)
                self._revision = None
            else:
                self._revision = secrets.token_hex(8)
                write_json_atomic(
                    self.path,
                    {
                        "version": SESSION_VERSION,
                        "revision": self._revision,
                        "id": self.id,
                        "task": self.task,
                        "created_at": self.created_at,
                        "updated_at": time.time(),
                        "files": list(mine.values()),
                    },
                )
            self._base = copy.deepcopy(mine)

    def _read_saved(self) -> dict[str, Any] | None:
        """The session file as another process may have left it, or None when absent or unreadable."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def _merge_into(
        self, on_disk: dict[str, Any], mine: dict[str, dict[str, Any]]
    ) -> dict[str, dict[str, Any]]:
        theirs = {r["path"]: r for r in on_disk.get("files", []) if isinstance(r, dict) and "path" in r}
        merged = dict(theirs)
        for path in set(mine) | set(self._base):
            now, before = mine.get(path), self._base.get(path)
            if now == before:
                continue  # this instance did not touch it: the file's version stands
            if now is not None:
                merged[path] = now
            elif theirs.get(path) == before:
                merged.pop(path, None)  # dropped here, and nobody changed it since
        return merged

    # ------------------------------------------------------------------ reading

    @property
    def is_empty(self) -> bool:
        return not self._records

    def _hunk_views(self, rec: _Record) -> list[Hunk]:
        views = file_views(
            rec.path, rec.original, rec.target, _raw_hunks(rec), rec.states, syntax_error=rec.syntax_error
        )
        for c in rec.conflicts:
            views.append(
                Hunk(
                    id=HunkId(c["id"]),
                    path=rec.path,
                    state=rec.states.get(c["id"], "pending"),  # type: ignore[arg-type]
                    old_start=int(c.get("line", 0)),  # where it was (older sessions kept no line: 0)
                    old_count=len(c["old_lines"]),
                    new_start=int(c.get("line", 0)),
                    new_count=len(c["new_lines"]),
                    old_lines=tuple(c["old_lines"]),
                    new_lines=tuple(c["new_lines"]),
                    conflict=True,
                )
            )
        return views

    def _disk_hash(self, rel: str) -> str | None:
        return sha256_bytes(read_bytes_or_none(self.layout.root / rel))

    def _change(self, rec: _Record) -> StagedFile:
        return StagedFile(
            rec.path,
            rec.kind,
            tuple(self._hunk_views(rec)),
            stale=self._disk_hash(rec.path) != rec.base_hash,
            syntax_error=rec.syntax_error,
        )

    def files(self) -> list[StagedFile]:
        """Every staged file with its hunks, in staging order."""
        return [self._change(rec) for rec in self._records.values()]

    def hunks(self) -> list[Hunk]:
        return [h for f in self.files() for h in f.hunks]

    def to_json(self) -> dict[str, Any]:
        files = self.files()
        return {
            "ok": True,
            "session": self.id,
            "task": self.task,
            "files": [f.to_json() for f in files],
            "counts": {
                "files": len(files),
                "hunks": sum(len(f.hunks) for f in files),
                "pending": sum(f.pending for f in files),
                "accepted": sum(f.accepted for f in files),
                "rejected": sum(f.rejected for f in files),
                "conflicts": sum(f.conflicts for f in files),
            },
        }

    # ------------------------------------------------------------------ staging

    def _read_disk(self, rel: str) -> tuple[bytes | None, Path]:
        target = resolve_in_repo(self.layout.root, rel, deny=self.settings.edits.deny)
        data = read_bytes_or_none(target)
        if data is not None:
            check_editable(rel, data, max_bytes=self.settings.edits.max_file_bytes)
        return data, target

    def _new_record(self, rel: str) -> _Record:
        data, target = self._read_disk(rel)
        if data is None:
            return _Record(rel, "create", None, "", "", TextFormat(), None)
        text, fmt = decode(data)
        return _Record(
            rel, "modify", sha256_bytes(data), text, text, fmt, stat.S_IMODE(target.stat().st_mode)
        )

    def _rel(self, path: str) -> str:
        """The real (symlinks resolved) repository-relative path: one file, one record, whatever
        name it was staged under (``sub/m.py`` and ``lnk/m.py`` through a directory link)."""
        rel = normalize_rel(self.layout.root, path)
        return real_rel(
            self.layout.root, resolve_in_repo(self.layout.root, rel, deny=self.settings.edits.deny)
        )

    def _key(self, path: str) -> str:
        """``_rel`` for lookups: a path that cannot be resolved is looked up as written."""
        try:
            return self._rel(path)
        except SandboxError:
            return normalize_rel(self.layout.root, path)

    def _refresh(self, rec: _Record) -> None:
        raws = _raw_hunks(rec)
        raw_ids = {r.id for r in raws}
        # A conflict whose very change now applies cleanly again (re-staged) is resolved.
        resolved = [c for c in rec.conflicts if c["id"] in raw_ids]
        for c in resolved:
            rec.conflicts.remove(c)
            rec.states.pop(c["id"], None)
        live = raw_ids | {c["id"] for c in rec.conflicts}
        rec.states = {k: v for k, v in rec.states.items() if k in live}
        if not raws and not rec.conflicts:
            self._records.pop(rec.path, None)
            return
        rec.syntax_error = self._syntax_error(rec)

    def _syntax_error(self, rec: _Record) -> str | None:
        if rec.kind == "delete":
            return None
        analyze = self._analyze
        if analyze is None:
            try:
                from engine.semantic.extract import analyze_source
            except ImportError:
                return None
            analyze = analyze_source
        try:
            before = analyze(rec.path, rec.original.encode("utf-8")).syntax_errors if rec.original else 0
            after = analyze(rec.path, rec.target.encode("utf-8")).syntax_errors
        except (ImportError, ValueError, LookupError, AttributeError, RuntimeError):
            # The syntax check is advisory: a parser that cannot handle the file never blocks staging.
            return None
        if after > before:
            return f"introduces {plural(after - before, 'syntax error')} (tree-sitter)"
        return None

    def _stage_text(self, rel: str, text: str) -> None:
        rec = self._records.get(rel) or self._new_record(rel)
        if rec.kind == "delete":
            rec.kind = "modify" if rec.base_hash is not None else "create"
        text = text.replace("\r\n", "\n")
        if rec.base_hash is not None:
            text = conform(text, rec.fmt)
        data = encode(text, rec.fmt, rec.original)
        if len(data) > self.settings.edits.max_file_bytes or "\x00" in text:
            check_editable(rel, data, max_bytes=self.settings.edits.max_file_bytes)
            raise FileRefused(f"{rel}: the new content contains a NUL byte", code="BINARY_FILE")
        rec.target = text
        self._records[rel] = rec
        self._refresh(rec)

    def _transaction(self) -> dict[str, _Record]:
        return copy.deepcopy(self._records)

    @_exclusive
    def stage_content(self, path: str, new_text: str) -> StagedFile | None:
        """Stage a whole new content for ``path`` (created if missing); None when it changes nothing."""
        rel = self._rel(path)
        self._stage_text(rel, new_text)
        self.save()
        return self._file(rel)

    @_exclusive
    def stage_blocks(self, blocks: str | Sequence[EditBlock], *, task: str | None = None) -> list[StagedFile]:
        """Stage a model reply (text) or parsed blocks: all of them, or none (EditBlockError)."""
        parsed = (
            parse_blocks(blocks, is_file=repo_file_check(self.layout.root))
            if isinstance(blocks, str)
            else list(blocks)
        )
        if not parsed:
            raise NoEditBlocks("no edit blocks found (expected SEARCH/REPLACE or SYMBOL blocks)")

        def reader(against: str) -> Callable[[str], str | None]:
            def read_file(rel: str) -> str | None:
                rec = self._records.get(rel)
                if rec is not None and against != "disk":
                    if against == "kept":
                        return self._kept_text(rec)
                    return None if rec.kind == "delete" else rec.target
                data, _ = self._read_disk(rel)
                return None if data is None else decode(data)[0]

            return read_file

        def apply(against: str) -> dict[str, str]:
            return apply_blocks(
                self.layout.root,
                parsed,
                reader(against),
                deny=self.settings.edits.deny,
                analyze=self._analyze,
            )

        # The blocks were written against the files on disk (that is what the model was shown):
        # a staged file changed on disk since is rebased first, or no block could match its text.
        stale = self._stale_targets(parsed)
        before = self._transaction() if stale else self._records
        if stale:
            self._rebase_records(stale)
        try:
            try:
                results = apply("staged")
            except EditBlockError as first:
                results = self._retry_blocks(first, apply)
        except EditBlockError:
            self._records = before  # nothing staged, and nothing rebased either
            raise
        return self._stage_results(results, task)

    def _retry_blocks(self, first: EditBlockError, apply: Callable[[str], dict[str, str]]) -> dict[str, str]:
        """The blocks of a reply that failed against the staged text, tried the two other ways
        they may have been meant; ``first`` (reported against the staged text) if neither works.

        A rejected hunk must not stand in the way of a new edit of the same lines: try again
        against the staged text minus its rejected hunks (issue 12, item 3). And the model was
        shown the files on disk, not their staged text: blocks that match the disk are applied
        there, and the file's staged hunks are then placed on the result, as a rebase places
        them on a changed file. A staged hunk that the blocks rewrite makes it a conflict.
        """
        if any(state == "rejected" for rec in self._records.values() for state in rec.states.values()):
            try:
                return apply("kept")
            except EditBlockError:
                pass
        if not any(rec.kind == "modify" for rec in self._records.values()):
            raise first
        try:
            on_disk = apply("disk")
        except EditBlockError:
            raise first from None
        results: dict[str, str] = {}
        for rel, text in on_disk.items():
            rec = self._records.get(rel)
            if rec is None:
                results[rel] = text
                continue
            if rec.kind != "modify":
                raise first
            kept = [raw for raw in _raw_hunks(rec) if rec.states.get(raw.id) != "rejected"]
            merged, _placed, lost, _already = _relocate(rec.original, kept, text)
            if lost:
                first.hint = (
                    f"the reply was written against {rel} as it is on disk, and changes lines that its staged "
                    f"hunk {', '.join('#' + raw.id for raw in lost)} already changes: commit or reject that "
                    "hunk first, or ask again"
                )
                first.note_for_model = (
                    f"{rel} has staged changes that are not on disk yet, so the lines above are its staged "
                    "text, not the file you were shown: write SEARCH against these lines."
                )
                raise first
            results[rel] = merged
        return results

    def _stale_targets(self, blocks: Sequence[EditBlock]) -> set[str]:
        """Staged files that ``blocks`` edit and that changed on disk since they were staged."""
        root = self.layout.root
        out: set[str] = set()
        for block in blocks:
            if not block.path:
                continue
            try:
                rel = real_rel(
                    root,
                    resolve_in_repo(root, normalize_rel(root, block.path), deny=self.settings.edits.deny),
                )
            except SemforaError:
                continue  # apply_blocks reports the path
            rec = self._records.get(rel)
            if rec is not None and self._disk_hash(rel) != rec.base_hash:
                out.add(rel)
        return out

    def _stage_results(self, results: dict[str, str], task: str | None) -> list[StagedFile]:
        before = self._transaction()
        try:
            for rel, text in results.items():
                self._stage_text(rel, text)
        except Exception:
            self._records = before
            raise
        if task:
            self.task = redact(task)  # saved in session.json and used as the commit message
        self.save()
        return [f for f in (self._file(rel) for rel in results) if f is not None]

    def _kept_text(self, rec: _Record) -> str | None:
        """The staged text minus its rejected hunks: what new blocks for this file apply to.

        A rejected hunk is a change the user said no to; a new edit of the same lines must
        match the file as it is, not the refused proposal (issue 12, item 3).
        """
        raws = _raw_hunks(rec)
        kept = {r.id for r in raws if rec.states.get(r.id) != "rejected"}
        if rec.kind == "delete":
            return None if kept else rec.original
        if len(kept) == len(raws):
            return rec.target
        if rec.kind == "create" and not kept:
            return None  # the whole new file was refused: it does not exist for new blocks
        return apply_selected(rec.original, rec.target, raws, kept)

    def kept_text(self, path: str) -> str | None:
        """What ``path`` will read with its pending and accepted hunks (None: it will not
        exist, or it has no staged change)."""
        rec = self._records.get(self._rel(path))
        return None if rec is None else self._kept_text(rec)

    def proposed_text(self, path: str) -> str:
        """The whole proposed (staged) text of ``path``: what its hunks would make it."""
        rel = self._rel(path)
        rec = self._records.get(rel)
        if rec is None:
            raise HunkNotFound(f"{rel} has no staged change")
        return rec.target

    @_exclusive
    def stage_delete(self, path: str) -> StagedFile | None:
        """Stage the deletion of ``path``; dropping a file that was only staged for creation."""
        lexical = normalize_rel(self.layout.root, path)
        if (self.layout.root / lexical).is_symlink():
            # The writer works on resolved targets, so deleting "the link" would delete the file
            # it points to: refuse rather than surprise.
            raise FileRefused(
                f"cannot delete {lexical}: it is a symbolic link; remove the link itself with rm",
                code="SYMLINK_DELETE_REFUSED",
            )
        rel = self._rel(path)
        rec = self._records.get(rel) or self._new_record(rel)
        if rec.base_hash is None:
            if rel in self._records:
                del self._records[rel]
                self.save()
                return None
            raise NotFoundError(f"cannot delete {rel}: it does not exist", code="FILE_NOT_FOUND")
        rec.kind = "delete"
        rec.target = ""
        self._records[rel] = rec
        self._refresh(rec)
        self.save()
        return self._file(rel)

    def _file(self, rel: str) -> StagedFile | None:
        # Only this file's diff: building every file's here made staging n files quadratic.
        rec = self._records.get(rel)
        return None if rec is None else self._change(rec)

    # ------------------------------------------------------------------ review

    def _find(self, hunk: str) -> tuple[_Record, str, bool]:
        key = hunk.strip().lower()
        matches: list[tuple[_Record, str, bool]] = []
        if len(key) >= MIN_ID_PREFIX:
            for rec in self._records.values():
                for r in _raw_hunks(rec):
                    if r.id.startswith(key):
                        matches.append((rec, r.id, False))
                for c in rec.conflicts:
                    if c["id"].startswith(key):
                        matches.append((rec, c["id"], True))
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise HunkNotFound(f"hunk id {hunk!r} is ambiguous ({len(matches)} hunks); type more characters")
        if "/" in key or "." in key:
            # Never an id (ids are hex): a path the user meant as a file, told as such, not "no hunk id".
            raise HunkNotFound(
                f"{hunk.strip()!r} is not a staged file (nor a hunk id)",
                hint="`semfora edits list` shows the ids",
            )
        if 0 < len(key) < MIN_ID_PREFIX:
            raise HunkNotFound(
                f"hunk id {hunk!r} is too short: give at least {MIN_ID_PREFIX} characters of the id",
                hint="`semfora edits list` shows the ids",
            )
        raise HunkNotFound(f"no staged hunk with id {hunk!r}", hint="`semfora edits list` shows the ids")

    @_exclusive
    def _set(self, hunk: str, state: HunkState | None) -> HunkState:
        rec, hid, conflict = self._find(hunk)
        current = rec.states.get(hid, "pending")
        new: HunkState = state or ("rejected" if current == "accepted" else "accepted")
        if conflict and new == "accepted":
            raise EditConflict(
                f"hunk {hid} in {rec.path} conflicts with the file on disk and cannot be accepted",
                paths=(rec.path,),
                hint="reject it, or stage the change again",
            )
        rec.states[hid] = new
        self.save()
        return new

    def accept(self, hunk: str) -> HunkState:
        return self._set(hunk, "accepted")

    def reject(self, hunk: str) -> HunkState:
        return self._set(hunk, "rejected")

    def toggle(self, hunk: str) -> HunkState:
        """pending/rejected → accepted, accepted → rejected; returns the new state."""
        return self._set(hunk, None)

    @_exclusive
    def _set_file(self, path: str, state: HunkState) -> int:
        rel = self._key(path)
        rec = self._records.get(rel)
        if rec is None:
            raise HunkNotFound(f"{rel} has no staged change")
        n = 0
        for r in _raw_hunks(rec):
            rec.states[r.id] = state
            n += 1
        if state == "rejected":
            for c in rec.conflicts:
                rec.states[c["id"]] = state
                n += 1
        self.save()
        return n

    def accept_file(self, path: str) -> int:
        return self._set_file(path, "accepted")

    def reject_file(self, path: str) -> int:
        return self._set_file(path, "rejected")

    def has_file(self, path: str) -> bool:
        try:
            return self._key(path) in self._records
        except SandboxError:  # a malformed or outside path is simply not a staged file
            return False

    @_exclusive
    def _set_all(self, state: HunkState) -> int:
        n = 0
        for rec in self._records.values():
            for r in _raw_hunks(rec):
                rec.states[r.id] = state
                n += 1
        self.save()
        return n

    def accept_all(self) -> int:
        return self._set_all("accepted")

    def reject_all(self) -> int:
        return self._set_all("rejected")

    # ------------------------------------------------------------------ diffs

    @staticmethod
    def _chosen(rec: _Record, raws: Sequence[RawHunk], *, with_pending: bool = False) -> set[str]:
        """The hunks a commit writes: the accepted ones (``with_pending``: the pending ones too)."""
        wanted = ("accepted", "pending") if with_pending else ("accepted",)
        return {r.id for r in raws if rec.states.get(r.id, "pending") in wanted}

    def _accepted_text(self, rec: _Record, *, with_pending: bool = False) -> tuple[str | None, int]:
        raws = _raw_hunks(rec)
        chosen = self._chosen(rec, raws, with_pending=with_pending)
        if not chosen:
            return rec.original, 0
        if rec.kind == "delete":
            return None, 1
        return apply_selected(rec.original, rec.target, raws, chosen), len(chosen)

    def preview(self) -> str:
        """The unified diff of the accepted hunks only (what `commit` would write)."""
        out: list[str] = []
        empty: list[str] = []
        for rec in self._records.values():
            text, n = self._accepted_text(rec)
            if not n:
                continue
            old_name = f"a/{rec.path}" if rec.base_hash is not None else "/dev/null"
            new_name = f"b/{rec.path}" if text is not None else "/dev/null"
            if rec.syntax_error:
                out.append(f"# warning: {rec.path}: {rec.syntax_error}\n")
            if _empty_new_file(rec):
                empty.append(_empty_file_patch(rec.path))
                continue
            out.extend(
                difflib.unified_diff(
                    rec.original.splitlines(True), (text or "").splitlines(True), old_name, new_name
                )
            )
            if out and not out[-1].endswith("\n"):
                out[-1] += "\n\\ No newline at end of file\n"
        return "".join(out + empty)

    def show(self) -> str:
        """Every staged hunk as a unified diff that `git apply` accepts.

        Each hunk header carries its id and state after the closing ``@@`` (where git allows a
        section name); notes, warnings and conflicting hunks (which no longer fit the file) are
        ``#`` lines before the file's ``---`` header, which patch tools skip. A new empty file,
        which a unified diff cannot express, is a git ``new file`` patch at the end.
        """
        out: list[str] = []
        empty: list[str] = []
        for f in self.files():
            rec = self._records[f.path]
            if f.stale:
                out.append(f"# {f.path}: changed on disk since it was staged; run `semfora edits rebase`\n")
            if f.syntax_error:
                out.append(f"# warning: {f.path}: {f.syntax_error}\n")
            for h in f.hunks:
                if h.conflict:
                    out.append(f"# {f.path}: hunk [{h.id}] {h.state} CONFLICT (no longer fits the file):\n")
                    out.extend(f"#   {line}\n" for line in h.lines)
            live = [h for h in f.hunks if not h.conflict]
            if not live:
                continue
            if _empty_new_file(rec):
                empty.append(f"# {f.path}: hunk [{live[0].id}] {live[0].state}: a new empty file\n")
                empty.append(_empty_file_patch(f.path))
                continue
            old_name = f"a/{f.path}" if rec.base_hash is not None else "/dev/null"
            new_name = "/dev/null" if f.kind == "delete" else f"b/{f.path}"
            out.append(f"--- {old_name}\n+++ {new_name}\n")
            states: dict[str, str] = {h.id: h.state for h in live}
            raws = [r for r in _raw_hunks(rec) if r.id in states]
            target = "" if rec.kind == "delete" else rec.target
            body = unified_diff(rec.original, target, raws, functools.partial(_hunk_label, states))
            out.extend(line + "\n" for line in body)
        # Last: after a git header, git apply reads a following '---' line as part of that patch.
        return "".join(out + empty)

    # ------------------------------------------------------------------ commit, rollback, rebase

    def commit(
        self, *, all: bool = False, message: str | None = None, run_checks: bool = True
    ) -> CommitResult:
        """Apply the accepted hunks of every file atomically; the rest stay staged."""
        with edit_lock(self.layout.edits_dir, timeout=self.settings.edits.lock_timeout):
            # Another process may have committed or changed the session while we waited.
            self._reload()
            return self._commit_locked(all=all, message=message, run_checks=run_checks)

    def _reload(self) -> None:
        fresh = EditSession.load_or_create(self.layout, self.settings, analyze=self._analyze)
        # A task set on this instance but not saved yet (the caller's label) survives the reload.
        self.id, self.task, self._records = fresh.id, fresh.task or self.task, fresh._records
        self._base, self._revision = fresh._base, fresh._revision

    def _commit_locked(self, *, all: bool, message: str | None, run_checks: bool) -> CommitResult:
        # `--all` takes the pending hunks as accepted without saving them so: a commit that
        # fails (a conflict, a denied path) leaves every hunk as the user left it.
        writes: list[FileWrite] = []
        texts: dict[str, str | None] = {}
        count = 0
        for rec in self._records.values():
            text, n = self._accepted_text(rec, with_pending=all)
            if not n:
                continue
            count += n
            texts[rec.path] = text
            data = None if text is None else encode(text, rec.fmt, rec.original)
            if data is not None:
                check_editable(rec.path, data, max_bytes=self.settings.edits.max_file_bytes)
            writes.append(FileWrite(rec.path, data, expect_hash=rec.base_hash, mode=rec.mode))
        remaining = sum(len(f.hunks) for f in self.files())
        if not writes:
            # With nothing staged, "nothing accepted (0 hunks staged)" sent the user looking for
            # hunks to accept.
            why = (
                f"nothing accepted: no file was changed ({plural(remaining, 'hunk')} staged)"
                if remaining
                else "nothing to commit: no staged edits"
            )
            return CommitResult(False, why, remaining=remaining)
        label = message or self.task or DEFAULT_COMMIT_MESSAGE
        result = apply_change_set(
            self.layout,
            writes,
            deny=self.settings.edits.deny,
            lock_timeout=self.settings.edits.lock_timeout,
            label=label,
        )
        for rel, text in texts.items():
            rec = self._records[rel]
            if text is None:
                del self._records[rel]
                continue
            accepted = self._chosen(rec, _raw_hunks(rec), with_pending=all)
            written = encode(text, rec.fmt, rec.original)
            rec.original, rec.fmt = decode(written)  # a mixed file's endings are the new file's now
            rec.base_hash = sha256_bytes(written)
            if rec.kind == "create":
                rec.kind = "modify"
                rec.mode = stat.S_IMODE((self.layout.root / rel).stat().st_mode)
            for hid in accepted:
                rec.states.pop(hid, None)
            self._refresh(rec)
        self.save()
        remaining = sum(len(f.hunks) for f in self.files())
        git_result = None
        if self.settings.git.auto_commit:
            git_result = git_commit_paths(self.layout.root, result.files, label)
        checks: list[CheckResult] = []
        if run_checks:
            for name, cmd in (("lint", self.settings.edits.lint_cmd), ("test", self.settings.edits.test_cmd)):
                if cmd:
                    checks.append(run_check(self.layout.root, name, cmd))
        return CommitResult(
            True,
            f"committed {plural(count, 'hunk')} in {plural(len(result.files), 'file')}",
            result.files,
            count,
            result.txid,
            remaining,
            git_result,
            tuple(checks),
        )

    def rollback(self) -> int:
        """Discard the pending session as this instance knows it; returns how many hunks were dropped.

        Not reloaded first: hunks another process staged since this instance last looked
        were never shown to this user, so they stay (``save`` keeps them)."""
        n = sum(len(f.hunks) for f in self.files())
        self._records = {}
        self.task = None
        self.save()
        return n

    @_exclusive
    def rebase(self, only: Collection[str] | None = None) -> RebaseReport:
        """Re-apply staged hunks onto files that changed on disk; mark the ones that no longer fit.

        ``only`` limits it to those paths: after an undo, the files semfora itself put back.
        """
        report = self._rebase_records(only)
        self.save()
        return report

    def _rebase_records(self, only: Collection[str] | None) -> RebaseReport:
        files: list[str] = []
        reapplied: list[str] = []
        conflicts: list[str] = []
        dropped: list[str] = []
        already: list[str] = []
        for rel, rec in list(self._records.items()):
            if only is not None and rel not in only:
                continue
            data, target = self._read_disk(rel)
            if sha256_bytes(data) == rec.base_hash:
                continue
            files.append(rel)
            raws = _raw_hunks(rec)
            if rec.kind == "delete":
                if data is None:
                    del self._records[rel]
                    dropped.append(rel)
                    continue
                rec.original, rec.fmt = decode(data)
                rec.base_hash = sha256_bytes(data)
                self._refresh(rec)
                continue
            if data is None:
                placed: list[RawHunk] = []
                lost = raws
                rec.original, rec.target, rec.base_hash, rec.kind = "", "", None, "create"
            else:
                text, fmt = decode(data)
                if rec.kind == "create" and text == rec.target:
                    del self._records[rel]
                    dropped.append(rel)
                    continue
                if rec.kind == "create":
                    placed, lost, new_target = [], raws, text
                else:
                    new_target, placed, lost, done = _relocate(rec.original, raws, text)
                    already.extend(r.id for r in done)
                rec.original, rec.target, rec.fmt = text, new_target, fmt
                rec.base_hash, rec.kind = sha256_bytes(data), "modify"
                rec.mode = stat.S_IMODE(target.stat().st_mode)
            rec.conflicts.extend(
                {
                    "id": r.id,
                    "old_lines": list(r.old_lines),
                    "new_lines": list(r.new_lines),
                    "line": r.i1 + 1,  # in the file as it was staged: the header says where it was
                }
                for r in lost
            )
            reapplied.extend(r.id for r in placed)
            conflicts.extend(r.id for r in lost)
            self._refresh(rec)
        return RebaseReport(tuple(files), tuple(reapplied), tuple(conflicts), tuple(dropped), tuple(already))
