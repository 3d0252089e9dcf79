"""The vector index: chunk embeddings in ChromaDB, built in the background, resumable and verified.

Owns the ``vector_state`` table in index.db (which chunk versions are embedded, with which model,
in which store and collection), keeping that record true to the collection (counts and a sample of
ids checked on every run, what is missing re-embedded and reported), and nearest-chunk queries.
The Chroma client and collection names come from ``engine.index.chroma``. It never chunks files
(pipeline does) and never blocks FTS or symbols; search degrades without it (hybrid.py).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.config import Settings
from engine.errors import ConfigError, SemforaError, ServiceUnavailable
from engine.index import fts
from engine.index.chroma import (
    ChromaStore,
    ChromaUnavailable,
    chroma_client,
    chroma_store,
    collection_name,
    forget_client,
    label_of,
)
from engine.index.chroma_health import CHROMA_DB, store_problem
from engine.index.chunk_source import chunk_texts
from engine.index.embeddings import (
    OFF_KINDS,
    Embedder,
    EmbedderChoice,
    choose_embedder,
    model_identity,
    provider_kind,
)
from engine.policy.paths import is_test_path
from engine.repo.layout import RepoLayout
from engine.words import plural

__all__ = ["ChromaUnavailable", "VectorIndexer", "VectorReport", "VectorSearcher", "vector_status"]

log = logging.getLogger("semfora.index.vectors")

ProgressFn = Callable[[str, int, int], None]

# Candidates fetched from the vector index per query before fusion.
DEFAULT_VECTOR_CANDIDATES = 50
# Recorded ids checked against the collection on every run when the counts agree: enough that a
# store replaced under us (same count, other vectors) is caught, cheap on a 50,000-chunk index.
VERIFY_SAMPLE = 64
# Ids (with metadata) fetched per page when the record and the collection must be reconciled.
RECONCILE_PAGE = 5000
# What search says, once, when vectors are configured but this repository has none yet.
NOT_BUILT = "the vector index is not built yet (run `semfora index`)"
# Below this share of chunks embedded, search says the vector index is partial. Above it the gap
# is the few chunks of files just edited, which the app's watcher is embedding again: not news.
PARTIAL_NOTICE_SHARE = 0.99
# What search says when the index holds another model's vectors (search.embedding was changed).
OTHER_MODEL = (
    "the vector index was built with {built}, not {wanted} (search.embedding changed); run "
    "`semfora index` to embed with {wanted}, or set search.embedding back to use the vectors it has"
)


def not_built(problem: str) -> bool:
    """Whether ``problem`` says there are no vectors of this model yet (VECTORS_NOT_BUILT)."""
    return problem == NOT_BUILT or problem.startswith(OTHER_MODEL.split("{", 1)[0])


# The progress phase of the embedding pass (COMMON contract 3: one human name per phase). It once
# changed between calls ("embedding 1354 chunks with M", then "embedding chunks with M"), and the
# CLI drew two bars, one stuck at 0.
PHASE_EMBED = "embedding"
# An embedded collection's HNSW files are persisted only at a sync point, once
# ``hnsw:sync_threshold`` vectors changed since the last one (Chroma's default is 1,000). Until the
# first, every process that opens the store rebuilds those files from Chroma's log and writes them,
# ``length.bin`` from a buffer it never clears (chroma-core/chroma#7688, #7463): a reader holding an
# API key, such as the app or `ask`, could write the key to disk. A store persisted once is only
# loaded by readers, which replay later changes in memory. So a collection starts with a sync point
# after two changes (Chroma's smallest), and the vector writer, a child started without
# credentials, gives it the default back once that first sync point is made (``_FirstSync``): a sync
# every two changes made writing 44,000 vectors 72% slower.
FIRST_SYNC_THRESHOLD = 2
SYNC_THRESHOLD = 1000
# Distance metric and first sync threshold of every collection semfora creates.
COLLECTION_METADATA = {"hnsw:space": "cosine", "hnsw:sync_threshold": FIRST_SYNC_THRESHOLD}
# text_meta: the store and collection whose first sync point the writer made.
SYNCED_KEY = "vector_synced"


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
    missing: int | None = 0  # recorded as embedded but absent from the store: re-embedded this run
    # (None: the store was not looked at, `index --no-vectors`)
    store: str = ""  # where the vectors live (server URL or embedded path)
    current: int = 0  # chunks whose present text has a vector of ``provider`` after this run


def embed_text(row: fts.ChunkRow, body: str) -> str:
    """What a chunk looks like to the embedder: where it is, what it is called, then its text
    (``body``, read from the file by ``chunk_source.chunk_texts``)."""
    head = row.file + (f" {row.qualified_name}" if row.qualified_name else "")
    return "\n".join(x for x in (head, row.sigdoc, body) if x)


def _meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM text_meta WHERE key=?", (key,)).fetchone()
    return None if row is None else str(row[0])


def _set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute("INSERT OR REPLACE INTO text_meta VALUES (?, ?)", (key, value))


def _open_collection(client: Any, name: str) -> Any:
    return client.get_or_create_collection(name, metadata=COLLECTION_METADATA, embedding_function=None)


def _sync_threshold(collection: Any) -> int:
    hnsw = (getattr(collection, "configuration", None) or {}).get("hnsw") or {}
    return int(hnsw.get("sync_threshold") or SYNC_THRESHOLD)


class _FirstSync:
    """Brings an embedded collection to its first sync point, then gives it Chroma's default threshold.

    Needed by a collection semfora just created (it still has ``FIRST_SYNC_THRESHOLD``) and by one
    whose first sync point index.db does not record (made by an earlier semfora). A threshold
    change applies to clients opened afterwards, hence the reopen after each.
    """

    def __init__(self, conn: sqlite3.Connection, store: ChromaStore, name: str, collection: Any) -> None:
        self.conn, self.store, self.name = conn, store, name
        self.mark = f"{store.key}|{collection.id}"
        self.needed = not store.is_server and (
            _sync_threshold(collection) == FIRST_SYNC_THRESHOLD or _meta(conn, SYNCED_KEY) != self.mark
        )
        self.changes = 0  # vectors this process wrote under the first threshold

    def begin(self, collection: Any) -> Any:
        """The collection to write to: under the first threshold while it lacks its sync point."""
        if not self.needed or _sync_threshold(collection) == FIRST_SYNC_THRESHOLD:
            return collection
        collection.modify(configuration={"hnsw": {"sync_threshold": FIRST_SYNC_THRESHOLD}})
        return self._reopen()

    def wrote(self, count: int, collection: Any) -> Any:
        """After writing ``count`` vectors: once the sync point is made, the default threshold."""
        if not self.needed:
            return collection
        self.changes += count
        if self.changes < FIRST_SYNC_THRESHOLD:
            return collection
        self._settle(collection)
        return self._reopen()

    def finish(self, collection: Any) -> None:
        """At the end of a run that made too few changes (none, or one vector in all): write one
        stored vector back unchanged until the sync point is made."""
        if not self.needed or not collection.count():
            return
        got = collection.get(limit=1, include=["embeddings", "metadatas"])
        while self.changes < FIRST_SYNC_THRESHOLD:
            collection.upsert(ids=got["ids"], embeddings=got["embeddings"], metadatas=got["metadatas"])
            self.changes += 1
        self._settle(collection)

    def _settle(self, collection: Any) -> None:
        collection.modify(configuration={"hnsw": {"sync_threshold": SYNC_THRESHOLD}})
        _set_meta(self.conn, SYNCED_KEY, self.mark)
        self.conn.commit()
        self.needed = False

    def _reopen(self) -> Any:
        reopen_stores()
        return _open_collection(chroma_client(self.store), self.name)


def _existing_collection(client: Any, name: str) -> Any | None:
    """The collection called ``name``, or None when the store has none by that name."""
    from chromadb.errors import NotFoundError

    try:
        return client.get_collection(name, embedding_function=None)
    except NotFoundError:
        return None
    except ValueError as exc:  # some chromadb 1.x releases say "does not exist" with a ValueError
        if "does not exist" in str(exc):
            return None
        raise ChromaUnavailable(f"the Chroma store failed: {exc}") from exc
    except Exception as exc:  # connection failures surface as assorted chromadb/httpx types
        raise ChromaUnavailable(f"the Chroma store stopped answering: {exc}") from exc


def _all_ids(collection: Any) -> dict[str, str | None]:
    """Every id in ``collection`` with the content hash stored beside it (None for older vectors)."""
    have: dict[str, str | None] = {}
    offset = 0
    while True:
        page = collection.get(include=["metadatas"], limit=RECONCILE_PAGE, offset=offset)
        ids = page["ids"]
        metas = page.get("metadatas") or [None] * len(ids)
        for cid, meta in zip(ids, metas, strict=False):
            have[cid] = (meta or {}).get("hash")
        if len(ids) < RECONCILE_PAGE:
            return have
        offset += len(ids)


def verify_record(conn: sqlite3.Connection, collection: Any) -> tuple[int, int]:
    """Make ``vector_state`` true to ``collection``: ``(missing, extra)`` ids found and fixed.

    Cheap when they agree (a count and a sample of ids with their content hashes). Otherwise every
    id is listed: recorded chunks the collection lacks (or holds in another version) leave the
    record, so the run re-embeds them; vectors nobody recorded leave the collection.
    """
    recorded = int(conn.execute("SELECT COUNT(*) FROM vector_state").fetchone()[0])
    actual = int(collection.count())
    if recorded == 0 and actual == 0:
        return 0, 0
    if recorded and actual == recorded:
        sample = conn.execute(
            "SELECT chunk_id, content_hash FROM vector_state ORDER BY random() LIMIT ?", (VERIFY_SAMPLE,)
        ).fetchall()
        got = collection.get(ids=[c for c, _ in sample], include=["metadatas"])
        present = {
            cid: (meta or {}).get("hash")
            for cid, meta in zip(got["ids"], got.get("metadatas") or [None] * len(got["ids"]), strict=False)
        }
        if all(cid in present and present[cid] in (None, h) for cid, h in sample):
            return 0, 0
    have = _all_ids(collection)
    record = dict(conn.execute("SELECT chunk_id, content_hash FROM vector_state").fetchall())
    missing = [cid for cid, h in record.items() if cid not in have or have[cid] not in (None, h)]
    extra = [cid for cid in have if cid not in record]
    conn.executemany("DELETE FROM vector_state WHERE chunk_id=?", [(c,) for c in missing])
    conn.commit()
    for i in range(0, len(extra), RECONCILE_PAGE):
        collection.delete(ids=extra[i : i + RECONCILE_PAGE])
    return len(missing), len(extra)


def _keep_current_vectors(conn: sqlite3.Connection, collection: Any, embedder: Embedder) -> int:
    """Record as embedded the vectors of ``collection`` whose chunk id and content hash are those of
    a chunk now (the rest are removed by ``verify_record``); 0 when none can be trusted (no
    hashes stored, or the model now gives vectors of another dimension)."""
    held = _held_dimension(collection)
    if not held or len(embedder.embed_query("dimension check")) != held:
        return 0
    have = _all_ids(collection)
    current = dict(conn.execute("SELECT chunk_id, content_hash FROM text_chunks").fetchall())
    keep = [(cid, h) for cid, h in have.items() if h is not None and current.get(cid) == h]
    conn.executemany("INSERT OR REPLACE INTO vector_state VALUES (?, ?)", keep)
    conn.commit()
    return len(keep)


class _DimensionChanged(Exception):
    """The embedder's vectors no longer have the dimension of those the collection holds."""

    def __init__(self, now: int, held: int) -> None:
        super().__init__(f"{now} != {held}")
        self.now, self.held = now, held


