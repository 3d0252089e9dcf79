"""Review rules that must hold beyond the commits they were studied on.

Each test is a small real repository with one commit shaped like a kind of change the fourth
labelled batch (starlette, paramiko, pip, gunicorn) showed the rules misjudging: a security fix
the catalogue did not recognise, a refactor read as untested behaviour, fixtures read as tests.
"""

from __future__ import annotations

from engine.review.findings import Finding
from tests.engine.review.conftest import commit_and_review as _commit

TESTS = {"tests/test_misc.py": "def test_misc():\n    assert True\n"}


def _findings(items: list[Finding], rule: str | None = None) -> list[Finding]:
    return [f for f in items if f.severity != "info" and (rule is None or f.rule == rule)]


def _remarks(items: list[Finding], rule: str) -> list[Finding]:
    return [f for f in items if f.severity == "info" and f.rule == rule]


def _security_symbols(items: list[Finding]) -> list[str | None]:
    return [f.symbol for f in _findings(items, "security-logic")]


# --------------------------------------------------------------------------- security logic

TRANSPORT = (
    "class Transport:\n"
    "    def run(self, ptype, m):\n"
    "        handler = self.handlers[ptype]\n"
    "        handler(m)\n"
)


def test_a_caller_routed_through_a_new_authentication_check_is_security_logic(make_repo) -> None:
    root = make_repo({"pkg/__init__.py": "", "pkg/transport.py": TRANSPORT, **TESTS})
    after = (
        "class Transport:\n"
        "    def _ensure_authed(self, ptype, m):\n"
        "        if self.server_mode and not self.active_user and ptype in self.guarded:\n"
        "            return self.reject(m)\n"
        "        return None\n\n"
        "    def run(self, ptype, m):\n"
        "        error = self._ensure_authed(ptype, m)\n"
        "        if error:\n"
        "            self.send(error)\n"
        "        else:\n"
        "            self.handlers[ptype](m)\n"
    )
    findings = _commit(root, {"pkg/transport.py": after})
    (run,) = [f for f in _findings(findings, "security-logic") if f.symbol == "Transport.run"]
    assert "authentication" in run.message and "_ensure_authed" in run.message


def test_a_helper_with_a_generic_key_name_is_no_call_graph_evidence(make_repo) -> None:
    before = "class Headers:\n    def get(self, name):\n        return self.items[name.lower()]\n"
    after = (
        "class Headers:\n"
        "    def _get_key(self, name):\n"
        "        return name.lower()\n\n"
        "    def get(self, name):\n"
        "        return self.items[self._get_key(name)]\n"
    )
    root = make_repo({"pkg/__init__.py": "", "pkg/headers.py": before, **TESTS})
    assert _security_symbols(_commit(root, {"pkg/headers.py": after})) == []


def test_key_exchange_and_private_key_files_are_security_logic(make_repo) -> None:
    kex = "class Transport:\n    def _parse_kex_init(self, m):\n        self.kex = m.get_list()\n"
    pkey = (
        "import os\n\n\n"
        "class PKey:\n"
        "    def _write_private_key_file(self, filename, data):\n"
        "        with open(filename, 'w') as f:\n"
        "            f.write(data)\n"
    )
    root = make_repo({"pkg/__init__.py": "", "pkg/transport.py": kex, "pkg/pkey.py": pkey, **TESTS})
    findings = _commit(
        root,
        {
            "pkg/transport.py": kex.replace(
                "m.get_list()", "m.get_list()\n        self.strict = 'strict' in self.kex"
            ),
            "pkg/pkey.py": pkey.replace(
                "with open(filename, 'w') as f:",
                "fd = os.open(filename, os.O_WRONLY | os.O_CREAT, 0o600)\n        with os.fdopen(fd, 'w') as f:",
            ),
        },
    )
    assert sorted(_security_symbols(findings)) == [
        "PKey._write_private_key_file",
        "Transport._parse_kex_init",
    ]


def test_a_private_size_limit_in_an_upload_is_a_limit(make_repo) -> None:
    before = "class UploadFile:\n    async def write(self, data):\n        self.file.write(data)\n"
    after = (
        "class UploadFile:\n"
        "    async def write(self, data):\n"
        "        if self.file.tell() + len(data) > self._max_mem_size:\n"
        "            await run_in_threadpool(self.file.write, data)\n"
        "        else:\n"
        "            self.file.write(data)\n"
    )
    root = make_repo({"pkg/__init__.py": "", "pkg/datastructures.py": before, **TESTS})
    (finding,) = _findings(_commit(root, {"pkg/datastructures.py": after}), "security-logic")
    assert finding.symbol == "UploadFile.write" and "limits" in finding.message


def test_an_option_flag_put_before_a_value_is_command_line_construction(make_repo) -> None:
    before = "class Mercurial:\n    def get_base_rev_args(self, rev):\n        return [rev]\n"
    root = make_repo({"pkg/__init__.py": "", "pkg/mercurial.py": before, **TESTS})
    findings = _commit(root, {"pkg/mercurial.py": before.replace("[rev]", '["-r", rev]')})
    (finding,) = _findings(findings, "security-logic")
    assert finding.symbol == "Mercurial.get_base_rev_args" and "subprocess" in finding.message


