"""Which pieces of a text are secrets: one detector for content, shared by redaction and CI review.

Owns the named credential patterns (known token formats, private-key blocks, passwords in URLs,
secret-named assignments) and ``find_secrets``, which returns each hit's kind and the exact span
of the secret value. The redactor masks those spans; CI review reports them. It errs towards
finding: a false positive costs a few characters of context, a false negative leaks a credential.

Every pattern starts with a literal (``sk-ant-``, ``://``, ``token``...), so the regex engine
scans for it at C speed; word boundaries and assignment names are checked around each hit. The
indexer redacts every chunk, so this runs over whole repositories (tens of MB/s, see
docs/benchmarks.md).
"""

from __future__ import annotations

import os
import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate


@dataclass(frozen=True)
class _Format:
    """A credential recognised by its format. ``lower``: matched on the lower-cased text."""

    kind: str
    pattern: re.Pattern[str]
    lower: bool = False
    word_start: bool = True  # the character before the match must not be [A-Za-z0-9_]
    literal: str = ""  # every match contains it: a text without it is skipped (a fast substring test)


def _f(kind: str, pattern: str, *, lower: bool = False, word_start: bool = True, flags: int = 0) -> _Format:
    literal = re.match(r"(?:[A-Za-z0-9_:/-]|\\\.)*", pattern)
    text = literal.group(0).replace("\\.", ".") if literal else ""
    return _Format(kind, re.compile(pattern, flags), lower, word_start, text)


