"""The FileWriter: an all-or-nothing multi-file write with a journal, backups and recovery.

``apply_change_set`` follows the six steps of issue 4 (temp files, journal,
backups, ``os.replace``, directory fsync, journal complete); ``recover`` rolls an
interrupted one back from its backups. It knows nothing of hunks or sessions.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from engine.edits.errors import EditConflict, EditWriteFailed, JournalCorrupt
from engine.edits.faults import fault_point
from engine.edits.lock import edit_lock
from engine.edits.sandbox import resolve_in_repo
from engine.edits.textformat import sha256_bytes
from engine.errors import LockBusy
from engine.repo.layout import RepoLayout
from engine.words import plural

JOURNAL_VERSION = 1
# Permission bits of a created file before the umask, as `open(..., "w")` would use.
NEW_FILE_MODE = 0o666


@dataclass(frozen=True)
class FileWrite:
    """One target of a change set: new bytes (None deletes) and the hash expected on disk now."""

    rel: str
    data: bytes | None
    expect_hash: str | None
    mode: int | None = None


@dataclass(frozen=True)
class JournalEntry:
    rel: str
    target: str
    tmp: str | None
    backup: str | None
    old_hash: str | None
    new_hash: str | None
    existed: bool
    old_mode: int | None
    new_mode: int | None


@dataclass(frozen=True)
class WriteResult:
    """A completed change set: its id, the files it touched, and its undo record if kept."""

    txid: str
    files: tuple[str, ...]
    history: Path | None


@dataclass(frozen=True)
class RecoveryReport:
    """What start-up recovery did with interrupted commits."""

    rolled_back: tuple[str, ...]
    restored: tuple[str, ...]
    completed: tuple[str, ...]
    problems: tuple[str, ...]

    @property
    def message(self) -> str:
        parts = []
        if self.rolled_back:
            files = ", ".join(self.restored) or "no file needed restoring"
            parts.append(
                f"recovered {plural(len(self.rolled_back), 'interrupted commit')} by rolling back ({files})"
            )
        if self.completed:
            parts.append(f"finished recording {plural(len(self.completed), 'completed commit')}")
        parts.extend(self.problems)
        return "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "message": self.message}


# ---------------------------------------------------------------------------- small durable I/O


def _dirs(layout: RepoLayout) -> tuple[Path, Path, Path]:
    base = layout.edits_dir
    out = (base / "journal", base / "backups", base / "history")
    for d in out:
        d.mkdir(parents=True, exist_ok=True)
    return out


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_durable(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` (created or truncated) and fsync it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        if mode is not None:
            os.fchmod(fd, mode)
        os.fsync(fd)
    finally:
        os.close(fd)


def write_json_atomic(path: Path, payload: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    write_durable(tmp, json.dumps(payload, indent=1, ensure_ascii=False).encode("utf-8"))
    os.replace(tmp, path)
    fsync_dir(path.parent)


def read_bytes_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


# ---------------------------------------------------------------------------- commit


def _new_txid() -> str:
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + secrets.token_hex(4)


def apply_change_set(
    layout: RepoLayout,
    writes: Sequence[FileWrite],
    *,
    deny: Sequence[str] | None = None,
    lock_timeout: float = 10.0,
    label: str = "",
    record_history: bool = True,
    undoes: str | None = None,
) -> WriteResult:
    """Write every target or none. Raises EditConflict, EditWriteFailed, LockBusy or a sandbox error."""
    journal_dir, backups_dir, history_dir = _dirs(layout)
    with edit_lock(layout.edits_dir, timeout=lock_timeout):
        _recover_locked(layout)
        resolved: list[tuple[FileWrite, Path, bytes | None]] = []
        stale: list[str] = []
        for w in writes:
            target = resolve_in_repo(layout.root, w.rel, deny=deny)
            current = read_bytes_or_none(target)
            if sha256_bytes(current) != w.expect_hash:
                stale.append(w.rel)
            resolved.append((w, target, current))
        if stale:
            raise EditConflict(
                f"changed on disk since they were staged: {', '.join(stale)}; nothing was written",
                paths=tuple(stale),
                hint="run `semfora edits rebase` to re-apply the staged hunks",
            )
        txid = _new_txid()
        journal_path = journal_dir / f"{txid}.json"
        intent_path = journal_dir / f"{txid}.intent.json"
        backup_dir = backups_dir / txid
        created_dirs: list[str] = []
        entries: list[JournalEntry] = []
        journal: dict[str, Any] | None = None
        umask = _umask()
        # Step 0 (bookkeeping): name the temp files so a crash before the journal leaves no litter.
        tmps = {
            w.rel: str(t.parent / f".{t.name}.semfora-{txid}.tmp")
            for w, t, _ in resolved
            if w.data is not None
        }
        try:
            write_json_atomic(
                intent_path, {"txid": txid, "tmps": list(tmps.values()), "created_dirs": created_dirs}
            )
            # Step 1: each new content to a temp file beside its target, fsynced.
            for w, target, current in resolved:
                old_mode = stat.S_IMODE(target.stat().st_mode) if current is not None else None
                new_mode = None
                tmp = tmps.get(w.rel)
                if w.data is not None and tmp is not None:
                    missing = []
                    parent = target.parent
                    while not parent.exists():
                        missing.append(parent)
                        parent = parent.parent
                    for d in reversed(missing):
                        d.mkdir()
                        created_dirs.append(str(d))
                    if missing:
                        write_json_atomic(
                            intent_path,
                            {"txid": txid, "tmps": list(tmps.values()), "created_dirs": created_dirs},
                        )
                    new_mode = w.mode if w.mode is not None else old_mode
                    if new_mode is None:
                        new_mode = NEW_FILE_MODE & ~umask
                    write_durable(Path(tmp), w.data, new_mode)
                    fault_point("after_tmp")
                backup = str(backup_dir / str(len(entries))) if current is not None else None
                entries.append(
                    JournalEntry(
                        rel=w.rel,
                        target=str(target),
                        tmp=tmp,
                        backup=backup,
                        old_hash=sha256_bytes(current),
                        new_hash=sha256_bytes(w.data),
                        existed=current is not None,
                        old_mode=old_mode,
                        new_mode=new_mode,
                    )
                )
            # Step 2: the journal, fsynced: targets, backups, old and new hashes.
            journal = {
                "version": JOURNAL_VERSION,
                "txid": txid,
                "state": "prepared",
                "label": label,
                "created_at": time.time(),
                "record_history": record_history,
                "undoes": undoes,
                "created_dirs": created_dirs,
                "entries": [asdict(e) for e in entries],
            }
            write_json_atomic(journal_path, journal)
            fault_point("after_journal")
            # Step 3: each original to the backup area (and check nobody changed it meanwhile).
            backup_dir.mkdir(parents=True, exist_ok=True)
            for e in entries:
                if e.backup is None:
                    continue
                data = Path(e.target).read_bytes()
                if sha256_bytes(data) != e.old_hash:
                    raise _ChangedUnderUs(e.rel)
                write_durable(Path(e.backup), data, 0o600)
                fault_point("after_backup")
            fsync_dir(backup_dir)
            # Step 4: replace (or delete) each target.
            for e in entries:
                if e.tmp is not None:
                    os.replace(e.tmp, e.target)
                else:
                    os.unlink(e.target)
                fault_point("after_replace")
            # Step 5: fsync every directory that gained or lost a name.
            touched = {str(Path(e.target).parent) for e in entries} | {
                str(Path(c).parent) for c in created_dirs
            }
            for dirname in sorted(touched):
                fsync_dir(Path(dirname))
            fault_point("after_fsync")
            # Step 6: mark the journal complete.
            journal["state"] = "complete"
            write_json_atomic(journal_path, journal)
            fault_point("after_complete")
        except (OSError, _ChangedUnderUs) as exc:
            if journal is not None and journal["state"] == "complete":
                raise EditWriteFailed(f"could not finish recording commit {txid}: {exc}") from exc
            _undo_partial(layout, journal, intent_path, journal_path, tmps, created_dirs)
            if isinstance(exc, _ChangedUnderUs):
                raise EditConflict(
                    f"{exc.rel} changed on disk during the commit; nothing was written", paths=(exc.rel,)
                ) from None
            raise EditWriteFailed(
                f"writing the commit failed ({exc.strerror or exc}); every file was left as it was",
                hint="free disk space or fix permissions, then commit again",
            ) from exc
        history = _finish(layout, journal, journal_path)
        return WriteResult(txid=txid, files=tuple(e.rel for e in entries), history=history)


class _ChangedUnderUs(Exception):
    def __init__(self, rel: str) -> None:
        super().__init__(rel)
        self.rel = rel


def _undo_partial(
    layout: RepoLayout,
    journal: dict[str, Any] | None,
    intent_path: Path,
    journal_path: Path,
    tmps: dict[str, str],
    created_dirs: list[str],
) -> None:
    if journal is not None:
        _rollback(layout, journal, journal_path)
    else:
        for tmp in tmps.values():
            Path(tmp).unlink(missing_ok=True)
        remove_empty_dirs(created_dirs)
    intent_path.unlink(missing_ok=True)


def remove_empty_dirs(created_dirs: Sequence[str]) -> None:
    for d in reversed(created_dirs):
        path = Path(d)
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()


def _rollback(layout: RepoLayout, journal: dict[str, Any], journal_path: Path) -> tuple[list[str], list[str]]:
    """Put every target of ``journal`` back to its old content; returns (restored, problems)."""
    restored: list[str] = []
    problems: list[str] = []
    txid = journal["txid"]
    dirs: set[str] = set()
    for raw in reversed(journal["entries"]):
        e = JournalEntry(**raw)
        target = Path(e.target)
        dirs.add(str(target.parent))
        if e.tmp:
            Path(e.tmp).unlink(missing_ok=True)
        current = sha256_bytes(read_bytes_or_none(target))
        if current == e.old_hash:
            continue
        if current != e.new_hash:
            problems.append(
                f"{e.rel} was changed by something else after the interrupted commit; left as it is"
            )
            continue
        if not e.existed:
            target.unlink()
            restored.append(e.rel)
            continue
        data = read_bytes_or_none(Path(e.backup)) if e.backup else None
        if data is None or sha256_bytes(data) != e.old_hash:
            problems.append(f"{e.rel}: its backup is missing or damaged; left as it is")
            continue
        tmp = target.parent / f".{target.name}.semfora-{txid}.restore"
        write_durable(tmp, data, e.old_mode)
        os.replace(tmp, target)
        restored.append(e.rel)
    for d in dirs:
        if Path(d).is_dir():
            fsync_dir(Path(d))
    remove_empty_dirs(journal.get("created_dirs", []))
    _, backups_dir, _ = _dirs(layout)
    if problems:
        journal["state"] = "failed"
        journal["problems"] = problems
        write_json_atomic(journal_path.with_name(f"{txid}.failed.json"), journal)
    else:
        _remove_tree(backups_dir / txid)
    journal_path.unlink(missing_ok=True)
    (journal_path.parent / f"{txid}.intent.json").unlink(missing_ok=True)
    return restored, problems


def _remove_tree(path: Path) -> None:
    if not path.exists():
        return
    for child in path.iterdir():
        child.unlink()
    path.rmdir()


def _next_seq(history_dir: Path) -> int:
    seqs = [
        int(p.name.split("-", 1)[0]) for p in history_dir.glob("*.json") if p.name.split("-", 1)[0].isdigit()
    ]
    return max(seqs, default=0) + 1


def _finish(layout: RepoLayout, journal: dict[str, Any], journal_path: Path) -> Path | None:
    """After step 6: file the journal as an undo record (or drop it) and tidy up."""
    journal_dir, backups_dir, history_dir = _dirs(layout)
    txid = journal["txid"]
    undoes = journal.get("undoes")
    if undoes:
        for old in history_dir.glob(f"*-{undoes}.json"):
            old.unlink()
        _remove_tree(backups_dir / undoes)
    history: Path | None = None
    if journal.get("record_history", True):
        history = history_dir / f"{_next_seq(history_dir):06d}-{txid}.json"
        os.replace(journal_path, history)
        fsync_dir(history_dir)
    else:
        journal_path.unlink(missing_ok=True)
        _remove_tree(backups_dir / txid)
    (journal_dir / f"{txid}.intent.json").unlink(missing_ok=True)
    fsync_dir(journal_dir)
    return history


# ---------------------------------------------------------------------------- recovery


# ---------------------------------------------------------------------------- reading records

_ENTRY_TYPES: dict[str, tuple[type, ...]] = {
    "rel": (str,),
    "target": (str,),
    "tmp": (str, type(None)),
    "backup": (str, type(None)),
    "old_hash": (str, type(None)),
    "new_hash": (str, type(None)),
    "existed": (bool,),
    "old_mode": (int, type(None)),
    "new_mode": (int, type(None)),
}


def parse_record(path: Path) -> dict[str, Any]:
    """A journal or undo record, checked field by field; ValueError says what is wrong.

    Valid JSON of the wrong shape (``null``, a string where a list belongs) must be caught
    here: recovery runs before every `edits` command, and a crash there blocks them all.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text (byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at line {exc.lineno})") from exc
    if not isinstance(data, dict):
        raise ValueError(f"a {type(data).__name__} where an object belongs")
    if not isinstance(data.get("txid"), str) or not data["txid"]:
        raise ValueError("no transaction id ('txid')")
    entries = data.get("entries")
    if not isinstance(entries, list):
        raise ValueError("'entries' is not a list")
    for n, entry in enumerate(entries):
        if not isinstance(entry, dict) or set(entry) != set(_ENTRY_TYPES):
            raise ValueError(f"entry {n} does not have the fields of a file write")
        for key, types in _ENTRY_TYPES.items():
            if not isinstance(entry[key], types) or (bool in types) != isinstance(entry[key], bool):
                raise ValueError(f"entry {n}: '{key}' has the wrong type")
    for key in ("created_dirs",):
        if key in data and not (isinstance(data[key], list) and all(isinstance(d, str) for d in data[key])):
            raise ValueError(f"'{key}' is not a list of paths")
    return data


