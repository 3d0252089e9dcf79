"""`semfora mcp`: the engine's front door (``engine.api``) served over MCP on stdio.

Owns the MCP mapping: tool listings with token costs, argument validation against each
tool's schema, limits on what one reply may carry, redaction of every reply (the client is
another program: a secret in a signature or a snippet must not reach it), and typed errors as
MCP errors whose ``data.error_code`` is the semfora code. The ``mcp`` SDK is imported lazily (not by
``semfora --help``), and stdout belongs to the protocol: nothing else may print there.
"""

from __future__ import annotations

import atexit
import json
import os
import shlex
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from engine.errors import EXIT_UNAVAILABLE, NotFoundError, SemforaError, ServiceUnavailable, UsageError

if TYPE_CHECKING:
    from engine.api import Engine, ToolSpec

# The indexer's progress hook: (phase, done, total).
Progress = Callable[[str, int, int], None]

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
# A string argument longer than this is refused (a symbol name, a query, a path): every reply
# echoes some of its arguments, and a 1 MB query would come back as a 1 MB reply.
MAX_STRING_ARG = 4_096
# get_context's task may be a pasted bug report with its traceback; still bounded.
MAX_TASK_CHARS = 32_000
# Tools that answer from the index: each call first brings it up to date (incremental; ~40 ms
# on Django when nothing changed), because an agent edits files between calls and a stale index
# serves the old line numbers, so get_symbol_source would return the wrong lines.
NO_REFRESH = frozenset({"list_languages", "generate_index", "check_index", "analyze_file"})
# Tools that never read the index: they answer at once, even while it is being built.
NO_INDEX = frozenset({"list_languages", "analyze_file"})
# Seconds a call without a progress token waits for an index being built before it answers
# INDEX_BUILDING (many clients give up on a call after 60 s); `semfora mcp --wait` sets it.
DEFAULT_FIRST_CALL_WAIT_S = 25
# Progress notifications while indexing: at most one per this many seconds (and one per phase).
PROGRESS_INTERVAL_S = 0.5
INSTRUCTIONS = (
    "semfora's semantic engine for one repository. For a task (a bug report, a change, a question), "
    "call get_context first: it returns the code to read or change, budgeted (default 8k tokens). "
    "Otherwise start with get_repo_overview (bounded, ~2.5k tokens), then search_symbols or search, "
    "then get_symbol / get_symbol_source for just what you need. "
    "Prefer list_symbols + get_symbol over get_module (8-25k tokens). "
    "The index follows file edits by itself (each call refreshes it first): generate_index is only "
    "for a forced rebuild. Failed calls explain themselves in one line (error[CODE]: ...); "
    "INDEX_BUILDING means the first index is still being built, SERVER_BUSY that a long call "
    "(generate_index) is still running: call again in a moment."
)


@dataclass(frozen=True)
class McpTool:
    """One tool as served: name, description with its token cost, JSON schema and the call."""

    name: str
    description: str
    input_schema: dict[str, Any]
    # (arguments, progress or None) -> (structured JSON, TOON text); progress is heard by the
    # tools that report it (generate_index), when the client gave a progress token.
    call: Callable[..., tuple[dict[str, Any], str]]


def _search_tool(engine: Engine) -> McpTool:
    def call(args: dict[str, Any], progress: Progress | None = None) -> tuple[dict[str, Any], str]:
        from engine.api import search

        if not args["query"].strip():  # as `semfora search ""`: an empty query is a mistake, not "no hits"
            raise UsageError("search: the query is empty", hint='e.g. "where are retries decided"')
        # Warnings (e.g. vectors unavailable: full-text and symbols answered) ride in the reply.
        # Every reply says what it lacks (vectors off): a warning once per process was once per session.
        mode, limit = args.get("mode", "hybrid"), args.get("limit", 10)
        found = search(engine, args["query"], mode=mode, limit=limit, every_warning=True)
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
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_SEARCH_LIMIT,
                "default": 10,
                "description": "max results",
            },
        },
        "required": ["query"],
    }
    return McpTool(
        "search",
        "Hybrid code search (SQLite FTS5 BM25 + vectors + symbol names, fused by RRF); each hit has file, "
        "lines, symbol and a snippet. Token cost: ~85 per result as JSON (~60 as text; ~850 for 10).",
        schema,
        call,
    )


