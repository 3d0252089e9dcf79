"""The Model-B turn: build the pack, ask the reasoner, resolve NEED, stage the edits, log it.

Owns ``Orchestrator`` (the API the CLI and the TUI call, from a worker thread) and
``TurnResult``. It decides every fetch itself; the model can only ask through a bounded
``NEED:`` block. It never writes repository files: edits go to ``EditSession``.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.config import Settings
from engine.errors import SecretPathDenied, SemforaError, UsageError
from engine.llm.base import (
    Messages,
    ModelCancelled,
    ModelError,
    ModelUnavailable,
    Reasoner,
    StreamDone,
    TextDelta,
    Usage,
)
from engine.orchestrator.budget import ContextBudget, ContextItem
from engine.orchestrator.context import ContextGatherer, ContextPack, StagedView
from engine.orchestrator.intent import classify_intent
from engine.orchestrator.memory import Episode, NoEmbeddingProvider, SemforaMemory, SessionStore, TurnRecall
from engine.orchestrator.prompts import (
    edit_failure_followup,
    need_followup,
    parse_need,
    render_pack,
    stable_prefix,
    task_message,
)
from engine.orchestrator.runlog import RunRecord, item_record, new_run_id, write_run
from engine.policy.redaction import redact
from engine.repo.layout import RepoLayout
from engine.words import plural

log = logging.getLogger(__name__)

# Rounds of NEED follow-up per turn (issue 5): enough to fill a gap, too few to explore.
MAX_NEED_ROUNDS = 2
# A staged file's diff shown to the model is cut here (a new file of a thousand lines is not sent whole).
MAX_STAGED_CHARS = 6000
# A staged file up to this size is shown whole as it will read (its diff's few context lines
# left the model to piece the staged code together from the diff and the lines on disk).
MAX_STAGED_WHOLE_CHARS = 4000
# Each NEED round may add this share of the request budget: the first pack spends the budget
# on code, so a round gets its own allowance (a turn's context stays within
# budget x (1 + MAX_NEED_ROUNDS x NEED_ROUND_SHARE)), enough for a few whole definitions.
NEED_ROUND_SHARE = 0.5
# Highest fan-in symbols pre-summarized once per session when ollama.presummarize is on.
PRESUMMARY_HUBS = 200
# Turns of this session shown in the cached session-memory block.
SESSION_MEMORY_TURNS = 8
# The first line of every edit block: a reply without it proposes no edits.
EDIT_MARKER = "<<<<<<<"

TextCallback = Callable[[str], None]
StatusCallback = Callable[[str], None]


@dataclass(frozen=True)
class TurnResult:
    """What one turn produced. ``outcome``: answered | staged | applied | proposed |
    edit_failed | cancelled | error."""

    reply: str
    pack: ContextPack
    usage: Usage
    cost: float
    edits_staged: tuple[str, ...]
    errors: tuple[str, ...]
    run_id: str
    outcome: str
    model: str = ""
    need_rounds: int = 0
    edit_retries: int = 0
    hunks: int = 0
    commit: Any = None
    extra_items: tuple[ContextItem, ...] = field(default=())
    error_code: str | None = None  # set when the turn failed or a check after --apply failed

    @property
    def ok(self) -> bool:
        return self.outcome not in ("edit_failed", "error", "cancelled") and self.error_code is None

    def to_json(self) -> dict[str, Any]:
        failure: dict[str, Any] = {}
        if not self.ok:
            failure = {
                "error_code": self.error_code or "MODEL_ERROR",
                "error_message": "; ".join(self.errors) or self.outcome,
            }
        return {
            "ok": self.ok,
            **failure,
            "run_id": self.run_id,
            "outcome": self.outcome,
            "model": self.model,
            "reply": self.reply,
            "intent": self.pack.intent,
            "budget": self.pack.budget,
            "context_tokens": self.pack.total_tokens + sum(i.tokens for i in self.extra_items),
            "usage": self.usage.to_dict(),
            "cost_usd": round(self.cost, 6),
            "edits_staged": list(self.edits_staged),
            "hunks": self.hunks,
            "need_rounds": self.need_rounds,
            "edit_retries": self.edit_retries,
            "errors": list(self.errors),
            "notes": list(self.pack.notes),
            "commit": self.commit.to_json() if hasattr(self.commit, "to_json") else None,
        }


def _need_wanted(symbols: tuple[str, ...], files: tuple[str, ...]) -> str:
    """What a NEED request asks for, for the status line ("3 more symbols and 1 file")."""
    parts = []
    if symbols:
        parts.append(plural(len(symbols), "more symbol"))
    if files:
        parts.append(plural(len(files), "file"))
    return " and ".join(parts) or "the context"


def _denied_paths(exc: SemforaError) -> list[str]:
    """The files of a failed reply that are on the secret deny-list (``edits.deny``), in order."""
    failures = getattr(exc, "failures", ())
    return list(dict.fromkeys(f.path for f in failures if f.reason == "secret_path"))


def _denied_note(paths: list[str]) -> str:
    names = ", ".join(paths)
    return (
        f"the reply edits {names}, on the secret deny-list (edits.deny): semfora never writes "
        f"{'such files' if len(paths) > 1 else 'such a file'}, so nothing was staged and the model was "
        "not asked again (edit it yourself)"
    )


def _output_limit_note(limit: int) -> str:
    return (
        f"the reply stopped at the output limit (llm.max_output_tokens = {limit:,} tokens), so it is "
        "incomplete; raise the limit (SEMFORA_LLM__MAX_OUTPUT_TOKENS) or ask for a smaller change"
    )


class _TurnEmbedder:
    """Turn memory's embeddings through the index's provider, chosen on first use (the same loaded model)."""

    def __init__(self, layout: RepoLayout, settings: Settings) -> None:
        self.layout = layout
        self.settings = settings
        self._embedder: Any = None

    @property
    def spec(self) -> str:
        return str(self._embedder.spec) if self._embedder is not None else ""

    def __call__(self, texts: list[str]) -> list[list[float]]:
        if self._embedder is None:
            from engine.index.embeddings import choose_embedder

            choice = choose_embedder(self.settings)
            if choice.embedder is None:
                auto = (self.settings.search.embedding or "").strip().lower() == "auto"
                error = NoEmbeddingProvider if auto else ModelUnavailable
                raise error(f"no embedding provider: {choice.reason}", hint=None)
            from engine.query.search import shared_embedder

            self._embedder = shared_embedder(self.layout, self.settings, choice.embedder)
        return [list(v) for v in self._embedder.embed_documents(texts)]


def _turn_embedder(layout: RepoLayout, settings: Settings) -> Callable[[list[str]], list[list[float]]] | None:
    """Embeddings for turn memory through the index's provider; None when vectors are off."""
    if (settings.search.embedding or "").strip().lower() in ("none", "off", ""):
        return None
    return _TurnEmbedder(layout, settings)


