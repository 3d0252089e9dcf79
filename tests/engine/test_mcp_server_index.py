"""`semfora mcp` and its index, as an agent meets them: a cold repository whose first index takes
longer than a client waits, another process writing the index, a server killed mid-index."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio
import pytest

from tests.conftest import SEMFORA
from tests.engine.mcp_client import INITIALIZE, index_lock_held, mcp_session, spawn_mcp, tool_error

APP = '''"""Payments."""


def charge(customer, amount):
    """Charge a customer."""
    return customer.pay(amount)


class Ledger:
    def record(self, entry):
        return charge(entry.customer, entry.amount)
'''

NOT_REFRESHED = (
    "note: index not refreshed (another `semfora index` is writing this repository's index); "
    "answers may not show the latest edits\n"
)


def _index(root: Path) -> None:
    subprocess.run([SEMFORA, "index", "--path", str(root)], check=True, capture_output=True, timeout=120)


async def test_another_process_writing_the_index_gets_an_answer_at_once_with_a_note(
    make_repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While `semfora index` runs elsewhere, a call answers from the index as it is, at once, and
    says so (it used to sit out the other writer's whole index.lock_timeout first); once the lock
    is free the next call refreshes and sees the edit."""
    root = make_repo({"pay/app.py": APP})
    _index(root)
    # Long enough that a call waiting for the lock outlives any client's patience (and this test's).
    monkeypatch.setenv("SEMFORA_INDEX__LOCK_TIMEOUT", "600")
    (root / "pay" / "app.py").write_text(APP + "\n\ndef void(c):\n    return c\n")

    with index_lock_held(root) as release:

        async def body(session):
            with anyio.fail_after(60):
                result = await session.call_tool("get_symbol", {"symbol": "charge"})
            assert not result.is_error
            text = result.content[0].text
            assert text.startswith(NOT_REFRESHED) and "pay/app.py" in text
            assert result.structured_content["note"] == NOT_REFRESHED[len("note: ") : -1]
            # A miss says the index may be behind too: the symbol may exist since.
            with anyio.fail_after(60):
                missing = tool_error(await session.call_tool("get_symbol", {"symbol": "void"}))
            assert missing["error_code"] == "SYMBOL_NOT_FOUND" and "index not refreshed" in missing["message"]
            release()
            with anyio.fail_after(60):
                fresh = await session.call_tool("get_symbol", {"symbol": "void"})
            assert not fresh.is_error and not fresh.content[0].text.startswith("note:")
            assert "note" not in fresh.structured_content

        await mcp_session(root, body)


def _many_files(n: int = 60) -> dict[str, str]:
    return {f"pkg/m{i}.py": f"def f{i}(x):\n    return x + {i}\n" for i in range(n)}


