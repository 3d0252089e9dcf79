"""`semfora mcp` end to end, through the MCP SDK's own stdio client spawning the real command."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import SEMFORA

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


async def _session(root, body):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    # The whole environment: the client's default keeps only HOME/PATH-like variables, which
    # dropped XDG_CACHE_HOME and made the server write to the real ~/.cache/semfora.
    params = StdioServerParameters(command=SEMFORA, args=["mcp", "--path", str(root)], env=dict(os.environ))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await body(session)


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

        with pytest.raises(MCPError) as too_many:
            await session.call_tool("search_symbols", {"query": "x", "limit": 5000})
        assert too_many.value.data["error_code"] == "USAGE" and "limit" in too_many.value.message
        with pytest.raises(MCPError) as wrong_type:
            await session.call_tool("get_symbol", {"symbol": 42})
        assert wrong_type.value.data["error_code"] == "USAGE"
        with pytest.raises(MCPError) as missing:
            await session.call_tool("get_symbol", {"symbol": "no_such_symbol_anywhere"})
        assert missing.value.data["error_code"] in ("SYMBOL_NOT_FOUND", "NOT_FOUND")
        with pytest.raises(MCPError) as typo:  # a near miss names the symbol it probably meant
            await session.call_tool("get_symbol", {"symbol": "chrage"})
        assert typo.value.data["error_code"] == "SYMBOL_NOT_FOUND"
        assert typo.value.data["hint"].startswith("nearest names: ") and "charge" in typo.value.data["hint"]
        # The message alone says it too: many clients show the model nothing else.
        assert (
            typo.value.message
            == f"error[SYMBOL_NOT_FOUND]: no symbol named 'chrage' ({typo.value.data['hint']})"
        )
        with pytest.raises(MCPError) as outside:
            await session.call_tool("analyze_file", {"path": "../../etc/passwd"})
        assert outside.value.data["error_code"].startswith("PATH")
        # The server is still healthy after errors.
        langs = await session.call_tool("list_languages", {})
        assert "python" in langs.content[0].text

    await _session(root, body)


async def test_get_context_hands_an_agent_the_code_for_a_task(make_repo) -> None:
    from mcp.shared.exceptions import MCPError

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
        with pytest.raises(MCPError) as too_big:
            await session.call_tool("get_context", {"task": task, "budget": 10**6})
        assert too_big.value.data["error_code"] == "USAGE"

    await _session(root, body)
    # The server wrote its index under the test's cache home, not ~/.cache.
    assert list(Path(cache).rglob("index.db"))


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

    await _session(root, body)


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
