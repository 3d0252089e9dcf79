"""The repository as a face shows it: the checked-out branch and the files a user may mention.

Owns the two questions the app's header and its ``@`` picker ask: ``branch_name`` (through the
engine's one git module, ``engine.repo.git``) and ``listed_paths`` (through discovery's listing:
git's tracked and untracked, not ignored files, or a walk that honours ``.gitignore`` outside a
work tree; excluded directories and secret files left out). A face never runs git itself.
Must not print; never raises for a missing git or a path outside a work tree.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.config import Settings

# Seconds the header waits for the branch name: a slow git must not keep the header blank long.
BRANCH_TIMEOUT_S = 5.0


def branch_name(root: Path) -> str:
    """The checked-out branch (``HEAD`` when detached); '' outside a work tree or without git."""
    from engine.repo import git

    return git.output(root, "rev-parse", "--abbrev-ref", "HEAD", timeout=BRANCH_TIMEOUT_S) or ""


def listed_paths(root: Path, settings: Settings) -> list[str]:
    """Repository-relative paths a user may mention, sorted: discovery's listing, without the
    excluded directories (``index.exclude_dirs``) and without secret files (``edits.deny``),
    which no pack would serve anyway."""
    from engine.policy.names import is_secret_name
    from engine.store.discovery import listed_paths as discovered

    deny = tuple(settings.edits.deny)
    return sorted(
        rel for rel in discovered(root, settings.index.exclude_dirs) if not is_secret_name(rel, deny)
    )
