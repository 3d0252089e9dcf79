"""Planted secrets never leave the process: not to Anthropic, not to Ollama, not to disk, not to MCP,
not to the terminal.

A repository with every kind of secret the policy knows (token formats, dotenv variants, key
files, passwords in URLs and git remotes, ``*_PASS`` assignments) is indexed with embeddings, asked
about through the real CLI (a NEED round, a failing edit block whose retry quotes the file's real
lines, a staged edit, then ``--resume``), summarised by Ollama, reviewed by ``semfora ci`` and
served over MCP. Then every request body, every file under the cache and config directories,
every MCP reply and every printed line is scanned.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import SEMFORA, git, run_semfora
from tests.fakes.fixtures import DUMMY_API_KEY

PLANTED = {
    "url password": "PlantedUrlPw",
    "aws key id": "AKIAIOSFODNN7PLANTED",
    "github token": "ghp_PlantedGitHubToken0123456789abcdef",
    "anthropic key": "sk-ant-api03-PlantedAnthropicKey-0123456789",
    "git remote password": "PlantedRemotePass77",
    "shell DB_PASS": "PlantedDbPass42",
    "shell API_TOKEN": "PlantedApiToken99",
    "yaml password": "PlantedYamlPw1",
    "dotenv stripe": "sk_live_PlantedStripe0123456789",
    "dotenv local": "PlantedLocalEnvValue",
    "prod.env": "PlantedProdEnvValue",
    "envrc": "PlantedEnvrcValue",
    "private key file": "PlantedPrivateKeyBody",
    "pem file": "PlantedPemBody",
    "inline private key": "PlantedInlineKeyBody",
    "pgpass": "PlantedPgpassValue",
    "docker config": "PlantedDockerAuth",
    "typed into the task": "sk-ant-api03-TypedIntoTheTask0123456789XYZ",
    "typed DB_PASS": "TypedDbPass777",
    "added in a commit": "ghp_AddedInACommit0123456789abcdefABCD",
    "signature default": "PlantedSignaturePw9",
}
P = PLANTED

DB_PY = f'''"""Database access."""

DATABASE_URL = "postgres://admin:{P["url password"]}@db.internal:5432/shop"
AWS_ACCESS_KEY_ID = "{P["aws key id"]}"
GITHUB_TOKEN = "{P["github token"]}"
ANTHROPIC_KEY = "{P["anthropic key"]}"


def connect(retries=3):
    """Open a connection to DATABASE_URL."""
    return _open(DATABASE_URL, retries)


def _open(url, retries):
    return (url, retries)
'''
REMOTE_PY = f'''GIT_REMOTE = "https://deploy:{P["git remote password"]}@github.com/org/shop.git"


def push_url():
    """Where releases are pushed."""
    return GIT_REMOTE
'''
SHOP_PY = '''from app.db import connect


def checkout(cart):
    """Charge a cart."""
    conn = connect()
    return total(cart)


def total(cart):
    return sum(cart)
'''
FILES = {
    "app/__init__.py": "",
    "app/db.py": DB_PY,
    "app/remote.py": REMOTE_PY,
    "app/shop.py": SHOP_PY,
    "deploy/settings.sh": f"export DB_PASS={P['shell DB_PASS']}\nAPI_TOKEN={P['shell API_TOKEN']}\n",
    "config.yaml": f"database:\n  user: shop\n  password: {P['yaml password']}\n",
    "notes.md": "# Notes\n\n-----BEGIN RSA PRIVATE KEY-----\n"
    f"{P['inline private key']}\n-----END RSA PRIVATE KEY-----\n",
    ".env": f"STRIPE_SECRET={P['dotenv stripe']}\n",
    ".env.local": f"LOCAL={P['dotenv local']}\n",
    "prod.env": f"PROD={P['prod.env']}\n",
    ".envrc": f"export THING={P['envrc']}\n",
    "id_rsa": f"-----BEGIN OPENSSH PRIVATE KEY-----\n{P['private key file']}\n-----END OPENSSH PRIVATE KEY-----\n",
    "keys/server.pem": f"{P['pem file']}\n",
    ".pgpass": f"db:5432:shop:admin:{P['pgpass']}\n",
    ".docker/config.json": json.dumps({"auths": {"r.example": {"auth": P["docker config"]}}}),
}
TASK = (
    f"Make connect in @app/db.py retry twice; the deploy key is {P['typed into the task']} and "
    f"DB_PASS={P['typed DB_PASS']}, see @.env and @id_rsa"
)
NEED_REPLY = "NEED:\n- connect\n- app/remote.py\n- .env\n- id_rsa\n- config.yaml\n- deploy/settings.sh\n"
BAD_EDIT = (
    "app/db.py\n<<<<<<< SEARCH\ndef connect(retries=5):\n    return None\n=======\n"
    "def connect(retries=2):\n    return None\n>>>>>>> REPLACE\n"
)
GOOD_EDIT = (
    "app/shop.py\n<<<<<<< SEARCH\n    conn = connect()\n=======\n    conn = connect(retries=2)\n"
    ">>>>>>> REPLACE\n"
)


def _leaks(text: str) -> list[str]:
    found = [label for label, secret in PLANTED.items() if secret in text]
    return found + (["ANTHROPIC_API_KEY"] if DUMMY_API_KEY in text else [])


def _tree_leaks(base: Path) -> list[str]:
    """Each planted secret found under ``base`` (in a file's name or bytes), with that file."""
    return [
        f"{label} in {p.relative_to(base)}"
        for p in sorted(base.rglob("*"))
        if p.is_file()
        for label in _leaks(f"{p}\n" + p.read_bytes().decode("utf-8", "replace"))
    ]


@pytest.fixture
def vault(make_repo, fake_anthropic, fake_ollama, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SEMFORA_EMBEDDING", "ollama:nomic-embed-text")
    root = make_repo(FILES)
    (root / "loop").symlink_to(root / "loop")
    return root


def test_no_planted_secret_reaches_a_model_a_file_or_the_terminal(
    vault: Path, fake_anthropic, fake_ollama
) -> None:
    printed: list[str] = []

    def cli(*args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
        out = run_semfora(*args)
        printed.extend([out.stdout, out.stderr])
        assert out.returncode == code, (args, out.stdout[-2000:], out.stderr[-2000:])
        return out

    cli("index", "--path", str(vault), "--json")
    fake_anthropic.reply(NEED_REPLY)
    fake_anthropic.reply(BAD_EDIT)
    fake_anthropic.reply(GOOD_EDIT)
    asked = cli("ask", TASK, "--path", str(vault), "--json")
    result = json.loads(asked.stdout)
    assert result["need_rounds"] == 1 and result["edit_retries"] == 1, result
    assert result["edits_staged"] == ["app/shop.py"]
    fake_anthropic.reply("Connect retries as asked.")
    cli("ask", "explain connect", "--resume", "--path", str(vault))
    cli("context", TASK, "--path", str(vault), "--json")
    cli("context", TASK, "--path", str(vault))
    cli("search", "DATABASE_URL postgres admin", "--path", str(vault), "--mode", "fts", "--json")
    cli("symbol", "connect", "--source", "--path", str(vault), "--json")

    # Summaries: a turn in process, whose background summaries go to (fake) Ollama.
    from engine.config import load_settings
    from engine.llm.select import make_reasoner
    from engine.orchestrator.core import Orchestrator
    from engine.repo.layout import RepoLayout

    layout = RepoLayout.for_path(vault)
    # Background summaries of the highest fan-in symbols (their source goes to Ollama).
    settings = load_settings(layout.root, overrides={"ollama.presummarize": True}).settings
    fake_anthropic.reply("It retries.")
    orch = Orchestrator(layout, settings, make_reasoner(settings))
    orch.run_turn("explain connect and push_url")
    if orch.presummary_thread is not None:
        orch.presummary_thread.join(timeout=60)
    orch.close()

    # CI: a commit that adds a secret is reported with the value masked.
    (vault / "app" / "tokens.py").write_text(
        f'TOKEN = "{P["added in a commit"]}"\n\n\n'
        f'def rotate(user, password="{P["signature default"]}"):\n    return user\n'
    )
    git(vault, "add", "app/tokens.py")
    git(vault, "commit", "-q", "-m", "add token")
    ci = cli(
        "ci",
        "--mode",
        "commit",
        "--commit",
        "HEAD",
        "--output",
        "json",
        "--no-model",
        "--path",
        str(vault),
        code=1,
    )
    assert any(f["rule"] == "secret-in-diff" for f in json.loads(ci.stdout)["findings"])
    cli("ci", "--mode", "commit", "--commit", "HEAD", "--no-model", "--path", str(vault), code=1)
    cli("diff", "HEAD~1", "HEAD", "--path", str(vault), "--format", "text")
    assert (
        "def rotate(user, password=" in cli("diff", "HEAD~1", "HEAD", "--path", str(vault), "--json").stdout
    )

    # What was sent, and that the test could have caught a leak: the real lines were there.
    bodies = [json.dumps(r.body) for r in fake_anthropic.requests]
    ollama = [json.dumps(r.body) for r in fake_ollama.requests]
    requests = fake_anthropic.message_requests()
    assert "def connect(retries=3)" in requests[0].all_text  # the source went in, masked
    assert "push_url" in requests[1].all_text  # the NEED round served app/remote.py
    assert "nearest real lines" in requests[2].all_text  # the retry quoted app/db.py
    assert "DATABASE_URL" in requests[2].all_text
    assert fake_ollama.requests_to("/api/embed") and fake_ollama.requests_to("/api/generate")

    leaks = {
        "anthropic requests": _leaks("\n".join(bodies)),
        "ollama requests": _leaks("\n".join(ollama)),
        "cache directory": _tree_leaks(Path(os.environ["XDG_CACHE_HOME"])),
        "config directory": _tree_leaks(Path(os.environ["XDG_CONFIG_HOME"])),
        "printed lines": _leaks("\n".join(printed)),
    }
    assert leaks == {k: [] for k in leaks}


async def test_no_planted_secret_is_served_over_mcp(vault: Path) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    calls = [
        ("search", {"query": "DATABASE_URL postgres admin connect", "mode": "fts", "limit": 20}),
        ("search", {"query": "password database user", "mode": "fts"}),
        ("search", {"query": "private key notes", "mode": "fts"}),
        ("search_symbols", {"query": "connect"}),
        ("get_symbol", {"symbol": "connect"}),
        ("get_symbol_source", {"symbol": "connect", "context": 10}),
        ("get_symbol_source", {"symbol": "push_url", "context": 5}),
        ("get_module", {"module": "app"}),
        ("list_symbols", {"limit": 200}),
        ("analyze_file", {"path": "app/db.py"}),
        ("analyze_file", {"path": "app/remote.py"}),
        ("get_repo_overview", {}),
        ("analyze_diff", {"base": "HEAD"}),
        ("analyze_file", {"path": ".env"}),
        ("analyze_file", {"path": "id_rsa"}),
    ]
    served: list[str] = []
    params = StdioServerParameters(command=SEMFORA, args=["mcp", "--path", str(vault)], env=dict(os.environ))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for name, args in calls:
            # A failed call is a result with isError (its text and structured content are served too).
            result = await session.call_tool(name, args)
            served.append(result.content[0].text + json.dumps(result.structured_content))
        errors = {}
        for path in ("loop", "x" * 300, "a\x00b"):
            failed = await session.call_tool("analyze_file", {"path": path})
            assert failed.is_error
            errors[path[:4]] = failed.structured_content["error_code"]
    text = "\n".join(served)
    assert "def connect" in text or "connect(retries=3)" in text  # real content was served...
    assert _leaks(text) == []  # ...without a single secret
    assert errors == {"loop": "SYMLINK_LOOP", "xxxx": "PATH_TOO_LONG", "a\x00b": "PATH_INVALID"}


def test_prompt_history_never_writes_a_typed_key(tmp_path: Path) -> None:
    from semfora_tui.history import PromptHistory

    history = PromptHistory(tmp_path / "prompt_history.jsonl")
    assert history.add(TASK) is False
    assert history.add("explain connect") is True
    assert _leaks((tmp_path / "prompt_history.jsonl").read_text()) == []


def test_cli_path_errors_are_typed(tmp_path: Path) -> None:
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    for path, code in ((tmp_path / "loop", "SYMLINK_LOOP"), (tmp_path / ("n" * 300), "PATH_TOO_LONG")):
        out = run_semfora("index", "--path", str(path))
        assert out.returncode == 2 and out.stderr.startswith(f"error[{code}]"), out.stderr
        assert "Traceback" not in out.stderr
        as_json = run_semfora("search", "x", "--path", str(path), "--json")
        assert json.loads(as_json.stdout)["error_code"] == code
