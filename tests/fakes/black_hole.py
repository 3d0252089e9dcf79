"""A TCP endpoint that accepts connections and never answers: the black-holed model API.

It speaks no protocol on purpose: a client connects, sends its request, and waits for a reply
that never comes (what a stuck proxy or a dead load balancer looks like). Used as a pytest
fixture through ``black_hole()``.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def black_hole() -> Iterator[str]:
    """Yield the URL of a listening socket that accepts, reads and never replies."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.05)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            held.append(conn)  # kept open and never written to

    thread = threading.Thread(target=accept, name="black-hole", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=2)
        for conn in held:
            conn.close()
        server.close()
