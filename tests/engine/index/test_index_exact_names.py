"""A query that is exactly a definition's name finds that definition first (hybrid search)."""

from __future__ import annotations

from engine.index.hybrid import search

CLIENT_PY = '''"""The client."""


class ClientState:
    """The state of a client: a client is unopened, then opened, then the client is closed.

    A client instance cannot be reopened; a closed client raises. Client, client, client.
    """


def is_client_error(code):
    """True for a client error: the client sent a bad request (client side, 4xx)."""
    return 400 <= code < 500


class Client:
    """An HTTP transport with pooling."""

    def send(self, request):
        return request

    def close(self):
        self.state = None
'''

API_PY = '''"""Helpers."""
from pkg.client import Client


def request(method, url):
    """Send one request through a fresh Client: the client is opened, used and the client closed."""
    with Client() as client:
        return client.send((method, url))


class HTTPError(Exception):
    @property
    def request(self):
        """The request of the client that failed (a client request)."""
        return self._request
'''

TEST_PY = "def test_client():\n    client = object()\n    assert client\n"


def _repo(indexed_repo):
    return indexed_repo({"pkg/client.py": CLIENT_PY, "pkg/api.py": API_PY, "tests/test_client.py": TEST_PY})


def test_a_query_that_is_a_class_name_lists_that_class_first(indexed_repo) -> None:
    """`semfora search client` put ClientState and is_client_error, which say 'client' often, above Client."""
    layout, settings = _repo(indexed_repo)
    for query in ("client", "Client", " CLIENT "):
        hits = search(layout, settings, query, limit=5, record_metrics=False)
        assert hits[0].symbol == "Client", (query, [h.symbol for h in hits])
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_a_top_level_definition_comes_before_members_of_the_same_name(indexed_repo) -> None:
    layout, settings = _repo(indexed_repo)
    hits = search(layout, settings, "request", limit=5, record_metrics=False)
    assert [h.symbol for h in hits[:2]] == ["request", "HTTPError.request"]
    hits = search(layout, settings, "Client.send", limit=3, record_metrics=False)
    assert hits[0].symbol == "Client.send"


def test_a_name_behind_its_module_lists_that_definition_first(indexed_repo) -> None:
    """`semfora search httpx.Client`, as an import spells it, put ClientState above Client."""
    layout, settings = _repo(indexed_repo)
    for query in ("pkg.Client", "pkg.client.Client", "client.Client"):
        hits = search(layout, settings, query, limit=3, record_metrics=False)
        assert hits[0].symbol == "Client", (query, [h.symbol for h in hits])


def test_words_that_are_not_one_identifier_are_ranked_as_before(indexed_repo) -> None:
    layout, settings = _repo(indexed_repo)
    hits = search(layout, settings, "client error", limit=3, record_metrics=False)
    assert hits[0].symbol == "is_client_error"
