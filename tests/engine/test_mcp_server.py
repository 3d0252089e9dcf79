"""`semfora mcp` end to end, through the MCP SDK's own stdio client spawning the real command."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import SEMFORA
from tests.engine.mcp_client import mcp_session, tool_error

APP = '''"""Payments."""

import requests


def charge(customer, amount):
    """Charge a customer."""
    return requests.post("https://pay.example.com", json={"c": customer, "a": amount})


class Ledger:
    def record(self, entry):
        return charge(entry.customer, entry.amount)
'''

REFUNDS = '''"""Refunds of earlier charges."""


class RefundTooLarge(Exception):
    """A refund may not exceed what was charged."""


def refund(charge, amount):
    """Give back part or all of a charge."""
    if amount <= 0:
        raise ValueError("refund amount must be positive")
    if amount > charge.amount:
        raise RefundTooLarge(f"{amount} exceeds the original charge of {charge.amount}")
    charge.refunded += amount
    return charge


def list_refunds(ledger):
    """Every refund in a ledger."""
    return [e for e in ledger.entries if e.kind == "refund"]
'''


async def test_tools_search_symbols_and_bad_arguments(make_repo) -> None:
    from mcp.shared.exceptions import MCPError

    root = make_repo({"pay/app.py": APP, "README.md": "# pay\n"})

    async def body(session):
        listed = (await session.list_tools()).tools
        names = {t.name for t in listed}
        assert {
            "get_repo_overview",
            "search_symbols",
            "get_symbol",
            "get_callers",
            "search",
            "analyze_diff",
            "list_languages",
            "check_index",
            "generate_index",
            "analyze_file",
        } <= names
        assert all("Token cost" in t.description for t in listed), [
            t.name for t in listed if "Token cost" not in t.description
        ]

        found = await session.call_tool("search_symbols", {"query": "charge"})
        assert not found.is_error
        assert "charge" in found.content[0].text
        symbol = await session.call_tool("get_symbol", {"symbol": "charge"})
        text = symbol.content[0].text
        assert "pay/app.py" in text and "charge" in text
        assert symbol.structured_content

        hybrid = await session.call_tool("search", {"query": "charge customer", "mode": "fts"})
        assert any(r["file"] == "pay/app.py" for r in hybrid.structured_content["results"])

        too_many = tool_error(await session.call_tool("search_symbols", {"query": "x", "limit": 5000}))
        assert too_many["error_code"] == "USAGE" and "limit" in too_many["message"]
        wrong_type = tool_error(await session.call_tool("get_symbol", {"symbol": 42}))
        assert wrong_type["error_code"] == "USAGE"
        missing = tool_error(await session.call_tool("get_symbol", {"symbol": "no_such_symbol_anywhere"}))
        assert missing["error_code"] in ("SYMBOL_NOT_FOUND", "NOT_FOUND")
        # A near miss names the symbol it probably meant.
        typo = tool_error(await session.call_tool("get_symbol", {"symbol": "chrage"}))
        assert typo["error_code"] == "SYMBOL_NOT_FOUND"
        assert typo["hint"].startswith("nearest names: ") and "charge" in typo["hint"]
        # The message alone says it too: many clients show the model nothing else.
        assert typo["message"] == f"error[SYMBOL_NOT_FOUND]: no symbol named 'chrage' ({typo['hint']})"
        outside = tool_error(await session.call_tool("analyze_file", {"path": "../../etc/passwd"}))
        assert outside["error_code"].startswith("PATH")
        # A tool nobody listed is the one protocol error.
        with pytest.raises(MCPError) as unknown:
            await session.call_tool("no_such_tool", {})
        assert unknown.value.data["error_code"] == "USAGE" and "get_symbol" in unknown.value.data["hint"]
        # The server is still healthy after errors.
        langs = await session.call_tool("list_languages", {})
        assert "python" in langs.content[0].text

    await mcp_session(root, body)


async def test_get_context_hands_an_agent_the_code_for_a_task(make_repo) -> None:
    root = make_repo({"pay/app.py": APP, "pay/refunds.py": REFUNDS, "README.md": "# pay\n"})
    cache = os.environ["XDG_CACHE_HOME"]

    async def body(session):
        listed = {t.name: t for t in (await session.list_tools()).tools}
        tool = listed["get_context"]
        assert tool.input_schema["required"] == ["task"] and "Token cost" in tool.description
        task = "a refund larger than the original charge should be refused, but it goes through"
        result = await session.call_tool("get_context", {"task": task, "budget": 2000})
        assert not result.is_error
        data = result.structured_content
        assert data["budget"] == 2000 and data["total_tokens"] <= 2000
        code = [i for i in data["items"] if i["kind"] == "source"]
        assert code[0]["symbol"] == "refund" and code[0]["file"] == "pay/refunds.py"
        # The reply text is the items' texts: what the agent reads is what the pack holds.
        text = result.content[0].text
        assert all(i["text"] in text for i in data["items"])
        assert "def refund(charge, amount):" in text and "raise RefundTooLarge" in text
        too_big = tool_error(await session.call_tool("get_context", {"task": task, "budget": 10**6}))
        assert too_big["error_code"] == "USAGE"

    await mcp_session(root, body)
    # The server wrote its index under the test's cache home, not ~/.cache.
    assert list(Path(cache).rglob("index.db"))


def _billing_repo(modules: int = 14, functions: int = 14) -> dict[str, str]:
    """A billing package large enough to fill a 24,000-token pack: invoices, discounts, taxes."""
    files = {}
    for m in range(modules):
        defs = [
            f'def invoice_total_{m}_{f}(lines, discount="SAVE{f}", tax_rate=0.{m % 9 + 1}):\n'
            f'    """Total of invoice lines {m}.{f}: "discount" applies before tax, rounded to cents."""\n'
            "    subtotal = sum(line['price'] * line['qty'] for line in lines)\n"
            '    if discount and discount.startswith("SAVE"):\n'
            f"        subtotal -= subtotal * {f} / 100\n"
            "    return round(subtotal * (1 + tax_rate), 2)\n"
            for f in range(functions)
        ]
        files[f"billing/invoices_{m}.py"] = "\n\n".join(defs)
    return files


async def test_get_context_costs_its_budget_as_the_client_receives_it(make_repo) -> None:
    """Claude Code gives the model a tool's structured content (JSON) when there is one: the pack's
    keys, reasons and escaped code made an 8,000-token pack ~12,000 tokens there, and a 24,000-token
    one went over a reply's 100,000 characters and was cut in half (`truncated`)."""
    root = make_repo(_billing_repo())
    task = "invoice totals are rounded wrongly when a SAVE discount applies before tax"

    async def body(session):
        code = {}
        for budget in (2000, 8000, 24_000):
            result = await session.call_tool("get_context", {"task": task, "budget": budget})
            assert not result.is_error, result.content[0].text
            data = result.structured_content
            sent = len(json.dumps(data, ensure_ascii=False, separators=(",", ":")))
            assert sent / 4 <= budget, (budget, sent / 4)
            assert "truncated" not in data and data["budget"] == budget
            assert any(i["kind"] == "source" and "invoice_total" in i["symbol"] for i in data["items"])
            assert len(result.content[0].text) / 4 <= budget  # the text, footer included
            code[budget] = data["total_tokens"]
        assert 400 < code[2000] < code[8000] <= code[24_000], code  # still packs, larger when allowed
        # Below what one item's keys and reason cost, the smallest pack says it is over.
        small = await session.call_tool("get_context", {"task": task, "budget": 500})
        sent = len(json.dumps(small.structured_content, ensure_ascii=False, separators=(",", ":"))) // 4
        assert sent > 500 and "over the 500 asked: this is the smallest pack" in small.content[0].text
        assert any("over the 500 asked" in n for n in small.structured_content["notes"])

    await mcp_session(root, body)


