"""Dependency changes in `semfora ci`: a bump, a downgrade and a dependency from a URL, as a
reviewer reads them in requirements files, pyproject.toml and package.json."""

from __future__ import annotations

from tests.engine.review.conftest import commit_and_review


def test_a_pin_lowered_and_a_git_url_are_findings_a_bump_a_remark(make_repo) -> None:
    """A downgrade to a release with known fixes and `git+https://...` beside the index's
    package were approved without a word."""
    root = make_repo(
        {
            "requirements.txt": "requests==2.31.0\nflask>=2.0\n",
            "pyproject.toml": '[project]\nname = "app"\nversion = "1"\ndependencies = [\n    "httpx>=0.27",\n]\n'
            '[tool.ruff]\nselect = [\n    "E",\n]\n',
        }
    )
    findings = commit_and_review(
        root,
        {
            "requirements.txt": "requests==2.19.0\nflask>=3.0\ngit+https://example.com/evil/requests.git\n",
            "pyproject.toml": '[project]\nname = "app"\nversion = "2"\ndependencies = [\n    "httpx>=0.28",\n]\n'
            '[tool.ruff]\nselect = [\n    "E",\n    "UP",\n]\n',
        },
    )
    by_rule = {f.rule: f for f in findings}
    source = by_rule["dependency-source"]
    assert (source.severity, source.file, source.line) == ("medium", "requirements.txt", 3)
    assert "requests is now installed from git+https://example.com/evil/requests.git" in source.message
    down = by_rule["dependency-downgrade"]
    assert (down.severity, down.line) == ("low", 1) and "from ==2.31.0 to ==2.19.0" in down.message
    remarks = {f.file: f.message for f in findings if f.rule == "dependency-change"}
    assert remarks["requirements.txt"].endswith("raised flask >=2.0 -> >=3.0")
    # The version of the project itself and ruff's rule codes are no dependencies.
    assert (
        remarks["pyproject.toml"] == "dependencies changed in pyproject.toml: raised httpx >=0.27 -> >=0.28"
    )
    assert all(f.severity == "info" for f in findings if f.rule == "dependency-change")


def test_package_json_dependencies_and_not_its_other_keys(make_repo) -> None:
    before = '{\n  "name": "app",\n  "version": "1.0.0",\n  "main": "lib/index.js",\n  "dependencies": {\n    "lodash": "^4.17.21"\n  }\n}\n'
    root = make_repo({"package.json": before})
    after = (
        before.replace('"1.0.0"', '"1.1.0"')
        .replace('"lib/index.js"', '"src/index.js"')
        .replace('"^4.17.21"\n', '"^4.17.21",\n    "left-pad": "github:someone/left-pad"\n')
    )
    findings = commit_and_review(root, {"package.json": after})
    assert [(f.rule, f.line) for f in findings if f.rule and f.rule.startswith("dependency")] == [
        ("dependency-source", 7)
    ]


def test_setup_cfg_paths_in_other_sections_are_no_dependencies(make_repo) -> None:
    """werkzeug adb0edd6 moved under src/: '[coverage:paths] source = werkzeug' became
    'src/werkzeug', which read as 'removed werkzeug'."""
    before = "[options]\ninstall_requires =\n    click>=8\n\n[coverage:paths]\nsource =\n    werkzeug\n"
    root = make_repo({"setup.cfg": before})
    findings = commit_and_review(
        root, {"setup.cfg": before.replace("    werkzeug\n", "    src/werkzeug\n").replace(">=8", ">=8.1")}
    )
    assert [f.message for f in findings if f.rule == "dependency-change"] == [
        "dependencies changed in setup.cfg: raised click >=8 -> >=8.1"
    ]
