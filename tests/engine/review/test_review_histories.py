"""Noise `semfora ci` raised on real histories the benchmark had not seen (click, pip, itsdangerous,
black, got, express): each test is one kind of false or unclear finding, rebuilt as a small real
repository, and what a reviewer now reads instead.
"""

from __future__ import annotations

from engine.review.findings import Finding
from tests.engine.review.conftest import commit_and_review as _commit


def _findings(items: list[Finding], rule: str | None = None) -> list[Finding]:
    """Findings proper (remarks left out), of one rule when named (leading or folded into another)."""
    return [f for f in items if f.severity != "info" and (rule is None or rule in (f.rule, *f.also))]


# The projects the changes are made in: a Python package with a test, a JavaScript one with a test.
PYTHON = {"pkg/__init__.py": "", "tests/test_base.py": "def test_base():\n    pass\n"}
JS = {"package.json": "{}\n", "test/base.js": "import test from 'ava';\n"}


def _change(make_repo, path: str, before: str, after: str, project: dict[str, str] = PYTHON) -> list[Finding]:
    """The rules' findings on one commit that changes ``path`` from ``before`` to ``after``."""
    root = make_repo({**project, path: before})
    return _commit(root, {path: after})


# --------------------------------------------------------------------------- tests removed

PROMPT_TESTS = (
    "def test_prompt_default():\n    assert True\n\n\ndef test_confirm_repeat():\n    assert 1 + 1 == 2\n"
)


def test_a_removed_duplicate_of_a_test_another_file_still_defines_is_no_lost_test(make_repo) -> None:
    # click 1103c5ca: tests/test_utils.py dropped test_confirm_repeat, which
    # tests/test_utils_2/test_confirm.py already defined: "1 test removed without replacement".
    utils = (
        "def test_filename():\n    assert 'a'.upper() == 'A'\n\n\n"
        "def test_confirm_repeat():\n    assert 1 + 1 == 2\n"
    )
    root = make_repo(
        {"pkg/__init__.py": "", "tests/test_utils.py": utils, "tests/sub/test_confirm.py": PROMPT_TESTS}
    )
    findings = _commit(root, {"tests/test_utils.py": "def test_filename():\n    assert 'a'.upper() == 'A'\n"})
    assert _findings(findings, "tests-removed") == []


def test_a_test_removed_for_good_is_still_reported(make_repo) -> None:
    utils = "def test_filename():\n    assert True\n\n\ndef test_unique_case():\n    assert 2 > 1\n"
    root = make_repo(
        {"pkg/__init__.py": "", "tests/test_utils.py": utils, "tests/test_other.py": PROMPT_TESTS}
    )
    findings = _commit(root, {"tests/test_utils.py": "def test_filename():\n    assert True\n"})
    [finding] = _findings(findings, "tests-removed")
    assert "test_unique_case" in finding.message


# --------------------------------------------------------------------------- secrets


def test_a_typescript_union_of_string_literals_is_a_type_not_a_secret(make_repo) -> None:
    # got e5e645a7: ``credential: 'username' | 'password'`` in a parameter list blocked the merge
    # three times as "secret assigned to a literal added (…)".
    before = "export function host(url: URL): string {\n\treturn url.host;\n}\n"
    after = before + (
        "\nexport function hasCredential(url: URL, credential: 'username' | 'password'): boolean {\n"
        "\treturn url[credential] !== '';\n}\n"
        "\ntype TokenKind = {token: 'bearer' | 'basic'};\n"
    )
    findings = _change(make_repo, "source/url.ts", before, after, JS)
    assert [f for f in findings if f.type == "secrets"] == []


def test_a_typescript_secret_literal_still_blocks(make_repo) -> None:
    root = make_repo({"package.json": "{}\n", "source/config.ts": "export const port = 8080;\n"})
    after = "export const port = 8080;\nexport const apiToken: string = 'q8Zr2LmX9vTk';\n"
    findings = _commit(root, {"source/config.ts": after})
    [secret] = [f for f in findings if f.type == "secrets"]
    assert secret.blocking


# --------------------------------------------------------------------------- JavaScript effects

SOCKET_BEFORE = "export function socketPath(url) {\n\treturn url.pathname;\n}\n"


def test_a_regular_expressions_exec_runs_no_program(make_repo) -> None:
    # got e5659d40: ``/(?<socketPath>.+?):(?<path>.+)/.exec(url.pathname)`` was a HIGH "new
    # subprocess use" (and "risk rose from low to high: subprocess").
    after = (
        "const PATTERN = /^(\\w+):(.*)$/;\n\n"
        "export function socketPath(url) {\n"
        "\tconst match = /(?<socketPath>.+?):(?<path>.+)/.exec(url.pathname);\n"
        "\tconst other = PATTERN.exec(url.host);\n"
        "\treturn match?.groups?.socketPath ?? other;\n}\n"
    )
    findings = _change(make_repo, "source/unix.js", SOCKET_BEFORE, after, JS)
    assert [f for f in findings if f.rule in ("new-subprocess", "risk-raised")] == []
    assert [f for f in findings if "exec" in f.message] == []


