"""`semfora ci`: review a pull request or one commit and decide approved / changes requested / blocked.

Owns the review orchestration: build the semantic diff, run the rules, ask the model when one
is configured, and compute the gate. Printing and exit codes belong to the CLI.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from engine.config import Settings, load_settings, named_by_environment
from engine.errors import UsageError
from engine.repo import git
from engine.repo.layout import find_repo_root
from engine.review.findings import Finding, decide, risk_score, sort_findings, split_remarks
from engine.review.rules import run_rules
from engine.review.vendored import review_vendored, split_vendored
from engine.semantic.diff import (
    MAX_ANALYZED_BYTES,
    STAGED,
    SYMLINK_MODE,
    WORKING,
    Progress,
    SemanticDiff,
    analyze_commit,
    analyze_diff,
    analyze_range,
    merge_base,
    resolve_commit,
)
from engine.store.callers import index_callers
from engine.words import plural

if TYPE_CHECKING:
    from engine.review.model_review import ModelReview

Mode = Literal["pr", "commit"]
MODEL_PHASE = "asking the model"


@dataclass(frozen=True)
class ReviewReport:
    status: str
    risk_score: str
    summary: str
    findings: tuple[Finding, ...]
    changed_symbols: tuple[dict[str, Any], ...]
    model: str | None
    usage: dict[str, int] | None
    base: str
    head: str
    notes: tuple[str, ...] = ()
    cost_usd: float = 0.0
    fail_on: str = "high"
    files: tuple[dict[str, Any], ...] = field(default=())
    # Observations the rules make on weak evidence (a sample secret in a fixture, a function that
    # grew long, a change whose tests do not name it): listed apart, never findings, never gating.
    remarks: tuple[Finding, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "risk_score": self.risk_score,
            "summary": self.summary,
            "findings": [f.to_json() for f in self.findings],
            "changed_symbols": list(self.changed_symbols),
            "model": self.model,
            "usage": self.usage,
            "cost_usd": round(self.cost_usd, 6),
            "base": self.base,
            "head": self.head,
            "fail_on": self.fail_on,
            "notes": list(self.notes),
            "files": list(self.files),
            "remarks": [f.to_json() for f in self.remarks],
        }

    def to_sarif(self) -> dict[str, Any]:
        """SARIF 2.1.0 for code scanning (engine.review.formats)."""
        from engine.review.formats import to_sarif

        return to_sarif(self)

    def to_github(self) -> str:
        """GitHub Actions annotations, then the verdict line (engine.review.formats)."""
        from engine.review.formats import to_github

        return to_github(self)

    def to_text(self) -> str:
        lines = [
            f"semfora ci: {self.status} (risk {self.risk_score}, gate {self.fail_on}) {self.base}..{self.head}"
        ]
        lines.append(self.summary)
        lines.extend(f"note: {n}" for n in self.notes)
        if self.findings:
            lines.append("findings:")
        for f in self.findings:
            where = f"{f.file}:{f.line}" if f.file and f.line else (f.file or "-")
            sym = f" [{f.symbol}]" if f.symbol else ""
            lines.append(f"  {f.severity.upper():<6} {f.type:<11} {where}{sym}  {_indented(f.message)}")
        if self.remarks:
            lines.append("remarks (not findings; they never gate):")
        for f in self.remarks:
            where = f"{f.file}:{f.line}" if f.file and f.line else (f.file or "-")
            sym = f" [{f.symbol}]" if f.symbol else ""
            lines.append(f"  {'INFO':<6} {f.type:<11} {where}{sym}  {_indented(f.message)}")
        lines += _listing("files", [_file_line(entry) for entry in self.files])
        lines += _listing(
            "changed symbols",
            [
                f"{s['change']:<8} {s['kind']:<8} {s['symbol']}  {s['file']}:{s['line']}"
                for s in self.changed_symbols
            ],
        )
        return "\n".join(lines)


# Files and changed symbols listed in the text report; the JSON report has them all.
MAX_TEXT_ROWS = 50


def _listing(title: str, rows: list[str]) -> list[str]:
    """``title (N):`` and the first rows, indented; nothing when there are none."""
    if not rows:
        return []
    more = [f"  ... {len(rows) - MAX_TEXT_ROWS} more"] if len(rows) > MAX_TEXT_ROWS else []
    return [f"{title} ({len(rows)}):", *(f"  {row}" for row in rows[:MAX_TEXT_ROWS]), *more]


def _file_line(entry: Mapping[str, Any]) -> str:
    """``renamed  pkg/cli.py -> pkg/command.py  +1 -0 (binary file: not analysed)``."""
    path = f"{entry['old_path']} -> {entry['path']}" if entry.get("old_path") else entry["path"]
    extra = []
    if entry.get("note"):
        extra.append(entry["note"])
    before, after = entry.get("mode_before"), entry.get("mode_after")
    if before and after and before != after:
        extra.append(f"mode {before} -> {after}")
    elif after == SYMLINK_MODE:
        extra.append("symlink")
    counts = f"  +{entry['lines_added']} -{entry['lines_removed']}" if not entry.get("binary") else ""
    return f"{entry['status']:<8} {path}{counts}" + (f" ({'; '.join(extra)})" if extra else "")


# A model's finding may run over several lines: they stay under their finding, indented this much.
MESSAGE_CONTINUATION_INDENT = " " * 8


def _indented(message: str) -> str:
    """``message`` on its first line, later lines indented, blank lines dropped (one finding, one block)."""
    lines = [line.rstrip() for line in message.strip().splitlines() if line.strip()]
    return ("\n" + MESSAGE_CONTINUATION_INDENT).join(lines)


def _changed_symbols(diff: SemanticDiff) -> tuple[dict[str, Any], ...]:
    return tuple(
        {
            "change": s.change,
            "kind": s.kind,
            "symbol": s.qualified_name,
            "old_symbol": s.old_qualified_name if s.old_qualified_name != s.qualified_name else None,
            "file": s.file,
            "line": s.start_line,
            "risk_before": s.risk_before,
            "risk_after": s.risk_after,
            "signature_changed": s.signature_changed,
            "callers": s.callers_total,
        }
        for s in diff.symbols
    )


def _model_explicit(model: str | None, environ: Mapping[str, str]) -> bool:
    """A model named by flag or SEMFORA_MODEL is required; the built-in default is optional."""
    return bool(model) or named_by_environment("llm.model", environ)


def semantic_diff_for(
    root: Path,
    mode: Mode,
    *,
    base: str | None,
    head: str | None,
    commit: str | None,
    max_file_bytes: int = MAX_ANALYZED_BYTES,
    progress: Progress | None = None,
) -> SemanticDiff:
    if mode == "pr":
        if not base:
            raise UsageError("--mode pr needs --base (and --head, default HEAD)")
        if ".." in base:
            # ``--base main..feature`` (or ``main...feature``), as ``semfora diff`` and git take a
            # range: the PR's base and head in one (the review uses the merge base either way).
            if head:
                raise UsageError(
                    f"--base {base} is a range and --head {head} names the head too: "
                    "give --base the branch alone (--base A --head B)"
                )
            base, _, head = base.replace("...", "..").partition("..")
            base = base or "HEAD"
        if commit:
            raise UsageError("--commit belongs to --mode commit; use --base/--head with --mode pr")
        head = head or "HEAD"
        diff = analyze_range(
            root,
            base,
            head,
            max_file_bytes=max_file_bytes,
            caller_graph=index_callers(root),
            progress=progress,
        )
        return diff if diff.files else _with_empty_range_note(root, diff, base, head)
    if base or head:
        raise UsageError("--base/--head belong to --mode pr; use --commit with --mode commit")
    if commit and ".." in commit:
        left, _, right = commit.replace("...", "..").partition("..")
        raise UsageError(
            f"--commit takes one commit, not the range {commit}; to review the range, use "
            f"--mode pr --base {left or 'HEAD'} --head {right or 'HEAD'}"
        )
    work_tree = (commit or "").upper()
    if work_tree in (STAGED, WORKING):
        # STAGED: a pre-commit hook, what is about to be committed. WORKING: everything not yet
        # committed (staged, unstaged and untracked files), reviewed before it is staged.
        return analyze_diff(
            root,
            None,
            work_tree,
            max_file_bytes=max_file_bytes,
            caller_graph=index_callers(root),
            progress=progress,
        )
    return analyze_commit(
        root,
        commit or "HEAD",
        max_file_bytes=max_file_bytes,
        caller_graph=index_callers(root),
        progress=progress,
    )


# Commit messages read for a review: a pull request of more commits is read by its latest ones.
MAX_MESSAGES = 200


def commit_messages(root: Path, diff: SemanticDiff) -> tuple[str, ...]:
    """The messages of the commits under review (none for a work tree or the staged index)."""
    if not diff.target_commit or not diff.base_commit:
        return ()
    out = git.output(
        root,
        "log",
        f"--max-count={MAX_MESSAGES}",
        "--format=%B%x00",
        f"{diff.base_commit}..{diff.target_commit}",
    )
    return tuple(m.strip() for m in (out or "").split("\0") if m.strip())


def _with_empty_range_note(root: Path, diff: SemanticDiff, base: str, head: str) -> SemanticDiff:
    """A pull request with nothing to review says why: the same commit, or a head its base
    already contains (``--base HEAD --head HEAD~5``, the two the wrong way round, approved with
    only 'nothing changed')."""
    base_sha, head_sha = resolve_commit(root, base), resolve_commit(root, head)
    if base_sha == head_sha:
        note = f"{base} and {head} are the same commit {head_sha[:12]}: nothing to review"
    elif merge_base(root, base, head) == head_sha:
        note = (
            f"{head} is already part of {base}: it has no changes of its own to review "
            f"(the wrong way round? --base is the branch the pull request merges into: "
            f"--base {head} --head {base})"
        )
    else:
        return diff
    return replace(diff, notes=(*diff.notes, note))


def _maybe_model_review(
    diff: SemanticDiff,
    findings: list[Finding],
    settings: Settings,
    model: str | None,
    use_model: bool,
    env: Mapping[str, str],
    intent: str | None = None,
    progress: Progress | None = None,
) -> tuple[str, ModelReview | None]:
    """(how the review was done, the model review or None); a named model that fails raises."""
    if not diff.files:
        return "nothing changed", None
    if not use_model:
        return "deterministic review only (model review disabled with --no-model)", None
    from engine.llm.base import ModelUnavailable
    from engine.llm.select import make_reasoner

    try:
        reasoner = make_reasoner(settings, model, environ=env)
    except ModelUnavailable as exc:
        if _model_explicit(model, env):
            raise
        return f"deterministic review only: no model configured ({exc.message})", None
    from engine.review.model_review import review_with_model

    if progress is not None:  # only when a model will be asked: not "asking" one that is not there
        progress(MODEL_PHASE, 0, 0)
    result = review_with_model(reasoner, diff, findings, intent=intent)
    return f"deterministic rules plus a {result.model} review", result


def review(
    path: str | os.PathLike[str] | None,
    mode: Mode,
    *,
    base: str | None = None,
    head: str | None = None,
    commit: str | None = None,
    fail_on: str = "high",
    model: str | None = None,
    use_model: bool = True,
    settings: Settings | None = None,
    environ: Mapping[str, str] | None = None,
    intent: str | None = None,
    progress: Progress | None = None,
) -> ReviewReport:
    """Run the whole review. Raises ModelUnavailable (exit 3) only when a named model cannot be used.

    ``progress(phase, done, total)`` hears what a long review is doing (engine.semantic.diff's
    phases, then the rules and the model review)."""
    env = os.environ if environ is None else environ
    root = find_repo_root(path)
    if settings is None:
        settings = load_settings(root).settings
    diff = semantic_diff_for(
        root,
        mode,
        base=base,
        head=head,
        commit=commit,
        max_file_bytes=settings.index.max_file_bytes,
        progress=progress,
    )
    diff = replace(diff, messages=commit_messages(root, diff))
    # Vendored libraries are scanned for secrets and summed up; the rules and the model read the
    # project's own code (engine.review.vendored).
    vendored_dirs = settings.review.vendored_dirs
    own, vendored = split_vendored(diff, vendored_dirs)
    findings, remarks = split_remarks(
        [*run_rules(own, progress=progress), *review_vendored(vendored, vendored_dirs)]
    )
    if vendored:
        # The project's own files first: 278 vendored symbols listed before its own change hid it
        # (and SARIF places a finding without a file at the first file).
        diff = replace(diff, files=(*own.files, *vendored))
    if vendored and not own.files:
        how, result = "only vendored code changed", None
    else:
        how, result = _maybe_model_review(own, findings, settings, model, use_model, env, intent, progress)
    notes = list(diff.notes)
    if result is not None:
        findings.extend(result.findings)
        if result.note:
            notes.append(result.note)
    findings = sort_findings(findings)
    by_sev = {s: sum(1 for f in findings if f.severity == s) for s in ("high", "medium", "low")}
    summary = (
        f"{plural(len(diff.files), 'file')}, {plural(len(diff.symbols), 'symbol change')}; "
        f"{plural(len(findings), 'finding')} "
        f"({by_sev['high']} high, {by_sev['medium']} medium, {by_sev['low']} low)"
        + (f", {plural(len(remarks), 'remark')}" if remarks else "")
        + f". {how}."
    )
    if result is not None and result.summary:
        summary += f" Model: {result.summary}"
    return ReviewReport(
        status=decide(findings, fail_on),
        risk_score=risk_score(findings),
        summary=summary,
        findings=tuple(findings),
        changed_symbols=_changed_symbols(diff),
        model=result.model if result is not None else None,
        usage=result.usage.to_dict() if result is not None else None,
        base=diff.base,
        head=diff.target,
        notes=tuple(notes),
        cost_usd=result.cost_usd if result is not None else 0.0,
        fail_on=fail_on,
        remarks=tuple(sort_findings(remarks)),
        files=tuple(
            {
                "path": f.path,
                "status": f.status,
                "lines_added": f.lines_added,
                "lines_removed": f.lines_removed,
                "old_path": f.old_path,
                "binary": f.binary,
                "note": f.note,
                "mode_before": f.mode_before or None,
                "mode_after": f.mode_after or None,
            }
            for f in diff.files
        ),
    )
