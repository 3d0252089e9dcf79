"""Reviewing the staged session: /edit, /preview, /review, /accept, /reject, /commit,
/rollback, /undo, /rebase, and the review-mode keys that do the same things.

Everything that changes files or history (commit, undo, rollback, accept-all, the editor)
asks first through ``MainScreen.confirm``; the engine call runs only on a real yes.
Nothing here moves the focus: after a staging the user decides when to review.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import SuspendNotSupported

from engine.errors import SemforaError, UsageError
from engine.words import plural
from semfora_tui.chat_text import code
from semfora_tui.commands import command
from semfora_tui.editor import EditorFailed, chosen_editor, editor_command
from semfora_tui.slash import ParsedCommand
from semfora_tui.views import FileView

if TYPE_CHECKING:
    from engine.edits.session import CommitResult, RebaseReport
    from engine.edits.undo import UndoResult
    from semfora_tui.screens.main import MainScreen

REVIEW_HINT = "F2 or `/review` to review them"


def _names(paths: tuple[str, ...] | list[str]) -> str:
    return ", ".join(code(p) for p in paths)


def _listed(paths: list[str]) -> str:
    """Plain text (a confirmation is not Markdown): the path, or a count and the paths."""
    return paths[0] if len(paths) == 1 else f"{plural(len(paths), 'file')}: {', '.join(paths)}"


@command("edit")
async def edit(screen: MainScreen, cmd: ParsedCommand) -> None:
    if cmd.args[:1] == ("--from",):
        if len(cmd.args) < 2:
            raise UsageError("/edit --from needs a file of SEARCH/REPLACE blocks")
        source = cmd.args[1]

        async def staged(files: tuple[FileView, ...]) -> None:
            hunks = sum(len(f.hunks) for f in files)
            screen.show_staged(files)
            await screen.note(
                f"Staged {plural(hunks, 'hunk')} in {plural(len(files), 'file')}. {REVIEW_HINT}."
            )

        screen.session_job(lambda: screen.bridge.stage_from_file(source), staged)
        return
    if not cmd.rest:
        raise UsageError("/edit needs a task, or --from FILE")
    await screen.ask(cmd.rest)


@command("preview")
async def preview(screen: MainScreen, _cmd: ParsedCommand) -> None:
    async def show(files: tuple[FileView, ...]) -> None:
        screen.show_staged(files)
        if not files:
            await screen.note("Nothing is staged.")
            return
        lines = "\n".join(
            f"- {code(f.path)} +{f.added} -{f.removed}: {f.count('accepted')} accepted, "
            f"{f.count('rejected')} rejected, {f.count('pending')} pending"
            + (f" — **conflict**: {f.conflict}" if f.conflict else "")
            for f in files
        )
        await screen.note(f"**Staged changes** ({REVIEW_HINT})\n\n{lines}")

    screen.run_job(screen.bridge.staged_files, show)


@command("review")
async def review(screen: MainScreen, _cmd: ParsedCommand) -> None:
    screen.enter_review()
    screen.refresh_staged()


async def _decide(screen: MainScreen, cmd: ParsedCommand, action: str) -> None:
    target = cmd.args[0] if cmd.args else None
    bridge = screen.bridge
    if target == "all":
        if action == "reject":
            await _reject_all(screen)
            return
        # A conflict is never accepted (the engine refuses it): counting it promised one more.
        open_hunks = [
            h for f in screen.diff.files for h in f.hunks if h.state != "accepted" and not h.conflict
        ]
        conflicts = sum(f.conflicts for f in screen.diff.files)
        fit = "fits" if conflicts == 1 else "fit"
        left = (
            f"\nLeft out: {plural(conflicts, 'conflict')}, which no longer {fit} the file."
            if conflicts
            else ""
        )
        if not screen.diff.files:
            await screen.note("Nothing to accept: nothing is staged.")
            return
        if not open_hunks:
            await screen.note(
                "Nothing to accept: every staged hunk is accepted already."
                + (f" {left.strip()}" if left else "")
            )
            return
        files = len({h.path for h in open_hunks})
        screen.confirm(
            f"Accept all {plural(len(open_hunks), 'staged hunk')} in {plural(files, 'file')}?{left}\n"
            "Nothing is written until you commit.",
            "Accept all",
            lambda: screen.session_job(lambda: bridge.accept_all(True)),
        )
        return
    if target is None:
        current = screen.diff.current
        if current is None:
            raise UsageError(f"nothing selected: /{action} HUNK_ID or /{action} all")
        target = current.hunk.id
    hunk_id = target
    screen.session_job(lambda: bridge.hunk_action(hunk_id, action))


async def _reject_all(screen: MainScreen) -> None:
    """Reject every staged hunk, and say what that did (it said nothing, even of nothing staged)."""
    files = screen.diff.files
    if not files:
        await screen.note("Nothing to reject: nothing is staged.")
        return
    open_hunks = [h for f in files for h in f.hunks if h.state != "rejected"]
    if not open_hunks:
        await screen.note("Nothing to reject: every staged hunk is rejected already.")
        return
    count, paths = len(open_hunks), len({h.path for h in open_hunks})

    async def rejected(files: tuple[FileView, ...]) -> None:
        screen.show_staged(files)
        await screen.note(
            f"Rejected {plural(count, 'hunk')} in {plural(paths, 'file')}: a commit leaves them out; "
            "`/rollback` discards the staged session."
        )

    screen.session_job(lambda: screen.bridge.accept_all(False), rejected)


@command("accept")
async def accept(screen: MainScreen, cmd: ParsedCommand) -> None:
    await _decide(screen, cmd, "accept")


@command("reject")
async def reject(screen: MainScreen, cmd: ParsedCommand) -> None:
    await _decide(screen, cmd, "reject")


@command("commit")
async def commit(screen: MainScreen, _cmd: ParsedCommand) -> None:
    request_commit(screen)


@command("rollback")
async def rollback(screen: MainScreen, _cmd: ParsedCommand) -> None:
    request_rollback(screen)


@command("undo")
async def undo(screen: MainScreen, cmd: ParsedCommand) -> None:
    request_undo(screen, force="--force" in cmd.args)


@command("rebase")
async def rebase_command(screen: MainScreen, _cmd: ParsedCommand) -> None:
    rebase(screen)


def request_commit(screen: MainScreen) -> None:
    files, hunks = screen.diff.totals()
    if not screen.diff.files:  # "accept some with a" of nothing at all
        screen.notify("Nothing is staged, so nothing to commit.", severity="warning")
        return
    if not hunks:
        screen.notify("No accepted hunks to commit: accept some with a, A or /accept.", severity="warning")
        return
    # A file changed on disk since staging stops the commit: the question was asked, and its "y"
    # ended in EDIT_CONFLICT.
    stale = [f.path for f in screen.diff.files if f.conflict and f.count("accepted")]
    if stale:
        screen.notify(
            f"Changed on disk since staging: {', '.join(stale)}. Nothing was committed: /rebase "
            "(or b in review) re-applies the staged hunks onto the file first.",
            severity="warning",
        )
        return
    # A commit leaves every hunk it does not write staged, the rejected ones too: the question
    # named only the pending ones, and the rejected hunk still in the pane after it surprised.
    # A conflicted hunk is counted as such, not as pending (the pane says "0 pending ⚠ 1 conflict").
    hunk_list = [h for f in screen.diff.files for h in f.hunks]
    left = {
        "pending": sum(1 for h in hunk_list if h.state == "pending" and not h.conflict),
        "rejected": sum(1 for h in hunk_list if h.state == "rejected"),
        "conflicted": sum(1 for h in hunk_list if h.state == "pending" and h.conflict),
    }
    question = f"Commit {plural(hunks, 'accepted hunk')} in {plural(files, 'file')}?"
    if any(left.values()):
        kept = " and ".join(plural(n, f"{state} hunk") for state, n in left.items() if n)
        question += f"\n{kept} will stay staged (/rollback discards what is staged)."
    # The last gate before a file is written: the pane's "⚠ syntax error" was not in the question,
    # and a "y" committed a file that no longer parses without a word.
    broken = [f for f in screen.diff.files if f.syntax_error and f.count("accepted")]
    for f in broken:
        question += f"\n⚠ {f.path}: {f.syntax_error}."

    async def committed(result: CommitResult) -> None:
        if not result.committed:
            await screen.note(result.message)
        else:
            await screen.note(f"{result.message.capitalize()}: {_names(result.files)}. `/undo` reverts it.")
        screen.refresh_staged()

    screen.confirm(question, "Commit", lambda: screen.session_job(screen.bridge.commit, committed))


def request_rollback(screen: MainScreen) -> None:
    if not screen.diff.files:
        screen.notify("Nothing is staged.", severity="warning")
        return
    hunks = sum(len(f.hunks) for f in screen.diff.files)

    async def rolled_back(_dropped: int) -> None:
        await screen.note("Staged session discarded.")
        screen.refresh_staged()

    screen.confirm(
        f"Discard the staged session ({plural(hunks, 'hunk')})?",
        "Discard",
        lambda: screen.session_job(screen.bridge.rollback, rolled_back),
    )


def request_undo(screen: MainScreen, *, force: bool) -> None:
    """Ask before reverting the newest commit; ``force`` also overwrites later changes to its files."""
    bridge = screen.bridge

    async def undone(outcome: tuple[UndoResult, list[str]]) -> None:
        result, notes = outcome
        forced = f" (overwrote later changes to {_names(result.forced)})" if result.forced else ""
        await screen.note(
            f"Undid the last commit: {_names(result.files)}{forced}." + "".join(f"\n\n⚠ {n}" for n in notes)
        )
        screen.refresh_staged()

    async def ask(files: dict[str, list[str]] | None) -> None:
        if files is None:
            from engine.edits.errors import NothingToUndo

            await screen.show_error(NothingToUndo("nothing to undo: no committed change set in the history"))
            return
        # What happens to each file: a file the commit created is removed, not "put back".
        told = {
            "remove": "removes {} it created",
            "restore": "restores {} it deleted",
            "put back": "puts back {}",
        }
        parts = [told[action].format(_listed(names)) for action, names in files.items()]
        question = f"Undo the last commit? It {' and '.join(parts)}."
        if force:
            question += "\n--force: changes made to them since the commit are overwritten."
        screen.confirm(question, "Undo", lambda: screen.run_job(lambda: bridge.undo(force=force), undone))

    screen.run_job(bridge.last_commit, ask)


def rebase(screen: MainScreen) -> None:
    async def rebased(outcome: tuple[RebaseReport, tuple[FileView, ...]]) -> None:
        report, files = outcome
        screen.show_staged(files)
        if not report.files:
            await screen.note("Nothing to rebase: no staged file changed on disk.")
            return
        parts = [f"re-applied {plural(len(report.reapplied), 'hunk')}"] if report.reapplied else []
        if report.already_applied:
            parts.append(f"{len(report.already_applied)} already in the file")
        if report.conflicts:
            them = "it" if len(report.conflicts) == 1 else "them"
            parts.append(
                f"**{plural(len(report.conflicts), 'conflict')}** (reject {them}, or ask for the change again)"
            )
        if report.dropped:
            parts.append(f"dropped {_names(report.dropped)}")
        done = "; ".join(parts or ["nothing to re-apply"])
        await screen.note(f"Rebased {_names(report.files)} onto the files on disk: {done}.")

    screen.session_job(screen.bridge.rebase, rebased)


async def request_edit(screen: MainScreen, path: str, line: int) -> None:
    """Open the proposed version of ``path`` in the user's editor; what they save is staged."""
    try:
        editor = chosen_editor()
    except SemforaError as err:
        await screen.show_error(err)
        return
    bridge = screen.bridge

    async def restaged(outcome: tuple[bool, tuple[FileView, ...]]) -> None:
        changed, files = outcome
        screen.show_staged(files)
        if changed:
            await screen.note(
                f"Staged your edit of {code(path)} as the new proposal: its changed hunks are pending again."
            )
        else:
            await screen.note(f"{code(path)}: nothing changed in the editor; the proposal is as it was.")

    async def edited(scratch: Path) -> None:
        command_line = editor_command(editor, scratch, line)
        try:
            try:
                with screen.app.suspend():
                    status = subprocess.run(command_line, check=False).returncode
            except SuspendNotSupported:
                # Headless runs (tests, web) cannot hand over the terminal; run it detached from it.
                status = subprocess.run(
                    command_line, check=False, stdin=subprocess.DEVNULL, capture_output=True
                ).returncode
        except OSError as exc:
            scratch.unlink(missing_ok=True)
            screen.notify(f"Cannot start {editor}: {exc.strerror}", severity="error")
            return
        if status != 0:
            # A failed or aborted editor (vim's `:cq`) is no "use this": its file was staged anyway.
            scratch.unlink(missing_ok=True)
            await screen.show_error(
                EditorFailed(
                    f"{editor} exited with status {status}: the staged version of {path} is unchanged",
                    hint="what the editor saved was not staged; press e to edit it again",
                )
            )
            return
        screen.session_job(lambda: bridge.restage_edited(path, scratch), restaged)

    screen.confirm(
        f"Open the proposed version of {path} at line {line} in {editor}?\n"
        "What you save there becomes the new proposal; the file itself is not touched.",
        "Open",
        lambda: screen.run_job(lambda: bridge.write_proposed(path), edited),
    )