def test_child_process_exec_is_still_a_new_subprocess(make_repo) -> None:
    after = (
        "import childProcess from 'node:child_process';\n\n"
        "export function socketPath(url) {\n"
        "\treturn childProcess.exec(`ls ${url.pathname}`);\n}\n"
    )
    findings = _change(make_repo, "source/unix.js", SOCKET_BEFORE, after, JS)
    [finding] = _findings(findings, "new-subprocess")
    assert "childProcess.exec" in finding.message or "child_process.exec" in finding.message


def test_a_local_variable_named_request_is_not_the_request_package(make_repo) -> None:
    # got 13c889dd, 6ae3e7fc: ``request.end()``, ``request.on('error', ...)`` on the http.ClientRequest
    # got holds were "new network use" findings, as if they called the npm package `request`.
    before = "export class Client {\n\tsend(request) {\n\t\treturn request;\n\t}\n}\n"
    after = (
        "export class Client {\n\tsend(request) {\n"
        "\t\trequest.on('error', error => this.fail(error));\n"
        "\t\trequest.end();\n\t\treturn request;\n\t}\n}\n"
    )
    findings = _change(make_repo, "source/client.js", before, after, JS)
    assert _findings(findings, "new-network") == []


def test_the_imported_request_package_is_still_network(make_repo) -> None:
    before = "import request from 'request';\n\nexport function fetchIt(url) {\n\treturn url;\n}\n"
    after = (
        "import request from 'request';\n\nexport function fetchIt(url) {\n\treturn request.get(url);\n}\n"
    )
    findings = _change(make_repo, "source/fetch.js", before, after, JS)
    [finding] = _findings(findings, "new-network")
    assert "request.get" in finding.message


# --------------------------------------------------------------------------- JavaScript tests

AVA_TESTS = (
    "import test from 'ava';\n\n"
    "const createServer = async () => ({port: 1});\n\n"
    "const emitter = {\n\tabort() {},\n\tend() {},\n};\n\n"
    "test('retries on abort', async t => {\n\tconst server = await createServer();\n\tt.is(server.port, 1);\n});\n\n"
    "test('gives up', t => {\n\tt.truthy(emitter);\n});\n"
)


def test_a_helper_removed_from_a_javascript_test_file_is_no_removed_test(make_repo) -> None:
    # got b03e6f95, b9334769: a server helper and the methods of a fake emitter moved out of a test
    # file were "13 tests removed without replacement: emitter.abort, emitter.end...".
    root = make_repo(
        {"package.json": "{}\n", "source/index.js": "export const a = 1;\n", "test/retry.js": AVA_TESTS}
    )
    after = (
        "import test from 'ava';\nimport {createServer, emitter} from './helpers.js';\n\n"
        "test('retries on abort', async t => {\n\tconst server = await createServer();\n\tt.is(server.port, 1);\n});\n\n"
        "test('gives up', t => {\n\tt.truthy(emitter);\n});\n"
    )
    helpers = "export const createServer = async () => ({port: 1});\nexport const emitter = {abort() {}, end() {}};\n"
    findings = _commit(root, {"test/retry.js": after, "test/helpers.js": helpers})
    assert _findings(findings, "tests-removed") == []


def test_a_javascript_test_call_removed_is_a_removed_test(make_repo) -> None:
    root = make_repo(
        {"package.json": "{}\n", "source/index.js": "export const a = 1;\n", "test/retry.js": AVA_TESTS}
    )
    after = AVA_TESTS.replace("test('gives up', t => {\n\tt.truthy(emitter);\n});\n", "")
    findings = _commit(root, {"test/retry.js": after})
    [finding] = _findings(findings, "tests-removed")
    assert "1 test removed without replacement" in finding.message
    assert "'gives up'" in finding.message


def test_renaming_a_typescript_parameter_breaks_no_caller(make_repo) -> None:
    # got b9334769: TimeoutError's ``constructor(error, public event)`` became ``(error, event)``:
    # "parameter 'public event' renamed to 'event' (keyword callers break)"; JavaScript and
    # TypeScript have no keyword arguments.
    before = "export class TimeoutError extends Error {\n\tconstructor(error: Error, timings: string) {\n\t\tsuper(error.message);\n\t}\n}\n"
    after = before.replace("timings: string", "event: string")
    findings = _change(make_repo, "source/errors.ts", before, after, JS)
    assert _findings(findings, "public-api") == []


def test_renaming_a_python_parameter_still_breaks_keyword_callers(make_repo) -> None:
    before = "def fetch(url, timeout=None):\n    return url, timeout\n"
    findings = _change(make_repo, "pkg/net.py", before, before.replace("timeout", "deadline"))
    [finding] = _findings(findings, "public-api")
    assert "keyword callers break" in finding.message


# --------------------------------------------------------------------------- escaping for a terminal

RICH_BEFORE = (
    "from rich.markup import escape\n\n\n"
    "class PipError(Exception):\n"
    "    def __init__(self, message: str) -> None:\n"
    "        super().__init__(message)\n"
)


