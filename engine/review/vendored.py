"""Vendored third-party code in a change: set apart from the rules, summed up in one remark.

A commit that bumps a library copied into the tree (``src/pip/_vendor/``) is the library's own
change; reviewing it rule by rule floods the report. Its files are still scanned for secrets.
Nothing here reads git; ``review.vendored_dirs`` (engine.config) names the directories.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import PurePosixPath

from engine.review.findings import Finding
from engine.review.secrets import scan_files
from engine.semantic.diff import FileChange, SemanticDiff
from engine.words import plural

# Vendored directories named in the remark; the JSON report's ``files`` lists every file.
MAX_NAMED_DIRS = 3


def vendored_root(path: str, dirs: Iterable[str]) -> str | None:
    """``src/pip/_vendor/`` for ``src/pip/_vendor/rich/text.py``; None outside vendored code."""
    names = set(dirs)
    parts = PurePosixPath(path).parts[:-1]
    for i, part in enumerate(parts):
        if part in names:
            return "/".join(parts[: i + 1]) + "/"
    return None


def split_vendored(diff: SemanticDiff, dirs: Iterable[str]) -> tuple[SemanticDiff, tuple[FileChange, ...]]:
    """(the diff without vendored files, the vendored files), by each file's new path: code moved
    out of ``_vendor/`` is the project's own now."""
    names = tuple(dirs)
    if not names:
        return diff, ()
    own: list[FileChange] = []
    vendored: list[FileChange] = []
    for f in diff.files:
        (vendored if vendored_root(f.path, names) else own).append(f)
    if not vendored:
        return diff, ()
    return replace(diff, files=tuple(own)), tuple(vendored)


def review_vendored(files: tuple[FileChange, ...], dirs: Iterable[str]) -> list[Finding]:
    """The secret scan of the vendored files, and one remark saying what was passed over."""
    if not files:
        return []
    roots = sorted({vendored_root(f.path, dirs) or "" for f in files})
    more = len(roots) - MAX_NAMED_DIRS
    named = ", ".join(roots[:MAX_NAMED_DIRS]) + (f" and {more} more" if more > 0 else "")
    added = sum(f.lines_added for f in files)
    removed = sum(f.lines_removed for f in files)
    summary = Finding(
        "info",
        "vendored",
        f"vendored code changed: {plural(len(files), 'file')} under {named} (+{added} -{removed}), "
        "scanned for secrets only (`[review] vendored_dirs = []` in .semfora.toml reviews it like the "
        "project's own)",
        None,
        None,
        None,
        rule="vendored-code",
        count=len(files),
    )
    return [*scan_files(files), summary]
