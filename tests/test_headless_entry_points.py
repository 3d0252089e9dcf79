"""Every headless entry point runs without the app: neither ``textual`` nor ``semfora_tui`` is
ever imported by a CLI command that does not open the app, nor by the MCP server.

Each case runs the real command line (``semfora_cli.main.main``) in a fresh interpreter on a
small git repository, behind an import hook that records every attempt to import ``textual`` or
``semfora_tui`` (even one that is caught, or whose module is later dropped from ``sys.modules``).
When the process exits, the hook writes what it saw, plus the top-level modules loaded, to a
report file; stdout stays the command's own (the MCP server's protocol channel).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.engine.mcp_client import INITIALIZE

# Packages a headless command must never load: the Textual framework and semfora's app.
APP_PACKAGES = ("textual", "semfora_tui")

PROBE = r"""
import atexit, json, os, sys

WATCHED = tuple(json.loads(os.environ["SEMFORA_PROBE_WATCH"]))
attempts = []


class Recorder:
    # A meta-path finder that finds nothing: it only notes the name and lets the import go on.
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in WATCHED:
            attempts.append(name)
        return None


sys.meta_path.insert(0, Recorder())


def report():
    loaded = sorted({m.split(".")[0] for m in list(sys.modules)})
    with open(os.environ["SEMFORA_PROBE_REPORT"], "w", encoding="utf-8") as fh:
        json.dump({"attempts": attempts, "loaded": loaded}, fh)


atexit.register(report)
from semfora_cli.main import main

sys.argv = ["semfora", *sys.argv[1:]]
sys.exit(main())
"""

REPO = {
    "calc/ops.py": (
        '"""Arithmetic."""\n\n'
        "def add(a, b):\n    return a + b\n\n"
        "def total(values):\n    out = 0\n    for v in values:\n        out = add(out, v)\n    return out\n"
    ),
    "calc/report.py": "from calc.ops import total\n\ndef summary(values):\n    return f'sum {total(values)}'\n",
}


def _probe_command(tmp_path: Path, args: tuple[str, ...]) -> tuple[list[str], dict[str, str]]:
    report = tmp_path / f"probe-{len(list(tmp_path.glob('probe-*')))}.json"
    env = dict(os.environ)
    env["SEMFORA_PROBE_WATCH"] = json.dumps(APP_PACKAGES)
    env["SEMFORA_PROBE_REPORT"] = str(report)
    env["PYTHONPATH"] = str(ROOT)
    return [sys.executable, "-c", PROBE, *args], env


def _report(env: dict[str, str]) -> dict[str, list[str]]:
    data: dict[str, list[str]] = json.loads(Path(env["SEMFORA_PROBE_REPORT"]).read_text(encoding="utf-8"))
    return data


def _assert_headless(env: dict[str, str]) -> dict[str, list[str]]:
    seen = _report(env)
    assert "semfora_cli" in seen["loaded"]
    assert seen["attempts"] == [], f"imported {seen['attempts']}"
    for package in APP_PACKAGES:
        assert package not in seen["loaded"], package
    return seen


def _run(tmp_path: Path, cwd: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    cmd, env = _probe_command(tmp_path, args)
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=180, check=False)
    return proc, env


@pytest.fixture
def repo(make_repo) -> Path:
    return make_repo(REPO)


# (arguments, expected exit status, what stdout must show): each is a headless entry point.
CASES: list[tuple[tuple[str, ...], int | None, str]] = [
    (("--version",), 0, "semfora"),
    (("--help",), 0, "usage"),
    (("index", "--json", "--no-vectors"), 0, '"ok": true'),
    (("search", "total of values", "--json", "--mode", "fts"), 0, '"results"'),
    (("symbol", "total", "--json"), 0, '"qualified_name": "total"'),
    (("callers", "add", "--json"), 0, '"callers"'),
    (("overview",), 0, "calc"),
    (("languages",), 0, "python"),
    (("context", "change how total adds values", "--json"), 0, '"items"'),
    (("ci", "--mode", "commit", "--output", "json"), 0, '"findings"'),
    (("diff", "--json"), 0, ""),
    (("doctor", "--no-network", "--json"), None, '"checks"'),  # any status: no model is configured
    (("config", "--json"), 0, '"llm.model"'),
    (("edits", "list", "--json"), 0, ""),
    (("cache", "stats", "--json"), 0, '"entries"'),
    (("metrics", "--json"), 0, '"days"'),
    (("ask", "explain total"), 3, ""),  # no model configured: ModelUnavailable, before any work
]


@pytest.mark.parametrize(("args", "status", "shows"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_headless_command_never_imports_the_app(
    tmp_path: Path, repo: Path, args: tuple[str, ...], status: int | None, shows: str
) -> None:
    proc, env = _run(tmp_path, repo, *args)
    if status is not None:
        assert proc.returncode == status, proc.stderr
    assert shows in proc.stdout, proc.stdout + proc.stderr
    _assert_headless(env)


def test_the_probe_sees_the_app_when_a_command_opens_it(tmp_path: Path, repo: Path) -> None:
    """The hook is not blind: `semfora PATH` (the app) on a path that does not exist reaches the
    app's launcher, which imports ``semfora_tui`` and reports the error before any screen."""
    proc, env = _run(tmp_path, repo, str(repo / "no-such-dir"))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error[")
    seen = _report(env)
    assert "semfora_tui" in seen["loaded"]
    assert any(name.startswith("semfora_tui") for name in seen["attempts"])


def test_mcp_server_starts_and_answers_without_the_app(tmp_path: Path, repo: Path) -> None:
    """`semfora mcp`: initialize and list the tools over stdio, close stdin, and the server exits
    having never imported the app."""
    cmd, env = _probe_command(tmp_path, ("mcp",))
    proc = subprocess.Popen(
        cmd,
        cwd=repo,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict[str, object]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()

    def reply(request_id: int) -> dict[str, object]:
        assert proc.stdout is not None
        while True:  # waits for the server's answer line, not for a time
            line = proc.stdout.readline()
            assert line, "the server closed stdout before answering"
            message: dict[str, object] = json.loads(line)
            if message.get("id") == request_id:
                return message

    try:
        send(INITIALIZE)
        init = reply(1)
        assert init["result"]["serverInfo"]["name"] == "semfora"  # type: ignore[index]
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        listed = reply(2)
        names = {t["name"] for t in listed["result"]["tools"]}  # type: ignore[index]
        assert {"get_context", "search", "get_symbol"} <= names
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        if proc.stderr is not None:
            proc.stderr.close()
    _assert_headless(env)