def test_escaping_rich_console_markup_is_no_output_escaping_concern(make_repo) -> None:
    # pip e7a2ec008, 671101016: new exceptions that format a URL with rich.markup.escape for the
    # console were "security-sensitive logic added (escaping and templating): `escape`".
    after = RICH_BEFORE + (
        "\n\nclass ConnectionFailedError(PipError):\n"
        "    def __init__(self, url: str, host: str) -> None:\n"
        "        super().__init__(\n"
        '            f"Failed to connect to [magenta]{escape(host)}[/] while fetching {escape(url)}"\n'
        "        )\n"
    )
    findings = _change(make_repo, "pkg/errors.py", RICH_BEFORE, after)
    assert _findings(findings, "security-logic") == []


def test_html_escaping_added_is_still_an_escaping_concern(make_repo) -> None:
    before = "import html\n\n\ndef render(name):\n    return '<b>' + name + '</b>'\n"
    after = "import html\n\n\ndef render(name):\n    return '<b>' + html.escape(name) + '</b>'\n"
    findings = _change(make_repo, "pkg/page.py", before, after)
    [finding] = _findings(findings, "security-logic")
    assert "escaping" in finding.message


# --------------------------------------------------------------------------- message texts


def test_rewording_a_deprecation_warning_is_no_security_change(make_repo) -> None:
    # itsdangerous 195e5f77: "mention itsdangerous in deprecation message" was "security-sensitive
    # logic changed in JSONWebSignatureSerializer.__init__ (signing and keys): `JWS`".
    before = (
        "import warnings\n\n\n"
        "class JSONWebSignatureSerializer:\n"
        "    def __init__(self, secret_key):\n"
        "        warnings.warn(\n"
        '            "JWS support is deprecated and will be removed in 2.1. Use"\n'
        '            " a dedicated JWS/JWT library such as authlib.",\n'
        "            DeprecationWarning,\n"
        "            stacklevel=2,\n"
        "        )\n"
        "        self.secret_key = secret_key\n"
    )
    after = before.replace(
        '"JWS support is deprecated and will be removed in 2.1. Use"\n'
        '            " a dedicated JWS/JWT library such as authlib."',
        '"JWS support is deprecated and will be removed in"\n'
        '            " ItsDangerous 2.1. Use a dedicated JWS/JWT library such as"\n'
        '            " authlib."',
    )
    findings = _change(make_repo, "pkg/jws.py", before, after)
    assert _findings(findings, "security-logic") == []


# --------------------------------------------------------------------------- public API


def test_a_removed_class_is_one_finding_not_one_a_method(make_repo) -> None:
    # got a06ac6c0: CancelError removed was four findings (the class, its constructor, isCanceled,
    # and a type); itsdangerous 506ca21d counted every method of the removed JWS classes.
    before = (
        "export class CancelError extends Error {\n"
        "\tconstructor(request: unknown) {\n\t\tsuper('Promise was canceled');\n\t}\n\n"
        "\tget isCanceled() {\n\t\treturn true;\n\t}\n}\n\n"
        "export function keep(): number {\n\treturn 1;\n}\n"
    )
    after = "export function keep(): number {\n\treturn 1;\n}\n"
    findings = _change(make_repo, "source/types.ts", before, after, JS)
    [finding] = _findings(findings, "public-api")
    assert finding.message == (
        "public class CancelError was removed: code that imports it now gets undefined or fails to load"
    )


def test_a_removed_python_class_is_one_finding(make_repo) -> None:
    before = (
        "class JSONWebSignatureSerializer:\n"
        "    def dumps(self, obj):\n        return obj\n\n"
        "    def loads(self, s):\n        return s\n\n\n"
        "def keep():\n    return 1\n"
    )
    findings = _change(make_repo, "pkg/jws.py", before, "def keep():\n    return 1\n")
    [finding] = _findings(findings, "public-api")
    assert finding.message == (
        "public class pkg.jws.JSONWebSignatureSerializer was removed: code that imports it now fails with ImportError"
    )


def test_call_sites_the_change_updates_are_not_left_to_check(make_repo) -> None:
    # black 00cd1e4a: can_omit_invisible_parens gained a required ``mode``; its one caller, updated
    # in the same commit, was still listed as "1 call site to check".
    lines = "def can_omit(rhs, line_length):\n    return len(rhs) < line_length\n"
    gen = "from pkg.lines import can_omit\n\n\ndef split(rhs, mode):\n    return can_omit(rhs, 88)\n"
    other = "from pkg.lines import can_omit\n\n\ndef other(rhs):\n    return can_omit(rhs, 80)\n"
    root = make_repo(
        {
            "pkg/__init__.py": "",
            "pkg/lines.py": lines,
            "pkg/gen.py": gen,
            "pkg/other.py": other,
            "tests/test_l.py": "def test_l():\n    pass\n",
        }
    )
    findings = _commit(
        root,
        {
            "pkg/lines.py": lines.replace("line_length)", "line_length, mode)"),
            "pkg/gen.py": gen.replace("can_omit(rhs, 88)", "can_omit(rhs, 88, mode)"),
        },
    )
    [finding] = _findings(findings, "public-api")
    assert "new required parameter 'mode'" in finding.message
    assert "(2 call sites, 1 updated in this change; to check: pkg/other.py:5)" in finding.message
    assert "pkg/gen.py" not in finding.message


