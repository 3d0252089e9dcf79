"""Secrets are masked in run logs; file text is kept only as an 800-character preview."""

from __future__ import annotations

import json

import pytest

from engine.orchestrator.budget import ContextItem, Priority
from engine.orchestrator.runlog import (
    PREVIEW_CHARS,
    RunRecord,
    item_record,
    list_runs,
    load_run,
    new_run_id,
    write_run,
)
from engine.policy.redaction import MASK, redact
from engine.repo.layout import RepoLayout


def test_redacts_keys_but_leaves_code_alone() -> None:
    text = (
        "ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnop\n"
        'password = "hunter2hunter"\n'
        "token = get_token()\n"
        "x = 'AKIAABCDEFGHIJKLMNOP'\n"
        "-----BEGIN RSA PRIVATE KEY-----\nMIIabc\n-----END RSA PRIVATE KEY-----\n"
    )
    out = redact(text)
    for secret in ("sk-ant-api03", "hunter2hunter", "AKIAABCDEFGHIJKLMNOP", "MIIabc"):
        assert secret not in out
    assert "token = get_token()" in out
    assert out.count(MASK) >= 4


def test_env_key_value_is_masked_anywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "plainlookingvalue123")
    assert "plainlookingvalue123" not in redact("the key is plainlookingvalue123 ok")


def test_run_json_is_redacted_and_previews_file_text(make_repo, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-secret-000111")
    layout = RepoLayout.for_path(make_repo({"a.py": "x = 1\n"}))
    big = "def f():\n" + "    return 1\n" * 500
    rec = RunRecord(run_id=new_run_id(), task="fix f, key sk-ant-test-secret-000111", model="claude-x")
    rec.items.append(
        item_record(ContextItem("s1", "source", big, 2000, Priority.CRITICAL, "target", file="a.py"))
    )
    rec.raw_replies.append("reply with sk-ant-test-secret-000111")
    path = write_run(layout, rec)
    raw = path.read_text()
    assert "sk-ant-test-secret-000111" not in raw
    data = json.loads(raw)
    assert len(data["items"][0]["text_preview"]) < PREVIEW_CHARS + 40
    assert data["items"][0]["reason"] == "target"
    assert list_runs(layout) == [rec.run_id]
    assert load_run(layout, rec.run_id)["task"].startswith("fix f")