def _held_dimension(collection: Any) -> int:
    """The dimension of the vectors in ``collection``, 0 when it holds none."""
    got = collection.get(limit=1, include=["embeddings"])
    embeddings = got.get("embeddings")
    if embeddings is None or len(embeddings) == 0:
        return 0
    return len(embeddings[0])


def _move_collection(client: Any, old: str, new: str) -> int:
    """Copy the vectors of collection ``old`` into ``new`` and drop ``old`` (same model, new name)."""
    source = _existing_collection(client, old)
    if source is None:
        return 0
    target = _open_collection(client, new)
    moved = 0
    offset = 0
    batch = max(1, min(RECONCILE_PAGE, int(client.get_max_batch_size())))
    while True:
        page = source.get(include=["embeddings", "metadatas"], limit=batch, offset=offset)
        ids = page["ids"]
        if len(ids):
            target.upsert(ids=ids, embeddings=page["embeddings"], metadatas=page["metadatas"])
            moved += len(ids)
        if len(ids) < batch:
            break
        offset += len(ids)
    client.delete_collection(old)
    return moved


class VectorIndexer:
    """Embeds the chunks not yet embedded with the current model; safe to stop and rerun.

    Every run first checks the record against the collection, so vectors lost with a wiped or
    replaced store (or a switch between embedded and a server) are re-embedded, never trusted.
    """

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
            return self._off(choice.requested, choice.reason)
        embedder = choice.embedder
        store = chroma_store(self.layout, self.settings)
        try:
            client = chroma_client(store)
        except ChromaUnavailable as exc:
            return self._off(embedder.spec, exc.message, store)
        conn = fts.connect(self.layout.index_db)
        try:
            return self._run(conn, store, client, embedder, progress, cancel, started)
        except ChromaUnavailable as exc:
            forget_client(store, exc.message)
            return self._off(embedder.spec, exc.message, store)
        finally:
            conn.close()

    def _off(self, provider: str, reason: str, store: ChromaStore | None = None) -> VectorReport:
        """The report of a run that could not embed: why, and what the index holds all the same
        (it said 0 of 0 chunks, nothing pending, as if there were nothing to embed). With a
        ``store`` (the embedder was there, the store was not) every chunk without a vector of
        ``provider`` is pending; whether the store still holds the others was not seen."""
        conn = fts.connect(self.layout.index_db)
        try:
            model = _meta(conn, "vector_spec")
            mine = store is None or (model is not None and model_identity(model) == provider)
            current = _current_vectors(conn) if model and mine else 0
            total = fts.chunk_count(conn)
        finally:
            conn.close()
        return VectorReport(
            False,
            provider,
            reason,
            pending=total - current if store is not None else 0,
            total=total,
            message=reason,
            missing=None if store is not None else 0,
            store=store.key if store is not None else "",
            current=current,
        )

    def _adopt(
        self, conn: sqlite3.Connection, store: ChromaStore, client: Any, embedder: Embedder, name: str
    ) -> tuple[bool, list[str]]:
        """Bring the record to the current model, store and collection name: ``(reembed_all, messages)``."""
        previous = _meta(conn, "vector_spec")
        previous_collection = _meta(conn, "vector_collection")
        previous_store = _meta(conn, "vector_store") or store.key  # older records named no store
        messages: list[str] = []
        if previous is not None and model_identity(previous) != embedder.spec:
            messages.append(
                f"embedding model changed from {previous} to {embedder.spec}: re-embedding every chunk"
            )
            conn.execute("DELETE FROM vector_state")
            if previous_collection and previous_collection != name and previous_store == store.key:
                try:
                    client.delete_collection(previous_collection)
                except Exception as exc:  # a missing collection is not worth failing for
                    log.info("old collection %s not removed: %s", previous_collection, exc)
            return True, messages
        if previous is None and conn.execute("SELECT 1 FROM vector_state LIMIT 1").fetchone():
            conn.execute("DELETE FROM vector_state")
        if previous_store != store.key:
            messages.append(
                f"vector store changed from {label_of(previous_store)} to {store.label}: "
                "checking which chunks it holds"
            )
        elif previous_collection and previous_collection != name:
            # Same model under another name (an alias, or the per-working-tree naming): keep the vectors.
            moved = _move_collection(client, previous_collection, name)
            log.info("moved %d vectors from collection %s to %s", moved, previous_collection, name)
        return False, messages

    def _run(
        self,
        conn: sqlite3.Connection,
        store: ChromaStore,
        client: Any,
        embedder: Embedder,
        progress: ProgressFn | None,
        cancel: threading.Event | None,
        started: float,
    ) -> VectorReport:
        name = collection_name(self.layout, embedder.spec)
        try:
            reembed, messages = self._adopt(conn, store, client, embedder, name)
            collection = _open_collection(client, name)
            if (
                conn.execute("SELECT 1 FROM vector_state LIMIT 1").fetchone() is None
                and collection.count() > 0
            ):
                # index.db was rebuilt (`--rebuild`, or a damaged one): the collection's own record
                # of each vector's chunk and content hash says which are still current. Starting
                # clean re-embedded every chunk (half an hour on Django) for an unchanged tree.
                kept = _keep_current_vectors(conn, collection, embedder)
                if kept:
                    messages.append(f"the index was rebuilt: kept {kept:,} vectors of unchanged chunks")
                else:
                    client.delete_collection(name)
                    collection = _open_collection(client, name)
            recorded = int(conn.execute("SELECT COUNT(*) FROM vector_state").fetchone()[0])
            missing, extra = verify_record(conn, collection)
            sync = _FirstSync(conn, store, name, collection)
            collection = sync.begin(collection)
        except ChromaUnavailable:
            raise
        except Exception as exc:  # a server that dies mid-run: assorted chromadb/httpx errors
            raise ChromaUnavailable(f"{store.label} stopped answering: {exc}") from exc
        if missing:
            messages.append(
                f"{missing:,} of {recorded:,} embedded chunks were missing from {store.label} "
                "(wiped, replaced or switched): re-embedding them"
            )
        if extra:
            log.info("removed %d vectors of %s that the index did not record", extra, name)
        for message in messages:
            # The report carries it to the user (the CLI prints it once). Not a progress phase:
            # as one it took a row of the CLI's bars, widening their name column until an
            # 80-column terminal lost the counts and the ETA (COMMON contract 3: one name a phase).
            log.info(message)
        _set_meta(conn, "vector_spec", embedder.spec)
        _set_meta(conn, "vector_collection", name)
        _set_meta(conn, "vector_store", store.key)
        conn.commit()

        def embed(collection: Any, sync: _FirstSync, reembed: bool) -> VectorReport:
            return self._embed(
                conn, store, client, collection, sync, embedder, progress, cancel, started, reembed,
                missing, messages,
            )  # fmt: skip

        try:
            try:
                return embed(collection, sync, reembed)
            except _DimensionChanged as changed:
                # Same name, another model behind it (another Ollama, a re-pulled model): its
                # vectors cannot share a collection with the old ones, so all are made again.
                messages.append(
                    f"{embedder.spec} now gives {changed.now}-dimension vectors where the index holds "
                    f"{changed.held}: re-embedding every chunk"
                )
                log.info(messages[-1])
                conn.execute("DELETE FROM vector_state")
                conn.commit()
                client.delete_collection(name)
                fresh = _open_collection(client, name)
                first_sync = _FirstSync(conn, store, name, fresh)
                return embed(first_sync.begin(fresh), first_sync, True)
        except (ChromaUnavailable, ServiceUnavailable):
            raise
        except Exception as exc:  # a server that dies mid-run: assorted chromadb/httpx errors
            raise ChromaUnavailable(f"{store.label} stopped answering: {exc}") from exc

    def _embed(
        self,
        conn: sqlite3.Connection,
        store: ChromaStore,
        client: Any,
        collection: Any,
        sync: _FirstSync,
        embedder: Embedder,
        progress: ProgressFn | None,
        cancel: threading.Event | None,
        started: float,
        reembed: bool,
        missing: int,
        messages: list[str],
    ) -> VectorReport:
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
        expect = getattr(embedder, "expect", None)
        if expect is not None:
            expect(total)
        done = 0
        cancelled = False
        message = "; ".join(messages)

        # Vectors announced so far: readers learn of new vectors while the build runs, not only
        # at its end (a search during a long build said "192 of 1,354 chunks" until it finished,
        # and a build stopped part way by Ollama going was never announced at all).
        announced = [0]

        def announce() -> None:
            # Long-lived readers (the app, the MCP server, the query service) reopen an embedded
            # store when this changes; this process's own client already holds the new vectors.
            generation = str(time.time_ns())
            _set_meta(conn, GENERATION_KEY, generation)
            conn.commit()
            VectorSearcher.note_generation(self.layout, generation, store)
            announced[0] = done

        def stopped(reason: str) -> VectorReport:
            """The build ends early: what it kept, what is left, and how to finish it."""
            if done > announced[0]:
                announce()
            left = total - done
            if left:
                reason = (
                    f"{reason}; {left:,} chunks are not embedded yet: `semfora index` embeds them "
                    "(it resumes where this stopped)"
                )
            log.info(reason)
            return report(reason)

        def report(reason: str = "", **extra: Any) -> VectorReport:
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
                message=reason or message,
                missing=missing,
                store=store.key,
                current=_current_vectors(conn),
                **extra,
            )

        held: int | None = None  # the dimension of the vectors the collection holds (0: empty)
        if progress is not None:
            progress(PHASE_EMBED, 0, total)
        for i in range(0, total, batch_limit):
            if cancel is not None and cancel.is_set():
                cancelled = True
                break
            ids = pending[i : i + batch_limit]
            by_id = fts.rows_by_chunk_ids(conn, ids)
            # A chunk whose file changed since it was indexed has no text now: the next index
            # run replaces it, and it is embedded then.
            texts = chunk_texts(self.layout.root, by_id.values())
            present = [by_id[c] for c in ids if c in by_id and c in texts]
            if not present:
                continue
            try:
                vectors = embedder.embed_documents([embed_text(r, texts[r.chunk_id]) for r in present])
            except ConfigError:
                raise  # a model that cannot load here is the configuration's fault (exit 2)
            except SemforaError as exc:  # Ollama gone, or answering with an error
                sync.finish(collection)
                return stopped(f"embedding stopped: {exc.message}")
            if held is None:
                held = _held_dimension(collection)
            if held and vectors and len(vectors[0]) != held:
                raise _DimensionChanged(len(vectors[0]), held)
            try:
                collection.upsert(
                    ids=[r.chunk_id for r in present],
                    embeddings=vectors,
                    metadatas=[
                        {"file": r.file, "start_line": r.start_line, "hash": r.content_hash} for r in present
                    ],
                )
            # A server that died mid-run, a full disk: assorted chromadb/httpx errors.
            except Exception as exc:
                forget_client(store, str(exc))
                failed = "stopped answering" if store.is_server else "could not be written"
                return stopped(f"{store.label} {failed}: {exc}")
            conn.executemany(
                "INSERT OR REPLACE INTO vector_state VALUES (?, ?)",
                [(r.chunk_id, r.content_hash) for r in present],
            )
            conn.commit()
            collection = sync.wrote(len(present), collection)
            done += len(present)
            if done - announced[0] >= max(batch_limit, total * ANNOUNCE_SHARE):
                announce()
            if progress is not None:
                progress(PHASE_EMBED, done, total)
        if done > announced[0] or orphans or missing or reembed:
            announce()
        sync.finish(collection)
        return report(cancelled=cancelled)