def test_removing_a_module_getattr_names_the_attributes_it_served(make_repo) -> None:
    # itsdangerous 4bb03cd6: "public function itsdangerous.__getattr__ was removed"; nobody calls a
    # module's __getattr__: what users lose is ``itsdangerous.__version__``, which it served.
    before = (
        "import typing as t\n\n\nVALUE = 1\n\n\n"
        "def __getattr__(name: str) -> t.Any:\n"
        '    if name == "__version__":\n'
        "        import warnings\n\n"
        '        warnings.warn("deprecated", DeprecationWarning, stacklevel=2)\n'
        '        return "2.2"\n'
        '    if name in ("json", "Markup"):\n'
        "        return None\n"
        "    raise AttributeError(name)\n"
    )
    root = make_repo({"pkg/__init__.py": before, "tests/test_p.py": "def test_p():\n    pass\n"})
    findings = _commit(root, {"pkg/__init__.py": "VALUE = 1\n"})
    [finding] = _findings(findings, "public-api")
    assert finding.message == (
        "the module __getattr__ of pkg was removed: pkg.__version__, pkg.json, pkg.Markup, "
        "which it served, no longer resolve"
    )


def test_a_deprecation_test_removed_with_the_deprecation_shim_is_no_lost_test(make_repo) -> None:
    # starlette 856c904a: removing the ExceptionMiddleware import proxy (a module __getattr__ that
    # warned) and its test_exception_middleware_deprecation was "1 test removed without replacement".
    shim = (
        "import warnings\n\n\nclass HTTPException(Exception):\n    pass\n\n\n"
        '__deprecated__ = "ExceptionMiddleware"\n\n\n'
        "def __getattr__(name):\n"
        "    if name == __deprecated__:\n"
        '        warnings.warn("moved to pkg.middleware", DeprecationWarning, stacklevel=3)\n'
        "        return HTTPException\n"
        "    raise AttributeError(name)\n"
    )
    tests = (
        "import pytest\n\n\ndef test_repr():\n    assert True\n\n\n"
        "def test_exception_middleware_deprecation():\n"
        "    with pytest.warns(DeprecationWarning):\n"
        "        from pkg.exceptions import ExceptionMiddleware  # noqa: F401\n"
    )
    root = make_repo({"pkg/__init__.py": "", "pkg/exceptions.py": shim, "tests/test_exceptions.py": tests})
    findings = _commit(
        root,
        {
            "pkg/exceptions.py": "class HTTPException(Exception):\n    pass\n",
            "tests/test_exceptions.py": "def test_repr():\n    assert True\n",
        },
    )
    assert _findings(findings, "tests-removed") == []


# --------------------------------------------------------------------------- renames


def test_renaming_a_private_field_through_a_security_class_is_no_security_change(make_repo) -> None:
    # got d4ebbfe9 "Use private class internals in Options": ``this._internals.password`` became
    # ``this.#internals.password`` on every line: three "security-sensitive logic changed
    # (credentials): `password`" findings for a rename.
    before = (
        "export class Options {\n"
        "\tconstructor() {\n\t\tthis._internals = {password: '', username: ''};\n\t}\n\n"
        "\tget password() {\n\t\treturn this._internals.password;\n\t}\n\n"
        "\tset password(value) {\n\t\tthis._internals.password = value;\n\t}\n\n"
        "\tapply(url) {\n"
        "\t\tif (this._internals.password) {\n"
        "\t\t\turl.password = this._internals.password;\n"
        "\t\t\tthis._internals.password = '';\n\t\t}\n\t}\n}\n"
    )
    after = before.replace("this._internals", "this.#internals").replace(
        "export class Options {\n", "export class Options {\n\t#internals;\n\n"
    )
    findings = _change(make_repo, "source/options.js", before, after, JS)
    assert _findings(findings, "security-logic") == []


def test_a_real_change_beside_a_rename_is_still_a_security_change(make_repo) -> None:
    before = (
        "export class Options {\n"
        "\tapply(url) {\n"
        "\t\tif (this._internals.password) {\n"
        "\t\t\turl.password = this._internals.password;\n\t\t}\n"
        "\t\treturn this._internals.username;\n\t}\n}\n"
    )
    after = (
        "export class Options {\n"
        "\tapply(url) {\n"
        "\t\tif (this.#internals.password) {\n"
        "\t\t\turl.password = this.#internals.password;\n"
        "\t\t\tthis.#internals.password = '';\n\t\t}\n"
        "\t\treturn this.#internals.username;\n\t}\n}\n"
    )
    findings = _change(make_repo, "source/options.js", before, after, JS)
    [finding] = _findings(findings, "security-logic")
    assert "password" in finding.message


# --------------------------------------------------------------------------- missed security fixes


def test_a_prototype_pollution_fix_is_a_security_finding(make_repo) -> None:
    # express 2f64f68c "security patch for CVE-2024-51999": qs.parse's ``allowPrototypes: true``
    # became ``plainObjects: true``; semfora said nothing.
    before = (
        "var qs = require('qs');\n\n"
        "function parseExtendedQueryString(str) {\n"
        "  return qs.parse(str, {\n    allowPrototypes: true\n  });\n}\n\n"
        "module.exports = parseExtendedQueryString;\n"
    )
    after = before.replace("allowPrototypes: true", "plainObjects: true")
    root = make_repo(
        {"package.json": "{}\n", "lib/utils.js": before, "test/utils.js": "var assert = require('assert');\n"}
    )
    findings = _commit(root, {"lib/utils.js": after})
    [finding] = _findings(findings, "security-logic")
    assert finding.symbol == "parseExtendedQueryString"
    assert "prototype pollution" in finding.message