def _diff_tool(engine: Engine) -> McpTool:
    def call(args: dict[str, Any], progress: Progress | None = None) -> tuple[dict[str, Any], str]:
        from engine.api import semantic_diff, without_secret_content

        try:
            found = semantic_diff(engine.layout.root, args.get("base"), args.get("target"))
        except UsageError as err:
            if err.code == "DIFF_NOT_GIT":  # the agent cannot pass --path: say what it can do
                err.hint = "analyze_diff needs git history; the other tools work without it"
            raise
        diff = without_secret_content(found, engine.settings.edits.deny)
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
        "Token cost: ~300 per changed symbol as JSON (~225 as text), more with many callers.",
        schema,
        call,
    )


def log(line: str) -> None:
    """One line (or a traceback) to stderr, the server's log, masked: the client keeps it, and a
    warning or an error may quote a URL with its password."""
    from engine.policy.redaction import redact

    sys.stderr.write(redact(line))


def _toon(payload: Any) -> str:
    import toon_format

    return toon_format.dumps(payload)


def source_text(data: dict[str, Any]) -> str:
    """get_symbol_source as a model reads code: a header line, then the lines themselves (TOON
    would quote the source as one escaped string, every newline a ``\\n``)."""
    from engine.api.tools import MAX_SOURCE_LINES

    own = f"{data['start_line']}-{data['end_line']}"
    shown = f"{data['source_start_line']}-{data['source_end_line']}"
    lines = f"{own} (shown {shown})" if shown != own else own
    head = f"{data['symbol']}  {data['file']}:{lines}  id {data['id']}"
    if data.get("note"):
        head += f"\nnote: {data['note']}"
    text = f"{head}\n{data['source'].rstrip()}\n"
    if data["truncated"]:
        text += (
            f"... cut after line {data['source_end_line']} ({MAX_SOURCE_LINES} lines): "
            "ask for a method of it, or read the rest of the file\n"
        )
    return text


# Tools that take one symbol by name answer for the first of several that share it; the reply
# then names (at most this many of) the others, so the agent knows to pass an id.
BY_NAME = frozenset({"get_symbol", "get_symbol_source", "get_call_graph", "get_callers"})


# Tools whose text content is better as plain text than as TOON.
TEXT_RENDERERS: dict[str, Callable[[dict[str, Any]], str]] = {"get_symbol_source": source_text}


def build_tools(engine: Engine) -> dict[str, McpTool]:
    """Every tool of engine.api.TOOLS, plus hybrid search and the semantic diff."""
    from engine.api import TOOLS

    tools: dict[str, McpTool] = {}
    for name, spec in TOOLS.items():

        def call(
            args: dict[str, Any], progress: Progress | None = None, spec: ToolSpec = spec
        ) -> tuple[dict[str, Any], str]:
            heard = {"progress": progress} if progress is not None and spec.takes_progress else {}
            result = spec(engine if spec.needs_engine else None, **args, **heard)
            data = result.to_json()
            render = TEXT_RENDERERS.get(spec.name)
            text = render(data) if render else result.toon
            if spec.name in BY_NAME:
                from engine.api import also_named, name_note

                # get_symbol: id + qualified_name; the source and the graphs: id + symbol.
                qualified = str(data.get("qualified_name") or data["symbol"])
                others, total = also_named(engine, args["symbol"], data["id"])
                if others:
                    data = {**data, "also_named": others}
                    text = name_note(args["symbol"], qualified, others, total) + text
            return data, text

        description = spec.description.replace("``", "`")  # docstring markup, not for a model
        if spec.token_cost:
            description += f" Token cost: {spec.token_cost.rstrip('.').replace('``', '`')}."
        tools[name] = McpTool(name, description, bounded_schema(spec.input_schema()), call)
    for extra in (_search_tool(engine), _diff_tool(engine)):
        tools[extra.name] = McpTool(
            extra.name, extra.description, bounded_schema(extra.input_schema), extra.call
        )
    return tools