def _journal_problem(path: Path, why: str) -> JournalCorrupt:
    return JournalCorrupt(
        f"the journal of an interrupted commit, {path}, cannot be read ({why}): semfora cannot tell which "
        "files it half-wrote, so it writes nothing until it is dealt with",
        hint=f"check the files it names with `git status`/`git diff` (backups are in {path.parent.parent / 'backups'}), "
        f"then move it aside: mv '{path}' '{path}.bad'",
    )


def _recover_locked(layout: RepoLayout, *, strict: bool = True) -> RecoveryReport | None:
    """Roll back or finish interrupted commits. An unreadable journal raises JournalCorrupt when
    ``strict`` (before a write), and is reported as a problem otherwise (reads go on)."""
    journal_dir, _, _ = _dirs(layout)
    rolled: list[str] = []
    restored: list[str] = []
    completed: list[str] = []
    problems: list[str] = []
    for path in sorted(journal_dir.glob("*.json")):
        name = path.name
        if name.endswith((".intent.json", ".failed.json")):
            continue
        try:
            journal = parse_record(path)
        except (OSError, ValueError) as exc:
            problem = _journal_problem(path, str(exc))
            if strict:
                raise problem from exc
            problems.append(f"{problem.message}; {problem.hint}")
            continue
        if journal.get("state") == "complete":
            _finish(layout, journal, path)
            completed.append(journal["txid"])
        else:
            done, trouble = _rollback(layout, journal, path)
            rolled.append(journal["txid"])
            restored.extend(done)
            problems.extend(trouble)
    for intent in sorted(journal_dir.glob("*.intent.json")):
        txid = intent.name[: -len(".intent.json")]
        if (journal_dir / f"{txid}.json").exists():
            continue
        try:
            data = json.loads(intent.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = None
        if not (
            isinstance(data, dict)
            and all(
                isinstance(data.get(key, []), list) and all(isinstance(x, str) for x in data.get(key, []))
                for key in ("tmps", "created_dirs")
            )
        ):
            # It only lists temp files to remove: nothing is lost by setting it aside.
            problems.append(
                f"unreadable commit intent {intent.name}; set aside (stray temp files may remain)"
            )
            os.replace(intent, intent.with_name(intent.name.replace(".json", ".failed.json")))
            continue
        for tmp in data.get("tmps", []):
            if Path(tmp).exists():
                Path(tmp).unlink()
                if txid not in rolled:
                    rolled.append(txid)
        remove_empty_dirs(data.get("created_dirs", []))
        intent.unlink()
    for stray in journal_dir.glob("*.json.tmp"):
        stray.unlink()
    if not (rolled or completed or problems):
        return None
    return RecoveryReport(tuple(rolled), tuple(restored), tuple(completed), tuple(problems))


def recover(layout: RepoLayout, *, lock_timeout: float = 2.0) -> RecoveryReport | None:
    """Roll back any interrupted commit (called at start-up); None when there was nothing to do.

    If another live process holds the edit lock, its journal is not interrupted,
    so recovery is skipped rather than fighting it.
    """
    try:
        with edit_lock(layout.edits_dir, timeout=lock_timeout):
            return _recover_locked(layout, strict=False)
    except LockBusy:
        return None


def history_records(layout: RepoLayout) -> list[dict[str, Any]]:
    """Completed change sets that can be undone, oldest first.

    An unreadable record is listed as ``{"_path": ..., "_corrupt": why}``: undo refuses at it
    (HistoryCorrupt) rather than skip to an older change set the user did not mean.
    """
    _, _, history_dir = _dirs(layout)
    out: list[dict[str, Any]] = []
    for path in sorted(history_dir.glob("*.json")):
        try:
            data = parse_record(path)
        except (OSError, ValueError) as exc:
            data = {"_corrupt": str(exc)}
        data["_path"] = str(path)
        out.append(data)
    return out
