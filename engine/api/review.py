"""The semantic diff and the CI review, as the front door offers them to the faces.

`semfora diff`, `semfora ci`, the app's `/diff` and the MCP ``analyze_diff`` tool ask here; the
work stays in ``engine.semantic.diff`` and ``engine.review`` (imported lazily). Both answers are
frozen values with ``to_json()`` (the JSON contract) and text forms. Must not print.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.review.ci import Mode, ReviewReport
    from engine.semantic.diff import FileChange, SemanticDiff


def semantic_diff(
    root: str | os.PathLike[str],
    base: str | None = None,
    target: str | None = None,
    *,
    max_file_bytes: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> SemanticDiff:
    """Symbols added, removed, modified, moved or renamed between ``base`` and ``target``
    (default HEAD → the working tree). ``max_file_bytes`` (default: the diff's own cap) skips
    larger files."""
    from engine.semantic.diff import analyze_diff
    from engine.store.callers import index_callers

    # The index's call graph names the callers of what changed (the diff itself reads no store).
    callers = index_callers(root)
    if max_file_bytes is None:
        return analyze_diff(root, base, target, caller_graph=callers, progress=progress)
    return analyze_diff(
        root, base, target, max_file_bytes=max_file_bytes, caller_graph=callers, progress=progress
    )


SECRET_FILE_NOTE = "secret (on the deny-list, edits.deny): content not shown"


def without_secret_content(diff: SemanticDiff, deny: Sequence[str]) -> SemanticDiff:
    """``diff`` with the deny-listed files' content taken out: the file is listed (its existence
    may be said, docs/security.md) but not its symbols, signatures or defaults. Redaction alone
    let ``def load_secret(password="hunter3")`` through. The MCP server's ``analyze_diff`` sends
    this; `semfora ci` keeps the content (its secret scan must read a committed secret)."""
    from dataclasses import replace

    from engine.policy.names import is_secret_name

    def secret(change: FileChange) -> bool:
        return is_secret_name(change.path, deny) or bool(
            change.old_path and is_secret_name(change.old_path, deny)
        )

    files = tuple(
        replace(
            f,
            language=None,
            note=SECRET_FILE_NOTE,
            symbols=(),
            module=None,
            lost_exports=(),
            added_lines=(),
            removed_lines=(),
            test_identifiers=frozenset(),
        )
        if secret(f)
        else f
        for f in diff.files
    )
    return replace(diff, files=files)


def ci_review(
    path: str | os.PathLike[str] | None,
    mode: Mode,
    *,
    base: str | None = None,
    head: str | None = None,
    commit: str | None = None,
    fail_on: str = "high",
    model: str | None = None,
    use_model: bool = True,
    intent: str | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> ReviewReport:
    """Review a pull request (``mode="pr"``) or one commit: deterministic rules, the secret scan and,
    when a model is configured and allowed, a model review. ModelUnavailable (exit 3) only when a
    named model cannot be used. ``progress(phase, done, total)`` hears what a long review is doing."""
    from engine.review.ci import review

    return review(
        path,
        mode,
        base=base,
        head=head,
        commit=commit,
        fail_on=fail_on,
        model=model,
        use_model=use_model,
        intent=intent,
        progress=progress,
    )
