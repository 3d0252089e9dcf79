"""The engine commands through the real `semfora` script: JSON shapes, exit codes, concurrency."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
import toon_format

from tests.conftest import SEMFORA, run_fresh_python, run_semfora

REPO = {
    "lib/greet.py": (
        "def greet(name):\n    return 'hi ' + name\n\n"
        "class Greeter:\n    def hello(self):\n        return greet('x')\n"
    ),
    "main.py": "from lib.greet import greet\n\ndef main():\n    greet('a')\n",
}


def test_index_json_contract_then_warm_reindex(make_repo) -> None:
    root = make_repo(REPO)
    proc = run_semfora("index", "--path", str(root), "--no-vectors", "--json")
    assert proc.returncode == 0, proc.stderr
    first = json.loads(proc.stdout)
    assert first["ok"] is True
    assert {"files", "symbols", "edges", "changed", "seconds"} <= set(first)
    assert first["files"] == 2 and first["symbols"] >= 4 and first["edges"] >= 2
    warm = json.loads(run_semfora("index", "--path", str(root), "--no-vectors", "--json").stdout)
    assert warm["changed"] == 0 and warm["added"] == 0 and warm["files"] == 2
    rebuilt = json.loads(
        run_semfora("index", "--path", str(root), "--rebuild", "--no-vectors", "--json").stdout
    )
    assert rebuilt["added"] == 2 and rebuilt["symbols"] == first["symbols"]


def test_index_text_mode_is_quiet_with_a_one_line_summary(make_repo) -> None:
    root = make_repo(REPO)
    proc = run_semfora("index", "--no-vectors", cwd=root)
    assert proc.returncode == 0
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("indexed 2 files")
    assert "\x1b[" not in proc.stdout + proc.stderr  # no progress bar when not a terminal
    one = make_repo({"only.py": "def solo():\n    return 1\n"})
    line = run_semfora("index", "--no-vectors", cwd=one).stdout.strip()
    assert line.startswith("indexed 1 file (0 changed, 1 added,") and ", 1 symbol, 0 call sites in " in line


def test_nonexistent_path_is_a_usage_error(tmp_path) -> None:
    missing = tmp_path / "nope"
    for args in (("index",), ("overview",), ("symbol", "x"), ("callers", "x")):
        proc = run_semfora(*args, "--path", str(missing))
        assert proc.returncode == 2, args
        assert proc.stderr.startswith("error[PATH_NOT_FOUND]:")
    proc = run_semfora("index", "--path", str(missing), "--json")
    body = json.loads(proc.stdout)
    assert proc.returncode == 2 and body["ok"] is False and body["error_code"] == "PATH_NOT_FOUND"


def test_symbol_builds_the_index_on_demand_and_prints_the_contract(make_repo) -> None:
    root = make_repo(REPO)
    proc = run_semfora("symbol", "Greeter.hello", "--path", str(root), "--source", "--json")
    assert proc.returncode == 0, proc.stderr
    sym = json.loads(proc.stdout)["symbols"][0]
    for key in (
        "id",
        "name",
        "qualified_name",
        "kind",
        "file",
        "start_line",
        "end_line",
        "signature",
        "risk",
    ):
        assert key in sym
    assert (sym["qualified_name"], sym["kind"], sym["file"], sym["start_line"]) == (
        "Greeter.hello",
        "method",
        "lib/greet.py",
        5,
    )
    assert "return greet('x')" in sym["source"]
    by_id = json.loads(run_semfora("symbol", sym["id"], "--path", str(root), "--json").stdout)
    assert by_id["symbols"][0]["qualified_name"] == "Greeter.hello"
    missing = run_semfora("symbol", "zzz_not_here", "--path", str(root), "--json")
    assert missing.returncode == 1 and json.loads(missing.stdout)["error_code"] == "SYMBOL_NOT_FOUND"


def test_callers_walks_depth_and_validates_it(make_repo) -> None:
    root = make_repo(REPO)
    proc = run_semfora("callers", "greet", "--path", str(root), "--depth", "2", "--json")
    assert proc.returncode == 0, proc.stderr
    body = json.loads(proc.stdout)
    assert {(c["name"], c["file"], c["depth"]) for c in body["callers"]} == {
        ("Greeter.hello", "lib/greet.py", 1),
        ("main", "main.py", 1),
    }
    text = run_semfora("callers", "greet", "--path", str(root))
    assert "main  main.py:4  [import]" in text.stdout
    typo = run_semfora("callers", "Greter", "--path", str(root))
    assert typo.returncode == 1
    assert "error[SYMBOL_NOT_FOUND]: no symbol named 'Greter' (nearest names: Greeter" in typo.stderr
    nothing_near = run_semfora("callers", "zzzqqq", "--path", str(root), "--json")
    assert json.loads(nothing_near.stdout)["error_code"] == "SYMBOL_NOT_FOUND"
    assert "hint" not in json.loads(nothing_near.stdout)
    bad = run_semfora("callers", "greet", "--path", str(root), "--depth", "0")
    assert bad.returncode == 2 and bad.stderr.startswith("error[USAGE]")


def test_overview_in_toon_and_json(make_repo) -> None:
    root = make_repo(REPO)
    toon = run_semfora("overview", "--path", str(root))
    assert toon.returncode == 0, toon.stderr
    assert len(toon.stdout) / 4 <= 2500
    assert toon_format.loads(toon.stdout)["totals"]["files"] == 2
    js = json.loads(run_semfora("overview", "--path", str(root), "--format", "json").stdout)
    assert js["totals"]["symbols"] >= 4


def test_languages_json() -> None:
    proc = run_semfora("languages", "--json")
    assert proc.returncode == 0
    langs = json.loads(proc.stdout)["languages"]
    main = {row["name"]: row for row in langs}
    for name in ("python", "javascript", "typescript", "go", "rust", "java", "c", "cpp", "ruby"):
        assert main[name]["level"] == "full"
        assert main[name]["extensions"]
    assert all(set(row) >= {"name", "extensions", "level"} for row in langs)


def test_two_index_runs_at_once_both_finish_and_agree(make_repo) -> None:
    files = {
        f"pkg/mod{i}.py": f"def f{i}():\n    return g{i}()\n\ndef g{i}():\n    return {i}\n"
        for i in range(150)
    }
    root = make_repo(files)
    env = dict(os.environ)
    cmd = [SEMFORA, "index", "--path", str(root), "--no-vectors", "--json"]
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1] for o in outs]
    reports = [json.loads(o[0]) for o in outs]
    # One built the index; the other waited for the lock and then found nothing to do.
    assert sorted(r["added"] for r in reports) == [0, 150]
    assert {r["symbols"] for r in reports} == {300}


def test_second_indexer_fails_clearly_when_the_lock_wait_runs_out(make_repo) -> None:
    import fcntl

    from engine.repo.layout import RepoLayout

    root = make_repo(REPO)
    layout = RepoLayout.for_path(root)
    fd = os.open(layout.cache_dir / "index.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        proc = run_semfora(
            "index", "--path", str(root), "--no-vectors", env={"SEMFORA_INDEX__LOCK_TIMEOUT": "0.5"}
        )
    finally:
        os.close(fd)
    assert proc.returncode == 1
    first, last = proc.stderr.strip().splitlines()
    assert first.startswith("warning: [INDEX_WAITING] another `semfora index` is writing")
    assert last.startswith("error[INDEX_LOCKED]: another `semfora index`")


def test_corrupt_index_is_rebuilt_with_a_warning_on_stderr(make_repo) -> None:
    from engine.repo.layout import RepoLayout

    root = make_repo(REPO)
    assert run_semfora("index", "--path", str(root), "--no-vectors").returncode == 0
    RepoLayout.for_path(root).index_db.write_bytes(b"this is not a database" * 100)
    proc = run_semfora("index", "--path", str(root), "--no-vectors", "--json")
    assert proc.returncode == 0
    assert "warning: [INDEX_CORRUPT]" in proc.stderr
    report = json.loads(proc.stdout)
    assert report["files"] == 2 and report["warnings"][0]["code"] == "INDEX_CORRUPT"


@pytest.mark.skipif(shutil.which("script") is None, reason="needs script(1) for a pseudo-terminal")
def test_index_on_a_terminal_shows_a_progress_bar_then_the_summary(make_repo, tmp_path) -> None:
    root = make_repo(REPO)
    log = tmp_path / "tty.log"
    proc = subprocess.run(
        ["script", "-q", "-e", "-c", f"{SEMFORA} index --no-vectors --path {root}", str(log)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0
    screen = log.read_text(encoding="utf-8", errors="replace")
    assert "parsing" in screen and "resolving calls" in screen and "2/2" in screen
    assert "indexed 2 files" in screen


def test_symbol_says_when_it_shows_the_nearest_names_instead_of_the_one_asked_for(make_repo) -> None:
    root = make_repo(REPO)
    exact = run_semfora("symbol", "Greeter", "--path", str(root))
    assert exact.returncode == 0 and "Greeter  class  lib/greet.py" in exact.stdout
    assert "nearest" not in exact.stderr
    assert json.loads(run_semfora("symbol", "Greeter", "--path", str(root), "--json").stdout)["exact"] is True
    near = run_semfora("symbol", "Greeterr", "--path", str(root))
    assert near.returncode == 0, near.stderr
    assert "no symbol named 'Greeterr'; the nearest names:" in near.stderr
    assert "Greeter  class  lib/greet.py" in near.stdout
    body = json.loads(run_semfora("symbol", "Greeterr", "--path", str(root), "--json").stdout)
    assert body["exact"] is False and body["symbols"][0]["name"] == "Greeter"


_BAR_DRIVER = """
import argparse, json, os, sys, threading
from engine.index import indexer
from semfora_cli.commands import engine_cmds

