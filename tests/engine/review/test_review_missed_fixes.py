"""Security fixes `semfora ci` did not see, and evidence it should not have counted: each test is
one real fix (or one kind of false evidence), rebuilt as a small real repository."""

from __future__ import annotations

from engine.review.findings import Finding
from tests.engine.review.conftest import commit_and_review as _commit

JS = {"package.json": "{}\n", "test/base.js": "import test from 'ava';\n"}
PYTHON = {"pkg/__init__.py": "", "tests/test_base.py": "def test_base():\n    pass\n"}


def _security(items: list[Finding]) -> list[Finding]:
    return [f for f in items if f.type == "security" and f.severity != "info"]


def _change(make_repo, path: str, before: str, after: str, project: dict[str, str]) -> list[Finding]:
    root = make_repo({**project, path: before})
    return _commit(root, {path: after})


# --------------------------------------------------------------------------- default exports

XHR = """import cookies from '../helpers/cookies.js';
import isURLSameOrigin from '../helpers/isURLSameOrigin.js';

const isXHRAdapterSupported = typeof XMLHttpRequest !== 'undefined';

export default isXHRAdapterSupported && function (config) {
  const request = new XMLHttpRequest();
  const fullPath = config.baseURL + config.url;
  if (config.isStandardBrowserEnv) {
    // Add xsrf header
    const xsrfValue = (config.withCredentials || isURLSameOrigin(fullPath))
      && config.xsrfCookieName && cookies.read(config.xsrfCookieName);
    if (xsrfValue) {
      request.setRequestHeader(config.xsrfHeaderName, xsrfValue);
    }
  }
  return request;
}
"""


def test_a_fix_inside_an_anonymous_default_export_is_seen(make_repo) -> None:
    # axios 96ee232b, CVE-2023-45857: the XSRF token was sent to any host with withCredentials.
    # The adapter is ``export default ... && function (config) {...}``: no symbol held it, and
    # the fix raised nothing.
    fixed = XHR.replace(
        "(config.withCredentials || isURLSameOrigin(fullPath))\n      &&", "isURLSameOrigin(fullPath) &&"
    )
    [finding] = _security(_change(make_repo, "lib/adapters/xhr.js", XHR, fixed, JS))
    assert finding.file == "lib/adapters/xhr.js" and finding.rule == "security-logic"
    assert "the default export of lib/adapters/xhr.js" in finding.message
    assert "xsrf" in finding.message.lower()


# --------------------------------------------------------------------------- regular expressions

COMBINE = """export default function combineURLs(baseURL, relativeURL) {
  return relativeURL
    ? baseURL.replace(/\\/+$/, '') + '/' + relativeURL.replace(/^\\/+/, '')
    : baseURL;
}
"""
TRIM = """function isString(val) {
  return typeof val === 'string';
}

function trim(str) {
  return str.replace(/^\\s*/, '').replace(/\\s*$/, '');
}

export default {isString, trim};
"""


def test_a_redos_fix_in_a_javascript_pattern_is_a_security_finding(make_repo) -> None:
    # axios 5e7ad38f: ``/\\/+$/`` took seconds on a base URL of many slashes; the fix changed only
    # the pattern, which no term of the catalogue names.
    fixed = COMBINE.replace("/\\/+$/", "/\\/?\\/$/")
    [finding] = _security(_change(make_repo, "lib/helpers/combineURLs.js", COMBINE, fixed, JS))
    assert finding.symbol == "combineURLs" and finding.rule == "security-logic"
    assert "regular expressions that backtrack" in finding.message and "`\\/+$`" in finding.message
    assert "ReDoS" in finding.message


def test_a_backtracking_pattern_replaced_by_a_string_method_is_a_security_finding(make_repo) -> None:
    # axios 5b457116, CVE-2021-3749: ``trim`` now calls ``str.trim()`` (its fallback pattern keeps
    # a ``\\s+$`` branch, another pattern than the one removed).
    fixed = TRIM.replace(
        "return str.replace(/^\\s*/, '').replace(/\\s*$/, '');",
        "return str.trim ? str.trim() : str.replace(/^\\s+|\\s+$/g, '');",
    )
    [finding] = _security(_change(make_repo, "lib/utils.js", TRIM, fixed, JS))
    assert finding.symbol == "trim" and "`\\s*$`" in finding.message


def test_a_nested_repeat_removed_from_a_python_pattern_is_a_security_finding(make_repo) -> None:
    before = (
        "import re\n\n\ndef split_words(text):\n"
        "    match = re.match(r'^(\\w+\\s?)*$', text)\n    return match.group(0).split() if match else []\n"
    )
    after = "import re\n\n\ndef split_words(text):\n    return re.findall(r'\\w+', text)\n"
    [finding] = _security(_change(make_repo, "pkg/words.py", before, after, PYTHON))
    assert finding.symbol == "split_words" and "`^(\\w+\\s?)*$`" in finding.message


