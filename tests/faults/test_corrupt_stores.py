"""Every state file, damaged: set aside and rebuilt, or refused with a typed error naming the fix.

One parametrised test over every store semfora keeps (issue 13, item 5). Caches, metrics,
vectors and chat sessions are set aside, said once, and rebuilt; the edit journal and undo
history refuse with a typed error that names the file and the fix. No command ever shows a
traceback.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.repo.layout import RepoLayout
from tests.conftest import run_semfora
from tests.engine.orchestrator.conftest import SHOP_FILES
from tests.engine.orchestrator.test_turn import GOOD_EDIT

REPLY = "src/shop/pricing.py\n<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n"


@dataclass
class World:
    root: Path
    layout: RepoLayout
    env: dict[str, str]
    tmp: Path

    def run(self, *args: str, env: dict[str, str] | None = None):
        proc = run_semfora(*args, "--path", str(self.root), env={**self.env, **(env or {})})
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc

    def stage_and_commit(self) -> None:
        text = (self.root / "src/shop/pricing.py").read_text()
        first = text.splitlines()[0]
        reply = self.tmp / "reply.txt"
        reply.write_text(REPLY.format(old=first, new=first + "  # touched"))
        assert self.run("edits", "stage", str(reply)).returncode == 0
        assert self.run("edits", "commit", "--all").returncode == 0


def garble(path: Path, *, keep_header: bool = False) -> None:
    """Random bytes over the file (or all but its first page, so SQLite opens it, then trips)."""
    size = max(path.stat().st_size, 8192)
    rng = random.Random(13)
    junk = bytes(rng.randrange(256) for _ in range(size))
    if keep_header:
        head = path.read_bytes()[:4096]
        junk = head + junk[len(head) :]
    path.write_bytes(junk)


def _said_once(first: str, second: str, words: str) -> None:
    assert words in first and "moved it to" in first or "moved chroma/" in first, first
    assert words not in second, second


def cache_db(w: World) -> None:
    assert w.run("search", "cart total", "--mode", "fts").returncode == 0
    assert w.run("cache", "stats").returncode == 0
    garble(w.layout.cache_db)
    first = w.run("cache", "stats")
    assert first.returncode == 0 and "entries: 0" in first.stdout
    second = w.run("search", "cart total", "--mode", "fts")
    assert second.returncode == 0 and "cart.py" in second.stdout
    _said_once(first.stderr, second.stderr, "the result cache")
    assert list(w.layout.cache_dir.glob("cache.db.corrupt-*"))


def cache_db_damaged_inside(w: World) -> None:
    from engine.store.cache import ResultCache

    cache = ResultCache(w.layout.cache_db)
    for i in range(400):
        cache.put("summary", f"k{i}", "x" * 500)
    cache.close()
    garble(w.layout.cache_db, keep_header=True)
    first = w.run("cache", "stats")
    assert first.returncode == 0, first.stderr
    second = w.run("cache", "stats")
    _said_once(first.stderr, second.stderr, "the result cache")


def metrics_db(w: World) -> None:
    assert w.run("search", "cart total", "--mode", "fts").returncode == 0
    assert w.layout.metrics_db.exists()
    garble(w.layout.metrics_db)
    first = w.run("metrics", "--json")
    assert first.returncode == 0 and json.loads(first.stdout)["days"] == []
    assert w.run("search", "cart total", "--mode", "fts").returncode == 0
    second = w.run("metrics", "--json")
    assert second.returncode == 0 and json.loads(second.stdout)["days"][0]["searches"] == 1
    _said_once(first.stderr, second.stderr, "the search metrics")


def chroma_sqlite(w: World) -> None:
    env = {"SEMFORA_EMBEDDING": "ollama:nomic-embed-text"}
    built = json.loads(w.run("index", "--json", env=env).stdout)["vectors"]
    assert built["enabled"] and built["embedded"] > 0
    garble(w.layout.chroma_dir / "chroma.sqlite3")
    first = w.run("search", "cart total", env=env)
    assert first.returncode == 0 and "cart.py" in first.stdout
    rebuilt = w.run("index", "--json", env=env)
    assert rebuilt.returncode == 0
    assert json.loads(rebuilt.stdout)["vectors"]["embedded"] == built["embedded"]  # every chunk again
    second = w.run("search", "cart total", env=env)
    assert second.returncode == 0 and "[fts" in second.stdout
    _said_once(first.stderr, second.stderr + rebuilt.stderr, "the vector store")
    assert list(w.layout.cache_dir.glob("chroma.corrupt-*"))


def history_record(w: World) -> None:
    w.stage_and_commit()
    (record,) = (w.layout.cache_dir / "edits" / "history").glob("*.json")
    garble(record)
    undo = w.run("edits", "undo")
    assert undo.returncode == 1 and undo.stderr.startswith("error[EDIT_HISTORY_CORRUPT]:")
    assert str(record) in undo.stderr and f"mv '{record}'" in undo.stderr
    assert w.run("edits", "list").returncode == 0  # everything else works
    os.replace(record, str(record) + ".bad")  # the fix it names
    assert w.run("edits", "undo").stderr.startswith("error[NOTHING_TO_UNDO]")


def _journal(w: World, content: str) -> Path:
    journal = w.layout.cache_dir / "edits" / "journal"
    journal.mkdir(parents=True, exist_ok=True)
    path = journal / "20250101T000000-deadbeef.json"
    path.write_text(content)
    return path


def _journal_refused(w: World, content: str) -> None:
    w.stage_and_commit()
    path = _journal(w, content)
    listed = w.run("edits", "list")
    assert listed.returncode == 0 and str(path) in listed.stderr  # reads go on, with the warning
    reply = w.tmp / "reply2.txt"
    reply.write_text("src/shop/fresh.py\n<<<<<<< SEARCH\n=======\nFRESH = 1\n>>>>>>> REPLACE\n")
    assert w.run("edits", "stage", str(reply)).returncode == 0
    commit = w.run("edits", "commit", "--all")
    assert commit.returncode == 1 and "error[EDIT_JOURNAL_CORRUPT]:" in commit.stderr
    assert str(path) in commit.stderr and f"mv '{path}'" in commit.stderr
    assert not (w.root / "src/shop/fresh.py").exists()  # nothing written
    assert "error[EDIT_JOURNAL_CORRUPT]" in w.run("edits", "undo").stderr
    os.replace(path, str(path) + ".bad")
    assert w.run("edits", "commit").returncode == 0


def journal_null(w: World) -> None:
    _journal_refused(w, "null")


def journal_wrong_types(w: World) -> None:
    _journal_refused(w, json.dumps({"txid": 7, "state": "prepared", "entries": "all of them"}))


def journal_wrong_entry(w: World) -> None:
    _journal_refused(w, json.dumps({"txid": "x", "entries": [{"rel": None, "existed": "yes"}]}))


def chat_session(w: World) -> None:
    assert w.run("ask", "explain Cart.total", "--json").returncode == 0
    (session,) = [p for p in w.layout.sessions_dir.glob("*.json")]
    session.write_bytes(os.urandom(2048))
    first = w.run("ask", "and the tax?", "--resume", "--json")
    assert first.returncode == 0, first.stderr
    second = w.run("ask", "and the discount?", "--resume", "--json")
    assert second.returncode == 0
    _said_once(first.stderr, second.stderr, "the chat session")


STORES: dict[str, Callable[[World], None]] = {
    "cache.db": cache_db,
    "cache.db-pages": cache_db_damaged_inside,
    "metrics.db": metrics_db,
    "chroma.sqlite3": chroma_sqlite,
    "history-record": history_record,
    "journal-null": journal_null,
    "journal-wrong-types": journal_wrong_types,
    "journal-wrong-entry": journal_wrong_entry,
    "chat-session": chat_session,
}


@pytest.mark.parametrize("store", list(STORES))
def test_a_damaged_store_is_set_aside_or_refused_never_a_traceback(
    store: str, make_repo, tmp_path: Path, fake_anthropic, fake_ollama
) -> None:
    root = make_repo(SHOP_FILES)
    fake_anthropic.default_text = "Cart.total adds tax, then applies the discount."
    env = {"ANTHROPIC_BASE_URL": fake_anthropic.url, "OLLAMA_HOST": fake_ollama.url}
    world = World(root, RepoLayout.for_path(root), env, tmp_path)
    assert world.run("index", "--no-vectors").returncode == 0
    STORES[store](world)
    assert GOOD_EDIT  # the shop fixture's edit exists (shared with the turn tests)
