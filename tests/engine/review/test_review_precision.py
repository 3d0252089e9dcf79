"""Findings a maintainer keeps switched on: each test is one kind of noise the rules used to raise
on real commits, in a small real repository, and (where it matters) the finding that must stay.

The noise classes come from labelled commits of werkzeug, jinja, pyjwt, aiohttp and tornado
(``tests/bench/ci/commits.json``): annotations inlined into a security class, a local import moved
to the module, a default changed on ``redirect``, ``TYPE_CHECKING`` overloads, a deprecation shim,
a helper that merely forwards, a package that curates its submodules, sample secrets in fixtures.
"""

from __future__ import annotations

from engine.review.ci import review
from engine.review.findings import Finding, decide
from engine.review.rules import run_rules
from engine.semantic.diff import analyze_commit
from tests.conftest import git
from tests.engine.review.conftest import commit_and_review as _commit


def _findings(items: list[Finding], rule: str | None = None) -> list[Finding]:
    """Findings proper (remarks left out), of one rule when named (leading or folded into another)."""
    return [f for f in items if f.severity != "info" and (rule is None or rule in (f.rule, *f.also))]


def _remarks(items: list[Finding], rule: str) -> list[Finding]:
    return [f for f in items if f.severity == "info" and f.rule == rule]


# A repository that keeps its tests in tests/ (a file nobody changes in these commits).
TESTS = {"tests/test_misc.py": "def test_misc():\n    assert True\n"}


# --------------------------------------------------------------------------- security logic


def test_annotating_a_security_class_is_no_security_evidence(make_repo) -> None:
    before = (
        "def prop(key):\n    return property(lambda self: self.get(key))\n\n\n"
        "class Policy(dict):\n"
        '    sandbox = prop("sandbox")\n'
        '    script_src = prop("script-src")\n'
    )
    after = (
        "from .base import Callback\n\n\n"
        "def prop(key: str) -> property:\n    return property(lambda self: self.get(key))\n\n\n"
        "class Policy(Callback):\n"
        '    sandbox: str | None = prop("sandbox")\n'
        '    script_src: str | None = prop("script-src")\n'
    )
    root = make_repo(
        {"pkg/__init__.py": "", "pkg/base.py": "class Callback(dict):\n    pass\n", "pkg/csp.py": before}
    )
    findings = _commit(root, {"pkg/csp.py": after})
    assert _findings(findings, "security-logic") == []


def test_a_local_import_moved_to_the_module_is_not_a_change(make_repo) -> None:
    before = (
        "import re\n\n\n"
        "def machine_id():\n"
        "    try:\n"
        "        from subprocess import PIPE\n"
        "        from subprocess import Popen\n\n"
        '        out = Popen(["ioreg", "-d", "2"], stdout=PIPE).communicate()[0]\n'
        "        return re.search(b'serial', out)\n"
        "    except OSError:\n"
        "        return None\n"
    )
    after = (
        "import re\nimport subprocess\n\n\n"
        "def machine_id():\n"
        "    try:\n"
        "        out = subprocess.Popen(\n"
        '            ["ioreg", "-d", "2"],\n'
        "            stdout=subprocess.PIPE,\n"
        "        ).communicate()[0]\n"
        "        return re.search(b'serial', out)\n"
        "    except OSError:\n"
        "        return None\n"
    )
    root = make_repo({"pkg/__init__.py": "", "pkg/debug.py": before, **TESTS})
    findings = _commit(root, {"pkg/debug.py": after})
    assert _findings(findings) == []
    (change,) = analyze_commit(root, "HEAD").symbols
    assert change.cosmetic


