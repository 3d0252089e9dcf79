"""`semfora mcp` over awkward repositories, as an agent meets them: secret files, symlinks out of
the tree, paths with spaces and accents, a directory that is not a git repository."""

from __future__ import annotations

import json
import subprocess

from tests.engine.mcp_client import mcp_session, tool_error

CREDENTIALS = 'def load_secret():\n    return "hunter2"\n'


def _git(root, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


async def test_analyze_diff_names_a_changed_secret_file_but_never_shows_its_content(make_repo) -> None:
    """A deny-listed file changed in the diff is listed (its existence may be said) without its
    symbols, signatures or defaults: analyze_diff served `def load_secret(password="hunter3")`."""
    root = make_repo({"app.py": "def run():\n    return 1\n", "config/credentials.py": CREDENTIALS})
    (root / "config" / "credentials.py").write_text(
        'def load_secret(password="hunter3"):\n    return password\n\n\ndef rotate_secret():\n    return 2\n'
    )
    (root / "app.py").write_text("def run(fast=False):\n    return 1\n")

    async def body(session):
        result = await session.call_tool("analyze_diff", {})
        assert not result.is_error
        everything = result.content[0].text + json.dumps(result.structured_content)
        for leaked in ("hunter", "load_secret", "rotate_secret", "password"):
            assert leaked not in everything, leaked
        files = {f["path"]: f for f in result.structured_content["files"]}
        secret = files["config/credentials.py"]
        assert secret["symbols"] == [] and "deny-list" in secret["note"]
        # The rest of the diff is untouched.
        assert files["app.py"]["symbols"][0]["qualified_name"] == "run"
        assert result.structured_content["summary"]["modified"] == 1

    await mcp_session(root, body)


async def test_paths_with_spaces_and_accents_symlinks_out_and_directories(make_repo, tmp_path) -> None:
    """A repository under a path with a space and accents answers by those names; a link out of
    it is refused by name, never read; a directory given to analyze_file names the tool to use."""
    outside = tmp_path / "outside.py"
    outside.write_text('def stolen():\n    return "outside canary"\n')
    root = make_repo({"src dir/ünï/café.py": 'def grüße(name):\n    return f"hallo {name}"\n'})
    (root / "linked.py").symlink_to(outside)
    (root / "linked_dir").symlink_to(tmp_path)

    async def body(session):
        found = await session.call_tool("search_symbols", {"query": "grüße"})
        assert found.structured_content["symbols"][0]["file"] == "src dir/ünï/café.py"
        source = await session.call_tool("get_symbol_source", {"symbol": "grüße"})
        assert source.content[0].text.startswith("grüße  src dir/ünï/café.py:1-2")
        parsed = await session.call_tool("analyze_file", {"path": "src dir/ünï/café.py"})
        assert not parsed.is_error
        for path in ("linked.py", "linked_dir/outside.py"):
            refused = tool_error(await session.call_tool("analyze_file", {"path": path}))
            assert refused["error_code"] == "SYMLINK_ESCAPE" and "canary" not in refused["message"]
        assert (await session.call_tool("search_symbols", {"query": "stolen"})).structured_content[
            "symbols"
        ] == []
        folder = tool_error(await session.call_tool("analyze_file", {"path": "src dir"}))
        assert folder["error_code"] == "PATH_INVALID"
        assert (
            folder["message"]
            == "error[PATH_INVALID]: src dir is a directory (analyze_directory takes a directory)"
        )
        assert not (await session.call_tool("analyze_directory", {"path": "src dir"})).is_error

    await mcp_session(root, body)


async def test_a_directory_that_is_not_a_git_repository(make_repo) -> None:
    """Without git every index tool works; analyze_diff says it needs git history, not to
    'pass --path' (an agent cannot: the path is the server's)."""
    root = make_repo(
        {"a.py": "def alpha():\n    return beta()\n\n\ndef beta():\n    return 1\n"}, git_init=False
    )

    async def body(session):
        callers = await session.call_tool("get_callers", {"symbol": "beta"})
        assert callers.structured_content["callers"][0]["name"] == "alpha"
        diff = tool_error(await session.call_tool("analyze_diff", {}))
        assert diff["error_code"] == "DIFF_NOT_GIT" and "--path" not in diff["message"]
        assert diff["message"].endswith("(analyze_diff needs git history; the other tools work without it)")

    await mcp_session(root, body)


async def test_a_secret_default_in_a_quoted_signature_is_masked_in_the_text_too(make_repo) -> None:
    """analyze_file and analyze_diff parse files from disk; their text quotes a signature as one
    TOON string, where `password="hunter2"` becomes `password=\\"hunter2\\"` and the redactor did
    not recognise it: the structured content said [REDACTED], the text the model reads said hunter2.
    A changed default was served in both as `default of 'password' changed from 'hunter1' to ...`."""
    root = make_repo({"app.py": 'def connect(password="hunter1"):\n    return password\n'})
    (root / "app.py").write_text(
        'def connect(password="hunter2"):\n    return password\n\n\n'
        'def login(user, secret="s3cr3t-value", pin="4711"):\n    return user\n'
    )

    async def body(session):
        parsed = await session.call_tool("analyze_file", {"path": "app.py"})
        diff = await session.call_tool("analyze_diff", {})
        for result in (parsed, diff):
            assert not result.is_error, result.content[0].text
            text = result.content[0].text
            for leaked in ("hunter1", "hunter2", "s3cr3t-value"):
                assert leaked not in text and leaked not in json.dumps(result.structured_content), text
            assert '[REDACTED]\\"' in text  # masked where it stood, the quoting intact
        # Only the secret: the rest of the signature is still there to read.
        assert 'login(user, secret=\\"[REDACTED]\\"' in parsed.content[0].text
        changed = diff.structured_content["files"][0]["symbols"]
        assert "default of 'password' changed from [REDACTED] to [REDACTED]" in {
            c for s in changed for c in s["parameter_changes"]
        }

    await mcp_session(root, body)


async def test_a_file_given_where_a_directory_or_module_is_taken_names_the_tool_for_a_file(make_repo) -> None:
    """A Python developer calls a file a module: get_module('pay/app.py') said only 'no symbols
    in module', and analyze_directory('pay/app.py') 'no such directory' of a file that exists."""
    root = make_repo({"pay/app.py": "def charge():\n    return 1\n"})

    async def body(session):
        for tool in ("get_module", "list_symbols"):
            error = tool_error(await session.call_tool(tool, {"module": "pay/app.py"}))
            assert error["error_code"] == "MODULE_NOT_FOUND"
            assert (
                error["hint"]
                == "pay/app.py is a file: analyze_file lists its symbols; modules are directories"
            )
        directory = tool_error(await session.call_tool("analyze_directory", {"path": "pay/app.py"}))
        assert directory["message"] == "error[PATH_INVALID]: pay/app.py is a file (analyze_file takes a file)"

    await mcp_session(root, body)


async def test_source_with_context_names_the_symbols_lines_and_the_lines_shown(make_repo) -> None:
    """With ``context: 2`` the reply gave the shown range as the symbol's start_line/end_line
    (``refund 6-15`` for a function on lines 8-13): an agent editing those lines hit the
    neighbours. Now start_line/end_line are the symbol's own, source_* the lines of the text."""
    refunds = (
        '"""Refunds."""\n\nLIMIT = 10\n\n\n# Give money back.\n\n'
        "def refund(charge, amount):\n    if amount > LIMIT:\n        raise ValueError(amount)\n"
        "    charge.refunded += amount\n    return charge\n\n\nDONE = True\n"
    )
    big = "def big():\n" + "".join(f"    x{i} = {i}\n" for i in range(450)) + "    return 0\n"
    root = make_repo({"pay/refunds.py": refunds, "pay/big.py": "\n\n" + big})

    async def body(session):
        result = await session.call_tool("get_symbol_source", {"symbol": "refund", "context": 2})
        data = result.structured_content
        assert (data["start_line"], data["end_line"]) == (8, 12), data
        assert (data["source_start_line"], data["source_end_line"]) == (6, 14), data
        assert data["source"].splitlines()[0] == "# Give money back."
        assert (
            result.content[0].text.splitlines()[0]
            == "refund  pay/refunds.py:8-12 (shown 6-14)  id " + data["id"]
        )
        plain = (await session.call_tool("get_symbol_source", {"symbol": "refund"})).content[0].text
        assert plain.splitlines()[0].startswith("refund  pay/refunds.py:8-12  id ")
        cut = (await session.call_tool("get_symbol_source", {"symbol": "big"})).structured_content
        assert (cut["start_line"], cut["end_line"]) == (3, 454) and cut["truncated"], cut
        assert (cut["source_start_line"], cut["source_end_line"]) == (3, 402), cut

    await mcp_session(root, body)


async def test_a_file_that_is_not_utf8_is_shown_in_its_declared_encoding_or_says_what_was_lost(
    make_repo,
) -> None:
    """A Latin-1 file (declared with a PEP 263 coding line, as old Python code is) was served as
    `Gr\\ufffd\\ufffd Gott` in its source, docstring and search snippets; one with no declaration
    showed U+FFFD with no word that the bytes were not UTF-8. Declared files now read as their
    characters; undeclared ones carry a note in the reply."""
    from tests.conftest import run_semfora

    declared = (
        '# -*- coding: latin-1 -*-\n\n\ndef gruss(name):\n    """Sag Gr\xfc\xdf Gott."""\n'
        '    return "Gr\xfc\xdf Gott, " + name\n'
    ).encode("latin-1")
    undeclared = 'def hallo():\n    return "Gr\xfc\xdf"\n'.encode("latin-1")
    root = make_repo({"greet.py": declared, "legacy/hallo.py": undeclared})

    async def body(session):
        source = await session.call_tool("get_symbol_source", {"symbol": "gruss"})
        assert 'return "Grüß Gott, " + name' in source.structured_content["source"], source.structured_content
        detail = (await session.call_tool("get_symbol", {"symbol": "gruss"})).structured_content
        assert detail["doc"] == "Sag Grüß Gott."
        hits = (await session.call_tool("search", {"query": "Gott", "mode": "fts"})).structured_content
        assert any("Grüß Gott" in h["snippet"] for h in hits["results"]), hits
        pack = await session.call_tool("get_context", {"task": "explain gruss"})
        assert 'return "Grüß Gott, " + name' in pack.content[0].text, pack.content[0].text
        lost = await session.call_tool("get_symbol_source", {"symbol": "hallo"})
        note = "legacy/hallo.py is not valid UTF-8: 2 bytes shown as U+FFFD"
        assert lost.structured_content["note"].startswith(note), lost.structured_content
        assert lost.content[0].text.splitlines()[1].startswith(f"note: {note}")

    await mcp_session(root, body)
    shown = run_semfora("symbol", "hallo", "--source", "--json", "--path", str(root))
    row = json.loads(shown.stdout)["symbols"][0]
    assert "\ufffd" in row["source"] and row["source_note"].startswith("legacy/hallo.py is not valid UTF-8")
