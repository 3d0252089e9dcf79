"""A shared local process that answers vector queries, so a fresh `semfora search` stays fast.

Owns the vector query service: one process per user cache home (``$XDG_CACHE_HOME/semfora/
vector-service.sock``, a Unix socket only this user can open), started on demand by the first
one-shot command that needs vectors, reused by the next ones, and gone after ``IDLE_SECONDS``
without a request. It keeps chromadb, the Chroma client and the embedding model loaded: a fresh
CLI process then pays a socket round trip instead of importing chromadb (~1 s) and loading a model.

It serves only indexes under its own cache home, reads (never writes) vectors, and reopens an
embedded store when ``semfora index`` has changed it since (a second process's Chroma writes are
not visible to an open embedded client). Any failure here makes the caller search in-process.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import socketserver
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from engine.config import Settings
from engine.repo.layout import RepoLayout, cache_home

log = logging.getLogger("semfora.index.query_service")

SOCKET_NAME = "vector-service.sock"
PROTOCOL = 1
# The service exits after this long without a request: long enough for a session of searches and
# scripted runs, short enough that it does not outlive its use by much.
IDLE_SECONDS = 600.0
# How long a client waits for a service it just started (chromadb import and model load on a busy
# machine) before it searches in-process instead; the service keeps starting for the next call.
SPAWN_WAIT_SECONDS = 20.0
# Seconds one request may take (a cold first query loads the collection).
REQUEST_TIMEOUT = 60.0
# Unix socket paths are limited to 107 bytes on Linux; beyond that there is no service.
MAX_SOCKET_PATH = 100
# Largest request or reply line accepted (a query's ids and distances are a few kB).
MAX_LINE = 4 * 1024 * 1024


class ServiceFailed(Exception):
    """The service could not answer (not running, crashed, protocol mismatch): search in-process."""


def socket_path() -> Path:
    return cache_home() / SOCKET_NAME


def service_enabled(settings: Settings) -> bool:
    return (
        settings.search.vector_service == "auto"
        and hasattr(socket, "AF_UNIX")  # no Unix sockets (Windows): every process searches itself
        and len(str(socket_path())) <= MAX_SOCKET_PATH
    )


# --- client -------------------------------------------------------------------------------------


def _request(payload: dict[str, Any], timeout: float = REQUEST_TIMEOUT) -> dict[str, Any]:
    path = socket_path()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout)
        try:
            conn.connect(str(path))
            conn.sendall(json.dumps({"v": PROTOCOL, **payload}).encode() + b"\n")
            reply = conn.makefile("rb").readline(MAX_LINE)
        except OSError as exc:
            raise ServiceFailed(str(exc)) from exc
    if not reply:
        raise ServiceFailed("the vector service closed the connection")
    try:
        data: dict[str, Any] = json.loads(reply)
    except ValueError as exc:
        raise ServiceFailed(f"unreadable reply: {exc}") from exc
    if data.get("v") != PROTOCOL:
        raise ServiceFailed("the vector service speaks another protocol version")
    return data


def _spawn() -> None:
    path = socket_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    subprocess.Popen(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", "engine.index.query_service", "serve", "--socket", str(path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # not killed with the terminal's process group, not a zombie of ours
        env=env,
        close_fds=True,
    )


def call(payload: dict[str, Any]) -> dict[str, Any]:
    """Send one request, starting the service first when none answers. Raises ServiceFailed."""
    try:
        return _request(payload)
    except ServiceFailed:
        pass
    _spawn()
    deadline = time.monotonic() + SPAWN_WAIT_SECONDS
    while time.monotonic() < deadline:
        try:
            return _request(payload)
        except ServiceFailed:
            time.sleep(0.05)
    raise ServiceFailed(f"the vector service did not start within {SPAWN_WAIT_SECONDS:.0f}s")


def stop_service() -> bool:
    """Ask a running service to exit; False when none answered."""
    try:
        _request({"op": "stop"}, timeout=5)
    except ServiceFailed:
        return False
    return True


def describe(layout: RepoLayout, settings: Settings) -> dict[str, Any]:
    """What the service needs to open this repository's vectors the way this process would."""
    from engine.index.chroma import chroma_store

    store = chroma_store(layout, settings)
    return {
        "root": str(layout.root),
        "cache_dir": str(layout.cache_dir),
        "embedding": settings.search.embedding,
        "precision": settings.search.local_embed_precision,
        "chroma_url": store.url,
        "ollama_host": settings.ollama.host,
    }


# --- server -------------------------------------------------------------------------------------


class _Served:
    """The searchers of the service, reopened when an index's vectors changed on disk."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.generations: dict[str, str | None] = {}

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
            generation = _vector_generation(layout.index_db)
            key = str(layout.index_db)
            if key in self.generations and self.generations[key] != generation:
                _reopen_stores()
            self.generations[key] = generation
            return VectorSearcher.for_repo(layout, settings)


def _vector_generation(index_db: Path) -> str | None:
    try:
        conn = sqlite3.connect(f"file:{index_db}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:
        return None
    try:
        row = conn.execute("SELECT value FROM text_meta WHERE key='vector_generation'").fetchone()
        return None if row is None else str(row[0])
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def _reopen_stores() -> None:
    """Forget every client and searcher: the next query reopens the store and sees the new vectors."""
    from engine.index.chroma import reset_clients
    from engine.index.vectors import VectorSearcher

    VectorSearcher.forget_all()
    reset_clients()
    with contextlib.suppress(ImportError):
        from chromadb.api.shared_system_client import SharedSystemClient

        SharedSystemClient.clear_system_cache()


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
        if op == "query":
            found = searcher.query(str(request["text"]), int(request.get("limit", 50)))
            return {"ok": True, "ids": [c for c, _ in found], "distances": [d for _, d in found]}
    except SemforaError as exc:
        return {"ok": False, "code": exc.code, "message": exc.message, "exit": exc.exit_code}
    return {"ok": False, "code": "USAGE", "message": f"unknown op {op!r}", "exit": 2}


def serve(path: Path, idle: float = IDLE_SECONDS) -> None:
    """Listen on ``path`` until idle for ``idle`` seconds or asked to stop."""
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    served = _Served()
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
