"""A long-lived process (the app, the MCP server) sees the vectors another process embeds.

The embedded Chroma store keeps its index in memory; without a reopen, a search in the app kept
answering from the vectors it had when it first searched, until it was restarted.
"""

from __future__ import annotations

import os
import subprocess
import sys

from engine.index.hybrid import search
from engine.index.vectors import VectorIndexer, VectorSearcher

SPEC = "ollama:nomic-embed-text"

BILLING_PY = '''"""Invoices."""


def settle_invoice_arrears(invoice):
    """Settle the arrears of an overdue invoice with the customer's deposit."""
    return invoice.total - invoice.deposit
'''

# Another process (`semfora index` in a second terminal) indexes and embeds the new file.
OTHER_PROCESS = """
import sys
from engine.config import load_settings
from engine.index.indexer import index_repository
from engine.index.vectors import VectorIndexer
from engine.repo.layout import RepoLayout

layout = RepoLayout.for_path(sys.argv[1])
settings = load_settings(layout.root).settings
index_repository(layout, settings)
report = VectorIndexer(layout, settings).run()
assert report.embedded > 0, report
"""


def test_vectors_embedded_by_another_process_are_found_without_a_restart(
    fake_ollama, monkeypatch, indexed_repo
) -> None:
    monkeypatch.setenv("SEMFORA_EMBEDDING", SPEC)
    layout, settings = indexed_repo()
    VectorIndexer(layout, settings).run()
    before = search(layout, settings, "settle invoice arrears deposit", mode="vector")
    assert all(h.symbol != "settle_invoice_arrears" for h in before)
    searcher = VectorSearcher.for_repo(layout, settings)

    (layout.root / "app" / "billing.py").write_text(BILLING_PY, encoding="utf-8")
    subprocess.run(
        [sys.executable, "-c", OTHER_PROCESS, str(layout.root)],
        check=True,
        env={**os.environ},
        timeout=300,
    )

    after = search(layout, settings, "settle invoice arrears deposit", mode="vector")
    assert after and after[0].symbol == "settle_invoice_arrears"
    assert VectorSearcher.for_repo(layout, settings) is not searcher  # reopened once, for the new state
    again = VectorSearcher.for_repo(layout, settings)
    assert VectorSearcher.for_repo(layout, settings) is again  # and kept while nothing changes
