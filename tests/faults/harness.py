"""Kill semfora at random points and check that the next command finds everything whole.

Shared by ``tests/faults/test_kills.py`` (a handful of kills in `make test`) and
``tests/bench/bench_faults.py`` (50+ kills per run). Each scenario builds a small real
repository, runs the real `semfora` command in a session of its own, SIGKILLs it (at a fault
point of the commit path, once a state is reached, or after a random delay), then checks:
no process of that session is left, no lock is stale (the next command does not wait it out),
the change set is whole or absent, and the index is usable.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from engine.edits.faults import FAULT_ENV, POINTS

SEMFORA = str(Path(sys.executable).with_name("semfora"))
# The next command must not wait out a lock: it gets this long, far below index.lock_timeout.
NEXT_COMMAND_LOCK_SECONDS = "20"
# How long a killed command's children get to die with it.
ORPHAN_GRACE_SECONDS = 10.0
FILES_IN_COMMIT = 6
INDEX_FILES = 300


@dataclass
class KillResult:
    """One kill: where it landed, whether the process really died by it, and what was wrong after."""

    scenario: str
    how: str
    killed: bool
    problems: list[str] = field(default_factory=list)
    seconds_to_recover: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.problems


def _session_members(sid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if len(fields) > 3 and fields[0] != "Z" and int(fields[3]) == sid:
            found.append(int(stat.parent.name))
    return found


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found |= {int(c) for c in (task / "children").read_text().split()}
        except OSError:
            continue
    return found


class Sandbox:
    """A temporary XDG home and repository for one scenario; removed afterwards."""

    def __init__(self, base: Path | None = None, extra_env: dict[str, str] | None = None) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="faults-", dir=base))
        self.root = self.dir / "repo"
        self.env = {
            **os.environ,
            "XDG_CACHE_HOME": str(self.dir / "cache"),
            "XDG_CONFIG_HOME": str(self.dir / "config"),
            "SEMFORA_EMBEDDING": "none",
            "OLLAMA_HOST": "http://127.0.0.1:9",
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.com",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.com",
            "SEMFORA_INDEX__LOCK_TIMEOUT": NEXT_COMMAND_LOCK_SECONDS,
            "SEMFORA_EDITS__LOCK_TIMEOUT": NEXT_COMMAND_LOCK_SECONDS,
            **(extra_env or {}),
        }
        self.env.pop(FAULT_ENV, None)

    def write_repo(self, files: dict[str, str]) -> None:
        for rel, text in files.items():
            path = self.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "initial"]):
            subprocess.run(
                ["git", "-C", str(self.root), *args], env=self.env, check=True, capture_output=True
            )

    def run(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [SEMFORA, *args, "--path", str(self.root)],
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def kill_run(
        self,
        args: list[str],
        result: KillResult,
        *,
        env: dict[str, str] | None = None,
        delay: float | None = None,
        until: Callable[[subprocess.Popen[bytes]], bool] | None = None,
    ) -> None:
        """Start ``semfora ARGS`` in a session of its own; SIGKILL it after ``delay`` seconds or once
        ``until(proc)`` holds (a fault point kills it by itself); then check for survivors."""
        # stderr to a file, not a pipe: orphans holding a pipe would block reading it.
        log = self.dir / "killed.stderr"
        with log.open("wb") as err_file:
            proc = subprocess.Popen(
                [SEMFORA, *args, "--path", str(self.root)],
                env={**self.env, **(env or {})},
                stdout=subprocess.DEVNULL,
                stderr=err_file,
                start_new_session=True,
            )
        if delay is not None or until is not None:
            deadline = time.monotonic() + (delay if delay is not None else 120.0)
            while proc.poll() is None and time.monotonic() < deadline:
                if until is not None and until(proc):
                    break
                time.sleep(0.01)
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=120)
        result.killed = proc.returncode == -signal.SIGKILL
        if not result.killed and proc.returncode != 0:
            err = log.read_text(errors="replace")
            result.problems.append(f"{' '.join(args)} exited {proc.returncode}: {err[-300:]}")
        deadline = time.monotonic() + ORPHAN_GRACE_SECONDS
        while _session_members(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        survivors = _session_members(proc.pid)
        if survivors:
            result.problems.append(f"{len(survivors)} process(es) outlived the killed {args[0]}: {survivors}")
            for pid in survivors:  # never leave them behind, even when reporting them
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    continue

    def check(self, result: KillResult, proc: subprocess.CompletedProcess[str], what: str) -> bool:
        if "Traceback" in proc.stderr:
            result.problems.append(f"{what}: traceback: {proc.stderr[-400:]}")
            return False
        if proc.returncode != 0:
            result.problems.append(f"{what} exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
            return False
        return True

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


# --------------------------------------------------------------------------- scenarios


def _index_files() -> dict[str, str]:
    return {
        f"pkg/mod_{i:03d}.py": "".join(
            f"def f_{i}_{j}(x):\n    return helper_{j % 7}(x) + {j}\n\n" for j in range(40)
        )
        for i in range(INDEX_FILES)
    }


def kill_index(rng: random.Random, base: Path | None = None, *, when: str = "random") -> KillResult:
    """`semfora index` killed mid-run (``when``: "workers" once its parse workers run, or a random
    delay); the next `index` must finish without waiting out the lock, and search must work."""
    box = Sandbox(base, {"SEMFORA_INDEX__WORKERS": "2"})
    try:
        box.write_repo(_index_files())
        if when == "workers":
            result = KillResult("index", "once parse workers run", False)
            box.kill_run(["index", "--no-vectors"], result, until=lambda p: len(_children(p.pid)) >= 2)
        else:
            delay = rng.uniform(0.3, 4.0)
            result = KillResult("index", f"after {delay:.2f} s", False)
            box.kill_run(["index", "--no-vectors"], result, delay=delay)
        started = time.monotonic()
        again = box.run("index", "--no-vectors", "--json")
        result.seconds_to_recover = time.monotonic() - started
        if box.check(result, again, "the next index"):
            report = json.loads(again.stdout)
            if report["files"] != INDEX_FILES:
                result.problems.append(f"the next index has {report['files']} of {INDEX_FILES} files")
            found = box.run("search", "f_7_3", "--mode", "symbols", "--json")
            if box.check(result, found, "search after the kill"):
                hits = json.loads(found.stdout)["results"]
                if not hits or hits[0]["symbol"] != "f_7_3":
                    result.problems.append("search after the kill did not find f_7_3")
        return result
    finally:
        box.close()


OLD_LINE = "VALUE = 'old'"
NEW_LINE = "VALUE = 'new'"


def _commit_files() -> dict[str, str]:
    return {f"src/part_{i}.py": f"# part {i}\n{OLD_LINE}\n" for i in range(FILES_IN_COMMIT)}


def _stage_all(box: Sandbox, result: KillResult) -> bool:
    reply = box.dir / "reply.txt"
    reply.write_text(
        "".join(
            f"src/part_{i}.py\n<<<<<<< SEARCH\n{OLD_LINE}\n=======\n{NEW_LINE}\n>>>>>>> REPLACE\n"
            for i in range(FILES_IN_COMMIT)
        )
        + "src/created.py\n<<<<<<< SEARCH\n=======\nCREATED = True\n>>>>>>> REPLACE\n"
    )
    return box.check(result, box.run("edits", "stage", str(reply)), "edits stage")


def _state(box: Sandbox) -> str:
    """ "old", "new" or "mixed": every file of the change set as before, as after, or neither."""
    texts = [(box.root / f"src/part_{i}.py").read_text() for i in range(FILES_IN_COMMIT)]
    created = (box.root / "src/created.py").exists()
    if all(NEW_LINE in t for t in texts) and created:
        return "new"
    if all(OLD_LINE in t for t in texts) and not created:
        return "old"
    return "mixed"


def _fault(rng: random.Random, writes: int) -> tuple[str, str]:
    """A random fault point of the commit path and which pass of it (``kill@POINT:N``)."""
    point = rng.choice(POINTS)
    nth = rng.randint(1, writes) if point in ("after_tmp", "after_backup", "after_replace") else 1
    return f"kill@{point}:{nth}", f"at {point}:{nth}"


def _litter(box: Sandbox) -> list[str]:
    return [p.name for p in box.root.rglob("*") if ".semfora-" in p.name]


def kill_commit(rng: random.Random, base: Path | None = None, *, use_fault: bool | None = None) -> KillResult:
    """`semfora edits commit --all` killed at a fault point or a random delay: the next command
    recovers, the change set is whole or absent, and a second commit (if needed) completes it."""
    box = Sandbox(base)
    try:
        box.write_repo(_commit_files())
        result = KillResult("edits commit", "", False)
        if not _stage_all(box, result):
            return result
        fault = rng.random() < 0.7 if use_fault is None else use_fault
        if fault:
            spec, result.how = _fault(rng, FILES_IN_COMMIT)
            box.kill_run(["edits", "commit", "--all"], result, env={FAULT_ENV: spec})
        else:
            delay = rng.uniform(0.15, 0.8)  # the command takes about a second, start-up included
            result.how = f"after {delay:.2f} s"
            box.kill_run(["edits", "commit", "--all"], result, delay=delay)
        started = time.monotonic()
        listed = box.run("edits", "list", "--json")
        result.seconds_to_recover = time.monotonic() - started
        if not box.check(result, listed, "edits list after the kill"):
            return result
        state = _state(box)
        if state == "mixed":
            result.problems.append("the change set is half-written after recovery")
            return result
        if _litter(box):
            result.problems.append(f"temporary files left in the repository: {_litter(box)}")
        if state == "old":
            if not box.check(result, box.run("edits", "commit", "--all"), "the second commit"):
                return result
            if _state(box) != "new":
                result.problems.append("the second commit did not write the change set")
        history = list((box.dir / "cache").glob("semfora/*/edits/history/*.json"))
        if len(history) != 1:
            result.problems.append(f"{len(history)} undo records for one committed change set")
        return result
    finally:
        box.close()


def kill_undo(rng: random.Random, base: Path | None = None, *, use_fault: bool | None = None) -> KillResult:
    """`semfora edits undo` killed at a fault point or a random delay: the change set is whole or
    absent, and undo (again, if needed) leaves every file as it was before the commit."""
    box = Sandbox(base)
    try:
        box.write_repo(_commit_files())
        result = KillResult("edits undo", "", False)
        if not _stage_all(box, result):
            return result
        if not box.check(result, box.run("edits", "commit", "--all"), "the commit"):
            return result
        fault = rng.random() < 0.7 if use_fault is None else use_fault
        if fault:
            spec, result.how = _fault(rng, FILES_IN_COMMIT + 1)
            box.kill_run(["edits", "undo"], result, env={FAULT_ENV: spec})
        else:
            delay = rng.uniform(0.15, 0.8)
            result.how = f"after {delay:.2f} s"
            box.kill_run(["edits", "undo"], result, delay=delay)
        started = time.monotonic()
        listed = box.run("edits", "list")
        result.seconds_to_recover = time.monotonic() - started
        if not box.check(result, listed, "edits list after the kill"):
            return result
        state = _state(box)
        if state == "mixed":
            result.problems.append("the undo is half-done after recovery")
            return result
        if state == "new" and not box.check(result, box.run("edits", "undo"), "the second undo"):
            return result
        if _state(box) != "old":
            result.problems.append("undo did not restore the files")
        if _litter(box):
            result.problems.append(f"temporary files left in the repository: {_litter(box)}")
        return result
    finally:
        box.close()


ASK_REPLY = (
    "I will switch every part to the new value.\n\n"
    + "".join(
        f"src/part_{i}.py\n<<<<<<< SEARCH\n{OLD_LINE}\n=======\n{NEW_LINE}\n>>>>>>> REPLACE\n\n"
        for i in range(FILES_IN_COMMIT)
    )
    + "src/created.py\n<<<<<<< SEARCH\n=======\nCREATED = True\n>>>>>>> REPLACE\n"
)


def kill_ask(
    rng: random.Random, fake: object, base: Path | None = None, *, when: str = "random"
) -> KillResult:
    """`semfora ask --apply` killed while the reply streams, at a fault point of its commit, or after
    a random delay; the next `ask --resume` works and the edits are whole or absent.

    ``fake`` is a started ``tests.fakes.fake_anthropic.FakeAnthropic``.
    """
    box = Sandbox(base, {"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "sk-ant-faults-test"})  # type: ignore[attr-defined]
    try:
        box.write_repo(_commit_files())
        result = KillResult("ask", "", False)
        if not box.check(result, box.run("index", "--no-vectors"), "index"):
            return result
        seen = len(fake.message_requests())  # type: ignore[attr-defined]
        fake.reply(ASK_REPLY, chunk_chars=12, delay=0.02)  # type: ignore[attr-defined]
        args = ["ask", "switch to the new value", "--apply"]
        if when == "streaming":
            result.how = "while the reply streams"
            box.kill_run(args, result, until=lambda _p: len(fake.message_requests()) > seen)  # type: ignore[attr-defined]
        elif when == "commit" or (when == "random" and rng.random() < 0.4):
            spec, result.how = _fault(rng, FILES_IN_COMMIT + 1)
            box.kill_run(args, result, env={FAULT_ENV: spec})
        else:
            delay = rng.uniform(0.5, 4.0)
            result.how = f"after {delay:.2f} s"
            box.kill_run(args, result, delay=delay)
        started = time.monotonic()
        listed = box.run("edits", "list", "--json")
        result.seconds_to_recover = time.monotonic() - started
        if not box.check(result, listed, "edits list after the kill"):
            return result
        state = _state(box)
        staged = json.loads(listed.stdout)["counts"]["hunks"]
        if state == "mixed":
            result.problems.append("the applied edits are half-written after recovery")
        elif state == "old" and staged not in (0, FILES_IN_COMMIT + 1):
            result.problems.append(f"{staged} hunks staged: the reply was staged in part")
        fake.default_text = "Nothing more to change."  # type: ignore[attr-defined]
        box.check(result, box.run("ask", "anything else?", "--resume"), "ask --resume after the kill")
        return result
    finally:
        box.close()
