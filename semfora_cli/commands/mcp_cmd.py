"""`semfora mcp`: serve the engine's tools over MCP on stdio (for Claude Code, Cursor and other agents).

The server lives in engine.mcp_server; the path is checked before the protocol starts, so a
bad `--path` is an ordinary exit-2 error rather than a broken MCP handshake. Stdout belongs to
the protocol: the one line for a person who started it by hand goes to stderr.
"""

from __future__ import annotations

import argparse
import sys

from engine.repo.layout import find_repo_root


def run(args: argparse.Namespace) -> int:
    root = find_repo_root(args.path)
    if sys.stdin.isatty():
        # A person at a terminal, not a client: without this the command looks hung.
        sys.stderr.write(
            f"semfora mcp: serving {root} over MCP on stdin/stdout; an MCP client starts this "
            "command itself (docs/mcp.md shows how). Ctrl-C stops it.\n"
        )
    from engine.mcp_server import serve

    return serve(root, first_call_wait=args.wait)