parent = os.getpid()
real = indexer._resolve_slice

def spy(job):
    if os.getpid() != parent:  # a forked worker resolved this slice
        open(sys.argv[2], "a").close()
    return real(job)

indexer._resolve_slice = spy
real_bulk = indexer._resolve_bulk
threads = []

def bulk(*a, **k):  # how many threads run when the calls are handed out to resolve
    threads.append([t.name for t in threading.enumerate()])
    return real_bulk(*a, **k)

indexer._resolve_bulk = bulk
indexer.PARALLEL_RESOLVE_MIN_CALLS = 1  # boost's 462k calls in a small repository
engine_cmds.is_tty = lambda: True  # the bar is drawn as on a terminal
args = argparse.Namespace(path=sys.argv[1], rebuild=False, json=False, no_vectors=True, paths=False)
code = engine_cmds._index(args)
print(json.dumps({"code": code, "threads": threads}))
"""


def test_with_the_progress_bar_on_screen_calls_are_still_resolved_in_worker_processes(
    make_repo, tmp_path
) -> None:
    """Call resolution forks workers only in a single-threaded process (a fork copies other threads'
    locks). rich redrew the bar from a thread of its own, so `semfora index` on a terminal resolved
    boost's calls in one process while the benchmark, with no bar, used two."""
    files = {
        f"pkg/m{i}.py": f"from pkg.m{i + 1} import f{i + 1}\n\n\ndef f{i}():\n    return f{i + 1}()\n"
        for i in range(40)
    }
    root = make_repo(files)
    marker = tmp_path / "resolved-in-a-worker"
    result = run_fresh_python(_BAR_DRIVER, str(root), str(marker), cache=tmp_path / "cache")
    assert result == {"code": 0, "threads": [["MainThread"]]}
    assert marker.exists(), "the calls were resolved in this process, not in forked workers"


