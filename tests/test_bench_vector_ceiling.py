"""The vector ceiling benchmark reads each query set with its held-out part apart (tuning never sees it)."""

from __future__ import annotations

import pytest

from tests.bench import vector_ceiling


@pytest.mark.parametrize("set_name", ["context", "flask-django", "issues"])
def test_each_set_loads_its_public_and_held_out_parts_apart(set_name: str) -> None:
    public = vector_ceiling.load_cases(set_name, heldout=False)
    heldout = vector_ceiling.load_cases(set_name, heldout=True)
    assert public and heldout
    assert not {c.id for c in public} & {c.id for c in heldout}
    assert all(c.gold and c.query.strip() and c.corpus for c in public + heldout)


def test_the_issue_reports_are_the_long_queries_of_the_context_bench() -> None:
    from tests.bench.tasksets import SETS

    cases = vector_ceiling.load_cases("issues", heldout=False) + vector_ceiling.load_cases(
        "issues", heldout=True
    )
    assert sorted(c.id for c in cases) == sorted(t.id for t in SETS["issues"].load())
    assert sorted(len(c.query.split()) for c in cases)[len(cases) // 2] > 60  # a title and a body
