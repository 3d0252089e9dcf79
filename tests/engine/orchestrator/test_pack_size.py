"""Pack size: the ranked tail is one-line summaries within its share, runner-up edit targets stay short."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from engine.config import load_settings
from engine.orchestrator import gather
from engine.orchestrator.budget import Priority
from engine.orchestrator.core import Orchestrator
from engine.store.indexer import index_repository
from engine.store.layout import RepoLayout


def _invoice_repo(make_repo: Callable[..., Path]) -> tuple[RepoLayout, object]:
    """Forty invoice helpers that all match "invoice total", each with a doc and a few calls."""
    funcs = []
    for i in range(40):
        funcs.append(
            f"def invoice_total_{i}(invoice, rate={i}):\n"
            f'    """Compute the invoice total for region {i}. Rounds to cents and adds the regional tax."""\n'
            f"    subtotal = sum(line.amount for line in invoice.lines)\n"
            f"    taxed = apply_tax(subtotal, rate)\n"
            f"    return round_cents(taxed)\n"
        )
    helpers = "def apply_tax(amount, rate):\n    return amount * (1 + rate / 100)\n\n\ndef round_cents(x):\n    return round(x, 2)\n"
    root = make_repo({"billing/invoices.py": "\n\n".join(funcs) + "\n\n" + helpers})
    layout = RepoLayout.for_path(root)
    settings = load_settings(layout.root).settings
    index_repository(layout, settings)
    return layout, settings


def test_tail_is_one_line_summaries_within_its_share(make_repo) -> None:
    layout, cfg = _invoice_repo(make_repo)
    budget = 8000
    pack = Orchestrator(layout, cfg).build_context("how is the invoice total computed", budget=budget)
    tail = [i for i in pack.items if i.kind == "summary" and i.priority in (Priority.MEDIUM, Priority.LOW)]
    assert tail, "the tail should name other candidates"
    for item in tail:
        assert "\n" not in item.text.strip() and "Calls " not in item.text  # signature + doc sentence only
        assert item.text.startswith("def invoice_total_") or item.text.startswith("def ")
    # The ranked tail (not the targets' callers/callees) stops at its share of the budget;
    # the item that crosses the line is the last one.
    ranked_tail = [i for i in tail if "caller of" not in i.reason and "callee of" not in i.reason]
    largest = max(i.tokens for i in ranked_tail)
    assert sum(i.tokens for i in ranked_tail) <= gather.TAIL_SHARE * budget + largest
    assert any("stopped when the ranked tail reached" in n for n in pack.notes)
    # Forty matching helpers, but the pack is far below the budget: it stops, it does not fill.
    assert pack.total_tokens < budget / 3


def test_brief_summary_keeps_the_doc_first_sentence(make_repo) -> None:
    layout, cfg = _invoice_repo(make_repo)
    pack = Orchestrator(layout, cfg).build_context("how is the invoice total computed")
    briefs = [i.text for i in pack.items if i.kind == "summary" and i.priority == Priority.LOW]
    assert any("Compute the invoice total for region" in t for t in briefs)
    assert all(len(t) <= gather.BRIEF_SIGNATURE_CHARS + gather.BRIEF_CHARS + 3 for t in briefs)


def test_runner_up_edit_targets_get_source_only_when_short(make_repo) -> None:
    big_body = "\n".join(f"    step_{n} = parse_ledger_entry(entry, {n})" for n in range(160))
    files = {
        "ledger/core.py": (
            "def parse_ledger_entry(entry, n):\n"
            '    """Parse one ledger entry."""\n'
            "    return entry.split(',')[n % 3]\n\n\n"
            "def reconcile_ledger_entries(entry):\n"
            '    """Reconcile the ledger entries of one account."""\n' + big_body + "\n    return entry\n"
        )
    }
    root = make_repo(files)
    layout = RepoLayout.for_path(root)
    cfg = load_settings(layout.root).settings
    index_repository(layout, cfg)
    pack = Orchestrator(layout, cfg).build_context(
        "fix parse_ledger_entry and reconcile_ledger_entries", budget=8000
    )
    assert pack.intent == "edit"
    sources = [i for i in pack.items if i.kind == "source"]
    assert sources and sources[0].priority == Priority.CRITICAL
    # Both are targets; whichever ranks second is sent as source only when it is short.
    by_symbol = {
        i.symbol: i for i in pack.items if i.symbol in ("parse_ledger_entry", "reconcile_ledger_entries")
    }
    assert set(by_symbol) == {"parse_ledger_entry", "reconcile_ledger_entries"}
    assert sources[0].symbol == "parse_ledger_entry"  # the first target: exact name, symbol rank 1
    big = by_symbol["reconcile_ledger_entries"]  # ~1800 tokens: over the runner-up share
    assert big.kind == "summary" and big.priority == Priority.CRITICAL
    assert any("reconcile_ledger_entries: source is" in n for n in pack.notes)
    for item in sources[1:]:
        assert item.tokens <= gather.SECONDARY_SOURCE_SHARE * 8000 + 60
    assert pack.total_tokens <= 8000