async def test_a_first_call_while_the_index_is_built_is_a_clear_retry_not_a_timeout(
    make_repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a cold repository whose first index takes longer than the client waits, a call without
    a progress token answers within `--wait` seconds with INDEX_BUILDING saying how far the build
    is (instead of hanging into the client's timeout); tools that need no index answer at once,
    and a bad argument fails at once."""
    root = make_repo({"pay/app.py": APP, **_many_files()})
    monkeypatch.setenv("SEMFORA_INDEX__LOCK_TIMEOUT", "600")

    with index_lock_held(root) as release:  # the first build cannot finish until released

        async def body(session):
            with anyio.fail_after(60):
                building = tool_error(await session.call_tool("search_symbols", {"query": "charge"}))
            assert building["error_code"] == "INDEX_BUILDING" and building["exit_code"] == 3
            assert building["message"].startswith(
                "error[INDEX_BUILDING]: the index of this repository is being built (waiting for another "
                "semfora process to finish writing it, "
            )
            assert (
                "call again in a moment" in building["message"] and "a call waits 1 s" in building["message"]
            )
            with anyio.fail_after(20):
                langs = await session.call_tool("list_languages", {})
                parsed = await session.call_tool("analyze_file", {"path": "pay/app.py"})
                bad = tool_error(await session.call_tool("get_symbol", {"symbol": 42}))
            assert not langs.is_error and not parsed.is_error and "charge" in parsed.content[0].text
            assert bad["error_code"] == "USAGE"
            release()
            # Once built, the same call answers (the build went on without any call waiting).
            with anyio.fail_after(120):
                while (found := await session.call_tool("search_symbols", {"query": "charge"})).is_error:
                    assert tool_error(found)["error_code"] == "INDEX_BUILDING"
            assert "pay/app.py" in found.content[0].text

        await mcp_session(root, body, ["--wait", "1"])


async def test_a_call_with_a_progress_token_waits_for_the_build_and_hears_its_progress(
    make_repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client that sends a progress token waits for the first index however long it takes and
    hears where it is (waiting for another indexer, then parsing...), in strictly growing steps."""
    root = make_repo(_many_files())
    monkeypatch.setenv("SEMFORA_INDEX__LOCK_TIMEOUT", "600")
    seen: list[tuple[float, str | None]] = []
    heard = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))
        heard.set()

    with index_lock_held(root) as release:

        async def body(session):
            result = None

            async def call() -> None:
                nonlocal result
                result = await session.call_tool(
                    "search_symbols", {"query": "f1"}, progress_callback=on_progress
                )

            with anyio.fail_after(120):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(call)
                    await heard.wait()  # the call is waiting on the held lock, and says so
                    release()
            assert result is not None and not result.is_error and "f1" in result.content[0].text

        await mcp_session(root, body, ["--wait", "0"])

    messages = [m or "" for _, m in seen]
    assert messages[0] == "indexing: waiting for another semfora process to finish writing it"
    assert all(m.startswith("indexing: ") for m in messages)
    assert any(m.startswith("indexing: parsing") for m in messages)
    values = [p for p, _ in seen]
    assert values == sorted(values) and len(set(values)) == len(values)  # strictly growing
    assert len(set(messages)) == len(messages)  # nothing said twice


async def test_the_index_is_built_as_the_server_starts(make_repo) -> None:
    """The server starts indexing when it starts, before any call, so an agent's first call on a
    big repository waits for what is left rather than for all of it."""
    import sqlite3

    root = make_repo(_many_files())

    def indexed_files() -> int:
        import os

        dbs = list(Path(os.environ["XDG_CACHE_HOME"]).rglob("index.db"))
        if not dbs:
            return 0
        conn = sqlite3.connect(f"file:{dbs[0]}?mode=ro", uri=True)
        try:
            return conn.execute("SELECT count(*) FROM files").fetchone()[0]
        except sqlite3.Error:
            return 0
        finally:
            conn.close()

    async def body(session):
        with anyio.fail_after(120):
            while indexed_files() < 60:  # no call made: the server got on with it by itself
                await anyio.sleep(0.1)

    await mcp_session(root, body)


def _descendants(pid: int) -> set[int]:
    """Every living process below ``pid`` (children, their children...)."""
    out = subprocess.run(["ps", "-eo", "pid=,ppid="], capture_output=True, text=True, check=True).stdout
    children: dict[int, list[int]] = {}
    for line in out.splitlines():
        child, parent = (int(x) for x in line.split())
        children.setdefault(parent, []).append(child)
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:  # gone already
        return ""


def _alive(pids: set[int]) -> set[int]:
    living = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] != "Z":
                    living.add(pid)
        except OSError:
            continue
    return living


