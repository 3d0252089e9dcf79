"""The whole CI review: rules alone, and with Claude (the fake Anthropic server) reviewing the diff."""

from __future__ import annotations

import json
import time

import pytest

from engine.llm.base import ModelUnavailable
from engine.review.ci import review
from engine.review.rules import RULES
from tests.conftest import git

APP = "def handler(request):\n    return request\n"
CHANGED = (
    "import requests\n\n\ndef handler(request, retries=3):\n"
    "    data = requests.post('https://api.example.com', json=request)\n    return data\n"
)
SECRET = "sk-ant-api03-" + "R" * 40


def _repo_with_change(make_repo, extra: str = ""):
    root = make_repo({"app.py": APP, "tests/test_app.py": "def test_handler():\n    assert True\n"})
    (root / "app.py").write_text(CHANGED + extra)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "call the API")
    return root


def test_without_a_model_the_rules_run_alone_and_say_so(make_repo) -> None:
    root = _repo_with_change(make_repo)
    report = review(root, "commit", commit="HEAD", fail_on="medium")
    assert report.model is None and report.usage is None
    assert "deterministic review only" in report.summary and "ANTHROPIC_API_KEY" in report.summary
    # One file, one changed symbol, one finding and two remarks: each count reads in its own number.
    assert report.summary.startswith(
        "1 file, 1 symbol change; 1 finding (0 high, 1 medium, 0 low), 2 remarks. "
    )
    assert report.status == "changes_requested"
    assert report.risk_score == "medium"
    data = report.to_json()
    assert set(data) >= {"status", "risk_score", "summary", "findings", "changed_symbols", "model", "usage"}
    assert {"severity", "type", "message", "file", "line", "symbol"} <= set(data["findings"][0])
    assert data["changed_symbols"][0]["symbol"] == "handler"


def test_claude_reviews_the_semantic_diff(make_repo, fake_anthropic) -> None:
    root = _repo_with_change(make_repo, extra=f"\nKEY = '{SECRET}'\n")
    fake_anthropic.reply(
        json.dumps(
            {
                "summary": "Posts user input to an external API without validation.",
                "findings": [
                    {
                        "severity": "high",
                        "type": "security",
                        "message": "request is forwarded unvalidated",
                        "file": "app.py",
                        "line": 5,
                        "symbol": "handler",
                    },
                    {"severity": "bogus", "type": "weird", "message": "normalised"},
                ],
            }
        )
    )
    report = review(
        root, "commit", commit="HEAD", fail_on="high", intent="Forward handler requests to the API"
    )
    sent = fake_anthropic.message_requests()
    assert len(sent) == 1
    text = sent[0].all_text
    # The model saw the semantic diff, the changed lines and the call-graph context...
    assert "handler" in text and "requests.post" in text and "signature_before" in text
    assert "Findings already made by the rules" in text
    assert "Stated intent" in text and "Forward handler requests to the API" in text
    # ...but never the secret that the change adds.
    assert SECRET not in text
    model_findings = [f for f in report.findings if f.source == "model"]
    assert [(f.severity, f.type, f.symbol) for f in model_findings] == [
        ("high", "security", "handler"),
        ("low", "correctness", None),
    ]
    assert report.model and report.usage and report.usage["output_tokens"] > 0
    assert "Posts user input" in report.summary
    assert report.status == "blocked"  # the secret blocks, whatever the model says


def test_malformed_model_reply_becomes_a_note(make_repo, fake_anthropic) -> None:
    root = _repo_with_change(make_repo)
    fake_anthropic.reply("I think it is fine, mostly.")
    report = review(root, "commit", commit="HEAD")
    assert any("no JSON" in n for n in report.notes)
    assert all(f.source == "rule" for f in report.findings)


def test_a_named_model_that_cannot_be_used_is_unavailable(make_repo) -> None:
    root = _repo_with_change(make_repo)
    with pytest.raises(ModelUnavailable) as err:
        review(root, "commit", commit="HEAD", model="claude-sonnet-4-5")
    assert err.value.exit_code == 3


def test_no_changes_is_approved_without_a_model_call(make_repo, fake_anthropic) -> None:
    root = make_repo({"a.py": "def a():\n    return 1\n"})
    git(root, "commit", "-q", "--allow-empty", "-m", "empty")
    report = review(root, "commit", commit="HEAD")
    assert report.status == "approved" and report.findings == ()
    assert "nothing changed" in report.summary
    assert fake_anthropic.message_requests() == []