async def test_analyze_diff_over_mcp(make_repo) -> None:
    root = make_repo({"pay/app.py": APP})
    (root / "pay" / "app.py").write_text(
        APP.replace("def charge(customer, amount):", "def charge(customer, amount, currency):")
    )

    async def body(session):
        result = await session.call_tool("analyze_diff", {})
        data = result.structured_content
        assert data["target"] == "WORKING"
        changed = data["files"][0]["symbols"][0]
        assert changed["qualified_name"] == "charge" and changed["signature_changed"]
        assert "charge" in result.content[0].text

    await mcp_session(root, body)


def test_help_does_not_import_mcp() -> None:
    import subprocess
    import sys

    code = (
        "import sys\nfrom semfora_cli.main import main\nsys.argv=['semfora','mcp','--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\nprint('mcp' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().endswith("False")


def test_argument_validation_and_error_mapping_without_a_server() -> None:
    from hypothesis import given
    from hypothesis import strategies as st

    from engine.errors import NotFoundError, UsageError
    from engine.mcp_server import MAX_REPLY_CHARS, McpTool, cap_reply, error_payload, validate_arguments

    tool = McpTool(
        "t",
        "d",
        {
            "type": "object",
            "properties": {
                "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "ids": {"type": "array", "maxItems": 2},
            },
            "required": ["mode"],
        },
        lambda args: ({}, ""),
    )

    @given(st.integers())
    def limits_are_enforced(limit: int) -> None:
        if 1 <= limit <= 100:
            assert validate_arguments(tool, {"mode": "a", "limit": limit})["limit"] == limit
        else:
            with pytest.raises(UsageError):
                validate_arguments(tool, {"mode": "a", "limit": limit})

    limits_are_enforced()
    for bad in (
        {},
        {"mode": "c"},
        {"mode": "a", "limit": True},
        {"mode": "a", "ids": ["1", "2", "3"]},
        {"mode": "a", "other": 1},
    ):
        with pytest.raises(UsageError):
            validate_arguments(tool, bad)
    rpc, message, data = error_payload(NotFoundError("no symbol x", code="SYMBOL_NOT_FOUND"))
    assert (rpc, data["error_code"], data["exit_code"]) == (-32002, "SYMBOL_NOT_FOUND", 1)
    assert message == "error[SYMBOL_NOT_FOUND]: no symbol x"
    long = "x" * (MAX_REPLY_CHARS + 10)
    assert len(cap_reply(long)) < MAX_REPLY_CHARS + 200 and "truncated" in cap_reply(long)


async def test_edits_between_calls_are_seen(make_repo) -> None:
    """An agent edits files between calls: the next answer reads the files as they are now."""
    root = make_repo({"pay/app.py": APP, "pay/refunds.py": REFUNDS})

    async def body(session):
        first = await session.call_tool("get_symbol_source", {"symbol": "charge"})
        assert "def charge(customer, amount):" in first.structured_content["source"]
        # Lines added above `charge`, a new function, a file renamed.
        (root / "pay" / "app.py").write_text(
            '"""Payments, moved down."""\n\nimport os\n\n' + APP + "\n\ndef void(c):\n    return c\n"
        )
        (root / "pay" / "refunds.py").rename(root / "pay" / "returns.py")
        moved = await session.call_tool("get_symbol_source", {"symbol": "charge"})
        assert moved.structured_content["source"].startswith("def charge(customer, amount):")
        assert moved.structured_content["start_line"] == first.structured_content["start_line"] + 4
        assert not (await session.call_tool("get_symbol", {"symbol": "void"})).is_error
        renamed = await session.call_tool("get_symbol", {"symbol": "refund"})
        assert renamed.structured_content["file"] == "pay/returns.py"
        task = await session.call_tool(
            "get_context", {"task": "refund larger than the charge", "budget": 1000}
        )
        assert all(i["file"] != "pay/refunds.py" for i in task.structured_content["items"])
        # Deleted: not found, typed (not a read error on a file that is gone).
        (root / "pay" / "returns.py").unlink()
        gone = tool_error(await session.call_tool("get_symbol_source", {"symbol": "refund"}))
        assert gone["error_code"] == "SYMBOL_NOT_FOUND"

    await mcp_session(root, body)


async def test_errors_are_tool_results_the_model_reads(make_repo) -> None:
    """Bad, wrong-typed and huge arguments fail as results with isError (not protocol errors),
    one line each, and every reply stays bounded whatever the arguments."""
    from engine.mcp_server import MAX_REPLY_CHARS, MAX_STRING_ARG

    root = make_repo({"pay/app.py": APP})

    async def body(session):
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert tools["search"].input_schema["properties"]["query"]["maxLength"] == MAX_STRING_ARG
        assert tools["get_symbols"].input_schema["properties"]["ids"]["items"]["maxLength"] == MAX_STRING_ARG
        huge = "word " * 200_000
        for name, args in (
            ("search", {"query": huge}),
            ("search_symbols", {"query": huge}),
            ("get_symbol", {"symbol": huge}),
            ("get_context", {"task": huge}),
            ("get_symbols", {"ids": [1, 2]}),
            ("get_symbols", {"ids": [huge]}),
        ):
            result = await session.call_tool(name, args)
            failed = tool_error(result)
            assert failed["error_code"] == "USAGE", (name, failed)
            assert len(failed["message"]) < 300 and "\n" not in failed["message"]
        # A wide reply is cut in both parts, and says so in both.
        wide = await session.call_tool("list_symbols", {"limit": 200})
        assert len(json.dumps(wide.structured_content)) <= MAX_REPLY_CHARS

    await mcp_session(root, body)


async def test_abrupt_disconnect_ends_the_server(make_repo, tmp_path: Path) -> None:
    """A client that dies without a shutdown leaves no server behind (nor its index lock)."""
    import signal
    import subprocess
    import sys
    import time

    root = make_repo({"pay/app.py": APP})
    client = tmp_path / "client.py"
    client.write_text(
        "import anyio, os, sys\n"
        "from mcp.client.session import ClientSession\n"
        "from mcp.client.stdio import StdioServerParameters, stdio_client\n"
        "async def main():\n"
        f"    p = StdioServerParameters(command={SEMFORA!r}, args=['mcp', '--path', {str(root)!r}], env=dict(os.environ))\n"
        "    async with stdio_client(p) as (r, w), ClientSession(r, w) as s:\n"
        "        await s.initialize()\n"
        "        await s.call_tool('list_modules', {})\n"
        "        print(os.getpid(), flush=True)\n"
        "        os.kill(os.getpid(), 9)\n"
        "anyio.run(main)\n"
    )
    proc = subprocess.run([sys.executable, str(client)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL
    client_pid = proc.stdout.strip()

    def servers() -> list[str]:
        out = subprocess.run(["ps", "-eo", "pid,ppid,args"], capture_output=True, text=True).stdout
        return [ln for ln in out.splitlines() if "mcp --path" in ln and str(root) in ln]

    deadline = time.monotonic() + 30
    while servers() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not servers(), (client_pid, servers())


async def test_get_symbol_by_name_lists_its_calls(make_repo) -> None:
    """get_symbol by name (what an agent types) shows what the symbol calls, as by id."""
    root = make_repo({"pay/app.py": APP})

    async def body(session):
        by_name = (await session.call_tool("get_symbol", {"symbol": "Ledger.record"})).structured_content
        assert by_name["calls_total"] == 1 and by_name["calls"][0]["name"] == "charge"
        by_id = (await session.call_tool("get_symbol", {"symbol": by_name["id"]})).structured_content
        assert by_id["calls"] == by_name["calls"]
        short = (await session.call_tool("get_symbol", {"symbol": "record"})).structured_content
        assert short["calls_total"] == 1

    await mcp_session(root, body)


def test_schemas_state_the_limits_the_tools_enforce(make_repo) -> None:
    """What tools/list promises is what a call accepts: a value the schema allows never fails
    validation for its bounds, a value it forbids fails before the tool runs."""
    from engine.api import Engine
    from engine.errors import UsageError
    from engine.mcp_server import build_tools, validate_arguments

    with Engine.open(make_repo({"pay/app.py": APP})) as engine:
        tools = build_tools(engine)
        budget = tools["get_context"].input_schema["properties"]["budget"]
        assert (budget["minimum"], budget["maximum"]) == (500, 24_000)
        assert tools["get_call_graph"].input_schema["properties"]["direction"]["enum"] == [
            "callers",
            "callees",
            "both",
        ]
        assert tools["list_symbols"].input_schema["properties"]["risk"]["enum"] == ["low", "medium", "high"]
        for tool in tools.values():
            assert "``" not in tool.description, tool.name
            # The cost is its docstring's whole paragraph: get_call_graph's was cut mid-parenthesis.
            assert tool.description.count("(") == tool.description.count(")"), tool.description
            for name, prop in tool.input_schema["properties"].items():
                assert prop.get("description"), (tool.name, name)
                if "default" in prop:
                    required = {r: "x" for r in tool.input_schema["required"]}
                    validate_arguments(tool, {**required, name: prop["default"]})
                if "minimum" in prop:
                    required = {r: "x" for r in tool.input_schema["required"]}
                    with pytest.raises(UsageError):
                        validate_arguments(tool, {**required, name: prop["minimum"] - 1})
        # The real call agrees with the schema at its lower bound.
        tools["get_context"].call(validate_arguments(tools["get_context"], {"task": "charge", "budget": 500}))


async def test_symbol_source_text_is_code_a_model_can_read(make_repo) -> None:
    """get_symbol_source's text is the code's own lines under a header, not one escaped string."""
    body_lines = "\n".join(f"    total += {i}" for i in range(450))
    big = f"def big():\n    total = 0\n{body_lines}\n    return total\n"
    root = make_repo({"pay/refunds.py": REFUNDS, "pay/big.py": big})

    async def body(session):
        result = await session.call_tool("get_symbol_source", {"symbol": "refund"})
        text = result.content[0].text
        assert text.startswith("refund  pay/refunds.py:8-15  id ")
        assert 'def refund(charge, amount):\n    """Give back part or all of a charge."""\n' in text
        assert "\\n" not in text
        cut = (await session.call_tool("get_symbol_source", {"symbol": "big"})).content[0].text
        assert "    total += 397\n" in cut and "total += 449" not in cut
        assert cut.rstrip().endswith("ask for a method of it, or read the rest of the file")

    await mcp_session(root, body)


async def test_a_shared_name_says_which_symbol_answered_and_lists_the_others(make_repo) -> None:
    """`record` names two methods: the reply says which one it is and how to get the other."""
    audit = "class Audit:\n    def record(self, event):\n        return event\n"
    root = make_repo({"pay/app.py": APP, "pay/audit.py": audit})

    async def body(session):
        for tool in ("get_symbol", "get_symbol_source", "get_callers"):
            result = await session.call_tool(tool, {"symbol": "record"})
            data, text = result.structured_content, result.content[0].text
            (other,) = data["also_named"]
            assert other["qualified_name"] != (data.get("qualified_name") or data["symbol"])
            assert text.startswith("note: 2 symbols are named 'record'; this is ")
            assert other["id"] in text
            chosen = await session.call_tool("get_symbol", {"symbol": other["id"]})
            assert chosen.structured_content["qualified_name"] == other["qualified_name"]
        unique = await session.call_tool("get_symbol", {"symbol": "Audit.record"})
        assert "also_named" not in unique.structured_content
        assert not unique.content[0].text.startswith("note:")

    await mcp_session(root, body)


async def test_empty_query_or_module_is_a_mistake_not_an_answer(make_repo) -> None:
    """An empty search is refused as the CLI refuses it (not 'no results'); an empty module is
    refused (it used to return the whole repository's first 500 symbols)."""
    root = make_repo({"pay/app.py": APP})

    async def body(session):
        for query in ("", "   "):
            assert tool_error(await session.call_tool("search", {"query": query}))["error_code"] == "USAGE"
        empty = tool_error(await session.call_tool("get_module", {"module": ""}))
        assert empty["error_code"] == "USAGE" and "list_modules" in empty["message"]
        assert not (await session.call_tool("get_module", {"module": "pay"})).is_error

    await mcp_session(root, body)


async def test_search_symbols_puts_the_name_as_typed_first(make_repo) -> None:
    """`Ledger` finds the class before the `ledger` functions that sort earlier by place."""
    root = make_repo(
        {
            "a/admin.py": "def ledger(x):\n    return x\n\n\nclass View:\n    def ledger(self):\n        return 1\n",
            "pay/app.py": APP,
        }
    )

    async def body(session):
        found = (await session.call_tool("search_symbols", {"query": "Ledger"})).structured_content
        assert [(s["name"], s["kind"]) for s in found["symbols"]][:1] == [("Ledger", "class")]
        lower = (await session.call_tool("search_symbols", {"query": "ledger"})).structured_content
        assert lower["symbols"][0]["name"] == "ledger"

    await mcp_session(root, body)


async def test_analyze_file_refuses_what_the_index_skips(make_repo) -> None:
    """A binary file with a source extension is refused, as the indexer skips it, not parsed into
    hundreds of syntax errors; an oversized one says the limit. Both are typed (they were
    error[USAGE], which reads as the agent's mistake) and say what to do instead."""
    root = make_repo({"pay/app.py": APP, "blob.py": bytes(range(256)) * 20, "big.py": "x = 1\n" * 200_000})

    async def body(session):
        binary = tool_error(await session.call_tool("analyze_file", {"path": "blob.py"}))
        assert binary["error_code"] == "BINARY_FILE" and "binary" in binary["message"]
        big = tool_error(await session.call_tool("analyze_file", {"path": "big.py"}))
        assert (
            big["error_code"] == "FILE_TOO_LARGE"
            and "index.max_file_bytes (1,000,000 bytes)" in big["message"]
        )
        assert "your own file tools" in big["message"]
        assert not (await session.call_tool("analyze_file", {"path": "pay/app.py"})).is_error

    await mcp_session(root, body)


def test_started_by_hand_it_says_what_it_is_waiting_for(make_repo) -> None:
    """At a terminal, `semfora mcp` says on stderr that it serves MCP on stdio (it looked hung);
    stdout stays the protocol's, empty."""
    import pty
    import selectors
    import signal
    import subprocess

    root = make_repo({"pay/app.py": APP})
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(
        [SEMFORA, "mcp", "--path", str(root)], stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert proc.stderr is not None
        # Wait for the line (a state), with a bound so the old, silent command fails instead of hanging.
        # (A selector, not select.select: late in a full run this process's descriptors pass 1024.)
        with selectors.DefaultSelector() as waiting:
            waiting.register(proc.stderr, selectors.EVENT_READ)
            ready = waiting.select(timeout=20)
        assert ready, "nothing on stderr: a person at the terminal sees a command that looks hung"
        line = proc.stderr.readline().decode()
        assert line.startswith(f"semfora mcp: serving {root} over MCP on stdin/stdout")
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
        assert out == b""
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(controller)
        os.close(terminal)


def test_structured_content_is_bounded_like_the_text() -> None:
    """Whatever a tool returns, the structured content sent stays under the reply cap (plus the
    note saying it was cut); a reply under the cap is sent untouched."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from engine.mcp_server import MAX_REPLY_CHARS, cap_structured

    leaf = st.one_of(st.integers(), st.text(max_size=50), st.just("x" * 30_000))
    tree = st.recursive(
        leaf,
        lambda kids: st.lists(kids, max_size=40) | st.dictionaries(st.text(max_size=8), kids, max_size=5),
        max_leaves=200,
    )

    @settings(max_examples=60, deadline=None)
    @given(st.dictionaries(st.text(max_size=8), tree, min_size=1, max_size=4))
    def bounded(data: dict) -> None:
        out = cap_structured(data)
        size = len(sent(data))  # as the reply carries it: compact, non-ASCII kept
        if size <= MAX_REPLY_CHARS:
            assert out == data
        else:
            assert out["truncated"] is True and "ask for less" in out["truncation_note"]
            assert len(sent(out)) <= MAX_REPLY_CHARS + 300

    def sent(data: dict) -> str:
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))

    bounded()
    wide = {"symbols": [{"id": str(i), "signature": "def f(" + "a, " * 40 + ")"} for i in range(2_000)]}
    cut = cap_structured(wide)
    assert 0 < len(cut["symbols"]) < 2_000 and cut["symbols"][0] == wide["symbols"][0]


def test_a_bad_path_is_answered_to_the_client_not_a_closed_connection(tmp_path: Path) -> None:
    """`semfora mcp --path /gone` exited before the handshake: the client saw only
    "Connection closed" and the reason sat in a log. Now the handshake completes, its
    instructions and every call carry the typed error, and the exit code is still 2."""
    from tests.engine.mcp_client import INITIALIZE, spawn_mcp

    gone = tmp_path / "no such repo"
    proc = spawn_mcp(gone)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

    def ask(message: dict[str, object]) -> dict[str, object]:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        while True:  # the answer line, not a time
            line = proc.stdout.readline()
            assert line, "the server closed stdout before answering"
            answer: dict[str, object] = json.loads(line)
            if answer.get("id") == message["id"]:
                return answer

    try:
        init = ask(INITIALIZE)["result"]
        assert "error[PATH_NOT_FOUND]" in init["instructions"]  # type: ignore[index]
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        listed = ask({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})["result"]
        assert "get_context" in {t["name"] for t in listed["tools"]}  # type: ignore[index]
        called = ask(
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "get_repo_overview"}}
        )["result"]
        assert called["isError"] is True  # type: ignore[index]
        assert called["structuredContent"]["error_code"] == "PATH_NOT_FOUND"  # type: ignore[index]
        text = called["content"][0]["text"]  # type: ignore[index]
        assert str(gone) in text and "semfora mcp --path" in text
        proc.stdin.close()
        assert proc.wait(timeout=60) == 2
        assert proc.stderr.readline().startswith(f"error[PATH_NOT_FOUND]: path does not exist: {gone}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


async def test_the_sdk_client_reads_a_bad_path_from_the_tool_call(tmp_path: Path) -> None:
    """Through the MCP SDK's client, as an agent meets it: a call fails with the reason."""

    async def body(session):
        return tool_error(await session.call_tool("search", {"query": "charge"}))

    error = await mcp_session(tmp_path / "gone", body)
    assert error["error_code"] == "PATH_NOT_FOUND" and "restart the server" in error["message"]


async def test_a_client_started_from_the_file_system_root_hears_why_nothing_answers() -> None:
    """Claude Desktop starts servers in `/`: `semfora mcp --path .` from there began indexing the
    whole disk in the background; it now answers each call with PATH_TOO_BROAD at once."""

    async def body(session):
        return tool_error(await session.call_tool("get_repo_overview", {}))

    error = await mcp_session(Path("/"), body)
    assert error["error_code"] == "PATH_TOO_BROAD" and "--path" in error["message"]


async def test_a_cut_listing_says_so_and_a_filter_matching_nothing_says_why(make_repo) -> None:
    """list_symbols answered exactly `limit` rows with no sign that 60 more existed, and a module
    or kind that does not exist answered `symbols: []`, as if the repository had none: an agent
    took both at their word."""
    files = {f"pkg/m{i}.py": f"def f{i}(x):\n    return x\n\n\nclass C{i}:\n    pass\n" for i in range(40)}
    root = make_repo({**files, "pay/app.py": APP})

    async def body(session):
        page = await session.call_tool("list_symbols", {"module": "pkg", "limit": 20})
        data = page.structured_content
        assert len(data["symbols"]) == 20 and data["total"] == 80 and data["truncated"] is True
        assert "20 of 80" in page.content[0].text and "module, kind or risk" in page.content[0].text
        whole = (await session.call_tool("list_symbols", {"module": "pay", "limit": 50})).structured_content
        assert whole["total"] == len(whole["symbols"]) and whole["truncated"] is False
        for tool, args in (
            ("list_symbols", {"module": "src/pay"}),
            ("search_symbols", {"query": "charge", "module": "src/pay"}),
        ):
            missing = tool_error(await session.call_tool(tool, args))
            assert missing["error_code"] == "MODULE_NOT_FOUND", missing
            assert "'src/pay'" in missing["message"] and "list_modules" in missing["hint"]
        for tool, args in (
            ("list_symbols", {"kind": "func"}),
            ("search_symbols", {"query": "charge", "kind": "func"}),
        ):
            bad_kind = tool_error(await session.call_tool(tool, args))
            assert bad_kind["error_code"] == "USAGE" and "'func'" in bad_kind["message"]
            assert "function" in bad_kind["hint"] and "class" in bad_kind["hint"]
        # A real module and kind with no match is an empty answer, not an error.
        none = await session.call_tool("list_symbols", {"module": "pay", "kind": "class", "risk": "high"})
        assert not none.is_error and none.structured_content["symbols"] == []

    await mcp_session(root, body)


async def test_null_for_an_optional_argument_means_not_given(make_repo) -> None:
    """Many models fill every optional argument with null; each such call was refused
    ('module' must be a string, got NoneType) and the agent had to guess why. A required one
    given as null is still missing, said in those words; type errors read as English."""
    root = make_repo({"pay/app.py": APP})

    async def body(session):
        found = await session.call_tool(
            "search_symbols", {"query": "charge", "module": None, "kind": None, "risk": None, "limit": None}
        )
        assert not found.is_error, found.content[0].text
        assert found.structured_content["symbols"][0]["name"] == "charge"
        source = await session.call_tool("get_symbol_source", {"symbol": "charge", "context": None})
        assert not source.is_error and source.structured_content["start_line"] == 6
        missing = tool_error(await session.call_tool("get_symbol", {"symbol": None}))
        assert (
            missing["message"] == "error[USAGE]: get_symbol: missing required argument 'symbol' (it was null)"
        )
        wrong = tool_error(await session.call_tool("search", {"query": "charge", "limit": "5"}))
        assert wrong["message"] == "error[USAGE]: search: 'limit' must be an integer, got a string"

    await mcp_session(root, body)


async def test_get_symbols_answers_for_the_ids_it_finds_and_names_the_others(make_repo) -> None:
    """An id changes when its symbol gains a parameter, so a list of ids kept across an edit
    holds stale ones: one of them made the whole get_symbols call fail, with no word of why."""
    root = make_repo({"pay/app.py": APP})

    async def body(session):
        listed = (await session.call_tool("list_symbols", {"module": "pay"})).structured_content["symbols"]
        ids = {s["name"]: s["id"] for s in listed}
        (root / "pay" / "app.py").write_text(
            APP.replace("def charge(customer, amount)", "def charge(customer, amount, currency)")
        )
        result = await session.call_tool(
            "get_symbols", {"ids": [ids["charge"], ids["Ledger.record"], "Ledger"]}
        )
        assert not result.is_error, result.content[0].text
        data = result.structured_content
        assert [s["qualified_name"] for s in data["symbols"]] == ["Ledger.record", "Ledger"]
        assert data["missing"] == [ids["charge"]]
        assert "search_symbols" in data["missing_note"] and ids["charge"] in result.content[0].text
        gone = tool_error(await session.call_tool("get_symbols", {"ids": [ids["charge"]]}))
        assert gone["error_code"] == "SYMBOL_NOT_FOUND" and "search_symbols" in gone["hint"]

    await mcp_session(root, body)


async def test_a_call_graph_cut_at_its_cap_says_so(make_repo) -> None:
    """get_callers stops at 500 nodes; the reply was `callers[500]` and nothing else, which an
    agent renaming a function read as every caller there is."""
    callers = "".join(f"def c{i}():\n    return target()\n\n\n" for i in range(510))
    root = make_repo(
        {"lib.py": "def target():\n    return 1\n", "use.py": "from lib import target\n\n\n" + callers}
    )

    async def body(session):
        cut = await session.call_tool("get_callers", {"symbol": "target"})
        data = cut.structured_content
        assert len(data["callers"]) == 500 and data["truncated"] is True
        assert "callers cut at 500" in data["more"] and "callers cut at 500" in cut.content[0].text
        few = (await session.call_tool("get_callers", {"symbol": "c3"})).structured_content
        assert few["callers"] == [] and few["truncated"] is False and "more" not in few

    await mcp_session(root, body)


async def test_a_server_pointed_at_the_temporary_directory_says_it_is_no_project() -> None:
    """`--path /tmp` (a client started there, a config written while trying things out) began
    indexing every project anyone had unpacked in it: 37,742 files, 25 s for a first call that
    then said INDEX_BUILDING. /tmp, /usr, /home and their like are refused as / and ~ are."""
    import tempfile

    async def body(session):
        return tool_error(await session.call_tool("get_repo_overview", {}))

    error = await mcp_session(Path(tempfile.gettempdir()), body, args=["--wait", "1"])
    assert error["error_code"] == "PATH_TOO_BROAD", error
    assert "shared directory" in error["message"] and "--path" in error["message"]


async def test_every_vector_search_says_vectors_are_off_not_only_the_first(make_repo) -> None:
    """With vectors off, `search(mode="vector")` answers from full text and symbols and says so,
    but only once per process: in a server that lives all session, the second and later vector
    searches came back as plain full-text hits with no word that no vector had been asked."""
    root = make_repo({"pay/app.py": APP})

    async def body(session):
        for query in ("charge a customer", "record an entry", "charge a customer"):
            found = (await session.call_tool("search", {"query": query, "mode": "vector"})).structured_content
            assert any("vectors are off" in w for w in found.get("warnings", [])), (query, found)
        # A hybrid search is not a request for vectors alone: no warning to repeat there.
        hybrid = (await session.call_tool("search", {"query": "charge"})).structured_content
        assert "warnings" not in hybrid, hybrid

    await mcp_session(root, body)


def test_a_tools_stated_token_cost_holds_at_its_cap(make_repo) -> None:
    """An agent budgets its context from the costs in the descriptions. On Django, list_symbols
    at its 200 cost ~4,800 tokens (stated ~3,200) and get_module at its 500 ~16,500 (stated
    8,000-12,000): each description's largest figure now covers a reply at its cap, measured
    with the engine's own estimate (characters / 4) on symbols named and placed as Django's."""
    import re

    from engine.api import Engine
    from engine.mcp_server import answer, build_tools

    methods = "".join(
        f"    def get_related_queryset_{i}(self, request, obj=None, *args, **kwargs) -> QuerySet:\n"
        f"        return self.model._default_manager.using(self._db).filter(pk={i})\n\n"
        for i in range(60)
    )
    files = {
        f"django/contrib/admin/views/changelist_{n}.py": f"class ChangeListView{n}(BaseListView):\n{methods}"
        for n in range(10)
    }
    with Engine.open(make_repo(files)) as engine:
        tools = build_tools(engine)
        for name, args in (
            ("list_symbols", {"limit": 200}),
            ("get_module", {"module": "django/contrib/admin"}),
        ):
            _, text = answer(tools[name], args)
            cost = tools[name].description.split("Token cost")[1]
            stated = max(int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", cost))
            assert len(text) / 4 <= stated * 1.05, (name, len(text) / 4, cost)  # "~" figures


async def test_a_name_given_with_its_module_or_file_finds_that_symbol_not_another(make_repo) -> None:
    """Agents name symbols as Python imports them (`pay.app.Ledger.record`) or as a file and a
    name (`pay/app.py:Ledger.record`). Both fell through to a fuzzy search that kept any symbol
    with the same last name: on rich, `rich.console.Console.print` answered the top-level
    `print` of rich/__init__.py, without a word."""
    root = make_repo(
        {
            "pay/__init__.py": "def record(entry):\n    return entry\n",
            "pay/app.py": APP,
        }
    )

    async def body(session):
        for name in ("pay.app.Ledger.record", "pay/app.py:Ledger.record", "app.Ledger.record"):
            found = await session.call_tool("get_symbol", {"symbol": name})
            assert not found.is_error, (name, found.content[0].text)
            data = found.structured_content
            assert (data["qualified_name"], data["file"]) == ("Ledger.record", "pay/app.py"), name
        top = (await session.call_tool("get_symbol", {"symbol": "pay.record"})).structured_content
        assert (top["qualified_name"], top["file"]) == ("record", "pay/__init__.py")
        # A qualifier that matches nothing is not answered by some other symbol of that name.
        wrong = tool_error(await session.call_tool("get_symbol", {"symbol": "billing.Invoice.record"}))
        assert wrong["error_code"] == "SYMBOL_NOT_FOUND" and "Ledger.record" in wrong["hint"]

    await mcp_session(root, body)


def test_a_per_item_token_cost_holds_for_the_text_and_the_json(make_repo) -> None:
    """Claude Code gives the model a tool's structured content (JSON), not its text, and JSON's
    keys cost more: on httpx get_callers said ~15 tokens a caller and cost ~25 as text, ~42 as
    JSON; search said ~60 a result and cost ~82. Each per-item figure now covers both."""
    import re

    from engine.api import Engine
    from engine.mcp_server import answer, build_tools

    callers = "".join(
        f"def build_redirect_request_{i}(client, request, response):\n"
        f"    return client.send_handling_redirects(request, follow_redirects=True, hop={i})\n\n\n"
        for i in range(40)
    )
    files = {
        "httpx/_client.py": "class Client:\n    def send_handling_redirects(self, request, **kw):\n"
        "        return request\n",
        "httpx/_redirects.py": "from httpx._client import Client\n\n\n" + callers,
    }
    with Engine.open(make_repo(files)) as engine:
        tools = build_tools(engine)
        for name, args, rows in (
            ("get_callers", {"symbol": "Client.send_handling_redirects"}, "callers"),
            (
                "get_call_graph",
                {"symbol": "Client.send_handling_redirects", "direction": "callers"},
                "callers",
            ),
            ("search", {"query": "redirect request hop", "limit": 10}, "results"),
            ("search_symbols", {"query": "build_redirect", "limit": 20}, "symbols"),
        ):
            structured, text = answer(tools[name], args)
            n = len(structured[rows])
            assert n >= 10, (name, n)
            sent = max(len(text), len(json.dumps(structured, ensure_ascii=False, separators=(",", ":")))) / 4
            cost = tools[name].description.split("Token cost")[1]
            if name == "search_symbols":  # stated as a total for 20 results
                per_item = int(re.search(r"~([\d,]+) for 20", cost).group(1).replace(",", "")) // 20
            else:
                per_item = int(re.search(r"~(\d+) (?:tokens )?per ", cost).group(1))
            assert sent / n <= per_item * 1.05, (name, sent / n, cost)


def _json_tokens(structured: dict) -> float:
    return len(json.dumps(structured, ensure_ascii=False, separators=(",", ":"))) / 4


def _stated_per_item(description: str) -> int:
    """The per-item JSON figure of a description's token cost (``~21 per module as JSON``)."""
    import re

    cost = description.split("Token cost")[1]
    return int(re.search(r"~(\d+) per \w+ as JSON", cost).group(1))


def test_listing_tools_state_what_their_json_costs(make_repo) -> None:
    """Claude Code gives the model a tool's JSON, and on Django list_modules' JSON cost ~1,050
    tokens against a stated ~300-700; list_languages ~980 against ~100-300, analyze_directory's
    rows ~27 a file against ~20, analyze_file ~2,100 for a 40-symbol file against ~500,
    get_symbol_source ~600 per 50 lines against ~400. Each
    description now states a per-item figure that covers its JSON, measured here on module and
    file names as long as Django's."""
    from engine.api import Engine
    from engine.mcp_server import answer, build_tools

    body = "".join(
        f"def render_change_form_{i}(request, context, add=False, change=False, form_url=''):\n"
        f"    return TemplateResponse(request, context, form_url, status={i})\n\n\n"
        for i in range(40)
    )
    files = {f"django/contrib/gis/db/backend_{n:02}/operations.py": body for n in range(55)}
    with Engine.open(make_repo(files)) as engine:
        tools = build_tools(engine)
        for name, args, rows in (
            ("list_modules", {}, "modules"),
            ("analyze_directory", {"path": "django", "summary_only": False}, "file_list"),
            ("analyze_file", {"path": "django/contrib/gis/db/backend_07/operations.py"}, "symbols"),
        ):
            structured, text = answer(tools[name], args)
            n = len(structured[rows])
            assert n >= 40, (name, n)
            per_item = _stated_per_item(tools[name].description)
            assert _json_tokens(structured) / n <= per_item * 1.05, (name, _json_tokens(structured) / n)
        # Code lines as long as Django's (~45 characters on average, escaped in JSON).
        long = "def save_base(self, raw=False, force_insert=False, using=None):\n" + "".join(
            f'        updated = self._save_table(raw, "{i:03}")\n' for i in range(199)
        )
        (engine.layout.root / "django" / "models.py").write_text(long)
        engine.index()
        structured, text = answer(tools["get_symbol_source"], {"symbol": "save_base"})
        cost = tools["get_symbol_source"].description.split("Token cost: ~")[1]
        per_50 = int(cost.split()[0])
        assert max(_json_tokens(structured), len(text) / 4) / 200 * 50 <= per_50 * 1.05, cost
        structured, _ = answer(tools["list_languages"], {})
        stated = int(
            tools["list_languages"].description.split("Token cost: ~")[1].split()[0].replace(",", "")
        )
        assert _json_tokens(structured) <= stated * 1.05


async def test_a_call_graph_leaves_out_columns_no_edge_has(make_repo) -> None:
    """A depth-1 walk has no parent and only external callees have a package, yet every edge
    carried ``"package":"","parent_id":""``: a sixth of get_callers' JSON said nothing."""
    root = make_repo({"pay/app.py": APP})

    async def body(session):
        direct = (await session.call_tool("get_callers", {"symbol": "charge"})).structured_content
        assert direct["callers"] and all(
            "package" not in e and "parent_id" not in e for e in direct["callers"]
        ), direct
        callees = await session.call_tool("get_call_graph", {"symbol": "Ledger.record", "depth": 2})
        edges = callees.structured_content["callees"]
        deeper = [e for e in edges if e["depth"] == 2]
        assert deeper and all(e["parent_id"] for e in deeper), edges
        assert any(e.get("package") == "requests" for e in edges), edges

    await mcp_session(root, body)


async def test_an_error_quoting_a_url_never_serves_its_password(make_repo, monkeypatch, tmp_path) -> None:
    """A Chroma URL with user:password@ and a bad port: `semfora search` masked the password in
    its error, but `semfora mcp` served it as given in the error every call answered, in the
    server's instructions and on its stderr (the client's log)."""
    root = make_repo({"pay/app.py": APP})
    monkeypatch.setenv("SEMFORA_CHROMA_URL", "http://admin:hunter2@localhost:99999")
    log = tmp_path / "server.log"

    async def body(session):
        failed = await session.call_tool("search", {"query": "charge"})
        return tool_error(failed), failed

    with log.open("w") as errlog:
        error, failed = await mcp_session(root, body, errlog=errlog)
    assert error["error_code"] == "CONFIG_INVALID" and "http://admin:" in error["message"], error
    served = json.dumps(failed.model_dump(mode="json")) + log.read_text()
    assert "hunter2" not in served and "[REDACTED]" in error["error_message"], served


async def test_get_symbols_answers_each_symbol_once(make_repo) -> None:
    """An agent that names a symbol twice (by its id and by its name, or the same id twice) got
    its whole detail twice, ~400 tokens each time; a missing id asked twice was missing twice."""
    root = make_repo({"pay/app.py": APP})

    async def body(session):
        first = (await session.call_tool("get_symbol", {"symbol": "charge"})).structured_content
        asked = [first["id"], "charge", "Ledger.record", first["id"], "nope", "nope"]
        both = (await session.call_tool("get_symbols", {"ids": asked})).structured_content
        assert [s["qualified_name"] for s in both["symbols"]] == ["charge", "Ledger.record"], both
        assert both["missing"] == ["nope"]

    await mcp_session(root, body)


async def test_an_excerpt_in_get_context_names_the_tool_that_fills_its_gaps(make_repo) -> None:
    """A definition too long for the budget comes as an excerpt whose reason said 'ask NEED for
    the rest': words for semfora's own model, which an MCP agent cannot act on."""
    steps = "".join(f"    total += apply_discount_rule_{i}(order, customer)\n" for i in range(300))
    big = f"def compute_invoice_total(order, customer):\n    total = 0\n{steps}    return total\n"
    root = make_repo({"billing/invoice.py": big})

    async def body(session):
        task = "why does compute_invoice_total give the wrong total for discounted orders"
        result = await session.call_tool("get_context", {"task": task, "budget": 2000})
        items = result.structured_content["items"]
        excerpts = [i for i in items if i["elided"]]
        assert excerpts, [(i["kind"], i["symbol"]) for i in items]
        for item in excerpts:
            assert "get_symbol_source" in item["reason"] and "NEED" not in item["text"], item["reason"]
        assert "NEED" not in result.content[0].text

    await mcp_session(root, body)


async def test_a_module_written_as_a_relative_path_is_that_module(make_repo) -> None:
    """`./pay` was MODULE_NOT_FOUND for list_symbols, search_symbols and get_module, while
    analyze_directory took `./pay/` and `pay/` and `/pay` worked: agents write paths all these ways."""
    root = make_repo({"pay/app.py": APP, "pay/sub/refunds.py": REFUNDS})

    async def body(session):
        for module in ("./pay", "./pay/", "pay/./sub/.."):
            listed = await session.call_tool("list_symbols", {"module": module})
            assert not listed.is_error, (module, listed.content[0].text)
            assert listed.structured_content["total"] == 6, listed.structured_content
            found = await session.call_tool("search_symbols", {"query": "charge", "module": module})
            assert found.structured_content["symbols"][0]["name"] == "charge", (module, found.content[0].text)
        sub = (await session.call_tool("get_module", {"module": "./pay/sub/"})).structured_content
        assert {s["name"] for s in sub["symbols"]} == {"RefundTooLarge", "refund", "list_refunds"}

    await mcp_session(root, body)


def test_analyze_diff_states_what_a_changed_symbol_costs(make_repo) -> None:
    """analyze_diff said ~150 tokens per changed symbol; on httpx a signature change with its
    callers cost ~305 as JSON (~225 as text): twelve changed functions were ~3,700, not ~1,800."""
    import re

    from engine.api import Engine
    from engine.mcp_server import answer, build_tools

    helpers = "".join(
        f"def normalize_header_value_{i}(value: str | bytes, encoding: str | None = None) -> bytes:\n"
        f"    return value.encode(encoding or 'ascii') if isinstance(value, str) else value\n\n\n"
        for i in range(12)
    )
    calls = "".join(f"    normalize_header_value_{i}(headers[{i}])\n" for i in range(12))
    root = make_repo(
        {
            "httpx/_utils.py": helpers,
            "httpx/_models.py": f"from httpx._utils import *\n\n\ndef build_headers(headers):\n{calls}",
        }
    )
    (root / "httpx" / "_utils.py").write_text(helpers.replace("(value: str", "(value: str | None"))
    with Engine.open(root) as engine:
        tools = build_tools(engine)
        structured, text = answer(tools["analyze_diff"], {})
        changed = sum(len(f["symbols"]) for f in structured["files"])
        assert changed == 12, structured["summary"]
        per_symbol = int(re.search(r"~(\d+) per changed symbol", tools["analyze_diff"].description).group(1))
        assert max(_json_tokens(structured), len(text) / 4) / changed <= per_symbol * 1.05
