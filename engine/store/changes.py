"""What changed in the work tree since the last index run, asked of git instead of the disk.

Owns ``WorktreeState`` (HEAD, the dirty paths with their stat, and the settings that shape
discovery) and ``changed_since``: the paths that may differ from what the last run indexed,
or None when only a full discovery can tell. Git answers from its own index in C
(`git status`), so a run over a large unchanged tree never stats every file from Python.
It never decides what to parse: the indexer compares the paths it is given with its rows.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from engine.config import IndexSettings, Settings
from engine.repo import git
from engine.store.schema import SCHEMA_VERSION

# Seconds `git status` / `git diff` may take before the caller falls back to a full discovery.
GIT_TIMEOUT_S = 60
# Changed paths whose name means the rules of discovery itself may have changed: a full scan.
RULE_FILES = frozenset({".gitignore", ".semfora.toml"})
# Above this many paths that changed, a full discovery (one `git ls-files`) is simpler and as fast.
MAX_SCOPED_PATHS = 20_000
# Bumped when the meaning of a recorded state changes, so an old record forces one full scan.
STATE_FORMAT = 1


@dataclass(frozen=True)
class WorktreeState:
    """The git view of the work tree at the end of one index run."""

    head: str | None  # None before the first commit
    # Paths git reports as modified, added, deleted or untracked, with (size, mtime_ns) or None if absent.
    dirty: dict[str, tuple[int, int] | None]
    settings_key: str

    def to_json(self) -> str:
        return json.dumps(
            {
                "format": STATE_FORMAT,
                "head": self.head,
                "dirty": {p: list(v) if v else None for p, v in sorted(self.dirty.items())},
                "settings": self.settings_key,
            },
            separators=(",", ":"),
        )

    @property
    def token(self) -> str:
        """A short digest naming this state (the text index records which state it matches)."""
        return hashlib.sha256(self.to_json().encode()).hexdigest()[:16]

    @classmethod
    def from_json(cls, text: str | None) -> WorktreeState | None:
        if not text:
            return None
        try:
            data = json.loads(text)
            if data.get("format") != STATE_FORMAT:
                return None
            dirty = {str(p): (int(v[0]), int(v[1])) if v else None for p, v in data["dirty"].items()}
            return cls(data["head"], dirty, str(data["settings"]))
        except (ValueError, KeyError, TypeError, IndexError):
            return None


def settings_key(settings: IndexSettings, extra: str = "") -> str:
    """The discovery settings (and anything else the caller adds) as one digest."""
    raw = json.dumps(
        {"exclude": sorted(settings.exclude_dirs), "max": settings.max_file_bytes, "extra": extra},
        sort_keys=True,
    )
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def discovery_key(settings: Settings) -> str:
    """What decides which files an index holds (excluded directories, the size limit and the
    secret deny-list) and how (the schema), as one digest: another key means another set of files."""
    return settings_key(settings.index, extra=f"schema{SCHEMA_VERSION};deny={sorted(settings.edits.deny)}")


def _git(root: Path, *args: str) -> bytes | None:
    # --no-optional-locks: never write the user's .git/index (git status would refresh it).
    proc = git.run(root, *args, timeout=GIT_TIMEOUT_S, no_optional_locks=True)
    return proc.stdout if proc is not None and proc.returncode == 0 else None


def _stat(root: Path, rel: str) -> tuple[int, int] | None:
    try:
        st = os.lstat(os.path.join(root, rel))
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


def capture(root: Path, key: str) -> WorktreeState | None:
    """The work tree's state now, or None outside a git work tree (or when git fails)."""
    if not (root / ".git").exists():
        return None
    out = _git(root, "status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all", "--no-renames")
    if out is None:
        return None
    head: str | None = None
    dirty: dict[str, tuple[int, int] | None] = {}
    for entry in out.decode("utf-8", "surrogateescape").split("\0"):
        if not entry:
            continue
        if entry.startswith("# branch.oid "):
            oid = entry[len("# branch.oid ") :].strip()
            head = None if oid == "(initial)" else oid
            continue
        path = _entry_path(entry)
        if path is not None:
            dirty[path] = _stat(root, path)
    return WorktreeState(head, dirty, key)


def _entry_path(entry: str) -> str | None:
    """The path of one `git status --porcelain=v2 -z` entry (renames are off: one path each)."""
    kind = entry[:2]
    if kind in ("? ", "! "):
        return entry[2:]
    # "1 XY sub mH mI mW hH hI path" and "u XY sub m1 m2 m3 mW h1 h2 h3 path"
    fields = {"1 ": 8, "u ": 10}.get(kind)
    if fields is None:
        return None
    parts = entry.split(" ", fields)
    return parts[fields] if len(parts) > fields else None


def changed_since(root: Path, before: WorktreeState | None, now: WorktreeState | None) -> set[str] | None:
    """Paths that may differ from what the run that recorded ``before`` indexed.

    None means git cannot tell (no state recorded, not a git tree, different settings, the old
    HEAD is gone, or discovery rules changed): the caller must discover the whole tree.
    """
    if before is None or now is None or before.settings_key != now.settings_key:
        return None
    paths: set[str] = set()
    if before.head != now.head:
        if before.head is None or now.head is None:
            return None
        out = _git(root, "diff", "--name-only", "-z", "--no-renames", before.head, now.head, "--")
        if out is None:
            return None
        paths.update(p for p in out.decode("utf-8", "surrogateescape").split("\0") if p)
    for path in set(before.dirty) | set(now.dirty):
        if before.dirty.get(path, ...) != now.dirty.get(path, ...):
            paths.add(path)
    if len(paths) > MAX_SCOPED_PATHS or _touches_rules(paths):
        return None
    return paths


def _touches_rules(paths: Iterable[str]) -> bool:
    return any(p.rpartition("/")[2] in RULE_FILES for p in paths)