def test_a_model_finding_never_points_outside_the_repository(make_repo, fake_anthropic) -> None:
    """The model's ``file`` went verbatim into annotations and SARIF locations: ``/etc/passwd`` or
    ``../../x.py`` would point a CI annotation outside the repository."""
    root = _repo_with_change(make_repo)
    findings = [
        {"severity": "medium", "type": "correctness", "message": "m1", "file": "/etc/passwd", "line": 3},
        {"severity": "medium", "type": "correctness", "message": "m2", "file": "../../x.py", "line": 4},
        {"severity": "medium", "type": "correctness", "message": "m3", "file": "./app.py", "line": 5},
    ]
    fake_anthropic.reply(json.dumps({"summary": "s", "findings": findings}))
    report = review(root, "commit", commit="HEAD")
    located = {f.message: (f.file, f.line) for f in report.findings if f.source == "model"}
    assert located == {"m1": (None, None), "m2": (None, None), "m3": ("app.py", 5)}


def test_a_long_review_says_what_it_is_doing(make_repo) -> None:
    """Django's root commit (6,809 files) reviewed for minutes without a line of output: a CI log
    could not tell it from a hang. ``progress`` hears every file read and every phase."""
    root = _repo_with_change(make_repo)
    heard: list[tuple[str, int, int]] = []
    review(root, "commit", commit="HEAD", use_model=False, progress=lambda *e: heard.append(e))
    phases = list(dict.fromkeys(p for p, _, _ in heard))
    assert phases == [
        "reading changed files",
        "matching moves and renames",
        "finding callers",
        *(f"running the review rules ({name})" for name in RULES),
    ]
    assert [(d, t) for p, d, t in heard if p == "reading changed files"] == [(0, 1)]


def test_the_model_phase_is_heard_only_when_a_model_is_asked(make_repo, fake_anthropic) -> None:
    root = _repo_with_change(make_repo)
    heard: list[str] = []
    review(root, "commit", commit="HEAD", environ={}, progress=lambda p, d, t: heard.append(p))
    assert "asking the model" not in heard  # no model configured: none is asked
    fake_anthropic.reply(json.dumps({"summary": "fine", "findings": []}))
    heard.clear()
    review(root, "commit", commit="HEAD", progress=lambda p, d, t: heard.append(p))
    assert heard[-1] == "asking the model"


def test_a_critical_model_finding_gates_and_an_empty_one_is_dropped(make_repo, fake_anthropic) -> None:
    """A model reply with "severity": "critical" became a low finding (the gate approved what the
    model called critical); one with an empty message was listed as a finding with nothing in it."""
    root = _repo_with_change(make_repo)
    fake_anthropic.reply(
        json.dumps(
            {
                "summary": "One real problem.",
                "findings": [
                    {
                        "severity": "Critical",
                        "type": "security",
                        "message": "user input reaches the shell",
                        "file": "app.py",
                        "line": "5",
                    },
                    {"severity": "minor", "type": "style", "message": "  "},
                ],
            }
        )
    )
    report = review(root, "commit", commit="HEAD", fail_on="high")
    model = [f for f in report.findings if f.source == "model"]
    assert [(f.severity, f.file, f.line) for f in model] == [("high", "app.py", 5)]
    assert report.status == "changes_requested"


VENDORED_BEFORE = "def get(url):\n    return url\n\n\ndef run(cmd):\n    return cmd\n"
VENDORED_AFTER = (
    "import subprocess\nimport requests\n\n\ndef get(url, timeout):\n"
    "    return requests.get(url, timeout=timeout)\n\n\ndef run(cmd):\n"
    "    return subprocess.run(cmd, shell=True)\n"
)


def _bump_vendored(make_repo, extra: dict[str, str] | None = None):
    root = make_repo(
        {
            "src/pkg/core.py": "def api(x):\n    return x\n",
            "src/pkg/_vendor/lib/__init__.py": VENDORED_BEFORE,
            "node_modules/left-pad/index.js": "function pad(s) { return s }\n",
            "tests/test_core.py": "def test_api():\n    assert True\n",
        }
    )
    (root / "src/pkg/_vendor/lib/__init__.py").write_text(VENDORED_AFTER)
    (root / "node_modules/left-pad/index.js").write_text(
        "const cp = require('child_process')\nfunction pad(s) { return cp.execSync(s) }\n"
    )
    for rel, text in (extra or {}).items():
        (root / rel).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "bump the vendored lib")
    return root


def test_a_vendored_library_bump_is_one_remark_not_a_flood_of_findings(make_repo) -> None:
    """pip-style `src/pkg/_vendor/` bumped: a HIGH new-subprocess, a MEDIUM new-network and an
    untested-change on the library's own code changed the verdict of the project's commit."""
    root = _bump_vendored(make_repo)
    report = review(root, "commit", commit="HEAD", use_model=False)
    assert report.status == "approved" and not report.findings, [f.message for f in report.findings]
    vendored = [r for r in report.remarks if r.rule == "vendored-code"]
    assert [r.message for r in vendored] == [
        "vendored code changed: 2 files under node_modules/, src/pkg/_vendor/ (+9 -4), scanned for "
        "secrets only (`[review] vendored_dirs = []` in .semfora.toml reviews it like the project's own)"
    ]
    assert "only vendored code changed" in report.summary
    # The report still lists what changed.
    assert {f["path"] for f in report.files} == {
        "src/pkg/_vendor/lib/__init__.py",
        "node_modules/left-pad/index.js",
    }


