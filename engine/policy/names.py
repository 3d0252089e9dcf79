"""Which file names hold secrets: the one deny-list, and how a name is folded before it is matched.

Owns ``DEFAULT_DENY`` (the default of ``edits.deny``) and ``is_secret_name``. A name is folded
first (Unicode NFKC, case, invisible characters, trailing dots and spaces) so that ``.ENV``,
``.ｅｎｖ``, ``.env.`` and ``.e\u00adnv`` are all ``.env``. It never touches the disk: the read
and write sandboxes call it on both the path asked for and the path it resolves to.
"""

from __future__ import annotations

import fnmatch
import os
import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache
from pathlib import PurePosixPath

# Files that are never indexed, embedded, summarised, served, sent to a model or written.
# A pattern without "/" matches any one path component (so a directory named ``secrets/``
# covers everything below it); a pattern with "/" matches the last components of the path.
DEFAULT_DENY: tuple[str, ...] = (
    # dotenv and shell environment files
    ".env",
    ".env.*",
    ".env_*",
    ".env-*",
    "*.env",
    ".envrc",
    # private keys and key stores
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.p8",
    "*.ppk",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    # credential files of common tools
    ".netrc",
    "_netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".htpasswd",
    ".git-credentials",
    "kubeconfig",
    "*.kubeconfig",
    ".docker/config.json",
    # infrastructure state and variables (hold provider keys and generated passwords)
    "*.tfvars",
    "*.tfvars.json",
    "*.tfstate",
    "*.tfstate.*",
    # anything that says what it is
    "*secret*",
    "*credentials*",
)

# Patterns that match by a word in the name only: ``secrets.py`` may be code about secrets.
# They are denied like the rest (never read for a model); CI review reports such a file in a
# change as a smaller finding than a key or a dotenv file.
SUGGESTIVE_PATTERNS = frozenset({"*secret*", "*credentials*"})

# Templates meant to be committed: ``.env.example`` lists variable names, not values. Their
# content still goes through the content redactor like any other file.
SAFE_SUFFIXES = (".example", ".sample", ".template", ".dist")

# Characters that change nothing a reader sees: soft hyphen (U+00AD), the combining grapheme
# joiner, Hangul fillers, variation selectors (U+FE00-FE0F, U+E0100-E01EF). Format characters
# (category Cf: zero-width space/joiners, U+2060 word joiner, bidi controls, tag characters
# U+E0000-E007F, U+FEFF) are removed by category below.
_INVISIBLE = frozenset(
    [0x00AD, 0x034F, 0x115F, 0x1160, 0x3164, 0xFFA0, 0x180E]
    + list(range(0xFE00, 0xFE10))
    + list(range(0xE0100, 0xE01F0))
)


# Folded names kept per process: a tree repeats its directory and file names (``__init__.py``,
# ``tests``, ``plugins``) tens of thousands of times, and folding is the costly part of a check.
FOLD_CACHE_SIZE = 1 << 16


@lru_cache(maxsize=FOLD_CACHE_SIZE)
def fold_name(name: str) -> str:
    """The form a name is compared in: NFKC, case-folded, invisible characters removed,
    trailing dots and spaces removed (Windows and some tools ignore them)."""
    text = unicodedata.normalize("NFKC", name)
    text = "".join(
        ch for ch in text if ord(ch) not in _INVISIBLE and unicodedata.category(ch) not in ("Cf", "Cc")
    )
    return unicodedata.normalize("NFKC", text).casefold().rstrip(". ").lstrip(" ")


def has_invisible(name: str) -> bool:
    """True when ``name`` holds a character that displays as nothing (or as something else)."""
    return any(ord(ch) in _INVISIBLE or unicodedata.category(ch) in ("Cf", "Cc") for ch in name)


@lru_cache(maxsize=64)
def _compiled(patterns: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """(component patterns, path patterns split into components), folded."""
    single: list[str] = []
    multi: list[tuple[str, ...]] = []
    for pattern in patterns:
        parts = tuple(fold_name(p) for p in pattern.strip("/").split("/") if p)
        if len(parts) == 1:
            single.append(parts[0])
        elif parts:
            multi.append(parts)
    return tuple(single), tuple(multi)


def _parts(rel: str | os.PathLike[str]) -> list[str]:
    raw = os.fspath(rel).replace("\\", "/")
    if raw.startswith("//"):  # POSIX keeps exactly two leading slashes as a part of their own
        return [fold_name(p) for p in PurePosixPath(raw).parts if p not in ("/", "", ".")]
    # The same parts as PurePosixPath(raw).parts without its object per path: discovery asks
    # this of every file of a tree (a third of discovery's time on Django went to pathlib).
    return [fold_name(p) for p in raw.split("/") if p not in ("", ".")]


def is_git_component(part: str) -> bool:
    """``.git`` in any case, width or with trailing dots, spaces or invisible characters."""
    return fold_name(part) == ".git"


def secret_patterns_matching(rel: str | os.PathLike[str], patterns: Iterable[str] | None = None) -> list[str]:
    """The deny-list patterns (folded) that ``rel`` matches; empty when it is not secret.

    Any component matching a one-part pattern makes the path secret; a multi-part pattern
    (``.docker/config.json``) matches the path's last components. ``.example``-style
    templates are not secret files.
    """
    single, multi = _compiled(tuple(DEFAULT_DENY if patterns is None else patterns))
    parts = _parts(rel)
    if not parts:
        return []
    # A template (``.env.example``) is not a secret itself; the directories above it still count.
    named = parts[:-1] if parts[-1].endswith(SAFE_SUFFIXES) else parts
    found = [pat for pat in single if any(fnmatch.fnmatchcase(part, pat) for part in named)]
    for pat_parts in multi:
        n = len(pat_parts)
        if len(parts) >= n and all(
            fnmatch.fnmatchcase(part, pat) for part, pat in zip(parts[-n:], pat_parts, strict=True)
        ):
            found.append("/".join(pat_parts))
    return found


@lru_cache(maxsize=64)
def _one_part_regex(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    """The one-part patterns of ``patterns`` as one regular expression (``fnmatchcase`` of any)."""
    single, _multi = _compiled(patterns)
    if not single:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in single))


def is_secret_name(rel: str | os.PathLike[str], patterns: Iterable[str] | None = None) -> bool:
    """True when ``rel`` (a repository-relative path or a bare name) is on the deny-list.

    The same answer as ``bool(secret_patterns_matching(rel, patterns))``, asked of every file
    of a tree by discovery, so the one-part patterns are tried as one expression."""
    key = tuple(DEFAULT_DENY if patterns is None else patterns)
    parts = _parts(rel)
    if not parts:
        return False
    named = parts[:-1] if parts[-1].endswith(SAFE_SUFFIXES) else parts
    regex = _one_part_regex(key)
    if regex is not None and any(regex.match(part) for part in named):
        return True
    _single, multi = _compiled(key)
    for pat_parts in multi:
        n = len(pat_parts)
        if len(parts) >= n and all(
            fnmatch.fnmatchcase(part, pat) for part, pat in zip(parts[-n:], pat_parts, strict=True)
        ):
            return True
    return False