async def test_a_server_killed_mid_index_leaves_nothing_behind_and_a_restart_finishes_the_index(
    make_repo,
) -> None:
    """A client that quits while the index is being built kills the server (the SDK sends SIGKILL
    after a 2 s grace): its worker processes, their forkserver and resource tracker went on living
    for good, orphaned. Now they exit with it, and the next server builds a complete index."""
    import os
    import signal

    files = {
        f"pkg/m{i}.py": "".join(f"def f{i}_{j}(x):\n    return g{j}(x) + {j}\n\n" for j in range(80))
        for i in range(300)
    }
    root = make_repo(files)
    me = os.getpid()
    killed: set[int] = set()
    parsing = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        if (message or "").startswith("indexing: parsing") and not message.endswith(" 0/300"):
            parsing.set()

    async def body(session):
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                try:
                    await session.call_tool("check_index", {}, progress_callback=on_progress)
                except Exception:  # the server is killed under it
                    return

            tg.start_soon(call)
            with anyio.fail_after(120):
                await parsing.wait()
            (server,) = [p for p in _descendants(me) if "\0mcp\0--path\0" in _cmdline(p)]
            below = _descendants(server)
            assert below, "the index is parsed by worker processes"
            os.kill(server, signal.SIGKILL)
            killed.update(below)
            tg.cancel_scope.cancel()

    try:
        await mcp_session(root, body)
    except Exception:  # the session ends with its server killed
        if not killed:
            raise
    assert killed, "the server was never killed"
    try:
        with anyio.fail_after(30):
            while _alive(killed):
                await anyio.sleep(0.1)
    finally:
        for orphan in _alive(killed):  # this test's own processes: leave none on the machine
            os.kill(orphan, signal.SIGKILL)

    async def after(session):
        with anyio.fail_after(300):
            health = await session.call_tool("check_index", {}, progress_callback=on_progress)
        assert not health.is_error
        assert health.structured_content["fresh"] and health.structured_content["files"] == 300

    await mcp_session(root, after)


