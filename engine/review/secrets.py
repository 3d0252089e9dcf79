"""Secret scanning of the lines a change adds, and of secret-looking files it adds.

Owns the named credential patterns and when a match blocks a merge. A match is reported by kind,
file and line, with the value masked: the finding itself must never carry the secret into a CI log.
In documentation, examples and test fixtures a match is a remark (listed, never a finding, never
blocking), unless it looks real: a provider's own key format (``AKIA…``, ``ghp_…``, ``sk-ant-…``)
with a random body.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections import Counter
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


# Kinds that are a provider's own key format: unambiguous, so they block even in a fixture or a
# document unless the value is an obvious placeholder.
PROVIDER_FORMATS = frozenset(
    {
        "Anthropic API key",
        "OpenAI API key",
        "AWS access key id",
        "GitHub token",
        "Slack token",
        "Google API key",
        "Hugging Face token",
        "Stripe secret key",
    }
)
# Below this many bits of entropy per character a provider-formatted value is a placeholder
# (``ghp_xxxx…``, ``AKIA0000…``): real keys are random and score well above 3.
REAL_KEY_ENTROPY = 3.0
# Words that mark a documented example value (AWS documents ``AKIAIOSFODNN7EXAMPLE``).
EXAMPLE_MARKERS = ("example", "sample", "dummy", "fake", "test", "xxxx", "0000", "1234")
# Directories of test fixtures that are not test code by name (certificates, keys, recordings).
FIXTURE_DIRS = re.compile(r"(^|/)(fixtures?|testdata|test_data|certs?|keys|cassettes|snapshots)/", re.I)


def scan_matches(text: str) -> list[tuple[str, str]]:
    """(kind, raw value) for every secret on one line (none on a line marked as a fixture)."""
    hits: list[tuple[str, str]] = []
    if any(marker in text for marker in ALLOW_MARKERS):
        return hits
    for kind, pattern in SECRET_PATTERNS.items():
        for match in pattern.finditer(text):
            hits.append((kind, match.group(0)))
    if not hits:
        for match in SECRET_ASSIGNMENT.finditer(text):
            value = match.group(2)
            if not PLACEHOLDER.match(value) and len(set(value)) > 4:
                hits.append(("secret assigned to a literal", value))
    return hits


def scan_line(text: str) -> list[tuple[str, str]]:
    """(kind, masked value) for every secret on one line (none on a line marked as a fixture)."""
    return [(kind, mask(value)) for kind, value in scan_matches(text)]


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    if not value:
        return 0.0
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def looks_real(kind: str, value: str) -> bool:
    """A provider-formatted key with a random body, not a documented placeholder."""
    if kind not in PROVIDER_FORMATS:
        return False
    lowered = value.lower()
    if any(marker in lowered for marker in EXAMPLE_MARKERS):
        return False
    return entropy(value) >= REAL_KEY_ENTROPY


def is_fixture_path(path: str) -> bool:
    """Documentation, examples, tests and their fixture data: where sample secrets live."""
    from engine.policy.paths import PathKind, classify_path

    kind = classify_path(path)
    return kind in (PathKind.TEST, PathKind.DOCS, PathKind.EXAMPLE) or bool(FIXTURE_DIRS.search(path))


def scan_files(files: Iterable[FileChange]) -> list[Finding]:
    findings: list[Finding] = []
    for f in files:
        if f.status == "deleted":
            continue
        fixture = is_fixture_path(f.path)
        if is_secret_file(f.path):
            findings.append(
                Finding(
                    "info" if fixture else "high",
                    "secrets",
                    f"a secret-bearing file is added to the repository: {f.path}"
                    + (" (a fixture: reported, not blocking)" if fixture else ""),
                    f.path,
                    None,
                    None,
                    rule="secret-in-fixture" if fixture else "secret-file",
                    blocking=not fixture,
                )
            )
            continue
        for line, text in f.added_lines:
            for kind, value in scan_matches(text):
                blocking = not fixture or looks_real(kind, value)
                findings.append(
                    Finding(
                        "high" if blocking else "info",
                        "secrets",
                        f"{kind} added ({mask(value)}); remove it and rotate it"
                        if blocking
                        else f"{kind} in a document, example or test fixture ({mask(value)}): "
                        "reported, not blocking; make sure it is not a real credential",
                        f.path,
                        line,
                        None,
                        rule="secret-in-diff" if blocking else "secret-in-fixture",
                        blocking=blocking,
                    )
                )
    return findings
