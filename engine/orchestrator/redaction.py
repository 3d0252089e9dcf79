"""Mask secret-looking strings before text reaches a model, a run log or a session file.

Owns the patterns only. It errs towards masking: a false positive costs a few
characters of context, a false negative leaks a credential.
"""

from __future__ import annotations

import os
import re

MASK = "[REDACTED]"

# Environment variables whose *values* are masked wherever they appear verbatim.
SECRET_ENV_VARS = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "MISTRAL_API_KEY",
    "GROQ_API_KEY",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "HF_TOKEN",
)
# Shorter values are too likely to be ordinary words to mask everywhere.
MIN_ENV_SECRET_LEN = 8

PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.S),
    re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9_\-]{20,}"),
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}\b"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}\b"),
    re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b"),
    re.compile(r"\bhf_[A-Za-z0-9]{20,}\b"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}\b"),
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=\-]{16,}"),
)
# A quoted literal of 8+ characters assigned to a secret-named key ("password": "...").
# Values that are code (identifiers, calls) are left alone: source sent to the model
# must stay matchable by its SEARCH blocks.
QUOTED_ASSIGNMENT = re.compile(
    r"(?i)(\b[\w.-]*(?:api[_-]?key|secret|token|passwd|password|private[_-]?key|access[_-]?key)[\w.-]*"
    r"[\"']?\s*[:=]\s*)([\"'])([^\s\"']{8,})\2"
)
# dotenv / shell style: API_TOKEN=abcdef123 on its own line.
ENV_ASSIGNMENT = re.compile(
    r"(?m)^(\s*(?:export\s+)?[A-Z0-9_]*(?:KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIALS?)[A-Z0-9_]*\s*=\s*)"
    r"([\"']?)([^\s\"']{6,})\2\s*$"
)


def _env_secrets() -> list[str]:
    values = []
    for var in SECRET_ENV_VARS:
        value = os.environ.get(var, "")
        if len(value) >= MIN_ENV_SECRET_LEN:
            values.append(value)
    return values


def redact(text: str) -> str:
    """``text`` with API keys, tokens, private keys and secret assignments masked."""
    if not text:
        return text
    for value in _env_secrets():
        text = text.replace(value, MASK)
    for pattern in PATTERNS:
        text = pattern.sub(MASK, text)

    text = QUOTED_ASSIGNMENT.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}{m.group(2)}", text)
    return ENV_ASSIGNMENT.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}{m.group(2)}", text)


def contains_secret(text: str) -> bool:
    return redact(text) != text
