"""Commands about the session itself: /help, /status, /budget, /model, /theme, /index,
/resume, /cost, /clear and /quit.

They report or change the app's state (model, budget, theme, index) and never touch the
staged edits or the files of the repository.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

from engine.errors import UsageError
from engine.words import plural
from semfora_tui import slash
from semfora_tui.chat_text import cell
from semfora_tui.commands import command
from semfora_tui.engine_bridge import EngineUnavailable
from semfora_tui.slash import ParsedCommand
from semfora_tui.views import FileView, PastTurn

if TYPE_CHECKING:
    from textual.widget import Widget

    from semfora_tui.screens.main import MainScreen

KEYS_HELP = """\
**Keys.** The prompt has the keyboard unless you move it. `enter` sends (while a reply streams it \
queues the message), `shift+enter` or `ctrl+j` adds a line, `↑`/`↓` walk the history, `/` starts a \
command, `@` at the start of a word suggests files and symbols (`tab` takes one), `esc` cancels a \
streaming reply.

**Review mode** (`F2`, a click on the diff pane, or `/review`; `esc` goes back to the prompt): \
`n`/`p` or `j`/`k` hunk, `N`/`P` file, `a`/`r` accept/reject, `space` toggle, `A`/`R` whole file, \
`c` commit, `u` undo, `x` rollback, `e` edit the proposed version in $EDITOR, `b` rebase onto the \
files on disk, `m` maximize, `h`/`l` or `←`/`→` scroll long lines, `?` these keys. Commit, undo, rollback, accept-all \
and the editor ask first; keys typed before the question appeared never answer it.

