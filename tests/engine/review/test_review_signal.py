"""CI findings a maintainer keeps switched on: what changed for users, and what changed for security.

Each test is a small real repository and one commit; each checks one way the rules used to be
noisy or blind (a src/ move read as 500 API breaks, an annotation sweep as signature changes,
a fix to a traversal check as nothing at all).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.review.findings import Finding, decide
from engine.semantic.diff import analyze_commit
from tests.conftest import git
from tests.engine.review.conftest import commit_and_review as _commit


def _by_rule(findings: list[Finding], rule: str) -> list[Finding]:
    return [f for f in findings if f.rule == rule]


# --------------------------------------------------------------------------- public API

LIB = (
    "def parse(text, strict=False):\n"
    '    """Parse text."""\n'
    "    return text.strip() if strict else text\n\n\n"
    "def render(value):\n"
    "    return str(value)\n"
)


def test_moving_the_package_under_src_changes_no_import_path(make_repo) -> None:
    root = make_repo({"pkg/__init__.py": "from .core import parse\n", "pkg/core.py": LIB})
    git(root, "mv", "pkg", "src")
    (root / "src").rename(root / "pkgtmp")
    (root / "src").mkdir()
    (root / "pkgtmp").rename(root / "src" / "pkg")
    findings = _commit(root, {})
    assert _by_rule(findings, "public-api") == []


def test_annotations_and_comments_are_not_signature_changes(make_repo) -> None:
    root = make_repo({"pkg/__init__.py": "", "pkg/core.py": LIB})
    typed = (
        "def parse(text: str, strict: bool = False) -> str:\n"
        "    # keep the fast path first\n"
        '    """Parse text."""\n'
        "    return text.strip() if strict else text\n\n\n"
        "def render(value: object) -> str:\n"
        "    return str(value)\n"
    )
    diff_findings = _commit(root, {"pkg/core.py": typed})
    assert diff_findings == []  # no API, no untested-change, no security: nothing behaves differently
    changes = {s.qualified_name: s for s in analyze_commit(root, "HEAD").symbols}
    assert all(s.cosmetic for s in changes.values())


def test_a_comment_just_inside_a_body_is_not_part_of_the_signature(make_repo) -> None:
    root = make_repo({"pkg/__init__.py": "", "pkg/core.py": LIB})
    _commit(root, {"pkg/core.py": LIB.replace("def render(value):\n", "def render(value):\n    # a note\n")})
    render = next(s for s in analyze_commit(root, "HEAD").symbols if s.qualified_name == "render")
    assert render.signature_after == "def render(value)"
    assert not render.signature_changed


def test_parameters_compared_by_name_kind_and_default(make_repo) -> None:
    root = make_repo({"pkg/__init__.py": "", "pkg/core.py": LIB})
    findings = _commit(
        root,
        {
            "pkg/core.py": LIB.replace(
                "def parse(text, strict=False):", "def parse(text, strict=False, *, limit=None):"
            )
            .replace("def render(value):", "def render():")
            .replace("str(value)", "''")
        },
    )
    api = _by_rule(findings, "public-api")
    assert [f.symbol for f in api] == ["render"]  # a new optional keyword breaks nobody
    assert "parameter 'value' removed" in api[0].message


def test_a_move_kept_importable_by_a_reexport_is_not_an_api_break(make_repo) -> None:
    root = make_repo({"pkg/__init__.py": "", "pkg/core.py": LIB, "pkg/text.py": "X = 1\n"})
    moved_out = LIB.split("def render")[0].rstrip() + "\n"
    findings = _commit(
        root,
        {
            "pkg/core.py": "from .text import render\n\n\n" + moved_out,
            "pkg/text.py": "X = 1\n\n\ndef render(value):\n    return str(value)\n",
        },
    )
    assert _by_rule(findings, "public-api") == []


def test_a_name_dropped_from_the_package_reexports_is_an_api_break(make_repo) -> None:
    root = make_repo({"pkg/__init__.py": "from .core import parse, render\n", "pkg/core.py": LIB})
    findings = _commit(root, {"pkg/__init__.py": "from .core import parse\n"})
    api = _by_rule(findings, "public-api")
    assert len(api) == 1 and "render" in api[0].message and "pkg" in api[0].message


def test_build_scripts_conftest_and_tests_are_not_public_api(make_repo) -> None:
    root = make_repo(
        {
            "setup.py": "def read(name):\n    return name\n",
            "conftest.py": "def app(tmp_path):\n    return tmp_path\n",
            "tests/helpers.py": "def make(a, b):\n    return a\n",
        }
    )
    findings = _commit(
        root,
        {
            "setup.py": "def read():\n    return 1\n",
            "conftest.py": "def app():\n    return 1\n",
            "tests/helpers.py": "def make(a):\n    return a\n",
        },
    )
    assert _by_rule(findings, "public-api") == []


def test_a_mass_change_is_one_finding_with_counts(make_repo) -> None:
    body = "".join(f"def api_{i}(x):\n    return x + {i}\n\n\n" for i in range(15))
    root = make_repo({"pkg/__init__.py": "", "pkg/many.py": body})
    findings = _commit(root, {"pkg/many.py": "VERSION = 2\n"})
    api = _by_rule(findings, "public-api")
    assert len(api) == 1 and api[0].count == 15 and "15 removed" in api[0].message


# --------------------------------------------------------------------------- security logic

SECURITY_CASES = {
    "path traversal": (
        "def join_under(base, name):\n    return base + '/' + name\n",
        "import os\n\n\ndef join_under(base, name):\n"
        "    if '..' in name.split('/') or os.path.isabs(name):\n        return None\n"
        "    return base + '/' + name\n",
    ),
    "auth header on redirect": (
        "def next_request(headers, location):\n    return dict(headers), location\n",
        "def next_request(headers, location):\n    new = dict(headers)\n"
        "    new.pop('Authorization', None)\n    return new, location\n",
    ),
    "cookie flags": (
        "def cookie_header(name, value):\n    return f'{name}={value}'\n",
        "def cookie_header(name, value):\n    return f'{name}={value}; HttpOnly; SameSite=Lax'\n",
    ),
    "TLS verification": (
        "def make_context(ssl):\n    return ssl.create_default_context()\n",
        "def make_context(ssl):\n    ctx = ssl.create_default_context()\n    ctx.check_hostname = False\n"
        "    return ctx\n",
    ),
    "signature check": (
        "def same_digest(a, b):\n    return a == b\n",
        "import hmac\n\n\ndef same_digest(a, b):\n    return hmac.compare_digest(a, b)\n",
    ),
}


@pytest.mark.parametrize("case", sorted(SECURITY_CASES))
def test_changed_security_logic_is_a_security_finding(make_repo, case: str) -> None:
    before, after = SECURITY_CASES[case]
    root = make_repo({"pkg/__init__.py": "", "pkg/net.py": before})
    findings = _commit(root, {"pkg/net.py": after})
    security = _by_rule(findings, "security-logic")
    assert len(security) == 1, findings
    assert security[0].type == "security" and security[0].file == "pkg/net.py"
    assert "security-sensitive logic changed" in security[0].message


def test_ordinary_logic_and_test_code_raise_no_security_finding(make_repo) -> None:
    root = make_repo(
        {
            "pkg/__init__.py": "",
            "pkg/maths.py": "def total(items):\n    return sum(items)\n",
            "tests/test_auth.py": "def test_login():\n    assert 'Authorization'\n",
        }
    )
    findings = _commit(
        root,
        {
            "pkg/maths.py": "def total(items):\n    return sum(i for i in items if i)\n",
            "tests/test_auth.py": "def test_login():\n    assert 'Authorization: Basic x'\n",
        },
    )
    assert [f for f in findings if f.type == "security"] == []


def test_the_projects_own_helpers_are_not_network_use(make_repo) -> None:
    """A package named like an HTTP client (``httpx``) calling its own URL parser."""
    root = make_repo(
        {
            "src/httpx/__init__.py": "",
            "src/httpx/_urls.py": "def parse_url(url):\n    return url.split('/')\n",
            "src/httpx/_client.py": "def build(url):\n    return url\n",
        }
    )
    findings = _commit(
        root,
        {
            "src/httpx/_client.py": "from httpx._urls import parse_url\n\n\n"
            "def build(url):\n    return parse_url(url)\n"
        },
    )
    assert _by_rule(findings, "new-network") == []


# --------------------------------------------------------------------------- tests


def test_a_changed_test_anywhere_that_refers_to_the_module_covers_it(make_repo) -> None:
    root = make_repo(
        {
            "src/pkg/__init__.py": "",
            "src/pkg/core.py": "def area(w, h):\n    return w * h\n",
            "testing/suite/test_geometry.py": "from pkg import core\n\n\ndef test_area():\n    assert core.area(1, 1)\n",
        }
    )
    findings = _commit(
        root,
        {
            "src/pkg/core.py": "def area(w, h):\n    return abs(w * h)\n",
            "testing/suite/test_geometry.py": "from pkg import core\n\n\n"
            "def test_area():\n    assert core.area(-1, 1) == 1\n",
        },
    )
    assert _by_rule(findings, "untested-change") == []


def test_tests_removed_with_the_code_they_test_are_not_a_finding(make_repo) -> None:
    root = make_repo(
        {
            "pkg/__init__.py": "",
            "pkg/legacy.py": "def old_parse(x):\n    return x\n\n\ndef keep(x):\n    return x\n",
            "tests/test_legacy.py": "from pkg.legacy import old_parse, keep\n\n\n"
            "def test_old_parse():\n    assert old_parse(1) == 1\n\n\n"
            "def test_keep():\n    assert keep(1) == 1\n",
        }
    )
    findings = _commit(
        root,
        {
            "pkg/legacy.py": "def keep(x):\n    return x\n",
            "tests/test_legacy.py": "from pkg.legacy import keep\n\n\ndef test_keep():\n    assert keep(1) == 1\n",
        },
    )
    assert _by_rule(findings, "tests-removed") == []
    # Deleting a test of code that stays is still reported.
    findings = _commit(root, {"tests/test_legacy.py": "from pkg.legacy import keep\n"})
    assert [f.symbol for f in _by_rule(findings, "tests-removed")] == ["test_keep"]


def test_size_rules_fire_only_when_the_change_made_the_function_long_or_deep(make_repo) -> None:
    long_body = "".join(f"    v{i} = {i}\n" for i in range(95))
    deep = (
        "def walk(x):\n    if x:\n        for a in x:\n            while a:\n                if a:\n"
        "                    for b in a:\n                        return b\n    return None\n"
    )
    root = make_repo(
        {"pkg/__init__.py": "", "pkg/big.py": f"def long():\n{long_body}    return 0\n\n\n{deep}"}
    )
    findings = _commit(
        root,
        {
            "pkg/big.py": f"def long():\n{long_body}    return 1\n\n\n{deep.replace('return None', 'return 0')}"
        },
    )
    assert _by_rule(findings, "large-function") == []
    assert _by_rule(findings, "deep-nesting") == []


# --------------------------------------------------------------------------- secrets

DOC_KEY = "192b9bdd22ab9ed4d12e236c78afcb9a393ec15f71bbf5dc987d54727823bcbf"  # semfora: allow-secret


def test_examples_in_docs_and_test_certificates_are_reported_not_blocking(make_repo) -> None:
    root = make_repo({"README.md": "# app\n"})
    pem = "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEow\n-----END RSA " + "PRIVATE KEY-----\n"
    findings = _commit(
        root,
        {
            "docs/config.rst": f"Configure it::\n\n    SECRET_KEY = '{DOC_KEY}'\n",
            "tests/certs/server.key": pem,
            "tests/test_app.py": f'SECRET_KEY = "{DOC_KEY[:32]}"\n',
        },
    )
    secrets = [f for f in findings if f.type == "secrets"]
    assert {f.file for f in secrets} == {"docs/config.rst", "tests/certs/server.key", "tests/test_app.py"}
    # Samples are remarks: listed, never blocking, never a finding (not even at --fail-on low).
    assert not any(f.blocking for f in secrets)
    assert all(f.severity == "info" for f in secrets)
    assert decide(findings, "low") == "approved"


def test_a_provider_key_in_a_fixture_still_blocks(make_repo) -> None:
    root = make_repo({"README.md": "# app\n"})
    key = "ghp_" + "Zq8vR2xLm0PwT5nY7bKc3dFg9hJ1sA4eU6iO"
    findings = _commit(root, {"tests/fixtures/config.json": f'{{"token": "{key}"}}\n'})
    assert decide(findings, "high") == "blocked"
    assert all(key not in f.message for f in findings)


def test_docs_risk_md_carries_the_security_catalogue() -> None:
    from engine.review.concerns import render_risk_page

    doc = Path(__file__).resolve().parents[3] / "docs" / "risk.md"
    assert doc.read_text(encoding="utf-8") == render_risk_page(), (
        "regenerate docs/risk.md with engine.review.concerns.render_risk_page()"
    )


def test_renaming_locals_in_security_code_is_not_a_security_change(make_repo) -> None:
    before = (
        "def strip_auth(headers):\n    h = dict(headers)\n    h.pop('Authorization', None)\n    return h\n"
    )
    root = make_repo({"pkg/__init__.py": "", "pkg/net.py": before})
    findings = _commit(
        root,
        {
            "pkg/net.py": before.replace("h = ", "copied = ")
            .replace("h.pop", "copied.pop")
            .replace("return h", "return copied")
        },
    )
    assert [f for f in findings if f.type == "security"] == []
