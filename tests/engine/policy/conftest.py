"""The hostile repository, built once per module, indexed, with an engine and a gatherer over it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.engine.policy.hostile import HostileRepo, build_hostile_repo


@dataclass
class HostileWorld:
    repo: HostileRepo
    layout: Any
    settings: Any
    engine: Any
    gatherer: Any
    cache_home: Path


@pytest.fixture(scope="module")
def hostile_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostileWorld]:
    """Module-scoped: its own XDG dirs (the autouse per-test ones change between tests)."""
    from engine.api import Engine
    from engine.config import load_settings
    from engine.orchestrator.context import ContextGatherer
    from engine.orchestrator.memory import SemforaMemory
    from engine.repo.layout import RepoLayout

    base = tmp_path_factory.mktemp("hostile")
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CACHE_HOME", str(base / "xdg-cache"))
    mp.setenv("XDG_CONFIG_HOME", str(base / "xdg-config"))
    mp.setenv("SEMFORA_EMBEDDING", "none")
    mp.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    try:
        repo = build_hostile_repo(base)
        layout = RepoLayout.for_path(repo.root)
        settings = load_settings(layout.root).settings
        engine = Engine(layout, settings)
        engine.index()
        from engine.index.pipeline import refresh_text_index

        refresh_text_index(layout, settings)
        gatherer = ContextGatherer(layout, settings, SemforaMemory())
        yield HostileWorld(repo, layout, settings, engine, gatherer, base / "xdg-cache")
        gatherer.close()
        engine.close()
    finally:
        mp.undo()
