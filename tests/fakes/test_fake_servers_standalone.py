"""The fakes also run as their own processes (the tmux end-to-end test needs that)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from engine.config import Settings
from engine.llm.anthropic_reasoner import AnthropicReasoner
from engine.services.ollama import OllamaClient
from tests.conftest import ROOT
from tests.fakes.fake_anthropic import FakeAnthropic


@contextmanager
def _serve(module: str, *args: str) -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", module, "--port", "0", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("listening on http://127.0.0.1:"), line
        yield line.removeprefix("listening on ")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert proc.returncode == 0


def test_fake_anthropic_process_plays_its_script_and_records_requests(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [
                {"type": "error", "status": 529, "error_type": "overloaded_error"},
                {"type": "text", "text": "app.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n"},
            ]
        )
    )
    record = tmp_path / "requests.jsonl"
    with _serve("tests.fakes.fake_anthropic", "--script", str(script), "--record", str(record)) as url:
        reasoner = AnthropicReasoner(Settings(), api_key="sk-ant-standalone", base_url=url)
        reasoner.retry = reasoner.retry.__class__(max_retries=2, base_delay=0.01)
        reply = reasoner.complete("system", [{"role": "user", "content": "set x to 2"}])
    assert "<<<<<<< SEARCH" in reply.text and reply.attempts == 2
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert [entry["path"] for entry in lines] == ["/v1/messages", "/v1/messages"]
    assert lines[-1]["body"]["messages"][0]["content"] == "set x to 2"


def test_fake_ollama_process_answers_and_records(tmp_path: Path) -> None:
    record = tmp_path / "ollama.jsonl"
    with _serve("tests.fakes.fake_ollama", "--reply", "a summary", "--record", str(record)) as url:
        client = OllamaClient(url)
        assert client.generate("qwen2.5-coder:1.5b", "summarize") == "a summary"
        client.close()
    assert json.loads(record.read_text().splitlines()[-1])["path"] == "/api/generate"


def test_fake_anthropic_answers_non_streaming_requests_like_the_api(fake_anthropic: FakeAnthropic) -> None:
    import anthropic

    fake_anthropic.reply("plain JSON answer")
    client = anthropic.Anthropic(max_retries=0)  # ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL from the fixture
    message = client.messages.create(
        model="claude-haiku-4-5", max_tokens=50, messages=[{"role": "user", "content": "hi"}]
    )
    assert message.content[0].text == "plain JSON answer"
    assert message.stop_reason == "end_turn" and message.usage.output_tokens == 5
    count = client.messages.count_tokens(
        model="claude-haiku-4-5", messages=[{"role": "user", "content": "hi"}]
    )
    assert count.input_tokens > 0
