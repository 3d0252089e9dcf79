"""Audit log of turns: one ``runs/<run-id>/run.json`` per turn under the repo's cache dir.

Owns the record shape, redaction on the way to disk and the 800-character preview rule
for file text. It never stores full file contents or an API key.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from engine.errors import NotFoundError
from engine.orchestrator.budget import ContextItem
from engine.policy.redaction import redact
from engine.repo.layout import RepoLayout

# Seed 003: logs keep metadata plus the first 800 characters of any file text.
PREVIEW_CHARS = 800
RUN_FILE = "run.json"


def new_run_id() -> str:
    """Sortable by time, unique across processes."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(3)


def preview(text: str) -> str:
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + f"... [{len(text)} chars]"


def item_record(item: ContextItem) -> dict[str, Any]:
    data = item.to_json()
    data["text_preview"] = preview(item.text)
    return data


@dataclass
class RunRecord:
    """Everything needed to audit one turn; built up by the orchestrator while it runs."""

    run_id: str
    task: str
    intent: str = ""
    intent_rule: str = ""
    model: str = ""
    budget: int = 0
    items: list[dict[str, Any]] = field(default_factory=list)
    need_rounds: list[dict[str, Any]] = field(default_factory=list)
    raw_replies: list[str] = field(default_factory=list)
    reply: str = ""
    usage: dict[str, int] = field(default_factory=dict)
    cost: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    edits: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    outcome: str = "pending"
    started_at: float = field(default_factory=time.time)
    finished_at: float | None = None


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(v) for v in value]
    return value


def write_run(layout: RepoLayout, record: RunRecord) -> Path:
    """Write (or rewrite) the run's JSON atomically, redacted; returns its path."""
    run_dir = layout.runs_dir / record.run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    data = _scrub(asdict(record))
    data["raw_replies"] = [preview(r) if len(r) > 20 * PREVIEW_CHARS else r for r in data["raw_replies"]]
    path = run_dir / RUN_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)
    return path


def list_runs(layout: RepoLayout) -> list[str]:
    """Run ids, oldest first."""
    return sorted(p.parent.name for p in layout.runs_dir.glob(f"*/{RUN_FILE}"))


def load_run(layout: RepoLayout, run_id: str) -> dict[str, Any]:
    path = layout.runs_dir / run_id / RUN_FILE
    if not path.is_file() or path.parent.parent != layout.runs_dir:
        raise NotFoundError(f"no run {run_id!r}", code="RUN_NOT_FOUND")
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data