def test_a_changed_default_alone_is_an_api_change_not_security_logic(make_repo) -> None:
    before = "def redirect(location, code=302):\n    return (code, {'Location': location})\n"
    root = make_repo({"pkg/__init__.py": "", "pkg/utils.py": before, **TESTS})
    findings = _commit(root, {"pkg/utils.py": before.replace("302", "303")})
    assert _findings(findings, "security-logic") == []
    (api,) = _findings(findings, "public-api")
    assert "default of 'code' changed from 302 to 303" in api.message
    # A strong term in the header is still evidence: certificate checks switched off by default.
    tls = "def connect(host, cert_reqs='CERT_REQUIRED'):\n    return (host, cert_reqs)\n"
    root = make_repo({"pkg/__init__.py": "", "pkg/net.py": tls, **TESTS})
    findings = _commit(root, {"pkg/net.py": tls.replace("'CERT_REQUIRED'", "'CERT_NONE'")})
    assert len(_findings(findings, "security-logic")) == 1


def test_logging_in_a_security_function_is_no_security_finding(make_repo) -> None:
    before = "import logging\n\nlog = logging.getLogger(__name__)\n\n\ndef check_auth(user, secret):\n    return user.secret == secret\n"
    after = before.replace("    return user", "    log.debug('checking %s', user.name)\n    return user")
    root = make_repo({"pkg/__init__.py": "", "pkg/auth.py": before, **TESTS})
    findings = _commit(root, {"pkg/auth.py": after})
    assert _findings(findings, "security-logic") == []
    # A change to the comparison itself is.
    findings = _commit(
        root,
        {"pkg/auth.py": after.replace("user.secret == secret", "hmac.compare_digest(user.secret, secret)")},
    )
    assert len(_findings(findings, "security-logic")) == 1


# --------------------------------------------------------------------------- typing-only code

SESSION = (
    "class Session:\n"
    "    def get(self, url, *, allow_redirects=True, **kwargs):\n"
    "        return self._request('GET', url, allow_redirects=allow_redirects, **kwargs)\n\n"
    "    def _request(self, method, url, **kwargs):\n"
    "        return (method, url, kwargs)\n"
)
SESSION_TYPED = (
    "import sys\nfrom typing import TYPE_CHECKING\n\n\n"
    "class Session:\n"
    "    if sys.version_info >= (3, 11) and TYPE_CHECKING:\n\n"
    "        def get(self, url, **kwargs): ...\n\n"
    "    else:\n\n"
    "        def get(self, url, *, allow_redirects=True, **kwargs):\n"
    "            return self._request(\n"
    "                'GET', url, allow_redirects=allow_redirects, **kwargs\n"
    "            )\n\n"
    "    def _request(self, method, url, **kwargs):\n"
    "        return (method, url, kwargs)\n"
)


def test_type_checking_declarations_are_not_code(make_repo) -> None:
    root = make_repo({"pkg/__init__.py": "", "pkg/client.py": SESSION, **TESTS})
    findings = _commit(root, {"pkg/client.py": SESSION_TYPED})
    assert _findings(findings) == []
    assert all(s.cosmetic for s in analyze_commit(root, "HEAD").symbols if s.change != "added")


# --------------------------------------------------------------------------- untested changes


def test_untested_change_is_a_finding_only_on_plain_evidence(make_repo) -> None:
    root = make_repo(
        {
            "pkg/__init__.py": "",
            "pkg/core.py": "def check_token(a, b):\n    return a == b\n\n\ndef scale(x):\n    return x\n",
            "pkg/static/app.js": "function promptForPin() {\n  return 1;\n}\n",
            **TESTS,
        }
    )
    # No test changed, the project has Python tests, the code is security-sensitive: a finding.
    findings = _commit(
        root,
        {
            "pkg/core.py": "import hmac\n\n\ndef check_token(a, b):\n    return hmac.compare_digest(a, b)\n\n\n"
            "def scale(x):\n    return x\n"
        },
    )
    assert [f.file for f in _findings(findings, "untested-change")] == ["pkg/core.py"]
    # JavaScript in a project without JavaScript tests: a remark.
    findings = _commit(root, {"pkg/static/app.js": "function promptForPin() {\n  return 2;\n}\n"})
    assert _findings(findings, "untested-change") == []
    assert "no javascript tests" in _remarks(findings, "untested-change")[0].message
    # Tests came with the change but do not name it (they exercise it through another door): a remark.
    findings = _commit(
        root,
        {
            "pkg/core.py": "import hmac\n\n\ndef check_token(a, b):\n    return hmac.compare_digest(a, b)\n\n\n"
            "def scale(x):\n    return 2 * x\n",
            "tests/test_shapes.py": "def test_shapes():\n    assert True\n",
        },
    )
    assert _findings(findings, "untested-change") == []
    assert _remarks(findings, "untested-change")


