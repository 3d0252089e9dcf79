"""The CI report in the formats other tools read: SARIF 2.1.0 and GitHub Actions annotations.

Owns the mapping of findings onto those formats (severities to levels, locations, stable
fingerprints) and the escaping each format needs. It must not decide anything: the findings, the
verdict and the redaction come from the review (engine.review.ci) and the CLI; remarks are not
findings and are left out of both formats (they never gate and would read as alerts).
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from engine import __version__

if TYPE_CHECKING:
    from engine.review.ci import ReviewReport
    from engine.review.findings import Finding

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
# Finding severity -> SARIF result level and GitHub workflow command. A high finding is what the
# default gate fails on, so it is the error; the rest are warnings and notices.
SARIF_LEVEL = {"high": "error", "medium": "warning", "low": "note"}
GITHUB_COMMAND = {"high": "error", "medium": "warning", "low": "notice"}
# Numbers in a message (line counts, call sites) change from run to run without the finding
# changing: they are left out of its fingerprint, so code scanning keeps one alert.
_NUMBERS = re.compile(r"\d+")
# Model findings have no rule id of their own.
MODEL_RULE = "model-review"


def _rule_id(f: Finding) -> str:
    return f.rule or (MODEL_RULE if f.source == "model" else f.type)


def _fingerprint(f: Finding) -> str:
    key = "\x1f".join((_rule_id(f), f.file or "", f.symbol or "", _NUMBERS.sub("#", f.message)))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def _location(f: Finding, fallback: str | None) -> dict[str, Any] | None:
    path = f.file or fallback
    if not path:
        return None
    # A URI reference, not a path: ``my pkg/módulo ü.py`` is ``my%20pkg/m%C3%B3dulo%20%C3%BC.py``,
    # and a ``#`` in a name would otherwise start a fragment.
    uri = quote(path, safe="/")
    physical: dict[str, Any] = {"artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"}}
    # A file-level finding (a removed symbol, a deleted test file) points at the file's first line:
    # code scanning needs a region to show it.
    physical["region"] = {"startLine": f.line if f.file and f.line else 1}
    location: dict[str, Any] = {"physicalLocation": physical}
    if f.symbol:
        location["logicalLocations"] = [{"fullyQualifiedName": f.symbol}]
    return location


def to_sarif(report: ReviewReport) -> dict[str, Any]:
    """SARIF 2.1.0, one run, as GitHub code scanning accepts it: every result has a rule, a level,
    a message, a location in the repository (a finding that spans files points at the first
    changed file) and a fingerprint."""
    fallback = report.files[0]["path"] if report.files else None
    rules: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    results: list[dict[str, Any]] = []
    for f in report.findings:
        rule = _rule_id(f)
        if rule not in index:
            index[rule] = len(rules)
            rules.append(
                {
                    "id": rule,
                    "name": rule,
                    "shortDescription": {"text": f"semfora ci: {f.type} ({rule})"},
                    "properties": {"tags": [f.type]},
                }
            )
        result: dict[str, Any] = {
            "ruleId": rule,
            "ruleIndex": index[rule],
            "level": SARIF_LEVEL.get(f.severity, "note"),
            "message": {"text": f.message},
            "partialFingerprints": {"semfora/v1": _fingerprint(f)},
            "properties": {
                "severity": f.severity,
                "type": f.type,
                "source": f.source,
                "blocking": f.blocking,
                "count": f.count,
            },
        }
        location = _location(f, fallback)
        if location is not None:
            result["locations"] = [location]
        results.append(result)
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "semfora",
                        "version": __version__,
                        "rules": rules,
                    }
                },
                "automationDetails": {"id": f"semfora-ci/{report.base}..{report.head}"},
                "results": results,
                "properties": {
                    "status": report.status,
                    "risk_score": report.risk_score,
                    "fail_on": report.fail_on,
                    "summary": report.summary,
                },
            }
        ],
    }


def _escape_data(text: str) -> str:
    """A workflow command's message: a newline in a finding (or in a crafted file name) must not
    start a command of its own."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def to_github(report: ReviewReport) -> str:
    """GitHub Actions workflow commands: one annotation a finding (``::error file=…,line=…::…``),
    then the verdict as a plain log line. Annotations show on the pull request's diff."""
    lines: list[str] = []
    for f in report.findings:
        props = []
        if f.file:
            props.append(f"file={_escape_property(f.file)}")
            if f.line:
                props.append(f"line={f.line}")
        title = f"semfora {f.severity} {f.type}" + (f" in {f.symbol}" if f.symbol else "")
        props.append(f"title={_escape_property(title)}")
        command = GITHUB_COMMAND.get(f.severity, "notice")
        lines.append(f"::{command} {','.join(props)}::{_escape_data(f.message)}")
    lines.append(
        f"semfora ci: {report.status} (risk {report.risk_score}, gate {report.fail_on}) "
        f"{report.base}..{report.head}: {report.summary}"
    )
    return "\n".join(lines)
