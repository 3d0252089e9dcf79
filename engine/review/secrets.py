"""Secret scanning of the lines a change adds, and of secret-looking files it adds.

Owns the CI reporting of secrets: which hits become findings (format matches always; a
literal assigned to a secret-named key only when it does not look like a fixture), masked so
the finding itself never carries the secret into a CI log. The patterns and the file deny-list
are the one policy's (``engine.policy.content``, ``engine.policy.names``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from engine.policy.content import find_secrets
from engine.policy.names import DEFAULT_DENY, SUGGESTIVE_PATTERNS, is_secret_name, secret_patterns_matching
from engine.review.findings import Finding
from engine.semantic.diff import FileChange

# Assigned values that are deliberate fakes in tests and docs: CI does not report them (the
# redactor still masks them; masking a fake costs nothing).
FIXTURE_VALUE = re.compile(r"(?i)^(?:test.*|fake.*|sample.*|mock.*)$")
# Source files named like ``secrets.py`` are often code about secrets: a medium finding, not high.
CODE_SUFFIXES = (
    ".py",
    ".js",
    ".mjs",
    ".ts",
    ".tsx",
    ".jsx",
    ".go",
    ".rb",
    ".java",
    ".kt",
    ".rs",
    ".php",
    ".cs",
)
# An assigned literal with this few distinct characters (``aaaa``, ``1234``) is not a credential.
MIN_DISTINCT_CHARS = 5


def mask(value: str) -> str:
    """Enough to recognise which secret it was, never enough to use it."""
    return value[:4] + "…" if len(value) > 8 else "…"


def is_secret_file(path: str) -> bool:
    """A file whose presence in a change is a leak whatever its content (the default deny-list)."""
    return is_secret_name(path, DEFAULT_DENY)


# A line carrying one of these markers is a deliberate fake (a test fixture): not reported.
# The first is the detect-secrets convention, so existing annotations keep working.
ALLOW_MARKERS = ("pragma: allowlist secret", "semfora: allow-secret")


def scan_line(text: str) -> list[tuple[str, str]]:
    """(kind, masked value) for every secret on one line (none on a line marked as a fixture)."""
    if any(marker in text for marker in ALLOW_MARKERS):
        return []
    hits = find_secrets(text)
    formats = [h for h in hits if not h.is_assignment]
    if formats:
        return [(h.kind, mask(h.value)) for h in formats]
    return [
        (h.kind, mask(h.value))
        for h in hits
        if len(set(h.value)) >= MIN_DISTINCT_CHARS and not FIXTURE_VALUE.match(h.value)
    ]


def scan_files(files: Iterable[FileChange]) -> list[Finding]:
    findings: list[Finding] = []
    for f in files:
        if f.status == "deleted":
            continue
        matched = secret_patterns_matching(f.path, DEFAULT_DENY)
        if matched:
            only_by_word = all(p in SUGGESTIVE_PATTERNS for p in matched)
            findings.append(
                Finding(
                    "medium" if only_by_word and f.path.endswith(CODE_SUFFIXES) else "high",
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
