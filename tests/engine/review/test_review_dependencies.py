"""Dependency changes in `semfora ci`: a bump, a downgrade and a dependency from a URL, as a
reviewer reads them in requirements files, pyproject.toml and package.json."""

from __future__ import annotations

from pathlib import Path

from engine.review.ci import commit_messages
from engine.review.rules import run_rules
from engine.semantic.diff import SemanticDiff, analyze_commit
from tests.conftest import git
from tests.engine.review.conftest import commit_and_review


def replace_messages(root: Path) -> SemanticDiff:
    """HEAD's semantic diff with its commit message, as `semfora ci` reads it."""
    from dataclasses import replace

    diff = analyze_commit(root, "HEAD")
    return replace(diff, messages=commit_messages(root, diff))


def test_a_pin_lowered_and_a_git_url_are_findings_a_bump_a_remark(make_repo) -> None:
    """A downgrade to a release with known fixes and `git+https://...` beside the index's
    package were approved without a word."""
    root = make_repo(
        {
            "requirements.txt": "attrs==23.1.0\nflask>=2.0\n",
            "pyproject.toml": '[project]\nname = "app"\nversion = "1"\ndependencies = [\n    "httpx>=0.27",\n]\n'
            '[tool.ruff]\nselect = [\n    "E",\n]\n',
        }
    )
    findings = commit_and_review(
        root,
        {
            "requirements.txt": "attrs==22.1.0\nflask>=3.0\ngit+https://example.com/evil/requests.git\n",
            "pyproject.toml": '[project]\nname = "app"\nversion = "2"\ndependencies = [\n    "httpx>=0.28",\n]\n'
            '[tool.ruff]\nselect = [\n    "E",\n    "UP",\n]\n',
        },
    )
    by_rule = {f.rule: f for f in findings}
    source = by_rule["dependency-source"]
    assert (source.severity, source.file, source.line) == ("medium", "requirements.txt", 3)
    assert "requests is now installed from git+https://example.com/evil/requests.git" in source.message
    down = by_rule["dependency-downgrade"]
    assert (down.severity, down.line) == ("low", 1) and "from ==23.1.0 to ==22.1.0" in down.message
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


# --------------------------------------------------------------------------- advisories


def test_a_floor_raised_past_a_known_advisory_is_a_security_fix(make_repo) -> None:
    """``requests>=2.31.0`` -> ``requests>=2.32.0`` (CVE-2024-35195) was one line of a remark,
    "raised requests": the security fix went unseen."""
    pyproject = '[project]\nname = "app"\ndependencies = [\n    "requests>=2.31.0",\n    "click>=8.0",\n]\n'
    root = make_repo({"pyproject.toml": pyproject, "app/__init__.py": ""})
    findings = commit_and_review(root, {"pyproject.toml": pyproject.replace("2.31.0", "2.32.0")})
    [fix] = [f for f in findings if f.rule == "dependency-advisory"]
    assert (fix.type, fix.severity, fix.file, fix.line) == ("security", "low", "pyproject.toml", 4)
    assert fix.message.startswith("security fix by dependency: requests raised from >=2.31.0 to >=2.32.0")
    assert "CVE-2024-35195" in fix.message
    assert not [f for f in findings if f.rule == "dependency-change"]


def test_a_floor_set_on_a_bare_requirement_in_a_change_citing_an_advisory(make_repo) -> None:
    """starlette 13e5c26a "Merge pull request from GHSA-93gm-qmq6-w238": ``"python-multipart"``
    became ``"python-multipart>=0.0.7"`` and nothing else changed; semfora said "added"."""
    pyproject = '[project]\nname = "app"\n[project.optional-dependencies]\nfull = [\n    "itsdangerous",\n    "{}",\n]\n'
    root = make_repo({"pyproject.toml": pyproject.format("colorama"), "app/__init__.py": ""})
    findings = commit_and_review(root, {"pyproject.toml": pyproject.format("colorama>=0.4.6")})
    assert not [f for f in findings if f.rule == "dependency-advisory"]  # no advisory cited or known
    (root / "pyproject.toml").write_text(pyproject.format("colorama"))
    git(root, "commit", "-qam", "back")
    (root / "pyproject.toml").write_text(pyproject.format("colorama>=0.4.6"))
    git(root, "commit", "-qam", "Merge pull request from GHSA-93gm-qmq6-w238")
    findings = run_rules(replace_messages(root))
    [fix] = [f for f in findings if f.rule == "dependency-advisory"]
    assert fix.message == (
        "security fix by dependency: colorama raised from (any) to >=0.4.6: the change cites "
        "GHSA-93gm-qmq6-w238; check that >=0.4.6 is the release that fixed it"
    )


def test_a_pin_lowered_into_a_known_advisory_says_which(make_repo) -> None:
    root = make_repo({"requirements.txt": "urllib3==2.2.2\n", "app/__init__.py": ""})
    findings = commit_and_review(root, {"requirements.txt": "urllib3==2.0.6\npyyaml==5.3\n"})
    by_line = {f.line: f for f in findings if f.rule == "dependency-advisory"}
    assert by_line[1].severity == "medium" and by_line[1].type == "security"
    assert "CVE-2023-45803" in by_line[1].message and "CVE-2024-37891" in by_line[1].message
    assert "CVE-2023-43804" not in by_line[1].message  # 2.0.6 fixed that one
    assert by_line[2].message == (
        "pyyaml added pinned to ==5.3, a release with CVE-2020-14343 (full_load could run arbitrary "
        "code): pin 5.4 or later"
    )


def test_a_security_fix_of_a_development_requirement_is_a_remark(make_repo) -> None:
    """urllib3 c9f8d395 "Bump idna from 3.4 to 3.7": dev-requirements.txt is what the tests
    install; the package's users never get it."""
    root = make_repo({"dev-requirements.txt": "idna==3.4\n", "app/__init__.py": ""})
    findings = commit_and_review(root, {"dev-requirements.txt": "idna==3.7\n"})
    [fix] = [f for f in findings if f.rule == "dependency-advisory"]
    assert fix.severity == "info"
    assert fix.message.startswith(
        "security fix by dependency: idna raised from ==3.4 to ==3.7 (a development requirement)"
    )


def test_a_pin_in_pyproject_is_no_installed_release(make_repo) -> None:
    """werkzeug 32f75a4e "use uv": ``"jinja2==3.1.2"`` in a new ``[dependency-groups]`` docs
    group was "added pinned to a release with CVE-2024-22195 ..."."""
    pyproject = '[project]\nname = "app"\n'
    root = make_repo({"pyproject.toml": pyproject, "app/__init__.py": ""})
    findings = commit_and_review(
        root, {"pyproject.toml": pyproject + '[dependency-groups]\ndocs = [\n    "jinja2==3.1.2",\n]\n'}
    )
    assert [f for f in findings if f.rule == "dependency-advisory"] == []