def test_pattern_edits_that_keep_or_never_had_backtracking_raise_nothing(make_repo) -> None:
    # A flag added to the same backtracking pattern, and a linear pattern edited: no ReDoS fix.
    flagged = TRIM.replace("/\\s*$/", "/\\s*$/u").replace(
        "function isString(val) {", "function isString(v) {"
    )
    assert _security(_change(make_repo, "lib/utils.js", TRIM, flagged, JS)) == []
    before = "const DIGITS = 1;\nexport function digits(s) {\n  return s.replace(/[^0-9]/g, '');\n}\n"
    after = before.replace("/[^0-9]/g", "/[^0-9.]/g")
    assert _security(_change(make_repo, "lib/num.js", before, after, JS)) == []


# --------------------------------------------------------------------------- message texts

FETCH = """import logging

log = logging.getLogger(__name__)


def fetch(session, url, tries):
    for _ in range(tries):
        response = session.send(url)
        if response.ok:
            return response
    return None
"""


def test_the_text_of_a_log_line_or_warning_is_no_evidence(make_repo) -> None:
    # A retry loop that now logs each failure: "redirect" and "verify" in the messages' text were
    # read as a change to redirect handling and TLS verification.
    after = FETCH.replace("    for _ in range(tries):", "    for attempt in range(tries):").replace(
        "            return response\n",
        "            return response\n"
        '        log.warning("attempt %d failed; not following the redirect to %s", attempt, response.url)\n'
        '        warnings.warn("set verify=True and a CA bundle to check certificates")\n',
    )
    assert _security(_change(make_repo, "pkg/client.py", FETCH, after, PYTHON)) == []


def test_the_text_of_a_javascript_console_message_is_no_evidence(make_repo) -> None:
    before = "export function fetchAll(client, urls) {\n  return urls.map((u) => client.get(u));\n}\n"
    after = (
        "export function fetchAll(client, urls) {\n"
        "  console.warn(`fetching ${urls.length} urls; each redirect is followed, certificates verified`);\n"
        "  return urls.filter(Boolean).map((u) => client.get(u));\n}\n"
    )
    assert _security(_change(make_repo, "lib/client.js", before, after, JS)) == []


def test_a_security_term_in_code_next_to_a_log_line_still_counts(make_repo) -> None:
    after = FETCH.replace(
        "        response = session.send(url)\n",
        '        response = session.send(url, cert_reqs="CERT_NONE")\n        log.debug("sent %s", url)\n',
    )
    [finding] = _security(_change(make_repo, "pkg/client.py", FETCH, after, PYTHON))
    assert "cert_reqs" in finding.message


SESSION = """import logging

from requests import Session

logger = logging.getLogger(__name__)


class PipSession(Session):
    def request(self, method, url, **kwargs):
        kwargs.setdefault("timeout", 10)
        return super().request(method, url, **kwargs)
"""


def test_an_added_override_of_a_concern_named_method_is_read_as_a_change_of_it(make_repo) -> None:
    # pip e407d065: ``get_redirect_target`` overridden to refuse file:// redirects. Its only term
    # was in the warning's text ("Not following redirect ..."); the override itself is the change.
    after = SESSION.replace(
        "    def request(",
        "    def get_redirect_target(self, resp):\n"
        "        target = super().get_redirect_target(resp)\n"
        "        if target and target.split(':', 1)[0].lower() not in ('http', 'https'):\n"
        '            logger.warning("Not following redirect to %s", target)\n'
        "            return None\n"
        "        return target\n\n"
        "    def request(",
    )
    [finding] = _security(_change(make_repo, "pkg/session.py", SESSION, after, PYTHON))
    assert finding.symbol == "PipSession.get_redirect_target"
    assert "its name (`redirect`)" in finding.message


# --------------------------------------------------------------------------- sixth batch (waitress, node-fetch)


def test_a_repeated_group_whose_separator_its_item_also_matches_backtracks(make_repo) -> None:
    # node-fetch 28802387: ``/^(.+\\.)*localhost$/`` (``.+`` eats the dots too) replaced by string checks.
    before = "export function isLocal(url) {\n  return /^(.+\\.)*localhost$/.test(url.host);\n}\n"
    after = "export function isLocal(url) {\n  return url.host === 'localhost' || url.host.endsWith('.localhost');\n}\n"
    [finding] = _security(_change(make_repo, "src/utils/local.js", before, after, JS))
    assert "`^(.+\\.)*localhost$`" in finding.message
    # A repeated group led by a separator the item cannot match is linear: no finding.
    linear = "export function version(s) {\n  return /^\\d+(\\.\\d+)*$/.test(s);\n}\n"
    assert (
        _security(
            _change(
                make_repo,
                "src/utils/v.js",
                linear,
                linear.replace("(s)", "(text)").replace("test(s)", "test(text)"),
                JS,
            )
        )
        == []
    )


