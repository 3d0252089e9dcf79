"""A shared local process that answers vector queries, so a fresh `semfora search` stays fast.

Owns the vector query service: one process per user cache home (``$XDG_CACHE_HOME/semfora/
vector-service-<code>.sock``, a Unix socket only this user can open, one per installed code), started on demand by the first
one-shot command that needs vectors, reused by the next ones, and gone after ``IDLE_SECONDS``
without a request. It keeps chromadb, the Chroma client and the embedding model loaded: a fresh
CLI process then pays a socket round trip instead of importing chromadb (~1 s) and loading a model.

It serves only indexes under its own cache home, reads (never writes) vectors, and reopens an
embedded store when ``semfora index`` has changed it since (a second process's Chroma writes are
not visible to an open embedded client). Any failure here makes the caller search in-process.
The client side (protocol, start on demand, ``describe``) is ``engine.index.query_client``, which
``engine.index.vectors`` calls: the service imports both, neither imports it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import socketserver
import threading
import time
from pathlib import Path
from typing import Any

from engine.index.query_client import MAX_LINE, PROTOCOL, socket_path
from engine.repo.layout import RepoLayout, cache_home

log = logging.getLogger("semfora.index.query_service")

# The service exits after this long without a request: long enough for a session of searches and
# scripted runs, short enough that it does not outlive its use by much.
IDLE_SECONDS = 600.0


# --- server -------------------------------------------------------------------------------------


class _Served:
    """The searchers of the service, reopened when an index's vectors changed on disk."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        # Damaged stores this service set aside, not yet told: the next reply carries them to its
        # command, which says them (the service's own stderr goes nowhere).
        self.notices: list[str] = []
        self._notices_lock = threading.Lock()  # not ``lock``: a notice may come while it is held

    def notice(self, text: str) -> None:
        with self._notices_lock:
            self.notices.append(text)

    def take_notices(self) -> list[str]:
        with self._notices_lock:
            taken, self.notices = self.notices, []
        return taken

    def searcher(self, request: dict[str, Any]) -> Any:
        from engine.config import load_settings
        from engine.index.vectors import VectorSearcher

        root = Path(str(request["root"])).resolve()
        layout = RepoLayout(root)
        cache_dir = Path(str(request["cache_dir"])).resolve()
        home = cache_home().resolve()
        # Serve only state under our own cache home (and the cache dir this layout really has).
        if home not in cache_dir.parents or layout.cache_dir.resolve() != cache_dir:
            raise PermissionError(f"{cache_dir} is not a semfora cache dir under {home}")
        base = load_settings(root).settings
        search = base.search.model_copy(
            update={
                "embedding": str(request["embedding"]),
                "chroma_url": request.get("chroma_url"),
                "local_embed_precision": str(request.get("precision", "auto")),
            }
        )
        ollama = base.ollama.model_copy(update={"host": str(request.get("ollama_host") or base.ollama.host)})
        settings = base.model_copy(update={"search": search, "ollama": ollama})
        with self.lock:
            # The searcher reopens an embedded store another process embedded into since.
            return VectorSearcher.for_repo(layout, settings)


def _handle(served: _Served, request: dict[str, Any]) -> dict[str, Any]:
    from engine.errors import SemforaError

    op = request.get("op")
    if op == "ping":
        return {"ok": True, "pid": os.getpid()}
    try:
        searcher = served.searcher(request)
        if op == "status":
            problem = searcher.unavailable() if searcher.enabled else searcher.status
            return {"ok": True, "problem": problem, "notice": searcher.notice, "status": searcher.status}
        if op == "embed":
            embedder = searcher.choice.embedder
            if embedder is None:
                return {"ok": False, "code": "VECTORS_OFF", "message": searcher.status}
            texts = [str(t) for t in request.get("texts") or []]
            return {"ok": True, "spec": embedder.spec, "vectors": embedder.embed_documents(texts)}
        if op == "query":
            found = searcher.query(str(request["text"]), int(request.get("limit", 50)))
            return {"ok": True, "ids": [c for c, _ in found], "distances": [d for _, d in found]}
    except SemforaError as exc:
        return {"ok": False, "code": exc.code, "message": exc.message, "exit": exc.exit_code}
    return {"ok": False, "code": "USAGE", "message": f"unknown op {op!r}", "exit": 2}


def serve(path: Path, idle: float = IDLE_SECONDS) -> None:
    """Listen on ``path`` until idle for ``idle`` seconds or asked to stop."""
    from engine import quarantine

    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    served = _Served()
    quarantine.add_listener(served.notice)
    last = [time.monotonic()]
    done = threading.Event()

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            line = self.rfile.readline(MAX_LINE)
            last[0] = time.monotonic()
            try:
                request = json.loads(line)
                if request.get("v") != PROTOCOL:
                    reply: dict[str, Any] = {"ok": False, "code": "PROTOCOL", "message": "protocol version"}
                elif request.get("op") == "stop":
                    reply = {"ok": True}
                    done.set()
                else:
                    reply = _handle(served, request)
                    notices = served.take_notices()
                    if notices:
                        reply["notices"] = notices
            except Exception as exc:  # noqa: BLE001 - one bad request must not end the service
                log.exception("vector service request failed")
                reply = {"ok": False, "code": "SERVICE_ERROR", "message": f"{type(exc).__name__}: {exc}"}
            self.wfile.write(json.dumps({"v": PROTOCOL, **reply}).encode() + b"\n")
            last[0] = time.monotonic()

    class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
        daemon_threads = True

    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        if _alive(path):
            return  # another service won the race: let it serve
        path.unlink()
    previous = os.umask(0o077)  # the socket is this user's only
    try:
        server = Server(str(path), Handler)
    except OSError as exc:  # another service bound it first
        log.info("vector service not started: %s", exc)
        return
    finally:
        os.umask(previous)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.5}, daemon=True)
    thread.start()
    try:
        while not done.wait(1.0):
            if time.monotonic() - last[0] > idle or not path.exists():
                break
    finally:
        server.shutdown()
        server.server_close()
        with contextlib.suppress(FileNotFoundError):
            if path.exists() and not _alive(path, timeout=0.2):
                path.unlink()


def _alive(path: Path, timeout: float = 1.0) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout)
        try:
            conn.connect(str(path))
        except OSError:
            return False
    return True


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m engine.index.query_service")
    parser.add_argument("command", choices=["serve"])
    parser.add_argument("--socket", type=Path, default=None)
    parser.add_argument("--idle", type=float, default=IDLE_SECONDS)
    args = parser.parse_args(argv)
    # One BLAS thread: the service embeds one short query at a time, where thread hand-offs cost
    # more than they save (on a busy machine, 15 ms single-threaded against hundreds with two).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    serve(args.socket or socket_path(), args.idle)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
