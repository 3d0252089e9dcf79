"""The edit sandbox: which paths semfora may write, and which file contents it will touch.

Paths go through the one policy sandbox (``engine.policy.sandbox.resolve``), exactly as reads
do: checked lexically and again after ``realpath``; ``.git/``, the deny-list, loops, dangling
and escaping links are refused. This module adds the write-side content rules (binary,
non-UTF-8, oversized). It only decides; it never writes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from engine.edits.errors import FileRefused
from engine.policy.names import DEFAULT_DENY
from engine.policy.names import is_secret_name as is_secret_path
from engine.policy.sandbox import BINARY_SNIFF_BYTES, normalize_rel, resolve

__all__ = [
    "BINARY_SNIFF_BYTES",
    "DEFAULT_DENY",
    "check_editable",
    "is_secret_path",
    "normalize_rel",
    "resolve_in_repo",
]


def resolve_in_repo(
    root: str | os.PathLike[str],
    path: str | os.PathLike[str],
    *,
    deny: Sequence[str] | None = None,
) -> Path:
    """Resolve ``path`` (relative to ``root`` or absolute) to a real path inside ``root``.

    Raises PathDenied (and its SymlinkLoop/PathTooLong) for anything outside the root
    (lexically or via symlinks), anything under ``.git/``, malformed names and directories,
    and SecretPathDenied for the deny-list. The returned path may not exist yet (a file to
    create).
    """
    return resolve(root, path, deny=deny, must_exist=False).path


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
