"""`semfora mcp`: serve the engine's tools over MCP on stdio (for Claude Code, Cursor and other agents).

The server lives in engine.mcp_server; the path is checked before the protocol starts, so a
bad `--path` is an ordinary exit-2 error rather than a broken MCP handshake.
"""

from __future__ import annotations

import argparse

from engine.repo.layout import find_repo_root


def run(args: argparse.Namespace) -> int:
    root = find_repo_root(args.path)
    from engine.mcp_server import serve

    return serve(root)