def bounded_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with a ``maxLength`` on every string (arguments and array items) that has none,
    so the client sees the limit that ``validate_arguments`` enforces."""

    def bound(name: str, prop: dict[str, Any]) -> dict[str, Any]:
        prop = dict(prop)
        if prop.get("type") == "string" and "maxLength" not in prop:
            prop["maxLength"] = MAX_TASK_CHARS if name == "task" else MAX_STRING_ARG
        if prop.get("type") == "array" and isinstance(prop.get("items"), dict):
            prop["items"] = bound(name, prop["items"])
        return prop

    props = schema.get("properties", {})
    return {**schema, "properties": {name: bound(name, prop) for name, prop in props.items()}}


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "boolean": (bool,),
    "array": (list,),
    "number": (int, float),
    "object": (dict,),
}


# A JSON type as a sentence names it; Python's names (NoneType, str) mean nothing to a model.
_A_TYPE = {
    "string": "a string",
    "integer": "an integer",
    "boolean": "a boolean (true or false)",
    "array": "an array",
    "number": "a number",
    "object": "an object",
}


def _a_type(value: Any) -> str:
    """The JSON type of ``value`` as a sentence names it: ``a string``, ``null``."""
    if value is None:
        return "null"
    for python, name in ((bool, "a boolean"), (int, "an integer"), (float, "a number"), (str, "a string")):
        if isinstance(value, python):
            return name
    return "an array" if isinstance(value, list) else "an object"


def validate_arguments(tool: McpTool, arguments: dict[str, Any] | None) -> dict[str, Any]:
    """Check arguments against the tool's schema; UsageError names the first problem."""
    required = tool.input_schema.get("required", [])
    # null for an optional argument is 'not given': many models fill every optional one with it.
    args: dict[str, Any] = {k: v for k, v in (arguments or {}).items() if v is not None or k in required}
    props: dict[str, Any] = tool.input_schema.get("properties", {})
    for name in required:
        if args.get(name) is None:
            null = " (it was null)" if name in args else ""
            raise UsageError(f"{tool.name}: missing required argument '{name}'{null}")
    for name, value in args.items():
        prop = props.get(name)
        if prop is None:
            raise UsageError(
                f"{tool.name}: unknown argument '{name}' (known: {', '.join(sorted(props)) or 'none'})"
            )
        kind = prop.get("type", "string")
        wanted = _JSON_TYPES.get(kind, (object,))
        if not isinstance(value, wanted) or (kind == "integer" and isinstance(value, bool)):
            raise UsageError(f"{tool.name}: '{name}' must be {_A_TYPE.get(kind, kind)}, got {_a_type(value)}")
        if kind == "integer":
            if "maximum" in prop and value > prop["maximum"]:
                raise UsageError(f"{tool.name}: '{name}' is {value}; the limit is {prop['maximum']}")
            if "minimum" in prop and value < prop["minimum"]:
                raise UsageError(f"{tool.name}: '{name}' is {value}; the minimum is {prop['minimum']}")
        if isinstance(value, str) and "maxLength" in prop and len(value) > prop["maxLength"]:
            raise UsageError(
                f"{tool.name}: '{name}' is {len(value):,} characters long; the limit is {prop['maxLength']:,}"
            )
        if isinstance(value, list):
            if "maxItems" in prop and len(value) > prop["maxItems"]:
                raise UsageError(
                    f"{tool.name}: '{name}' has {len(value)} items; the limit is {prop['maxItems']}"
                )
            items = prop.get("items", {})
            for item in value:
                if items.get("type") == "string" and not isinstance(item, str):
                    raise UsageError(
                        f"{tool.name}: every item of '{name}' must be a string, got {_a_type(item)}"
                    )
                if isinstance(item, str) and "maxLength" in items and len(item) > items["maxLength"]:
                    raise UsageError(
                        f"{tool.name}: an item of '{name}' is {len(item):,} characters long; "
                        f"the limit is {items['maxLength']:,}"
                    )
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
    from engine.policy.redaction import redact

    # Masked as every reply is: a config error quotes the value it refused, and a Chroma URL or
    # OLLAMA_HOST may carry user:password@ (the CLI masked it; the MCP error served it as given).
    text, hint = redact(err.message), redact(err.hint) if err.hint else ""
    data: dict[str, Any] = {"error_code": err.code, "error_message": text, "exit_code": err.exit_code}
    message = f"error[{err.code}]: {text}"
    if hint:
        # In the message too, as the CLI prints it: many clients show the model the message alone.
        data["hint"] = hint
        message += f" ({hint})"
    return rpc, message, data