def test_a_deprecation_shim_and_a_forwarding_signature_are_remarks(make_repo) -> None:
    root = make_repo(
        {
            "pkg/__init__.py": "from .api import encode\n\n__version__ = '1.0'\n",
            "pkg/api.py": "def encode(payload, algorithm=None):\n"
            "    alg = algorithm if algorithm is not None else 'HS256'\n"
            "    return (payload, alg)\n",
            "pkg/jwt.py": "from . import api\n\n\n"
            "def encode(payload, algorithm=None):\n    return api.encode(payload, algorithm)\n",
            **TESTS,
        }
    )
    findings = _commit(
        root,
        {
            "pkg/__init__.py": "import warnings\n\nfrom .api import encode\n\n\n"
            "def __getattr__(name):\n"
            "    if name == '__version__':\n"
            "        warnings.warn('__version__ is deprecated', DeprecationWarning, stacklevel=2)\n"
            "        return '1.0'\n"
            "    raise AttributeError(name)\n",
            "pkg/api.py": "def encode(payload, algorithm='HS256'):\n"
            "    alg = algorithm if algorithm is not None else 'none'\n"
            "    return (payload, alg)\n",
            "pkg/jwt.py": "from . import api\n\n\n"
            "def encode(payload, algorithm='HS256'):\n    return api.encode(payload, algorithm)\n",
        },
    )
    untested = _findings(findings, "untested-change")
    assert [f.file for f in untested] == ["pkg/api.py"]  # the change that decides something
    assert {f.file for f in _remarks(findings, "untested-change")} == {"pkg/__init__.py", "pkg/jwt.py"}
    # None -> 'HS256' where the body used to fall back to 'HS256': callers that leave it out see no change.
    assert _findings(findings, "public-api") == []


def test_a_sweep_without_tests_is_one_remark(make_repo) -> None:
    files = {f"pkg/m{i}.py": f"def f{i}(x):\n    return x\n" for i in range(5)}
    root = make_repo({"pkg/__init__.py": "", **files, **TESTS})
    findings = _commit(root, {p: t.replace("return x", "return x or None") for p, t in files.items()})
    assert _findings(findings, "untested-change") == []
    (sweep,) = _remarks(findings, "untested-change")
    assert sweep.count == 5


# --------------------------------------------------------------------------- public API


def test_a_package_that_curates_a_module_makes_its_other_names_internal(make_repo) -> None:
    mixins = (
        "def is_immutable(self):\n    raise TypeError('immutable')\n\n\n"
        "class ImmutableList(list):\n    def append(self, v):\n        is_immutable(self)\n\n\n"
        "class ImmutableDict(dict):\n    def update(self, v):\n        is_immutable(self)\n\n\n"
        "class UpdateDict(dict):\n    pass\n"
    )
    root = make_repo(
        {
            "pkg/__init__.py": "from .serving import run\n",
            "pkg/serving.py": "def run():\n    return 1\n\n\ndef make_server():\n    return 2\n\n\n"
            "def reloader():\n    return 3\n",
            "pkg/ds/__init__.py": "from .mixins import ImmutableDict as ImmutableDict\n"
            "from .mixins import ImmutableList as ImmutableList\n"
            "from .mixins import UpdateDict as UpdateDict\n",
            "pkg/ds/mixins.py": mixins,
            **TESTS,
        }
    )
    inlined = mixins.replace("def is_immutable(self):\n    raise TypeError('immutable')\n\n\n", "").replace(
        "is_immutable(self)", "raise TypeError('immutable')"
    )
    findings = _commit(root, {"pkg/ds/mixins.py": inlined})
    assert _findings(findings, "public-api") == []  # pkg.ds re-exports the module's API, not this helper
    # A package that offers one shortcut (pkg re-exports run) does not make serving's other names private.
    findings = _commit(
        root, {"pkg/serving.py": "def run():\n    return 1\n\n\ndef reloader():\n    return 3\n"}
    )
    assert [f.symbol for f in _findings(findings, "public-api")] == ["make_server"]


