"""ContextBudget: never above the limit, CRITICAL never evicted, lowest-priority/LRU eviction."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.orchestrator.budget import (
    MIN_CRITICAL_TOKENS,
    TRUNCATION_MARK,
    ContextBudget,
    ContextItem,
    Priority,
)
from engine.tokens import estimate_tokens


def item(item_id: str, tokens: int, priority: Priority = Priority.MEDIUM) -> ContextItem:
    text = "x" * (tokens * 4)
    return ContextItem(item_id, "symbol", text, estimate_tokens(text), priority, f"test {item_id}")


def test_seed_defaults_and_window_cap() -> None:
    b = ContextBudget()
    assert (b.max_context_tokens, b.reserved_for_response, b.reserved_for_system) == (100_000, 4_000, 2_000)
    assert b.limit == 8_000
    assert ContextBudget(200_000).limit == 94_000  # window minus both reserves


def test_lower_priority_is_evicted_lru_first() -> None:
    b = ContextBudget(1000)
    assert b.add(item("low-old", 300, Priority.LOW)).admitted
    assert b.add(item("low-new", 300, Priority.LOW)).admitted
    assert b.add(item("med", 300, Priority.MEDIUM)).admitted
    b.touch("low-old")  # now low-new is least recently used
    result = b.add(item("high", 300, Priority.HIGH))
    assert result.admitted
    assert [e.id for e in result.evicted] == ["low-new"]
    assert b.used <= b.limit


def test_equal_priority_never_evicts_and_is_refused() -> None:
    b = ContextBudget(1000)
    b.add(item("a", 600, Priority.HIGH))
    result = b.add(item("b", 600, Priority.HIGH))
    assert not result.admitted and "a" in b and "b" not in b


def test_nothing_evicted_when_eviction_would_not_make_room() -> None:
    b = ContextBudget(1000)
    b.add(item("crit", 700, Priority.CRITICAL))
    b.add(item("low", 200, Priority.LOW))
    result = b.add(item("high", 500, Priority.HIGH))
    assert not result.admitted
    assert "low" in b  # not sacrificed for nothing


def test_critical_is_truncated_when_it_cannot_fit_and_never_evicted() -> None:
    b = ContextBudget(1000)
    b.add(item("c1", 600, Priority.CRITICAL))
    b.add(item("m", 200, Priority.MEDIUM))
    text = "\n".join(f"line {i} " + "y" * 30 for i in range(200))
    result = b.add(ContextItem("c2", "source", text, estimate_tokens(text), Priority.CRITICAL, "target"))
    assert result.admitted and result.truncated
    assert result.item is not None and result.item.text.endswith(TRUNCATION_MARK)
    assert "c1" in b and "m" not in b
    assert b.used <= b.limit
    assert b.trim(0) == ()  # CRITICAL items survive any trim


def test_critical_refused_when_almost_nothing_is_left() -> None:
    b = ContextBudget(1000)
    b.add(item("c1", 1000 - MIN_CRITICAL_TOKENS + 1, Priority.CRITICAL))
    assert not b.add(item("c2", 500, Priority.CRITICAL)).admitted


def test_readding_an_item_does_not_double_count() -> None:
    b = ContextBudget(1000)
    b.add(item("a", 100))
    b.add(item("a", 100))
    assert b.used == 100 and len(b) == 1


ops = st.lists(
    st.tuples(
        st.sampled_from(["add", "touch", "trim"]),
        st.integers(0, 30),
        st.integers(1, 900),
        st.sampled_from(list(Priority)),
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(limit=st.integers(600, 3000), steps=ops)
def test_invariants_hold_for_any_sequence(limit: int, steps: list[tuple[str, int, int, Priority]]) -> None:
    b = ContextBudget(limit)
    critical_in: set[str] = set()
    for op, n, tokens, prio in steps:
        key = f"{prio.name}-{n}"
        if op == "add":
            before = {i.id: i for i in b.items()}
            result = b.add(item(key, tokens, prio))
            for gone in result.evicted:
                # Evictions only ever hit strictly lower priority (or anything below CRITICAL).
                assert gone.priority != Priority.CRITICAL
                assert gone.priority > prio or prio == Priority.CRITICAL
                lower_kept = [i for i in b.items() if i.priority > gone.priority and i.id in before]
                assert not lower_kept, "a lower-priority item survived while a higher one was evicted"
            if result.admitted and prio == Priority.CRITICAL:
                critical_in.add(key)
        elif op == "touch":
            b.touch(key)
        else:
            b.trim(max(0, b.limit - tokens))
        assert b.used <= b.limit
        assert critical_in <= {i.id for i in b.items()}, "a CRITICAL item was evicted"
