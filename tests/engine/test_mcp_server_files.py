"""`semfora mcp` over awkward repositories, as an agent meets them: secret files, symlinks out of
the tree, paths with spaces and accents, a directory that is not a git repository."""

from __future__ import annotations

import json
import subprocess

from tests.engine.mcp_client import mcp_session

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
