"""A handful of real SIGKILLs in `make test`: index, edits commit, edits undo and ask (issue 13).

Each kill is followed by the next command, which must work with nothing lost: the change set
whole or absent, the index usable, no orphan process, no stale lock. The benchmark
`tests/bench/bench_faults.py` runs the same scenarios 50+ times with random kill points.
"""

from __future__ import annotations

import random

import pytest

from tests.faults import harness


def _assert_ok(result: harness.KillResult) -> None:
    assert result.killed, f"{result.scenario} {result.how}: the process finished before the kill"
    assert result.ok, f"{result.scenario} killed {result.how}: {result.problems}"


def test_index_killed_while_its_workers_parse(tmp_path) -> None:
    _assert_ok(harness.kill_index(random.Random(1), tmp_path, when="workers"))


@pytest.mark.parametrize("seed", [3, 11])
def test_commit_killed_at_a_fault_point(tmp_path, seed: int) -> None:
    _assert_ok(harness.kill_commit(random.Random(seed), tmp_path, use_fault=True))


@pytest.mark.parametrize("seed", [5, 8])
def test_undo_killed_at_a_fault_point(tmp_path, seed: int) -> None:
    _assert_ok(harness.kill_undo(random.Random(seed), tmp_path, use_fault=True))


@pytest.mark.parametrize("when", ["streaming", "commit"])
def test_ask_killed_mid_turn(tmp_path, fake_anthropic, when: str) -> None:
    _assert_ok(harness.kill_ask(random.Random(2), fake_anthropic, tmp_path, when=when))
