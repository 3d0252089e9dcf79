"""The path sandbox: where a repository path really leads, and whether semfora may read or write it.

Owns ``resolve`` (lexical checks, then the real path through every symlink, then the same checks
again), ``classify`` (the kind of a path after resolution, never raising) and ``read_bytes`` /
``read_text`` (open the resolved file without following a link, regular files only). Reads are
sandboxed exactly like writes: outside the root, inside ``.git``, on the deny-list, through a
loop, too long or malformed is refused with a typed error. It never writes.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.errors import NotFoundError, PathDenied, PathTooLong, SecretPathDenied, SymlinkLoop
from engine.policy.names import DEFAULT_DENY, has_invisible, is_git_component, is_secret_name
from engine.policy.paths import PathKind, classify_path

# The longest file name (one path component) Linux and macOS file systems accept, in bytes.
NAME_MAX_BYTES = 255
# The longest path the kernel resolves (PATH_MAX), in bytes.
PATH_MAX_BYTES = 4096
# Binary sniffing looks at this many leading bytes for a NUL, like git does.
BINARY_SNIFF_BYTES = 8000


def _inside(child: str, root: str) -> bool:
    return child == root or child.startswith(root.rstrip(os.sep) + os.sep)


def check_raw(raw: object) -> str:
    """``raw`` as a usable path string, or PathDenied/PathTooLong for what no file system means."""
    if isinstance(raw, os.PathLike):
        raw = os.fspath(raw)
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "surrogateescape")
    if not isinstance(raw, str) or not raw.strip():
        raise PathDenied("empty path", code="PATH_INVALID")
    if "\x00" in raw:
        raise PathDenied(f"path contains a NUL byte: {raw[:80]!r}", code="PATH_INVALID")
    if has_invisible(raw) or any(unicodedata.category(ch) == "Cc" for ch in raw):
        raise PathDenied(f"path contains control or invisible characters: {raw[:80]!r}", code="PATH_INVALID")
    encoded = raw.encode("utf-8", "surrogateescape")
    if len(encoded) > PATH_MAX_BYTES:
        raise PathTooLong(f"path is {len(encoded)} bytes long; the limit is {PATH_MAX_BYTES}")
    for part in raw.split("/"):
        size = len(part.encode("utf-8", "surrogateescape"))
        if size > NAME_MAX_BYTES:
            raise PathTooLong(f"a name in the path is {size} bytes long; the limit is {NAME_MAX_BYTES}")
    return raw


def normalize_rel(
    root: str | os.PathLike[str], path: str | os.PathLike[str], *, allow_root: bool = False
) -> str:
    """The repository-relative POSIX form of ``path``, checked lexically only (no disk access)."""
    raw = check_raw(path)
    root_s = os.path.abspath(os.fspath(root))
    joined = raw if os.path.isabs(raw) else os.path.join(root_s, raw)
    normal = os.path.normpath(joined)
    if normal == root_s:
        if allow_root:
            return "."
        raise PathDenied(f"path names the repository root, not a file: {raw}", code="PATH_INVALID")
    if not _inside(normal, root_s):
        raise PathDenied(f"path is outside the repository: {raw}")
    rel = Path(os.path.relpath(normal, root_s)).as_posix()
    if rel == ".." or rel.startswith("../"):
        raise PathDenied(f"path is outside the repository: {raw}")
    return posixpath.normpath(rel)


def _check_rel(rel: str, shown: str, deny: Sequence[str], *, resolved: bool) -> None:
    if rel == ".":
        return
    how = "resolves into" if resolved else "is inside"
    if any(is_git_component(p) for p in rel.split("/")):
        raise PathDenied(f"{shown} {how} the git directory", code="GIT_DIR_DENIED")
    if is_secret_name(rel, deny):
        target = f" ({rel})" if resolved and rel != shown else ""
        raise SecretPathDenied(f"{shown}{target} is on the secret deny-list (edits.deny)")


@dataclass(frozen=True)
class ResolvedPath:
    """A path that passed the sandbox: where it really is, relative to the real root."""

    rel: str  # the real target, repository-relative, POSIX ("." for the root itself)
    path: Path  # the real target, absolute
    asked: str  # the lexical repository-relative form of what was asked for
    exists: bool
    is_dir: bool

    @property
    def kind(self) -> PathKind:
        return classify_path(self.rel)


def resolve(
    root: str | os.PathLike[str],
    path: str | os.PathLike[str],
    *,
    deny: Sequence[str] | None = None,
    must_exist: bool = True,
    allow_dir: bool = False,
) -> ResolvedPath:
    """Resolve ``path`` (relative to ``root`` or absolute) through every symlink, inside ``root``.

    Refuses (typed, exit 2): malformed names (NUL, control or invisible characters), names too
    long, anything outside the root lexically or through a symlink, dangling links, loops,
    ``.git`` (any case, trailing dots) and the deny-list, checked on the path asked for AND on
    the path it resolves to. With ``must_exist`` a missing file is NotFoundError
    (FILE_NOT_FOUND, exit 1); without it (a file to create) the result may not exist yet.
    """
    patterns = tuple(DEFAULT_DENY if deny is None else deny)
    root_abs = os.path.abspath(os.fspath(root))
    real_root = os.path.realpath(root_abs)
    try:
        rel = normalize_rel(root_abs, path, allow_root=allow_dir)
    except PathDenied as exc:
        # ``.e<soft hyphen>nv`` is malformed AND a secret: say the more useful of the two.
        malformed_secret = (
            exc.code == "PATH_INVALID"
            and isinstance(path, str)
            and "\x00" not in path
            and is_secret_name(path, patterns)
        )
        if malformed_secret:
            raise SecretPathDenied(f"{path!r} is on the secret deny-list (edits.deny)") from exc
        raise
    _check_rel(rel, rel, patterns, resolved=False)
    lexical = os.path.join(root_abs, rel) if rel != "." else root_abs
    exists = True
    try:
        st = os.stat(lexical)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SymlinkLoop(f"{rel} goes round a loop of symbolic links") from exc
        if exc.errno == errno.ENAMETOOLONG:
            raise PathTooLong(f"{rel} is too long for the file system") from exc
        if os.path.islink(lexical):
            raise PathDenied(f"{rel} is a dangling symbolic link", code="SYMLINK_ESCAPE") from exc
        if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
            raise PathDenied(f"{rel} cannot be examined: {exc.strerror}", code="PATH_INVALID") from exc
        exists = False
    real = os.path.realpath(lexical)
    if not _inside(real, real_root):
        raise PathDenied(f"{rel} leads outside the repository through a symbolic link", code="SYMLINK_ESCAPE")
    real_rel = "." if real == real_root else Path(os.path.relpath(real, real_root)).as_posix()
    if real_rel == "." and not allow_dir:
        raise PathDenied(f"{rel} leads to the repository root, not a file", code="PATH_INVALID")
    _check_rel(real_rel, rel, patterns, resolved=True)
    if not exists:
        if must_exist:
            raise NotFoundError(f"no such file: {rel}", code="FILE_NOT_FOUND")
        return ResolvedPath(real_rel, Path(real), rel, False, False)
    is_dir = stat.S_ISDIR(st.st_mode)
    if is_dir and not allow_dir:
        raise PathDenied(f"{rel} is a directory", code="PATH_INVALID")
    if not is_dir and not stat.S_ISREG(st.st_mode):
        # A FIFO blocks a reader forever; a device or socket is never repository content.
        raise PathDenied(f"{rel} is not a regular file", code="PATH_INVALID")
    return ResolvedPath(real_rel, Path(real), rel, True, is_dir)


def classify(
    root: str | os.PathLike[str], path: str | os.PathLike[str], *, deny: Sequence[str] | None = None
) -> PathKind:
    """The kind of ``path`` after resolution: OUTSIDE, GIT_INTERNAL, SECRET, or its lexical kind.

    Never raises: a malformed name, a loop or a dangling link is OUTSIDE (nothing semfora reads).
    """
    try:
        resolved = resolve(root, path, deny=deny, must_exist=False, allow_dir=True)
    except SecretPathDenied:
        return PathKind.SECRET
    except PathDenied as exc:
        return PathKind.GIT_INTERNAL if exc.code == "GIT_DIR_DENIED" else PathKind.OUTSIDE
    return resolved.kind


def read_bytes(resolved: ResolvedPath, *, max_bytes: int | None = None) -> bytes:
    """The content of a resolved file, opened without following a link (regular files only).

    A FIFO or device would block or never end; a link swapped in since ``resolve`` is refused.
    Above ``max_bytes`` only the first ``max_bytes`` bytes are returned.
    """
    if resolved.is_dir:
        raise PathDenied(f"{resolved.asked} is a directory", code="PATH_INVALID")
    flags = (
        os.O_RDONLY
        | getattr(os, "O_NOFOLLOW", 0)
        | getattr(os, "O_NONBLOCK", 0)
        | getattr(os, "O_CLOEXEC", 0)
    )
    try:
        fd = os.open(resolved.path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PathDenied(f"{resolved.asked} became a symbolic link", code="SYMLINK_ESCAPE") from exc
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            raise NotFoundError(f"no such file: {resolved.asked}", code="FILE_NOT_FOUND") from exc
        raise NotFoundError(f"cannot read {resolved.asked}: {exc.strerror}", code="FILE_UNREADABLE") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PathDenied(f"{resolved.asked} is not a regular file", code="PATH_INVALID")
        chunks: list[bytes] = []
        left = max_bytes if max_bytes is not None else -1
        while left != 0:
            chunk = os.read(fd, 1 << 20 if left < 0 else min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            if left > 0:
                left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(
    root: str | os.PathLike[str],
    path: str | os.PathLike[str],
    *,
    deny: Sequence[str] | None = None,
    max_bytes: int | None = None,
) -> str:
    """Resolve ``path`` in the sandbox and return its text (UTF-8, invalid bytes replaced)."""
    return read_bytes(resolve(root, path, deny=deny), max_bytes=max_bytes).decode("utf-8", errors="replace")


def open_checked(path: str | os.PathLike[str], *, max_bytes: int | None = None) -> bytes:
    """The bytes of a file already known to be a real path inside the root (an indexed file, a
    manifest at the root): opened without following a link, regular files only."""
    p = Path(path)
    return read_bytes(ResolvedPath(p.name, p, p.name, True, False), max_bytes=max_bytes)
