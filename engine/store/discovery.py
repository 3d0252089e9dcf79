"""Which files of a repository are worth indexing, and why the others are not.

Lists files with ``git ls-files`` in a git work tree and walks the tree with
``.gitignore`` semantics elsewhere. Only cheap checks happen here (stat, names,
symlinks); content checks (binary, minified) run when the file is read, via
``content_problem``. It never follows a symlink out of the repository.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from engine.config import IndexSettings

# Bytes inspected for a NUL to call a file binary (git's own heuristic uses 8000).
BINARY_SNIFF_BYTES = 8192
# Average line length above which a file is minified or generated, not source.
MINIFIED_AVG_LINE = 300
# Only files at least this long are judged minified; a short one-liner is fine.
MINIFIED_MIN_BYTES = 2048
MINIFIED_SUFFIXES = (".min.js", ".min.css", ".min.mjs", "-min.js", ".bundle.js")
# Seconds `git ls-files` may take before we fall back to walking the tree.
GIT_TIMEOUT_S = 60


@dataclass(frozen=True)
class Candidate:
    """A file that passed the cheap checks: it may be read and parsed."""

    path: str  # repository-relative, POSIX separators
    size: int
    mtime_ns: int
    language: str | None


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str


@dataclass
class Discovery:
    candidates: list[Candidate] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    used_git: bool = False


def content_problem(path: str, data: bytes) -> str | None:
    """Why file content should not be indexed (binary or minified), or None."""
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        return "binary"
    if path.endswith(MINIFIED_SUFFIXES):
        return "minified"
    if len(data) >= MINIFIED_MIN_BYTES:
        lines = data.count(b"\n") + 1
        if len(data) / lines > MINIFIED_AVG_LINE:
            return "minified"
    return None


def _git_list(root: Path) -> list[str] | None:
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    names = proc.stdout.decode("utf-8", errors="surrogateescape").split("\0")
    return sorted({n for n in names if n})


def _load_ignore(dirpath: Path, rel_dir: str) -> list[tuple[str, object]]:
    import pathspec

    gi = dirpath / ".gitignore"
    try:
        if not gi.is_file():
            return []
        lines = gi.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    return [(rel_dir, pathspec.GitIgnoreSpec.from_lines(lines))]


def _ignored(specs: list[tuple[str, object]], rel: str, is_dir: bool) -> bool:
    for base, spec in specs:
        sub = rel[len(base) + 1 :] if base else rel
        if base and not rel.startswith(base + "/"):
            continue
        if spec.match_file(sub + ("/" if is_dir else "")):  # type: ignore[attr-defined]
            return True
    return False


def _walk(root: Path, exclude: set[str]) -> Iterator[str]:
    """Every file under root, honouring nested .gitignore files; never follows dir symlinks."""
    stack: list[tuple[Path, str, list[tuple[str, object]]]] = [(root, "", _load_ignore(root, ""))]
    while stack:
        dirpath, rel_dir, specs = stack.pop()
        try:
            entries = sorted(os.scandir(dirpath), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if is_dir:
                if entry.name in exclude or _ignored(specs, rel, True):
                    continue
                stack.append((Path(entry.path), rel, specs + _load_ignore(Path(entry.path), rel)))
            elif not _ignored(specs, rel, False):
                yield rel


def _in_excluded_dir(rel: str, exclude: set[str]) -> bool:
    return any(part in exclude for part in rel.split("/")[:-1])


def _symlink_problem(root: Path, full: Path) -> str:
    try:
        target = full.resolve(strict=True)
    except RuntimeError:
        return "symlink loop"
    except OSError as exc:
        if exc.errno == 40:  # ELOOP
            return "symlink loop"
        return "broken symlink"
    if not target.is_relative_to(root):
        return "symlink points outside the repository"
    return "symlink (its target is indexed under its own path)"


def discover(
    root: Path,
    settings: IndexSettings,
    *,
    use_git: bool = True,
    language_of: Callable[[str], str | None] | None = None,
) -> Discovery:
    """List indexable files under ``root`` with their stat, and the skipped ones with reasons."""
    if language_of is None:
        from engine.semantic.languages import language_for_path

        language_of = language_for_path
    root = root.resolve()
    exclude = set(settings.exclude_dirs)
    names: Iterable[str] | None = _git_list(root) if use_git else None
    result = Discovery(used_git=names is not None)
    if names is None:
        names = _walk(root, exclude)
    for rel in names:
        if _in_excluded_dir(rel, exclude) or rel.split("/")[0] == ".git":
            continue
        full = root / rel
        try:
            st = full.lstat()
        except OSError as exc:
            if isinstance(exc, FileNotFoundError):
                continue  # listed by git but deleted in the work tree
            result.skipped.append(Skipped(rel, f"unreadable: {exc.strerror}"))
            continue
        if stat.S_ISLNK(st.st_mode):
            result.skipped.append(Skipped(rel, _symlink_problem(root, full)))
            continue
        if not stat.S_ISREG(st.st_mode):
            result.skipped.append(Skipped(rel, "not a regular file"))
            continue
        if st.st_size > settings.max_file_bytes:
            result.skipped.append(Skipped(rel, f"too large ({st.st_size} bytes > {settings.max_file_bytes})"))
            continue
        if rel.endswith(MINIFIED_SUFFIXES):
            result.skipped.append(Skipped(rel, "minified"))
            continue
        result.candidates.append(Candidate(rel, st.st_size, st.st_mtime_ns, language_of(rel)))
    return result
