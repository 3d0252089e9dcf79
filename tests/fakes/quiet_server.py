"""The HTTP server both fakes run on: threaded, loopback, silent about clients that hang up."""

from __future__ import annotations

import sys
from http.server import ThreadingHTTPServer
from typing import Any


class QuietHTTPServer(ThreadingHTTPServer):
    """A client that hangs up (timeout, cancel) is normal here, not a traceback on stderr."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)
