"""The vector query service's client: how a one-shot command asks the shared service.

Owns the wire protocol (one JSON line each way over this user's Unix socket,
``$XDG_CACHE_HOME/semfora/vector-service-<code>.sock``), starting the service on demand
(``python -m engine.index.query_service serve``), and ``describe`` (what the service needs to open
a repository's vectors as this process would). ``engine.index.vectors``' remote searcher calls
here; the service itself (``engine.index.query_service``) sits above both and imports this for
the protocol, so the arrows point one way. Any failure is ``ServiceFailed``: search in-process.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from engine.config import Settings
from engine.policy.content import environment_without_secrets
from engine.repo.layout import RepoLayout, cache_home

# The socket is named for the installed code (``code_identity``): a service outlives the command
# that started it by up to IDLE_SECONDS after its last use, so after an upgrade (or from a second
# install) the new commands were answered by the old code for as long as they kept it busy.
SOCKET_NAME = "vector-service-{identity}.sock"
PROTOCOL = 1
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


@functools.cache
def code_identity() -> str:
    """A short digest of this interpreter and the engine's installed files (paths, sizes, mtimes)."""
    import engine

    root = Path(engine.__file__).resolve().parent
    digest = hashlib.sha256(f"{sys.executable}|{engine.__version__}|{root}".encode())
    for path in sorted(root.rglob("*.py")):
        with contextlib.suppress(OSError):
            info = path.stat()
            digest.update(f"|{path.relative_to(root)}:{info.st_size}:{info.st_mtime_ns}".encode())
    return digest.hexdigest()[:12]


def socket_path() -> Path:
    return cache_home() / SOCKET_NAME.format(identity=code_identity())


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


def _spawn() -> subprocess.Popen[bytes]:
    path = socket_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    # The service holds chromadb and may write an embedded store's files: it never holds a key.
    env = environment_without_secrets()
    return subprocess.Popen(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-P", "-m", "engine.index.query_service", "serve", "--socket", str(path)],
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
    spawned = _spawn()
    deadline = time.monotonic() + SPAWN_WAIT_SECONDS
    while time.monotonic() < deadline:
        try:
            return _request(payload)
        except ServiceFailed:
            if spawned.poll() is not None:
                # It ended without serving (its socket cannot be made here, or another service
                # won the race and then left): no point waiting out the timeout.
                try:
                    return _request(payload)
                except ServiceFailed as exc:
                    raise ServiceFailed(f"the vector service exited ({spawned.returncode})") from exc
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
