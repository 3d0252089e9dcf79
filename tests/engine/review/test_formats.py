"""SARIF and GitHub annotation output of a CI report: shapes their consumers accept."""

from __future__ import annotations

from urllib.parse import unquote

from hypothesis import given
from hypothesis import strategies as st

from engine.review.ci import ReviewReport
from engine.review.findings import Finding
from engine.review.formats import _escape_data, _escape_property, to_github, to_sarif


def _report(*findings: Finding) -> ReviewReport:
    return ReviewReport(
        status="changes_requested",
        risk_score="medium",
        summary="2 files",
        findings=findings,
        changed_symbols=(),
        model=None,
        usage=None,
        base="main",
        head="HEAD",
        files=({"path": "a.py", "status": "modified", "lines_added": 1, "lines_removed": 0},),
        remarks=(Finding("info", "complexity", "long", "a.py", 3),),
    )


@given(st.text())
def test_escaped_text_cannot_end_a_command_or_a_property(text: str) -> None:
    data, prop = _escape_data(text), _escape_property(text)
    assert "\n" not in data and "\r" not in data and "\n" not in prop
    assert "," not in prop and ":" not in prop
    assert unquote(data) == text and unquote(prop) == text


def test_findings_across_files_still_have_a_location_and_remarks_are_left_out() -> None:
    bulk = Finding(
        "medium", "api", "public API changed in bulk: 12 removed across 3 files", rule="public-api"
    )
    removed = Finding("medium", "api", "public function x was removed", "b.py", None, "x", rule="public-api")
    log = to_sarif(_report(bulk, removed))
    results = log["runs"][0]["results"]
    assert len(results) == 2  # the remark is not a result
    where = [r["locations"][0]["physicalLocation"] for r in results]
    assert [(w["artifactLocation"]["uri"], w["region"]["startLine"]) for w in where] == [
        ("a.py", 1),
        ("b.py", 1),
    ]
    assert [r["ruleIndex"] for r in results] == [0, 0]
    text = to_github(_report(bulk, removed))
    assert (
        text.splitlines()[0]
        == "::warning title=semfora medium api::public API changed in bulk: 12 removed across 3 files"
    )
    assert "long" not in text


def test_a_finding_over_several_lines_stays_one_indented_block_in_the_text_report() -> None:
    """A model's finding with line breaks started its later lines at column 0, where they read
    as findings (or the report's own lines) of their own."""
    told = Finding("high", "model", "The token is logged.\n\nRedact it before\nthe debug call.", "a.py", 3)
    after = Finding("low", "complexity", "long function", "b.py", 9)
    lines = _report(told, after).to_text().splitlines()
    start = next(i for i, line in enumerate(lines) if "The token is logged." in line)
    assert lines[start + 1 : start + 3] == ["        Redact it before", "        the debug call."]
    assert lines[start + 3].startswith("  LOW ")  # the next finding follows at once
