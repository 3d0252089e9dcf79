"""One deny-list for secret file names, caught in every spelling a file system or a reader allows."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.policy.names import DEFAULT_DENY, fold_name, is_secret_name

# The names the issue found missing, and the ones the three old lists each had.
SECRETS = [
    ".env",
    "prod.env",
    ".envrc",
    ".env_local",
    ".env-staging",
    ".env.production",
    ".pgpass",
    ".htpasswd",
    "release.jks",
    "android/app.keystore",
    "kubeconfig",
    "ops/prod.kubeconfig",
    "infra/main.tfvars",
    "infra/terraform.tfstate",
    "infra/terraform.tfstate.backup",
    "putty.ppk",
    "AuthKey_ABC123.p8",
    ".docker/config.json",
    "home/.docker/config.json",
    "id_rsa",
    "id_ed25519",
    "keys/id_ecdsa.pub",
    "server.pem",
    "tls.key",
    "cert.p12",
    "cert.pfx",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    "credentials.json",
    "aws/credentials",
    "config/secrets.yaml",
    "app/secrets.py",
    "secrets/anything.txt",
]
# Trailing dots and spaces, case, width and invisible characters: the same file to a reader.
VARIANTS = [
    ".env.",
    ".env..",
    ".env ",
    ".ENV",
    ".Env",
    ".\uff45\uff4e\uff56",  # fullwidth
    ".e\u00adnv",  # soft hyphen
    ".env\u2060",  # word joiner
    ".env\ufe0f",  # variation selector
    ".env\U000e0041\U000e007f",  # tag characters
    "\u200b.env",  # zero-width space
    "ID_RSA",
    "Server.PEM ",
    "KUBECONFIG",
    "x.TFSTATE",
]
NOT_SECRET = [
    "src/app.py",
    "environment.py",
    "docs/env.md",
    "keyboard.py",
    "monkey.py",
    "id_card.py",
    "tokenizer.py",
    "docker-compose.yml",
    ".env.example",
    ".env.sample",
    "config/settings.template",
    "README.md",
]


@pytest.mark.parametrize("name", SECRETS + VARIANTS)
def test_secret_names_and_their_variants_are_denied(name: str) -> None:
    assert is_secret_name(name), name


@pytest.mark.parametrize("name", NOT_SECRET)
def test_ordinary_names_are_not(name: str) -> None:
    assert not is_secret_name(name), name


def test_a_template_inside_a_secret_directory_is_still_secret() -> None:
    assert is_secret_name("secrets/.env.example")


def test_an_empty_deny_list_denies_nothing() -> None:
    assert not is_secret_name(".env", [])


INVISIBLE = st.sampled_from(
    ["\u00ad", "\u2060", "\ufe0f", "\u200b", "\u200d", "\ufeff", "\U000e0041", "\u034f"]
)


@given(
    name=st.sampled_from(SECRETS),
    inserts=st.lists(st.tuples(st.integers(min_value=0, max_value=40), INVISIBLE), max_size=4),
    upper=st.booleans(),
    dots=st.sampled_from(["", ".", "..", " ", ". "]),
)
def test_no_spelling_of_a_secret_name_escapes_the_list(
    name: str, inserts: list[tuple[int, str]], upper: bool, dots: str
) -> None:
    spelled = name.upper() if upper else name
    for pos, ch in inserts:
        cut = min(pos, len(spelled))
        spelled = spelled[:cut] + ch + spelled[cut:]
    spelled += dots
    assert is_secret_name(spelled), repr(spelled)


@given(st.text(max_size=40))
def test_folding_is_idempotent_and_total(name: str) -> None:
    once = fold_name(name)
    assert fold_name(once) == once


def test_every_default_pattern_matches_something() -> None:
    for pattern in DEFAULT_DENY:
        sample = pattern.replace("*", "x")
        assert is_secret_name(sample), pattern


_COMPONENT = st.one_of(
    st.sampled_from(["src", "tests", ".env", "id_rsa", "secrets.py", "config.json", ".docker", "x.pem"]),
    st.text(alphabet="abcXYZ._-*?[]\u00ad", min_size=1, max_size=8),
)


@given(
    path=st.lists(_COMPONENT, min_size=1, max_size=5).map("/".join),
    patterns=st.one_of(
        st.none(),
        st.lists(
            st.one_of(
                st.sampled_from(list(DEFAULT_DENY)),
                st.text(alphabet="abc.*?[]/-", min_size=1, max_size=8),
            ),
            max_size=6,
        ),
    ),
)
def test_the_fast_check_says_what_the_patterns_say(path: str, patterns: list[str] | None) -> None:
    """Discovery asks every file of a tree through the one-expression check: it must agree with
    matching each pattern on its own (``secret_patterns_matching``), for any path and deny-list."""
    from engine.policy.names import secret_patterns_matching

    assert is_secret_name(path, patterns) == bool(secret_patterns_matching(path, patterns))


@given(
    st.lists(
        st.sampled_from(["src", "", ".", "..", ".env", "/", "//", "\\", "id rsa", "\u00c9", "x.pem"]),
        max_size=8,
    ).map("".join)
)
def test_a_path_is_cut_into_the_components_posix_sees(raw: str) -> None:
    """Deny-list checks see the components ``PurePosixPath`` would (empty and ``.`` parts dropped,
    ``..`` kept, backslashes as separators), also for the odd paths a user or a tool may pass."""
    from pathlib import PurePosixPath

    from engine.policy.names import _parts

    posix = PurePosixPath(raw.replace("\\", "/")).parts
    assert _parts(raw) == [fold_name(p) for p in posix if p not in ("/", "", ".")]
