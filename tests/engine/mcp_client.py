"""Drive `semfora mcp` as an agent does: the MCP SDK's own stdio client spawning the real command,
and another process holding the index lock the way `semfora index` does."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from tests.conftest import SEMFORA

# The first request of an MCP client speaking raw JSON-RPC over the server's stdio.
INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "semfora-tests", "version": "0"},
    },
}


def spawn_mcp(path: Path | str) -> subprocess.Popen[str]:
    """`semfora mcp --path PATH` with text pipes on its stdio, for a test that speaks raw JSON-RPC."""
    return subprocess.Popen(
        [SEMFORA, "mcp", "--path", str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def mcp_session(
    root: Path, body: Callable[[Any], Awaitable[Any]], args: Sequence[str] = (), errlog: TextIO | None = None
) -> Any:
    """Run ``body(session)`` against `semfora mcp --path root ARGS`, initialised; the server's
    stderr goes to ``errlog`` (a real file) when given."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    # The whole environment: the client's default keeps only HOME/PATH-like variables, which
    # dropped XDG_CACHE_HOME and made the server write to the real ~/.cache/semfora.
    params = StdioServerParameters(
        command=SEMFORA, args=["mcp", "--path", str(root), *args], env=dict(os.environ)
    )
    client = stdio_client(params) if errlog is None else stdio_client(params, errlog=errlog)
    async with client as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await body(session)


def tool_error(result: Any) -> dict[str, Any]:
    """A failed call's content as the model and the client see it: a tool result with isError,
    one text line (``message``) and the typed code in the structured content."""
    assert result.is_error, result.content[0].text
    data = dict(result.structured_content)
    assert data["ok"] is False and result.content[0].text.startswith(f"error[{data['error_code']}]")
    return {**data, "message": result.content[0].text}


HOLD_LOCK = """
import sys
from engine.repo.layout import RepoLayout
from engine.store.lock import writer_lock
with writer_lock(RepoLayout.for_path(sys.argv[1]), 0):
    print("held", flush=True)
    sys.stdin.read()
"""


@contextmanager
def index_lock_held(root: Path) -> Iterator[Callable[[], None]]:
    """Another process holds the repository's index lock (as a running `semfora index` does)
    until the returned ``release()`` is called or the block ends."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(root)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdin is not None and holder.stdout is not None
    stdin = holder.stdin

    def release() -> None:
        if not stdin.closed:
            stdin.close()
        holder.wait(timeout=30)

    try:
        assert holder.stdout.readline().strip() == "held"
        yield release
    finally:
        release()
