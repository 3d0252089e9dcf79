"""Offline mode (no key, no local model) and following changes on disk while the app is open."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

from tests.tui.conftest import (
    EDIT_BLOCKS,
    TWO_HUNK_BLOCKS,
    AppFactory,
    answer_confirmation,
    settle,
    spread_config,
)


def record_notifications(app: object) -> list[str]:
    """Every message the app notifies from now on (a toast expires from ``_notifications``)."""
    seen: list[str] = []
    notify = app.notify  # type: ignore[attr-defined]

    def recording(message: str, *args: object, **kwargs: object) -> None:
        seen.append(str(message))
        notify(message, *args, **kwargs)

    app.notify = recording  # type: ignore[attr-defined]
    return seen


async def test_offline_app_opens_says_what_works_and_keeps_working(
    make_app: AppFactory, demo_repo: Path
) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.main.offline is True
        assert app.header.offline
        text = app.chat.transcript()
        assert "Offline: no model can be used" in text
        # The reason is a sentence of its own ("… can be used.** no API key for …" it read).
        assert "**Offline: no model can be used.** No API key for" in text and "is not set." in text
        assert "ANTHROPIC_API_KEY" in text and "/model ollama/" in text
        assert text.count("pick a local model") + text.count("choose a local model") == 1  # said once
        for works in ("/search", "/symbol", "/overview", "/diff", "/context", "/edit --from FILE"):
            assert works in text
        # A plain message is not sent anywhere and says why.
        app.prompt.load_text("explain parse_port")
        await pilot.press("enter")
        await settle(pilot)
        assert "No model is available, so this was not sent: no API key" in app.chat.transcript()
        assert not app.main.streaming
        # What works offline really works.
        for command in ("/search parse_port", "/context how is the port parsed", "/symbol parse_port"):
            app.prompt.load_text(command)
            await pilot.press("enter")
            await settle(pilot)
            if command.startswith("/search"):
                await pilot.press("escape")
                await settle(pilot)
        transcript = app.chat.transcript()
        assert "error[" not in transcript
        assert "Context pack" in transcript and "parse_port" in transcript
        (demo_repo / "edits.txt").write_text(EDIT_BLOCKS)
        app.prompt.load_text("/edit --from edits.txt")
        await pilot.press("enter")
        await settle(pilot)
        assert len(app.diff.files) == 2


async def test_index_follows_disk_changes_and_staged_files_turn_into_conflicts(
    make_app: AppFactory, demo_repo: Path
) -> None:
    app = make_app(watch=True, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        deadline = time.monotonic() + 20
        while not app.header.index_state.startswith("index: 2 files"):
            assert time.monotonic() < deadline
            await pilot.pause(0.05)
        (demo_repo / "edits.txt").write_text(EDIT_BLOCKS)
        notified = record_notifications(app)
        await app.main.run_slash("/edit --from edits.txt")
        while len(app.diff.files) != 2:
            assert time.monotonic() < deadline
            await pilot.pause(0.05)
        # The user edits a new file and a staged one in their own editor.
        (demo_repo / "app/cache.py").write_text("def warm_cache():\n    return {}\n")
        (demo_repo / "app/config.py").write_text("def parse_port(text):\n    return float(text)\n")
        while not (app.header.index_state.startswith("index: 3 files") and app.diff.files[0].conflict):
            assert time.monotonic() < deadline, (app.header.index_state, app.diff.files[0])
            await pilot.pause(0.05)
        assert "changed on disk" in app.diff.files[0].conflict
        # A toast is not Markdown: the command is written as it is typed, without backticks.
        assert "1 staged file changed on disk: app/config.py. /rebase re-applies its hunks." in notified, (
            notified
        )
        hits = app.bridge.search("warm_cache", mode="symbols", limit=5)
        assert any(h.symbol == "warm_cache" for h in hits)


async def test_the_diff_pane_follows_edits_commands_run_in_another_terminal(
    make_app: AppFactory, demo_repo: Path
) -> None:
    """`semfora edits stage` or `rollback` in another terminal change what is staged: the
    open app shows it, not the session it last read."""
    semfora = str(Path(sys.executable).with_name("semfora"))
    (demo_repo / "edits.txt").write_text(EDIT_BLOCKS)
    app = make_app(watch=True, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        deadline = time.monotonic() + 30
        while not (app.header.index_state.startswith("index: 2 files") and app.main.watch_ready.is_set()):
            assert time.monotonic() < deadline, (
                app.header.index_state,
                app.main.watch_ready.is_set(),
                [(w.group, w.state, w.error) for w in app.workers],
            )
            await pilot.pause(0.05)
        assert app.diff.files == ()
        staged = subprocess.run(
            [semfora, "edits", "stage", "edits.txt"], cwd=demo_repo, capture_output=True, text=True
        )
        assert staged.returncode == 0, staged.stderr
        while len(app.diff.files) != 2:
            assert time.monotonic() < deadline, app.diff.files
            await pilot.pause(0.05)
        rolled = subprocess.run([semfora, "edits", "rollback"], cwd=demo_repo, capture_output=True, text=True)
        assert rolled.returncode == 0, rolled.stderr
        while app.diff.files:
            assert time.monotonic() < deadline, app.diff.files
            await pilot.pause(0.05)


async def test_committing_some_hunks_of_a_file_is_not_reported_as_a_change_on_disk(
    make_app: AppFactory, demo_repo: Path
) -> None:
    """semfora's own commit changes the file on disk; its other, still staged hunks are not stale."""
    spread_config(demo_repo)
    config = demo_repo / "app/config.py"
    (demo_repo / "edits.txt").write_text(TWO_HUNK_BLOCKS)
    app = make_app(watch=True, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        notified = record_notifications(app)
        deadline = time.monotonic() + 30
        while not app.header.index_state.startswith("index: 2 files"):
            assert time.monotonic() < deadline
            await pilot.pause(0.05)
        await app.main.run_slash("/edit --from edits.txt")
        while not (app.diff.files and len(app.diff.files[0].hunks) == 2):
            assert time.monotonic() < deadline
            await pilot.pause(0.05)
        # Review from the keyboard: accept the first hunk, commit it, keep the second staged.
        await pilot.press("f2", "a", "c")
        await answer_confirmation(pilot, app)
        while "as text" not in config.read_text():
            assert time.monotonic() < deadline
            await pilot.pause(0.05)
        # A new file after the commit: once the index counts it, the commit's change was seen too.
        (demo_repo / "app/cache.py").write_text("def warm_cache():\n    return {}\n")
        while not app.header.index_state.startswith("index: 3 files"):
            assert time.monotonic() < deadline, app.header.index_state
            await pilot.pause(0.05)
        # The staged files are read again in an engine job; wait for it and for its answer.
        while any(w.group == "engine" and w.is_running for w in app.workers):
            assert time.monotonic() < deadline
            await pilot.pause(0.05)
        await pilot.pause()
        assert [h.state for f in app.diff.files for h in f.hunks] == ["pending"]
        assert app.diff.files[0].conflict is None
        assert not [n for n in notified if "changed on disk" in n]


async def test_header_shows_the_vector_index_building_then_ready(
    make_app: AppFactory,
    fake_ollama,
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    monkeypatch.setenv("SEMFORA_EMBEDDING", "ollama:nomic-embed-text")
    app = make_app(check_model=False)
    states: list[str] = []
    async with app.run_test(size=(120, 40)) as pilot:
        deadline = time.monotonic() + 60
        while app.header.vectors != "vectors ready":
            assert time.monotonic() < deadline, states
            if not states or states[-1] != app.header.vectors:
                states.append(app.header.vectors)
            await pilot.pause(0.02)
        await settle(pilot)
        assert app.header.index_state.startswith("index: 2 files")
        hits = app.bridge.search("read the settings file", mode="vector", limit=3)
        assert hits and hits[0].file == "app/config.py"
    assert any(s.startswith("vectors ") and s.endswith("%") for s in states), states


def _closed_port() -> int:
    """A port nothing listens on."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_the_header_claims_no_vector_progress_when_no_embedder_answers(
    make_app: AppFactory,
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    """It said "vectors 0%" until the embedder was found missing, then "vectors off"."""
    port = _closed_port()
    monkeypatch.setenv("SEMFORA_EMBEDDING", "ollama:nomic-embed-text")
    monkeypatch.setenv("OLLAMA_HOST", f"http://127.0.0.1:{port}")
    app = make_app(check_model=False)
    states: list[str] = []
    async with app.run_test(size=(120, 40)) as pilot:
        deadline = time.monotonic() + 60
        while not app.header.vectors.startswith("vectors off"):
            assert time.monotonic() < deadline, states
            if not states or states[-1] != app.header.vectors:
                states.append(app.header.vectors)
            await pilot.pause(0.02)
    assert not any(s.endswith("%") for s in states), states


async def test_a_repository_big_enough_for_worker_processes_indexes_inside_the_app(
    make_app: AppFactory, make_repo
) -> None:
    """Above the inline-parse limit the indexer forks workers while Textual holds stderr
    (fileno -1); that once failed with "bad value(s) in fds_to_keep" only inside the app."""
    from engine.index.indexer import INLINE_PARSE_MAX

    count = INLINE_PARSE_MAX + 16
    files = {
        f"pkg/mod{i}.py": f"def handler_{i}(request):\n    return helper_{i}(request)\n\n\ndef helper_{i}(x):\n    return x\n"
        for i in range(count)
    }
    root = make_repo(files)
    app = make_app(root, check_model=False)
    states: list[str] = []
    async with app.run_test(size=(120, 40)) as pilot:
        deadline = time.monotonic() + 60
        while not app.header.index_state.startswith(f"index: {count} files"):
            assert time.monotonic() < deadline, app.header.index_state
            if not states or states[-1] != app.header.index_state:
                states.append(app.header.index_state)
            await pilot.pause(0.01)
        # While it ran, the header named the phase and counted (COMMON contract 3).
        assert any(re.fullmatch(r"index: [a-z ]+ [\d,]+/[\d,]+", s) for s in states), states
        await settle(pilot)
        assert "error[" not in app.chat.transcript()
        hits = app.bridge.search(f"helper_{count - 1}", mode="symbols", limit=3)
        assert hits and hits[0].symbol == f"helper_{count - 1}"


async def test_the_header_never_shows_0_of_0_while_files_are_still_being_listed(make_app: AppFactory) -> None:
    from textual.widgets import ProgressBar

    from semfora_tui.screens.main import MainScreen

    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        bar = app.header.query_one("#index-progress", ProgressBar)
        app.main.post_message(MainScreen.IndexProgress("discovering", 0, 0))
        await pilot.pause()
        assert app.header.index_state == "index: discovering…"
        assert bar.total is None  # indeterminate until the phase knows its total
        app.main.post_message(MainScreen.IndexProgress("parsing", 120, 2833))
        await pilot.pause()
        assert app.header.index_state == "index: parsing 120/2,833"
        assert bar.total == 2833 and bar.progress == 120


async def test_at_120_columns_the_header_and_the_empty_diff_pane_are_not_cut(make_app: AppFactory) -> None:
    app = make_app(check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        deadline = time.monotonic() + 30
        while not app.header.index_state.startswith("index: 2 files"):
            assert time.monotonic() < deadline
            await pilot.pause(0.05)
        await settle(pilot)
        screen = app.export_screenshot().replace("&#160;", " ")
        assert "index: 2 files" in screen and "vectors off" in screen
        assert "$0.0000" in screen, "the session cost fell off the header"
        assert "/edit --from FILE." in screen, "the empty staged-changes text is cut"


async def test_the_header_says_when_the_index_waits_for_another_semfora(
    make_app: AppFactory, demo_repo: Path
) -> None:
    import fcntl
    import os

    from engine.repo.layout import RepoLayout

    cache = RepoLayout.for_path(demo_repo).cache_dir
    cache.mkdir(parents=True, exist_ok=True)
    fd = os.open(cache / "index.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a `semfora index` in another terminal, say
    try:
        app = make_app(check_model=False)
        async with app.run_test(size=(120, 40)) as pilot:
            deadline = time.monotonic() + 30
            while app.header.index_state != "index: waiting: another semfora is indexing…":
                assert time.monotonic() < deadline, app.header.index_state
                await pilot.pause(0.05)
            fcntl.flock(fd, fcntl.LOCK_UN)
            while not app.header.index_state.startswith("index: 2 files"):
                assert time.monotonic() < deadline, app.header.index_state
                await pilot.pause(0.05)
    finally:
        os.close(fd)


async def test_a_malformed_anthropic_base_url_opens_the_app_offline_saying_what_to_write(
    make_app: AppFactory, monkeypatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-url")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "127.0.0.1:8080")
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.main.offline is True
        text = app.chat.transcript()
        assert "ANTHROPIC_BASE_URL is '127.0.0.1:8080'" in text
        assert "ANTHROPIC_BASE_URL=http://127.0.0.1:8080" in text


async def test_index_rebuild_asked_while_the_start_up_index_runs_waits_for_it(
    make_app: AppFactory, make_repo
) -> None:
    """`/index --rebuild` while the app's own start-up index ran: two runs in one process, the
    second waiting on the first's lock as if it were "another semfora" (after 30 s: "Indexing
    failed — another /index is writing this repository's index")."""
    from engine.index.indexer import INLINE_PARSE_MAX
    from semfora_tui.screens.main import INDEX_WAITING_PHASE

    count = INLINE_PARSE_MAX + 16
    files = {f"pkg/mod{i}.py": f"def handler_{i}(request):\n    return request\n" for i in range(count)}
    app = make_app(make_repo(files), check_model=False)
    states: list[str] = []
    async with app.run_test(size=(120, 40)) as pilot:
        while not app.main.indexing:  # the start-up index, under way
            await pilot.pause(0.01)
        await app.main.run_slash("/index --rebuild")
        deadline = time.monotonic() + 90
        while "Index ready" not in app.chat.transcript():
            assert time.monotonic() < deadline, (states, app.chat.transcript())
            if not states or states[-1] != app.header.index_state:
                states.append(app.header.index_state)
            await pilot.pause(0.01)
        await settle(pilot)
        transcript = app.chat.transcript()
        assert not any(INDEX_WAITING_PHASE in s for s in states), states
        assert "Indexing failed" not in transcript
        assert "rebuilt from scratch" in transcript
        assert app.header.index_state.startswith(f"index: {count} files")


async def test_the_header_blames_chroma_not_the_embedder_when_the_server_is_down(
    make_app: AppFactory,
    fake_ollama,
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    """With Ollama answering and the Chroma server down, the header said "vectors off: no embedder"."""
    port = _closed_port()
    monkeypatch.setenv("SEMFORA_EMBEDDING", "ollama:nomic-embed-text")
    monkeypatch.setenv("SEMFORA_CHROMA_URL", f"http://127.0.0.1:{port}")
    app = make_app(check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        deadline = time.monotonic() + 60
        while not app.header.vectors.startswith("vectors off"):
            assert time.monotonic() < deadline, app.header.vectors
            await pilot.pause(0.02)
        assert app.header.vectors == "vectors off: Chroma unavailable"
        assert "not reachable" in app.main.vectors_reason