# --------------------------------------------------------------------------- TypeScript types


def test_dropping_typescript_type_assertions_is_no_security_change(make_repo) -> None:
    # got 1a1452c3 "Update dependencies": ``safeObjectAssign(this.#internals.https as Record<string,
    # unknown>, value as Record<string, unknown>)`` lost its casts: "security-sensitive logic changed
    # in Options.https (TLS verification)". A type assertion is gone when the code runs.
    before = (
        "export class Options {\n"
        "\tset https(value: HttpsOptions) {\n"
        "\t\tassign(this.internals.https as Record<string, unknown>, value as Record<string, unknown>);\n"
        "\t\tthis.internals.rejectUnauthorized = (value as HttpsOptions).rejectUnauthorized!;\n"
        "\t}\n}\n"
    )
    after = (
        "export class Options {\n"
        "\tset https(value: HttpsOptions) {\n"
        "\t\tassign(this.internals.https, value);\n"
        "\t\tthis.internals.rejectUnauthorized = value.rejectUnauthorized;\n"
        "\t}\n}\n"
    )
    root = make_repo(
        {"package.json": "{}\n", "source/options.ts": before, "test/options.ts": "import test from 'ava';\n"}
    )
    findings = _commit(root, {"source/options.ts": after})
    assert _findings(findings, "security-logic") == []


# --------------------------------------------------------------------------- package.json


def test_package_json_links_are_no_dependencies(make_repo) -> None:
    # express b274047a, 94546a3c: the homepage link moved to https and a funding URL was added:
    # "homepage is now installed from https://expressjs.com/, not from the package index".
    before = (
        '{\n  "name": "express",\n  "homepage": "http://expressjs.com/",\n'
        '  "dependencies": {\n    "qs": "^6.14.1"\n  }\n}\n'
    )
    after = (
        '{\n  "name": "express",\n  "homepage": "https://expressjs.com/",\n'
        '  "funding": {\n    "type": "opencollective",\n    "url": "https://opencollective.com/express"\n  },\n'
        '  "repository": "https://github.com/expressjs/express",\n'
        '  "dependencies": {\n    "qs": "^6.14.1"\n  }\n}\n'
    )
    root = make_repo({"package.json": before, "lib/express.js": "module.exports = {};\n"})
    findings = _commit(root, {"package.json": after})
    assert [f for f in findings if f.type == "dependency"] == []


def test_a_dependency_from_a_url_is_still_reported(make_repo) -> None:
    before = '{\n  "name": "app",\n  "dependencies": {\n    "qs": "^6.14.1"\n  }\n}\n'
    after = '{\n  "name": "app",\n  "dependencies": {\n    "qs": "https://example.com/qs.tgz"\n  }\n}\n'
    root = make_repo({"package.json": before, "lib/app.js": "module.exports = {};\n"})
    findings = _commit(root, {"package.json": after})
    [finding] = _findings(findings, "dependency-source")
    assert finding.message.startswith("qs is now installed from https://example.com/qs.tgz")


def test_a_bare_call_in_a_file_that_defines_the_name_is_not_a_call_site(make_repo) -> None:
    # black 69973fd6: blackd.main gained required parameters: "12 call sites to check:
    # scripts/check_pre_commit_rev_in_example.py:55, ..." were each script calling its own main().
    main = "def main(bind_host):\n    return bind_host\n"
    script = "def main():\n    return 0\n\n\nif __name__ == '__main__':\n    main()\n"
    user = "from pkg.server import main\n\n\ndef run():\n    return main('localhost')\n"
    root = make_repo(
        {
            "pkg/__init__.py": "",
            "pkg/server.py": main,
            "pkg/cli.py": user,
            "scripts/check.py": script,
            "tests/test_s.py": "def test_s():\n    pass\n",
        }
    )
    findings = _commit(root, {"pkg/server.py": main.replace("bind_host)", "bind_host, port)")})
    [finding] = _findings(findings, "public-api")
    assert (
        "(1 call site to check: pkg/cli.py:5 (run))" in finding.message
        or "(1 call site to check: pkg/cli.py:5)" in finding.message
    )
    assert "scripts/check.py" not in finding.message


def test_a_short_secret_says_which_name_holds_it(make_repo) -> None:
    # A short secret was masked to nothing: "secret assigned to a literal added (…)"; the reviewer
    # could not tell which of the line's names held it.
    root = make_repo({"app/__init__.py": "", "app/settings.py": "DEBUG = False\n"})
    findings = _commit(root, {"app/settings.py": "DEBUG = False\nDB_PASSWORD = 'h7Kq2zX'\n"})
    [secret] = [f for f in findings if f.type == "secrets"]
    assert secret.message == "secret assigned to a literal added (DB_PASSWORD = …); remove it and rotate it"
    assert "h7Kq" not in secret.message