`ctrl+p` opens the command palette; `ctrl+q` quits."""


@command("help")
async def help_(screen: MainScreen, _cmd: ParsedCommand) -> None:
    rows = "\n".join(f"| `{cell(c.usage)}` | {cell(c.help)} |" for c in slash.COMMANDS)
    await screen.note(f"| command | does |\n|---|---|\n{rows}\n\n{KEYS_HELP}")


@command("quit")
async def quit_(screen: MainScreen, _cmd: ParsedCommand) -> None:
    screen.app.exit(0)


@command("clear")
async def clear(screen: MainScreen, _cmd: ParsedCommand) -> None:
    # A reply still streaming (and the question it answers) and queued messages stay: the turn
    # writes into its reply until it ends, and a queued line turns into a sent one.
    keep: set[Widget] = {queued.line for queued in screen.queue}
    if screen.streaming and screen.turn is not None:
        keep.add(screen.turn)
        if screen.turn_line is not None:
            keep.add(screen.turn_line)
    await screen.chat.clear(keep=keep)


@command("cost")
async def cost(screen: MainScreen, _cmd: ParsedCommand) -> None:
    turn = screen.budget_pane.turn
    total = screen.session_usage
    await screen.note(
        f"**Last turn:** {turn.input_tokens:,} input / {turn.output_tokens:,} output tokens, ${turn.cost:.4f}  \n"
        f"**Session:** {plural(screen.turns, 'turn')}, {total.input_tokens:,} input / {total.output_tokens:,} output "
        f"tokens, ${screen.session_cost:.4f}"
    )


@command("budget")
async def budget(screen: MainScreen, cmd: ParsedCommand) -> None:
    if not cmd.args:
        await screen.note(
            f"Context budget: {screen.bridge.budget:,} tokens per request. `/budget N` changes it."
        )
        return
    try:
        value = int(cmd.args[0].replace(",", "").replace("_", ""))
    except ValueError as exc:
        raise UsageError(f"/budget needs a number of tokens, not {cmd.args[0]!r}") from exc
    screen.bridge.set_budget(value)
    screen.budget_pane.set_budget(value)
    await screen.note(f"Context budget set to {value:,} tokens.")


@command("model")
async def model(screen: MainScreen, cmd: ParsedCommand) -> None:
    if not cmd.args:
        state = "offline: " + screen.offline_reason if screen.offline else screen.offline_reason or "checking"
        await screen.note(f"Model: `{screen.bridge.model}` — {state}")
        return
    name = cmd.args[0]
    screen.header.model = name
    # Unknown until the check answers (it can take seconds: LiteLLM's import, a slow Ollama);
    # `/model` meanwhile says "checking", not the old model's state under the new name.
    screen.offline, screen.offline_reason = None, ""
    await screen.note(f"Switching to `{name}`: checking that it can be used…")

    async def switched(status: tuple[bool, str]) -> None:
        usable, description = status
        was_offline = screen.offline
        screen.offline = not usable
        screen.offline_reason = description
        screen.header.offline = not usable
        screen.header.model = name
        if usable:
            await screen.note(f"Model switched to `{name}`: {description}")
        else:
            await screen.note(f"Model set to `{name}`, but it cannot be used: {description}")
        if was_offline and usable:
            screen.notify("Reasoning enabled.")

    screen.run_job(lambda: screen.bridge.set_model(name), switched)


@command("theme")
async def theme(screen: MainScreen, cmd: ParsedCommand) -> None:
    app = screen.app
    if not cmd.args:
        names = ", ".join(f"`{n}`" for n in sorted(app.available_themes))
        await screen.note(f"Theme: `{app.theme}`. Available: {names}")
        return
    name = cmd.args[0]
    if name not in app.available_themes:
        suggestion = difflib.get_close_matches(name, list(app.available_themes), n=1)
        if suggestion:
            hint = f" Did you mean `{suggestion[0]}`?"
        else:
            hint = " Available: " + ", ".join(f"`{n}`" for n in sorted(app.available_themes)) + "."
        raise UsageError(f"unknown theme {name!r}.{hint}")
    app.theme = name
    from engine.config import save_user_setting

    path = save_user_setting("ui.theme", name)
    await screen.note(f"Theme `{name}` saved in `{path}`.")


@command("index")
async def index(screen: MainScreen, cmd: ParsedCommand) -> None:
    rebuild = "--rebuild" in cmd.args
    started = screen.start_indexing(rebuild=rebuild, announce=True)
    after = "" if started else " after the index run under way"
    if rebuild:
        await screen.note(f"Rebuilding the index{after}… questions sent meanwhile wait for it.")
    else:
        await screen.note(f"Re-indexing changed files{after}…")


@command("status")
async def status(screen: MainScreen, _cmd: ParsedCommand) -> None:
    if screen.offline is None:
        model_state = "checking"
    else:
        # The reason usually starts with the model's name, which the line already shows.
        reason = screen.offline_reason.removeprefix(f"{screen.bridge.model} ").lstrip("— ")
        model_state = ("offline — " if screen.offline else "") + reason
    pack = screen.last_pack
    pack_line = (
        f"the last pack held {pack.total_tokens:,} tokens in {plural(len(pack.items), 'item')}"
        if pack
        else "no context pack yet"
    )
    staged = sum(len(f.hunks) for f in screen.diff.files)
    vectors = screen.header.vectors or "vectors: not started"
    if screen.vectors_reason:
        vectors += f" — {screen.vectors_reason}"
    index_line = f"index: {screen.index_phase}" if screen.indexing else screen.index_summary
    await screen.note(
        f"- **repository:** `{screen.bridge.root}` ({screen.header.branch or 'no branch'})\n"
        f"- **model:** `{screen.bridge.model}` — {model_state}\n"
        f"- **{index_line}**\n"
        f"- **{vectors}**\n"
        f"- **budget:** {screen.bridge.budget:,} tokens per request; {pack_line}\n"
        f"- **memory:** {plural(screen.turns, 'turn')} this session, ${screen.session_cost:.4f}\n"
        f"- **staged:** {plural(len(screen.diff.files), 'file')}, {plural(staged, 'hunk')}"
        + (f"\n- **queued:** {plural(len(screen.queue), 'message')}" if screen.queue else "")
    )


@command("resume")
async def resume(screen: MainScreen, _cmd: ParsedCommand) -> None:
    bridge = screen.bridge

    def job() -> tuple[tuple[PastTurn, ...], str, tuple[FileView, ...]]:
        problem = ""
        try:
            turns = bridge.resume()
        except EngineUnavailable as err:
            turns, problem = (), f"conversation memory unavailable: {err.message}"
        return turns, problem, bridge.staged_files()

    async def show(resumed: tuple[tuple[PastTurn, ...], str, tuple[FileView, ...]]) -> None:
        turns, problem, files = resumed
        screen.show_staged(files)
        for past in turns:
            await screen.chat.add_user(past.request)
            reply = await screen.chat.start_reply(live=False)
            if past.reply:
                await reply.set_text(past.reply)
            await reply.mark(_past_outcome(past))
        hunks = sum(len(f.hunks) for f in files)
        summary = f"{plural(len(turns), 'earlier turn')} above" if turns else "no earlier turns"
        await screen.note(
            f"**Resumed the last session** ({summary}). Staged: {plural(len(files), 'file')}, {plural(hunks, 'hunk')}."
            + (f"\n\n{problem}" if problem else "")
        )

    screen.run_job(job, show)


def _past_outcome(past: PastTurn) -> str:
    if past.failed:
        errors = "; ".join(past.errors) or past.outcome
        return f"✗ {past.outcome.replace('_', ' ')}: {errors}"
    if past.outcome == "cancelled":
        return "cancelled"
    if past.edits:
        return f"✓ {past.outcome} ({', '.join(past.edits)})"
    return f"✓ {past.outcome or 'answered'}"
