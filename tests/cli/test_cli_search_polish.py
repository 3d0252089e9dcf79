"""`semfora search`, `symbol` and `callers` as a demanding user meets them (polish round)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_semfora

REPO = {
    "app/client.py": (
        "class Client:\n    def send(self, request):\n        return request\n\n\n"
        "def make_client():\n    return Client()\n"
    ),
}


@pytest.mark.parametrize("command", [("symbol",), ("symbol", "--source"), ("callers",)], ids=" ".join)
@pytest.mark.parametrize("name", ["", "  "], ids=["empty", "blank"])
def test_a_blank_symbol_name_is_a_usage_error(make_repo, command, name) -> None:
    """`semfora symbol ''` said "no symbol named ''" and exited 1, as if the index lacked it."""
    root = make_repo(REPO)
    assert run_semfora("index", "--no-vectors", "--path", str(root)).returncode == 0
    proc = run_semfora(command[0], name, *command[1:], "--path", str(root), "--json")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["error_code"] == "USAGE"


def test_symbol_says_when_more_share_the_name_than_it_lists(make_repo) -> None:
    """`semfora symbol __init__` listed 50 of 66 definitions as if they were all."""
    files = {
        f"pkg/m{i}.py": f"class C{i}:\n    def __init__(self):\n        self.n = {i}\n" for i in range(55)
    }
    root = make_repo(files)
    assert run_semfora("index", "--no-vectors", "--path", str(root)).returncode == 0
    proc = run_semfora("symbol", "__init__", "--path", str(root))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("  id=") == 50
    assert "50 of 55 symbols named '__init__' shown" in proc.stderr
    body = json.loads(run_semfora("symbol", "__init__", "--json", "--path", str(root)).stdout)
    assert (len(body["symbols"]), body["total"], body["exact"]) == (50, 55, True)
    assert json.loads(run_semfora("symbol", "C3", "--json", "--path", str(root)).stdout)["total"] == 1


POOL = (
    "import threading\n\n\n"
    "@register\n"
    "class ConnectionPool:\n"
    '    """\n'
    "    Keeps sockets open between requests.\n\n"
    "    Timed out waiting to acquire a connection from the pool.\n"
    '    """\n\n'
    "    def __init__(self, size):\n        self.size = size\n\n"
    "    def _evict(self):\n        pass\n\n"
    "    def acquire(self):\n        return threading.Lock()\n\n"
    "    def release(self, conn):\n        pass\n"
)


def test_a_class_hit_shows_the_class_line_its_doc_and_its_members(make_repo) -> None:
    """A class hit showed its header's lines from the first matched word on (the middle of its
    docstring), without the class line or what the class offers."""
    root = make_repo({"net/pool.py": POOL})
    assert run_semfora("index", "--no-vectors", "--path", str(root)).returncode == 0
    proc = run_semfora("search", "acquire connection pool timed", "--json", "--path", str(root))
    assert proc.returncode == 0, proc.stderr
    hit = next(h for h in json.loads(proc.stdout)["results"] if h["symbol"] == "ConnectionPool")
    assert hit["snippet"].splitlines() == [
        "class ConnectionPool:",
        "    Timed out waiting to acquire a connection from the pool.",
        "    members: __init__(), acquire(), release(), _evict()",
    ]
    text = run_semfora("search", "ConnectionPool", "--path", str(root)).stdout
    assert "    class ConnectionPool:\n        Keeps sockets open between requests.\n" in text


def test_rerank_with_no_reranker_keeps_the_search_s_own_scores(make_repo) -> None:
    """`search --rerank` with Ollama down said "reranking is off" yet replaced every score by
    1/rank (1, 0.5, 0.33...), so the same search gave other scores with the flag than without."""
    root = make_repo({"net/pool.py": POOL, "app/client.py": REPO["app/client.py"]})
    assert run_semfora("index", "--no-vectors", "--path", str(root)).returncode == 0
    plain = run_semfora("search", "acquire connection", "--json", "--path", str(root))
    flagged = run_semfora("search", "acquire connection", "--rerank", "--json", "--path", str(root))
    assert flagged.returncode == 0 and "reranking is off" in flagged.stderr
    scores = [[(h["symbol"], h["score"]) for h in json.loads(p.stdout)["results"]] for p in (plain, flagged)]
    assert len(scores[0]) >= 2 and scores[0] == scores[1]