def test_a_removed_constructor_says_the_class_still_constructs(make_repo) -> None:
    # got 599ae74e: "public method WeakableMap.constructor was removed": the class is still there
    # and still constructed; what changed is the arguments it takes.
    before = (
        "export class WeakableMap<K, V> {\n"
        "\tweakMap: WeakMap<Record<string, unknown>, V>;\n\n"
        "\tconstructor() {\n\t\tthis.weakMap = new WeakMap();\n\t}\n\n"
        "\tget(key: K): V | undefined {\n\t\treturn this.weakMap.get(key as any);\n\t}\n}\n"
    )
    after = (
        "export class WeakableMap<K, V> {\n"
        "\tweakMap = new WeakMap<Record<string, unknown>, V>();\n\n"
        "\tget(key: K): V | undefined {\n\t\treturn this.weakMap.get(key as any);\n\t}\n}\n"
    )
    findings = _change(make_repo, "source/weakable-map.ts", before, after, JS)
    [finding] = _findings(findings, "public-api")
    assert finding.message == (
        "the constructor of public class WeakableMap was removed: new WeakableMap(...) now takes "
        "the arguments of the default or inherited constructor"
    )


# --------------------------------------------------------------------------- round six: faults left


def test_stripping_line_endings_in_a_formatter_is_no_http_framing(make_repo) -> None:
    # black a51a0be7 "Fix fmt off block before with statement": ``prefix.lstrip('\\r\\n')`` in the
    # formatter's comment handling was "security-sensitive logic changed (HTTP message framing and
    # header injection)": a formatter reads source files, no message from the wire.
    before = "def handle_comment_block(prefix):\n    return prefix.strip()\n"
    after = "def handle_comment_block(prefix):\n    return prefix.lstrip('\\r\\n').strip()\n"
    findings = _change(make_repo, "pkg/comments.py", before, after)
    assert _findings(findings, "security-logic") == []


def test_stripping_line_endings_in_a_multipart_parser_is_still_framing(make_repo) -> None:
    # werkzeug b1916c0c (GHSA-hrfv-mqp8-q5rw): the same call in a multipart parser is the fix.
    before = "class MultipartDecoder:\n    def parse_data(self, data):\n        return data\n"
    after = (
        "class MultipartDecoder:\n    def parse_data(self, data):\n"
        "        data = data.lstrip('\\r\\n')\n        return data\n"
    )
    findings = _change(make_repo, "pkg/sansio/multipart.py", before, after)
    [finding] = _findings(findings, "security-logic")
    assert "HTTP message framing" in finding.message
    assert "requests can be smuggled or headers injected" in finding.message


MODELS = (
    "class Base:\n    def __init__(self, name, size=0):\n        self.name = name\n        self.size = size\n\n\n"
    "class Child(Base):\n"
    "    def __init__(self, name, size=0, colour='red'):\n"
    "        super().__init__(name, size)\n        self.colour = colour\n\n"
    "    def describe(self):\n        return self.name\n\n\n"
    "class Plain:\n    def __init__(self, path):\n        self.path = path\n\n"
    "    def show(self):\n        return self.path\n"
)


def test_a_subclass_init_removed_says_which_arguments_its_callers_lose(make_repo) -> None:
    # A subclass's __init__ removed was no finding at all (the base's __init__ "still defines
    # it"), though ``Child('x', colour='blue')`` now raises TypeError.
    after = MODELS.replace(
        "    def __init__(self, name, size=0, colour='red'):\n"
        "        super().__init__(name, size)\n        self.colour = colour\n\n",
        "    colour = 'red'\n\n",
    )
    findings = _change(make_repo, "pkg/models.py", MODELS, after)
    [finding] = _findings(findings, "public-api")
    assert finding.message == (
        "the constructor of public class pkg.models.Child was removed: Child(...) now takes the "
        "arguments of Base.__init__: parameter 'colour' removed"
    )


def test_an_init_removed_from_a_class_without_a_base_says_it_takes_no_arguments(make_repo) -> None:
    # "public method pkg.models.Plain.__init__ was removed": the class is still there and still
    # constructs; what its callers lose is the argument.
    after = MODELS.replace(
        "    def __init__(self, path):\n        self.path = path\n\n", "    path = None\n\n"
    )
    findings = _change(make_repo, "pkg/models.py", MODELS, after)
    [finding] = _findings(findings, "public-api")
    assert finding.message == (
        "the constructor of public class pkg.models.Plain was removed: Plain(...) now takes no "
        "arguments (object's constructor): parameter 'path' removed"
    )


def test_an_init_that_only_forwarded_to_its_base_breaks_nobody(make_repo) -> None:
    before = MODELS.replace(
        "    def __init__(self, name, size=0, colour='red'):\n"
        "        super().__init__(name, size)\n        self.colour = colour\n",
        "    def __init__(self, name, size=0):\n        super().__init__(name, size)\n",
    )
    after = before.replace(
        "    def __init__(self, name, size=0):\n        super().__init__(name, size)\n\n", ""
    )
    findings = _change(make_repo, "pkg/models.py", before, after)
    assert _findings(findings, "public-api") == []