class Orchestrator:
    """Model B for one repository. One turn at a time (calls are serialised by a lock).

    ``build_context`` never calls a model. ``run_turn`` needs a reasoner and raises
    ``ModelUnavailable`` (exit 3) without one.
    """

    def __init__(
        self,
        layout: RepoLayout,
        settings: Settings,
        reasoner: Reasoner | None = None,
        *,
        resume: bool = False,
        overview: Callable[[int], str] | None = None,
    ) -> None:
        self.layout = layout
        self.settings = settings
        self.reasoner = reasoner
        self.memory = SemforaMemory()
        self.sessions = SessionStore(layout)
        self.session = self.sessions.open(resume)
        self.memory.mark_viewed(list(self.session.viewed_symbols))
        self.recall = TurnRecall(
            layout, self.sessions.episodes, embed=_turn_embedder(layout, settings), settings=settings
        )
        count = None
        if settings.llm.exact_token_count:
            from engine.llm.tokens import TokenCounter

            count = TokenCounter(settings).count  # exact when online, chars/4 otherwise
        self.gatherer = ContextGatherer(
            layout, settings, self.memory, overview=overview or self._load_overview, count_tokens=count
        )
        self._lock = threading.RLock()
        self._presummary: threading.Event | None = None
        self.presummary_thread: threading.Thread | None = None
        self._hubs_requested = False  # background model summaries, if any

    def _load_overview(self, max_tokens: int) -> str:
        """The bounded overview, stored in index.db once per index state (see ``stored_overview``)."""
        if not self.layout.index_db.exists():
            return ""
        return self.gatherer.store().overview(max_tokens)

    def close(self) -> None:
        if self._presummary is not None:
            self._presummary.set()
        self.gatherer.close()

    def _presummarize(self, pack: ContextPack) -> None:
        """Ask Ollama, in the background, for the model summaries this pack lacked.

        The turn never waits: this pack used extractive summaries; later packs read the
        model's from cache.db. With ``ollama.presummarize`` the first turn also queues the
        highest fan-in symbols. Skipped at once while Ollama is known to be down.
        """
        from engine.services.ollama import breaker_for, normalise_host

        if not breaker_for(normalise_host(self.settings.ollama.host)).allow():
            return
        hubs = 0
        if self.settings.ollama.presummarize and not self._hubs_requested:
            hubs, self._hubs_requested = PRESUMMARY_HUBS, True
        requests = self.gatherer.missing_summaries(list(pack.items), hubs=hubs)
        if not requests:
            return
        from engine.llm.summarizer import Summarizer

        if self._presummary is not None:
            self._presummary.set()
        self.presummary_thread, self._presummary = Summarizer(self.layout, self.settings).start_presummarize(
            requests
        )

    # -- context (pure: never calls a model) -------------------------------------------------

    def new_budget(self, budget: int | None = None) -> ContextBudget:
        b = ContextBudget.from_settings(self.settings, budget)
        b.count_tokens = self.gatherer.count  # truncation counts the way items were counted
        return b

    def build_context(self, task: str, budget: int | None = None) -> ContextPack:
        """The context pack for ``task`` at ``budget`` tokens (default: settings), never above it."""
        with self._lock:
            return self._build(task, self.new_budget(budget))

    def _build(self, task: str, budget: ContextBudget) -> ContextPack:
        recalled = self.recall.recall(task)
        lines = self.session.summary_lines(SESSION_MEMORY_TURNS)
        return self.gatherer.build(
            task, budget, session_lines=lines, recalled=recalled, staged=self._staged_diffs()
        )

    def _staged_diffs(self) -> list[StagedView]:
        """What the model is shown of each file with pending or accepted hunks in the edit
        session: the file as it will read when it is small, else the diff of its hunks."""
        from engine.edits.session import EditSession

        try:
            session = EditSession.load_or_create(self.layout, self.settings)
            files = session.files()
        except SemforaError as exc:  # an unreadable session is reported where it is used
            log.info("staged edits not shown to the model: %s", exc.message)
            return []
        out = []
        for staged in files:
            hunks = [h for h in staged.hunks if h.state != "rejected"]
            if not hunks:
                continue
            what = {"create": "a new file", "delete": "the deletion of this file"}.get(staged.kind, "edits")
            whole = session.kept_text(staged.path) if staged.kind != "delete" else None
            if whole is not None and len(whole) <= MAX_STAGED_WHOLE_CHARS:
                headers = ", ".join(f"{h.header} ({h.state})" for h in hunks)
                text = (
                    f"{what} staged earlier in this session, not on disk yet (the user reviews them): "
                    f"{headers}. The whole file as it will read with them:\n{whole}"
                )
                out.append(StagedView(staged.path, text, whole=True))
                continue
            # The file's code elsewhere in the pack is its text on disk: said here, or the model
            # read two versions of one function and was told neither was the old one.
            lines = [
                f"{what} staged earlier in this session, not on disk yet (the user reviews them); "
                f"the code of {staged.path} shown below is as on disk, without them:"
            ]
            for h in hunks:  # as the diff pane and `semfora edits show` give them, context included
                lines += [f"{h.header} ({h.state})", *h.lines]
            text = "\n".join(lines)
            if len(text) > MAX_STAGED_CHARS:
                cut = text.rfind("\n", 0, MAX_STAGED_CHARS)
                text = text[:cut] + f"\n[... {text.count(chr(10), cut)} more staged lines]"
            out.append(StagedView(staged.path, text))
        return out

    def resolve_need(
        self, pack: ContextPack, names: list[str], budget: int | None = None, round_no: int = 1
    ) -> list[ContextItem]:
        """The items one NEED round adds to ``pack`` for ``names``, as ``run_turn`` would send them.

        ``names`` are what a model writes in a NEED block: symbol names (``Session.send``,
        ``send``) or repository paths (``src/app.py``), at most ``MAX_NEED_TARGETS`` served.
        ``budget`` is the round's allowance in tokens (default: ``NEED_ROUND_SHARE`` of the
        pack's budget). Code the pack showed whole is not sent again; a symbol the pack showed
        as an excerpt comes whole. Never calls a model.
        """
        from engine.orchestrator.anchors import looks_like_path
        from engine.orchestrator.prompts import MAX_NEED_TARGETS

        wanted = list(dict.fromkeys(n for n in names if n.strip()))[:MAX_NEED_TARGETS]
        allowance = self.new_budget(budget if budget is not None else int(NEED_ROUND_SHARE * pack.budget))
        with self._lock:
            answer = self.gatherer.resolve_need(
                pack,
                [n for n in wanted if not looks_like_path(n)],
                [n for n in wanted if looks_like_path(n)],
                allowance,
                round_no,
            )
        return list(answer.items)

    def render(self, pack: ContextPack) -> str:
        """The request exactly as ``run_turn`` would send it first, as text."""
        return render_pack(
            stable_prefix(list(pack.items)), task_message(pack.task, list(pack.items), pack.intent)
        )

    # -- a turn -------------------------------------------------------------------------------

    def run_turn(
        self,
        task: str,
        on_text: TextCallback | None = None,
        cancel: threading.Event | None = None,
        stage: bool = True,
        *,
        apply: bool = False,
        budget: int | None = None,
        on_status: StatusCallback | None = None,
        on_phase: StatusCallback | None = None,
    ) -> TurnResult:
        """Run one turn. Streams reply text to ``on_text``; ``cancel`` stops it at once.

        ``on_status`` gets the events worth keeping (a retry, a NEED round); ``on_phase`` what
        the turn is waiting for now (a spinner's words), once the pack is built.

        ``stage`` hands valid edit blocks to the pending ``EditSession``; ``apply`` also
        accepts and commits them. With ``stage=False`` blocks are only checked. Any failed
        block means nothing of that reply is staged; the failure (with the nearest real
        lines) goes back to the model at most ``llm.edit_retries`` times.
        """
        if not task.strip():
            raise UsageError("the task is empty: say what you want done", hint='e.g. semfora ask "explain X"')
        if self.reasoner is None:
            from engine.llm.select import describe_model_status

            raise ModelUnavailable(describe_model_status(self.settings))
        with self._lock:
            return self._run(task, on_text, cancel, stage or apply, apply, budget, on_status, on_phase)

    def _run(
        self,
        task: str,
        on_text: TextCallback | None,
        cancel: threading.Event | None,
        stage: bool,
        apply: bool,
        budget_tokens: int | None,
        on_status: StatusCallback | None,
        on_phase: StatusCallback | None = None,
    ) -> TurnResult:
        assert self.reasoner is not None
        status = on_status or (lambda _msg: None)
        t0 = time.perf_counter()
        record = RunRecord(run_id=new_run_id(), task=task, model=self.reasoner.model)
        budget = self.new_budget(budget_tokens)
        pack = self._build(task, budget)
        record.intent, record.intent_rule, record.budget = pack.intent, pack.intent_rule, pack.budget
        record.items = [item_record(i) for i in pack.items]
        record.timings["context"] = time.perf_counter() - t0
        if pack.budget_note:  # `ask --budget 150000` showed /94,000 in the usage line, with no word why
            status(pack.budget_note)
        if on_phase is not None:  # the app said "building the context pack" until the first token
            on_phase(f"asking the model ({pack.total_tokens:,} tokens of context)…")

        system = stable_prefix(list(pack.items))
        messages: Messages = [{"role": "user", "content": task_message(task, list(pack.items), pack.intent)}]
        usage = Usage()
        cost = 0.0
        errors: list[str] = []
        extra: list[ContextItem] = []
        need_rounds = retries = hunks = 0
        staged: tuple[str, ...] = ()
        outcome = "answered"
        commit: Any = None
        reply = ""
        error_code: str | None = None
        cut = False  # the last reply stopped at the output limit
        # One deadline for every model call of this turn (NEED rounds and edit retries included).
        deadline = time.monotonic() + self.settings.llm.turn_timeout
        try:
            while True:
                t_call = time.perf_counter()
                reply, done = self._call(system, messages, on_text, cancel, deadline, status)
                record.timings[f"model_{len(record.raw_replies) + 1}"] = time.perf_counter() - t_call
                record.raw_replies.append(reply)
                usage, cost = usage + done.usage, cost + done.cost_usd
                # A reply cut at the output limit looks whole: the turn says so (see below),
                # or the user trusts half an answer and a retry asks for the same length again.
                cut = done.stop_reason == "max_tokens"
                need = parse_need(reply)
                if need is not None and not need.empty:
                    if need_rounds >= MAX_NEED_ROUNDS:
                        errors.append(f"the model asked for more context after {MAX_NEED_ROUNDS} rounds")
                        break
                    need_rounds += 1
                    status(
                        f"the model asked for {_need_wanted(need.symbols, need.files)}; fetching them and "
                        f"asking again (round {need_rounds}/{MAX_NEED_ROUNDS})"
                    )
                    round_budget = self.new_budget(int(NEED_ROUND_SHARE * budget.limit))
                    answer = self.gatherer.resolve_need(
                        pack, need.symbols, need.files, round_budget, need_rounds, sent=extra
                    )
                    items, missing = list(answer.items), list(answer.missing)
                    extra.extend(items)
                    record.need_rounds.append(
                        {
                            "round": need_rounds,
                            "symbols": list(need.symbols),
                            "files": list(need.files),
                            "items": [item_record(i) for i in items],
                            "missing": missing,
                        }
                    )
                    messages += [
                        {"role": "assistant", "content": reply},
                        {"role": "user", "content": need_followup(items, missing)},
                    ]
                    continue
                if EDIT_MARKER not in reply:
                    if retries:
                        # The model answered a failed edit without new blocks: it gave up.
                        errors.append(
                            f"the model sent no corrected edit blocks after {plural(retries, 'failed attempt')}"
                        )
                        outcome, error_code = "edit_failed", "EDIT_BLOCK_FAILED"
                    break
                try:
                    staged, hunks = self._edits(task, reply, stage)
                    outcome = "staged" if stage else "proposed"
                    break
                except SemforaError as exc:
                    prompt = getattr(exc, "retry_prompt", None)
                    denied = _denied_paths(exc)
                    if denied:
                        # No retry can make a deny-listed write acceptable: asking the model again
                        # spent two more calls and ended with the same refusal.
                        errors.append(_denied_note(denied))
                        outcome, error_code = "edit_failed", SecretPathDenied.code
                        break
                    if prompt is None or retries >= self.settings.llm.edit_retries:
                        errors.append(exc.message + (f" ({exc.hint})" if exc.hint else ""))
                        outcome, error_code = "edit_failed", exc.code
                        break
                    retries += 1
                    first_line = exc.message.partition("\n")[0]
                    status(
                        f"an edit block did not apply; asking the model again "
                        f"({retries}/{self.settings.llm.edit_retries}): {first_line}"
                        + ("; the reply stopped at the output limit" if cut else "")
                    )
                    messages += [
                        {"role": "assistant", "content": reply},
                        {
                            "role": "user",
                            "content": edit_failure_followup(
                                prompt(), self.settings.llm.max_output_tokens if cut else None
                            ),
                        },
                    ]
            if cut:
                errors.append(_output_limit_note(self.settings.llm.max_output_tokens))
            if apply and outcome == "staged":
                from engine.edits.session import EditSession

                try:
                    commit = EditSession.load_or_create(self.layout, self.settings).commit(all=True)
                    outcome = "applied" if commit.committed else "staged"
                    if not commit.committed:
                        errors.append(f"the staged edits were not applied: {commit.message}")
                    failed = [c for c in commit.checks if not c.ok]
                    if failed:
                        errors.extend(
                            f"{c.name} ({c.command}) failed with exit {c.exit_code}" for c in failed
                        )
                        error_code = "CHECK_FAILED"
                except SemforaError as exc:  # e.g. a file changed on disk: the edits stay staged
                    errors.append(f"could not apply the staged edits: {exc.message}")
                    error_code = exc.code
        except ModelCancelled as exc:
            reply, outcome = exc.partial_text, "cancelled"
            if exc.usage is not None:
                usage, cost = usage + exc.usage, cost + exc.cost_usd
            errors.append(exc.message)
            error_code = exc.code
        except SemforaError as exc:  # model errors, a lost key mid-session: logged, then raised
            reply, outcome = getattr(exc, "partial_text", "") or reply, "error"
            errors.append(exc.message)
            exc.context_pack = pack
            self._finish(record, task, pack, reply, staged, outcome, usage, cost, errors, t0)
            raise
        self._finish(record, task, pack, reply, staged, outcome, usage, cost, errors, t0)
        # After the reply, not during it: a local reasoner may share the same Ollama.
        try:
            self._presummarize(pack)
        except (SemforaError, OSError, sqlite3.Error) as exc:
            log.warning("background summaries not started: %s", exc)
        return TurnResult(
            reply=reply,
            pack=pack,
            usage=usage,
            cost=cost,
            edits_staged=staged,
            errors=tuple(redact(e) for e in errors),  # printed by the CLI and the app
            run_id=record.run_id,
            outcome=outcome,
            model=self.reasoner.model,
            need_rounds=need_rounds,
            edit_retries=retries,
            hunks=hunks,
            commit=commit,
            extra_items=tuple(extra),
            error_code=error_code,
        )

    def _call(
        self,
        system: Any,
        messages: Messages,
        on_text: TextCallback | None,
        cancel: threading.Event | None,
        deadline: float,
        on_status: StatusCallback,
    ) -> tuple[str, StreamDone]:
        assert self.reasoner is not None
        parts: list[str] = []
        events = self.reasoner.stream(
            system, list(messages), cancel=cancel, deadline=deadline, on_status=on_status
        )
        for event in events:
            if isinstance(event, TextDelta):
                parts.append(event.text)
                if on_text is not None:
                    on_text(event.text)
            else:
                return "".join(parts), event
        raise ModelError("the model stream ended without a final event", partial_text="".join(parts))

    def _edits(self, task: str, reply: str, stage: bool) -> tuple[tuple[str, ...], int]:
        """Stage (or, with ``stage=False``, only check) every block of ``reply``; all or nothing."""
        from engine.edits.protocol import apply_blocks, parse_blocks, repo_file_check

        blocks = parse_blocks(reply, is_file=repo_file_check(self.layout.root))
        if not stage:
            from engine.edits.textformat import decode

            def read_file(rel: str) -> str | None:
                path = self.layout.root / rel
                return decode(path.read_bytes())[0] if path.is_file() else None

            result = apply_blocks(self.layout.root, blocks, read_file, deny=self.settings.edits.deny)
            return tuple(sorted(result)), 0
        from engine.edits.session import EditSession

        session = EditSession.load_or_create(self.layout, self.settings)
        changes = session.stage_blocks(blocks, task=task)
        return tuple(c.path for c in changes), sum(len(c.hunks) for c in changes)

    def _finish(
        self,
        record: RunRecord,
        task: str,
        pack: ContextPack,
        reply: str,
        staged: tuple[str, ...],
        outcome: str,
        usage: Usage,
        cost: float,
        errors: list[str],
        t0: float,
    ) -> None:
        """Write the run log, the episodic line and the session; never raises for a disk problem."""
        record.reply, record.outcome = reply, outcome
        record.usage, record.cost = usage.to_dict(), cost
        record.edits = {"staged": list(staged), "outcome": outcome}
        record.errors = list(errors)
        record.finished_at = time.time()
        record.timings["total"] = time.perf_counter() - t0
        episode = Episode(
            ts=time.time(),
            session_id=self.session.id,
            run_id=record.run_id,
            request=task,
            intent=pack.intent or classify_intent(task).intent.value,
            item_ids=tuple(i.id for i in pack.items),
            reply=reply,
            edits=staged,
            outcome="failed" if outcome in ("edit_failed", "error") else outcome,
        )
        try:
            write_run(self.layout, record)
            self.sessions.episodes.append(episode)
            self.recall.remember(episode)
            self.session.turns.append(
                {"run_id": record.run_id, "request": task[:400], "outcome": outcome, "edits": list(staged)}
            )
            self.session.viewed_symbols = list(self.memory.viewed_symbols)[-500:]
            self.sessions.save(self.session)
        except OSError as exc:
            log.warning("could not record turn %s: %s", record.run_id, exc)
