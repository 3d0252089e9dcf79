"""Which files of a repository are worth indexing, and why the others are not.

Lists files with ``git ls-files`` in a git work tree and walks the tree with
``.gitignore`` semantics elsewhere. Only cheap checks happen here (stat, names,
symlinks, the secret deny-list of ``engine.policy``); content checks (binary, minified) run
when the file is read, via ``content_problem``. It never follows a symlink, and a secret file
is listed as skipped (its existence, never its content).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from engine.config import IndexSettings
from engine.policy.names import DEFAULT_DENY, is_git_component, is_secret_name
from engine.repo import git

# Bytes inspected for a NUL to call a file binary (git's own heuristic uses 8000).
BINARY_SNIFF_BYTES = 8192
# Average line length above which a file is minified or generated, not source.
MINIFIED_AVG_LINE = 300
# Only files at least this long are judged minified; a short one-liner is fine.
MINIFIED_MIN_BYTES = 2048
# The start of an inline source map (`//# sourceMappingURL=data:...`, or `/*# ... */` in CSS).
INLINE_SOURCE_MAP = b"# sourceMappingURL=data:"
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
        # Compiled output (an npm package's esm/ or cjs/ files) ends with its source map inline:
        # one base64 line longer than the code above it, which made every short module
        # "minified". The code is judged without it.
        inline_map = data.rfind(INLINE_SOURCE_MAP)
        if inline_map != -1:
            data = data[: data.rfind(b"\n", 0, inline_map) + 1]
        lines = data.count(b"\n") + 1
        if len(data) >= MINIFIED_MIN_BYTES and len(data) / lines > MINIFIED_AVG_LINE:
            return "minified"
    return None


def _git_list(root: Path) -> list[str] | None:
    return git.list_files(root, timeout=GIT_TIMEOUT_S)


def _load_ignore(dirpath: str, rel_dir: str) -> list[tuple[str, object]]:
    import pathspec

    try:
        with open(os.path.join(dirpath, ".gitignore"), encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    return [(rel_dir, pathspec.GitIgnoreSpec.from_lines(lines))]


def _ignored(specs: list[tuple[str, object]], rel: str, is_dir: bool) -> bool:
    for base, spec in specs:
        if base and not rel.startswith(base + "/"):
            continue
        sub = rel[len(base) + 1 :] if base else rel
        if spec.match_file(sub + ("/" if is_dir else "")):  # type: ignore[attr-defined]
            return True
    return False


def _walk(root: str, exclude: set[str]) -> Iterator[str]:
    """Every file under root, honouring nested .gitignore files; never follows dir symlinks."""
    stack: list[tuple[str, str, list[tuple[str, object]]]] = [(root, "", [])]
    while stack:
        dirpath, rel_dir, specs = stack.pop()
        try:
            with os.scandir(dirpath) as it:
                entries = list(it)
        except OSError:
            continue
        if any(e.name == ".gitignore" for e in entries):
            specs = specs + _load_ignore(dirpath, rel_dir)
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if is_dir:
                if entry.name in exclude or (specs and _ignored(specs, rel, True)):
                    continue
                stack.append((entry.path, rel, specs))
            elif not (specs and _ignored(specs, rel, False)):
                yield rel


def _in_excluded_dir(rel: str, exclude: set[str]) -> bool:
    return any(part in exclude for part in rel.split("/")[:-1])


def _symlink_problem(root: Path, full: str) -> str:
    try:
        target = Path(full).resolve(strict=True)
    except RuntimeError:
        return "symlink loop"
    except OSError as exc:
        if exc.errno == 40:  # ELOOP
            return "symlink loop"
        return "broken symlink"
    if not target.is_relative_to(root):
        return "symlink points outside the repository"
    return "symlink (its target is indexed under its own path)"


def listed_paths(root: Path, exclude: Iterable[str]) -> Iterator[str]:
    """Every file path discovery considers, repository-relative: git's listing (tracked and
    untracked, not ignored) in a work tree, else a walk that honours nested .gitignore files and
    never follows directory symlinks; files under ``exclude`` directories are left out.

    The one file listing of the engine: the indexer (through ``discover``) and the text index
    both list files here, so they agree on what the repository holds.
    """
    excluded = set(exclude)
    root = root.resolve()
    names = _git_list(root)
    if names is None:
        yield from _walk(str(root), excluded)
        return
    for rel in names:
        if "/" not in rel or not _in_excluded_dir(rel, excluded):
            yield rel


def discover(
    root: Path,
    settings: IndexSettings,
    *,
    use_git: bool = True,
    language_of: Callable[[str], str | None] | None = None,
    languages_only: bool = True,
    deny: Sequence[str] | None = None,
) -> Discovery:
    """List indexable files under ``root`` with their stat, and the skipped ones with reasons.

    With ``languages_only`` (the indexer's case) files of no known language are passed
    over before any system call; otherwise they are candidates with ``language=None``.
    Files on ``deny`` (default: the policy's deny-list; pass ``edits.deny``) are never
    candidates: they are skipped as secret, so nothing reads, chunks or embeds them.
    """
    patterns = tuple(DEFAULT_DENY if deny is None else deny)
    if language_of is None:
        from engine.semantic.languages import language_for_path

        language_of = language_for_path
    # Language depends only on the file name; file names repeat a lot (django.po, __init__.py).
    by_name: dict[str, str | None] = {}
    root = root.resolve()
    base = str(root)
    exclude = set(settings.exclude_dirs)
    names: Iterable[str] | None = _git_list(root) if use_git else None
    result = Discovery(used_git=names is not None)
    if names is None:
        names = _walk(base, exclude)
    for rel in names:
        if result.used_git and "/" in rel and _in_excluded_dir(rel, exclude):  # the walk prunes them itself
            continue
        _classify(
            root, base, rel, settings.max_file_bytes, languages_only, language_of, by_name, result, patterns
        )
    result.candidates.sort(key=lambda c: c.path)
    return result


def discover_paths(
    root: Path,
    settings: IndexSettings,
    paths: Iterable[str],
    *,
    language_of: Callable[[str], str | None] | None = None,
    languages_only: bool = True,
    deny: Sequence[str] | None = None,
) -> Discovery:
    """``discover`` restricted to ``paths`` (repository-relative, as git names them).

    For a caller that already knows which paths may have changed (git did the walk): each
    path gets the same checks as in a full discovery; a path that no longer exists is simply
    absent from the result, so the caller treats it as deleted.
    """
    if language_of is None:
        from engine.semantic.languages import language_for_path

        language_of = language_for_path
    patterns = tuple(DEFAULT_DENY if deny is None else deny)
    root = root.resolve()
    base = str(root)
    exclude = set(settings.exclude_dirs)
    result = Discovery(used_git=True)
    by_name: dict[str, str | None] = {}
    for rel in sorted(set(paths)):
        if not rel or rel.startswith("/") or ".." in rel.split("/") or _in_excluded_dir(rel, exclude):
            continue
        _classify(
            root, base, rel, settings.max_file_bytes, languages_only, language_of, by_name, result, patterns
        )
    result.candidates.sort(key=lambda c: c.path)
    return result


def _classify(
    root: Path,
    base: str,
    rel: str,
    max_bytes: int,
    languages_only: bool,
    language_of: Callable[[str], str | None],
    by_name: dict[str, str | None],
    result: Discovery,
    patterns: Sequence[str] = DEFAULT_DENY,
) -> None:
    """Add ``rel`` to ``result`` as a candidate or a skipped file (or not at all: gone, no language)."""
    if rel.startswith(".git/") or any(is_git_component(p) for p in rel.split("/")[:-1]):
        return
    if not rel.isascii():
        try:
            rel.encode("utf-8")
        except UnicodeEncodeError:
            result.skipped.append(
                Skipped(rel.encode("utf-8", "replace").decode(), "file name is not valid UTF-8")
            )
            return
    name = rel.rpartition("/")[2]
    if is_secret_name(rel, patterns):
        result.skipped.append(Skipped(rel, "secret (on the deny-list, edits.deny): never read"))
        return
    if name not in by_name:
        by_name[name] = language_of(name)
    language = by_name[name]
    if language is None and languages_only:
        return  # not source code: no need to even stat it
    full = os.path.join(base, rel)
    try:
        st = os.lstat(full)
    except OSError as exc:
        if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
            return  # listed by git but deleted in the work tree
        result.skipped.append(Skipped(rel, f"unreadable: {exc.strerror}"))
        return
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        result.skipped.append(Skipped(rel, _symlink_problem(root, full)))
        return
    if not stat.S_ISREG(mode):
        result.skipped.append(Skipped(rel, "not a regular file"))
        return
    if st.st_size > max_bytes:
        result.skipped.append(Skipped(rel, f"too large ({st.st_size} bytes > {max_bytes})"))
        return
    if rel.endswith(MINIFIED_SUFFIXES):
        result.skipped.append(Skipped(rel, "minified"))
        return
    result.candidates.append(Candidate(rel, st.st_size, st.st_mtime_ns, language))
