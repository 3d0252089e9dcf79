"""Multi-level undo of committed change sets, from the backups the writer kept.

The newest undo record is reverted through the same atomic writer (so an undo
is itself crash-safe) and then dropped. Refuses when a file changed after the
commit unless forced. Knows nothing of the pending session.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.edits.errors import HistoryCorrupt, NothingToUndo, UndoRefused
from engine.edits.lock import edit_lock
from engine.edits.textformat import sha256_bytes
from engine.edits.writer import (
    FileWrite,
    JournalEntry,
    apply_change_set,
    history_records,
    read_bytes_or_none,
    remove_empty_dirs,
)
from engine.repo.layout import RepoLayout


@dataclass(frozen=True)
class UndoResult:
    """One reverted change set: its id, the files put back, and whether --force was needed."""

    txid: str
    files: tuple[str, ...]
    forced: tuple[str, ...] = ()
    remaining: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": True,
            "undone": self.txid,
            "files": list(self.files),
            "forced": list(self.forced),
            "remaining": self.remaining,
        }


def undo(
    layout: RepoLayout, *, force: bool = False, deny: Sequence[str] | None = None, lock_timeout: float = 10.0
) -> UndoResult:
    """Revert the newest committed change set exactly (created files removed, deleted ones restored)."""
    with edit_lock(layout.edits_dir, timeout=lock_timeout):
        records = history_records(layout)
        if not records:
            raise NothingToUndo("nothing to undo: no committed change set in the history")
        record = records[-1]
        if "_corrupt" in record:
            path = record["_path"]
            raise HistoryCorrupt(
                f"the undo record of the last commit, {path}, cannot be read ({record['_corrupt']}); "
                "that change set cannot be undone automatically",
                hint=f"restore its files with git if needed, then move the record aside (mv '{path}' '{path}.bad') "
                "to undo older change sets",
            )
        entries = [JournalEntry(**raw) for raw in record["entries"]]
        changed: list[str] = []
        writes: list[FileWrite] = []
        for e in entries:
            current = sha256_bytes(read_bytes_or_none(Path(e.target)))
            if current != e.new_hash:
                changed.append(e.rel)
            if current == e.old_hash:
                continue
            if e.existed:
                data = read_bytes_or_none(Path(e.backup)) if e.backup else None
                if data is None or sha256_bytes(data) != e.old_hash:
                    raise UndoRefused(
                        f"the backup of {e.rel} is missing or damaged; cannot undo", paths=(e.rel,)
                    )
                writes.append(FileWrite(e.rel, data, expect_hash=current, mode=e.old_mode))
            else:
                writes.append(FileWrite(e.rel, None, expect_hash=current))
        if changed and not force:
            raise UndoRefused(
                f"changed since the commit: {', '.join(changed)}; undo would overwrite those changes",
                paths=tuple(changed),
                hint="use `semfora edits undo --force` to revert anyway",
            )
        apply_change_set(
            layout,
            writes,
            deny=deny,
            lock_timeout=lock_timeout,
            label=f"undo {record['txid']}",
            record_history=False,
            undoes=record["txid"],
        )
        remove_empty_dirs(record.get("created_dirs", []))
        return UndoResult(
            txid=record["txid"],
            files=tuple(e.rel for e in entries),
            forced=tuple(changed),
            remaining=len(records) - 1,
        )
