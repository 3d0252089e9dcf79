"""The deterministic review rules: what any reviewer would flag in a semantic diff.

Each rule reads the SemanticDiff and returns findings; together they always run, with or
without a model. Thresholds are named below with the reason for their value.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePosixPath

from engine.policy.paths import is_test_path
from engine.review.findings import Finding, Severity
from engine.review.secrets import scan_files
from engine.semantic.diff import FileChange, SemanticDiff, SymbolChange

# A new function longer than this no longer fits on one screen; reviewers skim such code.
LARGE_FUNCTION_LINES = 80
# Nesting at this depth hides paths from review (engine.semantic.risk calls 6 high; 5 is a warning).
DEEP_NESTING = 5
# Effects a new call can have, and how loudly to report each: running code is worse than I/O.
EXTERNAL_SEVERITY: dict[str, Severity] = {
    "subprocess": "high",
    "eval": "high",
    "network": "medium",
    "database": "medium",
    "filesystem": "low",
}
CONTAINER_KINDS = frozenset({"class", "struct", "interface", "trait", "enum", "module", "namespace"})
FUNCTION_KINDS = frozenset({"function", "method"})
DOC_SUFFIXES = (".md", ".rst", ".txt", ".json", ".yaml", ".yml", ".toml", ".cfg", ".ini", ".lock")


def _is_public(s: SymbolChange) -> bool:
    simple = s.qualified_name.rsplit(".", 1)[-1]
    old = (s.old_qualified_name or s.qualified_name).rsplit(".", 1)[-1]
    private = (
        simple.startswith("_")
        and not simple.startswith("__")
        or old.startswith("_")
        and not old.startswith("__")
    )
    return s.exported and not private and not is_test_path(s.file)


def rule_risk_raised(diff: SemanticDiff) -> list[Finding]:
    out = []
    for s in diff.symbols:
        if s.risk_raised and s.change != "added":
            reasons = "; ".join(s.risk_reasons_added) or "complexity"
            severity: Severity = "high" if s.risk_after == "high" else "medium"
            out.append(
                Finding(
                    severity,
                    "risk",
                    f"risk of {s.qualified_name} rose from {s.risk_before} to {s.risk_after}: {reasons}",
                    s.file,
                    s.start_line,
                    s.qualified_name,
                    rule="risk-raised",
                )
            )
        elif s.change == "added" and s.risk_after == "high" and not s.new_external_calls:
            out.append(
                Finding(
                    "medium",
                    "risk",
                    f"new high-risk {s.kind} {s.qualified_name}: {'; '.join(s.risk_reasons_added)}",
                    s.file,
                    s.start_line,
                    s.qualified_name,
                    rule="risk-raised",
                )
            )
    return out


def rule_external_calls(diff: SemanticDiff) -> list[Finding]:
    out = []
    for s in diff.symbols:
        for call in s.new_external_calls:
            severity = EXTERNAL_SEVERITY.get(call.category, "medium")
            if is_test_path(s.file):
                severity = "low"
            out.append(
                Finding(
                    severity,
                    "security",
                    f"new {call.category} use in {s.qualified_name}: {call.call}",
                    s.file,
                    call.line or s.start_line,
                    s.qualified_name,
                    rule=f"new-{call.category}",
                )
            )
    return out


def rule_public_api(diff: SemanticDiff) -> list[Finding]:
    out = []
    for s in diff.symbols:
        if not _is_public(s) or s.kind in ("variable", "constant"):
            continue
        where = s.file
        if s.change == "removed":
            msg = f"public {s.kind} {s.qualified_name} was removed"
        elif s.change == "renamed":
            msg = f"public {s.kind} {s.old_qualified_name} was renamed to {s.qualified_name}"
        elif s.change == "moved" and s.old_file and s.old_file != s.file:
            msg = f"public {s.kind} {s.qualified_name} moved from {s.old_file} to {s.file}"
        elif s.signature_changed and s.kind not in CONTAINER_KINDS:
            msg = f"signature of public {s.kind} {s.qualified_name} changed: {s.signature_before} -> {s.signature_after}"
        else:
            continue
        if s.callers_total:
            msg += f" ({s.callers_total} call site(s) to check)"
        out.append(
            Finding(
                "medium",
                "api",
                msg,
                where,
                s.start_line if s.change != "removed" else None,
                s.qualified_name,
                rule="public-api",
            )
        )
    return out


def _related_stems(path: str) -> set[str]:
    p = PurePosixPath(path)
    stem = p.stem
    for prefix in ("test_",):
        stem = stem.removeprefix(prefix)
    for suffix in ("_test", ".test", ".spec", "_spec", "Test", "Tests"):
        stem = stem.removesuffix(suffix)
    return {stem.lower()}


def rule_tests(diff: SemanticDiff) -> list[Finding]:
    out = []
    test_files = [f for f in diff.files if is_test_path(f.path)]
    for f in test_files:
        if f.status == "deleted":
            out.append(
                Finding("medium", "testing", f"test file deleted: {f.path}", f.path, rule="tests-removed")
            )
            continue
        for s in f.symbols:
            if s.change == "removed" and s.kind in FUNCTION_KINDS | CONTAINER_KINDS:
                out.append(
                    Finding(
                        "medium",
                        "testing",
                        f"test {s.qualified_name} removed",
                        f.path,
                        None,
                        s.qualified_name,
                        rule="tests-removed",
                    )
                )
    touched_tests = set().union(*(_related_stems(f.path) for f in test_files)) if test_files else set()
    for f in diff.files:
        if is_test_path(f.path) or f.status == "deleted" or f.path.endswith(DOC_SUFFIXES):
            continue
        code_changes = [
            s for s in f.symbols if s.change in ("added", "modified") and s.kind in FUNCTION_KINDS
        ]
        if not code_changes:
            continue
        nearby = bool(_related_stems(f.path) & touched_tests) or _shares_dir(f, test_files)
        if not nearby:
            names = ", ".join(s.qualified_name for s in code_changes[:3]) + (
                " ..." if len(code_changes) > 3 else ""
            )
            out.append(
                Finding(
                    "low",
                    "testing",
                    f"code changed without a test change nearby ({names})",
                    f.path,
                    code_changes[0].start_line,
                    None,
                    rule="untested-change",
                )
            )
    return out


def _shares_dir(f: FileChange, tests: list[FileChange]) -> bool:
    """A test in the same package directory counts as nearby."""
    parent = PurePosixPath(f.path).parent
    return any(PurePosixPath(t.path).parent in (parent, parent / "tests", parent / "test") for t in tests)


def rule_size(diff: SemanticDiff) -> list[Finding]:
    out = []
    for s in diff.symbols:
        if s.kind not in FUNCTION_KINDS or s.change not in ("added", "modified"):
            continue
        if s.lines > LARGE_FUNCTION_LINES:
            out.append(
                Finding(
                    "medium" if s.change == "added" else "low",
                    "complexity",
                    f"{s.change} {s.kind} {s.qualified_name} is {s.lines} lines long "
                    f"(over {LARGE_FUNCTION_LINES}); split it",
                    s.file,
                    s.start_line,
                    s.qualified_name,
                    rule="large-function",
                )
            )
        if s.max_nesting >= DEEP_NESTING:
            out.append(
                Finding(
                    "medium",
                    "complexity",
                    f"{s.qualified_name} nests {s.max_nesting} levels deep "
                    f"(limit {DEEP_NESTING - 1}); flatten it with early returns or helpers",
                    s.file,
                    s.start_line,
                    s.qualified_name,
                    rule="deep-nesting",
                )
            )
    return out


def rule_secrets(diff: SemanticDiff) -> list[Finding]:
    return scan_files(diff.files)


RULES: dict[str, Callable[[SemanticDiff], list[Finding]]] = {
    "risk-raised": rule_risk_raised,
    "external-calls": rule_external_calls,
    "public-api": rule_public_api,
    "tests": rule_tests,
    "size": rule_size,
    "secrets": rule_secrets,
}


def run_rules(diff: SemanticDiff) -> list[Finding]:
    """Every deterministic rule, in a stable order."""
    findings: list[Finding] = []
    for rule in RULES.values():
        findings.extend(rule(diff))
    return findings
