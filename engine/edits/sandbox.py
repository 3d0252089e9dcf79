"""The edit sandbox: which paths semfora may write, and which files are secret.

Every target is checked lexically and again after ``realpath``; ``.git/``, the
deny-list, binary and oversized files are refused. This module only decides; it
never reads file contents beyond the bytes it is handed, and never writes.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import unicodedata
from collections.abc import Iterable, Sequence
from pathlib import Path

from engine.config import DEFAULT_DENY  # the default of edits.deny; callers normally pass the configured list
from engine.edits.errors import FileRefused, PathDenied, SecretPathDenied

# Bidirectional overrides and invisible characters make a path display as something it is not.
_DECEPTIVE = {
    chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200B, 0x200E, 0x200F, 0xFEFF)
}
# Binary sniffing looks at this many leading bytes for a NUL, like git does.
BINARY_SNIFF_BYTES = 8000


def _fold(name: str) -> str:
    """Compatibility-fold and case-fold a name so '.ＥＮＶ' and '.ENV' compare equal to '.env'."""
    return unicodedata.normalize("NFKC", name).casefold()


def is_secret_path(rel: str | os.PathLike[str], patterns: Iterable[str] | None = None) -> bool:
    """True when any component of ``rel`` matches the deny-list (case- and width-insensitive)."""
    pats = [_fold(p) for p in (DEFAULT_DENY if patterns is None else patterns)]
    parts = [p for p in Path(os.fspath(rel)).parts if p not in ("/", "")]
    for part in parts:
        folded = _fold(part)
        if any(fnmatch.fnmatchcase(folded, pat) for pat in pats):
            return True
    return False


def _is_git_component(part: str) -> bool:
    return _fold(part).rstrip(". ") == ".git"


def _inside(child: str, root: str) -> bool:
    return child == root or child.startswith(root.rstrip(os.sep) + os.sep)


def normalize_rel(root: Path, path: str | os.PathLike[str]) -> str:
    """The repository-relative POSIX form of ``path``, checked lexically only."""
    raw = os.fspath(path)
    if not isinstance(raw, str) or not raw.strip():
        raise PathDenied("empty path", code="PATH_INVALID")
    if "\x00" in raw:
        raise PathDenied(f"path contains a NUL byte: {raw!r}", code="PATH_INVALID")
    if any(ch in _DECEPTIVE or unicodedata.category(ch) == "Cc" for ch in raw):
        raise PathDenied(f"path contains control or invisible characters: {raw!r}", code="PATH_INVALID")
    root_s = os.path.abspath(os.fspath(root))
    joined = raw if os.path.isabs(raw) else os.path.join(root_s, raw)
    normal = os.path.normpath(joined)
    if not _inside(normal, root_s) or normal == root_s:
        raise PathDenied(f"path is outside the repository: {raw}")
    rel = Path(os.path.relpath(normal, root_s)).as_posix()
    if rel.startswith("../") or rel == "..":
        raise PathDenied(f"path is outside the repository: {raw}")
    return posixpath.normpath(rel)


def resolve_in_repo(
    root: str | os.PathLike[str],
    path: str | os.PathLike[str],
    *,
    deny: Sequence[str] | None = None,
) -> Path:
    """Resolve ``path`` (relative to ``root`` or absolute) to a real path inside ``root``.

    Raises PathDenied for anything outside the root (lexically or via symlinks),
    anything under ``.git/`` and malformed names, and SecretPathDenied for the
    deny-list. The returned path may not exist yet (a file to create).
    """
    root_path = Path(os.path.abspath(os.fspath(root)))
    real_root = os.path.realpath(root_path)
    rel = normalize_rel(root_path, path)
    if any(_is_git_component(p) for p in rel.split("/")):
        raise PathDenied(f"refusing to touch the git directory: {rel}", code="GIT_DIR_DENIED")
    if is_secret_path(rel, deny):
        raise SecretPathDenied(f"{rel} is on the secret deny-list (edits.deny)")
    lexical = root_path / rel
    real = os.path.realpath(lexical)
    if not _inside(real, real_root) or real == real_root:
        raise PathDenied(f"path escapes the repository through a symlink: {rel}", code="SYMLINK_ESCAPE")
    real_rel = Path(os.path.relpath(real, real_root)).as_posix()
    if any(_is_git_component(p) for p in real_rel.split("/")):
        raise PathDenied(f"path resolves into the git directory: {rel}", code="GIT_DIR_DENIED")
    if is_secret_path(real_rel, deny):
        raise SecretPathDenied(f"{rel} resolves to a secret file ({real_rel})")
    if os.path.islink(lexical) and not os.path.exists(lexical):
        raise PathDenied(f"dangling symlink or symlink loop: {rel}", code="SYMLINK_ESCAPE")
    if os.path.isdir(real):
        raise PathDenied(f"path is a directory: {rel}", code="PATH_INVALID")
    return Path(real)


def check_editable(rel: str, data: bytes, *, max_bytes: int) -> None:
    """Refuse binary, non-UTF-8 and oversized content (both originals and new versions)."""
    if len(data) > max_bytes:
        raise FileRefused(
            f"{rel} is {len(data)} bytes, above the {max_bytes}-byte cap (edits.max_file_bytes)",
            code="FILE_TOO_LARGE",
        )
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        raise FileRefused(f"{rel} is a binary file", code="BINARY_FILE")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileRefused(f"{rel} is not valid UTF-8 (byte {exc.start})", code="BINARY_FILE") from exc
