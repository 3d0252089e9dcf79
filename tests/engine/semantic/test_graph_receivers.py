"""Callers with receivers: what `semfora callers` and the semantic diff list as a symbol's callers.

A call on an object of unknown type never lands on an unrelated free function by bare name,
common method names need a receiver that says which class, calls through a package follow its
re-exports, and a depth-2 caller says which depth-1 caller it hangs from.
"""

from __future__ import annotations

import json
from pathlib import Path

from engine.config import load_settings
from engine.index.indexer import index_repository
from engine.repo.layout import RepoLayout
from engine.semantic.diff import analyze_commit
from engine.store.db import SymbolStore
from tests.conftest import git, run_semfora

# A Flask-like package: a view function named ``update``, a dict ``update()`` elsewhere, a
# ``send`` method on two unrelated classes, a function re-exported by the package, and a
# helper that calls the app's method through an imported proxy object.
APP = {
    "web/__init__.py": "from .helpers import send_file as send_file\nfrom .globals import current_app\n",
    "web/globals.py": "current_app = object()\n",
    "web/helpers.py": (
        "from .globals import current_app\n\n\n"
        "def send_file(path):\n    return path\n\n\n"
        "def url_for(endpoint):\n    return current_app.url_for(endpoint)\n"
    ),
    "web/app.py": (
        "class Flask:\n"
        "    def url_for(self, endpoint):\n        return endpoint\n\n"
        "    def update_template_context(self, context):\n"
        "        context.update({'a': 1})\n        return context\n"
    ),
    "web/config.py": (
        "class Config(dict):\n    def from_mapping(self, mapping):\n        self.update(mapping)\n        return True\n"
    ),
    "web/transport.py": (
        "class Session:\n    def send(self, request):\n        return request\n\n"
        "    def request(self, url):\n        return self.send(url)\n\n\n"
        "class Socket:\n    def send(self, data):\n        return data\n\n\n"
        "def relay(session, data):\n    return session.send(data)\n\n\n"
        "def forward(conn, data):\n    return conn.send(data)\n"
    ),
    # Another ``send_file`` the package does not export: only the re-export says which one.
    "web/a_static.py": "def send_file(path, cache=True):\n    return cache\n",
    "examples/blog.py": "from web.helpers import url_for\n\n\ndef update():\n    return url_for('blog.index')\n",
    "tests/test_files.py": "import web\n\n\ndef test_send():\n    assert web.send_file('a')\n",
}


def _indexed(make_repo) -> Path:
    root = make_repo(APP)
    layout = RepoLayout.for_path(root)
    index_repository(layout, load_settings(layout.root).settings, text_index=False)
    return root


def _callers(root: Path, qualified: str, depth: int = 1) -> set[tuple[str, int]]:
    with SymbolStore(RepoLayout.for_path(root)) as store:
        sym = next(s for s in store.symbols_by_name(qualified, limit=20) if s.qualified_name == qualified)
        return {(n.name, n.depth) for n in store.callers(sym.id, depth)}


def test_a_method_call_on_an_unknown_object_never_reaches_a_free_function(make_repo) -> None:
    """``context.update()`` and ``self.update()`` on a dict are not the ``update`` view."""
    root = _indexed(make_repo)
    assert _callers(root, "update") == set()
    assert ("Flask.update_template_context", 2) not in _callers(root, "url_for", 2)


def test_common_method_names_need_a_receiver_that_names_the_class(make_repo) -> None:
    root = _indexed(make_repo)
    session_send = _callers(root, "Session.send")
    assert session_send == {("Session.request", 1), ("relay", 1)}  # self.send, session.send
    assert _callers(root, "Socket.send") == set()  # conn.send in forward: which send is unknown


def test_calls_through_the_package_follow_its_reexports(make_repo) -> None:
    root = _indexed(make_repo)
    with SymbolStore(RepoLayout.for_path(root)) as store:
        exported, other = sorted(
            (s for s in store.symbols_by_name("send_file", limit=10)),
            key=lambda s: s.file != "web/helpers.py",
        )
        assert {n.name for n in store.callers(exported.id, 1)} == {"test_send"}
        assert store.callers(other.id, 1) == []


def test_a_rare_method_name_on_an_imported_object_reaches_its_class(make_repo) -> None:
    root = _indexed(make_repo)
    assert ("url_for", 1) in _callers(root, "Flask.url_for")


def test_depth_two_callers_say_which_caller_they_hang_from(make_repo) -> None:
    root = _indexed(make_repo)
    out = run_semfora("callers", "Flask.url_for", "--depth", "2", "--json", "--path", str(root))
    rows = json.loads(out.stdout)["callers"]
    by_name = {r["name"]: r for r in rows}
    assert by_name["url_for"]["depth"] == 1 and by_name["url_for"]["parent"] is None
    assert by_name["update"]["depth"] == 2 and by_name["update"]["parent"] == "url_for"
    text = run_semfora("callers", "Flask.url_for", "--depth", "2", "--path", str(root)).stdout.splitlines()
    assert (
        text.index("    update  examples/blog.py:5  [import]")
        == text.index(next(line for line in text if line.strip().startswith("url_for "))) + 1
    )


def test_diff_callers_list_code_before_documentation_and_skip_unrelated_receivers(make_repo) -> None:
    files = dict(APP)
    files["docs/api.md"] = "Call `Session.send(request)` or `session.send(r)` to send.\n"
    root = make_repo(files)
    (root / "web/transport.py").write_text(
        APP["web/transport.py"].replace("return request\n", "return request  # sent\n", 1)
    )
    git(root, "commit", "-qam", "touch send")
    diff = analyze_commit(root, "HEAD")
    send = next(s for s in diff.symbols if s.qualified_name == "Session.send")
    where = [(c.file, c.via) for c in send.callers]
    assert ("web/transport.py", "text search") in where
    assert all(
        file != "web/transport.py" or "conn.send" not in c.text for c in send.callers for file in [c.file]
    )
    docs = [i for i, (file, via) in enumerate(where) if via == "documentation"]
    assert docs and min(docs) > max(i for i, (_, via) in enumerate(where) if via != "documentation")
