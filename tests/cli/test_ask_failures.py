"""`semfora ask` and `edits commit` say what went wrong, with the right exit status (issue 13, items 4, 14).

No credentials for a LiteLLM model is MODEL_AUTH naming the variable (exit 3); an empty task is
a usage error that never reaches the model (exit 2); a model that gives up after failed edits,
and a lint/test command failing after a commit, exit 1; `--json` failures carry `error_code`;
a black-holed endpoint ends at the turn's deadline with every retry shown on stderr.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time

from tests.conftest import SEMFORA, run_semfora
from tests.engine.orchestrator.conftest import SHOP_FILES
from tests.engine.orchestrator.test_turn import GOOD_EDIT, MISMATCH
from tests.fakes.black_hole import black_hole


def test_litellm_model_without_credentials_is_model_auth_naming_the_variable(make_repo) -> None:
    root = make_repo(SHOP_FILES)
    proc = run_semfora(
        "ask", "explain Cart", "--path", str(root), "--model", "gpt-4o", env={"OPENAI_API_KEY": ""}
    )
    assert proc.returncode == 3, proc.stderr
    assert "error[MODEL_AUTH]: gpt-4o: no credentials: set OPENAI_API_KEY" in proc.stderr
    as_json = run_semfora(
        "ask", "explain Cart", "--path", str(root), "--model", "gpt-4o", "--json", env={"OPENAI_API_KEY": ""}
    )
    body = json.loads(as_json.stdout)
    assert (
        as_json.returncode == 3
        and body["error_code"] == "MODEL_AUTH"
        and "OPENAI_API_KEY" in body["error_message"]
    )


def test_an_empty_task_is_a_usage_error_and_never_calls_the_model(make_repo, fake_anthropic) -> None:
    root = make_repo(SHOP_FILES)
    for task in ("", "   "):
        proc = run_semfora("ask", task, "--path", str(root))
        assert proc.returncode == 2 and proc.stderr.startswith("error[USAGE]:"), proc.stderr
    assert run_semfora("context", "", "--path", str(root), "--json").returncode == 2
    assert fake_anthropic.message_requests() == []


def test_a_model_that_gives_up_after_failed_edits_exits_1_with_an_error_code(
    make_repo, fake_anthropic
) -> None:
    root = make_repo(SHOP_FILES)
    fake_anthropic.reply(MISMATCH).reply("I cannot find that code, sorry.")
    proc = run_semfora("ask", "Fix Cart.total", "--path", str(root), "--stage", "--json")
    assert proc.returncode == 1, proc.stdout
    data = json.loads(proc.stdout)
    assert data["ok"] is False and data["outcome"] == "edit_failed"
    assert data["error_code"] == "EDIT_BLOCK_FAILED" and "no corrected edit blocks" in data["error_message"]
    text = run_semfora("ask", "Fix Cart.total", "--path", str(root))  # default reply: "OK", no blocks
    assert text.returncode == 0


def test_every_failed_ask_json_carries_an_error_code(make_repo, fake_anthropic) -> None:
    root = make_repo(SHOP_FILES)
    for _ in range(3):
        fake_anthropic.reply(MISMATCH)
    proc = run_semfora("ask", "Fix Cart.total", "--path", str(root), "--json")
    data = json.loads(proc.stdout)
    assert proc.returncode == 1 and data["ok"] is False and data["error_code"] == "EDIT_BLOCK_FAILED"
    assert data["error_message"]


def test_a_failing_test_command_after_commit_exits_1_with_its_output(make_repo, fake_anthropic) -> None:
    root = make_repo(SHOP_FILES)
    env = {"SEMFORA_EDITS__TEST_CMD": "sh -c 'echo 3 tests failed; exit 4'"}
    fake_anthropic.reply(GOOD_EDIT)
    applied = run_semfora("ask", "Fix Cart.total", "--path", str(root), "--apply", env=env)
    assert applied.returncode == 1, applied.stdout + applied.stderr
    assert "3 tests failed" in applied.stdout
    assert "apply_discount(sub + tax_for(sub), code)" in (root / "src/shop/cart.py").read_text()  # it stays

    (root / "src/shop/extra.py").write_text("x = 1\n")
    reply = root.parent / "reply.txt"
    reply.write_text("src/shop/extra.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n")
    assert run_semfora("edits", "stage", str(reply), "--path", str(root)).returncode == 0
    commit = run_semfora("edits", "commit", "--all", "--path", str(root), env=env)
    assert commit.returncode == 1 and "3 tests failed" in commit.stdout
    assert (root / "src/shop/extra.py").read_text() == "x = 2\n"
    assert run_semfora("edits", "undo", "--path", str(root)).returncode == 0
    as_json = run_semfora("ask", "Fix it", "--path", str(root), "--apply", "--json", env=env)
    assert as_json.returncode in (0, 1)  # the default reply has no edits: nothing committed, nothing run


def test_a_black_holed_model_endpoint_ends_at_the_turn_deadline_with_retries_on_stderr(make_repo) -> None:
    root = make_repo(SHOP_FILES)
    assert run_semfora("context", "x y", "--path", str(root), "--json").returncode == 0  # index first
    with black_hole() as url:
        env = {
            "ANTHROPIC_BASE_URL": url,
            "ANTHROPIC_API_KEY": "sk-ant-test-black-hole",
            "SEMFORA_LLM__READ_TIMEOUT": "1",
            "SEMFORA_LLM__TURN_TIMEOUT": "4",
        }
        started = time.monotonic()
        proc = run_semfora("ask", "explain Cart", "--path", str(root), "--json", env=env, timeout=60)
        elapsed = time.monotonic() - started
    assert proc.returncode == 3, proc.stderr
    assert json.loads(proc.stdout)["error_code"] == "MODEL_TIMEOUT"
    assert "semfora: retrying 1/4 in " in proc.stderr and ": timed out" in proc.stderr
    assert elapsed < 20, elapsed


def test_ctrl_c_while_a_reply_streams_cancels_the_turn_and_exits_130(make_repo, fake_anthropic) -> None:
    # Once, Ctrl-C during the stream ended in a KeyError traceback: the interrupted Thread.join
    # left the worker looking finished while it still ran.
    root = make_repo(SHOP_FILES)
    fake_anthropic.reply("word " * 2000, chunk_chars=5, delay=0.05)  # about 100 s if never stopped
    proc = subprocess.Popen(
        [SEMFORA, "ask", "explain Cart.total", "--path", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ),
    )
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    seen = b""
    deadline = time.monotonic() + 60
    while b"word word" not in seen:  # the reply is streaming
        assert proc.poll() is None and time.monotonic() < deadline, seen
        seen += proc.stdout.read() or b""
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    rest, err = proc.communicate(timeout=60)
    out, stderr = (seen + rest).decode(), err.decode()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "cancelling the turn" in stderr
    assert "-- problem: model reply cancelled" in out
    # The prompt was sent and is billed all the same: the usage line says how much.
    usage = re.search(r"input (\d+) .*; cost \$([0-9.]+)", out)
    assert usage is not None and int(usage.group(1)) > 0 and float(usage.group(2)) > 0, out[-300:]


def test_turn_memory_warns_about_a_named_embedding_provider_but_not_about_auto_finding_none(
    make_repo, fake_anthropic
) -> None:
    """`auto` with no provider is the normal offline set-up: lexical recall without a warning on
    every `ask`. A provider the user named that is down is worth the warning."""
    root = make_repo(SHOP_FILES)
    fake_anthropic.reply("Cart.total adds the prices.").reply("Still the prices.")
    quiet = run_semfora("ask", "explain Cart.total", "--path", str(root), env={"SEMFORA_EMBEDDING": "auto"})
    assert quiet.returncode == 0, quiet.stderr
    assert "turn memory" not in quiet.stderr
    named = run_semfora(
        "ask", "explain Cart.total", "--path", str(root), env={"SEMFORA_EMBEDDING": "ollama:nomic-embed-text"}
    )
    assert named.returncode == 0, named.stderr
    assert "turn memory: vectors unavailable" in named.stderr and "using lexical recall" in named.stderr


def test_a_local_model_with_ollama_down_says_to_start_ollama(make_repo) -> None:
    """The advice was to 'pick a local model with --model ollama/...': the one already picked."""
    root = make_repo(SHOP_FILES)
    proc = run_semfora("ask", "explain Cart", "--path", str(root), "--model", "ollama/qwen2.5-coder:7b")
    assert proc.returncode == 3, proc.stderr
    assert "needs Ollama, which is not reachable" in proc.stderr
    assert "ollama serve" in proc.stderr and "ollama pull qwen2.5-coder:7b" in proc.stderr
    assert "--model ollama/" not in proc.stderr


def _ask_on_one_terminal(root, *args: str) -> tuple[int, str]:
    """`semfora ask` with stdout and stderr on one stream, as a terminal shows them."""
    proc = subprocess.run(
        [SEMFORA, "ask", *args, "--path", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=dict(os.environ),
        timeout=120,
        check=False,
    )
    return proc.returncode, proc.stdout


def test_status_and_error_lines_start_on_their_own_line_after_a_reply_cut_mid_line(
    make_repo, fake_anthropic
) -> None:
    # A NEED reply with no final newline had the status glued to it on a terminal
    # ("- src/shop/pricing.pysemfora: the model asked ..."), and a cut stream the error line.
    root = make_repo(SHOP_FILES)
    fake_anthropic.reply("NEED:\n- src/shop/pricing.py").reply("The answer.")
    code, shown = _ask_on_one_terminal(root, "explain the checkout flow")
    assert code == 0, shown
    assert "- src/shop/pricing.py\nsemfora: the model asked for 1 file;" in shown, shown
    assert "\nThe answer." in shown

    fake_anthropic.disconnect("The answer is that Cart.total adds tax", after_chunks=2)
    code, shown = _ask_on_one_terminal(root, "explain Cart.total")
    assert code == 1, shown
    assert "The answer is th\nerror[MODEL_STREAM_INTERRUPTED]: " in shown, shown


def test_a_reader_that_leaves_mid_reply_does_not_cost_the_turn_its_edits(make_repo, fake_anthropic) -> None:
    # `semfora ask "fix it" | head -1` ended at the first write after head left: exit 0,
    # nothing staged, no run logged, though the reply was paid for.
    root = make_repo(SHOP_FILES)
    fake_anthropic.reply(
        "I looked at it.\n" + "Some reasoning. " * 40 + "\n" + GOOD_EDIT, chunk_chars=16, delay=0.02
    )
    proc = subprocess.Popen(
        [SEMFORA, "ask", "Fix Cart.total", "--path", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ),
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline() == b"I looked at it.\n"  # the reply is streaming
    proc.stdout.close()  # the reader leaves, as `head -1` does
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    listed = run_semfora("edits", "list", "--path", str(root), "--json")
    assert "src/shop/cart.py" in listed.stdout, listed.stdout


def test_an_anthropic_base_url_without_a_scheme_is_a_configuration_error_at_once(make_repo) -> None:
    """`ANTHROPIC_BASE_URL=127.0.0.1:8080` (no http://) was retried five times as "could not
    connect" (ten seconds), and `doctor` sent it as a URL too."""
    root = make_repo(SHOP_FILES)
    env = {"ANTHROPIC_BASE_URL": "127.0.0.1:8080", "ANTHROPIC_API_KEY": "sk-ant-test-scheme"}
    proc = run_semfora("ask", "explain Cart", "--path", str(root), env=env)
    assert proc.returncode == 2, proc.stderr
    assert "error[CONFIG_INVALID]: ANTHROPIC_BASE_URL is '127.0.0.1:8080'" in proc.stderr
    assert "ANTHROPIC_BASE_URL=http://127.0.0.1:8080" in proc.stderr and "retrying" not in proc.stderr
    doctor = run_semfora("doctor", "--path", str(root), "--json", env=env)
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["anthropic key"]["status"] == "fail"
    assert "not an http:// or https:// URL" in checks["anthropic key"]["detail"]


def test_a_blank_anthropic_base_url_means_the_default_api(make_repo) -> None:
    """`ANTHROPIC_BASE_URL=` (set, but blank) was passed on as a base URL of "": every attempt
    failed as "could not connect after 5 attempts ()". Blank is unset: the default API is asked."""
    root = make_repo(SHOP_FILES)
    env = {
        "ANTHROPIC_BASE_URL": "",
        "ANTHROPIC_API_KEY": "sk-ant-test-blank",
        "SEMFORA_LLM__MAX_RETRIES": "0",
    }
    proc = run_semfora("ask", "explain Cart", "--path", str(root), env=env)
    assert proc.returncode == 3, proc.stderr
    assert "()" not in proc.stderr
    # Offline this machine cannot connect; with a network the dummy key is refused. Either way,
    # the error is about api.anthropic.com.
    assert "(https://api.anthropic.com)" in proc.stderr or "MODEL_AUTH" in proc.stderr, proc.stderr