def test_a_finding_on_a_name_alone_says_what_changed_and_why_it_matters(make_repo) -> None:
    # pyjwt 33022c25: "security-sensitive logic changed in PyJWT._validate_iss (signing and keys):
    # its name (`jwt`)": the reader learnt the name and nothing of the change.
    before = (
        "class PyJWT:\n    def _validate_iss(self, payload, issuer):\n"
        "        if payload.get('iss') != issuer:\n            raise ValueError('bad issuer')\n"
    )
    after = (
        "class PyJWT:\n    def _validate_iss(self, payload, issuer):\n"
        "        if isinstance(issuer, str):\n            issuer = [issuer]\n"
        "        if payload.get('iss') not in issuer:\n            raise ValueError('bad issuer')\n"
    )
    findings = _change(make_repo, "pkg/api_jwt.py", before, after)
    [finding] = _findings(findings, "security-logic")
    assert "its name (`jwt`)" in finding.message
    assert "the change: `if isinstance(issuer, str):` (+3 -1)" in finding.message
    assert finding.message.endswith("if wrong, forged or tampered data can pass as signed, or a key can leak")


def test_a_url_parser_of_an_http_client_is_no_network_use(make_repo) -> None:
    # requests 9a8a826f "Check if host is invalid for proxy": ``parse_url(proxy)`` from
    # urllib3.util was "new network use in HTTPAdapter.get_connection: parse_url".
    before = "class HTTPAdapter:\n    def get_connection(self, proxy):\n        return proxy\n"
    after = (
        "from urllib3.util import parse_url\n\n\n"
        "class HTTPAdapter:\n    def get_connection(self, proxy):\n"
        "        if not parse_url(proxy).host:\n            raise ValueError(proxy)\n        return proxy\n"
    )
    findings = _change(make_repo, "pkg/adapters.py", before, after)
    assert [f for f in findings if (f.rule or "").startswith("new-")] == []


def test_a_change_to_what_counts_as_an_absolute_url_is_a_security_finding(make_repo) -> None:
    # axios 07a661a2 (CVE-2024-39338): ``//host`` stopped counting as an absolute URL; a request
    # for a path no longer goes to another host. semfora said nothing.
    before = "export default function isAbsoluteURL(url) {\n  return /^([a-z][a-z\\d+\\-.]*:)?\\/\\//i.test(url);\n}\n"
    after = before.replace(":)?\\/", ":)\\/")
    findings = _change(make_repo, "lib/helpers/isAbsoluteURL.js", before, after, JS)
    [finding] = _findings(findings, "security-logic")
    assert "redirects and origins" in finding.message and "isAbsoluteURL" in finding.message


# --------------------------------------------------------------------------- axios


def test_a_fetch_credentials_mode_is_no_secret(make_repo) -> None:
    # axios a3ff99b5 "add fetch adapter": ``withCredentials = 'same-origin'`` blocked the merge as
    # "secret assigned to a literal added (withCredentials = same…); remove it and rotate it".
    before = "export default function fetchAdapter(config) {\n  return config;\n}\n"
    after = (
        "export default function fetchAdapter(config) {\n"
        "  let { withCredentials = 'same-origin', credentials = 'include' } = config;\n"
        "  return [withCredentials, credentials];\n}\n"
    )
    findings = _change(make_repo, "lib/adapters/fetch.js", before, after, JS)
    assert [f for f in findings if f.type == "secrets"] == []


def test_a_real_looking_password_in_code_still_blocks(make_repo) -> None:
    findings = _change(
        make_repo,
        "lib/config.js",
        "export const a = 1;\n",
        "export const a = 1;\nconst password = 'h7Kq2zX9';\n",
        JS,
    )
    [secret] = [f for f in findings if f.type == "secrets"]
    assert secret.blocking


def test_a_build_output_copies_its_sources_assignments(make_repo) -> None:
    # axios release commits: every bundle and source map under dist/ repeated the source's
    # ``withCredentials = …``: seven blocking "secrets" a release.
    bundle = "var withCredentials = 'h7Kq2zX9mm';\n"
    findings = _change(make_repo, "dist/axios.min.js", "var a = 1;\n", bundle, JS)
    assert [f for f in findings if f.type == "secrets"] == []
    key = "ghp_" + "Zq8vR2xLm0PwT5nY7bKc3dFg9hJ1sA4eU6iO"
    findings = _change(make_repo, "dist/axios.js", "var a = 1;\n", f"var token = '{key}';\n", JS)
    assert [f.blocking for f in findings if f.type == "secrets"] == [True]  # a key format still blocks


def test_a_function_made_a_method_of_a_class_is_not_called_where_it_is_defined(make_repo) -> None:
    # axios ab77a40e: AxiosHeaders' ``set: function(...)`` became the class method ``set(...) {``:
    # "function set was removed but lib/core/AxiosHeaders.js still calls it at :77
    # (AxiosHeaders.set)", line 77 being the method's own definition; and the constructor
    # function that became a class was "public function AxiosHeaders was removed".
    before = (
        "function AxiosHeaders(headers) {\n  this.headers = headers;\n}\n\n"
        "function set(header, value) {\n  return [header, value];\n}\n\n"
        "export default AxiosHeaders;\n"
    )
    after = (
        "class AxiosHeaders {\n  constructor(headers) {\n    this.headers = headers;\n  }\n\n"
        "  set(header, value) {\n    return [header, value];\n  }\n}\n\n"
        "export default AxiosHeaders;\n"
    )
    findings = _change(make_repo, "lib/core/AxiosHeaders.js", before, after, JS)
    assert _findings(findings, "removed-still-called") == []
    assert [
        f.message for f in _findings(findings, "public-api") if "AxiosHeaders was removed" in f.message
    ] == []


