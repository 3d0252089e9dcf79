"""The diff-preview pane: staged files with counts, then every hunk and its state.

Focusing it is review mode: its one-key bindings only work while the user has chosen to
review (F2, a click, `/review`); escape (a binding of the screen) hands the keyboard back. It
renders ``FileView``s (long lines scroll sideways) and turns review keys into messages
(``HunkAction``, ``CommitRequested``, ...). It never touches the edit session itself:
the screen applies the decision through the engine and hands back fresh views.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import ScrollableContainer
from textual.message import Message
from textual.widgets import Static

from engine.words import plural
from semfora_tui.theming import SEMFORA_VARIABLE_DEFAULTS
from semfora_tui.views import FileView, HunkView

STATE_BADGE: dict[str, str] = {
    "pending": "[ ] pending",
    "accepted": "[✓] accepted",
    "rejected": "[✗] rejected",
}
# Every badge is padded to this width, so the hunk ids after them stand in one column.
BADGE_CELLS = max(len(badge) for badge in STATE_BADGE.values())
# The state a decision key gives a hunk (toggle flips it).
DECIDED_STATE: dict[str, str] = {"accept": "accepted", "reject": "rejected"}
# Short lines: the diff body does not wrap (long diff lines scroll sideways), and the pane can be narrow.
EMPTY_TEXT = "No staged changes.\nAsk for an edit, or stage\nblocks with /edit --from FILE."


@dataclass(frozen=True)
class ReviewHint:
    """One entry of the review-mode footer: keys, a short label, and its rank when space is short."""

    action: str
    keys: str
    label: str
    rank: int  # 0 is shown first; higher ranks are dropped first on a narrow terminal


# The footer of review mode, in display order. Ranks keep what changes files or history
# (commit, undo, rollback, edit) and the way back to the prompt visible even at 80 columns
# (with `c` shown, `?` makes room for them: it lists every key, the footer's dropped ones too).
REVIEW_HINTS: tuple[ReviewHint, ...] = (
    ReviewHint("next_hunk", "n/p", "hunk", 1),
    ReviewHint("next_file", "N/P", "file", 7),
    ReviewHint("accept", "a/r", "accept/reject", 0),
    ReviewHint("toggle_hunk", "space", "toggle", 6),
    ReviewHint("accept_file", "A/R", "whole file", 8),
    ReviewHint("commit", "c", "commit", 0),
    ReviewHint("undo", "u", "undo", 2),
    ReviewHint("rollback", "x", "rollback", 3),
    ReviewHint("edit", "e", "edit", 3),
    ReviewHint("rebase", "b", "rebase", 5),
    ReviewHint("maximize", "m", "maximize", 5),
    ReviewHint("keys_help", "?", "keys", 4),
    ReviewHint("leave", "esc", "back", 0),
)


@dataclass(frozen=True)
class _Position:
    file_index: int
    hunk: HunkView


class DiffPane(ScrollableContainer, can_focus=True):
    """Keyboard review of a staged edit session (review mode is this pane having the focus)."""

    ALLOW_MAXIMIZE = True
    BINDINGS = [
        Binding("n,j", "next_hunk", "Next hunk"),
        Binding("p,k", "prev_hunk", "Prev hunk"),
        Binding("N,shift+n", "next_file", "Next file"),
        Binding("P,shift+p", "prev_file", "Prev file"),
        Binding("a", "accept", "Accept"),
        Binding("r", "reject", "Reject"),
        Binding("space", "toggle_hunk", "Toggle"),
        Binding("A,shift+a", "accept_file", "Accept file"),
        Binding("R,shift+r", "reject_file", "Reject file"),
        Binding("c", "commit", "Commit"),
        Binding("u", "undo", "Undo"),
        Binding("x", "rollback", "Rollback"),
        Binding("e", "edit", "Edit proposal"),
        Binding("b", "rebase", "Rebase"),
        Binding("m", "maximize", "Maximize"),
        Binding("question_mark", "keys_help", "All keys"),
        Binding("h", "scroll_left", "Scroll left", show=False),
        Binding("l", "scroll_right", "Scroll right", show=False),
    ]

    class HunkAction(Message):
        """Accept, reject or toggle one hunk."""

        def __init__(self, hunk_id: str, action: str) -> None:
            super().__init__()
            self.hunk_id = hunk_id
            self.action = action

    class FileAction(Message):
        """Accept or reject every hunk of one file."""

        def __init__(self, path: str, action: str) -> None:
            super().__init__()
            self.path = path
            self.action = action

    class CommitRequested(Message):
        """Commit the accepted hunks (the app asks for confirmation first)."""

    class UndoRequested(Message):
        """Revert the last commit."""

    class KeysHelpRequested(Message):
        """Show every key (a narrow footer shows only the most used)."""

    class RollbackRequested(Message):
        """Discard the pending session (the app asks for confirmation first)."""

    class RebaseRequested(Message):
        """Re-apply the staged hunks onto files that changed on disk."""

    class EditRequested(Message):
        """Open the proposed version of ``path`` at ``line`` in the user's editor."""

        def __init__(self, path: str, line: int) -> None:
            super().__init__()
            self.path = path
            self.line = line

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.files: tuple[FileView, ...] = ()
        self.cursor = 0
        self._hunk_lines: list[int] = []

    def compose(self) -> ComposeResult:
        yield Static(EMPTY_TEXT, id="diff-body")

    def on_mount(self) -> None:
        self.watch(self.app, "theme", lambda _theme: self._render_body(), init=False)

    # -- data ---------------------------------------------------------------------------------

    @property
    def positions(self) -> list[_Position]:
        return [_Position(i, h) for i, f in enumerate(self.files) for h in f.hunks]

    @property
    def current(self) -> _Position | None:
        positions = self.positions
        return positions[self.cursor] if 0 <= self.cursor < len(positions) else None

    def show(self, files: tuple[FileView, ...]) -> None:
        """Display a new state of the session, keeping the selected hunk when it still exists."""
        selected = self.current.hunk.id if self.current else None
        self.files = files
        ids = [p.hunk.id for p in self.positions]
        self.cursor = ids.index(selected) if selected in ids else min(self.cursor, max(len(ids) - 1, 0))
        self._render_body()
        self.refresh_bindings()

    def totals(self) -> tuple[int, int]:
        """(files, hunks) that a commit would write: those with accepted hunks."""
        accepted = [f.count("accepted") for f in self.files]
        return sum(1 for n in accepted if n), sum(accepted)

    # -- rendering ----------------------------------------------------------------------------

    def _colour(self, name: str) -> str:
        variables = getattr(self.app, "theme_variables", {}) or {}
        return variables.get(name) or SEMFORA_VARIABLE_DEFAULTS[name]

    def _render_body(self) -> None:
        if not self.is_mounted:
            return
        body = self.query_one("#diff-body", Static)
        if not self.files:
            self._hunk_lines = []
            body.update(EMPTY_TEXT)
            return
        added = Style(color=self._colour("semfora-added"))
        removed = Style(color=self._colour("semfora-removed"))
        changed = Style(color=self._colour("semfora-changed"), bold=True)
        warn = Style(color=self._colour("semfora-priority-high"), bold=True)
        current = self.current
        text = Text(no_wrap=True, overflow="ignore")  # long lines scroll sideways, never cut
        line_no = 0

        def add(line: str | Text, style: Style | str = "") -> None:
            nonlocal line_no
            text.append(line, style=style) if isinstance(line, str) else text.append_text(line)
            text.append("\n")
            line_no += 1

        total = sum(len(f.hunks) for f in self.files)
        add(f"{plural(len(self.files), 'file')}, {plural(total, 'hunk')} staged", Style(bold=True))
        for index, f in enumerate(self.files):
            mark = "▸" if current and current.file_index == index else " "
            row = Text(f"{mark} {f.path}  ")
            row.append(f"+{f.added}", style=added)
            row.append(" ")
            row.append(f"-{f.removed}", style=removed)
            conflicts = [h for h in f.hunks if h.conflict]
            pending = f.count("pending") - sum(1 for h in conflicts if h.state == "pending")
            row.append(
                f"  {plural(len(f.hunks), 'hunk')}: {f.count('accepted')} ✓ {f.count('rejected')} ✗"
                f" {pending} pending"
            )
            if conflicts:  # "1 pending" it said of a hunk no accept can take
                row.append(f"  ⚠ {plural(len(conflicts), 'conflict')}", style=warn)
            if f.conflict:
                row.append(f"  ⚠ conflict: {f.conflict}", style=warn)
            if f.syntax_error:
                row.append(f"  ⚠ syntax error: {f.syntax_error}", style=warn)
            add(row)
        self._hunk_lines = []
        for position in self.positions:
            hunk = position.hunk
            is_current = current is not None and hunk.id == current.hunk.id
            add("")
            self._hunk_lines.append(line_no)
            # The state and the id (what `/accept ID` takes) come first: after a long path and
            # header they lay past the pane's right edge, and the id was cut at 120 columns.
            head = Text("▶ " if is_current else "  ", style="bold")
            badge = STATE_BADGE.get(hunk.state, hunk.state)
            head.append(badge, style="reverse" if is_current else "bold")
            head.append(" " * (BADGE_CELLS - len(badge)) + f"  #{hunk.id}  ", style="dim")
            head.append(f"{hunk.path} ", style="bold")
            head.append(hunk.header or f"hunk {hunk.id}", style=changed)
            add(head)
            if hunk.conflict:
                add(f"  ⚠ conflict: {hunk.conflict}", warn)
            if hunk.syntax_error:
                add(f"  ⚠ syntax error: {hunk.syntax_error}", warn)
            dim = hunk.state == "rejected"
            if not hunk.lines:
                add("  (an empty file)", Style(italic=True, dim=True))
            for line in hunk.lines:
                if line.startswith("+"):
                    style = added
                elif line.startswith("-"):
                    style = removed
                elif line.startswith("@@"):
                    style = changed
                else:
                    style = Style()
                add("  " + line, style + Style(dim=True) if dim else style)
        body.update(text)

    def _scroll_to_current(self) -> None:
        if 0 <= self.cursor < len(self._hunk_lines):
            self.scroll_to(x=0, y=max(self._hunk_lines[self.cursor] - 1, 0), animate=False)

    def _move(self, cursor: int) -> None:
        count = len(self.positions)
        if not count:
            return
        self.cursor = max(0, min(cursor, count - 1))
        self._render_body()
        self._scroll_to_current()

    # -- actions ------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "commit":
            return self.totals()[1] > 0
        if action in ("next_file", "prev_file"):
            return len(self.files) > 1
        if action == "rebase":
            return any(f.conflict for f in self.files)
        return bool(self.positions) if action in _NEEDS_HUNKS else True

    def action_next_hunk(self) -> None:
        self._move(self.cursor + 1)

    def action_prev_hunk(self) -> None:
        self._move(self.cursor - 1)

    def _file_start(self, file_index: int) -> int:
        return sum(len(f.hunks) for f in self.files[:file_index])

    def action_next_file(self) -> None:
        if self.current and self.current.file_index + 1 < len(self.files):
            self._move(self._file_start(self.current.file_index + 1))

    def action_prev_file(self) -> None:
        if self.current is None:
            return
        index = self.current.file_index
        start = self._file_start(index)
        self._move(self._file_start(index - 1) if self.cursor == start and index > 0 else start)

    def _decide(self, hunk_ids: Collection[str], action: str) -> None:
        """Show a decision at once (a burst of keys must not wait for the engine: `a` then `c`
        commits that hunk); the screen applies it and the engine's state replaces this one."""

        def decided(hunk: HunkView) -> HunkView:
            if hunk.id not in hunk_ids:
                return hunk
            state = DECIDED_STATE.get(action) or ("rejected" if hunk.state == "accepted" else "accepted")
            if state == "accepted" and hunk.conflict:
                return hunk  # the engine refuses it, and says why
            return replace(hunk, state=state)

        self.files = tuple(replace(f, hunks=tuple(decided(h) for h in f.hunks)) for f in self.files)
        self._render_body()
        self.refresh_bindings()

    def _hunk(self, action: str) -> None:
        if self.current:
            self._decide({self.current.hunk.id}, action)
            self.post_message(self.HunkAction(self.current.hunk.id, action))

    def _file(self, action: str) -> None:
        if self.current:
            f = self.files[self.current.file_index]
            self._decide({h.id for h in f.hunks}, action)
            self.post_message(self.FileAction(f.path, action))

    def action_accept(self) -> None:
        self._hunk("accept")
        self._move(self.cursor + 1)

    def action_reject(self) -> None:
        self._hunk("reject")
        self._move(self.cursor + 1)

    def action_toggle_hunk(self) -> None:
        self._hunk("toggle")

    def action_accept_file(self) -> None:
        self._file("accept")

    def action_reject_file(self) -> None:
        self._file("reject")

    def action_commit(self) -> None:
        self.post_message(self.CommitRequested())

    def action_undo(self) -> None:
        self.post_message(self.UndoRequested())

    def action_keys_help(self) -> None:
        self.post_message(self.KeysHelpRequested())

    def action_rollback(self) -> None:
        self.post_message(self.RollbackRequested())

    def action_edit(self) -> None:
        if self.current:
            self.post_message(self.EditRequested(self.current.hunk.path, self.current.hunk.start_line))

    def action_rebase(self) -> None:
        self.post_message(self.RebaseRequested())

    def action_maximize(self) -> None:
        if self.screen.maximized is self:
            self.screen.minimize()
        else:
            self.screen.maximize(self, container=False)


_NEEDS_HUNKS = frozenset(
    {
        "next_hunk",
        "prev_hunk",
        "accept",
        "reject",
        "toggle_hunk",
        "accept_file",
        "reject_file",
        "rollback",
        "edit",
        "maximize",
    }
)