def test_a_client_that_leaves_during_the_first_build_does_not_keep_the_server_running(
    make_repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Closing stdin ends the server at once, even while its first index is being built (it used
    to keep building, for up to index.lock_timeout while another process held the lock); the next
    start builds the index."""
    import json

    root = make_repo({"pay/app.py": APP, **_many_files()})
    monkeypatch.setenv("SEMFORA_INDEX__LOCK_TIMEOUT", "600")
    with index_lock_held(root):
        server = spawn_mcp(root)
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(json.dumps(INITIALIZE) + "\n")
        server.stdin.flush()
        assert '"result"' in server.stdout.readline()  # initialised; the build waits on the lock
        server.stdin.close()
        try:
            server.wait(timeout=30)
        finally:
            if server.poll() is None:
                server.kill()
        assert server.returncode == 0
        assert "the client left while the index was being built" in server.stderr.read()
    out = subprocess.run(
        [SEMFORA, "symbol", "charge", "--path", str(root), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert json.loads(out.stdout)["symbols"][0]["file"] == "pay/app.py", out.stderr


async def test_an_index_rebuilt_or_deleted_elsewhere_while_serving_is_followed(make_repo) -> None:
    """`semfora index --rebuild` in a terminal (or the cache cleared) replaces index.db while an
    agent's server is running. The server kept reading the replaced file and answered from it
    until restarted: a function added since was 'not found', whatever the refresh wrote."""
    import shutil

    root = make_repo({"pay/app.py": APP})

    async def body(session):
        assert not (await session.call_tool("get_symbol", {"symbol": "charge"})).is_error
        assert not (await session.call_tool("get_context", {"task": "charge a customer"})).is_error
        _index_rebuild(root)
        (root / "pay" / "app.py").write_text(APP + "\n\ndef void(c):\n    return c\n")
        found = await session.call_tool("get_symbol", {"symbol": "void"})
        assert not found.is_error, found.content[0].text
        # The text index too: its warm connection kept the deleted file, so search found nothing new.
        hits = await session.call_tool("search", {"query": "void", "mode": "fts"})
        assert [h["symbol"] for h in hits.structured_content["results"]] == ["void"], hits.content[0].text
        pack = await session.call_tool("get_context", {"task": "void a charge"})
        assert "def void" in pack.content[0].text
        # The cache directory removed outright (a user clearing ~/.cache): the next call rebuilds.
        for entry in (Path(os.environ["XDG_CACHE_HOME"]) / "semfora").iterdir():
            shutil.rmtree(entry)
        (root / "pay" / "app.py").write_text(APP + "\n\ndef refund(c):\n    return c\n")
        again = await session.call_tool("get_symbol", {"symbol": "refund"})
        assert not again.is_error, again.content[0].text

    await mcp_session(root, body)


def _index_rebuild(root: Path) -> None:
    subprocess.run(
        [SEMFORA, "index", "--rebuild", "--path", str(root)], check=True, capture_output=True, timeout=120
    )


async def test_a_call_behind_a_long_one_says_what_it_waits_for(
    make_repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Calls run one at a time. A call behind a long one (a generate_index the client cancelled
    still runs to its end: 36 s on Django) waited for it silently, past the client's timeout; it
    now waits at most --wait seconds, then says what it waits for, as INDEX_BUILDING does."""
    root = make_repo({"pay/app.py": APP})
    _index(root)
    monkeypatch.setenv("SEMFORA_INDEX__LOCK_TIMEOUT", "600")  # generate_index waits on the holder
    log_path = tmp_path / "server.log"

    with index_lock_held(root) as release, log_path.open("w") as errlog:

        async def body(session):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(session.call_tool, "generate_index", {"force": True})
                with anyio.fail_after(60):  # the state: generate_index waits for the index lock
                    while "INDEX_WAITING" not in log_path.read_text():
                        await anyio.sleep(0.05)
                    behind = tool_error(await session.call_tool("get_symbol", {"symbol": "charge"}))
                assert behind["error_code"] == "SERVER_BUSY", behind
                assert "generate_index" in behind["message"] and "call again" in behind["message"]
                # A call that reads nothing of the index still answers at once.
                assert not (await session.call_tool("list_languages", {})).is_error
                release()
            with anyio.fail_after(60):
                after = await session.call_tool("get_symbol", {"symbol": "charge"})
            assert not after.is_error, after.content[0].text

        await mcp_session(root, body, args=["--wait", "1"], errlog=errlog)


def test_a_client_that_leaves_during_a_long_call_does_not_keep_the_server_running(
    make_repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Closing stdin while a call runs (a forced generate_index) ended the server only when the
    call did: up to index.lock_timeout with another writer, holding its index lock and workers
    meanwhile. It now ends at once, as during the first build."""
    import json

    root = make_repo({"pay/app.py": APP})
    _index(root)
    monkeypatch.setenv("SEMFORA_INDEX__LOCK_TIMEOUT", "600")
    server = spawn_mcp(root)
    assert server.stdin is not None and server.stdout is not None and server.stderr is not None

    def send(message: dict) -> None:
        assert server.stdin is not None
        server.stdin.write(json.dumps(message) + "\n")
        server.stdin.flush()

    try:
        send(INITIALIZE)
        assert '"result"' in server.stdout.readline()
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "check_index", "arguments": {}},
            }
        )
        assert '"fresh":true' in server.stdout.readline()  # the start-up refresh is over
        with index_lock_held(root):
            call = {"name": "generate_index", "arguments": {"force": True}}
            send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call})
            for line in server.stderr:  # the state: generate_index waits for the other writer
                if "INDEX_WAITING" in line:
                    break
            server.stdin.close()
            server.wait(timeout=30)
            assert server.returncode == 0
            assert "the client left while generate_index was running" in server.stderr.read()
    finally:
        if server.poll() is None:
            server.kill()


async def test_another_writer_beside_a_running_server_never_damages_the_index(make_repo) -> None:
    """Two agents on one repository (two servers, or a server and `semfora index`): each index
    run read index.db's header through a descriptor it then closed, which dropped every lock the
    process's SQLite connections held on index.db. The other process then took itself for the
    last one and removed the WAL under them: 'disk I/O error', 'database disk image is malformed',
    and an INDEX_CORRUPT rebuild that deleted the index under everyone."""
    root = make_repo({"pay/app.py": APP})
    _index(root)
    cache = next((Path(os.environ["XDG_CACHE_HOME"]) / "semfora").iterdir())

    async def body(session):
        for i in range(8):
            assert not (await session.call_tool("get_symbol", {"symbol": "charge"})).is_error
            with (root / "pay" / "app.py").open("a") as f:
                f.write(f"\n\ndef added_{i}():\n    return {i}\n")
            _index(root)  # the other writer runs, and closes
            # This server is still connected: the other one must not have taken itself for the last.
            assert (cache / "index.db-shm").exists() and (cache / "index.db-wal").exists()
            found = await session.call_tool("get_symbol", {"symbol": f"added_{i}"})
            assert not found.is_error, found.content[0].text

    await mcp_session(root, body)


async def test_generate_index_with_a_progress_token_hears_its_progress(make_repo) -> None:
    """generate_index(force) is the one call that rebuilds everything (minutes on a large
    repository); a client that sent a progress token heard nothing until it ended, and a client
    that times out unless progress comes gave up on it."""
    root = make_repo({"pay/app.py": APP, **_many_files()})
    seen: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")

    async def body(session):
        assert not (await session.call_tool("check_index", {})).is_error  # the start-up build is over
        result = await session.call_tool("generate_index", {"force": True}, progress_callback=on_progress)
        assert not result.is_error and result.structured_content["files"] == 61
        assert any(m.startswith("indexing: parsing") for m in seen), seen

    await mcp_session(root, body)


async def test_a_repository_moved_while_serving_is_said_and_its_index_kept(make_repo) -> None:
    """The project directory renamed while an agent's server runs: the next call's refresh found
    no files, emptied the index and answered 'no symbol named charge' (search: no results) as if
    the code were gone. It now says the repository moved, and the index is intact when it is back."""
    root = make_repo({"pay/app.py": APP})
    moved = root.with_name(root.name + "-renamed")

    async def body(session):
        assert not (await session.call_tool("get_symbol", {"symbol": "charge"})).is_error
        root.rename(moved)
        try:
            for tool, args in (("get_symbol", {"symbol": "charge"}), ("search", {"query": "charge"})):
                error = tool_error(await session.call_tool(tool, args))
                assert error["error_code"] == "PATH_NOT_FOUND", error
                assert f"the repository {root} is gone (moved or deleted" in error["message"]
                assert "restart it on the new path" in error["message"]
        finally:
            moved.rename(root)
        back = await session.call_tool("get_symbol", {"symbol": "charge"})
        assert not back.is_error, back.content[0].text

    await mcp_session(root, body)


async def test_check_index_does_not_call_a_file_stale_when_only_its_time_changed(make_repo) -> None:
    """After `git checkout -- .` (or a `touch`, or a save without a change) check_index said
    `fresh: false, stale: 1`, though the file was byte for byte what was indexed."""
    import os

    root = make_repo({"pay/app.py": "def charge(amount):\n    return amount\n", "pay/ledger.py": "X = 1\n"})

    async def body(session):
        await session.call_tool("generate_index", {})
        touched = root / "pay" / "app.py"
        os.utime(touched, ns=(touched.stat().st_atime_ns, touched.stat().st_mtime_ns + 5_000_000_000))
        same = (await session.call_tool("check_index", {})).structured_content
        assert (same["fresh"], same["stale"], same["stale_paths"]) == (True, 0, []), same
        (root / "pay" / "ledger.py").write_text("X = 2\n")
        changed = (await session.call_tool("check_index", {})).structured_content
        assert (changed["fresh"], changed["stale"], changed["stale_paths"]) == (False, 1, ["pay/ledger.py"])

    await mcp_session(root, body)