def cap_reply(text: str) -> str:
    if len(text) <= MAX_REPLY_CHARS:
        return text
    return text[:MAX_REPLY_CHARS] + f"\n... truncated at {MAX_REPLY_CHARS:,} characters: {CUT_NOTE}"


CUT_NOTE = "ask for less (a lower limit, a module filter, get_symbol instead of get_module)"


def _json_chars(data: Any) -> int:
    """Characters of ``data`` as the reply carries it: compact JSON with non-ASCII kept (``json.dumps``'
    default spaces and ``\\uXXXX`` escapes cut a 24,000-token pack that fits the cap)."""
    return len(json.dumps(data, ensure_ascii=False, separators=(",", ":")))


def cap_structured(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` bounded like the text: over ``MAX_REPLY_CHARS`` of JSON, its largest list (or
    string) is halved until it fits, and ``truncated``/``truncation_note`` say so."""
    if _json_chars(data) <= MAX_REPLY_CHARS:
        return data
    data = json.loads(json.dumps(data))  # a private copy to cut

    def largest(node: Any) -> tuple[int, Any, Any] | None:
        """(size, container, key) of the largest cuttable list or string under ``node``."""
        best: tuple[int, Any, Any] | None = None
        children = (
            node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        )
        for key, value in children:
            size = len(json.dumps(value))
            cuttable = (isinstance(value, list) and len(value) > 1) or (
                isinstance(value, str) and len(value) > 200
            )
            if cuttable and (best is None or size > best[0]):
                best = (size, node, key)
            if isinstance(value, dict | list):
                inner = largest(value)
                if inner is not None and (best is None or inner[0] > best[0]):
                    best = inner
        return best

    while _json_chars(data) > MAX_REPLY_CHARS:
        found = largest(data)
        if found is None:
            break
        _, container, key = found
        value = container[key]
        container[key] = value[: len(value) // 2]
    data["truncated"] = True
    data["truncation_note"] = f"cut to fit {MAX_REPLY_CHARS:,} characters: {CUT_NOTE}"
    return data


def answer(
    tool: McpTool, arguments: dict[str, Any] | None, progress: Progress | None = None
) -> tuple[dict[str, Any], str]:
    """Exactly what a client receives for one call: (structured content, text).

    Arguments are validated, the tool runs, and both parts are redacted (a secret in a
    signature, a docstring or a snippet never reaches the client) and the text is capped.
    Typed errors propagate; the server turns them into MCP errors.
    """
    from engine.policy.redaction import redact_json, redact_quoted

    data, text = tool.call(validate_arguments(tool, arguments), progress)
    # Round-trip through JSON: dataclass leftovers and paths become plain JSON values.
    plain = json.loads(json.dumps(data, default=str))
    structured = plain if isinstance(plain, dict) else {"result": plain}
    return cap_structured(redact_json(structured)), cap_reply(redact_quoted(text))


def error_result(err: SemforaError) -> Any:
    """A failed call as the MCP spec wants a tool's failure: a result with ``isError`` that the
    model reads (the message, with the hint) and ``data``-like structured content."""
    import mcp_types as types

    _, message, data = error_payload(err)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)],
        structured_content={"ok": False, **data},
        is_error=True,
    )


class ProgressRelay:
    """The indexer's ``progress(phase, done, total)`` (called on a worker thread) relayed to the
    client as MCP progress notifications for the running call (sent only when the client gave a
    progress token). Throttled; ``progress`` only grows, across phases, as the spec requires."""

    def __init__(self, report: Callable[..., Any]) -> None:
        self._report = report
        self._phase = ""
        self._base = 0  # progress reached before the current phase
        self._last_total = 0
        self._last_sent = 0.0
        self._last_value = -1.0
        self._last_state: tuple[str, int, int] | None = None
        self._quiet_until = 0.0

    def quiet_for(self, seconds: float) -> None:
        """Send nothing for the next ``seconds``: the refresh before each call usually ends in
        tens of milliseconds, and its 'discovering' on every call was noise to the client."""
        self._quiet_until = time.monotonic() + seconds

    def __call__(self, phase: str, done: int, total: int) -> None:
        import anyio.from_thread

        now = time.monotonic()
        if (phase, done, total) == self._last_state or now < self._quiet_until:
            return  # nothing new (a wait that woke for nothing), or a refresh too short to mention
        self._last_state = (phase, done, total)
        new_phase = phase != self._phase
        if new_phase:
            self._base += self._last_total
            self._phase = phase
        self._last_total = max(total, done)
        if not new_phase and done < total and now - self._last_sent < PROGRESS_INTERVAL_S:
            return
        self._last_sent = now
        message = f"indexing: {phase} {done:,}/{total:,}" if total else f"indexing: {phase}"
        # Strictly growing, even when a phase starts where the last one ended.
        value = max(float(self._base + done), self._last_value + 0.001)
        self._last_value = value
        try:
            anyio.from_thread.run(self._report, value, None, message)
        except Exception as exc:  # a client gone mid-index must not stop the index being written
            log(f"semfora: progress not sent: {type(exc).__name__}: {exc}\n")


class IndexBuilding(SemforaError):
    """A call that needs the index came while it is being built and waited as long as it may."""

    code = "INDEX_BUILDING"
    exit_code = EXIT_UNAVAILABLE


class ServerIndex:
    """This server's index: built (or brought up to date) in the background from the moment the
    server starts, so the first call waits less; then refreshed before each call that answers
    from it. One run at a time, under the engine lock (the store has one connection).

    A call that comes while the start-up build runs waits for it: with a progress token until it
    ends, relaying where it is; without one at most ``wait`` seconds, then INDEX_BUILDING says how
    far it got (a client that gives up after 60 s would otherwise show a bare timeout).
    """

    def __init__(self, engine: Engine, engine_lock: threading.Lock, wait: float) -> None:
        self._engine = engine
        self._engine_lock = engine_lock
        self._wait = wait
        self._state = threading.Condition()
        self._built = False  # the start-up run ended (well or not; a failure is retried by calls)
        self._phase = "starting"
        self._done = 0
        self._total = 0
        self._started = time.monotonic()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        # A daemon: a client that leaves mid-build does not keep the server running (see serve()).
        self._thread = threading.Thread(target=self._build, name="semfora-mcp-index", daemon=True)
        self._thread.start()

    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _build(self) -> None:
        from engine.api import refresh_index

        busy: list[str] = []
        try:
            with self._engine_lock:
                refresh_index(
                    self._engine, refresh=True, progress=self._progressed, on_busy=busy.append, busy_wait=0
                )
        except SemforaError as err:  # the first call that needs the index tries again and says why
            log(f"semfora: the index was not built at start: error[{err.code}]: {err.message}\n")
        except Exception:  # a bug: logged; calls still try (and report) their own refresh
            log(traceback.format_exc())
        finally:
            with self._state:
                self._built = True
                self._state.notify_all()

    def _progressed(self, phase: str, done: int, total: int) -> None:
        with self._state:
            self._phase, self._done, self._total = phase, done, total
            self._state.notify_all()

    def waiting_for_lock(self) -> None:
        """The start-up run waits for another process that holds the index lock."""
        self._progressed("waiting for another semfora process to finish writing it", 0, 0)

    def describe(self) -> str:
        """Where the start-up build is, for a person: ``parsing 1,200/2,833, 14 s so far``."""
        with self._state:
            phase, done, total = self._phase, self._done, self._total
        seconds = time.monotonic() - self._started
        where = f"{phase} {done:,}/{total:,}" if total else phase
        return f"{where}, {seconds:.0f} s so far"

    def wait_until_built(self, relay: ProgressRelay | None) -> None:
        """Return once the start-up build has ended. With ``relay`` (the client gave a progress
        token) wait as long as it takes, relaying progress; without, raise INDEX_BUILDING after
        ``wait`` seconds."""
        root = self._engine.layout.root
        deadline = time.monotonic() + self._wait
        while True:
            with self._state:
                if self._built:
                    return
                remaining = deadline - time.monotonic()
                if relay is None and remaining <= 0:
                    break
                self._state.wait(PROGRESS_INTERVAL_S if relay is not None else remaining)
                if self._built:
                    return
                phase, done, total = self._phase, self._done, self._total
            if relay is not None:
                relay(phase, done, total)
        raise IndexBuilding(
            f"the index of this repository is being built ({self.describe()}); call again in a moment",
            hint=f"a call waits {self._wait:g} s for it; `semfora index --path {shlex.quote(str(root))}` "
            "builds it ahead of time",
        )

    def refresh(self, progress: ProgressRelay, busy: list[str]) -> None:
        """Bring the index up to date before a call answers from it (under the engine lock)."""
        from engine.api import refresh_index

        progress.quiet_for(PROGRESS_INTERVAL_S)
        refresh_index(self._engine, refresh=True, on_busy=busy.append, progress=progress, busy_wait=0)


class ServerBusy(SemforaError):
    """A call waited as long as it may for the call before it (calls run one at a time)."""

    code = "SERVER_BUSY"
    exit_code = EXIT_UNAVAILABLE


class CallTurn:
    """Calls that read the store take turns (it has one connection). A call behind a long one (a
    forced generate_index, which runs to its end even when its client cancelled it) waits with
    a progress token as long as it takes, hearing what it waits for; without one at most
    ``wait`` seconds, then SERVER_BUSY names the call ahead (a silent wait ran into the client's
    timeout)."""

    def __init__(self, lock: threading.Lock, wait: float) -> None:
        self._lock = lock
        self._wait = wait
        self._holder = ("", 0.0)  # the call that has the turn, and since when (monotonic)

    @contextmanager
    def take(self, name: str, relay: ProgressRelay | None) -> Iterator[None]:
        deadline = time.monotonic() + self._wait
        while not self._lock.acquire(timeout=PROGRESS_INTERVAL_S):
            ahead = self.ahead()
            if relay is not None:
                relay(f"waiting for {ahead}", 0, 0)
            elif time.monotonic() >= deadline:
                raise ServerBusy(
                    f"an earlier call ({ahead}) is still running; call again in a moment",
                    hint=f"calls run one at a time and a call waits {self._wait:g} s for the one before it; "
                    "a call the client cancelled still runs to its end",
                )
        self._holder = (name, time.monotonic())
        try:
            yield
        finally:
            self._holder = ("", 0.0)
            self._lock.release()

    def running(self) -> str:
        """The call that has the turn now, or ``""``."""
        return self._holder[0]

    def ahead(self) -> str:
        """The call that has the turn, for a person: ``generate_index, 14 s so far``."""
        name, since = self._holder
        if not name:
            return "the index being brought up to date"
        return f"{name}, {time.monotonic() - since:.0f} s so far"


def build_server(
    path: str | os.PathLike[str] | None = None, *, first_call_wait: float = DEFAULT_FIRST_CALL_WAIT_S
) -> Any:
    """The MCP server for the repository at ``path`` (a low-level ``mcp`` Server); its index
    starts building in the background once ``serve`` starts ``server.semfora_index``."""
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    from engine.api import Engine

    def on_warning(warning: Any) -> None:
        if warning.code == "INDEX_WAITING":
            index.waiting_for_lock()
        log(f"semfora: warning[{warning.code}]: {warning.message}\n")

    engine = Engine.open(path, on_warning=on_warning)
    tools = build_tools(engine)
    # The store holds one SQLite connection: calls run one at a time, off the event loop.
    engine_lock = threading.Lock()
    index = ServerIndex(engine, engine_lock, first_call_wait)
    turn = CallTurn(engine_lock, first_call_wait)

    def run_tool(
        tool: McpTool, args: dict[str, Any] | None, progress: ProgressRelay, asked_progress: bool
    ) -> tuple[dict[str, Any], str]:
        if tool.name in NO_INDEX:  # reads files or nothing, never the store: no wait, no lock
            return answer(tool, args)
        validate_arguments(tool, args)  # a bad call fails at once, not after the index is built
        index.wait_until_built(progress if asked_progress else None)
        busy: list[str] = []  # why the index was not refreshed (another process holds its lock)
        with turn.take(tool.name, progress if asked_progress else None):
            if tool.name not in NO_REFRESH:
                index.refresh(progress, busy)
            note = f"index not refreshed ({busy[0]}); answers may not show the latest edits" if busy else ""
            if note:
                log(f"semfora: warning: {note}\n")
            try:
                structured, text = answer(tool, args, progress if asked_progress else None)
            except SemforaError as err:
                if note:  # a miss may be a symbol added since: the agent should know the index is behind
                    err.hint = f"{err.hint}; {note}" if err.hint else note
                raise
        if note:
            text = f"note: {note}\n{text}"
            structured = {**structured, "note": note}
        return structured, text

    async def list_tools(ctx: Any, params: Any) -> Any:
        return tool_listing(tools)

    async def call_tool(ctx: Any, params: Any) -> Any:
        tool = tools.get(params.name)
        if tool is None:
            # A protocol error (the MCP spec's own case): the client asked for what tools/list never offered.
            err = UsageError(f"unknown tool '{params.name}'", hint=f"known tools: {', '.join(sorted(tools))}")
            rpc, message, payload = error_payload(err)
            raise MCPError(rpc, message, data=payload)
        asked_progress = (params.meta or {}).get("progress_token") is not None
        try:
            progress = ProgressRelay(ctx.session.report_progress)
            # Abandoned on cancel (the client cancelled it, or left): the thread runs on, holding
            # the turn (a later call waits for it, see CallTurn), and serve() does not wait for it.
            structured, text = await anyio.to_thread.run_sync(
                run_tool, tool, params.arguments, progress, asked_progress, abandon_on_cancel=True
            )
        except SemforaError as err:
            return error_result(err)
        except Exception as exc:  # a bug: the model gets one line, stderr the traceback; the server lives on
            log(traceback.format_exc())
            return error_result(
                SemforaError(
                    f"{tool.name} failed: {type(exc).__name__}: {exc}",
                    code="INTERNAL",
                    hint="the traceback is on the server's stderr; please report it",
                )
            )
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
    server.semfora_index = index  # type: ignore[attr-defined]  # started by serve()
    server.semfora_turn = turn  # type: ignore[attr-defined]  # a call still running when serve() ends
    return server


def tool_listing(tools: dict[str, McpTool]) -> Any:
    """The reply to ``tools/list``."""
    import mcp_types as types

    return types.ListToolsResult(
        tools=[
            types.Tool(name=t.name, description=t.description, input_schema=t.input_schema)
            for t in tools.values()
        ]
    )


def _run_stdio(server: Any) -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)


def serve_failed_start(err: SemforaError) -> int:
    """Serve a client whose server could not start (a bad ``--path``, an unwritable cache).

    A server that exited before the handshake showed the client only "Connection closed", the
    reason buried in a log. This one completes the handshake, says the reason in its instructions,
    lists the tools, and answers every call with the typed error, so the agent reads it and can
    tell its user. The error is also the first line on stderr; the exit code is the error's own.
    """
    from mcp.server.lowlevel import Server

    log(f"error[{err.code}]: {err.message}\n")
    fix = "fix `semfora mcp --path` in the MCP client's configuration, then restart the server"
    err.hint = f"{err.hint}; {fix}" if err.hint else fix
    tools = build_tools(cast("Engine", None))  # listed only: every call answers the error
    _, message, _data = error_payload(err)

    async def list_tools(ctx: Any, params: Any) -> Any:
        return tool_listing(tools)

    async def call_tool(ctx: Any, params: Any) -> Any:
        return error_result(err)

    server = Server(
        SERVER_NAME,
        version=SERVER_VERSION,
        instructions=f"semfora could not start for this repository: {message}",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    _run_stdio(server)
    return err.exit_code


def serve(
    path: str | os.PathLike[str] | None = None, *, first_call_wait: float = DEFAULT_FIRST_CALL_WAIT_S
) -> int:
    """Run the server on stdin/stdout until the client disconnects; the index starts building at
    once, in the background, and a build under way when the client leaves is abandoned."""
    try:
        server = build_server(path, first_call_wait=first_call_wait)
    except SemforaError as err:
        return serve_failed_start(err)
    server.semfora_index.start()
    try:
        _run_stdio(server)
    finally:
        building = server.semfora_index.running()
        call = server.semfora_turn.running()
        if building or call:
            # The client is gone (an SDK client kills the server 2 s after closing stdin anyway).
            # Stopping mid-build is safe: nothing half-written is committed, the index lock is
            # released with this process, its workers exit with it, and the next start goes on.
            what = "the index was being built" if building else f"{call} was running"
            log(f"semfora: the client left while {what}; the next start finishes it\n")
            # The process's exit handlers run, but not the wait for the build's worker pool that
            # a normal exit adds (threading's own exit hooks); os._exit skips that wait.
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
        server.semfora_engine.close()
    return 0
