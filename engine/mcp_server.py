"""`semfora mcp`: the engine's front door (``engine.api``) served over MCP on stdio.

Owns the MCP mapping: tool listings with token costs, argument validation against each
tool's schema, limits on what one reply may carry, redaction of every reply (the client is
another program: a secret in a signature or a snippet must not reach it), and typed errors as
MCP errors whose ``data.error_code`` is the semfora code. The ``mcp`` SDK is imported lazily (not by
``semfora --help``), and stdout belongs to the protocol: nothing else may print there.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.errors import NotFoundError, SemforaError, ServiceUnavailable, UsageError

if TYPE_CHECKING:
    from engine.api import Engine, ToolSpec

SERVER_NAME = "semfora"
SERVER_VERSION = "0.1.0"
# One reply never carries more than this many characters (~25k tokens): a tool that would
# return more is cut with a note telling the agent how to ask for less.
MAX_REPLY_CHARS = 100_000
# Hybrid search results per call; the CLI allows the same.
MAX_SEARCH_LIMIT = 50
# JSON-RPC error codes for semfora's error families (the typed code travels in data.error_code).
RPC_INVALID_PARAMS = -32602
RPC_NOT_FOUND = -32002
RPC_UNAVAILABLE = -32001
RPC_INTERNAL = -32603
INSTRUCTIONS = (
    "semfora's semantic engine for one repository. For a task (a bug report, a change, a question), "
    "call get_context first: it returns the code to read or change, budgeted (default 8k tokens). "
    "Otherwise start with get_repo_overview (bounded, ~2.5k tokens), then search_symbols or search, "
    "then get_symbol / get_symbol_source for just what you need. "
    "Prefer list_symbols + get_symbol over get_module (8-12k tokens)."
)


@dataclass(frozen=True)
class McpTool:
    """One tool as served: name, description with its token cost, JSON schema and the call."""

    name: str
    description: str
    input_schema: dict[str, Any]
    call: Callable[[dict[str, Any]], tuple[dict[str, Any], str]]  # arguments -> (structured JSON, TOON text)


def _search_tool(engine: Engine) -> McpTool:
    def call(args: dict[str, Any]) -> tuple[dict[str, Any], str]:
        from engine.api import search

        # Warnings (e.g. vectors unavailable: full-text and symbols answered) ride in the reply.
        found = search(engine, args["query"], mode=args.get("mode", "hybrid"), limit=args.get("limit", 10))
        data = found.to_json(always_warnings=False)
        return data, _toon(data)

    schema = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "words, identifiers or a question about the code"},
            "mode": {
                "type": "string",
                "enum": ["hybrid", "fts", "vector", "symbols"],
                "default": "hybrid",
                "description": "hybrid (full-text + vectors + symbols, fused), or one source alone",
            },
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_LIMIT, "default": 10},
        },
        "required": ["query"],
    }
    return McpTool(
        "search",
        "Hybrid code search (SQLite FTS5 BM25 + vectors + symbol names, fused by RRF); each hit has file, "
        "lines, symbol and a snippet. Token cost: ~60 per result (~600 for 10).",
        schema,
        call,
    )


def _diff_tool(engine: Engine) -> McpTool:
    def call(args: dict[str, Any]) -> tuple[dict[str, Any], str]:
        from engine.api import semantic_diff

        diff = semantic_diff(engine.layout.root, args.get("base"), args.get("target"))
        return diff.to_json(), diff.to_toon()

    schema = {
        "type": "object",
        "properties": {
            "base": {"type": "string", "description": "base ref (default HEAD); 'A...B' = B vs merge base"},
            "target": {"type": "string", "description": "target ref or WORKING (default WORKING)"},
        },
        "required": [],
    }
    return McpTool(
        "analyze_diff",
        "Semantic diff between two git refs or a ref and the working tree: symbols added, removed, "
        "modified, moved or renamed, signature and risk changes, new external calls, affected callers. "
        "Token cost: varies, ~150 per changed symbol.",
        schema,
        call,
    )


def _toon(payload: Any) -> str:
    import toon_format

    return toon_format.dumps(payload)


def build_tools(engine: Engine) -> dict[str, McpTool]:
    """Every tool of engine.api.TOOLS, plus hybrid search and the semantic diff."""
    from engine.api import TOOLS

    tools: dict[str, McpTool] = {}
    for name, spec in TOOLS.items():

        def call(args: dict[str, Any], spec: ToolSpec = spec) -> tuple[dict[str, Any], str]:
            result = spec(engine if spec.needs_engine else None, **args)
            return result.to_json(), result.toon

        description = spec.description
        if spec.token_cost:
            description += f" Token cost: {spec.token_cost.rstrip('.')}."
        tools[name] = McpTool(name, description, spec.input_schema(), call)
    for extra in (_search_tool(engine), _diff_tool(engine)):
        tools[extra.name] = extra
    return tools


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "boolean": (bool,),
    "array": (list,),
    "number": (int, float),
    "object": (dict,),
}


def validate_arguments(tool: McpTool, arguments: dict[str, Any] | None) -> dict[str, Any]:
    """Check arguments against the tool's schema; UsageError names the first problem."""
    args: dict[str, Any] = dict(arguments or {})
    props: dict[str, Any] = tool.input_schema.get("properties", {})
    for name in tool.input_schema.get("required", []):
        if name not in args:
            raise UsageError(f"{tool.name}: missing required argument '{name}'")
    for name, value in args.items():
        prop = props.get(name)
        if prop is None:
            raise UsageError(
                f"{tool.name}: unknown argument '{name}' (known: {', '.join(sorted(props)) or 'none'})"
            )
        kind = prop.get("type", "string")
        wanted = _JSON_TYPES.get(kind, (object,))
        if not isinstance(value, wanted) or (kind == "integer" and isinstance(value, bool)):
            raise UsageError(f"{tool.name}: '{name}' must be a {kind}, got {type(value).__name__}")
        if kind == "integer":
            if "maximum" in prop and value > prop["maximum"]:
                raise UsageError(f"{tool.name}: '{name}' is {value}; the limit is {prop['maximum']}")
            if "minimum" in prop and value < prop["minimum"]:
                raise UsageError(f"{tool.name}: '{name}' is {value}; the minimum is {prop['minimum']}")
        if isinstance(value, list) and "maxItems" in prop and len(value) > prop["maxItems"]:
            raise UsageError(f"{tool.name}: '{name}' has {len(value)} items; the limit is {prop['maxItems']}")
        if "enum" in prop and value not in prop["enum"]:
            raise UsageError(f"{tool.name}: '{name}' must be one of {', '.join(prop['enum'])}")
    return args


