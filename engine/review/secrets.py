"""Secret scanning of the lines a change adds, and of secret-looking files it adds.

Owns when a secret blocks a merge. A match is reported by kind, file and line, with the value
masked: the finding itself must never carry the secret into a CI log. In documentation, examples
and test fixtures a match is a remark (listed, never a finding, never blocking), unless it looks
real: a provider's own key format (``AKIA…``, ``ghp_…``, ``sk-ant-…``) with a random body. The
patterns and the file deny-list are the one policy's (``engine.policy.content``, ``engine.policy.names``).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import replace

from engine.policy.content import ASSIGNED_KIND, find_secrets
from engine.policy.names import DEFAULT_DENY, SUGGESTIVE_PATTERNS, is_secret_name, secret_patterns_matching
from engine.review.findings import Finding
from engine.semantic.diff import FileChange

# Assigned values that are deliberate fakes in tests and docs: CI does not report them (the
# redactor still masks them; masking a fake costs nothing).
FIXTURE_VALUE = re.compile(r"(?i)^(?:test.*|fake.*|sample.*|mock.*)$")
# An assigned literal with this few distinct characters (``aaaa``, ``1234``) is not a credential.
MIN_DISTINCT_CHARS = 5
# Access levels, not credentials: a GitHub Actions workflow grants ``id-token: write`` (OIDC
# publishing) and ``pull-requests: read``; a name ending in ``token`` assigned one of these is a
# permission. (The redactor still masks them; masking a word costs nothing, blocking a merge does.)
ACCESS_LEVELS = frozenset({"read", "write", "none", "read-all", "write-all"})
# Settings, not credentials: the Fetch API's ``credentials: 'include'`` / ``'omit'`` and words
# that switch something on or off.
SETTING_WORDS = frozenset(
    {
        "include",
        "omit",
        "same-origin",
        "required",
        "optional",
        "disabled",
        "enabled",
        "true",
        "false",
        "null",
        "undefined",
    }
)
# Lower-case words joined by hyphens (``'same-origin'``, ``'no-referrer-when-downgrade'``): an
# option's value as HTTP and CSS spell them, not a secret (axios a3ff99b5: ``withCredentials =
# 'same-origin'`` blocked the merge as "secret assigned to a literal added").
OPTION_VALUE = re.compile(r"^[a-z]+(?:-[a-z]+)+$")
# What a build writes or a package manager locks (vendored copies are not: their secrets are the
# library's own, see engine.review.vendored).
BUILT = re.compile(
    r"(^|/)(dist|build)/|\.min\.(js|css)$|\.(js|css)\.map$|(^|/)(package-lock\.json|yarn\.lock|pnpm-lock\.yaml)$"
)
QUOTES = ("'", '"', "`")
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


# Tool configuration files that hold a credential only under some keys: ``.npmrc`` is also where
# a project commits ``package-lock=false`` or ``ignore-scripts=true``. A change to one is a leak
# when an added line sets such a key (``//registry.npmjs.org/:_authToken=…``, ``password = …``),
# not by the file's name alone (the name still keeps it away from the model, engine.policy).
CREDENTIAL_KEYS: dict[str, re.Pattern[str]] = {
    ".npmrc": re.compile(r"(?i)(_authtoken|_auth|_password|\bpassword|\busername|\bemail)\s*="),
    ".pypirc": re.compile(r"(?i)^\s*(password|username)\s*[=:]"),
}


def mask(value: str) -> str:
    """Enough to recognise which secret it was, never enough to use it."""
    return value[:4] + "…" if len(value) > 8 else "…"


def is_secret_file(path: str) -> bool:
    """A file whose presence in a change is a leak whatever its content (the default deny-list)."""
    return is_secret_name(path, DEFAULT_DENY)


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
        "GitLab token",
        "Slack token",
        "Google API key",
        "Hugging Face token",
        "Stripe key",
        "npm token",
        "PyPI token",
    }
)
# Below this many bits of entropy per character a provider-formatted value is a placeholder
# (``ghp_xxxx…``, ``AKIA0000…``): real keys are random and score well above 3.
REAL_KEY_ENTROPY = 3.0
# Words that mark a documented example value (AWS documents ``AKIAIOSFODNN7EXAMPLE``).
EXAMPLE_MARKERS = ("example", "sample", "dummy", "fake", "test", "xxxx", "0000", "1234")
# Directories of test fixtures that are not test code by name (certificates, keys, recordings),
# and test directories inside a package (``tornado/test/test.key``), whose data files are samples.
FIXTURE_DIRS = re.compile(
    r"(^|/)(fixtures?|testdata|test_data|certs?|keys|cassettes|snapshots|tests?)/", re.I
)


def scan_matches(text: str, *, code: bool = False, formats_only: bool = False) -> list[tuple[str, str]]:
    """(kind, raw value) for every secret on one line (none on a line marked as a fixture).

    Format matches always count; a literal assigned to a secret-named key only when no format
    matched and it does not look like a fixture (``test…``, ``aaaa``). In ``code`` (a source
    file) a literal is quoted: ``secret: _CookieSecretTypes,`` is a parameter's annotation, where
    the same line in a YAML or .env file would be a value; and a quoted literal in a union
    (``credential: 'username' | 'password'``) is a TypeScript type. ``formats_only``: a built
    file (a bundle, a source map) copies its source's assignments; only a key format counts."""
    if any(marker in text for marker in ALLOW_MARKERS):
        return []
    hits = find_secrets(text)
    formats = [(h.kind, h.value) for h in hits if not h.is_assignment]
    if formats or formats_only:
        return formats
    return [
        (h.kind, h.value)
        for h in hits
        if len(set(h.value)) >= MIN_DISTINCT_CHARS
        and not FIXTURE_VALUE.match(h.value)
        and h.value.lower() not in ACCESS_LEVELS
        and h.value.lower() not in SETTING_WORDS
        and not OPTION_VALUE.match(h.value)
        and (not code or (text[h.start - 1 : h.start] in QUOTES and not _in_union_type(text, h.start, h.end)))
    ]