def test_protocol_dunders_and_vendored_code_are_not_import_surface(make_repo) -> None:
    root = make_repo(
        {
            "pkg/__init__.py": "",
            "pkg/types.py": "class Key:\n"
            "    def __init__(self, value, strict=False):\n        self.value = value\n\n"
            "    def __eq__(self, other):\n        return self.value == other.value\n",
            "pkg/packages/__init__.py": "",
            "pkg/packages/six.py": "def ensure_str(s):\n    return str(s)\n\n\ndef b(s):\n    return s\n",
            **TESTS,
        }
    )
    findings = _commit(
        root,
        {
            "pkg/types.py": "class Key:\n"
            "    def __init__(self, value):\n        self.value = value\n\n"
            "    def __eq__(self, value):\n        return self.value == value.value\n",
            "pkg/packages/six.py": "def ensure_str(s):\n    return str(s)\n",
        },
    )
    api = _findings(findings, "public-api")
    assert [f.symbol for f in api] == ["Key.__init__"]  # `strict` removed; __eq__'s name is nobody's


def test_one_finding_a_symbol(make_repo) -> None:
    before = "def strip_headers(headers):\n    headers.pop('Cookie', None)\n    return headers\n"
    after = (
        "def strip_headers(headers, extra):\n"
        "    headers.pop('Cookie', None)\n    headers.pop('Authorization', None)\n    return headers\n"
    )
    root = make_repo({"pkg/__init__.py": "", "pkg/redirects.py": before, **TESTS})
    findings = _commit(root, {"pkg/redirects.py": after})
    on_symbol = [f for f in _findings(findings) if f.symbol == "strip_headers"]
    assert len(on_symbol) == 1
    (finding,) = on_symbol
    assert finding.rule == "security-logic" and finding.also == ("public-api",)
    assert "new required parameter 'extra'" in finding.message


# --------------------------------------------------------------------------- the report


