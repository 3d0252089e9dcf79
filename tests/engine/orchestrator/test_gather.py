"""Context packs on a real indexed repository: within budget, no secrets, reasons, intent filling."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.orchestrator.budget import Priority
from engine.orchestrator.core import Orchestrator
from tests.engine.orchestrator.conftest import ENV_SECRET, PEM_SECRET, TOKEN_SECRET


def test_edit_target_and_what_it_calls_come_as_source(shop) -> None:
    layout, cfg = shop
    pack = Orchestrator(layout, cfg).build_context("Fix Cart.total so the discount applies after tax")
    assert pack.intent == "edit"
    by_symbol = {(i.symbol, i.kind): i for i in pack.items}
    target = by_symbol[("Cart.total", "source")]
    assert target.priority == Priority.CRITICAL and "def total" in target.text
    assert target.file == "src/shop/cart.py" and target.start_line == 18
    assert pack.items[1] == target  # the first item after the overview
    for callee in ("apply_discount", "tax_for"):
        assert "return round(amount, 2)" in by_symbol[(callee, "source")].text
    assert all(i.reason for i in pack.items)
    assert pack.total_tokens <= pack.budget


def test_explain_gets_code_and_never_the_same_symbol_twice(shop) -> None:
    layout, cfg = shop
    pack = Orchestrator(layout, cfg).build_context("explain how the cart total is computed")
    assert pack.intent == "explain"
    sources = [i for i in pack.items if i.kind == "source"]
    summaries = [i for i in pack.items if i.kind == "summary"]
    assert sources and sources[0].priority == Priority.HIGH
    assert "def total(self, code=None):" in sources[0].text  # the method itself, or its small class whole
    # A symbol sent as source is not also sent as a summary.
    assert not {i.symbol for i in sources} & {i.symbol for i in summaries}


def test_secrets_never_enter_the_pack(shop) -> None:
    layout, cfg = shop
    orch = Orchestrator(layout, cfg)
    pack = orch.build_context("update the API_TOKEN in @.env and config.pem and settings")
    text = orch.render(pack)
    for secret in (ENV_SECRET, PEM_SECRET, TOKEN_SECRET):
        assert secret not in text
    assert not any((i.file or "").endswith((".env", ".pem")) for i in pack.items)


def test_json_shape_matches_the_brief(shop) -> None:
    layout, cfg = shop
    data = Orchestrator(layout, cfg).build_context("where is apply_discount defined", budget=2000).to_json()
    assert {"task", "intent", "budget", "total_tokens", "items"} <= set(data)
    assert data["intent"] == "locate" and data["budget"] == 2000
    for item in data["items"]:
        assert {"kind", "file", "symbol", "start_line", "end_line", "tokens", "priority", "reason"} <= set(
            item
        )
        assert item["priority"] in ("critical", "high", "medium", "low")
    assert data["items"][0]["kind"] == "overview" and data["items"][0]["priority"] == "critical"
    assert data["items"][1]["symbol"] == "apply_discount" and data["items"][1]["kind"] == "source"
    assert "def apply_discount(amount, code):" in data["items"][1]["text"]


@pytest.mark.parametrize("budget", [500, 700, 1200])
def test_small_budgets_are_respected(shop, budget: int) -> None:
    layout, cfg = shop
    pack = Orchestrator(layout, cfg).build_context(
        "refactor Cart and apply_discount and tax_for", budget=budget
    )
    assert pack.total_tokens <= budget


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(task=st.text(min_size=1, max_size=80), budget=st.integers(500, 3000))
def test_any_task_stays_within_budget(shop, task: str, budget: int) -> None:
    layout, cfg = shop
    pack = Orchestrator(layout, cfg).build_context(task, budget=budget)
    assert pack.total_tokens <= budget


def test_a_mentioned_file_is_sent_whole_and_its_symbols_not_twice(shop) -> None:
    layout, cfg = shop
    pack = Orchestrator(layout, cfg).build_context("fix the tax in @src/shop/pricing.py and @.env")
    files = [i for i in pack.items if i.kind == "file"]
    assert [(i.file, i.priority) for i in files] == [("src/shop/pricing.py", Priority.CRITICAL)]
    assert "def tax_for" in files[0].text
    assert not [i for i in pack.items if i.kind == "source" and i.file == "src/shop/pricing.py"]
    assert any("@.env" in n for n in pack.notes)