# A literal type in a union: TypeScript's ``credential: 'username' | 'password'`` (one ``|``:
# ``||`` is the logical or of a value).
_UNION_AFTER = re.compile(r"^\s*\|(?!\|)")
_UNION_BEFORE = re.compile(r"(?<!\|)\|\s*$")


def _in_union_type(text: str, start: int, end: int) -> bool:
    """The quoted literal at ``start:end`` (quotes outside) is one member of a union of types."""
    return bool(_UNION_AFTER.match(text[end + 1 :]) or _UNION_BEFORE.search(text[: start - 1]))


# The name a secret is assigned to, just before its value: ``DB_PASSWORD = '``, ``"token": "``.
_HOLDER = re.compile(r"""([A-Za-z_$][\w.$-]*)["']?\s*(?::=|=>|[:=])\s*(?:[\w.\[\], |]*=\s*)?["'`]?$""")


def _shown(kind: str, value: str, text: str) -> str:
    """The masked value, and for an assigned secret the name that holds it (``DB_PASSWORD = …``):
    a short value masks to nothing, and the line may assign several names."""
    if kind == ASSIGNED_KIND:
        at = text.find(value)
        m = _HOLDER.search(text[:at]) if at > 0 else None
        if m is not None:
            return f"{m.group(1)} = {mask(value)}"
    return mask(value)


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


# Files that may hold certificates only (public) or a private key too (a secret).
CERTIFICATE_SUFFIXES = (".pem", ".crt", ".cer")


def _certificates_only(f: FileChange) -> bool:
    """A PEM file whose added lines are certificates and no private key: a CA bundle update
    (pip vendoring certifi's cacert.pem) blocked the merge as 'a secret-bearing file'."""
    if f.binary or not f.path.lower().endswith(CERTIFICATE_SUFFIXES) or not f.added_lines:
        return False
    text = "\n".join(t for _, t in f.added_lines)
    return "-----BEGIN CERTIFICATE-----" in text and "PRIVATE KEY" not in text


def _only_removes(f: FileChange) -> bool:
    """A text file the change only took lines from (certifi dropping a root CA from cacert.pem
    blocked the merge as 'a secret-bearing file is changed'), or only moved."""
    return f.status != "added" and not f.binary and not f.added_lines


# More sample secrets than this in one file are one remark with their lines: a test module of
# URL parsing holds a dozen ``user:pass@`` samples, and a dozen identical remarks say no more.
MAX_SAMPLE_REMARKS = 3


_SAMPLE_WHERE = re.compile(r" in (?:a document, example or test fixture|a docstring or comment) \(")