def test_remarks_are_reported_apart_and_never_gate(make_repo) -> None:
    root = make_repo({"README.md": "# app\n", "pkg/__init__.py": ""})
    key = "192b9bdd22ab9ed4d12e236c78afcb9a393ec15f71bbf5dc987d54727823bcbf"  # semfora: allow-secret
    (root / "docs").mkdir()
    (root / "docs" / "config.md").write_text(f"SECRET_KEY = '{key}'\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "docs")
    report = review(root, "commit", commit="HEAD", use_model=False, fail_on="low")
    data = report.to_json()
    assert data["findings"] == [] and data["status"] == "approved"
    assert [r["rule"] for r in data["remarks"]] == ["secret-in-fixture"]
    assert key not in str(data["remarks"])
    assert "remarks (not findings" in report.to_text()
    assert decide(list(report.findings), "low") == "approved"


def test_a_package_moved_under_src_lists_no_callers(make_repo) -> None:
    root = make_repo(
        {
            "pkg/__init__.py": "from .core import parse\n",
            "pkg/core.py": "def parse(text):\n    return text\n",
            "pkg/cli.py": "from .core import parse\n\n\ndef main():\n    return parse('x')\n",
        }
    )
    (root / "src").mkdir()
    git(root, "mv", "pkg", "src/pkg")
    git(root, "commit", "-q", "-m", "src layout")
    diff = analyze_commit(root, "HEAD")
    moved = [s for s in diff.symbols if s.change == "moved"]
    assert moved and all(s.callers_total == 0 for s in moved)  # nobody's call changes
    assert run_rules(diff) == []


def test_a_schema_deserializer_is_not_unsafe_deserialisation(make_repo) -> None:
    before = "class Schema:\n    def _deserialize(self, data, partial=False):\n        return dict(data)\n"
    root = make_repo({"pkg/__init__.py": "", "pkg/schema.py": before, **TESTS})
    findings = _commit(
        root, {"pkg/schema.py": before.replace("dict(data)", "{k: v for k, v in data.items() if v}")}
    )
    assert _findings(findings, "security-logic") == []
    # Building objects with pickle is.
    findings = _commit(
        root,
        {"pkg/schema.py": "import pickle\n\n\n" + before.replace("dict(data)", "pickle.loads(data)")},
    )
    assert len(_findings(findings, "security-logic")) == 1


def test_tests_of_a_removed_parameter_go_with_it(make_repo) -> None:
    root = make_repo(
        {
            "pkg/__init__.py": "",
            "pkg/utils.py": "def rfcformat(d, *, localtime=False):\n    return d.isoformat() if localtime else str(d)\n",
            "tests/test_utils.py": "from pkg.utils import rfcformat\n\n\n"
            "def test_rfcformat():\n    assert rfcformat(1)\n\n\n"
            "def test_rfcformat_localized():\n    assert rfcformat(1, localtime=True)\n",
        }
    )
    findings = _commit(
        root,
        {
            "pkg/utils.py": "def rfcformat(d):\n    return str(d)\n",
            "tests/test_utils.py": "from pkg.utils import rfcformat\n\n\ndef test_rfcformat():\n    assert rfcformat(1)\n",
        },
    )
    assert _findings(findings, "tests-removed") == []
    assert [f.symbol for f in _findings(findings, "public-api")] == ["rfcformat"]


UTILS = (
    "def port_or_default(url):\n"
    "    if url.port is not None:\n        return url.port\n"
    '    return {"http": 80, "https": 443}.get(url.scheme)\n\n\n'
    "def same_origin(url, other):\n"
    "    return (\n        url.scheme == other.scheme\n        and url.host == other.host\n"
    "        and port_or_default(url) == port_or_default(other)\n    )\n\n\n"
    "def is_https_redirect(url, location):\n"
    "    if url.host != location.host:\n        return False\n"
    '    return url.scheme == "http" and location.scheme == "https" and port_or_default(location) == 443\n'
)
CLIENT = (
    "from pkg.utils import is_https_redirect, same_origin\n\n\n"
    "def redirect_headers(request, url, headers):\n"
    "    if not same_origin(url, request.url):\n"
    "        if not is_https_redirect(request.url, url):\n"
    '            headers.pop("Authorization", None)\n'
    "    return headers\n"
)


def _privatised(text: str) -> str:
    for name in ("port_or_default", "same_origin", "is_https_redirect"):
        text = text.replace(name, "_" + name)
    return text


def test_helpers_moved_and_renamed_with_their_call_sites_are_no_logic_change(make_repo) -> None:
    """httpx 7b19cd5f moved three helpers into the client as ``_same_origin`` etc.: three
    security-logic findings on a change that only moved and renamed (the renamed definitions
    could not be compared, and call sites that follow a rename read as changed logic)."""
    root = make_repo({"pkg/__init__.py": "", "pkg/utils.py": UTILS, "pkg/client.py": CLIENT, **TESTS})
    client = (
        "\n\n"
        + _privatised(UTILS)
        + "\n\n"
        + _privatised(CLIENT).replace("from pkg.utils import _is_https_redirect, _same_origin\n", "")
    )
    findings = _commit(root, {"pkg/utils.py": "", "pkg/client.py": client})
    assert _findings(findings, "security-logic") == []
    assert _findings(findings, "untested-change") == []
    diff = analyze_commit(root, "HEAD")
    renamed = {s.qualified_name: s for s in diff.symbols if s.change == "renamed"}
    assert set(renamed) == {"_port_or_default", "_same_origin", "_is_https_redirect"}
    assert all(not s.logic_changed for s in renamed.values())
    # A rename that also changes the logic is still a change of logic.
    root = make_repo({"pkg/__init__.py": "", "pkg/utils.py": UTILS, "pkg/client.py": CLIENT, **TESTS})
    findings = _commit(root, {"pkg/utils.py": "", "pkg/client.py": client.replace("== 443", "== 8443")})
    (logic,) = _findings(findings, "security-logic")
    assert logic.symbol == "_is_https_redirect"
    # The evidence says which word of the name placed it in a concern ("its name" alone did not).
    assert "its name (`https`)" in logic.message or "its name (`redirect`)" in logic.message


def test_inspecting_a_functions_signature_is_not_signing(make_repo) -> None:
    """Flask 6a649690 added ``__init_subclass__`` reading ``inspect.signature(method)``: raised as
    'signing and keys'. Computing a signature is still raised."""
    root = make_repo({"app.py": "import hmac\nimport inspect\n\n\nclass App:\n    pass\n", **TESTS})
    introspect = (
        "import hmac\nimport inspect\nfrom inspect import signature\n\n\nclass App:\n"
        "    def __init_subclass__(cls, **kwargs):\n"
        "        for method in (cls.dispatch, cls.finalize):\n"
        "            params = list(inspect.signature(method).parameters.values())\n"
        "            other = signature(method)\n"
        "            if len(params) < 2 or other is None:\n"
        "                raise TypeError(method.__name__)\n"
    )
    findings = _commit(root, {"app.py": introspect})
    assert _findings(findings, "security-logic") == []
    signing = introspect + (
        "\n\ndef sign(key, body):\n    signature = hmac.new(key, body, 'sha256').hexdigest()\n"
        "    return body + b'.' + signature.encode()\n"
    )
    findings = _commit(root, {"app.py": signing})
    assert [f.symbol for f in _findings(findings, "security-logic")] == ["sign"]


def test_an_override_removed_from_a_dict_subclass_is_still_there(make_repo) -> None:
    """Flask c17f3793 stopped overriding ``get`` and ``setdefault`` in ``SecureCookieSession``
    (a ``CallbackDict``, so a dict): reported as 'public method ... was removed'."""
    before = (
        "from werkzeug.datastructures import CallbackDict\n\n\n"
        "class Session(CallbackDict):\n"
        "    def get(self, key, default=None):\n        self.accessed = True\n"
        "        return super().get(key, default)\n\n"
        "    def touch(self):\n        self.accessed = True\n"
    )
    after = "from werkzeug.datastructures import CallbackDict\n\n\nclass Session(CallbackDict):\n    pass\n"
    root = make_repo({"pkg/__init__.py": "", "pkg/sessions.py": before, **TESTS})
    findings = _commit(root, {"pkg/sessions.py": after})
    removed = [f.symbol for f in _findings(findings, "public-api")]
    assert removed == ["Session.touch"]  # a dict has no touch: that one is gone


def test_helpers_nested_in_a_changed_function_are_read_with_it(make_repo) -> None:
    """requests a044b020 passed ``usedforsecurity=False`` to the hashes in build_digest_header and
    its nested md5_utf8, sha_utf8...: four security-logic findings for one change."""
    body = (
        "import hashlib\n\n\nclass DigestAuth:\n    def build_digest_header(self, x, algorithm):\n"
        "        def md5_utf8(x):\n            return hashlib.md5(x{flag}).hexdigest()\n\n"
        "        def sha_utf8(x):\n            return hashlib.sha1(x{flag}).hexdigest()\n\n"
        "        cnonce = hashlib.sha1(x{flag}).hexdigest()\n"
        "        return (md5_utf8 if algorithm == 'MD5' else sha_utf8)(cnonce)\n"
    )
    root = make_repo({"pkg/__init__.py": "", "pkg/auth.py": body.format(flag=""), **TESTS})
    findings = _commit(root, {"pkg/auth.py": body.format(flag=", usedforsecurity=False")})
    (logic,) = _findings(findings, "security-logic")
    assert logic.symbol == "DigestAuth.build_digest_header" and logic.count == 3
    assert logic.message.endswith("; with its nested md5_utf8, sha_utf8")
