"""The command line under hostile use: closed pipes, file paths where a repository is expected,
bad settings and flags, and `index --json` on big change sets (issue 13)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.conftest import ROOT, SEMFORA, run_semfora

BIG_FUNCTION = "def big():\n" + "".join(f"    value_{i} = {i}  # padding line {i}\n" for i in range(4000))
REPO = {
    "lib/greet.py": (
        "def greet(name):\n    return 'hi ' + name\n\n"
        "class Greeter:\n    def hello(self):\n        return greet('x')\n"
    ),
    "main.py": "from lib.greet import greet\n\ndef main():\n    greet('a')\n",
    "lib/big.py": BIG_FUNCTION,
}


@pytest.mark.parametrize(
    "args",
    [
        ("search", "greet", "--mode", "fts"),
        ("languages",),
        ("callers", "greet"),
        ("context", "explain greet"),
        ("symbol", "big", "--source"),
    ],
    ids=lambda a: "-".join(a[:2]),
)
def test_a_closed_pipe_ends_quietly_with_exit_0(make_repo, args) -> None:
    """`semfora search ... | head` (the reader goes away) is no traceback and exit 0, like `cat`."""
    root = make_repo(REPO)
    assert run_semfora("index", "--path", str(root), "--no-vectors").returncode == 0
    full = [SEMFORA, *args] + ([] if args[0] == "languages" else ["--path", str(root)])
    proc = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first write: every write fails with EPIPE
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


@pytest.mark.parametrize("command", [("index",), ("search", "greet"), ("edits", "list"), ("overview",)])
def test_a_file_given_as_path_is_path_not_found(make_repo, command) -> None:
    """`--path FILE` never falls back to the file's directory (it would index a home directory)."""
    root = make_repo(REPO)
    proc = run_semfora(*command, "--path", str(root / "main.py"))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error[PATH_NOT_FOUND]:") and "not a directory" in proc.stderr


