"""The command line as a demanding user meets it (polish round): set-up faults said in one line,
warnings said as warnings, counts that read the same in every command."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import SEMFORA, run_semfora

REPO = {
    "app/core.py": (
        "def greet(name):\n    return 'hi ' + name\n\n"
        "class Greeter:\n    def hello(self):\n        return greet('x')\n"
    ),
    "main.py": "from app.core import greet\n\ndef main():\n    greet('a')\n",
}

COMMANDS_THAT_WRITE_THE_CACHE = [
    ("index", "--no-vectors"),
    ("search", "greet"),
    ("symbol", "greet"),
    ("callers", "greet"),
    ("overview",),
    ("context", "explain greet"),
    ("edits", "list"),
    ("cache", "stats"),
    ("metrics",),
]


@pytest.mark.parametrize("command", COMMANDS_THAT_WRITE_THE_CACHE, ids=lambda c: "-".join(c))
def test_a_cache_home_that_cannot_be_created_is_one_error_line(make_repo, tmp_path: Path, command) -> None:
    """XDG_CACHE_HOME under a regular file (or a read-only disk) used to end in a traceback."""
    root = make_repo(REPO)
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache should go\n")
    env = {"XDG_CACHE_HOME": str(blocker / "cache")}
    proc = run_semfora(*command, "--path", str(root), env=env)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error[CACHE_DIR_UNWRITABLE]: "), proc.stderr
    assert "XDG_CACHE_HOME" in lines[0]


def test_a_cache_error_with_json_is_a_json_document(make_repo, tmp_path: Path) -> None:
    root = make_repo(REPO)
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x\n")
    proc = run_semfora("search", "greet", "--json", "--path", str(root), env={"XDG_CACHE_HOME": str(blocker)})
    assert proc.returncode == 2
    doc = json.loads(proc.stdout)
    assert doc["ok"] is False and doc["error_code"] == "CACHE_DIR_UNWRITABLE"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory anyway")
def test_an_existing_read_only_cache_dir_is_one_error_line(make_repo, tmp_path: Path) -> None:
    root = make_repo(REPO)
    cache = tmp_path / "cache"
    assert (
        run_semfora(
            "index", "--no-vectors", "--path", str(root), env={"XDG_CACHE_HOME": str(cache)}
        ).returncode
        == 0
    )
    for path in [cache, *cache.rglob("*")]:
        if path.is_dir():
            path.chmod(0o500)
    try:
        proc = run_semfora("search", "greet", "--path", str(root), env={"XDG_CACHE_HOME": str(cache)})
    finally:
        for path in [cache, *cache.rglob("*")]:
            if path.is_dir():
                path.chmod(0o700)
    assert proc.returncode == 2 and proc.stderr.startswith("error[CACHE_DIR_UNWRITABLE]: "), proc.stderr


def test_doctor_says_the_cache_dir_once_and_skips_what_needs_it(make_repo, tmp_path: Path) -> None:
    root = make_repo(REPO)
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x\n")
    proc = run_semfora(
        "doctor", "--no-network", "--json", "--path", str(root), env={"XDG_CACHE_HOME": str(blocker)}
    )
    checks = {c["name"]: c for c in json.loads(proc.stdout)["checks"]}
    assert checks["cache dir"]["status"] == "fail" and checks["cache dir"]["code"] == "DOCTOR_CACHE_DIR"
    for name in ("index", "chroma", "edit journal"):
        assert checks[name]["status"] == "skip", checks[name]
    assert not any(c["code"] == "DOCTOR_CHECK_CRASHED" for c in checks.values())


def test_an_engine_log_warning_is_one_warning_line(make_repo, tmp_path: Path) -> None:
    """The engine's log warnings used to reach stderr bare (no `warning:`), once per chunk asked."""
    files = dict(REPO)
    files["app/moved.py"] = "".join(f"def greet_{i}():\n    return greet('{i}')\n\n" for i in range(60))
    root = make_repo(files)
    assert run_semfora("index", "--no-vectors", "--path", str(root)).returncode == 0
    outside = tmp_path / "outside.py"
    outside.write_text((root / "app" / "moved.py").read_text())
    (root / "app" / "moved.py").unlink()
    (root / "app" / "moved.py").symlink_to(outside)  # now leads out of the repository
    proc = run_semfora("search", "greet", "--limit", "20", "--path", str(root))
    assert proc.returncode == 0, proc.stderr
    about = [line for line in proc.stderr.splitlines() if "moved.py" in line and "outside" in line]
    assert about == ["warning: not reading app/moved.py: it resolves outside the repository"], proc.stderr


