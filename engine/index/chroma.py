"""The one Chroma client of this process, and the names of the collections semfora keeps in it.

Owns choosing the store (a server at ``search.chroma_url`` / ``SEMFORA_CHROMA_URL``, else the
embedded ``PersistentClient`` under the repository's cache dir), opening it once per process with
one set of settings (chromadb refuses a second client on a path with other settings), bounding a
server's connect time, and naming collections: one per working tree and model identity, so two
clones on one server never share vectors. The vector index and session memory both open Chroma
here and nowhere else. It never embeds text and never reads index.db.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from engine.config import Settings
from engine.errors import ServiceUnavailable
from engine.repo.layout import RepoLayout

log = logging.getLogger("semfora.index.chroma")

# Seconds a Chroma server gets to answer the first heartbeat before vectors are declared off.
CHROMA_CONNECT_TIMEOUT = 5.0
# Seconds any later Chroma server call may take (an upsert of a full batch included).
CHROMA_HTTP_TIMEOUT = 60.0
# After a server failed to answer, calls in this process skip it for this long instead of each
# waiting out the connect timeout again (a turn searches several times); then it is retried.
SERVER_RETRY_SECONDS = 15.0
# Chroma's collection-name rules (1.x): 3-512 characters of [A-Za-z0-9._-], alphanumeric at
# both ends. Our names stay far below the limit; the readable parts are capped so an absurd
# path or model name cannot push the digest (the part that makes a name unique) past it.
MAX_NAME_PART = 120
NAME_DIGEST_CHARS = 16
# What a collection holds: the chunks of the code index (turn memory keeps its vectors in a file).
CHUNKS = "chunks"


class ChromaUnavailable(ServiceUnavailable):
    """The configured Chroma server does not answer, or the embedded store cannot open (exit 3)."""

    code = "CHROMA_UNAVAILABLE"


@dataclass(frozen=True)
class ChromaStore:
    """Where vectors live: a server URL, or an embedded directory."""

    url: str | None
    path: Path | None
    # The repository an embedded store belongs to (for the damaged-store check); not part of its identity.
    layout: RepoLayout | None = field(default=None, compare=False, hash=False, repr=False)

    @property
    def is_server(self) -> bool:
        return self.url is not None

    @property
    def key(self) -> str:
        """What index.db records, so a switch between stores is noticed."""
        return f"server:{self.url}" if self.url else f"embedded:{self.path}"

    @property
    def label(self) -> str:
        return f"the Chroma server at {self.url}" if self.url else f"the embedded store at {self.path}"


def chroma_store(layout: RepoLayout, settings: Settings | None) -> ChromaStore:
    """The store the configuration names (``search.chroma_url``, which carries ``SEMFORA_CHROMA_URL``)."""
    url = settings.search.chroma_url if settings else None
    if url:
        # One spelling per server: `HOST:PORT` and `http://HOST:PORT/` name the same store (a
        # difference would be taken for a switch of store, and the collection checked id by id).
        url = url.strip().rstrip("/")
        return ChromaStore(url if "://" in url else f"http://{url}", None)
    return ChromaStore(None, layout.chroma_dir, layout)


def label_of(key: str | None) -> str:
    """A recorded store key in words (``server:URL`` or ``embedded:PATH``)."""
    if not key:
        return "an unknown store"
    kind, _, where = key.partition(":")
    return f"the Chroma server at {where}" if kind == "server" else f"the embedded store at {where}"


_clients: dict[str, Any] = {}
_failures: dict[str, tuple[float, str]] = {}
_lock = threading.Lock()


def chroma_client(store: ChromaStore) -> Any:
    """This process's client for ``store``, opened on first use; raises ChromaUnavailable."""
    with _lock:
        client = _clients.get(store.key)
        if client is not None:
            return client
        failed = _failures.get(store.key)
        if failed is not None and time.monotonic() - failed[0] < SERVER_RETRY_SECONDS:
            raise ChromaUnavailable(failed[1])
        try:
            client = _open_server(store.url) if store.url else _open_embedded(store)
        except ChromaUnavailable as exc:
            _failures[store.key] = (time.monotonic(), exc.message)
            raise
        _failures.pop(store.key, None)
        _clients[store.key] = client
        return client


def forget_client(store: ChromaStore, reason: str = "") -> None:
    """Drop a client whose server stopped answering; the next call reconnects (after a pause)."""
    with _lock:
        if _clients.pop(store.key, None) is not None and store.is_server:
            _failures[store.key] = (time.monotonic(), reason or f"{store.label} stopped answering")


def _chroma_settings() -> Any:
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    from chromadb.config import Settings as ChromaSettings

    return ChromaSettings(anonymized_telemetry=False)


def _open_embedded(store: ChromaStore) -> Any:
    """The one place an embedded PersistentClient is opened, and where a damaged store is checked."""
    import chromadb

    path = store.path
    assert path is not None
    if store.layout is not None:
        from engine.index.chroma_health import ensure_chroma_usable

        ensure_chroma_usable(store.layout)  # a damaged chroma.sqlite3 is set aside, and rebuilt by `index`
    path.mkdir(parents=True, exist_ok=True)
    try:
        return chromadb.PersistentClient(path=str(path), settings=_chroma_settings())
    except Exception as exc:  # chromadb raises bare exceptions (rust errors) for an unusable store
        raise ChromaUnavailable(f"the embedded Chroma store at {path} does not open: {exc}") from exc


def _open_server(url: str) -> Any:
    """An HttpClient whose construction and calls are bounded in time (chroma's own client waits forever)."""
    import chromadb
    import httpx

    parsed = urlparse(url if "://" in url else f"http://{url}")
    host = parsed.hostname or "127.0.0.1"
    port = parsed.port or (443 if parsed.scheme == "https" else 8000)
    box: dict[str, Any] = {}

    def connect() -> None:
        try:
            client = chromadb.HttpClient(
                host=host, port=port, ssl=parsed.scheme == "https", settings=_chroma_settings()
            )
            session = getattr(getattr(client, "_server", None), "_session", None)
            if isinstance(session, httpx.Client):
                session.timeout = httpx.Timeout(CHROMA_HTTP_TIMEOUT, connect=CHROMA_CONNECT_TIMEOUT)
            client.heartbeat()
            box["client"] = client
        except Exception as exc:  # chromadb raises bare exceptions for connection problems
            box["error"] = exc

    worker = threading.Thread(target=connect, name="chroma-connect", daemon=True)
    worker.start()
    worker.join(CHROMA_CONNECT_TIMEOUT)
    if "client" in box:
        return box["client"]
    reason = box.get("error") or f"no answer within {CHROMA_CONNECT_TIMEOUT:.0f}s"
    raise ChromaUnavailable(f"Chroma server at {url} is not reachable: {reason}")


def work_tree_identity(layout: RepoLayout) -> str:
    """The canonical path of the working tree: two clones of one remote are two identities."""
    return str(layout.root.resolve())


def _slug(text: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-_")
    return slug[:MAX_NAME_PART].strip("-_") or "x"


def collection_name(layout: RepoLayout, model: str, kind: str = CHUNKS) -> str:
    """``sf-<kind>-<tree>-<model>-<digest>``: the digest covers the full tree path and model identity."""
    digest = hashlib.sha256(f"{work_tree_identity(layout)}\x00{model}\x00{kind}".encode()).hexdigest()
    return f"sf-{kind}-{_slug(layout.root.name)}-{_slug(model)}-{digest[:NAME_DIGEST_CHARS]}"


def reset_clients() -> None:
    """Forget every client and failure (tests, and a process that switches stores)."""
    with _lock:
        _clients.clear()
        _failures.clear()
