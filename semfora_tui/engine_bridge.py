"""The app's only door into ``engine``: blocking calls, run from thread workers.

What the app asks of the engine (search, symbols, sources, the overview, the index, vectors,
context packs, turns, run logs) goes through the engine's front door, ``engine.api``, and comes
back as its frozen, typed values. The edit session (``engine.edits``) and the semantic diff are
their own APIs and are called directly. Engine modules are imported inside each method (so the first frame never waits for
tree-sitter, chromadb or anthropic) and typed under ``TYPE_CHECKING``, so the app reads
the engine's own types instead of ``Any``. A part of the engine missing from this build
raises ``EngineUnavailable``; it never fakes a result. It must not import textual.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from engine.config import Settings, load_settings
from engine.errors import ConfigError, EngineWarning, PathDenied, ServiceUnavailable, UsageError
from engine.repo.layout import RepoLayout
from semfora_tui.history import HISTORY_FILE, PromptHistory
from semfora_tui.views import FileView, PackView, PastTurn, files_from_session, pack_from_engine

if TYPE_CHECKING:
    from engine.api import (
        IndexReport,
        Orchestrator,
        RepoOverview,
        SearchHit,
        SemanticDiff,
        SourceView,
        SymbolDetail,
        SymbolView,
        TurnResult,
        VectorReport,
    )
    from engine.edits.session import CommitResult, EditSession, RebaseReport
    from engine.edits.undo import UndoResult
    from engine.edits.writer import RecoveryReport

# (phase, done, total): the progress shape of the indexer and the vector indexer (COMMON contract 3).
Progress = Callable[[str, int, int], None]
# Directory under the repository's cache dir where `e` writes the proposed version of a file.
PROPOSED_DIR = "proposed"


class EngineUnavailable(ServiceUnavailable):
    """A part of the engine this command needs is not installed in this build."""

    code = "ENGINE_UNAVAILABLE"


@contextmanager
def engine_part(what: str) -> Iterator[None]:
    """Wrap the lazy import of an engine module: a missing ``engine.*`` module becomes
    ``EngineUnavailable`` naming the feature; any other import error propagates."""
    try:
        yield
    except ModuleNotFoundError as exc:
        if exc.name and (exc.name == "engine" or exc.name.startswith("engine.")):
            raise EngineUnavailable(
                f"{what} is not available: {exc.name} is missing from this build"
            ) from exc
        raise


class EngineBridge:
    """Repository state the app holds: layout, settings, model, budget, edit session."""

    def __init__(self, root: Path, *, model: str | None = None, budget: int | None = None) -> None:
        self.layout = RepoLayout.for_path(root)
        loaded = load_settings(self.layout.root, overrides={"budget.context_tokens": budget})
        self.settings: Settings = loaded.settings
        # Settings of an untrusted .semfora.toml that were ignored, in one sentence (or None):
        # the app shows it, since a line on stderr is hidden by the full-screen display.
        self.config_notice: str | None = loaded.untrusted_notice
        self.model = (model or self.settings.llm.model).strip()
        self.budget = self.settings.budget.context_tokens
        self._orchestrator: Orchestrator | None = None
        self._reasoner_model = ""  # the model the orchestrator's reasoner was made for
        self._lock = threading.Lock()
        self.history = PromptHistory(
            self.layout.cache_dir / HISTORY_FILE, enabled=self.settings.ui.prompt_history
        )

    @property
    def root(self) -> Path:
        return self.layout.root

    # -- repository -----------------------------------------------------------------------------

    def branch(self) -> str:
        """The checked-out branch, '' outside a work tree (through the engine's git module)."""
        from engine.api import branch_name

        return branch_name(self.root)

    def list_files(self) -> list[str]:
        """Files a user may mention with `@`: discovery's listing (tracked and untracked, not
        ignored; excluded directories and secret files left out)."""
        from engine.api import listed_paths

        return listed_paths(self.root, self.settings)

    # -- model ----------------------------------------------------------------------------------

    def reasoning_status(self) -> tuple[bool, str]:
        """(usable, one-line description). Never shows a key."""
        with engine_part("reasoning"):
            from engine.api import CONFIGURE_HINT, ModelUnavailable, describe_model, make_reasoner

            try:
                make_reasoner(self.settings, self.model)
            except ConfigError as exc:  # ANTHROPIC_BASE_URL without its scheme: what to write instead
                return False, exc.message + (f" ({exc.hint})" if exc.hint else "")
            except ModelUnavailable as exc:
                # A specific hint is the way out (how to name the model); the generic one (set a
                # key or pick a local model) is what the offline notice says already.
                specific = exc.hint and exc.hint != CONFIGURE_HINT
                return False, exc.message + (f" ({exc.hint})" if specific else "")
            return True, describe_model(self.settings, self.model)

    def set_model(self, model: str) -> tuple[bool, str]:
        # The next turn attaches the new model (see ``orchestrator``); a turn under way keeps
        # its reasoner: taking it away mid-stream failed that turn once its reply had arrived.
        self.model = model.strip()
        return self.reasoning_status()

    def set_budget(self, budget: int) -> None:
        if not 500 <= budget <= 200_000:
            raise UsageError(f"budget must be between 500 and 200000 tokens, not {budget}")
        self.budget = budget

    # -- index ----------------------------------------------------------------------------------

    def index_exists(self) -> bool:
        """An index from an earlier run is on disk (questions can use it while it refreshes)."""
        return self.layout.index_db.is_file()

    def index(
        self,
        *,
        rebuild: bool = False,
        progress: Progress | None = None,
        on_wait: Callable[[], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> IndexReport:
        """Index the repository; ``on_wait`` is called if another process's index run holds the
        lock, and ``cancel`` stops waiting for it."""
        with engine_part("indexing"):
            from engine.api import index_repository

            def warned(warning: EngineWarning) -> None:
                if warning.code == "INDEX_WAITING" and on_wait is not None:
                    on_wait()

            return index_repository(
                self.layout,
                self.settings,
                rebuild=rebuild,
                progress=progress,
                on_warning=warned,
                cancel=cancel,
            )

    def vectors_enabled(self) -> bool:
        return (self.settings.search.embedding or "").strip().lower() not in ("none", "off", "")

    def vectors_off_reason(self) -> str:
        """Why the vector index is not built when the configuration turns it off."""
        return (
            f"search.embedding is {self.settings.search.embedding!r} (config.toml or SEMFORA_EMBEDDING); "
            "search uses the text index and symbols only. Set it to `auto` to turn vectors on."
        )

    def build_vectors(self, progress: Progress | None, cancel: threading.Event) -> VectorReport:
        with engine_part("the vector index"):
            from engine.api import build_vectors

            return build_vectors(self.layout, self.settings, progress=progress, cancel=cancel)

    # -- read-only tools ------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        mode: str = "hybrid",
        limit: int = 20,
        on_warning: Callable[[str], None] | None = None,
    ) -> list[SearchHit]:
        """Hits; ``on_warning`` hears once per process when a part is off (e.g. vectors unavailable)."""
        with engine_part("search"):
            from engine.api import Engine, search

            with Engine(self.layout, self.settings) as engine:
                return list(search(engine, query, mode=mode, limit=limit, on_warning=on_warning).hits)

    def symbols(self, name: str) -> tuple[SymbolDetail, tuple[SymbolView, ...]]:
        """The symbol ``name`` designates, and the other symbols of that exact name (if any)."""
        with engine_part("the engine tools"):
            from engine.api import Engine, find_symbols, get_symbol

            with Engine(self.layout, self.settings) as engine:  # its SQLite store belongs to this thread
                detail = get_symbol(engine, name).data
                matches = find_symbols(engine, name)
                others = matches.symbols if matches.exact else ()
                return detail, tuple(s for s in others if s.id != detail.symbol.id)

    def symbol_source(self, name: str) -> SourceView:
        with engine_part("the engine tools"):
            from engine.api import Engine, get_symbol_source

            with Engine(self.layout, self.settings) as engine:
                return get_symbol_source(engine, name).data

    def overview(self) -> RepoOverview:
        """The repository overview (the model reads its TOON; the app renders its data)."""
        with engine_part("the repository overview"):
            from engine.api import Engine, get_repo_overview

            with Engine(self.layout, self.settings) as engine:
                return get_repo_overview(engine).data

    def semantic_diff(self, base: str | None, target: str | None) -> SemanticDiff:
        with engine_part("semantic diff"):
            from engine.api import semantic_diff, without_secret_content

            # A secret file is listed, never shown: its symbols' signatures carry its values.
            return without_secret_content(semantic_diff(self.root, base, target), self.settings.edits.deny)

    # -- orchestrator ---------------------------------------------------------------------------

    def orchestrator(self, *, need_reasoner: bool, resume: bool = False) -> Orchestrator:
        """The one orchestrator of this app; a reasoner is attached the first time a turn needs it."""
        with self._lock:
            if self._orchestrator is None or resume:
                if self._orchestrator is not None:
                    self._orchestrator.close()
                with engine_part("the orchestrator"):
                    from engine.api import open_orchestrator

                    self._orchestrator = open_orchestrator(self.layout, self.settings, resume=resume)
            orchestrator = self._orchestrator
            if need_reasoner and (orchestrator.reasoner is None or self._reasoner_model != self.model):
                with engine_part("reasoning"):
                    from engine.api import make_reasoner

                    orchestrator.reasoner = make_reasoner(self.settings, self.model)
                    self._reasoner_model = self.model
            return orchestrator

    def close(self) -> None:
        with self._lock:
            if self._orchestrator is not None:
                self._orchestrator.close()
                self._orchestrator = None

    def context(self, task: str) -> PackView:
        pack = self.orchestrator(need_reasoner=False).build_context(task, budget=self.budget)
        return pack_from_engine(pack, task)

    def run_turn(
        self,
        task: str,
        on_text: Callable[[str], None],
        cancel: threading.Event,
        on_status: Callable[[str], None] | None = None,
        on_phase: Callable[[str], None] | None = None,
    ) -> TurnResult:
        orchestrator = self.orchestrator(need_reasoner=True)
        return orchestrator.run_turn(
            task,
            on_text=on_text,
            cancel=cancel,
            stage=True,
            budget=self.budget,
            on_status=on_status,
            on_phase=on_phase,
        )

    def resume(self) -> tuple[PastTurn, ...]:
        """Reopen the last conversation (its memory feeds the next pack); returns its turns in order.

        Each turn's reply and errors come from its run log (the full text); a turn whose log is
        gone still shows its question and outcome.
        """
        orchestrator = self.orchestrator(need_reasoner=False, resume=True)
        with engine_part("the run log"):
            from engine.api import load_run
            from engine.errors import NotFoundError
        turns: list[PastTurn] = []
        for turn in orchestrator.session.turns:
            run_id = str(turn.get("run_id", ""))
            reply = ""
            errors: tuple[str, ...] = ()
            try:
                run = load_run(self.layout, run_id)
                reply = str(run.get("reply") or "")
                errors = tuple(str(e) for e in run.get("errors") or ())
                request = str(run.get("task") or turn.get("request", ""))
            except (NotFoundError, OSError, ValueError):
                request = str(turn.get("request", ""))
            turns.append(
                PastTurn(
                    request=request,
                    reply=reply,
                    outcome=str(turn.get("outcome", "")),
                    errors=errors,
                    edits=tuple(str(e) for e in turn.get("edits") or ()),
                )
            )
        return tuple(turns)

    # -- edits ----------------------------------------------------------------------------------

    def session(self) -> EditSession:
        with engine_part("edit review"):
            from engine.edits.session import EditSession
        return EditSession.load_or_create(self.layout, self.settings)

    def open_session(self) -> tuple[RecoveryReport | None, tuple[FileView, ...]]:
        """Start-up: finish or roll back an interrupted commit, then load the staged session."""
        return self.recover(), self.staged_files()

    def staged_files(self) -> tuple[FileView, ...]:
        return files_from_session(self.session().files())

    def hunk_action(self, hunk_id: str, action: str) -> tuple[FileView, ...]:
        session = self.session()
        if action in ("accept", "reject") and session.has_file(hunk_id):
            # `/accept app.py` said "'app.py' is not a staged file" of a staged file: a path
            # decides its every hunk, as `semfora edits accept FILE` does.
            return self.file_action(hunk_id, action)
        if action == "accept":
            session.accept(hunk_id)
        elif action == "reject":
            session.reject(hunk_id)
        else:
            session.toggle(hunk_id)
        return files_from_session(session.files())

    def file_action(self, path: str, action: str) -> tuple[FileView, ...]:
        session = self.session()
        session.accept_file(path) if action == "accept" else session.reject_file(path)
        return files_from_session(session.files())

    def accept_all(self, accept: bool) -> tuple[FileView, ...]:
        session = self.session()
        session.accept_all() if accept else session.reject_all()
        return files_from_session(session.files())

    def commit(self) -> CommitResult:
        return self.session().commit()

    def rollback(self) -> int:
        return self.session().rollback()

    def last_commit(self) -> dict[str, list[str]] | None:
        """The files of the newest commit that `/undo` would revert, by what undo does to each
        (``remove`` what the commit created, ``restore`` what it deleted, ``put back`` the
        rest), or None when there is none."""
        with engine_part("undo"):
            from engine.edits.writer import history_records
        records = history_records(self.layout)
        if not records:
            return None
        out: dict[str, list[str]] = {}
        for e in records[-1].get("entries", ()):
            action = (
                "remove" if not e.get("existed") else "restore" if e.get("new_hash") is None else "put back"
            )
            out.setdefault(action, []).append(str(e.get("rel", "")))
        return out

    def undo(self, *, force: bool = False) -> tuple[UndoResult, list[str]]:
        """Revert the newest commit; also what the hunks still staged in its files did (notes)."""
        with engine_part("undo"):
            from engine.edits import rebase_after_undo
            from engine.edits.undo import undo
        edits = self.settings.edits
        result = undo(self.layout, force=force, deny=edits.deny, lock_timeout=edits.lock_timeout)
        # Hunks still staged in the files put back follow them, as they followed the commit. That
        # never fails the undo, which has happened: what could not follow is said after it.
        return result, rebase_after_undo(self.layout, self.settings, result.files).notes()

    def recover(self) -> RecoveryReport | None:
        """Roll back a commit that a killed process left half-done (start-up)."""
        with engine_part("edit recovery"):
            from engine.edits.writer import recover
        return recover(self.layout)

    def rebase(self) -> tuple[RebaseReport, tuple[FileView, ...]]:
        session = self.session()
        report = session.rebase()
        return report, files_from_session(session.files())

    def stage_from_file(self, path: str) -> tuple[FileView, ...]:
        """Stage the SEARCH/REPLACE or SYMBOL blocks written in ``path`` (inside the repository)."""
        with engine_part("edit staging"):
            from engine.edits.sandbox import resolve_in_repo
        try:
            source = Path(resolve_in_repo(self.root, Path(path).expanduser()))
        except PathDenied as exc:
            if exc.code != PathDenied.code:
                raise  # .git, a secret: said as the sandbox says it
            # "path is outside the repository" left the user to guess what /edit --from reads.
            raise PathDenied(
                f"/edit --from reads a file inside the repository, and {path} is outside it",
                hint="copy it into the repository, or stage it from a shell: semfora edits stage FILE",
            ) from exc
        # Said as `semfora edits stage` says it: the app showed Python's "[Errno 2] No such file
        # or directory: '/abs/path'" and "'utf-8' codec can't decode byte 0x89 in position 0".
        try:
            text = source.read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(
                f"cannot read {path}: {exc.strerror or exc}",
                code="PATH_NOT_FOUND" if isinstance(exc, FileNotFoundError) else "USAGE",
                hint="the path is relative to the repository's root",
            ) from exc
        except UnicodeDecodeError as exc:
            raise UsageError(f"{path} is not UTF-8 text: /edit --from reads edit blocks") from exc
        session = self.session()
        session.stage_blocks(text, task=f"edits from {path}")
        return files_from_session(session.files())

    def write_proposed(self, path: str) -> Path:
        """Write the staged (proposed) version of ``path`` to a scratch file for the editor.

        The scratch file keeps the file's name, so the editor picks the right syntax; it lives
        in the repository's cache dir, never in the working tree.
        """
        text = self.session().proposed_text(path)
        scratch = (self.layout.cache_dir / PROPOSED_DIR / path).resolve()
        if not scratch.is_relative_to(self.layout.cache_dir.resolve()):
            raise UsageError(f"{path} is outside the repository")
        scratch.parent.mkdir(parents=True, exist_ok=True)
        scratch.write_text(text, encoding="utf-8")
        return scratch

    def restage_edited(self, path: str, scratch: Path) -> tuple[bool, tuple[FileView, ...]]:
        """Stage what the user saved in the scratch file as the new proposal for ``path``.

        Returns (changed, files); the scratch file is removed either way.
        """
        try:
            edited = scratch.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read the edited copy of {path}: {exc}") from exc
        finally:
            scratch.unlink(missing_ok=True)
        session = self.session()
        if edited == session.proposed_text(path):
            return False, files_from_session(session.files())
        session.stage_content(path, edited)
        return True, files_from_session(session.files())