# Group "v" (when present) is the secret value; otherwise the whole match is.
FORMATS: tuple[_Format, ...] = (
    _f(
        "private key",
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        word_start=False,
        flags=re.S,
    ),
    _f("Anthropic API key", r"sk-ant-[A-Za-z0-9_\-]{8,}"),
    _f("OpenAI API key", r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
    *(_f("AWS access key id", prefix + r"[0-9A-Z]{16}\b") for prefix in ("AKIA", "ASIA", "AGPA", "AROA")),
    *(_f("GitHub token", prefix + r"_[A-Za-z0-9]{20,}") for prefix in ("ghp", "gho", "ghu", "ghs", "ghr")),
    _f("GitHub token", r"github_pat_[A-Za-z0-9_]{20,}"),
    _f("GitLab token", r"glpat-[A-Za-z0-9_\-]{20,}"),
    _f("Slack token", r"xox[abposr]-[A-Za-z0-9-]{10,}"),
    _f("Slack webhook", r"hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}", word_start=False),
    _f("Google API key", r"AIza[0-9A-Za-z_\-]{30,}"),
    _f("Hugging Face token", r"hf_[A-Za-z0-9]{20,}"),
    *(
        _f("Stripe key", p + r"_[A-Za-z0-9]{16,}")
        for p in ("sk_live", "sk_test", "rk_live", "rk_test", "pk_live")
    ),
    _f("Stripe key", r"whsec_[A-Za-z0-9]{20,}"),
    _f("npm token", r"npm_[A-Za-z0-9]{30,}"),
    _f("PyPI token", r"pypi-[A-Za-z0-9_\-]{40,}"),
    _f("SendGrid key", r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"),
    _f("JSON web token", r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    _f("bearer token", r"bearer\s+(?P<v>[A-Za-z0-9._~+/=\-]{8,})", lower=True),
    _f("basic auth header", r"authorization:\s*basic\s+(?P<v>[A-Za-z0-9+/=]{8,})", lower=True),
    # scheme://user:password@host (any password length: postgres://admin:pw@db is a leak too),
    # and a long token used as the user part (https://<token>@github.com/...).
    _f(
        "credentials in a URL",
        r"://(?:[^\s:/@\"'`]*:(?P<v>[^\s/@\"'`]+)|(?P<u>[A-Za-z0-9_\-]{20,}))@[\w.\-\[\]:]+",
        word_start=False,
    ),
)
# "scheme" before "://": a letter, then letters, digits, + . -
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")

# --- assignments -------------------------------------------------------------------------------
# What is masked is part of every chunk's text (chunks are cut from the redacted file): a change
# in what these rules mask raises ``engine.index.chunking.CHUNKING_VERSION``.
# The last word of a name that holds a secret, in any case: DB_PASSWORD, apiKey, client_secret,
# GITHUB_TOKEN, PGPASSWORD, private_key, secret_key_base... The name must END with it, so
# ``max_tokens`` and ``author`` are not secrets.
_SECRET_SUFFIX = (
    r"(?:passw(?:or)?d|passphrase|pwd|secrets?|token|credentials?|api[_\-]?key|"
    r"(?:private|access|secret|signing|encryption|master|auth)[_\-]?key(?:[_\-]?base)?)"
)
# ``pass`` alone only after a separator or as the whole name (``DB_PASS``), never ``bypass``.
SECRET_NAME = re.compile(
    rf"(?:[A-Za-z0-9_.\-]*?{_SECRET_SUFFIX}|(?:[A-Za-z0-9_.\-]*[_.\-])?pass)", re.IGNORECASE
)
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
# The keyword a secret name ends with, then an assignment operator (matched on lower-cased text).
_BEFORE_OPERATOR = r"[\"']?[ \t]*"
_OPERATORS = r":=|=>|[:=]"
_OPERATOR = rf"(?P<end>){_BEFORE_OPERATOR}(?P<op>{_OPERATORS})"
# Each starts with a plain letter: the short-text cue (``_cue``) groups its alternatives by it.
_KEYWORD_WORDS = (
    r"pass(?:w(?:or)?d|phrase)?",
    r"pwd",
    r"secrets?",
    r"token",
    r"credentials?",
    r"key(?:[_\-]?base)?",
)
_KEYWORDS: tuple[re.Pattern[str], ...] = tuple(re.compile(kw + _OPERATOR) for kw in _KEYWORD_WORDS)
# After the operator: a quoted literal on the same line...
_QUOTED_VALUE = re.compile(r"[ \t]*(?P<q>[\"'`])(?P<v>[^\"'`\n]+?)(?P=q)")
# ...or, after a colon, a type annotation and then one (``password: str = "..."``, TypeScript's
# ``apiKey: string = "..."``, ``DB_PASSWORD: Final[str] = "..."``).
_ANNOTATED_VALUE = re.compile(
    r"[ \t]*[A-Za-z_][\w.]*(?:\[[\w., |\[\]]*\])?(?:[ \t]*\|[ \t]*[A-Za-z_][\w.]*)*[ \t]*=(?![=>])"
    r"[ \t]*(?P<q>[\"'`])(?P<v>[^\"'`\n]+?)(?P=q)"
)
# ...or (only for a name that starts its line: dotenv, shell, YAML, INI) a bare value to the
# end of the line, an optional comment after it.
_BARE_VALUE = re.compile(r"[ \t]*(?P<v>[^\s\"'`#=][^\s#]*)[ \t]*(?:#[^\n]*)?(?=\n|\r|$)")
_LINE_LEAD = re.compile(r"[ \t]*(?:export[ \t]+|set[ \t]+|-[ \t]+)?[\"']?\Z")
# An upper-case, env-style NAME=value anywhere in a line (a shell command, a sentence): the
# value runs to a space or punctuation that ends a sentence.
_INLINE_VALUE = re.compile(r"(?P<v>[^\s\"'`,;)]+)")

# Values that are not secrets: placeholders, environment lookups, templates.
PLACEHOLDER = re.compile(
    r"(?i)^(?:x+|\*+|\.+|-+|<[^>]*>|\$\{?[\w.:\-]+\}?.*|%\(?[\w]+\)?s?|\{\{.*\}\}|"
    r"change[-_]?me.*|your[-_].*|dummy.*|example.*|placeholder.*|redacted|\[redacted\]|null|none|nil|"
    r"true|false|\d{1,3}|todo|tbd|env|required|optional|secret|password|passwd|pass|pwd|token|key)$"
)
# A bare value that is code, not a literal: a call, an index, a dotted name.
_CODE_VALUE = re.compile(r"[(\[{$]|^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
# A bare identifier without digits assigned to a lower-case name is a variable in code
# (``token = tok``), while ``DB_PASS=hunter`` (an upper-case, dotenv-style name) is a value.
# After a colon it is a value (YAML ``password: letmein``) unless it is a type annotation.
_PLAIN_WORD = re.compile(r"^[A-Za-z_]+$")
_TYPE_WORDS = frozenset({"str", "int", "bytes", "bool", "float", "any", "object", "string", "number"})

# Environment variables whose *values* are secrets wherever they appear verbatim.
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
    "OPENROUTER_API_KEY",
    "COHERE_API_KEY",
)


def environment_without_secrets() -> dict[str, str]:
    """This process's environment without the credential variables, for a child that needs none."""
    return {k: v for k, v in os.environ.items() if k not in SECRET_ENV_VARS}


# Shorter values are too likely to be ordinary words to mask everywhere.
MIN_ENV_SECRET_LEN = 8
ASSIGNED_KIND = "secret assigned to a literal"


@dataclass(frozen=True)
class SecretHit:
    """One secret in a text: its kind and the span of the value itself."""

    kind: str
    start: int
    end: int
    value: str

    @property
    def is_assignment(self) -> bool:
        """Found by its name, not its format: CI review asks for more before reporting these."""
        return self.kind == ASSIGNED_KIND


def is_placeholder(value: str) -> bool:
    return bool(PLACEHOLDER.match(value.strip()))


_ENV_KEYS_BYTES = tuple(os.fsencode(v) for v in SECRET_ENV_VARS)


# The last values read and their decoded, sorted form (see ``env_secret_values``).
_ENV_SECRETS: tuple[tuple[bytes, ...], tuple[str, ...]] = ((), ())


def env_secret_values() -> tuple[str, ...]:
    """The current values of the well-known credential variables, longest first.

    Read on every call (a key set after start-up is masked too), from the environment's
    underlying mapping when it has one: ``os.environ.get`` encodes and decodes on each lookup,
    and the indexer redacts two short texts per symbol. The decoded values are kept while the
    variables keep their values: decoding them afresh on every call left a freed copy of each
    key in the heap per call, and a library that writes uninitialised buffers to disk (Chroma's
    HNSW files, docs/security.md) can pick such a copy up.
    """
    global _ENV_SECRETS
    data = getattr(os.environ, "_data", None)
    if isinstance(data, dict) and os.name == "posix":
        raw = tuple(v for v in map(data.get, _ENV_KEYS_BYTES) if v)
        if raw == _ENV_SECRETS[0]:
            return _ENV_SECRETS[1]
        values = [os.fsdecode(v) for v in raw]
    else:
        raw = None
        values = [os.environ.get(var, "") for var in SECRET_ENV_VARS]
    found = tuple(sorted({v for v in values if len(v) >= MIN_ENV_SECRET_LEN}, key=len, reverse=True))
    if raw is not None:
        _ENV_SECRETS = (raw, found)
    return found


def _lowered(text: str) -> str | None:
    """``text.lower()`` when it keeps every offset (a few characters lower-case to two)."""
    low = text.lower()
    return low if len(low) == len(text) else None


def _literal_gates(formats: tuple[_Format, ...]) -> tuple[tuple[re.Pattern[str], ...], tuple[int, ...]]:
    """One search per first character of the formats' literals, and each format's gate (-1: none).

    Asking for thirty literals one ``in`` at a time scans a file thirty times, and the indexer
    redacts every file it chunks. A pattern that starts with a literal character is searched at
    C speed, so the literals that share a first character are asked for together
    (``A(?:KIA|SIA|GPA|ROA|Iza)``): a file none of them is in costs one scan for the group.
    A gate only says "one of these literals occurs"; each format still checks its own.
    """
    by_first: dict[tuple[bool, str], list[str]] = {}
    for fmt in formats:
        if fmt.literal:
            by_first.setdefault((fmt.lower, fmt.literal[0]), []).append(fmt.literal)
    keys = list(by_first)
    gates: list[re.Pattern[str]] = []
    for key in keys:
        literals = sorted(set(by_first[key]), key=len, reverse=True)
        prefix = os.path.commonprefix(literals)
        rests = [lit[len(prefix) :] for lit in literals]
        tail = "(?:" + "|".join(map(re.escape, rests)) + ")" if all(rests) else ""
        gates.append(re.compile(re.escape(prefix) + tail))
    index = tuple(keys.index((f.lower, f.literal[0])) if f.literal else -1 for f in formats)
    return tuple(gates), index


_GATES, _GATE_OF = _literal_gates(FORMATS)


# Below this length thirty ``in`` tests cost less than a dozen regex calls (a signature, a doc
# line); above it the scans dominate and the gates win (a whole file: 2-3x faster).
GATED_FROM_CHARS = 1024


def _present(text: str, low: str | None) -> list[_Format]:
    """The formats whose literal ``text`` holds (with no literal, or none checkable: all)."""
    if low is None:
        return [f for f in FORMATS if not f.literal or f.lower or f.literal in text]
    if len(text) < GATED_FROM_CHARS:
        return [f for f in FORMATS if not f.literal or f.literal in (low if f.lower else text)]
    gate_open: dict[int, bool] = {}
    out: list[_Format] = []
    for fmt, gate in zip(FORMATS, _GATE_OF, strict=True):
        if fmt.literal:
            haystack = low if fmt.lower else text
            is_open = gate_open.get(gate)
            if is_open is None:
                is_open = gate_open[gate] = _GATES[gate].search(haystack) is not None
            if not is_open or fmt.literal not in haystack:
                continue
        out.append(fmt)
    return out


def _format_hits(text: str, low: str | None) -> Iterator[SecretHit]:
    for fmt in _present(text, low):
        if fmt.lower:
            if low is None:
                haystack, pattern = text, re.compile(fmt.pattern.pattern, fmt.pattern.flags | re.I)
            else:
                haystack, pattern = low, fmt.pattern
        else:
            haystack, pattern = text, fmt.pattern
        for match in pattern.finditer(haystack):
            if fmt.word_start and match.start() > 0 and text[match.start() - 1] in _WORD_CHARS:
                continue
            if fmt.kind == "credentials in a URL":
                start = match.start()
                while start > 0 and text[start - 1] in _SCHEME_CHARS:
                    start -= 1
                if start == match.start() or not text[start].isalpha():
                    continue  # "://" without a scheme before it
            group = next((g for g in ("v", "u") if g in pattern.groupindex and match.group(g)), None)
            start, end = match.span(group) if group else match.span()
            value = text[start:end]
            if group and is_placeholder(value):
                continue
            yield SecretHit(fmt.kind, start, end, value)


def _is_code(name: str, op: str, value: str) -> bool:
    """A bare assigned value that reads as code (a call, a variable, a type), not a literal."""
    if _CODE_VALUE.search(value):
        return True
    if not _PLAIN_WORD.match(value) or name.isupper():
        return False
    if op == ":":
        return value[0].isupper() or value.lower() in _TYPE_WORDS
    return True


def _assignment_hits(text: str, low: str | None) -> Iterator[SecretHit]:
    haystack = low if low is not None else text
    for keyword in _KEYWORDS:
        pattern = keyword if low is not None else re.compile(keyword.pattern, re.I)
        for match in pattern.finditer(haystack):
            name_end = match.start("end")
            start = match.start()
            while start > 0 and text[start - 1] in _NAME_CHARS:
                start -= 1
            name = text[start:name_end]
            if not SECRET_NAME.fullmatch(name):
                continue
            value_match = _QUOTED_VALUE.match(text, match.end())
            if value_match is None and match.group("op") == ":":
                value_match = _ANNOTATED_VALUE.match(text, match.end())
            if value_match is None:
                line_start = text.rfind("\n", 0, start) + 1
                if _LINE_LEAD.match(text, line_start, start):
                    value_match = _BARE_VALUE.match(text, match.end())
                elif name.isupper() and match.group("op") == "=" and match.end() == name_end + 1:
                    value_match = _INLINE_VALUE.match(text, match.end())
                if value_match is None:
                    continue
                # In code a bare value may end in the separator of an argument list, a dict or a
                # statement (``"secret": secret,``, ``password: string;``): it is judged without it.
                bare = value_match.group("v")
                bare = bare[:-1] if len(bare) > 1 and bare[-1] in ",;" else bare
                if _is_code(name, match.group("op"), bare) or is_placeholder(bare):
                    continue
            value = value_match.group("v")
            if is_placeholder(value):
                continue
            yield SecretHit(ASSIGNED_KIND, value_match.start("v"), value_match.end("v"), value)


def _env_hits(text: str) -> Iterator[SecretHit]:
    for value in env_secret_values():
        start = text.find(value)
        while start != -1:
            yield SecretHit("credential from the environment", start, start + len(value), value)
            start = text.find(value, start + len(value))


def _iter_hits(text: str, low: str | None) -> Iterator[SecretHit]:
    yield from _env_hits(text)
    yield from _format_hits(text, low)
    yield from _assignment_hits(text, low)


def _cue() -> re.Pattern[str]:
    """A pattern that every format hit and every assignment hit holds, matched on the lower-cased text.

    A format hit holds its literal (``_present`` relies on it too), so the literal lower-cased is in
    the lower-cased text at the same offset; an assignment hit is a keyword match on that text. A
    short text (the indexer redacts a signature and a docstring per symbol, ~80k on Django) that
    holds no cue needs no further look: one search instead of thirty literals and six keyword
    scans (sig/doc redaction on Django: 0.24 -> 0.09 s). The alternatives are grouped by first
    character (``a(?:kia|sia|...)|s(?:k-ant-|ecrets?...)``): one branch to try per position
    instead of forty, 4x faster. Long texts skip the cue: there one is nearly always present, and
    the search would be one more pass over the whole file.
    """
    if not all(f.literal for f in FORMATS):
        raise AssertionError("every secret format needs a literal for the short-text cue")
    by_first: dict[str, list[str]] = {}
    for literal in sorted({f.literal.lower() for f in FORMATS}, key=lambda lit: (-len(lit), lit)):
        by_first.setdefault(literal[0], []).append(re.escape(literal[1:]))
    for word in _KEYWORD_WORDS:
        by_first.setdefault(word[0], []).append(f"(?:{word[1:]}){_BEFORE_OPERATOR}(?:{_OPERATORS})")
    return re.compile(
        "|".join(f"{re.escape(first)}(?:{'|'.join(rests)})" for first, rests in by_first.items())
    )


_CUE = _cue()


def find_secrets(text: str) -> list[SecretHit]:
    """Every secret in ``text``, sorted by position, overlapping hits merged into the first."""
    if not text:
        return []
    low = _lowered(text)
    if low is not None and len(text) < GATED_FROM_CHARS and _CUE.search(low) is None:
        # No format's literal and no keyword before an operator: only an environment value can match.
        env_hits = list(_env_hits(text))
        return _merged(text, env_hits) if env_hits else []
    return _merged(text, _iter_hits(text, low))


# Joins the short texts ``secret_free`` looks at together: no cue contains it.
_JOIN = "\x00"


def secret_free(texts: Sequence[str]) -> list[bool]:
    """For each text, True when ``find_secrets`` would find nothing in it, decided for all at once.

    The indexer redacts two or three short texts per symbol (a signature, a docstring, a chunk's
    signature and docs): 88k on Django, nearly all without a secret. ``find_secrets`` decides each
    with one cue search (``_CUE``); here one search over them all joined decides every text that no
    cue match touches (a match across a join only sends both texts to ``find_secrets``). False
    means "not decided here": the caller asks ``find_secrets``. So are long texts (they skip the cue
    in ``find_secrets`` too), texts whose lower case changes their length, and every text while a
    credential variable is set (its value may be anywhere).
    """
    out = [not text for text in texts]
    if env_secret_values():
        return out
    picked = [i for i, text in enumerate(texts) if text and len(text) < GATED_FROM_CHARS]
    if not picked:
        return out
    joined = _JOIN.join([texts[i] for i in picked])
    low = joined.lower()
    if len(low) != len(joined):
        return out
    for i in picked:
        out[i] = True
    # Where each picked text starts in ``joined``.
    starts = [0, *accumulate(len(texts[i]) + len(_JOIN) for i in picked[:-1])]
    for match in _CUE.finditer(low):
        first = bisect_right(starts, match.start()) - 1
        last = bisect_right(starts, match.end() - 1) - 1
        for k in range(first, last + 1):
            out[picked[k]] = False
    return out


def _merged(text: str, found: Iterable[SecretHit]) -> list[SecretHit]:
    hits = sorted(found, key=lambda h: (h.start, -h.end))
    merged: list[SecretHit] = []
    for hit in hits:
        if merged and hit.start < merged[-1].end:
            last = merged[-1]
            if hit.end > last.end:
                merged[-1] = SecretHit(last.kind, last.start, hit.end, text[last.start : hit.end])
            continue
        merged.append(hit)
    return merged
