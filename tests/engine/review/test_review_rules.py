"""The deterministic CI rules, on real commits: what they flag and what they leave alone."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from engine.review.findings import Finding, decide, risk_score
from engine.review.secrets import scan_line
from tests.engine.review.conftest import commit_and_review as _commit_change


def _rules(findings: list[Finding]) -> set[str]:
    return {f.rule or "" for f in findings}


def test_new_subprocess_is_one_high_finding_with_the_risk_it_raised(make_repo) -> None:
    root = make_repo(
        {"tool.py": "def run(cmd):\n    return cmd\n", "tests/test_tool.py": "def test_run():\n    pass\n"}
    )
    findings = _commit_change(
        root,
        {
            "tool.py": "import subprocess\n\n\ndef run(cmd):\n    return subprocess.run(cmd, shell=True)\n",
            "tests/test_tool.py": "def test_run():\n    assert True\n",
        },
    )
    kinds = {(f.rule, f.severity) for f in findings}
    assert ("new-subprocess", "high") in kinds
    sub = next(f for f in findings if f.rule == "new-subprocess")
    assert (sub.file, sub.line, sub.symbol) == ("tool.py", 5, "run")
    # One finding for the one new call: the risk it raised and the concern it touches are folded in.
    assert [f.rule for f in findings if f.symbol == "run"] == ["new-subprocess"]
    assert set(sub.also) == {"risk-raised", "security-logic"}
    assert "risk of run rose from low to high" in sub.message
    assert "untested-change" not in _rules(findings)  # its test changed alongside


def test_public_api_change_and_removed_tests(make_repo) -> None:
    root = make_repo(
        {
            "lib.py": "def parse(text):\n    return text\n\n\ndef _private(x):\n    return x\n",
            "tests/test_lib.py": "def test_parse():\n    assert True\n\n\ndef test_other():\n    assert True\n",
        }
    )
    findings = _commit_change(
        root,
        {
            "lib.py": "def parse(text, strict):\n    return text\n\n\ndef _private(x, y):\n    return x\n",
            "tests/test_lib.py": "def test_parse():\n    assert True\n",
        },
    )
    api = [f for f in findings if f.type == "api"]
    assert len(api) == 1 and api[0].symbol == "parse"  # the private helper is not public API
    assert any(f.rule == "tests-removed" and f.symbol == "test_other" for f in findings)


def test_removed_tests_count_tests_not_fixtures_or_definitions_inside_them(make_repo) -> None:
    """Flask a31e6b73 read as '5 tests removed' (3 tests, 2 views nested in them), and a deleted
    conftest fixture as a removed test."""
    test_file = (
        "def test_keep():\n    assert True\n\n\n"
        "def test_idna():\n    app = object()\n\n    def index():\n        return 'x'\n\n"
        "    class Unacceptable(Exception):\n        pass\n\n    assert index() == 'x'\n"
    )
    conftest = "import pytest\n\n\n@pytest.fixture\ndef ca_cert():\n    return 'pem'\n"
    root = make_repo({"tests/test_app.py": test_file, "tests/conftest.py": conftest, "app.py": "X = 1\n"})
    findings = _commit_change(
        root,
        {
            "tests/test_app.py": "def test_keep():\n    assert True\n",
            "tests/conftest.py": "import pytest\n",
        },
    )
    removed = [f for f in findings if f.rule == "tests-removed"]
    assert [(f.file, f.count, f.symbol) for f in removed] == [("tests/test_app.py", 1, "test_idna")]
    assert removed[0].message == "1 test removed without replacement: test_idna"


def test_code_without_tests_nearby_is_a_low_finding(make_repo) -> None:
    root = make_repo(
        {
            "src/auth.py": "def check_password(a, b):\n    return a == b\n",
            "tests/test_other.py": "def test_other():\n    assert True\n",
        }
    )
    findings = _commit_change(
        root,
        {"src/auth.py": "import hmac\n\n\ndef check_password(a, b):\n    return hmac.compare_digest(a, b)\n"},
    )
    untested = [f for f in findings if f.rule == "untested-change"]
    assert untested and untested[0].severity == "low" and untested[0].file == "src/auth.py"
    assert decide(findings, "high") == "approved"
    assert decide(findings, "low") == "changes_requested"


def test_large_and_deeply_nested_new_functions(make_repo) -> None:
    root = make_repo({"big.py": "X = 1\n"})
    long_body = "".join(f"    v{i} = {i}\n" for i in range(90))
    nested = (
        "def deep(x):\n"
        "    if x:\n        for a in x:\n            while a:\n                if a:\n"
        "                    for b in a:\n                        if b:\n                            return b\n"
        "    return None\n"
    )
    findings = _commit_change(
        root, {"big.py": f"X = 1\n\n\ndef long():\n{long_body}    return 0\n\n\n{nested}"}
    )
    rules = {(f.rule, f.symbol, f.severity) for f in findings}
    # Size is the project's taste: a remark, never a finding that could gate.
    assert ("large-function", "long", "info") in rules
    assert ("deep-nesting", "deep", "info") in rules
    assert decide(findings, "low") == "approved"


def test_secret_in_diff_blocks_and_is_masked(make_repo) -> None:
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    root = make_repo({"settings.py": "DEBUG = True\n"})
    findings = _commit_change(
        root, {"settings.py": f'DEBUG = True\nAWS_KEY = "{key}"\n', ".env": "TOKEN=abc\n"}
    )
    secrets = [f for f in findings if f.type == "secrets"]
    assert {f.file for f in secrets} == {"settings.py", ".env"}
    assert all(key not in f.message for f in secrets)
    in_line = next(f for f in secrets if f.file == "settings.py")
    assert in_line.line == 2 and in_line.severity == "high"
    assert decide(findings, "high") == "blocked"
    assert risk_score(findings) == "high"


def test_placeholders_are_not_secrets() -> None:
    assert scan_line('password = "changeme"') == []
    assert scan_line("api_key = os.environ['API_KEY']") == []
    assert scan_line('token: "${GITHUB_TOKEN}"') == []
    assert scan_line('password = "q8Zr!x2LmP0v"')[0][0] == "secret assigned to a literal"


@given(
    st.lists(st.sampled_from(["low", "medium", "high"]), max_size=6),
    st.sampled_from(["low", "medium", "high"]),
)
def test_gate_invariants(severities: list[str], gate: str) -> None:
    findings = [Finding(s, "risk", "m") for s in severities]  # type: ignore[arg-type]
    status = decide(findings, gate)
    order = {"low": 0, "medium": 1, "high": 2}
    reaches = any(order[s] >= order[gate] for s in severities)
    assert status == ("changes_requested" if reaches else "approved")
    assert risk_score(findings) == (max(severities, key=order.__getitem__) if severities else "low")


def test_workflow_permissions_are_not_secrets(make_repo) -> None:
    """``id-token: write`` (trusted publishing) is an access level, not a token: it must not
    block the merge of a release workflow (it did on Flask's publish.yaml)."""
    workflow = (
        "jobs:\n  publish:\n    permissions:\n      id-token: write\n      pull-requests: read\n"
        "    env:\n      GH_TOKEN: ${{ github.token }}\n"
    )
    root = make_repo({"README.md": "x\n"})
    findings = _commit_change(root, {".github/workflows/publish.yaml": workflow})
    assert [f for f in findings if f.type == "secrets"] == []
    assert decide(findings, "high") == "approved"
    assert scan_line("      api-token: wr1te-9xQ")  # a value that is not an access level still is one


def test_fixture_lines_marked_as_fakes_are_not_reported() -> None:
    key = "sk-ant-api03-" + "Z" * 30
    assert scan_line(f'KEY = "{key}"')
    assert scan_line(f'KEY = "{key}"  # pragma: allowlist secret') == []
    assert scan_line(f'KEY = "{key}"  # semfora: allow-secret') == []


def test_public_api_changed_in_bulk_in_one_file_says_which_file(make_repo) -> None:
    """Flask 6a649690 changed 13 signatures in app.py: the collapsed finding had no file, so the
    text report showed '-' and a reader had nowhere to go."""
    names = [f"handler_{i}" for i in range(12)]
    before = "".join(f"def {n}(request):\n    return request\n\n\n" for n in names)
    after = "".join(f"def {n}(ctx, request):\n    return request\n\n\n" for n in names)
    root = make_repo({"lib/__init__.py": "", "lib/app.py": before})
    findings = _commit_change(root, {"lib/app.py": after})
    bulk = [f for f in findings if f.rule == "public-api"]
    assert len(bulk) == 1 and bulk[0].count == 12
    assert bulk[0].file == "lib/app.py" and "across 1 file" in bulk[0].message


def test_npmrc_settings_do_not_block_but_a_token_in_it_does(make_repo) -> None:
    """express 2eae22b1 added 'ignore-scripts=true' to its committed .npmrc: blocked as 'a
    secret-bearing file is added' (it was neither added nor holding a secret)."""
    root = make_repo({".npmrc": "package-lock=false\n", "index.js": "module.exports = 1\n"})
    findings = _commit_change(root, {".npmrc": "package-lock=false\nignore-scripts=true\nallow-git=none\n"})
    assert [f for f in findings if f.type == "secrets"] == []
    assert decide(findings, "high") == "approved"
    token = "//registry.npmjs.org/:_authToken=npm_" + "Q7w9ZrT2kLmN4xB8vC1dF6gH3jK5pS0aE2yU"
    findings = _commit_change(root, {".npmrc": f"package-lock=false\n{token}\n"})
    secrets = [f for f in findings if f.type == "secrets" and f.blocking]
    assert secrets and all(f.file == ".npmrc" and f.line == 2 for f in secrets)
    assert all("npm_Q7w9" not in f.message for f in secrets)
    assert decide(findings, "high") == "blocked"
    # Any other credential file is a leak by its name; the message says whether it was added.
    findings = _commit_change(root, {".pgpass": "localhost:5432:db:me:pw\n"})
    (leak,) = [f for f in findings if f.rule == "secret-file"]
    assert leak.message == "a secret-bearing file is added to the repository: .pgpass"


def test_a_sample_credential_in_a_docstring_does_not_block(make_repo) -> None:
    """httpx d07c4b44 (URL moved to a new module) was blocked by its class docstring's example,
    ``httpx.URL("https://jo%40email.com:a%20secret@example.com")``; a real key in a comment blocks."""
    code = (
        "class URL:\n"
        '    """\n'
        '    url = URL("https://jo%40email.com:a%20secret@example.com:1234/path")\n'
        '    url = URL("https://example.com").copy_with(username="jo", password="a secret")\n'
        '    """\n\n'
        "    def __init__(self, raw):\n        self.raw = raw\n"
    )
    root = make_repo({"pkg/__init__.py": "", "tests/test_x.py": "def test_x():\n    pass\n"})
    findings = _commit_change(root, {"pkg/urls.py": code})
    samples = [f for f in findings if f.type == "secrets"]
    assert samples and all(f.severity == "info" and not f.blocking for f in samples)
    assert all("in a docstring or comment" in f.message for f in samples)
    assert decide(findings, "high") == "approved"
    key = "ghp_" + "Zq8rT5mN2xC7vB4kL9pW3sD6fH1jG0aY5eRt"
    findings = _commit_change(root, {"pkg/deploy.py": f"# token for the bot: {key}\nBOT = None\n"})
    assert decide(findings, "high") == "blocked"


def test_risk_raised_names_only_the_calls_the_change_added(make_repo) -> None:
    """A function that already fetched a URL and now also posts and writes a file: the finding
    listed ``requests.get`` as if the commit had added it."""
    before = "import requests\n\n\ndef sync(url, path):\n    resp = requests.get(url)\n    return resp.text\n"
    root = make_repo({"sync.py": before})
    after = before.replace(
        "    return resp.text\n",
        "    requests.post(url, data=resp.text)\n"
        "    with open(path, 'w') as fh:\n        fh.write(resp.text)\n    return resp.text\n",
    )
    findings = _commit_change(root, {"sync.py": after})
    raised = [f for f in findings if "risk-raised" in (f.rule, *f.also)]
    assert len(raised) == 1 and raised[0].severity == "high"
    assert "requests.post" in raised[0].message and "open(mode='w')" in raised[0].message
    assert "requests.get" not in raised[0].message


def test_risk_raised_is_silent_when_the_change_adds_no_effect(make_repo) -> None:
    """The function already fetched and posted; the commit swapped the two calls and added
    branches (risk medium -> high). It added no effect, so there is nothing to raise."""
    calls = "    a = requests.get(url)\n    b = requests.post(url)\n"
    branches = "".join(f"    if url == {i}:\n        url = str(url)\n" for i in range(21))
    before = "import requests\n\n\ndef sync(url):\n" + calls + "    return a, b\n"
    root = make_repo({"sync.py": before})
    swapped = "    b = requests.post(url)\n    a = requests.get(url)\n"
    after = "import requests\n\n\ndef sync(url):\n" + branches + swapped + "    return a, b\n"
    findings = _commit_change(root, {"sync.py": after})
    assert "risk-raised" not in _rules(findings)


def test_a_removed_function_its_own_module_still_calls_is_a_high_finding(make_repo) -> None:
    """``_norm`` deleted while ``clean`` beside it still calls it: a NameError on the first call,
    and the review approved it without a word."""
    before = (
        "def _norm(text):\n    return text.strip().lower()\n\n\n"
        "def clean(items):\n    return [_norm(i) for i in items]\n"
    )
    root = make_repo({"pkg/core.py": before, "tests/test_core.py": "def test_x():\n    pass\n"})
    findings = _commit_change(
        root, {"pkg/core.py": "def clean(items):\n    return [_norm(i) for i in items]\n"}
    )
    dangling = [f for f in findings if f.rule == "removed-still-called"]
    assert len(dangling) == 1
    f = dangling[0]
    assert (f.severity, f.file, f.symbol) == ("high", "pkg/core.py", "_norm")
    assert "pkg/core.py:2 (clean)" in f.message


def test_a_removed_function_replaced_by_an_import_is_not_dangling(make_repo) -> None:
    before = (
        "def _norm(text):\n    return text.strip().lower()\n\n\n"
        "def clean(items):\n    return [_norm(i) for i in items]\n"
    )
    root = make_repo({"pkg/core.py": before, "pkg/text.py": "X = 1\n"})
    findings = _commit_change(
        root,
        {
            "pkg/text.py": "def _norm(text):\n    value = text.strip()\n    return value.casefold()\n",
            "pkg/core.py": "from pkg.text import _norm\n\n\ndef clean(items):\n    return [_norm(i) for i in items]\n",
        },
    )
    assert "removed-still-called" not in _rules(findings)


def test_public_api_finding_names_the_call_sites_to_check(make_repo) -> None:
    """'2 call sites to check' left the reader to find them; now it says where."""
    root = make_repo(
        {
            "pkg/__init__.py": "",
            "pkg/core.py": "def render(items):\n    return ', '.join(items)\n",
            "pkg/cli.py": "from pkg.core import render\n\n\ndef main(argv):\n    return render(argv)\n",
        }
    )
    findings = _commit_change(root, {"pkg/core.py": "def render(items, sep):\n    return sep.join(items)\n"})
    api = next(f for f in findings if f.rule == "public-api")
    assert api.message.endswith("(1 call site to check: pkg/cli.py:5)")


def test_a_removed_function_another_module_still_imports_is_a_high_finding(make_repo) -> None:
    """``render`` deleted from pkg/core.py while the package's __init__ (relative, parenthesised)
    and the CLI still import it: the package no longer imports at all, and the review approved."""
    root = make_repo(
        {
            "pkg/__init__.py": "from .core import (\n    parse,\n    render,\n)\n",
            "pkg/core.py": "def parse(t):\n    return t\n\n\ndef render(items):\n    return ''.join(items)\n",
            "pkg/cli.py": "from pkg.core import render\n\n\ndef main(argv):\n    return render(argv)\n",
        }
    )
    findings = _commit_change(root, {"pkg/core.py": "def parse(t):\n    return t\n"})
    dangling = [f for f in findings if f.rule == "removed-still-called"]
    assert len(dangling) == 1 and dangling[0].severity == "high"
    assert "pkg/__init__.py:1, pkg/cli.py:1 still import it" in dangling[0].message
    assert (dangling[0].file, dangling[0].line) == ("pkg/core.py", None)
    # The public-api finding on the same removal is folded into it: one finding a symbol.
    assert dangling[0].also == ("public-api",) and "public-api" not in _rules(findings)


def test_a_stub_removed_beside_its_module_breaks_no_import(make_repo) -> None:
    """werkzeug 0294d88b deleted its .pyi stubs: the modules still define every name imported."""
    root = make_repo(
        {
            "pkg/__init__.py": "from .core import Headers\n",
            "pkg/core.py": "class Headers:\n    pass\n",
            "pkg/core.pyi": "class Headers: ...\n",
        }
    )
    findings = _commit_change(root, {"pkg/core.pyi": None})
    assert "removed-still-called" not in _rules(findings)


def test_a_symlink_out_of_the_repository_is_a_finding_and_a_mode_change_a_remark(make_repo) -> None:
    """`ln -s /etc/passwd pkg/data.txt` and `chmod +x pkg/core.py` were reviewed as '1 file,
    0 symbol changes' and nothing else."""
    import os

    root = make_repo({"pkg/core.py": "X = 1\n", "pkg/ok.txt": "fine\n"})
    os.symlink("/etc/passwd", root / "pkg" / "data.txt")
    os.symlink("../pkg/ok.txt", root / "pkg" / "inside.txt")
    os.symlink("../../home/secret", root / "pkg" / "up.txt")
    (root / "pkg" / "core.py").chmod(0o755)
    findings = _commit_change(root, {})
    out = {(f.rule, f.file, f.severity) for f in findings}
    assert ("symlink-outside", "pkg/data.txt", "medium") in out
    assert ("symlink-outside", "pkg/up.txt", "medium") in out
    assert not any(f.file == "pkg/inside.txt" for f in findings)
    mode = next(f for f in findings if f.rule == "file-mode")
    assert mode.severity == "info" and mode.message == "pkg/core.py became executable (mode 100644 -> 100755)"
    link = next(f for f in findings if f.file == "pkg/data.txt")
    assert "symlink to /etc/passwd, outside the repository" in link.message


def test_a_risk_rise_folds_into_the_security_finding_it_comes_with(make_repo) -> None:
    """httpx create_ssl_context: 'risk ... rose from medium to high: os.environ.get' led, and
    the TLS verification change it came with read as an afterthought."""
    before = (
        "import ssl\n\n\ndef make_context(verify):\n    ctx = ssl.create_default_context()\n    return ctx\n"
    )
    root = make_repo({"tls.py": before})
    after = before.replace(
        "    return ctx\n",
        "    if not verify:\n        ctx.check_hostname = False\n        ctx.verify_mode = ssl.CERT_NONE\n"
        "    import requests\n    requests.get(verify)\n    return ctx\n",
    )
    findings = [f for f in _commit_change(root, {"tls.py": after}) if f.symbol == "make_context"]
    assert len(findings) == 1
    assert findings[0].message.startswith("security-sensitive logic changed in make_context")
    assert "risk-raised" in findings[0].also and findings[0].severity == "high"


def test_a_moved_public_function_names_the_import_path_that_broke(make_repo) -> None:
    """'public function main no longer imports from its old path' left the reader to work out
    which path: `from pkg.command import main` is what breaks."""
    body = "def main(argv):\n    return len(argv)\n"
    root = make_repo({"pkg/__init__.py": "", "pkg/command.py": body})
    findings = _commit_change(root, {"pkg/command.py": None, "pkg/cmd.py": body})
    api = next(f for f in findings if f.rule == "public-api")
    assert api.message == (
        "public function pkg.command.main no longer imports from its old path (it moved to pkg/cmd.py)"
    )


def test_sql_built_by_concatenation_is_a_high_finding(make_repo) -> None:
    """A parameterised query turned into string concatenation was a medium 'security-sensitive
    logic changed' with three overlapping fragments as evidence, and the gate approved it."""
    before = (
        "import sqlite3\n\n\ndef lookup(db, name):\n    conn = sqlite3.connect(db)\n"
        '    return conn.execute("SELECT * FROM users WHERE name = ?", (name,)).fetchall()\n'
    )
    root = make_repo({"app/users.py": before, "tests/test_users.py": "def test_x():\n    pass\n"})
    after = before.replace(
        '"SELECT * FROM users WHERE name = ?", (name,)', '"SELECT * FROM users WHERE name = \'" + name + "\'"'
    )
    findings = [f for f in _commit_change(root, {"app/users.py": after}) if f.symbol == "lookup"]
    assert len(findings) == 1
    f = findings[0]
    assert (f.rule, f.severity, f.file, f.line) == ("sql-from-strings", "high", "app/users.py", 6)
    assert f.message.startswith("SQL built from strings in lookup: `return conn.execute(")
    assert "query parameters" in f.message and "security-logic" in f.also
    # Editing another line of a function that already built its SQL so is not news.
    again = after.replace("conn = sqlite3.connect(db)", "conn = sqlite3.connect(db, timeout=5)")
    assert "sql-from-strings" not in _rules(_commit_change(root, {"app/users.py": again}))


def test_security_evidence_shows_one_piece_of_code_once(make_repo) -> None:
    """'`execute("SELECT * FROM users WHERE name `, `SELECT * FROM users WHERE name = '" + na`,
    `WHERE name = '" + n`': three cuts of one line."""
    before = "def lookup(conn, name):\n    return conn.execute('SELECT 1', ())\n"
    root = make_repo({"app/users.py": before})
    after = 'def lookup(conn, name):\n    return conn.execute("SELECT * FROM users WHERE name = \'" + name + "\'")\n'
    f = next(
        f for f in _commit_change(root, {"app/users.py": after}) if "security-logic" in (f.rule, *f.also)
    )
    logic = f.message.split("; also ")[-1] if f.rule != "security-logic" else f.message
    assert logic.count("FROM users") == 1, logic


def test_a_parameter_annotated_secret_and_a_test_key_in_a_package_do_not_block(make_repo) -> None:
    """tornado v5.1.0..v6.0.0 was blocked: `secret: _CookieSecretTypes,` (a parameter's type) read
    as a secret assigned to a literal, and tornado/test/test.key as a secret file in the code."""
    root = make_repo({"pkg/web.py": "def sign(secret, name):\n    return name\n", "pkg/test/__init__.py": ""})
    findings = _commit_change(
        root,
        {
            "pkg/web.py": "def sign(\n    secret: _CookieSecretTypes,\n    name: str,\n) -> str:\n    return name\n",
            "pkg/test/test.key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSj\n"
            "-----END PRIVATE KEY-----\n",
        },
    )
    assert decide(findings, "high") != "blocked", [f.message for f in findings if f.blocking]
    assert any(f.rule == "secret-in-fixture" and f.file == "pkg/test/test.key" for f in findings)
    # A quoted literal in code, and an unquoted value in a YAML file, still block.
    findings = _commit_change(
        root,
        {
            "pkg/settings.py": 'API_SECRET = "f8Kq2LmZr7XwPb3N"\n',
            "deploy.yaml": "secret: f8Kq2LmZr7XwPb3N\n",
        },
    )
    assert {f.file for f in findings if f.blocking} == {"pkg/settings.py", "deploy.yaml"}


def test_a_dynamic_import_is_no_new_subprocess(make_repo) -> None:
    """pip's vendored packaging bump: 'new subprocess use in _get_manylinux_module: __import__'
    (high); a lazy import runs no command."""
    root = make_repo({"pkg/plat.py": "def load(name):\n    return name\n"})
    findings = _commit_change(
        root,
        {
            "pkg/plat.py": "import importlib\n\n\ndef load(name):\n    importlib.import_module(name)\n    return __import__(name)\n"
        },
    )
    assert not [f for f in findings if f.rule and f.rule.startswith("new-")]
    # The risk it raised is named for what it is: an import, not a subprocess (and not high).
    risk = [f for f in findings if f.rule == "risk-raised"]
    assert [f.message for f in risk] == [
        "risk of load rose from low to medium: dynamic-import: importlib.import_module, __import__"
    ]
    assert all(f.is_remark for f in risk) and "subprocess" not in risk[0].message


def test_a_ca_bundle_update_does_not_block_but_a_private_key_does(make_repo) -> None:
    """pip 8c903dfc (certifi's cacert.pem updated) was blocked as 'a secret-bearing file'."""
    cert = "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBa\n-----END CERTIFICATE-----\n"
    root = make_repo({"pkg/cacert.pem": cert})
    findings = _commit_change(root, {"pkg/cacert.pem": cert + "# Issuer: CN=New Root\n" + cert})
    assert not [f for f in findings if f.type == "secrets"]
    key = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSj\n-----END PRIVATE KEY-----\n"
    findings = _commit_change(root, {"pkg/server.pem": cert + key})
    assert [(f.rule, f.blocking) for f in findings if f.type == "secrets"] == [("secret-file", True)]


def test_a_ca_bundle_that_only_loses_certificates_does_not_block(make_repo) -> None:
    """pip f761f27d (certifi drops a root CA: cacert.pem +0 -29) was blocked as 'a secret-bearing
    file is changed in the repository'; taking lines out of a key file exposes nothing new."""
    cert = "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBa\n-----END CERTIFICATE-----\n"
    root = make_repo({"pkg/cacert.pem": "# Issuer: CN=Old Root\n" + cert + cert, "deploy/.env": "A=1\n"})
    findings = _commit_change(root, {"pkg/cacert.pem": cert})
    assert not [f for f in findings if f.type == "secrets"], [f.message for f in findings]
    findings = _commit_change(root, {"deploy/.env": "A=1\nAPI_TOKEN=f8Kq2LmZr7XwPb3N\n"})
    assert [(f.file, f.blocking) for f in findings if f.type == "secrets"] == [("deploy/.env", True)]


def test_finding_a_program_on_path_is_no_new_filesystem_write(make_repo) -> None:
    """click 9835b0f7: 'new filesystem use in _resolve_pager_command: shutil.which'."""
    root = make_repo({"pkg/pager.py": "def resolve(cmd):\n    return cmd\n"})
    findings = _commit_change(
        root, {"pkg/pager.py": "import shutil\n\n\ndef resolve(cmd):\n    return shutil.which(cmd)\n"}
    )
    assert "new-filesystem" not in _rules(findings)
    findings = _commit_change(
        root, {"pkg/pager.py": "import shutil\n\n\ndef resolve(cmd):\n    shutil.rmtree(cmd)\n"}
    )
    assert "new-filesystem" in _rules(findings)


def test_two_definitions_of_one_name_keep_their_own_findings(make_repo) -> None:
    """urllib3 e18a0d1a: `_tunnel` defined in both branches of a version check; its two
    security-logic findings were folded into one message that said the same thing twice."""
    branch = "        def _tunnel(self):\n            return self.host\n"
    before = f"import sys\n\n\nclass Conn:\n    if sys.version_info < (3, 12):\n{branch}    else:\n{branch}"
    root = make_repo({"conn.py": before})
    fixed = "        def _tunnel(self):\n            if '\\r\\n' in self.host:\n                raise ValueError('control characters')\n            return self.host\n"
    findings = _commit_change(root, {"conn.py": before.replace(branch, fixed)})
    logic = [f for f in findings if f.rule == "security-logic"]
    assert [f.line for f in logic] == [6, 11] and all("; also" not in f.message for f in logic)


def test_many_sample_secrets_in_one_test_file_are_one_remark(make_repo) -> None:
    """urllib3 5cf02470: twelve `user:pass@host` URLs in test/test_util.py were twelve remarks."""
    root = make_repo({"tests/test_url.py": "def test_x():\n    pass\n"})
    urls = "".join(f'    ("http://user{i}:Secr3tPassw0rd{i}@host{i}/", "x"),\n' for i in range(6))
    findings = _commit_change(
        root, {"tests/test_url.py": "CASES = [\n" + urls + "]\n\n\ndef test_x():\n    pass\n"}
    )
    samples = [f for f in findings if f.rule == "secret-in-fixture"]
    assert len(samples) == 1 and samples[0].count == 6 and samples[0].severity == "info"
    assert samples[0].message.startswith(
        "6 sample secrets (credentials in a URL) in tests/test_url.py, lines 2, 3, 4"
    )


def test_security_evidence_does_not_name_one_call_twice(make_repo) -> None:
    """'security-sensitive logic added in f (subprocess and shell commands): `os.system`, calls `os.system`'."""
    root = make_repo({"pkg/run.py": "def f(x):\n    return x\n"})
    findings = _commit_change(root, {"pkg/run.py": "import os\n\n\ndef f(x):\n    os.system(x)\n"})
    (f,) = [f for f in findings if f.symbol == "f"]
    assert "`os.system`" in f.message and "calls `os.system`" not in f.message, f.message


def test_a_deleted_test_file_says_which_tests_went_with_it(make_repo) -> None:
    """'test file deleted: tests/test_core.py' did not say it took two tests with it."""
    root = make_repo(
        {
            "pkg/core.py": "def parse(t):\n    return t\n",
            "tests/test_core.py": "def test_parse():\n    pass\n\n\ndef test_empty():\n    pass\n",
        }
    )
    findings = _commit_change(root, {"tests/test_core.py": None})
    (f,) = [f for f in findings if f.rule == "tests-removed"]
    assert f.message == "test file deleted with its 2 tests: tests/test_core.py (test_parse, test_empty)"
    assert (f.severity, f.count) == ("medium", 2)


def test_a_removed_fallback_whose_name_is_still_imported_is_not_dangling(make_repo) -> None:
    """The fallback `def _cache` of a `try: from functools import cache as _cache` goes; the
    import stays, so `_cache(...)` below still resolves: no NameError to report."""
    before = (
        "try:\n    from functools import cache as _cache\nexcept ImportError:\n    pass\n\n\n"
        "def _cache(f):\n    return f\n\n\n@_cache\ndef answer():\n    return _cache(42)\n"
    )
    root = make_repo({"pkg/compat.py": before})
    after = before.replace("def _cache(f):\n    return f\n\n\n", "")
    findings = _commit_change(root, {"pkg/compat.py": after})
    assert "removed-still-called" not in _rules(findings)


def test_writing_files_is_a_new_filesystem_finding_one_per_function(make_repo) -> None:
    """`open(path, "w")` and `Path(path).write_text(...)` added by a commit gave no new-filesystem
    finding (only os.remove and shutil.rmtree did, one finding each)."""
    root = make_repo(
        {"pkg/store.py": "def save(path, data):\n    return data\n\n\ndef read(path):\n    return path\n"}
    )
    findings = _commit_change(
        root,
        {
            "pkg/store.py": "import os\nfrom pathlib import Path\n\n\ndef save(path, data):\n"
            "    with open(\n        path,\n        'w',\n    ) as fh:\n        fh.write(data)\n"
            "    Path(path + '.bak').write_text(data)\n    os.remove(path + '.tmp')\n    return data\n\n\n"
            "def read(path):\n    with open(path) as fh:\n        return fh.read()\n"
        },
    )
    fs = [f for f in findings if f.rule == "new-filesystem"]
    assert [(f.symbol, f.line, f.severity, f.count) for f in fs] == [("save", 6, "low", 3)]
    assert fs[0].message == (
        "new filesystem use in save: open(mode='w') (line 6), "
        "Path(path + '.bak').write_text (line 11), os.remove (line 12)"
    )
    # Reading a file is no write; a write whose mode only changed ("w" -> "wb") is no new one.
    findings = _commit_change(
        root,
        {
            "pkg/store.py": "import os\nfrom pathlib import Path\n\n\ndef save(path, data):\n"
            "    with open(path, mode='wb') as fh:\n        fh.write(data)\n"
            "    Path(path + '.bak').write_text(data)\n    os.remove(path + '.tmp')\n    return data\n\n\n"
            "def read(path):\n    with open(path, 'r') as fh:\n        return fh.read().strip()\n"
        },
    )
    assert "new-filesystem" not in _rules(findings), [f.message for f in findings]


def test_a_method_on_a_network_calls_result_is_not_a_second_effect(make_repo) -> None:
    root = make_repo({"pkg/api.py": "def fetch(url):\n    return url\n"})
    findings = _commit_change(
        root,
        {"pkg/api.py": "import requests\n\n\ndef fetch(url):\n    return requests.get(url).json()\n"},
    )
    assert [f.message for f in findings if f.rule == "new-network"] == [
        "new network use in fetch: requests.get"
    ]


def test_a_private_module_losing_a_name_from_its_all_is_no_public_api_change(make_repo) -> None:
    """httpx 8e36f2bc deleted `httpx/_compat.py` (`__all__` naming the optional `brotli` import):
    '1 name no longer importable from httpx._compat: brotli' (medium api) on a private module."""
    compat = "try:\n    import brotli\nexcept ImportError:\n    brotli = None\n\n__all__ = ['brotli']\n"
    root = make_repo(
        {
            "pkg/__init__.py": "",
            "pkg/_compat.py": compat,
            "pkg/codecs.py": compat,
            "pkg/app.py": "def run():\n    return 1\n",
        }
    )
    findings = _commit_change(root, {"pkg/_compat.py": None, "pkg/codecs.py": "__all__ = []\n"})
    assert [f.message for f in findings if f.rule == "public-api"] == [
        "1 name no longer importable from pkg.codecs: brotli"
    ]


def test_a_parameter_taken_from_the_middle_is_one_removal_not_a_rename(make_repo) -> None:
    """werkzeug 0ada8fa1 took `cls` out of `parse_form_data(environ, ..., cls=None, silent=True, *,
    ...)` into `**kwargs`: 'parameter 'cls' renamed to 'silent' (keyword callers break); parameter
    'silent' removed', of a parameter still there."""
    before = "def parse(environ, factory=None, cls=None, silent=True, *, parts=None):\n    return environ\n"
    after = (
        "def parse(environ, factory=None, silent=True, *, parts=None, **kwargs):\n"
        "    return environ, kwargs.get('cls')\n"
    )
    root = make_repo({"pkg/__init__.py": "", "pkg/form.py": before})
    findings = _commit_change(root, {"pkg/form.py": after})
    assert [f.message for f in findings if f.rule == "public-api"] == [
        "signature of public function pkg.form.parse changed: parameter 'cls' removed (**kwargs still "
        "takes it by keyword); 'silent' moved up a position (positional callers break)"
    ]
