"""Secret scanning of the lines a change adds, and of secret-looking files it adds.

Owns the named credential patterns. A match is reported by kind, file and line, with the
value masked: the finding itself must never carry the secret into a CI log.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable

from engine.review.findings import Finding
from engine.semantic.diff import FileChange

# kind -> pattern; each pattern matches the secret value itself.
SECRET_PATTERNS: dict[str, re.Pattern[str]] = {
    "private key": re.compile(r"-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----"),
    "Anthropic API key": re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}"),
    "OpenAI API key": re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9]{32,}"),
    "AWS access key id": re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    "GitHub token": re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})\b"),
    "Slack token": re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b"),
    "Google API key": re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b"),
    "Hugging Face token": re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"),
    "Stripe secret key": re.compile(r"\b[sr]k_live_[A-Za-z0-9]{20,}\b"),
    "credentials in a URL": re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s:/@]+:[^\s:/@]{6,}@[\w.-]+"),
}
# A quoted literal assigned to a secret-named key (a password or token written into the code).
SECRET_ASSIGNMENT = re.compile(
    r"(?i)\b[\w.-]*(?:api[_-]?key|secret|token|passwd|password|private[_-]?key|access[_-]?key)[\w.-]*"
    r"[\"']?\s*[:=]\s*([\"'])([^\s\"']{8,})\1"
)
# Values that are obviously not secrets: placeholders, env lookups, test fixtures.
PLACEHOLDER = re.compile(
    r"(?i)^(x+|\*+|<[^>]*>|\$\{?[\w.]+\}?|change[-_]?me|your[-_].*|dummy.*|example.*|test.*|fake.*)$"
)
# Files whose very presence in a change is a leak, whatever their content.
SECRET_FILES = (
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "*.p12",
    "*.pfx",
    ".netrc",
    ".pypirc",
    "credentials.json",
    "*.keystore",
)
# Example files that are meant to be committed.
SAFE_SUFFIXES = (".example", ".sample", ".template", ".dist")


def mask(value: str) -> str:
    """Enough to recognise which secret it was, never enough to use it."""
    return value[:4] + "…" if len(value) > 8 else "…"


def is_secret_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    if name.endswith(SAFE_SUFFIXES):
        return False
    return any(fnmatch.fnmatch(name, pattern) for pattern in SECRET_FILES)


# A line carrying one of these markers is a deliberate fake (a test fixture): not reported.
# The first is the detect-secrets convention, so existing annotations keep working.
ALLOW_MARKERS = ("pragma: allowlist secret", "semfora: allow-secret")


def scan_line(text: str) -> list[tuple[str, str]]:
    """(kind, masked value) for every secret on one line (none on a line marked as a fixture)."""
    hits: list[tuple[str, str]] = []
    if any(marker in text for marker in ALLOW_MARKERS):
        return hits
    for kind, pattern in SECRET_PATTERNS.items():
        for match in pattern.finditer(text):
            hits.append((kind, mask(match.group(0))))
    if not hits:
        for match in SECRET_ASSIGNMENT.finditer(text):
            value = match.group(2)
            if not PLACEHOLDER.match(value) and len(set(value)) > 4:
                hits.append(("secret assigned to a literal", mask(value)))
    return hits


def scan_files(files: Iterable[FileChange]) -> list[Finding]:
    findings: list[Finding] = []
    for f in files:
        if f.status == "deleted":
            continue
        if is_secret_file(f.path):
            findings.append(
                Finding(
                    "high",
                    "secrets",
                    f"a secret-bearing file is added to the repository: {f.path}",
                    f.path,
                    None,
                    None,
                    rule="secret-file",
                )
            )
            continue
        for line, text in f.added_lines:
            for kind, masked in scan_line(text):
                findings.append(
                    Finding(
                        "high",
                        "secrets",
                        f"{kind} added ({masked}); remove it and rotate it",
                        f.path,
                        line,
                        None,
                        rule="secret-in-diff",
                    )
                )
    return findings
