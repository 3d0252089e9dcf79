"""Engine notices in the app: what the CLI prints as a warning line, the app shows on screen.

A full-screen app hides stderr, so an untrusted repository configuration or a damaged state
file set aside must reach the user as a toast and a chat note, from any thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from engine import config as engine_config
from engine import quarantine
from semfora_tui.app import CONFIG_NOTICE_TITLE, STATE_NOTICE_TITLE
from tests.tui.conftest import SOURCE, AppFactory, settle, wait_for


def _toasts(app: object) -> list[str]:
    return [str(n.message) for n in app._notifications]  # type: ignore[attr-defined]


async def test_untrusted_repository_settings_are_shown_not_printed(
    make_app: AppFactory, make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo({**SOURCE, ".semfora.toml": '[edits]\ntest_cmd = "touch pwned"\n'})
    app = make_app(repo, check_model=False, start_index=False)
    assert "UNTRUSTED_CONFIG" not in capsys.readouterr().err  # not a line hidden under the screen
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: "edits.test_cmd" in app.chat.transcript(), "the untrusted notice")
        transcript = app.chat.transcript()
        assert CONFIG_NOTICE_TITLE in transcript and "semfora trust" in transcript
        assert any("edits.test_cmd" in t for t in _toasts(app))
    assert app.bridge.settings.edits.test_cmd != "touch pwned"
    # the app gives the sink back when it ends: the CLI's warning line works again
    assert engine_config.notice_sink is not app._config_notice


async def test_a_damaged_file_set_aside_while_the_app_runs_is_said_from_a_worker_thread(
    make_app: AppFactory,
) -> None:
    app = make_app(check_model=False, start_index=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        worker = threading.Thread(
            target=quarantine.notify, args=("cache.db was damaged and was set aside as cache.db.corrupt-1",)
        )
        worker.start()  # not joined here: the UI must never wait for the worker, nor it for the UI
        await wait_for(pilot, lambda: "cache.db.corrupt-1" in app.chat.transcript(), "the quarantine notice")
        assert STATE_NOTICE_TITLE in app.chat.transcript()
        assert any("cache.db.corrupt-1" in t for t in _toasts(app))
        worker.join(timeout=60)
        assert not worker.is_alive()
    # after the app, notices go back to their default (a log line), not to a dead app
    quarantine.notify("later")


async def test_a_pack_built_without_vectors_says_so_under_the_pack(
    make_app: AppFactory, fake_ollama: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    from engine.index.hybrid import reset_warnings

    with socket.socket() as s:  # a port nothing listens on: the Chroma server is down
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("SEMFORA_EMBEDDING", "ollama:nomic-embed-text")
    monkeypatch.setenv("SEMFORA_CHROMA_URL", f"http://127.0.0.1:{port}")
    reset_warnings()  # once per process: this test wants the first time
    app = make_app(check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.header.index_state.startswith("index: 2 files"), "the index")
        await app.main.run_slash("/context how is the port parsed")
        await wait_for(pilot, lambda: "Context pack" in app.chat.transcript(), "the pack")
        await settle(pilot)
        transcript = app.chat.transcript()
        assert "parse_port" in transcript
        after = transcript[transcript.index("Context pack") :].splitlines()
        said = [line for line in after if line.startswith("_") and "vector" in line]
        assert said, after  # the pack is poorer without vectors, and the user is told why


def test_a_full_disk_in_an_app_job_is_said_as_disk_full_not_internal() -> None:
    """A job that hit a full disk (the index's commit) was shown as error[INTERNAL] OperationalError."""
    import errno
    import sqlite3

    from semfora_tui.screens.main import attempt

    def commit() -> None:
        raise sqlite3.OperationalError("database or disk is full")

    def write() -> None:
        raise OSError(errno.ENOSPC, "No space left on device", "/cache/semfora/x/index.db-wal")

    for job in (commit, write):
        _, err = attempt(job)
        assert err is not None and err.code == "DISK_FULL", err
        assert "XDG_CACHE_HOME" in (err.hint or "")
    _, other = attempt(lambda: int("x"))
    assert other is not None and other.code == "INTERNAL"
