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
