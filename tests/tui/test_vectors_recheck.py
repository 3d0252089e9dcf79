"""The app follows the vector services: an Ollama started after the app is used without a restart."""

from __future__ import annotations

import socket

from tests.tui.conftest import AppFactory, wait_for


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_vectors_are_built_once_ollama_comes_up_after_the_app(
    make_app: AppFactory, monkeypatch
) -> None:
    """Ollama down as the app started meant "vectors off: no embedder" until the app was restarted
    (or a file changed and re-indexed): the app tries the build again while a service is missing."""
    from engine.services.ollama import breaker_for
    from semfora_tui.screens import main
    from tests.fakes.fake_ollama import FakeOllama

    port = _closed_port()
    monkeypatch.setenv("SEMFORA_EMBEDDING", "ollama:nomic-embed-text")
    monkeypatch.setenv("OLLAMA_HOST", f"http://127.0.0.1:{port}")
    monkeypatch.setattr(main, "VECTORS_RECHECK_SECONDS", 0.2)
    app = make_app(check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.header.vectors == "vectors off: no embedder", "vectors off")
        ollama = FakeOllama(port=port).start()
        breaker_for(ollama.url).reset()  # as if its cool-down had passed
        try:
            await wait_for(pilot, lambda: app.header.vectors == "vectors ready", "vectors ready")
        finally:
            ollama.stop()
        assert ollama.requests_to("/api/embed")


async def test_a_model_pulled_while_the_app_runs_is_used_and_retries_are_quiet(
    make_app: AppFactory, monkeypatch
) -> None:
    """`ollama pull nomic-embed-text` after the app started: used without a restart; and the retries
    before it leave the header on "vectors off" (it said "vectors: starting" at each one)."""
    from semfora_tui.screens import main
    from tests.fakes.fake_ollama import FakeOllama

    ollama = FakeOllama(models=("qwen2.5-coder:1.5b",)).start()  # Ollama up, the embedding model not pulled
    monkeypatch.setenv("SEMFORA_EMBEDDING", "ollama:nomic-embed-text")
    monkeypatch.setenv("OLLAMA_HOST", ollama.url)
    monkeypatch.setattr(main, "VECTORS_RECHECK_SECONDS", 0.2)
    app = make_app(check_model=False)
    states: list[str] = []

    def probes() -> int:
        if not states or states[-1] != app.header.vectors:
            states.append(app.header.vectors)
        return len(ollama.requests_to("/api/tags"))

    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.header.vectors == "vectors off: no embedder", "vectors off")
            first = probes()
            await wait_for(pilot, lambda: probes() >= first + 2, "two retries")
            assert states[states.index("vectors off: no embedder") :] == ["vectors off: no embedder"], states
            ollama.models.append("nomic-embed-text:latest")  # ollama pull
            await wait_for(pilot, lambda: app.header.vectors == "vectors ready", "vectors ready")
    finally:
        ollama.stop()
    assert ollama.requests_to("/api/embed")
