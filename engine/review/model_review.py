"""The model half of a CI review: prompt Claude with the semantic diff and parse its findings.

Owns the review prompt, the size cap on what is sent, and reading the JSON reply. Everything
sent is redacted first and secret-bearing files are left out; the reply is validated, never
trusted: a malformed reply becomes a note, not a crash.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from engine.llm.base import Reasoner, Usage
from engine.policy.redaction import redact
from engine.review.findings import SEVERITY_ORDER, Finding
from engine.review.secrets import is_secret_file
from engine.semantic.diff import SemanticDiff

# Characters of added/removed lines sent per file, and in total: enough for a reviewer to see
# what changed, small enough that one review stays a few thousand tokens.
MAX_LINES_CHARS_PER_FILE = 4_000
MAX_PROMPT_CHARS = 40_000
# The reply is a short JSON document; this bounds cost if the model rambles.
REVIEW_MAX_TOKENS = 2_000
# Severities models use beyond the three asked for: "critical" is the most severe, not the least
# (it became "low", so the gate approved what the model called critical).
SEVERITY_ALIASES = {
    "critical": "high",
    "blocker": "high",
    "severe": "high",
    "error": "high",
    "major": "medium",
    "moderate": "medium",
    "warning": "medium",
    "minor": "low",
    "trivial": "low",
    "nit": "low",
}
FINDING_TYPES = ("security", "correctness", "testing", "architecture", "api", "performance", "style")

SYSTEM_PROMPT = """You review code changes for a CI pipeline. You get a semantic diff (symbols added, \
removed, modified, moved or renamed, with signatures, risk before and after, new external calls and \
the callers each change reaches), the changed lines, and the findings deterministic rules already made.
Report only problems a careful senior reviewer would raise and the rules did not already report: \
correctness bugs, security holes, broken callers, missing validation, missing tests for risky code.
Reply with one JSON object and nothing else:
{"summary": "one or two sentences", "findings": [{"severity": "low|medium|high", \
"type": "security|correctness|testing|architecture|api|performance|style", "message": "...", \
"file": "path or null", "line": 1, "symbol": "qualified name or null"}]}
Use "findings": [] when the change is fine."""


@dataclass(frozen=True)
class ModelReview:
    summary: str
    findings: tuple[Finding, ...]
    usage: Usage
    cost_usd: float
    model: str
    note: str | None = None


# The stated intent is context, not the review: a few paragraphs at most.
MAX_INTENT_CHARS = 2_000


def build_prompt(diff: SemanticDiff, rule_findings: list[Finding], intent: str | None = None) -> str:
    """The user message: stated intent, TOON diff, changed lines and the rules' findings (all redacted)."""
    parts = []
    if intent and intent.strip():
        parts += [
            "# Stated intent of the change (check the change does this, and only this)",
            intent.strip()[:MAX_INTENT_CHARS],
            "",
        ]
    parts += ["# Semantic diff (TOON)", diff.to_toon(), "", "# Changed lines"]
    for f in diff.files:
        if f.binary or is_secret_file(f.path):
            continue
        chunk: list[str] = []
        for line, text in f.removed_lines:
            chunk.append(f"-{line}: {text}")
        for line, text in f.added_lines:
            chunk.append(f"+{line}: {text}")
        body = "\n".join(chunk)
        if len(body) > MAX_LINES_CHARS_PER_FILE:
            body = body[:MAX_LINES_CHARS_PER_FILE] + "\n... (truncated)"
        if body:
            parts.append(f"## {f.path}\n{body}")
    parts.append("\n# Findings already made by the rules")
    parts.extend(
        f"- [{f.severity}] {f.type} {f.file or ''}:{f.line or ''} {f.message}" for f in rule_findings
    )
    if not rule_findings:
        parts.append("- none")
    text = redact("\n".join(parts))
    if len(text) > MAX_PROMPT_CHARS:
        text = text[:MAX_PROMPT_CHARS] + "\n... (truncated to fit the review budget)"
    return text


_JSON_BLOCK = re.compile(r"\{.*\}", re.S)


def _repository_path(value: object) -> str | None:
    """The model's ``file`` as a path relative to the repository root, or None when it is not one
    (absolute, climbing out with ``..``, empty): a finding must not point a CI annotation or a
    SARIF location outside the repository. ``./x.py`` and diff-style ``b/x.py`` are not guessed at
    beyond the leading ``./``."""
    if not isinstance(value, str):
        return None
    path = value.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    parts = path.split("/")
    if not path or path.startswith("/") or re.match(r"^[A-Za-z]:", path) or ".." in parts or "" in parts:
        return None
    return path


def parse_reply(text: str) -> tuple[str, list[Finding], str | None]:
    """(summary, findings, note) from the model's reply; a bad reply yields a note and no findings."""
    match = _JSON_BLOCK.search(text)
    if match is None:
        return "", [], "the model reply held no JSON object; model findings ignored"
    try:
        data: Any = json.loads(match.group(0))
    except json.JSONDecodeError as exc:
        return "", [], f"the model reply was not valid JSON ({exc.msg}); model findings ignored"
    if not isinstance(data, dict):
        return "", [], "the model reply was not a JSON object; model findings ignored"
    findings: list[Finding] = []
    for item in data.get("findings") or []:
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("message"), str)
            or not item["message"].strip()
        ):
            continue  # a finding with nothing to read is no finding
        severity = str(item.get("severity", "low")).strip().lower()
        severity = SEVERITY_ALIASES.get(severity, severity)
        kind = str(item.get("type", "correctness")).lower()
        line = item.get("line")
        if isinstance(line, str) and line.strip().isdigit():
            line = int(line)
        file = _repository_path(item.get("file"))
        findings.append(
            Finding(
                severity if SEVERITY_ORDER.get(severity, -1) >= 0 else "low",  # type: ignore[arg-type]
                kind if kind in FINDING_TYPES else "correctness",
                item["message"].strip()[:500],
                file,
                line if file is not None and isinstance(line, int) and line > 0 else None,
                item.get("symbol") if isinstance(item.get("symbol"), str) else None,
                source="model",
            )
        )
    summary = data.get("summary")
    return (summary.strip() if isinstance(summary, str) else ""), findings, None


def review_with_model(
    reasoner: Reasoner, diff: SemanticDiff, rule_findings: list[Finding], *, intent: str | None = None
) -> ModelReview:
    """One model call; model errors propagate (ModelUnavailable is exit 3)."""
    prompt = build_prompt(diff, rule_findings, intent)
    reply = reasoner.complete(
        SYSTEM_PROMPT, [{"role": "user", "content": prompt}], max_tokens=REVIEW_MAX_TOKENS
    )
    summary, findings, note = parse_reply(reply.text)
    return ModelReview(summary, tuple(findings), reply.usage, reply.cost_usd, reply.model, note)
