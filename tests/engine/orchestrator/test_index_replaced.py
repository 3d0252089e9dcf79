"""A long-lived orchestrator (the app keeps one for its whole session) follows an index.db that was
replaced under it: the app's own rebuild, or `semfora index --rebuild` run in a terminal."""

from __future__ import annotations

from engine.api import index_repository, open_orchestrator
from engine.config import load_settings
from engine.repo.layout import RepoLayout

PAY = 'def charge(customer, amount):\n    """Charge a customer."""\n    return amount\n'
REFUND = 'def zanzibar_refund(charge_id, amount):\n    """Give the money back."""\n    return -amount\n'


def test_a_pack_after_a_rebuild_reads_the_new_index(make_repo) -> None:
    """The app's orchestrator kept its connections to the deleted index.db after a rebuild: a
    function added since was in no pack (the text index and the symbol store answered from the
    old file) until the app restarted."""
    root = make_repo({"pay.py": PAY})
    layout = RepoLayout.for_path(root)
    settings = load_settings(root).settings
    index_repository(layout, settings)
    orchestrator = open_orchestrator(layout, settings)
    try:
        first = orchestrator.build_context("fix charge so it rounds the amount", budget=2000)
        assert any(i.symbol == "charge" for i in first.items)
        (root / "refund.py").write_text(REFUND)
        index_repository(layout, settings, rebuild=True)
        pack = orchestrator.build_context("the refund path: zanzibar refunds", budget=2000)
        sources = {i.symbol for i in pack.items if i.kind == "source"}
        assert "zanzibar_refund" in sources, [(i.kind, i.symbol, i.reason) for i in pack.items]
    finally:
        orchestrator.close()