def error_payload(err: SemforaError) -> tuple[int, str, dict[str, Any]]:
    """(JSON-RPC code, message, data) for a typed error; ``data.error_code`` is the semfora code."""
    if isinstance(err, UsageError) or err.exit_code == 2:
        rpc = RPC_INVALID_PARAMS
    elif isinstance(err, NotFoundError):
        rpc = RPC_NOT_FOUND
    elif isinstance(err, ServiceUnavailable):
        rpc = RPC_UNAVAILABLE
    else:
        rpc = RPC_INTERNAL
    data: dict[str, Any] = {"error_code": err.code, "error_message": err.message, "exit_code": err.exit_code}
    message = f"error[{err.code}]: {err.message}"
    if err.hint:
        # In the message too, as the CLI prints it: many clients show the model the message alone.
        data["hint"] = err.hint
        message += f" ({err.hint})"
    return rpc, message, data


def cap_reply(text: str) -> str:
    if len(text) <= MAX_REPLY_CHARS:
        return text
    return (
        text[:MAX_REPLY_CHARS]
        + f"\n... truncated at {MAX_REPLY_CHARS} characters: ask for less (a lower limit, a module filter, "
        "get_symbol instead of get_module)"
    )


def answer(tool: McpTool, arguments: dict[str, Any] | None) -> tuple[dict[str, Any], str]:
    """Exactly what a client receives for one call: (structured content, text).

    Arguments are validated, the tool runs, and both parts are redacted (a secret in a
    signature, a docstring or a snippet never reaches the client) and the text is capped.
    Typed errors propagate; the server turns them into MCP errors.
    """
    from engine.policy.redaction import redact, redact_json

    data, text = tool.call(validate_arguments(tool, arguments))
    # Round-trip through JSON: dataclass leftovers and paths become plain JSON values.
    plain = json.loads(json.dumps(data, default=str))
    structured = plain if isinstance(plain, dict) else {"result": plain}
    return redact_json(structured), cap_reply(redact(text))


def build_server(path: str | os.PathLike[str] | None = None) -> Any:
    """The MCP server for the repository at ``path`` (a low-level ``mcp`` Server)."""
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    from engine.api import Engine

    def on_warning(warning: Any) -> None:
        sys.stderr.write(f"semfora: warning[{warning.code}]: {warning.message}\n")

    engine = Engine.open(path, on_warning=on_warning)
    tools = build_tools(engine)
    # The store holds one SQLite connection: calls run one at a time, off the event loop.
    engine_lock = threading.Lock()

    def run_tool(tool: McpTool, args: dict[str, Any] | None) -> tuple[dict[str, Any], str]:
        with engine_lock:
            return answer(tool, args)

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=t.name, description=t.description, input_schema=t.input_schema)
                for t in tools.values()
            ]
        )

    async def call_tool(ctx: Any, params: Any) -> Any:
        tool = tools.get(params.name)
        try:
            if tool is None:
                raise UsageError(
                    f"unknown tool '{params.name}'", hint=f"known tools: {', '.join(sorted(tools))}"
                )
            structured, text = await anyio.to_thread.run_sync(run_tool, tool, params.arguments)
        except SemforaError as err:
            rpc, message, payload = error_payload(err)
            raise MCPError(rpc, message, data=payload) from err
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], structured_content=structured
        )

    server = Server(
        SERVER_NAME,
        version=SERVER_VERSION,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    server.semfora_engine = engine  # type: ignore[attr-defined]  # closed by serve()
    return server


def serve(path: str | os.PathLike[str] | None = None) -> int:
    """Run the server on stdin/stdout until the client disconnects."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(path)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        server.semfora_engine.close()
    return 0
