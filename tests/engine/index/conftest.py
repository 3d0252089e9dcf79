"""Fixtures for the retrieval tests: an indexed small repository and fresh warn-once state."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from engine.config import Settings, load_settings
from engine.repo.layout import RepoLayout

AUTH_PY = '''"""Authentication middleware."""
import os


class AuthMiddleware:
    """Strips credentials from proxied requests."""

    header = "Authorization"

    def should_strip_auth(self, request):
        return request.host != os.environ.get("TRUSTED_HOST")

    def process(self, request):
        if self.should_strip_auth(request):
            request.headers.pop(self.header, None)
        return request


def getUserById(user_id):
    """Look a user up in the cache, then the database."""
    return USERS.get(user_id)
'''

ROUTES_PY = '''"""URL routing."""


def redirect(location, code=302):
    """Build a response that sends the client to another location."""
    return Response(status=code, headers={"Location": location})


def url_for(endpoint, **values):
    return "/" + endpoint
'''

README = "# Demo\n\nThe middleware strips the authorization header of proxied requests.\n"


@pytest.fixture(autouse=True)
def _fresh_warnings() -> Iterator[None]:
    """Per-process state starts empty for each test: warn-once kinds, Chroma clients, searchers."""
    from engine.index.chroma import reset_clients
    from engine.index.hybrid import reset_warnings
    from engine.index.vectors import VectorSearcher

    reset_warnings()
    reset_clients()
    VectorSearcher.forget_all()
    yield
    reset_warnings()
    reset_clients()
    VectorSearcher.forget_all()


IndexedRepo = Callable[..., tuple[RepoLayout, Settings]]


@pytest.fixture
def indexed_repo(make_repo: Callable[..., Path]) -> IndexedRepo:
    """Build a small real repository, index it (store + text index) and return layout + settings."""

    def build(files: dict[str, str] | None = None) -> tuple[RepoLayout, Settings]:
        from engine.index.indexer import index_repository

        root = make_repo(files or {"app/auth.py": AUTH_PY, "app/routes.py": ROUTES_PY, "README.md": README})
        layout = RepoLayout.for_path(root)
        settings = load_settings(layout.root).settings
        index_repository(layout, settings)
        return layout, settings

    return build