def test_semfora_file_is_path_not_found_not_the_app(make_repo) -> None:
    root = make_repo(REPO)
    proc = run_semfora(str(root / "main.py"), timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error[PATH_NOT_FOUND]:")


def test_the_app_takes_path_as_the_commands_do(make_repo) -> None:
    # Every command takes `--path P`; `semfora --path P` was "unrecognized arguments: --path".
    root = make_repo(REPO)
    proc = run_semfora("--path", str(root / "main.py"), timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error[PATH_NOT_FOUND]:") and "main.py" in proc.stderr
    both = run_semfora(str(root), "--path", str(root / "lib"), timeout=60)
    assert both.returncode == 2 and "two repositories given" in both.stderr


def test_the_app_opened_in_a_home_directory_says_so_before_the_screen_opens(tmp_path) -> None:
    # It opened, and its index worker then failed PATH_TOO_BROAD (or, before that check, walked ~).
    home = tmp_path / "home"
    (home / "projects").mkdir(parents=True)
    proc = run_semfora(cwd=home, env={"HOME": str(home)}, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error[PATH_TOO_BROAD]:") and "your home directory" in proc.stderr
    assert proc.stdout == ""  # no screen was drawn


def test_a_query_that_starts_with_a_dash_is_told_to_go_after_double_dash(make_repo) -> None:
    # `semfora search -x` said only "the following arguments are required: query".
    root = make_repo(REPO)
    proc = run_semfora("search", "-x", "--path", str(root))
    assert proc.returncode == 2
    assert "a query that starts with '-' goes after '--': semfora search -- -x" in proc.stderr
    found = run_semfora("search", "--path", str(root), "--", "-greet")
    assert found.returncode == 0, found.stderr
    plain = run_semfora("search", "--path", str(root))  # no dash anywhere: no such hint
    assert plain.returncode == 2 and "goes after" not in plain.stderr


def test_a_query_that_reads_json_does_not_turn_usage_errors_into_json(make_repo) -> None:
    # `semfora search json --limit x` printed {"ok": false, ...} on stdout: any argument "json" counted.
    root = make_repo(REPO)
    typo = run_semfora("search", "json", "--limit", "x", "--path", str(root))
    assert typo.returncode == 2 and typo.stdout == ""
    assert typo.stderr.startswith("error[USAGE]: semfora search: argument --limit")
    ci = run_semfora("ci", "--mode", "pr", "--output", "json", "--fail-on", "x", "--path", str(root))
    assert ci.returncode == 2 and json.loads(ci.stdout)["error_code"] == "USAGE"


def test_a_file_path_is_refused_by_the_engine_too(make_repo) -> None:
    from engine.errors import PathError
    from engine.repo.layout import RepoLayout

    root = make_repo(REPO)
    with pytest.raises(PathError, match="not a directory"):
        RepoLayout.for_path(root / "main.py")
    assert RepoLayout.for_path(root / "lib").root == root  # a directory inside still finds the root
    assert os.path.isdir(root)


@pytest.mark.parametrize(
    ("variable", "value", "words"),
    [
        ("SEMFORA_EMBEDDING", "bogus", "unknown embedding provider"),
        ("SEMFORA_EMBEDDING", "sentence-transformers", "unknown embedding provider"),
        ("SEMFORA_UI__THEME", "no-such-theme", "unknown theme"),
        ("SEMFORA_CHROMA_URL", "not a url", "not a Chroma server address"),
        ("SEMFORA_CHROMA_URL", "ftp://example.com:8000", "not a Chroma server address"),
        ("SEMFORA_CHROMA_URL", "localhost:99999", "not a Chroma server address"),
    ],
)
def test_config_rejects_bad_values_and_doctor_reports_them(make_repo, variable, value, words) -> None:
    root = make_repo(REPO)
    proc = run_semfora("config", "--path", str(root), env={variable: value})
    assert proc.returncode == 2, proc.stdout
    assert proc.stderr.startswith("error[CONFIG_INVALID]:") and words in proc.stderr
    doctor = run_semfora("doctor", "--no-network", "--json", "--path", str(root), env={variable: value})
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert (
        doctor.returncode == 1
        and checks["config"]["status"] == "fail"
        and words in checks["config"]["detail"]
    )


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("SEMFORA_EMBEDDING", "ollama:nomic-embed-text"),
        ("SEMFORA_EMBEDDING", "chroma-default"),
        ("SEMFORA_CHROMA_URL", "http://127.0.0.1:8000"),
        ("SEMFORA_CHROMA_URL", "localhost:8000"),
        ("SEMFORA_UI__THEME", "semfora-light"),
    ],
)
def test_config_accepts_good_values(make_repo, variable, value) -> None:
    root = make_repo(REPO)
    assert run_semfora("config", "--path", str(root), env={variable: value}).returncode == 0


@pytest.mark.parametrize(
    "args",
    [
        ("context", "explain greet", "--budget", "0"),
        ("context", "explain greet", "--budget", "999999"),
        ("ask", "explain greet", "--budget", "10"),
        ("metrics", "--days", "-3"),
        ("metrics", "--days", "0"),
    ],
)
def test_out_of_range_numbers_are_usage_errors_naming_the_range(make_repo, args) -> None:
    root = make_repo(REPO)
    proc = run_semfora(*args, "--path", str(root))
    assert proc.returncode == 2
    assert proc.stderr.startswith("error[USAGE]:") and (
        "between 500 and 200000" in proc.stderr or "at least 1" in proc.stderr
    )


def test_index_json_prints_counts_and_lists_paths_only_when_asked(make_repo) -> None:
    root = make_repo({f"pkg/m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(60)})
    proc = run_semfora("index", "--path", str(root), "--no-vectors", "--json")
    report = json.loads(proc.stdout)
    assert {"ok", "files", "symbols", "edges", "changed", "seconds"} <= set(report)  # the BRIEF's fields
    assert report["added"] == 60 and "changed_paths" not in report and "skipped_files" not in report
    assert len(proc.stdout) < 2000
    (root / "pkg" / "m1.py").write_text("def f1():\n    return 'one'\n")
    listed = json.loads(run_semfora("index", "--path", str(root), "--no-vectors", "--json", "--paths").stdout)
    assert listed["changed_paths"] == ["pkg/m1.py"] and listed["deleted_paths"] == []


def test_make_run_keeps_a_repo_path_with_spaces_and_quotes_as_one_argument(tmp_path) -> None:
    """`make run REPO="/path with space"` passed two arguments to semfora."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("#!/bin/sh\n")
    (venv / "bin" / "semfora").write_text("#!/bin/sh\nprintf '<%s>\\n' \"$@\"\n")
    for tool in ("python", "semfora"):
        (venv / "bin" / tool).chmod(0o755)
    (venv / ".installed-run").touch()  # newer than pyproject.toml: make installs nothing
    repo = "/tmp/it's a path with spaces"
    proc = subprocess.run(
        ["make", "-s", "-C", str(ROOT), "run", f"VENV={venv}", f"REPO={repo}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [f"<{repo}>"]


@pytest.fixture
def full_disk(tmp_path):  # type: ignore[no-untyped-def]
    """A 1 MB file system: an index run fills it (root mounts a tmpfs; others cannot)."""
    where = tmp_path / "small-disk"
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)], capture_output=True, check=False
    )
    if mounted.returncode != 0:
        pytest.skip("cannot mount a small file system here (needs root)")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)


def test_a_full_disk_is_said_as_such_not_a_traceback(make_repo, full_disk) -> None:
    # Indexing into a full disk ended in a traceback from the text index's commit
    # (sqlite3.OperationalError: database or disk is full).
    files = {f"pkg/mod{i}.py": f'def handler_{i}(request):\n    """{"words " * 200}"""\n' for i in range(120)}
    root = make_repo(files)
    proc = run_semfora("index", "--path", str(root), env={"XDG_CACHE_HOME": str(full_disk)})
    assert proc.returncode == 2, proc.stderr
    assert "error[DISK_FULL]: no space left on the device" in proc.stderr
    assert "XDG_CACHE_HOME" in proc.stderr and "Traceback" not in proc.stderr
    as_json = run_semfora("index", "--path", str(root), "--json", env={"XDG_CACHE_HOME": str(full_disk)})
    assert as_json.returncode == 2 and json.loads(as_json.stdout)["error_code"] == "DISK_FULL"
