"""Edit sessions: staging, hunks, atomic commit with journal, recovery, undo and the sandbox.

Public surface: ``EditSession`` (session), ``recover`` (writer), ``undo`` (undo),
``parse_blocks``/``apply_blocks`` (protocol), ``resolve_in_repo``/``is_secret_path``
(sandbox). Nothing here imports textual or talks to a model.
"""

from __future__ import annotations

from engine.edits.hunks import Hunk, HunkId, HunkState
from engine.edits.protocol import BlockFailure, EditBlock, EditBlockError, apply_blocks, parse_blocks
from engine.edits.sandbox import is_secret_path, resolve_in_repo
from engine.edits.session import (
    CommitResult,
    EditSession,
    RebaseReport,
    StagedFile,
    UndoFollowUp,
    rebase_after_undo,
)
from engine.edits.undo import UndoResult, undo
from engine.edits.writer import RecoveryReport, recover

__all__ = [
    "BlockFailure",
    "CommitResult",
    "EditBlock",
    "EditBlockError",
    "EditSession",
    "StagedFile",
    "Hunk",
    "HunkId",
    "HunkState",
    "RebaseReport",
    "RecoveryReport",
    "UndoFollowUp",
    "UndoResult",
    "apply_blocks",
    "is_secret_path",
    "parse_blocks",
    "rebase_after_undo",
    "recover",
    "resolve_in_repo",
    "undo",
]
