"""`semfora edits ...`: review, commit, roll back and undo staged edits from the shell.

Every action first runs crash recovery (and says so), then loads the pending
session. Text goes to stdout, notes and errors to stderr; ``--json`` prints one
document. All behaviour lives in ``engine.edits``; this module only presents it.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from pathlib import Path
from typing import Any

from engine.config import load_settings
from engine.edits import EditBlockError, EditSession, StagedFile, rebase_after_undo, recover, undo
from engine.edits.errors import CheckFailed
from engine.edits.hunks import Hunk
from engine.errors import EXIT_PROBLEM, PathTooLong, SymlinkLoop, UsageError
from engine.repo.layout import RepoLayout
from engine.words import plural
from semfora_cli.output import print_json, warn

# The state column of `edits list` is at least this wide ("accepted" and a space).
STATE_CELLS = 9


def _summary(files: list[StagedFile]) -> str:
    if not files:
        return "no staged edits"
    lines = []

    def state(h: Hunk) -> str:
        return "conflict/" + h.state if h.conflict else h.state

    # One column for every hunk of the listing: "conflict/pending" pushed its header out of line.
    width = max([STATE_CELLS, *(len(state(h)) for f in files for h in f.hunks)])
    for f in files:
        mark = {"modify": "M", "create": "A", "delete": "D"}.get(f.kind, "?")
        notes = []
        if f.stale:
            notes.append("changed on disk")
        if f.syntax_error:
            notes.append(f.syntax_error)
        note = f"  ({'; '.join(notes)})" if notes else ""
        lines.append(
            f"{mark} {f.path}  +{f.added} -{f.removed}  pending {f.pending}, accepted {f.accepted}, "
            f"rejected {f.rejected}" + (f", conflicts {f.conflicts}" if f.conflicts else "") + note
        )
        for h in f.hunks:
            lines.append(f"    {h.id}  {state(h):<{width}} {h.header}")
    return "\n".join(lines)


def _listed(session: EditSession) -> dict[str, Any]:
    """``session`` as `list`/`show --json` print it: with no pending session, ``session`` is null
    (each call printed the id of a new session that was never saved, a different one each time)."""
    payload = session.to_json()
    if not session.path.exists():
        payload["session"] = None
    return payload


def _emit(args: argparse.Namespace, payload: dict[str, Any], text: str) -> None:
    if args.json:
        print_json(payload)
    elif text:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _is_file(path: Path) -> bool:
    """``path.is_file()``, False for a name too long to look up (the read below says why)."""
    try:
        return path.is_file()
    except OSError:
        return False


def _read_stage_input(target: str | None, root: Path) -> str:
    if not target:
        raise UsageError("edits stage needs FILE (or - for stdin)")
    if target == "-":
        return sys.stdin.read()
    if "\x00" in target:
        raise UsageError("the file name holds a NUL byte", code="PATH_INVALID")
    if not os.path.isabs(target) and not os.path.lexists(target) and _is_file(root / target):
        # Relative to the repository, as the app's `/edit --from FILE` reads it: `edits stage
        # blocks.txt --path ../repo` said 'cannot read blocks.txt' of a file the repository has.
        target = str(root / target)
    try:
        with open(target, encoding="utf-8", newline="") as fh:
            return fh.read()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SymlinkLoop(f"{target} goes round a loop of symbolic links") from exc
        if exc.errno == errno.ENAMETOOLONG:
            raise PathTooLong(f"{target} is too long for the file system") from exc
        if exc.errno == errno.EISDIR:  # exists, but is no file of edit blocks (docs/errors.md)
            raise UsageError(
                f"{target} is a directory: edits stage needs the file that holds the edit blocks",
                code="PATH_INVALID",
                hint="or - to read them from stdin",
            ) from exc
        raise UsageError(f"cannot read {target}: {exc.strerror}", code="PATH_NOT_FOUND") from exc
    except UnicodeDecodeError as exc:
        raise UsageError(f"{target} is not UTF-8 text") from exc


def _decide(session: EditSession, action: str, target: str | None) -> tuple[dict[str, Any], str]:
    if not target:
        raise UsageError(f"edits {action} needs a hunk ID, a staged file path, or 'all'")
    if action == "toggle":
        if target == "all":  # it said "hunk id 'all' is too short"
            raise UsageError("edits toggle takes one hunk id; accept all or reject all decides every hunk")
        state = session.toggle(target)
        return {"ok": True, "hunk": target, "state": state}, f"{target}: {state}"
    if target == "all":
        n = session.accept_all() if action == "accept" else session.reject_all()
        verb = "accepted" if action == "accept" else "rejected"
        if not n and not session.files():  # "rejected 0 hunks" read as if something had been there
            return {"ok": True, verb: n}, f"nothing to {action}: no staged edits"
        return {"ok": True, verb: n}, f"{verb} {plural(n, 'hunk')}"
    if session.has_file(target):
        n = session.accept_file(target) if action == "accept" else session.reject_file(target)
        verb = "accepted" if action == "accept" else "rejected"
        return {"ok": True, "file": target, verb: n}, f"{verb} {plural(n, 'hunk')} in {target}"
    state = session.accept(target) if action == "accept" else session.reject(target)
    return {"ok": True, "hunk": target, "state": state}, f"{target}: {state}"


# The flags of `semfora edits` that belong to one action: given to another, they were ignored
# without a word (`edits undo --all` undid one change set; `edits list --message m` did nothing).
FLAG_ACTIONS = {"all": "commit", "message": "commit", "force": "undo"}


def _check_flags(args: argparse.Namespace) -> None:
    for flag, action in FLAG_ACTIONS.items():
        if getattr(args, flag) not in (None, False) and args.action != action:
            raise UsageError(
                f"--{flag} goes with `semfora edits {action}`, not `edits {args.action}`",
                hint="`semfora edits --help` lists what each flag is for",
            )


def run(args: argparse.Namespace) -> int:
    _check_flags(args)
    layout = RepoLayout.for_path(args.path)
    settings = load_settings(layout.root).settings
    report = recover(layout, lock_timeout=settings.edits.lock_timeout)
    if report is not None:
        warn(f"semfora {report.message}")
    if args.action == "undo":
        undone = undo(
            layout, force=args.force, deny=settings.edits.deny, lock_timeout=settings.edits.lock_timeout
        )
        # Hunks still staged in the files put back follow them, as they followed the commit.
        follow = rebase_after_undo(layout, settings, undone.files)
        forced = f" (forced over changes in {', '.join(undone.forced)})" if undone.forced else ""
        payload = undone.to_json()
        payload["staged"] = follow.to_json()
        _emit(
            args,
            payload,
            f"undid change set {undone.txid}: restored {plural(len(undone.files), 'file')}{forced}; "
            f"{undone.remaining} more can be undone",
        )
        if not args.json:
            for note in follow.notes():
                warn(note)
        return 0
    session = EditSession.load_or_create(layout, settings)
    action = args.action
    if action == "list":
        _emit(args, _listed(session), _summary(session.files()))
    elif action == "show":
        payload = _listed(session)
        payload["diff"] = session.show()
        _emit(args, payload, session.show() or "no staged edits")
    elif action == "stage":
        text = _read_stage_input(args.target, layout.root)
        try:
            changed = session.stage_blocks(text)
        except EditBlockError as err:
            if not args.json:
                for f in err.failures:
                    if len(err.failures) > 1 or f.nearest:  # one bare failure: the error line says it
                        sys.stderr.write(
                            f"block {f.index} ({f.path or 'no path'}): {f.reason}: {f.message}\n"
                        )
                    if f.nearest:
                        sys.stderr.write(f.nearest + "\n")
            raise
        hunks = sum(len(f.hunks) for f in changed)
        payload = session.to_json()
        payload["staged_files"] = [f.path for f in changed]
        _emit(
            args,
            payload,
            f"staged {plural(hunks, 'hunk')} in {plural(len(changed), 'file')}\n" + _summary(changed),
        )
    elif action in ("accept", "reject", "toggle"):
        payload, text = _decide(session, action, args.target)
        _emit(args, payload, text)
    elif action == "commit":
        result = session.commit(all=args.all, message=args.message)
        lines = [result.message]
        if result.committed and result.remaining:
            lines.append(f"{plural(result.remaining, 'hunk')} still staged")
        if result.git is not None:
            lines.append(
                f"git commit {result.git.sha}" if result.git.sha else f"git commit failed: {result.git.error}"
            )
        for check in result.checks:
            lines.append(
                f"{check.name} ({check.command}): {'ok' if check.ok else f'failed, exit {check.exit_code}'}"
            )
            if not check.ok and check.output.strip():
                lines.append(check.output.rstrip())
        if args.message is not None and result.committed and result.git is None:
            # The message names a git commit, and none is made unless git.auto_commit is on.
            warn(
                "--message was not used: git.auto_commit is off, so no git commit was made "
                "(commit the files with git, or set git.auto_commit = true)"
            )
        payload = result.to_json()
        failed = [c for c in result.checks if not c.ok]
        if failed:
            # The commit landed and stays; the run still failed, like `make` after a broken test.
            problem = CheckFailed(
                "; ".join(f"{c.name} ({c.command}) failed with exit {c.exit_code}" for c in failed)
                + " after the commit (which stays; `semfora edits undo` reverts it)"
            )
            payload.update(problem.to_json())
        _emit(args, payload, "\n".join(lines))
        if failed:
            return EXIT_PROBLEM
    elif action == "rollback":
        n = session.rollback()
        _emit(
            args,
            {"ok": True, "discarded": n},
            f"discarded {plural(n, 'staged hunk')}" if n else "no staged edits",
        )
    elif action == "rebase":
        rb = session.rebase()
        text = (
            f"rebased {plural(len(rb.files), 'file')}: {plural(len(rb.reapplied), 'hunk')} re-applied, "
            f"{len(rb.conflicts)} in conflict" + (f", dropped {', '.join(rb.dropped)}" if rb.dropped else "")
            if rb.files
            else "nothing to rebase: no staged file changed on disk"
        )
        _emit(args, rb.to_json(), text)
    else:
        raise UsageError(f"unknown edits action {action!r}")
    return 0