def test_a_streams_chunk_size_is_no_http_framing(make_repo) -> None:
    # axios a3ff99b5: ``readBytes(iterable, chunkSize)`` in a stream helper was "HTTP message
    # framing and header injection: `chunkSize`"; a chunk size is how much a read takes.
    before = "export function readBytes(stream) {\n  return stream.read();\n}\n"
    after = "export function readBytes(stream, chunkSize) {\n  return stream.read(chunkSize);\n}\n"
    findings = _change(make_repo, "lib/helpers/trackStream.js", before, after, JS)
    assert _findings(findings, "security-logic") == []


# --------------------------------------------------------------------------- werkzeug


def test_a_comparison_beside_an_escape_call_is_no_escaping_change(make_repo) -> None:
    # werkzeug e1236268 "test with python 3.13": ``if sys.version_info < (3, 13):`` in a function
    # that calls markupsafe.escape was "escaping and templating: calls `markupsafe.escape`, `<`".
    before = (
        "import sys\n\nfrom markupsafe import escape\n\n\n"
        "def render(lines):\n    out = [escape(x) for x in lines]\n    return out\n"
    )
    after = (
        "import sys\n\nfrom markupsafe import escape\n\n\n"
        "def render(lines):\n    out = [escape(x) for x in lines]\n"
        "    if sys.version_info < (3, 13):\n        out = out[1:]\n    return out\n"
    )
    findings = _change(make_repo, "pkg/debug/tbtools.py", before, after)
    assert _findings(findings, "security-logic") == []


def test_markup_built_beside_an_escape_call_is_still_escaping(make_repo) -> None:
    before = "from markupsafe import escape\n\n\ndef render(x):\n    return escape(x)\n"
    after = "from markupsafe import escape\n\n\ndef render(x):\n    return '<pre>' + escape(x) + '</pre>'\n"
    findings = _change(make_repo, "pkg/debug/tbtools.py", before, after)
    [finding] = _findings(findings, "security-logic")
    assert "escaping and templating" in finding.message


def test_a_long_statement_edited_at_its_end_is_quoted_where_it_changed(make_repo) -> None:
    # werkzeug 32e69512: "the change: `def set_cookie(self, key, value='', max_age=None, …`" hid
    # the new ``partitioned`` argument at the end of the call.
    call = "        self.headers.add(self.header_name, dump_cookie(key, value=value, expires=expires, path=path{}))\n"
    before = (
        "class Response:\n    def set_cookie(self, key, value='', expires=None, path=None):\n"
        + call.format("")
    )
    after = (
        "class Response:\n    def set_cookie(self, key, value='', expires=None, path=None, partitioned=False):\n"
        + call.format(", partitioned=partitioned")
    )
    findings = _change(make_repo, "pkg/response.py", before, after)
    [finding] = _findings(findings, "security-logic")
    assert "path=path, partitioned=partitioned))`" in finding.message


def test_an_enumeration_of_header_values_is_no_security_logic(make_repo) -> None:
    # werkzeug 0d29255f, f96520c7: "security-sensitive logic added in CORP (redirects and
    # origins): `SAME_ORIGIN`" for an Enum of a header's values.
    before = "import enum\n"
    after = (
        "import enum\n\n\nclass SecFetchSite(str, enum.Enum):\n"
        '    CROSS_SITE = "cross-site"\n    SAME_ORIGIN = "same-origin"\n    NONE = "none"\n'
    )
    findings = _change(make_repo, "pkg/http.py", before, after)
    assert _findings(findings, "security-logic") == []


def test_type_arguments_given_to_a_called_class_are_no_logic_change(make_repo) -> None:
    # flask 52df9eed "drop end of life python versions": ``secret_key = ConfigAttribute[str |
    # bytes | None]("SECRET_KEY")`` was "security-sensitive logic changed in App (signing and
    # keys): `secret_key`"; requests 561e4b68 gave its cookie jar's base ``MutableMapping`` type
    # arguments.
    before = (
        "from collections.abc import MutableMapping\n\n\nclass ConfigAttribute:\n"
        "    def __init__(self, name):\n        self.name = name\n\n\n"
        "class App:\n    secret_key = ConfigAttribute('SECRET_KEY')\n\n\n"
        "class CookieJar(MutableMapping):\n    cookie_policy = None\n"
    )
    after = (
        "from collections.abc import MutableMapping\n\n\nclass ConfigAttribute:\n"
        "    def __init__(self, name):\n        self.name = name\n\n\n"
        "class App:\n    secret_key = ConfigAttribute[str | bytes | None]('SECRET_KEY')\n\n\n"
        "class CookieJar(MutableMapping[str, str | None]):\n    cookie_policy = None\n"
    )
    findings = _change(make_repo, "pkg/app.py", before, after)
    assert _findings(findings, "security-logic") == []