def test_dropping_an_import_fallback_from_a_handler_is_not_security_logic(make_repo) -> None:
    before = (
        "def get_pin_and_cookie_name(app):\n"
        "    try:\n"
        "        user = app.user()\n"
        "    except (ImportError, KeyError, OSError):\n"
        "        user = None\n"
        "    return user\n"
    )
    root = make_repo({"pkg/__init__.py": "", "pkg/debug.py": before, **TESTS})
    findings = _commit(
        root, {"pkg/debug.py": before.replace("(ImportError, KeyError, OSError)", "(KeyError, OSError)")}
    )
    assert _findings(findings, "security-logic") == []
    # Catching one error fewer that is not an import failure is still logic.
    root = make_repo({"pkg/__init__.py": "", "pkg/debug.py": before, **TESTS})
    findings = _commit(
        root, {"pkg/debug.py": before.replace("(ImportError, KeyError, OSError)", "(ImportError, KeyError)")}
    )
    assert _security_symbols(findings) == ["get_pin_and_cookie_name"]


# --------------------------------------------------------------------------- untested changes


def test_a_helper_folded_into_its_caller_is_not_untested_behaviour(make_repo) -> None:
    before = (
        "import sys\n\n\n"
        "def _running_under_venv():\n"
        "    return sys.prefix != getattr(sys, 'base_prefix', sys.prefix)\n\n\n"
        "def running_under_virtualenv():\n"
        "    return _running_under_venv()\n\n\n"
        "def virtualenv_no_global():\n"
        "    if _running_under_venv():\n"
        "        return True\n"
        "    return False\n"
    )
    after = (
        "import sys\n\n\n"
        "def running_under_virtualenv():\n"
        "    return sys.prefix != getattr(sys, 'base_prefix', sys.prefix)\n\n\n"
        "def virtualenv_no_global():\n"
        "    if running_under_virtualenv():\n"
        "        return True\n"
        "    return False\n"
    )
    root = make_repo({"pkg/__init__.py": "", "pkg/virtualenv.py": before, **TESTS})
    findings = _commit(root, {"pkg/virtualenv.py": after})
    assert [f for f in findings if f.rule == "untested-change"] == []
    # The same shape with a body that is not the removed helper's is new behaviour (told as a
    # remark: nothing security-sensitive in it).
    root = make_repo({"pkg/__init__.py": "", "pkg/virtualenv.py": before, **TESTS})
    changed = after.replace("sys.prefix != getattr", "sys.exec_prefix != getattr")
    assert _remarks(_commit(root, {"pkg/virtualenv.py": changed}), "untested-change")


def test_a_change_to_message_texts_only_is_a_remark(make_repo) -> None:
    before = "def check(n):\n    if n < 0:\n        raise ValueError('negative')\n    return n\n"
    root = make_repo({"pkg/__init__.py": "", "pkg/core.py": before, **TESTS})
    findings = _commit(root, {"pkg/core.py": before.replace("'negative'", "'n must not be negative'")})
    assert _findings(findings, "untested-change") == []
    assert "message texts" in _remarks(findings, "untested-change")[0].message


def test_an_untested_change_is_a_finding_where_it_guards_security_logic(make_repo) -> None:
    before = (
        "import hmac\n\n\n"
        "def area(w, h):\n    return w * h\n\n\n"
        "def check_token(given, expected):\n    return given == expected\n"
    )
    root = make_repo({"pkg/__init__.py": "", "pkg/core.py": before, **TESTS})
    # Ordinary code changed without a test: an observation, not a finding.
    findings = _commit(root, {"pkg/core.py": before.replace("w * h", "abs(w * h)")})
    assert _findings(findings, "untested-change") == []
    assert "no security-sensitive logic" in _remarks(findings, "untested-change")[0].message
    # A token comparison changed without a test: a finding next to the security one.
    findings = _commit(
        root,
        {"pkg/core.py": before.replace("given == expected", "hmac.compare_digest(given, expected)")},
    )
    assert [f.file for f in _findings(findings, "untested-change")] == ["pkg/core.py"]
    assert [f.symbol for f in _findings(findings, "security-logic")] == ["check_token"]


# --------------------------------------------------------------------------- tests removed


def test_tests_of_a_removed_setting_go_with_it_whatever_the_spelling(make_repo) -> None:
    root = make_repo(
        {
            "pkg/__init__.py": "",
            "pkg/config.py": "class Setting:\n    pass\n\n\n"
            "class TolerateDangerousFraming(Setting):\n    name = 'tolerate_dangerous_framing'\n",
            "tests/test_compat.py": "from pkg.config import Config\n\n\n"
            "def test_compat():\n    cfg = Config()\n    cfg.set('tolerate_dangerous_framing', True)\n",
            **TESTS,
        }
    )
    findings = _commit(root, {"pkg/config.py": "class Setting:\n    pass\n", "tests/test_compat.py": None})
    assert _findings(findings, "tests-removed") == []


def test_a_deleted_fixture_that_defines_no_test_is_a_remark(make_repo) -> None:
    root = make_repo(
        {
            "pkg/__init__.py": "",
            "pkg/core.py": "def f():\n    return 1\n",
            "tests/requests/valid/025.http": "POST /chunked HTTP/1.1\r\n\r\n",
            "tests/requests/valid/025.py": "request = {'method': 'POST', 'uri': '/chunked'}\n",
            "tests/test_gone.py": "def test_gone():\n    assert True\n",
            **TESTS,
        }
    )
    findings = _commit(
        root,
        {
            "tests/requests/valid/025.http": None,
            "tests/requests/valid/025.py": None,
            "tests/test_gone.py": None,
        },
    )
    assert [f.file for f in _findings(findings, "tests-removed")] == ["tests/test_gone.py"]
    assert sorted(f.file or "" for f in _remarks(findings, "tests-removed")) == [
        "tests/requests/valid/025.http",
        "tests/requests/valid/025.py",
    ]