def test_a_redirect_that_now_checks_the_protocol_too_is_seen(make_repo) -> None:
    # node-fetch e87b093f: credentials kept on a redirect from https to http, through a new
    # ``isSameProtocol`` the redirect branch now calls.
    is_js = "export const isDomainOrSubdomain = (a, b) => new URL(a).hostname === new URL(b).hostname;\n"
    index = (
        "import {isDomainOrSubdomain} from './is.js';\n\n"
        "export function follow(request, locationURL, headers) {\n"
        "  if (!isDomainOrSubdomain(request.url, locationURL)) {\n"
        "    headers.clear();\n  }\n  return headers;\n}\n"
    )
    root = make_repo({**JS, "src/is.js": is_js, "src/index.js": index})
    findings = _commit(
        root,
        {
            "src/is.js": is_js
            + "export const isSameProtocol = (a, b) => new URL(a).protocol === new URL(b).protocol;\n",
            "src/index.js": index.replace(
                "import {isDomainOrSubdomain}", "import {isDomainOrSubdomain, isSameProtocol}"
            ).replace(
                "if (!isDomainOrSubdomain(request.url, locationURL)) {",
                "if (!isDomainOrSubdomain(request.url, locationURL) || !isSameProtocol(request.url, locationURL)) {",
            ),
        },
    )
    assert "follow" in {f.symbol for f in _security(findings)}


PARSER = """class HTTPRequestParser:
    def parse_header(self, header_plus):
        headers = {}
        for line in header_plus.split(b"\\r\\n"):
            index = line.find(b":")
            if index > 0:
                key = line[:index]
                value = line[index + 1 :].strip()
                headers[key.upper().replace(b"-", b"_")] = value
        return headers
"""


def test_a_change_to_a_parse_header_method_is_framing(make_repo) -> None:
    # waitress 6d4dab6b: headers whose name has an underscore dropped (``X_Auth`` spoofing
    # ``X-Auth``), in ``parse_header``, which the name pattern ``parse_headers`` did not cover.
    after = PARSER.replace(
        "                value = line",
        '                if b"_" in key:\n                    continue\n                value = line',
    )
    [finding] = _security(_change(make_repo, "pkg/parser.py", PARSER, after, PYTHON))
    assert finding.symbol == "HTTPRequestParser.parse_header" and "framing" in finding.message


ERROR = """class Error:
    code = 400
    reason = "Bad Request"

    def to_response(self):
        status = f"{self.code} {self.reason}"
        tag = "\\r\\n\\r\\n(generated by waitress)"
        body = (self.reason + tag).encode("utf-8")
        return status, [("Content-Type", "text/plain")], body
"""


def test_a_line_end_in_the_prose_of_an_error_page_is_not_framing(make_repo) -> None:
    # waitress 4d07f401: the error page's footer names the server's ident; "\\r\\n" in its text
    # was read as HTTP framing and the change as security logic.
    after = ERROR.replace(
        '    def to_response(self):\n        status = f"{self.code} {self.reason}"\n        tag = "\\r\\n\\r\\n(generated by waitress)"',
        '    def to_response(self, ident=None):\n        status = f"{self.code} {self.reason}"\n'
        '        tag = "\\r\\n\\r\\n(generated by " + ident + ")" if ident else "\\r\\n\\r\\n(generated by server)"',
    )
    assert after != ERROR
    assert _security(_change(make_repo, "pkg/utilities.py", ERROR, after, PYTHON)) == []
    # A status line written by hand is framing still.
    framed = ERROR.replace(
        'tag = "\\r\\n\\r\\n(generated by waitress)"', 'tag = "HTTP/1.1 400 Bad Request\\r\\n"'
    )
    assert [f.symbol for f in _security(_change(make_repo, "pkg/wire.py", ERROR, framed, PYTHON))] == [
        "Error.to_response"
    ]


FOLLOW = """export function follow(request, reject) {
  if (request.redirect === 'error') {
    reject(new Error(`redirect mode is set to error: ${request.url}`, 'no-redirect'));
    return false;
  }
  return true;
}
"""


def test_a_javascript_change_to_a_message_text_only_is_no_security_logic(make_repo) -> None:
    # node-fetch 1e99050f: the thrown error's wording changed; "redirect" in it raised a finding.
    after = FOLLOW.replace(
        "`redirect mode is set", "`uri requested responds with a redirect, redirect mode is set"
    )
    assert _security(_change(make_repo, "src/follow.js", FOLLOW, after, JS)) == []
    # The same line with a changed condition is still read.
    changed = FOLLOW.replace("request.redirect === 'error'", "request.redirect !== 'follow'")
    assert [f.symbol for f in _security(_change(make_repo, "src/follow2.js", FOLLOW, changed, JS))] == [
        "follow"
    ]