def _collapse_samples(findings: list[Finding]) -> list[Finding]:
    by_file: dict[str | None, list[Finding]] = {}
    for f in findings:
        if f.rule == "secret-in-fixture" and f.line is not None:
            by_file.setdefault(f.file, []).append(f)
    out: list[Finding] = []
    done: set[str | None] = set()
    for f in findings:
        samples = by_file.get(f.file, [])
        if f not in samples or len(samples) <= MAX_SAMPLE_REMARKS:
            out.append(f)
        elif f.file not in done:
            done.add(f.file)
            lines = ", ".join(str(x.line) for x in samples[:10]) + (" ..." if len(samples) > 10 else "")
            kinds = ", ".join(dict.fromkeys(_SAMPLE_WHERE.split(x.message, 1)[0] for x in samples))
            out.append(
                replace(
                    f,
                    message=f"{len(samples)} sample secrets ({kinds}) in {f.file}, lines {lines}: "
                    "reported, not blocking; make sure none is a real credential",
                    count=len(samples),
                )
            )
    return out


def _where(status: str, target: str) -> str:
    """How a secret-bearing file reaches the repository, as the reviewed target has it."""
    if status != "added":
        return "changed in the repository"
    if target == "WORKING":  # untracked and not ignored: not in the repository yet
        return "new in the work tree, untracked and not ignored by git (`git add` would commit it)"
    if target == "STAGED":
        return "staged to be added to the repository"
    return "added to the repository"


def _built(path: str) -> bool:
    """A build's output or a lock file (``dist/``, ``*.min.js``, a source map, package-lock.json):
    its assignments are copies of the source's, reviewed there (axios release commits: seven
    "secrets" per release, ``withCredentials = …`` in each bundle and map; package-lock's
    ``"registry-auth-token": "…"`` is a package name and its version)."""
    return BUILT.search(path) is not None


def scan_files(files: Iterable[FileChange], target: str = "") -> list[Finding]:
    """The secret findings of ``files``; ``target`` (``WORKING``, ``STAGED`` or a ref) words them."""
    findings: list[Finding] = []
    for f in files:
        if f.status == "deleted":
            continue
        fixture = is_fixture_path(f.path)
        matched = secret_patterns_matching(f.path, DEFAULT_DENY)
        keys = CREDENTIAL_KEYS.get(f.path.rsplit("/", 1)[-1].lower())
        if matched and keys is not None:
            credential = [n for n, t in f.added_lines if keys.search(t)]
            if credential:
                findings.append(
                    Finding(
                        "info" if fixture else "high",
                        "secrets",
                        f"a credential is set in {f.path}"
                        + (
                            " (a fixture: reported, not blocking)" if fixture else "; remove it and rotate it"
                        ),
                        f.path,
                        credential[0],
                        None,
                        rule="secret-in-fixture" if fixture else "secret-file",
                        blocking=not fixture,
                    )
                )
                continue
            matched = []  # settings only: its lines are scanned like any other file's
        if matched and _certificates_only(f):
            matched = []  # a CA bundle (certifi's cacert.pem): public certificates, no key
        if matched and _only_removes(f):
            matched = []  # lines taken out of a key file or a CA bundle expose nothing new
        if matched:
            # ``app/secrets.py`` matches by a word in its name only: code about secrets, probably.
            by_word_only = all(p in SUGGESTIVE_PATTERNS for p in matched) and f.path.endswith(CODE_SUFFIXES)
            blocking = not fixture and not by_word_only
            findings.append(
                Finding(
                    "high" if blocking else ("info" if fixture else "medium"),
                    "secrets",
                    f"a secret-bearing file is {_where(f.status, target)}: {f.path}"
                    + (" (a fixture: reported, not blocking)" if fixture else "")
                    + (" (named like one: check it holds no secret)" if by_word_only and not fixture else ""),
                    f.path,
                    None,
                    None,
                    rule="secret-in-fixture" if fixture else "secret-file",
                    blocking=blocking,
                )
            )
            if not by_word_only:
                continue
        code = f.path.endswith(CODE_SUFFIXES)
        built = _built(f.path)
        for line, text in f.added_lines:
            # A docstring or a comment is documentation too: ``httpx.URL("https://jo:a%20secret@…")``
            # in a class docstring is a sample, unless the value looks real.
            sample = fixture or line in f.prose_added
            for kind, value in scan_matches(text, code=code, formats_only=built):
                blocking = not sample or looks_real(kind, value)
                findings.append(
                    Finding(
                        "high" if blocking else "info",
                        "secrets",
                        f"{kind} added ({_shown(kind, value, text)}); remove it and rotate it"
                        if blocking
                        else f"{kind} in {'a document, example or test fixture' if fixture else 'a docstring or comment'} ({_shown(kind, value, text)}): "
                        "reported, not blocking; make sure it is not a real credential",
                        f.path,
                        line,
                        None,
                        rule="secret-in-diff" if blocking else "secret-in-fixture",
                        blocking=blocking,
                    )
                )
    return _collapse_samples(findings)
