"""`ask`, `context` and `search` while another process writes the index (a `semfora index` in
another terminal, the app's watcher): with an index to answer from, none of them waits for the
writer; each answers from the index as it is and says so on stderr, in the same words."""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import run_semfora
from tests.engine.mcp_client import index_lock_held
from tests.engine.orchestrator.conftest import SHOP_FILES

# Long enough that a command waiting for the writer would outlast the test's own bound.
LONG_LOCK_WAIT = {"SEMFORA_INDEX__LOCK_TIMEOUT": "3600"}
BUSY_NOTE = "another semfora process (pid "
AS_IS = "answering from the index as it is"


@pytest.fixture
def shop(make_repo):
    root = make_repo(SHOP_FILES)
    assert run_semfora("index", "--no-vectors", "--path", str(root)).returncode == 0
    return root


def test_ask_answers_from_the_index_while_another_process_writes_it(shop, fake_anthropic) -> None:
    """`semfora ask` sat out the writer's whole run (up to index.lock_timeout, 30 s by default)
    before it sent anything to the model."""
    fake_anthropic.reply("Cart.total applies the discount before tax.")
    with index_lock_held(shop):
        proc = run_semfora("ask", "explain Cart.total", "--json", "--path", str(shop), env=LONG_LOCK_WAIT)
        assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["ok"] is True
    assert BUSY_NOTE in proc.stderr and AS_IS in proc.stderr
    assert len(fake_anthropic.message_requests()) == 1


@pytest.mark.parametrize(
    "command",
    [("context", "explain Cart.total", "--json"), ("search", "discount", "--json")],
    ids=lambda c: c[0],
)
def test_context_and_search_say_the_index_is_being_written(shop, command) -> None:
    """They answered from the index without a word while another process was rewriting it."""
    with index_lock_held(shop):
        proc = run_semfora(*command, "--path", str(shop), env=LONG_LOCK_WAIT)
        assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    assert BUSY_NOTE in proc.stderr and AS_IS in proc.stderr
    if command[0] == "search":  # a script reading the JSON hears it too
        assert any(BUSY_NOTE in w for w in payload["warnings"])
    # Once the writer is done, nothing is said.
    quiet = run_semfora(*command, "--path", str(shop))
    assert quiet.returncode == 0 and BUSY_NOTE not in quiet.stderr


def test_ctrl_c_during_index_says_what_state_the_index_is_in(shop) -> None:
    """Ctrl-C during `semfora index` printed a bare "interrupted": saved or not, go on or redo?"""
    import signal
    import subprocess

    from tests.conftest import SEMFORA

    with index_lock_held(shop):
        proc = subprocess.Popen(
            [SEMFORA, "index", "--no-vectors", "--path", str(shop)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **LONG_LOCK_WAIT},
        )
        assert proc.stderr is not None
        try:
            # The state: it has said that it waits for the other writer (mid-run, nothing saved).
            assert "waiting for it to finish" in proc.stderr.readline()
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130
    assert "interrupted: the index is as it was before this run; `semfora index` brings it up to date" in err
    assert out == ""
