"""`semfora search`, `symbol` and `callers` as a demanding user meets them (polish round)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_semfora

REPO = {
    "app/client.py": (
        "class Client:\n    def send(self, request):\n        return request\n\n\n"
        "def make_client():\n    return Client()\n"
    ),
}


@pytest.mark.parametrize("command", [("symbol",), ("symbol", "--source"), ("callers",)], ids=" ".join)
@pytest.mark.parametrize("name", ["", "  "], ids=["empty", "blank"])
def test_a_blank_symbol_name_is_a_usage_error(make_repo, command, name) -> None:
    """`semfora symbol ''` said "no symbol named ''" and exited 1, as if the index lacked it."""
    root = make_repo(REPO)
    assert run_semfora("index", "--no-vectors", "--path", str(root)).returncode == 0
    proc = run_semfora(command[0], name, *command[1:], "--path", str(root), "--json")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["error_code"] == "USAGE"