def test_a_file_deleted_after_indexing_is_said_once_as_stale(make_repo) -> None:
    files = dict(REPO)
    files["app/gone.py"] = "".join(f"def greet_{i}():\n    return greet('{i}')\n\n" for i in range(60))
    root = make_repo(files)
    assert run_semfora("index", "--no-vectors", "--path", str(root)).returncode == 0
    (root / "app" / "gone.py").unlink()
    proc = run_semfora("search", "greet", "--limit", "20", "--path", str(root))
    about = [line for line in proc.stderr.splitlines() if "gone.py" in line]
    assert len(about) == 1 and "changed on disk since it was indexed (app/gone.py)" in about[0], proc.stderr


def test_turn_memory_without_any_embedder_is_not_a_warning(make_repo, fake_anthropic) -> None:
    """No Ollama and no local model is the ordinary set-up; `context` said so on every run."""
    root = make_repo(REPO)
    env = {"SEMFORA_EMBEDDING": "auto", "HF_HUB_OFFLINE": "1"}
    fake_anthropic.reply("greet says hi.")
    assert run_semfora("ask", "explain greet", "--path", str(root), env=env).returncode == 0
    proc = run_semfora("context", "explain greet again", "--path", str(root), env=env)
    assert proc.returncode == 0, proc.stderr
    assert "turn memory" not in proc.stderr, proc.stderr


def _cache_dir_of(root: Path) -> Path:
    from engine.repo.layout import RepoLayout

    return RepoLayout.for_path(root).cache_dir


@pytest.mark.parametrize("command", [("search", "greet"), ("context", "explain greet")], ids=lambda c: c[0])
def test_a_damaged_index_rebuilt_by_a_query_says_so(make_repo, command) -> None:
    """`search` and `context` rebuilt a damaged index.db in silence (`search` even called it its first)."""
    root = make_repo(REPO)
    assert run_semfora("index", "--no-vectors", "--path", str(root)).returncode == 0
    (_cache_dir_of(root) / "index.db").write_bytes(b"garbage" * 1000)
    proc = run_semfora(*command, "--path", str(root))
    assert proc.returncode == 0, proc.stderr
    assert "warning: [INDEX_CORRUPT] index.db was damaged" in proc.stderr, proc.stderr
    assert "first search" not in proc.stderr and "greet" in proc.stdout


def test_search_warns_when_a_hit_comes_from_a_file_changed_since_indexing(make_repo) -> None:
    """A hit in an edited file printed the index's old line numbers as if they were true."""
    root = make_repo(REPO)
    assert run_semfora("index", "--no-vectors", "--path", str(root)).returncode == 0
    core = root / "app" / "core.py"
    core.write_text("# moved down\n" * 5 + core.read_text())
    proc = run_semfora("search", "greet", "--json", "--path", str(root))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    stale = [w for w in doc["warnings"] if "changed on disk" in w]
    assert len(stale) == 1 and "app/core.py" in stale[0] and "main.py" not in stale[0], doc["warnings"]
    assert "semfora index" in stale[0]
    text = run_semfora("search", "greet", "--path", str(root))
    assert (
        "warning: [INDEX_STALE] 1 file of these results changed on disk since it was indexed (app/core.py)"
        in text.stderr
    )
    # Once re-indexed, nothing is stale.
    assert run_semfora("index", "--no-vectors", "--path", str(root)).returncode == 0
    fresh = json.loads(run_semfora("search", "greet", "--json", "--path", str(root)).stdout)
    assert fresh["warnings"] == [] and any(h["start_line"] == 6 for h in fresh["results"])


def test_counts_in_text_have_thousands_separators_as_in_the_app(make_repo) -> None:
    """`semfora index` said "1248 symbols" where the app says "1,248 symbols"."""
    many = "".join(f"def f_{i}():\n    return {i}\n\n" for i in range(1100))
    root = make_repo({"many.py": many, **REPO})
    proc = run_semfora("index", "--no-vectors", "--path", str(root))
    assert proc.returncode == 0, proc.stderr
    assert "1,104 symbols" in proc.stdout and "indexed 3 files (0 changed, 3 added," in proc.stdout, (
        proc.stdout
    )
    ctx = run_semfora("context", "explain greet", "--budget", "8000", "--path", str(root))
    footer = next(line for line in ctx.stdout.splitlines() if line.startswith("-- intent"))
    assert footer.endswith("/8,000 tokens") and " items, " in footer, footer


