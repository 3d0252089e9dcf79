"""The app's only door into ``engine``: blocking calls, run from thread workers.

Each method imports its engine module lazily (so the first frame never waits for
tree-sitter, chromadb or anthropic) and returns plain view data. When a part of
the engine is missing from this build it raises ``EngineUnavailable``; it never
fakes a result. It must not import textual.
"""

from __future__ import annotations

import importlib
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from engine.config import Settings, load_settings
from engine.errors import ServiceUnavailable, UsageError
from engine.store.layout import RepoLayout
from semfora_tui.history import HISTORY_FILE, PromptHistory
from semfora_tui.views import FileView, PackView, files_from_session, pack_from_engine

# (message, done, total): the progress shape of the indexer and the vector indexer.
Progress = Callable[[str, int, int], None]


class EngineUnavailable(ServiceUnavailable):
    """A part of the engine this command needs is not installed in this build."""

    code = "ENGINE_UNAVAILABLE"


def engine_module(name: str, what: str) -> ModuleType:
    """Import ``name`` or explain which feature is missing; other import errors propagate."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise EngineUnavailable(f"{what} is not available: {name} is missing from this build") from exc
        raise


class EngineBridge:
    """Repository state the app holds: layout, settings, model, budget, edit session."""

    def __init__(self, root: Path, *, model: str | None = None, budget: int | None = None) -> None:
        self.layout = RepoLayout.for_path(root)
        loaded = load_settings(self.layout.root, overrides={"budget.context_tokens": budget})
        self.settings: Settings = loaded.settings
        self.model = (model or self.settings.llm.model).strip()
        self.budget = self.settings.budget.context_tokens
        self._orchestrator: Any = None
        self._lock = threading.Lock()
        self.history = PromptHistory(
            self.layout.cache_dir / HISTORY_FILE, enabled=self.settings.ui.prompt_history
        )

    @property
    def root(self) -> Path:
        return self.layout.root

    # -- repository -----------------------------------------------------------------------------

    def branch(self) -> str:
        try:
            proc = subprocess.run(
                ["git", "-C", str(self.root), "rev-parse", "--abbrev-ref", "HEAD"],
                capture_output=True,
                text=True,
                timeout=5,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return proc.stdout.strip() if proc.returncode == 0 else ""

    def list_files(self) -> list[str]:
        """Tracked and untracked-but-not-ignored files, for the `@` picker."""
        try:
            proc = subprocess.run(
                ["git", "-C", str(self.root), "ls-files", "--cached", "--others", "--exclude-standard"],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return []
        return [line for line in proc.stdout.splitlines() if line] if proc.returncode == 0 else []

    # -- model ----------------------------------------------------------------------------------

    def reasoning_status(self) -> tuple[bool, str]:
        """(usable, one-line description). Never shows a key."""
        select = engine_module("engine.llm.select", "reasoning")
        base = engine_module("engine.llm.base", "reasoning")
        try:
            select.make_reasoner(self.settings, self.model)
        except base.ModelUnavailable as exc:
            return False, str(exc)
        return True, select.describe_model_status(self.settings, self.model)

    def set_model(self, model: str) -> tuple[bool, str]:
        self.model = model.strip()
        with self._lock:
            if self._orchestrator is not None:
                self._orchestrator.reasoner = None  # the next turn attaches the new model
        return self.reasoning_status()

    def set_budget(self, budget: int) -> None:
        if not 500 <= budget <= 200_000:
            raise UsageError(f"budget must be between 500 and 200000 tokens, not {budget}")
        self.budget = budget

    # -- index ----------------------------------------------------------------------------------

    def index(self, *, rebuild: bool = False, progress: Progress | None = None) -> Any:
        indexer = engine_module("engine.store.indexer", "indexing")
        return indexer.index_repository(self.layout, self.settings, rebuild=rebuild, progress=progress)

    def build_vectors(self, progress: Progress | None, cancel: threading.Event) -> Any:
        vectors = engine_module("engine.index.vectors", "the vector index")
        return vectors.VectorIndexer(self.layout, self.settings).run(progress=progress, cancel=cancel)

    # -- read-only tools ------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        mode: str = "hybrid",
        limit: int = 20,
        on_warning: Callable[[str], None] | None = None,
    ) -> list[Any]:
        """Hits; ``on_warning`` hears once per process when a part is off (e.g. vectors unavailable)."""
        hybrid = engine_module("engine.index.hybrid", "search")
        return list(hybrid.search(self.layout, self.settings, query, mode, limit, on_warning=on_warning))

    def _tool(self, name: str, *args: Any) -> Any:
        """Run one ``engine.tools`` tool on a fresh Engine: its SQLite store belongs to this thread."""
        tools = engine_module("engine.tools", "the engine tools")
        with tools.Engine(self.layout, self.settings) as engine:
            return getattr(tools, name)(engine, *args).data

    def symbols(self, name: str) -> list[dict[str, Any]]:
        return [self._tool("get_symbol", name)]

    def symbol_source(self, name: str) -> dict[str, Any]:
        return dict(self._tool("get_symbol_source", name))

    def overview(self) -> str:
        tools = engine_module("engine.tools", "the repository overview")
        with tools.Engine(self.layout, self.settings) as engine:
            return str(tools.get_repo_overview(engine).toon)

    def semantic_diff(self, base: str | None, target: str | None) -> Any:
        diff = engine_module("engine.semantic.diff", "semantic diff")
        return diff.analyze_diff(self.root, base, target)

    # -- orchestrator ---------------------------------------------------------------------------

    def orchestrator(self, *, need_reasoner: bool, resume: bool = False) -> Any:
        """The one orchestrator of this app; a reasoner is attached the first time a turn needs it."""
        with self._lock:
            if self._orchestrator is None or resume:
                module = engine_module("engine.orchestrator.core", "the orchestrator")
                if self._orchestrator is not None:
                    self._orchestrator.close()
                self._orchestrator = module.Orchestrator(self.layout, self.settings, resume=resume)
            if need_reasoner and self._orchestrator.reasoner is None:
                select = engine_module("engine.llm.select", "reasoning")
                self._orchestrator.reasoner = select.make_reasoner(self.settings, self.model)
            return self._orchestrator

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
    ) -> Any:
        orchestrator = self.orchestrator(need_reasoner=True)
        return orchestrator.run_turn(
            task, on_text=on_text, cancel=cancel, stage=True, budget=self.budget, on_status=on_status
        )

    def resume(self) -> list[str]:
        """Reopen the last conversation (its memory feeds the next pack); returns its summary lines."""
        orchestrator = self.orchestrator(need_reasoner=False, resume=True)
        return list(orchestrator.session.summary_lines())

    # -- edits ----------------------------------------------------------------------------------

    def _session_module(self) -> ModuleType:
        return engine_module("engine.edits.session", "edit review")

    def session(self) -> Any:
        return self._session_module().EditSession.load_or_create(self.layout, self.settings)

    def open_session(self) -> tuple[Any, tuple[FileView, ...]]:
        """Start-up: finish or roll back an interrupted commit, then load the staged session."""
        return self.recover(), self.staged_files()

    def staged_files(self) -> tuple[FileView, ...]:
        return files_from_session(self.session().files())

    def hunk_action(self, hunk_id: str, action: str) -> tuple[FileView, ...]:
        session = self.session()
        {"accept": session.accept, "reject": session.reject, "toggle": session.toggle}[action](hunk_id)
        return files_from_session(session.files())

    def file_action(self, path: str, action: str) -> tuple[FileView, ...]:
        session = self.session()
        {"accept": session.accept_file, "reject": session.reject_file}[action](path)
        return files_from_session(session.files())

    def accept_all(self, accept: bool) -> tuple[FileView, ...]:
        session = self.session()
        session.accept_all() if accept else session.reject_all()
        return files_from_session(session.files())

    def commit(self) -> Any:
        return self.session().commit()

    def rollback(self) -> Any:
        return self.session().rollback()

    def undo(self) -> Any:
        undo = engine_module("engine.edits.undo", "undo")
        edits = self.settings.edits
        return undo.undo(self.layout, deny=edits.deny, lock_timeout=edits.lock_timeout)

    def recover(self) -> Any:
        """Roll back a commit that a killed process left half-done (start-up)."""
        writer = engine_module("engine.edits.writer", "edit recovery")
        return writer.recover(self.layout)

    def rebase(self) -> tuple[FileView, ...]:
        session = self.session()
        session.rebase()
        return files_from_session(session.files())

    def stage_from_file(self, path: str) -> tuple[FileView, ...]:
        """Stage the SEARCH/REPLACE or SYMBOL blocks written in ``path`` (inside the repository)."""
        sandbox = engine_module("engine.edits.sandbox", "edit staging")
        source = Path(sandbox.resolve_in_repo(self.root, path))
        try:
            text = source.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read {path}: {exc}") from exc
        session = self.session()
        session.stage_blocks(text, task=f"edits from {path}")
        return files_from_session(session.files())