def test_symbol_and_callers_follow_functions_added_or_deleted_since_the_last_index_run(make_repo) -> None:
    """`semfora symbol` and `callers` answer from the index as it is: a function written a minute
    ago was 'error[SYMBOL_NOT_FOUND]: no symbol named ...' (exit 1) until `semfora index` ran,
    with no word that the index was behind. A miss now brings the index up to date and asks again."""
    root = make_repo(REPO)
    assert run_semfora("symbol", "greet", "--path", str(root)).returncode == 0  # the index is built
    (root / "lib" / "farewell.py").write_text(
        "from lib.greet import greet\n\n\ndef farewell(name):\n    return greet(name)\n"
    )
    (root / "main.py").write_text("from lib.farewell import farewell\n\ndef main():\n    farewell('a')\n")

    found = run_semfora("symbol", "farewell", "--path", str(root), "--json")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["symbols"][0]["file"] == "lib/farewell.py"
    callers = run_semfora("callers", "farewell", "--path", str(root), "--json")
    assert callers.returncode == 0, callers.stderr
    assert [c["name"] for c in json.loads(callers.stdout)["callers"]] == ["main"]
    # A name that is nowhere is still SYMBOL_NOT_FOUND (exit 1).
    missing = run_semfora("symbol", "nowhere_at_all", "--path", str(root))
    assert missing.returncode == 1 and "SYMBOL_NOT_FOUND" in missing.stderr
    # A function deleted since was still listed, and `--source` failed on its file.
    (root / "lib" / "farewell.py").unlink()
    for args in (("symbol", "farewell"), ("symbol", "farewell", "--source"), ("callers", "farewell")):
        gone = run_semfora(*args, "--path", str(root))
        assert gone.returncode == 1 and "no symbol named 'farewell'" in gone.stderr, (args, gone.stdout)


def test_callers_of_a_shared_name_says_which_symbol_it_walked(make_repo) -> None:
    """`semfora callers send` walked the first of Client.send and AsyncClient.send without a word:
    the user read one method's callers as the callers of 'send'. It now says which it is and names
    the others, as the MCP tools do."""
    client = (
        "class Client:\n    def send(self, request):\n        return request\n\n\n"
        "class AsyncClient:\n    async def send(self, request):\n        return request\n"
    )
    root = make_repo(
        {
            "net/client.py": client,
            "net/api.py": "from net.client import Client\n\n\ndef get(r):\n    return Client().send(r)\n",
        }
    )
    shown = run_semfora("callers", "send", "--path", str(root))
    assert shown.returncode == 0, shown.stderr
    assert "2 symbols are named 'send'; this is Client.send" in shown.stderr
    assert "AsyncClient.send (net/client.py:7" in shown.stderr
    as_json = json.loads(run_semfora("callers", "send", "--path", str(root), "--json").stdout)
    assert [o["qualified_name"] for o in as_json["also_named"]] == ["AsyncClient.send"]
    # A qualified name is one symbol: nothing to say.
    one = run_semfora("callers", "AsyncClient.send", "--path", str(root))
    assert one.returncode == 0 and "symbols are named" not in one.stderr
