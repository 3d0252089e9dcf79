"""The vector index: chunk embeddings in ChromaDB, built in the background and resumable.

Owns the Chroma client choice (embedded ``PersistentClient`` or ``HttpClient`` for a
server), one collection per repository and embedding model, and the ``vector_state``
table in index.db recording which chunk versions are embedded with which model.
It never chunks files (pipeline does) and never blocks FTS or symbols.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from engine.config import Settings
from engine.errors import ServiceUnavailable
from engine.index import fts
from engine.index.embeddings import Embedder, EmbedderChoice, choose_embedder
from engine.policy.paths import is_test_path
from engine.store.layout import RepoLayout

log = logging.getLogger("semfora.index.vectors")

ProgressFn = Callable[[str, int, int], None]

# Candidates fetched from the vector index per query before fusion.
DEFAULT_VECTOR_CANDIDATES = 50
# Seconds a Chroma server gets to answer the first heartbeat before vectors are declared off.
CHROMA_CONNECT_TIMEOUT = 5.0
# Seconds any later Chroma server call may take (an upsert of a full batch included).
CHROMA_HTTP_TIMEOUT = 60.0


class ChromaUnavailable(ServiceUnavailable):
    """The configured Chroma server does not answer (exit 3)."""

    code = "CHROMA_UNAVAILABLE"


@dataclass(frozen=True)
class VectorReport:
    enabled: bool
    provider: str  # provider:model actually used, or the requested spec when off
    reason: str  # why vectors are off, or "" when on
    embedded: int = 0
    deleted: int = 0
    pending: int = 0  # chunks still not embedded (after a cancel or a failure)
    total: int = 0
    reembedded_all: bool = False
    cancelled: bool = False
    seconds: float = 0.0
    message: str = ""


def _client(layout: RepoLayout, settings: Settings) -> Any:
    """Embedded PersistentClient under the cache dir, or HttpClient when a server URL is set."""
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    chroma_settings = ChromaSettings(anonymized_telemetry=False)
    url = settings.search.chroma_url or os.environ.get("SEMFORA_CHROMA_URL")
    if url:
        parsed = urlparse(url if "://" in url else f"http://{url}")
        host = parsed.hostname or "127.0.0.1"
        port = parsed.port or (443 if parsed.scheme == "https" else 8000)
        return _http_client(chromadb, url, host, port, parsed.scheme == "https", chroma_settings)
    from engine.index.chroma_health import ensure_chroma_usable

    ensure_chroma_usable(layout)  # a damaged chroma.sqlite3 is set aside, and rebuilt by `index`
    layout.chroma_dir.mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(layout.chroma_dir), settings=chroma_settings)


def _http_client(chromadb: Any, url: str, host: str, port: int, ssl: bool, chroma_settings: Any) -> Any:
    """An HttpClient whose construction and calls are bounded in time (chroma's own client waits forever)."""
    import httpx

    box: dict[str, Any] = {}

    def connect() -> None:
        try:
            client = chromadb.HttpClient(host=host, port=port, ssl=ssl, settings=chroma_settings)
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


def collection_name(layout: RepoLayout, spec: str) -> str:
    """One collection per repository and embedding model, within Chroma's name rules."""
    digest = hashlib.sha256(f"{layout.repo_id}\x00{spec}".encode()).hexdigest()[:12]
    model = re.sub(r"[^A-Za-z0-9_-]+", "-", spec).strip("-")[:40]
    return f"sf-{model}-{digest}"


def embed_text(row: fts.ChunkRow) -> str:
    """What a chunk looks like to the embedder: where it is, what it is called, then its text."""
    head = row.file + (f" {row.qualified_name}" if row.qualified_name else "")
    return "\n".join(x for x in (head, row.sigdoc, row.body) if x)


def _meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM text_meta WHERE key=?", (key,)).fetchone()
    return None if row is None else str(row[0])


def _set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute("INSERT OR REPLACE INTO text_meta VALUES (?, ?)", (key, value))


class VectorIndexer:
    """Embeds the chunks not yet embedded with the current model; safe to stop and rerun."""

    def __init__(
        self, layout: RepoLayout, settings: Settings, *, choice: EmbedderChoice | None = None
    ) -> None:
        self.layout = layout
        self.settings = settings
        self._choice = choice

    def run(self, progress: ProgressFn | None = None, cancel: threading.Event | None = None) -> VectorReport:
        started = time.perf_counter()
        choice = self._choice or choose_embedder(self.settings)
        if choice.embedder is None:
            return VectorReport(False, choice.requested, choice.reason, message=choice.reason)
        embedder = choice.embedder
        try:
            client = _client(self.layout, self.settings)
        except ChromaUnavailable as exc:
            return VectorReport(False, embedder.spec, exc.message, message=exc.message)
        conn = fts.connect(self.layout.index_db)
        try:
            return self._run(conn, client, embedder, progress, cancel, started)
        finally:
            conn.close()

    def _run(
        self,
        conn: sqlite3.Connection,
        client: Any,
        embedder: Embedder,
        progress: ProgressFn | None,
        cancel: threading.Event | None,
        started: float,
    ) -> VectorReport:
        name = collection_name(self.layout, embedder.spec)
        previous = _meta(conn, "vector_spec")
        previous_collection = _meta(conn, "vector_collection")
        reembed = previous is not None and previous != embedder.spec
        message = ""
        if reembed:
            message = f"embedding model changed from {previous} to {embedder.spec}: re-embedding every chunk"
            log.warning(message)
            if progress is not None:
                progress(message, 0, 0)
            conn.execute("DELETE FROM vector_state")
            if previous_collection and previous_collection != name:
                try:
                    client.delete_collection(previous_collection)
                except Exception as exc:  # a missing collection is not worth failing for
                    log.info("old collection %s not removed: %s", previous_collection, exc)
        elif previous is None and conn.execute("SELECT 1 FROM vector_state LIMIT 1").fetchone():
            conn.execute("DELETE FROM vector_state")
        collection = client.get_or_create_collection(
            name, metadata={"hnsw:space": "cosine"}, embedding_function=None
        )
        if conn.execute("SELECT 1 FROM vector_state LIMIT 1").fetchone() is None and collection.count() > 0:
            # index.db was rebuilt: we no longer know which vectors are current, so start clean.
            client.delete_collection(name)
            collection = client.get_or_create_collection(
                name, metadata={"hnsw:space": "cosine"}, embedding_function=None
            )
        _set_meta(conn, "vector_spec", embedder.spec)
        _set_meta(conn, "vector_collection", name)
        conn.commit()

        orphans = [
            r[0]
            for r in conn.execute(
                "SELECT v.chunk_id FROM vector_state v LEFT JOIN text_chunks c ON c.chunk_id = v.chunk_id "
                "WHERE c.chunk_id IS NULL"
            )
        ]
        batch_limit = max(1, min(embedder.max_batch, int(client.get_max_batch_size())))
        for i in range(0, len(orphans), batch_limit):
            part = orphans[i : i + batch_limit]
            collection.delete(ids=part)
            conn.executemany("DELETE FROM vector_state WHERE chunk_id=?", [(c,) for c in part])
            conn.commit()

        rows = conn.execute(
            "SELECT c.chunk_id, c.file, c.kind FROM text_chunks c LEFT JOIN vector_state v ON v.chunk_id = c.chunk_id "
            "WHERE v.chunk_id IS NULL OR v.content_hash != c.content_hash ORDER BY c.rowid"
        ).fetchall()
        # Most useful first, so an interrupted or still-running build already serves the code:
        # implementation, then prose, then tests.
        rows.sort(key=lambda r: (is_test_path(r[1]), r[2] == "prose"))
        pending = [r[0] for r in rows]
        total = len(pending)
        done = 0
        cancelled = False
        if progress is not None:
            progress(f"embedding {total} chunks with {embedder.spec}", 0, total)
        for i in range(0, total, batch_limit):
            if cancel is not None and cancel.is_set():
                cancelled = True
                break
            ids = pending[i : i + batch_limit]
            by_id = fts.rows_by_chunk_ids(conn, ids)
            present = [by_id[c] for c in ids if c in by_id]
            if not present:
                continue
            try:
                vectors = embedder.embed_documents([embed_text(r) for r in present])
            except ServiceUnavailable as exc:
                reason = f"embedding stopped: {exc.message}"
                log.warning(reason)
                return VectorReport(
                    True,
                    embedder.spec,
                    reason,
                    embedded=done,
                    deleted=len(orphans),
                    pending=total - done,
                    total=fts.chunk_count(conn),
                    reembedded_all=reembed,
                    seconds=round(time.perf_counter() - started, 3),
                    message=reason,
                )
            collection.upsert(
                ids=[r.chunk_id for r in present],
                embeddings=vectors,
                metadatas=[{"file": r.file, "start_line": r.start_line} for r in present],
            )
            conn.executemany(
                "INSERT OR REPLACE INTO vector_state VALUES (?, ?)",
                [(r.chunk_id, r.content_hash) for r in present],
            )
            conn.commit()
            done += len(present)
            if progress is not None:
                progress(f"embedding chunks with {embedder.spec}", done, total)
        return VectorReport(
            True,
            embedder.spec,
            "",
            embedded=done,
            deleted=len(orphans),
            pending=total - done,
            total=fts.chunk_count(conn),
            reembedded_all=reembed,
            cancelled=cancelled,
            seconds=round(time.perf_counter() - started, 3),
            message=message,
        )


class VectorSearcher:
    """Nearest chunks for a query; keeps the client, collection and embedder warm per process."""

    _cache: dict[tuple[str, str], VectorSearcher] = {}
    _cache_lock = threading.Lock()

    def __init__(self, layout: RepoLayout, settings: Settings, choice: EmbedderChoice) -> None:
        self.layout = layout
        self.settings = settings
        self.choice = choice
        self._collection: Any = None
        self._lock = threading.Lock()

    @classmethod
    def for_repo(cls, layout: RepoLayout, settings: Settings) -> VectorSearcher:
        key = (str(layout.root), f"{settings.search.embedding}|{settings.search.chroma_url}")
        with cls._cache_lock:
            found = cls._cache.get(key)
            if found is None:
                found = cls(layout, settings, choose_embedder(settings))
                cls._cache[key] = found
            return found

    @property
    def enabled(self) -> bool:
        return self.choice.enabled

    @property
    def status(self) -> str:
        return f"vectors on ({self.choice.embedder.spec})" if self.choice.embedder else self.choice.reason

    def _open(self) -> Any:
        with self._lock:
            if self._collection is None and self.choice.embedder is not None:
                conn = fts.connect(self.layout.index_db)
                try:
                    spec = _meta(conn, "vector_spec")
                    name = _meta(conn, "vector_collection")
                finally:
                    conn.close()
                if spec != self.choice.embedder.spec or not name:
                    return None  # not built yet with this model
                client = _client(self.layout, self.settings)
                self._collection = client.get_or_create_collection(
                    name, metadata={"hnsw:space": "cosine"}, embedding_function=None
                )
            return self._collection

    def ready(self) -> bool:
        """Whether a vector index built with the current model exists for this repository."""
        return self.choice.embedder is not None and self._open() is not None

    def query(self, text: str, limit: int = DEFAULT_VECTOR_CANDIDATES) -> list[tuple[str, float]]:
        """``(chunk_id, distance)`` nearest first; empty when vectors are off or not built."""
        embedder = self.choice.embedder
        if embedder is None:
            return []
        collection = self._open()
        if collection is None:
            return []
        vector = embedder.embed_query(text)
        count = collection.count()
        if count == 0:
            return []
        found = collection.query(
            query_embeddings=[vector], n_results=min(limit, count), include=["distances"]
        )
        ids = found["ids"][0]
        distances = found["distances"][0] if found.get("distances") else [0.0] * len(ids)
        return list(zip(ids, (float(d) for d in distances), strict=False))


@dataclass(frozen=True)
class VectorStatus:
    """What the status line and `semfora doctor` say about vectors."""

    enabled: bool
    provider: str
    reason: str
    embedded: int
    total: int

    @property
    def text(self) -> str:
        if not self.enabled:
            return f"vectors off: {self.reason}"
        return f"vectors {self.provider}: {self.embedded}/{self.total} chunks embedded"


def vector_status(
    layout: RepoLayout, settings: Settings, *, choice: EmbedderChoice | None = None
) -> VectorStatus:
    """Provider in use (or why vectors are off) and how much of the index is embedded. Never raises."""
    picked = choice or choose_embedder(settings)
    conn = fts.connect(layout.index_db)
    try:
        total = fts.chunk_count(conn)
        spec = _meta(conn, "vector_spec")
        embedded = 0
        if picked.embedder is not None and spec == picked.embedder.spec:
            embedded = int(
                conn.execute(
                    "SELECT COUNT(*) FROM text_chunks c JOIN vector_state v ON v.chunk_id = c.chunk_id "
                    "AND v.content_hash = c.content_hash"
                ).fetchone()[0]
            )
    finally:
        conn.close()
    if picked.embedder is None:
        return VectorStatus(False, picked.requested, picked.reason, 0, total)
    return VectorStatus(True, picked.embedder.spec, "", embedded, total)