@pytest.mark.skipif(shutil.which("script") is None, reason="needs script(1) for a pseudo-terminal")
@pytest.mark.parametrize("columns", [40, 80])
def test_the_progress_shows_its_counts_whole_on_a_narrow_terminal(make_repo, tmp_path: Path, columns) -> None:
    """The fixed 34-column phase and 40-column bar pushed the counts off the screen ("134…")."""
    root = make_repo({f"pkg/m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(30)})
    log = tmp_path / "tty.log"
    command = f"stty cols {columns}; {SEMFORA} index --no-vectors --path {root}"
    proc = subprocess.run(
        ["script", "-q", "-e", "-c", command, str(log)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        # The width as a shell reports it (rich reads COLUMNS first; the pty size is not seen here).
        env={**os.environ, "COLUMNS": str(columns)},
    )
    assert proc.returncode == 0
    screen = log.read_text(encoding="utf-8", errors="replace")
    assert "30/30" in screen and "parsing" in screen, screen
    assert "\N{HORIZONTAL ELLIPSIS}" not in screen, screen


def test_overview_takes_json_like_every_other_command(make_repo) -> None:
    """`semfora overview --json` was a usage error (exit 2): it alone wanted `--format json`."""
    root = make_repo(REPO)
    proc = run_semfora("overview", "--json", "--path", str(root))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["totals"]["files"] == 2


def test_a_file_whose_path_has_spaces_can_be_edited(make_repo, tmp_path: Path) -> None:
    """A path line with a space was taken for prose: 'no file path before the block', every time."""
    root = make_repo({"docs/release notes/ünï é.py": "def f():\n    return 1\n", **REPO})
    reply = tmp_path / "reply.txt"
    reply.write_text(
        "Return two.\n\ndocs/release notes/ünï é.py\n<<<<<<< SEARCH\n    return 1\n=======\n    return 2\n"
        ">>>>>>> REPLACE\n\nAnd in prose mentioning app/core.py right above a block, the last path holds:\n"
        "<<<<<<< SEARCH\n    return 2\n=======\n    return 3\n>>>>>>> REPLACE\n",
        encoding="utf-8",
    )
    proc = run_semfora("edits", "stage", str(reply), "--json", "--path", str(root))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["staged_files"] == ["docs/release notes/ünï é.py"]
    assert run_semfora("edits", "commit", "--all", "--path", str(root)).returncode == 0
    assert (root / "docs/release notes/ünï é.py").read_text() == "def f():\n    return 3\n"


def test_a_second_index_says_it_waits_for_the_first(make_repo) -> None:
    """It sat silent for as long as the other run took, like a hang."""
    import fcntl
    import subprocess

    from engine.repo.layout import RepoLayout

    root = make_repo(REPO)
    fd = os.open(RepoLayout.for_path(root).cache_dir / "index.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    proc = subprocess.Popen(
        [SEMFORA, "index", "--no-vectors", "--json", "--path", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # blocks until the waiting notice is written
    finally:
        os.close(fd)  # the "first indexer" finishes
    out, err = proc.communicate(timeout=120)
    assert line.startswith("warning: [INDEX_WAITING] another `semfora index` is writing"), line + err
    assert proc.returncode == 0, err
    report = json.loads(out)
    assert report["files"] == 2 and [w["code"] for w in report["warnings"]] == ["INDEX_WAITING"]


def test_an_untrusted_repository_file_is_a_warning_line_like_the_others(make_repo) -> None:
    """It read 'semfora: warning[UNTRUSTED_CONFIG]: ... edits.test_cmd (runs a command: = "pytest")'."""
    root = make_repo({".semfora.toml": '[edits]\ntest_cmd = "pytest -x"\n', **REPO})
    proc = run_semfora("search", "greet", "--path", str(root))
    assert proc.returncode == 0, proc.stderr
    (line,) = [line for line in proc.stderr.splitlines() if "UNTRUSTED_CONFIG" in line]
    assert line.startswith("warning: [UNTRUSTED_CONFIG] "), line
    assert 'edits.test_cmd = "pytest -x" (runs a command)' in line, line


@pytest.mark.parametrize(
    ("var", "key"),
    [("SEMFORA_BUDGET", "budget.context_tokens"), ("SEMFORA_INDEX__LOCK_TIMEOUT", "index.lock_timeout")],
)
def test_a_bad_environment_variable_is_named_in_the_error(make_repo, var, key) -> None:
    """The error said '(from env)', leaving the user to guess which of the SEMFORA_* variables."""
    root = make_repo(REPO)
    proc = run_semfora("config", "--path", str(root), env={var: "abc"})
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"error[CONFIG_INVALID]: {key}: ") and f"(from {var})" in proc.stderr, (
        proc.stderr
    )


def test_callers_counts_the_same_name_calls_it_could_not_tie(make_repo) -> None:
    """`callers QuerySet.filter` listed 28 callers in Django and was silent about 2,474 `x.filter()`."""
    root = make_repo(
        {
            "a/box.py": "class Box:\n    def open(self):\n        return 1\n",
            "b/door.py": "class Door:\n    def open(self):\n        return 2\n",
            "c/use.py": "def use(thing):\n    return thing.open()\n\ndef again(x):\n    return x.open() + x.open()\n",
        }
    )
    proc = run_semfora("callers", "Box.open", "--path", str(root))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip().endswith(
        "... and 3 calls of .open() not tied to any definition (receiver of unknown type), which may call it too"
    ), proc.stdout
    data = json.loads(run_semfora("callers", "Box.open", "--json", "--path", str(root)).stdout)
    assert data["unresolved_calls"] == 3


def test_symbol_source_follows_the_symbol_when_its_file_changed_since_indexing(make_repo) -> None:
    """`symbol --source` printed the old line span of the new file: some other function's code."""
    root = make_repo(REPO)
    assert run_semfora("index", "--no-vectors", "--path", str(root)).returncode == 0
    core = root / "app" / "core.py"
    core.write_text("def added_above():\n    return 0\n\n\n" + core.read_text())
    proc = run_semfora("symbol", "Greeter.hello", "--source", "--path", str(root))
    assert proc.returncode == 0, proc.stderr
    assert "    def hello(self):\n        return greet('x')" in proc.stdout, proc.stdout
    assert "added_above" not in proc.stdout
    # Its place is where the source was read: four lines lower than the index says.
    assert "app/core.py:9-10" in proc.stdout.splitlines()[0], proc.stdout
    data = json.loads(
        run_semfora("symbol", "Greeter.hello", "--source", "--json", "--path", str(root)).stdout
    )
    assert (data["symbols"][0]["start_line"], data["symbols"][0]["end_line"]) == (9, 10)
    core.write_text("def added_above():\n    return 0\n")  # Greeter is gone
    gone = run_semfora("symbol", "Greeter.hello", "--source", "--path", str(root))
    # Its file changed since the index read it: the index is brought up to date, and has no Greeter.
    assert gone.returncode == 1 and gone.stderr.startswith(
        "error[SYMBOL_NOT_FOUND]: no symbol named 'Greeter.hello'"
    )


def test_skipped_files_of_one_reason_are_one_line(make_repo) -> None:
    """A repository with many credential modules printed one `skipped ...` line per file on every
    `semfora index`, changed files or not; one reason is one line now, naming a few of them."""
    files = {f"auth/credentials/p{i}.py": f"X = {i}\n" for i in range(12)}
    files |= {"app.py": "def f():\n    return 1\n", "tests/.netrc": "machine x\n"}
    root = make_repo(files)
    proc = run_semfora("index", "--no-vectors", "--path", str(root))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines == [
        "skipped 13 files (auth/credentials/p0.py, auth/credentials/p1.py, auth/credentials/p10.py and 10 more): "
        "secret (on the deny-list, edits.deny): never read",
        "(`semfora index --paths` lists every skipped path)",
    ]
    as_json = json.loads(run_semfora("index", "--json", "--paths", "--path", str(root)).stdout)
    assert len(as_json["skipped_files"]) == 13
    # --paths without --json lists them too, a line each (it was ignored without --json).
    (root / "app.py").write_text("def f():\n    return 2\n")
    listed = run_semfora("index", "--no-vectors", "--paths", "--path", str(root))
    assert listed.returncode == 0 and listed.stderr == ""
    assert "changed  app.py" in listed.stdout.splitlines()
    assert sum(line.startswith("skipped  ") for line in listed.stdout.splitlines()) == 13
    assert "skipped  tests/.netrc  (secret" in listed.stdout


@pytest.mark.parametrize(
    "command", [("index",), ("search", "config"), ("context", "where is the config read")]
)
def test_a_home_directory_that_is_not_a_repository_is_not_indexed(tmp_path: Path, command) -> None:
    """`semfora index` in ~ (or an MCP client started from / without --path) walked every file
    below it into the cache; it is refused at once, before any walk."""
    home = tmp_path / "home"
    (home / "projects/app").mkdir(parents=True)
    (home / "projects/app/main.py").write_text("def main():\n    pass\n")
    proc = run_semfora(*command, "--json", "--path", str(home), env={"HOME": str(home)})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["error_code"] == "PATH_TOO_BROAD"
    # A project inside it is indexed as ever.
    assert run_semfora("index", "--path", str(home / "projects/app"), env={"HOME": str(home)}).returncode == 0


def test_the_file_system_root_is_refused_at_once() -> None:
    proc = run_semfora("index", "--path", "/", timeout=60)
    assert proc.returncode == 2 and proc.stderr.startswith("error[PATH_TOO_BROAD]: / is the root"), (
        proc.stderr
    )


def test_a_file_added_to_the_deny_list_after_indexing_is_never_served(make_repo) -> None:
    """A user who deny-lists a file (`edits.deny` in .semfora.toml) after it was indexed: `search`,
    `symbol` and `callers` kept serving its code, signature and docstring from the index
    (`pin="zebra-4711"`) until `semfora index` ran by hand. The first read now drops it."""
    from engine.policy.names import DEFAULT_DENY

    vault = 'def vault_lookup(pin="zebra-4711"):\n    """The staging PIN is zebra-4711."""\n    return pin\n'
    root = make_repo({"vault.py": vault, "app.py": "def run():\n    return vault_lookup()\n"})
    assert run_semfora("index", "--path", str(root)).returncode == 0
    shown = run_semfora("search", "zebra", "--path", str(root), "--json")
    assert "zebra-4711" in shown.stdout  # indexed, before it is deny-listed
    deny = ", ".join(json.dumps(p) for p in [*DEFAULT_DENY, "vault.py"])
    (root / ".semfora.toml").write_text(f"[edits]\ndeny = [{deny}]\n")
    for command in (
        ("search", "zebra", "--json"),
        ("search", "vault_lookup", "--mode", "symbols", "--json"),
        ("symbol", "vault_lookup", "--json"),
        ("callers", "run", "--json"),
        ("overview",),
    ):
        proc = run_semfora(*command, "--path", str(root))
        assert "zebra" not in proc.stdout + proc.stderr and "vault.py" not in proc.stdout, (
            command,
            proc.stdout,
        )


def test_overview_never_shows_a_secret_from_a_readme_or_package_docstring(make_repo) -> None:
    """`semfora overview` (every format) printed a package docstring's `password="hunter8hunter8"`
    and a README's token as module purposes; the MCP reply masked them, the command did not."""
    token = "ghp_" + "a1b2c3d4e5" * 4
    root = make_repo(
        {
            "pkg/__init__.py": '"""Payments; admin password="hunter8hunter8" for staging."""\n',
            "pkg/core.py": "def pay():\n    return 1\n",
            "tools/README.md": f"# tools\n\nDeploy tools, authenticated with {token} for now.\n",
            "tools/deploy.py": "def deploy():\n    return 1\n",
        }
    )
    for fmt in ((), ("--json",), ("--format", "toon")):
        for _ in range(2):  # built, then read back from the index
            proc = run_semfora("overview", "--path", str(root), *fmt)
            assert proc.returncode == 0, proc.stderr
            assert "hunter8" not in proc.stdout and token not in proc.stdout, (fmt, proc.stdout)
            assert "Payments; admin password=" in proc.stdout and "Deploy tools" in proc.stdout, proc.stdout


def test_a_password_in_a_service_url_is_never_printed(make_repo) -> None:
    """OLLAMA_HOST and SEMFORA_CHROMA_URL may carry basic-auth credentials. `semfora config`,
    `doctor`, `index`, `search`, `context` and `ask` printed them whole in their values, warnings,
    notes and errors (`Ollama is not reachable at http://alice:olpw12345@127.0.0.1:9`)."""
    root = make_repo({"pay.py": "def charge(amount):\n    return amount\n"})
    env = {
        "OLLAMA_HOST": "http://alice:olpw12345@127.0.0.1:9",  # nothing listens on port 9
        "SEMFORA_CHROMA_URL": "http://carl:chpw98765@127.0.0.1:9",
        "SEMFORA_EMBEDDING": "ollama:nomic-embed-text",
        "SEMFORA_MODEL": "ollama/qwen2.5-coder:7b",
    }
    commands = [
        ("config",),
        ("config", "--json"),
        ("doctor",),
        ("doctor", "--json"),
        ("index",),
        ("index", "--json"),
        ("search", "charge", "--mode", "vector"),
        ("search", "charge", "--mode", "vector", "--json"),
        ("context", "fix charge"),
        ("context", "fix charge", "--json"),
        ("ask", "fix charge"),
        ("ask", "fix charge", "--json"),
    ]
    masked = 0
    for command in commands:
        proc = run_semfora(*command, "--path", str(root), env=env)
        said = proc.stdout + proc.stderr
        assert "olpw12345" not in said and "chpw98765" not in said, (command, said)
        masked += "alice:[REDACTED]@" in said
    assert masked >= len(commands) - 2, masked  # the host is still named, its password masked
