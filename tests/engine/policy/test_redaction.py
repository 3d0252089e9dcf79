"""One redactor: known token formats, URL passwords, secret assignments, keys; code left alone."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.policy import content
from engine.policy.content import find_secrets
from engine.policy.redaction import (
    MASK,
    contains_secret,
    redact,
    redact_json,
    redact_many,
    redact_quoted,
    redact_request,
)

# (text, the secret part that must disappear)
LEAKS = [
    ("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("key = 'ASIAABCDEFGHIJKLMNOP'", "ASIAABCDEFGHIJKLMNOP"),
    ("t = 'ghp_0123456789abcdefghijABCDEFGHIJ0123'", "ghp_0123456789abcdefghijABCDEFGHIJ0123"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "github_pat_11ABCDEFG0123456789_abcdefghijklmnop"),
    ("ANTHROPIC_API_KEY=sk-ant-api03-Zq9x8w7v6u5t4s3r2q1p", "sk-ant-api03-Zq9x8w7v6u5t4s3r2q1p"),
    ("openai = 'sk-proj-abcdefghijklmnopqrstuvwxyz012345'", "sk-proj-abcdefghijklmnopqrstuvwxyz012345"),
    ("xoxb-1234567890-abcdefghijkl", "xoxb-1234567890-abcdefghijkl"),
    ("glpat-abcdefghij0123456789", "glpat-abcdefghij0123456789"),
    ("AIzaSyA-abcdefghijklmnopqrstuvwxyz01234", "AIzaSyA-abcdefghijklmnopqrstuvwxyz01234"),
    ("stripe = 'sk_live_0123456789abcdefABCD'", "sk_live_0123456789abcdefABCD"),
    ("hf_abcdefghijklmnopqrstuvwxyz0123", "hf_abcdefghijklmnopqrstuvwxyz0123"),
    ("npm_abcdefghijklmnopqrstuvwxyz0123456789", "npm_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("Authorization: Bearer abcdefghijklmnop0123456789", "abcdefghijklmnop0123456789"),
    ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sflKxwRJSMeKKF2QT4fwpM", "sflKxwRJSMeKKF2QT4fwpM"),
    # passwords in URLs, any length, and git remotes with credentials
    ("DATABASE_URL=postgres://admin:pw@db.internal:5432/app", ":pw@"),
    ("redis://:hunter2@cache:6379/0", "hunter2"),
    ("url = https://deploy:s3cr3t-T0ken@github.com/org/repo.git", "s3cr3t-T0ken"),
    ("remote = https://x-access-token:gho_abcdefghijklmnopqrstuvwxyz012345@github.com/o/r", "gho_"),
    ("https://ghp_abcdefghijklmnopqrstuvwxyz0123@github.com/org/repo", "ghp_abcdefghijklmnop"),
    # *_PASS / *_PASSWORD / *_SECRET / *_TOKEN assignments, dotenv, shell, YAML, code
    ("DB_PASS=pw", "=pw"),
    ("DB_PASSWORD=hunter", "hunter"),
    ("export API_TOKEN=abc123def", "abc123def"),
    ("CLIENT_SECRET = 'c1i3nt'", "c1i3nt"),
    ("MYSQL_PWD=r00t", "r00t"),
    ("PGPASSWORD=pgpw99", "pgpw99"),
    ("  password: letmein", "letmein"),
    ('{"api_key": "abcd1234efgh"}', "abcd1234efgh"),
    ("SECRET_KEY = 'django-insecure-0123abcd'", "django-insecure-0123abcd"),
    ("dbPassword: 'x9y8z7'", "x9y8z7"),
    # a trailing separator does not turn a literal into code
    ("  password: letmein,", "letmein"),
    ("DB_PASSWORD=hunter;", "hunter"),
    ("api_token = a1b2c3d4e5,", "a1b2c3d4e5"),
    # private keys, whole blocks
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nQQQQ\n-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAA",
    ),
    ("-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQdGBF4\n-----END PGP PRIVATE KEY BLOCK-----", "lQdGBF4"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEcut-off-in-a-preview", "MIIEcut-off"),
]
# Code that names secrets but holds none: it must stay matchable by SEARCH blocks.
CODE = [
    "token = get_token()",
    "password = self.cleaned_data.get('password')",
    "def check_password(password, encoded):",
    "self.password = password",
    "token = request.headers['X-Token']",
    "password: str = ''",
    "api_key = os.environ['API_KEY']",
    "token: '${GITHUB_TOKEN}'",
    "password = 'changeme'",
    "bypass = 1",
    "max_tokens = 4000",
    "author = 'Jane'",
    "primary_key = 'id'",
    "if password == x:",
    "url = f'{scheme}://{user}:{password}@{host}'",
    "ssh://git@github.com/org/repo.git",
    # a bare value that is code before the separator of a dict, an argument list or a statement
    '    "secret": secret,',
    "  password: string;",
    '    "SECRET_KEY": None,',
    "            cookie_secret=self.COOKIE_SECRET,",
    "    key_password=None,",
    '    "password": str,',
]


@pytest.mark.parametrize(("text", "secret"), LEAKS)
def test_each_format_is_masked(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out, out
    assert MASK in out
    assert contains_secret(text)


@pytest.mark.parametrize("text", CODE)
def test_code_that_only_names_a_secret_is_left_alone(text: str) -> None:
    assert redact(text) == text


def test_the_env_value_of_a_key_is_masked_anywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "plainlookingvalue123")
    assert "plainlookingvalue123" not in redact("the key is plainlookingvalue123 ok")


def test_a_key_set_or_changed_later_is_masked_and_the_old_one_no_longer_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The decoded values are kept between calls, never past a change of the variables."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "firstvalueofthekey1")
    assert "firstvalueofthekey1" not in redact("a firstvalueofthekey1 b")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "secondvalueofthekey2")
    assert "secondvalueofthekey2" not in redact("a secondvalueofthekey2 b")
    assert "firstvalueofthekey1" in redact("a firstvalueofthekey1 b")
    monkeypatch.setenv("OPENAI_API_KEY", "anothervalueofakey3")
    assert redact("x anothervalueofakey3 secondvalueofthekey2").count("anothervalueofakey3") == 0
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    assert "secondvalueofthekey2" in redact("a secondvalueofthekey2 b")
    # Decoded once while the values stay the same: no fresh copy of a key per call.
    assert content.env_secret_values() is content.env_secret_values()


planted = st.sampled_from([secret for _text, secret in LEAKS if len(secret) > 8])
filler = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60)


@given(
    st.lists(st.sampled_from([t for t, _ in LEAKS]) | filler, max_size=8),
    st.sampled_from(["\n", "\r\n", " "]),
)
def test_redaction_keeps_line_breaks_and_is_idempotent(pieces: list[str], sep: str) -> None:
    text = sep.join(pieces)
    out = redact(text)
    before, after = text.split("\n"), out.split("\n")
    assert len(after) == len(before)  # line n of the redacted text is line n of the original
    assert out.count("\r") == text.count("\r")
    assert redact(out) == out


@given(before=filler, after=filler, leak=st.sampled_from(LEAKS))
def test_a_planted_secret_never_survives_whatever_surrounds_it(before: str, after: str, leak) -> None:
    text, secret = leak
    out = redact(f"{before}\n{text}\n{after}")
    # The secret may only survive where the filler itself recreated it (never, in practice).
    assert secret not in out or secret in before or secret in after


def test_hits_name_their_kind() -> None:
    kinds = {h.kind for h in find_secrets("a=AKIAIOSFODNN7EXAMPLE\nDB_PASS=hunter22\npg://u:p@h\n")}
    assert kinds == {"AWS access key id", "secret assigned to a literal", "credentials in a URL"}


def test_json_and_requests_are_redacted_without_mutating_them() -> None:
    from engine.llm.base import PromptBlock

    doc = {"a": ["DB_PASS=hunter22", {"b": "AKIAIOSFODNN7EXAMPLE"}], "n": 3}
    out = redact_json(doc)
    assert "hunter22" not in str(out) and "AKIA" not in str(out) and out["n"] == 3
    assert doc["a"][0] == "DB_PASS=hunter22"  # the original is untouched
    system, messages = redact_request(
        [PromptBlock("key AKIAIOSFODNN7EXAMPLE", cache=True)],
        [{"role": "user", "content": [{"type": "text", "text": "DB_PASS=hunter22"}]}],
    )
    assert "AKIA" not in system[0].text and system[0].cache
    assert "hunter22" not in str(messages)


# Fragments of every format's literal (and near misses), so generated texts open the gates often.
_FRAGMENTS = st.sampled_from(
    [f.literal for f in content.FORMATS]
    + ["sk", "A", "gh", "g", "h", "p", "k_", "_live_", "://", "BEGIN", "Bearer ", "x", "-", "_", "0" * 20]
)


@given(
    st.lists(
        _FRAGMENTS | st.text(alphabet="abcdefghijkAKIPSGJ0123456789_-:./@ \n", max_size=12), max_size=14
    ),
    st.sampled_from([0, content.GATED_FROM_CHARS]),
)
def test_gated_literals_find_exactly_what_one_literal_at_a_time_finds(parts: list[str], pad: int) -> None:
    """Literals sharing a first character are searched together; the hits must not change."""
    # Long texts (a whole file) go through the gates; short ones (a signature) ask each literal.
    text = "".join(parts) + " " * pad
    low = content._lowered(text)
    gated = list(content._format_hits(text, low))
    open_gates = tuple(re.compile("") for _ in content._GATES)  # every format asks for its own literal
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(content, "_GATES", open_gates)
        one_at_a_time = list(content._format_hits(text, low))
    assert gated == one_at_a_time
    for fmt, gate in zip(content.FORMATS, content._GATE_OF, strict=True):
        haystack = low if fmt.lower and low is not None else text
        if fmt.literal and fmt.literal in haystack:
            assert content._GATES[gate].search(haystack) is not None, fmt.literal


# Pieces of secrets and of code that names them: literals in both cases, keywords before and
# away from an operator, quotes, breaks, and characters whose lower case changes the length
# ("İ") or lands on ASCII (the Kelvin sign lower-cases to "k").
_CUE_PIECES = st.sampled_from(
    [f.literal for f in content.FORMATS]
    + [f.literal.upper() for f in content.FORMATS]
    + ["pass", "PASSWORD", "pwd", "secret", "Token", "credentials", "key", "KEY_BASE", "api_key"]
    + ["=", ":", ":=", "=>", " = ", '"', "'", "`", "\n", "\r", " ", "\t", "#", "export "]
    + ["hunter22", "abcdefghijklmnopqrstuvwxyz0123456789", "0" * 20, "@host", "Bearer ", "eyJ"]
    + ["\u0130", "\u212a", "to\u212aen", "x", "-", "_", "."]
    + [text for text, _secret in LEAKS if len(text) < 120]
    + [text.swapcase() for text, _secret in LEAKS if len(text) < 120]
)


# Text around one piece that opens no cue by itself, so each piece is also seen alone.
_NEUTRAL = st.text(alphabet="abcdfijlmoquvz019 ({[,]})\n", max_size=20)


@settings(max_examples=400)
@given(
    st.lists(_CUE_PIECES, max_size=16) | st.tuples(_NEUTRAL, _CUE_PIECES, _NEUTRAL).map(list),
    st.sampled_from([0, 1, content.GATED_FROM_CHARS]),
)
def test_a_short_text_without_a_cue_is_skipped_only_when_nothing_could_match(parts, pad: int) -> None:
    """The cue searches only skip work: every hit found without them is still found."""
    text = "".join(parts) + " " * pad
    assert find_secrets(text) == _every_detector(text)


def _every_detector(text: str) -> list[content.SecretHit]:
    low = content._lowered(text)
    found = [*content._env_hits(text), *content._format_hits(text, low), *content._assignment_hits(text, low)]
    return content._merged(text, found)


@pytest.mark.parametrize(
    "leak",
    [text for text, _secret in LEAKS]
    + [f"x {text}." for text, _ in LEAKS]
    + [
        "curl -H 'Bearer abcdefghijklmnop0123456789'",
        "hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "aws_credentials = 'c0ffee99beef'",
        "secret_key_base: 'b4se0f4ll'",
        "passphrase => 'open-sesame-9'",
    ],
)
def test_each_leak_alone_opens_a_cue(leak: str) -> None:
    # Alone, each format and assignment must open a cue itself (no other piece opens one for it).
    assert find_secrets(leak) == _every_detector(leak)


def test_short_texts_such_as_signatures_are_still_redacted() -> None:
    # Signatures and docstrings are short: the path that skips texts without a cue.
    assert redact("def connect(password='hunter22'):") == "def connect(password='[REDACTED]'):"
    assert "AKIA" not in redact('"""Use AKIAIOSFODNN7EXAMPLE for tests."""')
    assert redact("def f(self, key=None):") == "def f(self, key=None):"


@settings(max_examples=300)
@given(
    st.lists(st.lists(_CUE_PIECES, max_size=6).map("".join) | st.sampled_from(["", "İstanbul"]), max_size=12)
)
def test_many_texts_redacted_at_once_are_each_redacted_as_alone(texts: list[str]) -> None:
    """The indexer redacts a file's signatures and docstrings together; a text that holds a secret
    only when joined to its neighbour, or one whose lower case is longer, changes nothing."""
    assert redact_many(texts) == [redact(t) for t in texts]


def test_a_secret_split_over_two_signatures_is_not_masked_but_each_whole_one_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    texts = ["def connect(password", "='hunter22'):", "def login(token='abcdef123')", "def f(self):"]
    assert redact_many(texts) == [
        "def connect(password",
        "='hunter22'):",
        "def login(token='[REDACTED]')",
        "def f(self):",
    ]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "plainlookingvalue123")
    assert redact_many(["x plainlookingvalue123", "plain", "lookingvalue123"]) == [
        f"x {MASK}",
        "plain",
        "lookingvalue123",
    ]


def test_a_secret_inside_an_escaped_string_is_masked_and_the_rest_kept() -> None:
    """TOON and JSON quote `password="hunter2"` as `password=\\"hunter2\\"`, which `redact` alone
    does not see as an assignment; `redact_quoted` reads each escaped string back."""
    import json

    line = json.dumps({"sig": 'def f(a, password="hunter2", b="x\\\\y")'})
    masked = redact_quoted(line)
    assert "hunter2" not in masked
    assert json.loads(masked) == {"sig": f'def f(a, password="{MASK}", b="x\\\\y")'}
    assert redact_quoted('a: "x \\"y\\" z"\nb: plain') == 'a: "x \\"y\\" z"\nb: plain'
    # An unterminated string ends the scan of its line (a search from every quote was quadratic:
    # 77 s on this line); the lines after it are still read.
    long_line = '"' + 'a\\"' * 50_000
    assert (
        redact_quoted(long_line + '\n"f(password=\\"hunter2\\")"')
        == long_line + f'\n"f(password=\\"{MASK}\\")"'
    )
