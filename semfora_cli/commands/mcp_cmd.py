"""`semfora mcp`: serve the engine's tools over MCP on stdio (for Claude Code, Cursor and other agents).

The server lives in engine.mcp_server. The path is checked before the protocol starts: typed by
a person at a terminal, a bad `--path` is an ordinary exit-2 error; started by an MCP client, the
server completes the handshake and answers every call with that error (the client would
otherwise see only "Connection closed"). Stdout belongs to the protocol: the one line for a
person who started it by hand goes to stderr.
"""

from __future__ import annotations

import argparse
import sys

from engine.errors import SemforaError
from engine.repo.layout import check_indexable, find_repo_root


def run(args: argparse.Namespace) -> int:
    try:
        root = find_repo_root(args.path)
        check_indexable(root)  # a client started from `/` without --path: nothing could answer
    except SemforaError as err:
        if sys.stdin.isatty():
            raise  # a person at a terminal: the one-line error and exit 2, as every command
        # A client: it would see only "Connection closed"; it gets the handshake and the error.
        from engine.mcp_server import serve_failed_start

        return serve_failed_start(err)
    if sys.stdin.isatty():
        # A person at a terminal, not a client: without this the command looks hung.
        sys.stderr.write(
            f"semfora mcp: serving {root} over MCP on stdin/stdout; an MCP client starts this "
            "command itself (docs/mcp.md shows how). Ctrl-C stops it.\n"
        )
    from engine.mcp_server import serve

    return serve(root, first_call_wait=args.wait)