def test_a_secret_in_vendored_code_still_blocks(make_repo) -> None:
    root = _bump_vendored(
        make_repo, {"src/pkg/core.py": f"def api(x):\n    return x\n\n\nKEY = '{SECRET}'\n"}
    )
    (root / "src/pkg/_vendor/lib/conf.py").write_text(f"TOKEN = '{SECRET}'\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "vendored config")
    report = review(root, "commit", commit="HEAD", use_model=False)
    assert report.status == "blocked"
    assert [f.file for f in report.findings if f.blocking] == ["src/pkg/_vendor/lib/conf.py"]


def test_vendored_code_is_reviewed_when_the_repository_asks_but_never_hidden_by_it(make_repo) -> None:
    """`[review] vendored_dirs = []` reviews vendored code like the project's own; an untrusted
    .semfora.toml cannot add the project's own directory to hide a change from review."""
    root = _bump_vendored(make_repo, {".semfora.toml": "[review]\nvendored_dirs = []\n"})
    report = review(root, "commit", commit="HEAD", use_model=False)
    assert {f.rule for f in report.findings} >= {"new-subprocess", "new-network"}
    assert not [r for r in report.remarks if r.rule == "vendored-code"]
    root = make_repo({"src/pkg/core.py": "def api(x):\n    return x\n"})
    (root / ".semfora.toml").write_text('[review]\nvendored_dirs = ["vendor", "pkg"]\n')
    (root / "src/pkg/core.py").write_text("import os\n\n\ndef api(x):\n    return os.system(x)\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "hide it")
    report = review(root, "commit", commit="HEAD", use_model=False)
    assert [f.rule for f in report.findings] == ["new-subprocess"]


def test_a_submodule_bump_says_which_commits_not_unreadable(make_repo) -> None:
    """A commit moving a submodule listed `deps/sub +1 -1 (unreadable on the target side (a symlink
    out of the repository or a special file))`: it is a submodule, and its commits are what moved."""
    sub = make_repo({"lib.py": "x = 1\n"})
    first = git(sub, "rev-parse", "HEAD").strip()
    root = make_repo({"app.py": "def run():\n    return 1\n"})
    git(root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "deps/sub")
    git(root, "commit", "-q", "-m", "add the submodule")
    report = review(root, "commit", commit="HEAD", use_model=False)
    entry = next(f for f in report.files if f["path"] == "deps/sub")
    assert entry["note"] == f"submodule added at {first[:12]}: its own changes are not reviewed here"
    (sub / "lib.py").write_text("x = 2\n")
    git(sub, "commit", "-q", "-am", "more")
    second = git(sub, "rev-parse", "HEAD").strip()
    git(root / "deps/sub", "-c", "protocol.file.allow=always", "pull", "-q")
    git(root, "commit", "-q", "-am", "bump the submodule")
    report = review(root, "commit", commit="HEAD", use_model=False)
    assert report.status == "approved" and not report.findings
    assert (
        f"modified deps/sub  +0 -0 (submodule {first[:12]} -> {second[:12]}: its own changes are not reviewed here)"
        in report.to_text()
    )
    assert "unreadable" not in report.to_text()


def test_a_commit_adding_thousands_of_functions_is_reviewed_in_seconds(make_repo) -> None:
    """A commit adding one 60,000-line module of 20,000 small functions took 6 minutes in the
    rules (every function's share of the change was found by scanning every other function's):
    now each is found by bisection. 10,000 functions took 40 s (4 s now); the bound leaves a
    loaded machine ample room."""
    root = make_repo({"pkg/__init__.py": ""})
    (root / "pkg/generated_table.py").write_text(
        "\n".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(10_000))
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "add the table")
    started = time.monotonic()
    report = review(root, "commit", commit="HEAD", use_model=False)
    assert len(report.changed_symbols) == 10_000
    assert time.monotonic() - started < 30


def test_the_model_reviews_the_projects_own_code_not_the_vendored_library(make_repo, fake_anthropic) -> None:
    root = _bump_vendored(
        make_repo, {"src/pkg/core.py": "def api(x, strict=False):\n    return x if strict else str(x)\n"}
    )
    fake_anthropic.reply(json.dumps({"summary": "fine", "findings": []}))
    report = review(root, "commit", commit="HEAD")
    text = fake_anthropic.message_requests()[0].all_text
    # The project's own change is listed first, the vendored files after it.
    assert [f["path"] for f in report.files][0] == "src/pkg/core.py"
    assert report.changed_symbols[0]["file"] == "src/pkg/core.py"
    assert "strict" in text and "src/pkg/core.py" in text
    assert "_vendor" not in text and "left-pad" not in text and "shell=True" not in text
    assert [r.rule for r in report.remarks if r.rule == "vendored-code"] == ["vendored-code"]
