"""Findings and the gate: severities, the review status and the overall risk score.

Plain data only; the rules (rules.py, secrets.py) and the model review produce findings,
and ci.py turns them into a status. Nothing here reads git or calls a model.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from typing import Literal

Severity = Literal["info", "low", "medium", "high"]
Status = Literal["approved", "changes_requested", "blocked"]
# ``info`` is a remark: worth a glance, never a finding, never part of the gate (``--fail-on``
# accepts low, medium and high only).
SEVERITY_ORDER: dict[str, int] = {"info": -1, "low": 0, "medium": 1, "high": 2}
# Finding types that block a change whatever the gate when the model reports them: a leaked
# credential must never be merged. Rule findings say themselves whether they block (``blocking``):
# a secret-looking example in documentation or a test fixture is reported without blocking.
BLOCKING_TYPES = frozenset({"secrets"})


@dataclass(frozen=True)
class Finding:
    """One problem a reviewer should look at; ``source`` says whether a rule or the model found it."""

    severity: Severity
    type: str
    message: str
    file: str | None = None
    line: int | None = None
    symbol: str | None = None
    source: str = "rule"
    rule: str | None = None
    # True for a finding that blocks the merge whatever the gate (a real-looking secret).
    blocking: bool = False
    # How many changes one finding stands for (a mass change collapsed into one finding).
    count: int = 1
    # Rules whose finding on the same symbol was folded into this one (one finding a symbol).
    also: tuple[str, ...] = ()

    @property
    def is_remark(self) -> bool:
        return self.severity == "info"

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        data["also"] = list(self.also)
        return data


def remark(finding: Finding) -> Finding:
    """The same observation as an informational remark: listed apart, never counted, never gating."""
    return replace(finding, severity="info", blocking=False)


def split_remarks(items: Iterable[Finding]) -> tuple[list[Finding], list[Finding]]:
    """(findings, remarks)."""
    findings: list[Finding] = []
    remarks: list[Finding] = []
    for f in items:
        (remarks if f.is_remark else findings).append(f)
    return findings, remarks


def at_least(severity: str, gate: str) -> bool:
    return SEVERITY_ORDER.get(severity, 0) >= SEVERITY_ORDER[gate]


def risk_score(findings: Iterable[Finding]) -> Severity:
    """The highest severity found; ``low`` when there is nothing to say (remarks do not count)."""
    best = 0
    for f in findings:
        best = max(best, SEVERITY_ORDER.get(f.severity, 0))
    return ("low", "medium", "high")[best]  # type: ignore[return-value]


def decide(findings: Iterable[Finding], fail_on: str) -> Status:
    """blocked on a secret; changes_requested when a finding reaches the gate; else approved."""
    items = [f for f in findings if not f.is_remark]
    if any(f.blocking or (f.source != "rule" and f.type in BLOCKING_TYPES) for f in items):
        return "blocked"
    if any(at_least(f.severity, fail_on) for f in items):
        return "changes_requested"
    return "approved"


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(
        findings,
        key=lambda f: (-SEVERITY_ORDER.get(f.severity, 0), f.file or "", f.line or 0, f.type, f.message),
    )
