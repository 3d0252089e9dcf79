"""Where a repository's state lives on disk.

Owns the mapping from a repository to its cache directory
(``$XDG_CACHE_HOME/semfora/<repo-id>/``) and the names of the files inside it.
It creates directories but never opens databases; that is the store's job.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from engine.errors import CacheDirUnwritable, PathError, PathTooBroad
from engine.repo import git


def cache_home() -> Path:
    """The XDG cache home, honouring ``XDG_CACHE_HOME``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "semfora"


def config_home() -> Path:
    """The XDG config directory for semfora, honouring ``XDG_CONFIG_HOME``."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "semfora"


# Seconds a `git rev-parse` may take while resolving a root: it answers at once in a sound repository.
ROOT_GIT_TIMEOUT_S = 10
# The pending edit session inside the cache's edits directory.
EDIT_SESSION_FILE = "session.json"


def _git(root: Path, *args: str) -> str | None:
    return git.output(root, *args, timeout=ROOT_GIT_TIMEOUT_S)


def find_repo_root(path: str | os.PathLike[str] | None = None) -> Path:
    """Resolve ``path`` (default: cwd) to the repository root.

    Inside a git work tree this is the top level; elsewhere it is the directory
    itself, so that a plain directory still works (the tree is walked instead).
    A path that is missing or is not a directory is a ``PathError`` (exit 2).
    """
    start = Path(path) if path is not None else Path.cwd()
    try:
        start = start.expanduser().resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        from engine.errors import PathTooLong, SymlinkLoop

        if isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == errno.ELOOP:
            raise SymlinkLoop(f"{path} goes round a loop of symbolic links") from exc
        if getattr(exc, "errno", None) == errno.ENAMETOOLONG:
            raise PathTooLong(f"path is too long for the file system: {str(path)[:80]}...") from exc
        raise PathError(f"path does not exist: {path}") from exc
    if not start.is_dir():
        # Never the file's parent: `index --path ~/.bashrc` would index the home directory.
        raise PathError(
            f"not a directory: {path} (a repository path must be a directory)",
            hint="pass the repository's directory, or run semfora from inside it",
        )
    top = _git(start, "rev-parse", "--show-toplevel")
    if not top:
        return start
    root = Path(top).resolve()
    # A directory that its enclosing work tree ignores (an unpacked corpus, a scratch
    # checkout) is a project of its own: the enclosing repository would list none of it.
    if root != start and _git(root, "check-ignore", "-q", str(start)) is not None:
        return start
    return root


def check_indexable(root: Path) -> None:
    """Raise PathTooBroad for a root no one means to index: the file system root, or the home
    directory or a shared one (``/tmp``, ``/usr``, ``/home``...) when it is not itself a git work
    tree (a dotfiles repository is fine).

    `semfora mcp` started by a client from ``/`` (Claude Desktop's working directory) or
    `semfora index` typed in ``~`` walked every file below, for hours, into the cache.
    """
    if not root.is_dir():
        # Moved or deleted since a long-lived process (the app, `semfora mcp`) opened it: a run
        # would find no files and empty the index, and every answer after it would be "not found".
        raise PathError(
            f"the repository {root} is gone (moved or deleted since semfora opened it)",
            hint="open semfora on its new path (an MCP server: restart it on the new path)",
        )
    home = Path.home().expanduser().resolve()
    if root == Path(root.anchor):
        what = "the root of the file system"
    elif (root / ".git").exists():
        return
    elif root == home:
        what = "your home directory"
    elif root in _shared_dirs():
        what = "a shared directory (temporary files, system files or every user's home)"
    else:
        return
    raise PathTooBroad(
        f"{root} is {what}, not a project: semfora does not index all of it",
        hint="run semfora inside a repository, or give it the repository's directory as its path",
    )


# Directories that hold many unrelated things and never one project: `--path /tmp` walked
# every project anyone had unpacked there (37,742 files on this machine).
SHARED_DIRS = (
    "/tmp",
    "/var",
    "/var/tmp",
    "/usr",
    "/usr/local",
    "/opt",
    "/etc",
    "/home",
    "/Users",
    "/mnt",
    "/media",
    "/srv",
)


def _shared_dirs() -> set[Path]:
    import tempfile

    dirs = {Path(d).resolve() for d in SHARED_DIRS}  # macOS: /tmp is /private/tmp
    return dirs | {Path(tempfile.gettempdir()).resolve()}


def _make_writable_dir(path: Path) -> None:
    """Create ``path`` (mode 0700) if needed; CacheDirUnwritable when it cannot be made or written.

    Every command writes its cache (the index lock, the databases), so a read-only file system
    or a foreign-owned directory is said once, here, instead of as a traceback from the first write.
    """
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise _unwritable(path, exc.strerror or str(exc)) from exc
    if not os.access(path, os.W_OK | os.X_OK):
        raise _unwritable(path, "it is not writable")


def _unwritable(path: Path, why: str) -> CacheDirUnwritable:
    return CacheDirUnwritable(
        f"cannot write semfora's cache directory {path}: {why}",
        hint="point XDG_CACHE_HOME at a writable directory, or make this one writable",
    )


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[:40] or "repo"


def working_tree_id(root: str | os.PathLike[str]) -> str:
    """The cache identity of one working tree: its directory name and a hash of its real path.

    Per working tree, not per name and remote: two clones of one remote (or two git worktrees)
    are different trees with different files, and an edit staged in one must never be
    committed into the other. Moving a clone to a new path starts a new cache.
    """
    real = os.path.realpath(os.fspath(root))
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return f"{_slug(Path(real).name)}-{digest}"


@dataclass(frozen=True)
class RepoLayout:
    """The repository root and every path semfora keeps for it."""

    root: Path

    @classmethod
    def for_path(cls, path: str | os.PathLike[str] | None = None) -> RepoLayout:
        return cls(find_repo_root(path))

    @cached_property
    def is_git(self) -> bool:
        return (self.root / ".git").exists() or _git(self.root, "rev-parse", "--git-dir") is not None

    @cached_property
    def repo_id(self) -> str:
        """Stable per working tree (see ``working_tree_id``)."""
        return working_tree_id(self.root)

    @cached_property
    def cache_dir(self) -> Path:
        # Only the user may list or read a cache: it holds source excerpts, sessions and backups.
        path = cache_home() / self.repo_id
        _make_writable_dir(path)
        return path

    def ensure_cache_dir(self) -> Path:
        """``cache_dir``, made again if it was removed since (a user clearing ~/.cache/semfora
        under a running server: its next index run then failed on a missing index.lock)."""
        _make_writable_dir(self.cache_dir)
        return self.cache_dir

    @property
    def index_db(self) -> Path:
        return self.cache_dir / "index.db"

    @property
    def cache_db(self) -> Path:
        return self.cache_dir / "cache.db"

    @property
    def metrics_db(self) -> Path:
        return self.cache_dir / "metrics.db"

    @property
    def chroma_dir(self) -> Path:
        return self.cache_dir / "chroma"

    def subdir(self, name: str) -> Path:
        """``sessions``, ``runs`` or ``edits``: created on first use."""
        path = self.cache_dir / name
        _make_writable_dir(path)
        return path

    @property
    def sessions_dir(self) -> Path:
        return self.subdir("sessions")

    @property
    def runs_dir(self) -> Path:
        return self.subdir("runs")

    @property
    def edits_dir(self) -> Path:
        return self.subdir("edits")

    @property
    def edit_session_file(self) -> Path:
        """The pending edit session, which every semfora process (app, CLI, MCP) reads and writes."""
        return self.edits_dir / EDIT_SESSION_FILE

    def relpath(self, path: str | os.PathLike[str]) -> str:
        """A repository-relative POSIX path for ``path`` (absolute or relative)."""
        p = Path(path)
        if p.is_absolute():
            p = p.relative_to(self.root)
        return p.as_posix()