_service_role = [False]


def use_query_service(enabled: bool = True) -> None:
    """Called by one-shot commands (`semfora search`, `context`): ask the shared query service
    (``engine.index.query_service``, through ``engine.index.query_client``) instead of importing chromadb and loading a model here."""
    _service_role[0] = enabled


# text_meta key: changes whenever an index run changes what the vector store holds.
GENERATION_KEY = "vector_generation"
# A build tells readers of its new vectors each time it has embedded this share of its chunks (or
# a batch, if more), not only when it ends: each time makes them reopen an embedded store at their
# next search, so at most 20 reopens per build.
ANNOUNCE_SHARE = 0.05


def vector_generation(layout: RepoLayout) -> str | None:
    """The vector record's generation as index.db holds it now (None: never embedded, or unreadable)."""
    try:
        conn = sqlite3.connect(f"file:{layout.index_db}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:
        return None
    try:
        return _meta(conn, GENERATION_KEY)
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def vectors_expected(layout: RepoLayout, settings: Settings) -> bool:
    """Whether vectors being off now is news to the user: a provider named in the configuration,
    or ``auto`` for an index that holds vectors (Ollama answered when it was built). ``none``, and
    ``auto`` on a machine that never had an embedder, are a choice, not worth a warning per search."""
    _spec, kind, _arg = provider_kind(settings)
    if kind in OFF_KINDS:
        return False
    if kind != "auto":
        return True
    try:
        conn = sqlite3.connect(f"file:{layout.index_db}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:
        return False
    try:
        return conn.execute("SELECT 1 FROM vector_state LIMIT 1").fetchone() is not None
    except sqlite3.Error:
        return False
    finally:
        conn.close()


def reopen_stores() -> None:
    """Forget every Chroma client and searcher: the next query reopens the store from disk."""
    import contextlib

    from engine.index.chroma import reset_clients

    VectorSearcher.forget_all()
    reset_clients()
    with contextlib.suppress(ImportError):
        from chromadb.api.shared_system_client import SharedSystemClient

        SharedSystemClient.clear_system_cache()


# A process that found no embedding provider (Ollama not running yet) asks again after this long:
# the app and the MCP server live for hours and kept "vectors off" from their start. A dead Ollama
# costs nothing in between (its circuit breaker answers at once); a configuration that turns
# vectors off is never asked again.
VECTORS_RECHECK_SECONDS = 30.0


def _worth_another_look(searcher: VectorSearcher | RemoteVectorSearcher) -> bool:
    """Whether a cached searcher with no provider should choose again (the provider may be up now)."""
    if searcher.choice.enabled or provider_kind(searcher.settings)[1] in OFF_KINDS:
        return False
    return time.monotonic() - searcher.chosen_at >= VECTORS_RECHECK_SECONDS


def _searcher_key(layout: RepoLayout, settings: Settings) -> tuple[str, str]:
    """One searcher per process for a repository, an embedding model, the Ollama that serves it and
    a vector store. The host is part of it because the query service outlives the shell that started
    it: a later command naming another OLLAMA_HOST had its queries embedded by the old one."""
    _spec, kind, _arg = provider_kind(settings)
    host = settings.ollama.host if kind in ("ollama", "auto") else ""
    return (str(layout.root), f"{settings.search.embedding}|{host}|{chroma_store(layout, settings).key}")


class VectorSearcher:
    """Nearest chunks for a query; keeps the collection and embedder warm per process.

    ``unavailable()`` says, without raising, why vectors cannot serve this query (not built, store
    unreachable, collection wiped): search then answers from full text and symbols with one warning.
    """

    _cache: dict[tuple[str, str], VectorSearcher] = {}
    _cache_lock = threading.Lock()
    # Per index.db: the vector generation and embedded store file this process's clients reflect.
    _generations: dict[str, tuple[str | None, tuple[int, int] | None]] = {}

    def __init__(self, layout: RepoLayout, settings: Settings, choice: EmbedderChoice) -> None:
        self.layout = layout
        self.settings = settings
        self.choice = choice
        self.store = chroma_store(layout, settings)
        self._collection: Any = None
        self._lock = threading.Lock()
        self.notice = ""  # a partial index: usable, but the user should know
        self.chosen_at = time.monotonic()

    @classmethod
    def for_repo(cls, layout: RepoLayout, settings: Settings) -> VectorSearcher:
        if _service_role[0]:
            from engine.index.query_client import service_enabled

            if service_enabled(settings):
                return RemoteVectorSearcher.for_repo(layout, settings)  # type: ignore[return-value]
        key = _searcher_key(layout, settings)
        cls._follow_other_processes(layout, settings)
        with cls._cache_lock:
            found = cls._cache.get(key)
            if found is None or _worth_another_look(found):
                found = cls(layout, settings, choose_embedder(settings))
                cls._cache[key] = found
            return found

    @classmethod
    def _follow_other_processes(cls, layout: RepoLayout, settings: Settings) -> None:
        """Reopen an embedded store another process has embedded into, deleted or replaced since
        this one opened it.

        An embedded Chroma keeps its index in this process's memory, so vectors another process
        adds (`semfora index` in a second terminal while the app runs) stay invisible until the
        store is reopened, and a deleted `chroma/` went on answering from memory (or failing as if
        a server had stopped) until the next index run; a server answers from its own state and
        needs none of this.
        """
        store = chroma_store(layout, settings)
        state = (vector_generation(layout), None if store.is_server else _store_mark(store))
        db = str(layout.index_db)
        with cls._cache_lock:
            known = db in cls._generations
            seen = cls._generations.get(db)
            cls._generations[db] = state
        if known and seen != state and not store.is_server:
            log.info("vectors changed on disk (%s -> %s): reopening the store", seen, state)
            reopen_stores()
            with cls._cache_lock:
                cls._generations[db] = state

    @classmethod
    def note_generation(cls, layout: RepoLayout, generation: str, store: ChromaStore) -> None:
        """This process wrote ``generation`` through its own client: nothing to reopen for it."""
        with cls._cache_lock:
            mark = None if store.is_server else _store_mark(store)
            cls._generations[str(layout.index_db)] = (generation, mark)

    @classmethod
    def forget_all(cls) -> None:
        with cls._cache_lock:
            cls._cache.clear()
            cls._generations.clear()

    @property
    def enabled(self) -> bool:
        return self.choice.enabled

    @property
    def status(self) -> str:
        embedder = self.choice.embedder
        return f"vectors on ({embedder.spec})" if embedder else f"vectors are off ({self.choice.reason})"

    def _record(self) -> tuple[str | None, str | None, str | None, int, int, int]:
        """``(spec, collection, store, recorded, current, total)``: ``current`` of the ``total``
        chunks have a vector of their present text."""
        conn = fts.connect(self.layout.index_db)
        try:
            count = int(conn.execute("SELECT COUNT(*) FROM vector_state").fetchone()[0])
            total = fts.chunk_count(conn)
            return (
                _meta(conn, "vector_spec"),
                _meta(conn, "vector_collection"),
                _meta(conn, "vector_store"),
                count,
                # The join costs ~50 ms on a 45,000-chunk index: only when the counts say part is missing.
                _current_vectors(conn) if count < total else total,
                total,
            )
        finally:
            conn.close()

    def _open(self) -> tuple[Any, str]:
        """The collection to query, or None with the reason it cannot be used. May raise ChromaUnavailable."""
        with self._lock:
            if self._collection is not None:
                return self._collection, ""
            embedder = self.choice.embedder
            if embedder is None:
                return None, self.choice.reason
            spec, name, store_key, recorded, current, total = self._record()
            if spec is not None and recorded and model_identity(spec) != embedder.spec:
                return None, OTHER_MODEL.format(built=spec, wanted=embedder.spec)
            if spec is None or not name or recorded == 0:
                return None, NOT_BUILT
            if store_key and store_key != self.store.key:
                return None, (
                    f"the vector index was built in {label_of(store_key)}, not {self.store.label}; "
                    "run `semfora index` to embed into it"
                )
            if not store_present(self.store.key):
                # Deleted: opening a client would make an empty store there and find nothing.
                return None, self._missing(recorded, deleted=True)
            client = chroma_client(self.store)
            try:
                collection = _existing_collection(client, name)
                count = int(collection.count()) if collection is not None else 0
            except ChromaUnavailable:
                forget_client(self.store)
                raise
            except Exception as exc:  # connection failures surface as assorted chromadb/httpx types
                forget_client(self.store, str(exc))
                raise ChromaUnavailable(f"{self.store.label} stopped answering: {exc}") from exc
            if collection is None or count == 0:
                return None, self._missing(recorded)
            if count < recorded:
                self.notice = (
                    f"only {count:,} of {recorded:,} embedded chunks are in {self.store.label}; "
                    "run `semfora index` to re-embed the rest"
                )
            elif current < total * PARTIAL_NOTICE_SHARE:
                self.notice = (
                    f"the vector index covers {current:,} of {total:,} chunks (a vector build was "
                    "interrupted or skipped, or is running); `semfora index` embeds the rest"
                )
            self._collection = collection
            return collection, ""

    def _missing(self, recorded: int, *, deleted: bool = False) -> str:
        if deleted:
            return (
                f"{self.store.label} was deleted ({plural(recorded, 'chunk', grouped=True)} "
                f"{'was' if recorded == 1 else 'were'} embedded there); "
                "run `semfora index` to re-embed them"
            )
        return (
            f"the vector collection is missing from {self.store.label} ({recorded:,} chunks were "
            "embedded; the store was wiped or replaced); run `semfora index` to re-embed them"
        )

    def unavailable(self) -> str:
        """Why vector search cannot run now ("" when it can). Never raises."""
        try:
            _collection, reason = self._open()
        except ChromaUnavailable as exc:
            return exc.message
        return reason

    def ready(self) -> bool:
        """Whether a vector index built with the current model is there to query."""
        return not self.unavailable()

    def query(self, text: str, limit: int = DEFAULT_VECTOR_CANDIDATES) -> list[tuple[str, float]]:
        """``(chunk_id, distance)`` nearest first; empty when vectors are off or not built.

        Raises ChromaUnavailable when the store stops answering (the caller degrades).
        """
        embedder = self.choice.embedder
        if embedder is None:
            return []
        collection, _reason = self._open()
        if collection is None:
            return []
        vector = embedder.embed_query(text)
        try:
            try:
                found = collection.query(query_embeddings=[vector], n_results=limit, include=["distances"])
            except Exception as exc:
                if not _collection_gone(exc):
                    raise
                # Made again under its name since we opened it (`semfora index --rebuild`, or a model
                # switched away and back, on a server): open it by name once more.
                with self._lock:
                    self._collection = None
                collection, reason = self._open()
                if collection is None:
                    raise ChromaUnavailable(reason) from exc
                found = collection.query(query_embeddings=[vector], n_results=limit, include=["distances"])
        except ChromaUnavailable:
            raise
        except Exception as exc:  # a stopped server or a collection deleted under us
            if "dimension" in str(exc).lower():
                # The store answered: the model behind the same name now gives other vectors.
                raise ChromaUnavailable(
                    f"the query vector of {embedder.spec} does not fit the index ({exc}); run "
                    "`semfora index`: it re-embeds every chunk with the model as it is now"
                ) from exc
            with self._lock:
                self._collection = None
            if _collection_gone(exc):
                # The store answered: our collection went (a wiped or replaced store). Not a server
                # to pause for, and not "stopped answering": the next search finds it missing too.
                raise ChromaUnavailable(self._missing(self._record()[3])) from exc
            if not store_present(self.store.key):  # deleted under us ("Failed to get segments")
                reopen_stores()
                raise ChromaUnavailable(self._missing(self._record()[3], deleted=True)) from exc
            forget_client(self.store, str(exc))
            raise ChromaUnavailable(f"{self.store.label} stopped answering: {exc}") from exc
        ids = found["ids"][0]
        distances = found["distances"][0] if found.get("distances") else [0.0] * len(ids)
        return list(zip(ids, (float(d) for d in distances), strict=False))


def _collection_gone(exc: Exception) -> bool:
    """Whether a Chroma call failed because the collection no longer exists (the store answered)."""
    try:
        from chromadb.errors import NotFoundError
    except ImportError:
        return False
    return isinstance(exc, NotFoundError)


def _current_vectors(conn: sqlite3.Connection) -> int:
    """Chunks whose present text has a vector (a chunk changed since it was embedded has not)."""
    return int(
        conn.execute(
            "SELECT COUNT(*) FROM text_chunks c JOIN vector_state v ON v.chunk_id = c.chunk_id "
            "AND v.content_hash = c.content_hash"
        ).fetchone()[0]
    )


@dataclass(frozen=True)
class VectorStatus:
    """What the status line and `semfora doctor` say about vectors."""

    enabled: bool
    provider: str
    reason: str
    embedded: int
    total: int
    missing: int | None = None  # recorded but absent from the store; None when not checked
    store: str = ""
    other_model: str | None = None  # the model the recorded vectors were made with, when not this one
    recorded_store: str = (
        ""  # the store the vectors were written to (another one when the configuration moved)
    )
    damaged: str | None = None  # why the embedded store's database is unreadable (not opened)

    @property
    def text(self) -> str:
        if not self.enabled:
            return f"vectors off: {self.reason}"
        text = f"vectors {self.provider}: {self.embedded}/{self.total} chunks embedded"
        if self.missing:
            text += f", {self.missing} missing from {label_of(self.store)}"
        return text


def recorded_vectors(layout: RepoLayout) -> tuple[str | None, int, int]:
    """``(model, current, total)`` as index.db records them: ``current`` of the ``total`` chunks have
    a vector of their present text, made with ``model`` (None: never embedded). No provider needed."""
    conn = fts.connect(layout.index_db)
    try:
        return _meta(conn, "vector_spec"), _current_vectors(conn), fts.chunk_count(conn)
    finally:
        conn.close()


def skipped_report(layout: RepoLayout, settings: Settings) -> VectorReport:
    """What a run that skips the vector pass (`index --no-vectors`) has: the vectors index.db records,
    counted against the chunks now, without opening the store or an embedding provider."""
    spec, _kind, _arg = provider_kind(settings)
    store = chroma_store(layout, settings)
    conn = fts.connect(layout.index_db)
    try:
        model = _meta(conn, "vector_spec")
        recorded_store = _meta(conn, "vector_store") or (store.key if model else "")
        current = _current_vectors(conn) if model else 0
        total = fts.chunk_count(conn)
    finally:
        conn.close()
    # An embedded store whose directory is gone holds none of them (seen without opening it).
    gone = bool(current) and recorded_store.startswith("embedded:") and not store_present(recorded_store)
    held = f"{current:,} of {total:,} chunks have vectors" + (f" ({model})" if model else "")
    message = f"vectors skipped (--no-vectors); {held}"
    if gone:
        message += f", but {label_of(recorded_store)} is gone"
    elif current and recorded_store != store.key:
        message += f" in {label_of(recorded_store)}, not in {store.label} (the configured store changed)"
    if current < total:
        message += "; `semfora index` embeds the rest"
    return VectorReport(
        False,
        model or spec,
        "--no-vectors",
        pending=total if gone else total - current,
        total=total,
        message=message,
        missing=current if gone else None,
        store=recorded_store,
        current=0 if gone else current,
    )


def _store_mark(store: ChromaStore) -> tuple[int, int] | None:
    """Which file an embedded store's database is (device, inode); None when it is not there."""
    assert store.path is not None
    try:
        info = (store.path / CHROMA_DB).stat()
    except OSError:
        return None
    return info.st_dev, info.st_ino


def store_present(key: str) -> bool:
    """Whether the recorded embedded store (``embedded:PATH``) still has its database on disk; a
    server is taken as present (only asking it can tell)."""
    kind, _, where = key.partition(":")
    return kind != "embedded" or (Path(where) / CHROMA_DB).is_file()


def vector_status(
    layout: RepoLayout, settings: Settings, *, choice: EmbedderChoice | None = None, check_store: bool = False
) -> VectorStatus:
    """Provider in use (or why vectors are off) and how much of the index is embedded.

    With ``check_store`` the record is compared with the collection (counts only; nothing is changed),
    so ``doctor`` can show what a wiped or switched store lost. Raises only for a bad configuration.
    """
    picked = choice or choose_embedder(settings)
    store = chroma_store(layout, settings)
    conn = fts.connect(layout.index_db)
    try:
        total = fts.chunk_count(conn)
        spec = _meta(conn, "vector_spec")
        name = _meta(conn, "vector_collection")
        recorded_store = _meta(conn, "vector_store") or store.key
        embedded = 0
        other_model = None
        if picked.embedder is not None and spec is not None and model_identity(spec) == picked.embedder.spec:
            embedded = _current_vectors(conn)
        elif picked.embedder is not None and spec is not None and _current_vectors(conn):
            other_model = spec
    finally:
        conn.close()
    if picked.embedder is None:
        return VectorStatus(False, picked.requested, picked.reason, 0, total, store=store.key)
    missing: int | None = None
    damaged: str | None = None
    if check_store and embedded:
        if not store_present(store.key):
            # A deleted embedded store is seen from its directory: opening a client to count it
            # would make an empty store there (a check must not write).
            missing = embedded
        elif not store.is_server and (damaged := store_problem(layout)):
            # Opening it would set it aside and forget the record (the repair `index` makes).
            missing = embedded
        else:
            # Also when the configuration moved to another store: it may hold them too (switched
            # back to a store embedded into before), which is what doctor must say.
            collection = _existing_collection(chroma_client(store), name or "")
            missing = max(0, embedded - (int(collection.count()) if collection is not None else 0))
    return VectorStatus(
        True,
        picked.embedder.spec,
        "",
        embedded,
        total,
        missing,
        store.key,
        other_model,
        recorded_store,
        damaged,
    )


class RemoteVectorSearcher:
    """A VectorSearcher whose work runs in the shared query service; in-process when it cannot.

    The embedding choice is made here (so a bad model path is still an exit-2 error of this command),
    but the model is loaded and Chroma opened only in the service.
    """

    _cache: dict[tuple[str, str], RemoteVectorSearcher] = {}
    _cache_lock = threading.Lock()

    def __init__(self, layout: RepoLayout, settings: Settings, choice: EmbedderChoice) -> None:
        self.layout = layout
        self.settings = settings
        self.choice = choice
        self.notice = ""
        self._local: VectorSearcher | None = None
        self.chosen_at = time.monotonic()

    @classmethod
    def for_repo(cls, layout: RepoLayout, settings: Settings) -> RemoteVectorSearcher:
        key = _searcher_key(layout, settings)
        with cls._cache_lock:
            found = cls._cache.get(key)
            if found is None or _worth_another_look(found):
                found = cls(layout, settings, choose_embedder(settings))
                cls._cache[key] = found
            return found

    @property
    def enabled(self) -> bool:
        return self.choice.enabled

    @property
    def status(self) -> str:
        embedder = self.choice.embedder
        return f"vectors on ({embedder.spec})" if embedder else f"vectors are off ({self.choice.reason})"

    def _fallback(self, why: str) -> VectorSearcher:
        if self._local is None:
            log.info("vector query service unavailable (%s); searching in-process", why)
            self._local = VectorSearcher(self.layout, self.settings, self.choice)
        return self._local

    def _call(self, op: str, **extra: Any) -> dict[str, Any] | None:
        from engine.index.query_client import ServiceFailed, call, describe

        if self._local is not None:
            return None
        try:
            reply = call({"op": op, **describe(self.layout, self.settings), **extra})
        except ServiceFailed as exc:
            self._fallback(str(exc))
            return None
        from engine.quarantine import notify

        for notice in reply.get("notices") or []:  # a damaged store the service set aside
            notify(str(notice))
        if not reply.get("ok") and reply.get("code") not in (ChromaUnavailable.code,):
            self._fallback(str(reply.get("message")))
            return None
        return reply

    def unavailable(self) -> str:
        reply = self._call("status")
        if reply is None:
            return self._fallback("").unavailable()
        if not reply.get("ok"):
            return str(reply.get("message"))
        self.notice = str(reply.get("notice") or "")
        return str(reply.get("problem") or "")

    def ready(self) -> bool:
        return not self.unavailable()

    def query(self, text: str, limit: int = DEFAULT_VECTOR_CANDIDATES) -> list[tuple[str, float]]:
        reply = self._call("query", text=text, limit=limit)
        if reply is None:
            return self._fallback("").query(text, limit)
        if not reply.get("ok"):
            raise ChromaUnavailable(str(reply.get("message")))
        return list(zip(reply["ids"], (float(d) for d in reply["distances"]), strict=False))


class ServiceEmbedder:
    """An embedder whose model runs in the shared query service, for texts that are not chunks (turn
    memory's tasks and turns); in-process, with ``local``, when the service cannot answer.

    `ask` loaded the model (and numpy, tokenizers) in its own process for turn memory although the
    service already held it loaded.
    """

    def __init__(self, layout: RepoLayout, settings: Settings, local: Embedder) -> None:
        self.layout = layout
        self.settings = settings
        self.local = local
        self.spec = local.spec
        self.max_batch = local.max_batch
        self._failed = False

    def _remote(self, texts: list[str]) -> list[list[float]] | None:
        from engine.index.query_client import ServiceFailed, call, describe

        if self._failed:
            return None
        try:
            reply = call({"op": "embed", "texts": texts, **describe(self.layout, self.settings)})
        except ServiceFailed as exc:
            log.info("vector query service unavailable (%s); embedding in-process", exc)
            self._failed = True
            return None
        if not reply.get("ok") or reply.get("spec") != self.spec:
            return None  # the provider failed there (it says why here), or chose another model
        return [[float(x) for x in v] for v in reply["vectors"]]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        found = self._remote(texts)
        return found if found is not None else self.local.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def shared_embedder(layout: RepoLayout, settings: Settings, embedder: Embedder) -> Embedder:
    """``embedder``, through the shared query service when this process asks it (one-shot commands)."""
    if _service_role[0]:
        from engine.index.query_client import service_enabled

        if service_enabled(settings):
            return ServiceEmbedder(layout, settings, embedder)
    return embedder
