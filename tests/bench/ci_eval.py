"""Score `semfora ci` on labelled real commits: precision per rule and security-fix recall.

The labels (``tests/bench/ci/commits.json``) were written by reading each commit before any rule
was tuned: for every commit, the changed logic that *is* the security fix (``fix``), the symbols on
which a security finding is worth a reviewer's time (``security``), and the other findings worth
reading (``worth``: ``rule=target``). A finding counts as worth reading only when it matches a label;
everything else is noise or wrong. The held-out third (``split``: fixed by the commit hash) is never
looked at while tuning and is reported apart; the third batch (``batch``: 3, other repositories)
was labelled after the second tuning round, the fourth (``batch``: 4, starlette, paramiko, pip,
gunicorn) after the third, each before its first run.

Repositories are not stored here: git history cannot come from a package registry, so the
benchmark reads clones made by the ``fetch`` tool from ``SEMFORA_BENCH_MIRRORS`` (default
``/work/.mirror``, laid out ``<owner>+<name>/repo``) and says which are missing.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

COMMITS_FILE = Path(__file__).with_name("ci") / "commits.json"
DEFAULT_MIRRORS = "/work/.mirror"
# Label rule names, keyed by the rule ids the findings carry.
RULE_LABEL = {
    "public-api": "api",
    "untested-change": "untested",
    "tests-removed": "tests-removed",
    "large-function": "complexity",
    "deep-nesting": "complexity",
    "risk-raised": "risk",
}


@dataclass(frozen=True)
class LabelledCommit:
    repo: str
    commit: str
    kind: str
    split: str
    fix: tuple[str, ...]
    security: tuple[str, ...]
    worth: tuple[tuple[str, str], ...]
    advisory: str | None = None
    # 1: labelled before any tuning; 2: distractors labelled after the first tuning round;
    # 3: other repositories, labelled after the second round; 4: four more repositories,
    # labelled after the third round, before their first run.
    batch: int = 1

    @property
    def is_security_fix(self) -> bool:
        return self.kind == "security"


def load_commits(path: Path = COMMITS_FILE) -> list[LabelledCommit]:
    out = []
    for raw in json.loads(path.read_text(encoding="utf-8")):
        out.append(
            LabelledCommit(
                repo=raw["repo"],
                commit=raw["commit"],
                kind=raw["kind"],
                split=raw["split"],
                fix=tuple(raw["fix"]),
                security=tuple(raw["security"]),
                worth=tuple((w["rule"], w["target"]) for w in raw["worth"]),
                advisory=raw.get("advisory"),
                batch=int(raw.get("batch") or (2 if "second batch" in raw.get("note", "") else 1)),
            )
        )
    return out


def mirror_root() -> Path:
    return Path(os.environ.get("SEMFORA_BENCH_MIRRORS", DEFAULT_MIRRORS))


def mirror_of(repo: str, root: Path | None = None) -> Path | None:
    """The fetched git directory of ``owner/name``, or None when it is not on this machine."""
    path = (root or mirror_root()) / repo.replace("/", "+") / "repo"
    return path if (path / "objects").is_dir() or (path / ".git").exists() else None


def clone_for_review(mirror: Path, dest: Path) -> Path:
    """A no-checkout clone sharing the mirror's objects: `semfora ci` needs a repository, not a work tree."""
    if not dest.exists():
        subprocess.run(
            ["git", "clone", "-q", "--shared", "--no-checkout", str(mirror), str(dest)],
            check=True,
            capture_output=True,
        )
    return dest


def _target_hit(target: str, file: str | None, symbol: str | None) -> bool:
    want_file, sep, want_symbol = target.partition("::")
    if file != want_file:
        return False
    return not sep or symbol == want_symbol


@dataclass
class CommitResult:
    commit: LabelledCommit
    seconds: float
    findings: list[dict[str, Any]]
    verdicts: list[bool] = field(default_factory=list)
    # Remarks (informational, not findings) and whether a label would have counted each.
    remarks: list[dict[str, Any]] = field(default_factory=list)
    remark_verdicts: list[bool] = field(default_factory=list)
    recalled: bool = False
    blocked_by_fixture: bool = False
    status: str = ""
    cpu_seconds: float = 0.0  # this process and its finished children (git)
    git_seconds: float = 0.0  # baseline: `git diff` of the same commit


def _cpu_now() -> float:
    import resource

    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


def judge(commit: LabelledCommit, finding: dict[str, Any]) -> bool:
    """Is this finding worth a reviewer's time, by the commit's labels?"""
    file, symbol, rule = finding.get("file"), finding.get("symbol"), finding.get("rule") or ""
    if finding.get("type") == "security" and any(_target_hit(t, file, symbol) for t in commit.security):
        return True
    # A finding that folded another rule's finding on the same symbol (``also``) stands for both.
    labels = {RULE_LABEL.get(r, r) for r in (rule, *(finding.get("also") or ()))}
    for wanted_rule, target in commit.worth:
        if wanted_rule not in labels:
            continue
        if _target_hit(target, file, symbol):
            return True
        # A collapsed finding (one for a mass change) stands for every labelled item it counts.
        if symbol is None and file is None and int(finding.get("count") or 1) > 1:
            return True
    return False


def recalled(commit: LabelledCommit, findings: list[dict[str, Any]]) -> bool:
    """A security-typed finding on the changed logic that is the fix."""
    return any(
        f.get("type") == "security"
        and any(_target_hit(t, f.get("file"), f.get("symbol")) for t in commit.fix)
        for f in findings
    )


def _fixture_path(path: str) -> bool:
    from engine.policy.paths import PathKind, classify_path

    return classify_path(path) in (PathKind.TEST, PathKind.DOCS, PathKind.EXAMPLE)


def run_commit(root: Path, commit: LabelledCommit) -> CommitResult:
    from engine.review.ci import review

    c0, t0 = _cpu_now(), time.perf_counter()
    report = review(root, "commit", commit=commit.commit, use_model=False)
    seconds = time.perf_counter() - t0
    cpu = _cpu_now() - c0
    g0 = time.perf_counter()
    subprocess.run(
        ["git", "-C", str(root), "diff", "-M", f"{commit.commit}^", commit.commit],
        capture_output=True,
        check=False,
    )
    git_seconds = time.perf_counter() - g0
    data = report.to_json()
    findings = [f for f in data["findings"] if f.get("source") == "rule"]
    result = CommitResult(
        commit, seconds, findings, status=data["status"], cpu_seconds=cpu, git_seconds=git_seconds
    )
    result.verdicts = [judge(commit, f) for f in findings]
    result.remarks = [f for f in data.get("remarks", []) if f.get("source") == "rule"]
    result.remark_verdicts = [judge(commit, f) for f in result.remarks]
    result.recalled = recalled(commit, findings)
    blocking = [f for f in findings if f.get("type") == "secrets" and f.get("blocking", True)]
    result.blocked_by_fixture = data["status"] == "blocked" and all(
        _fixture_path(f.get("file") or "") for f in blocking
    )
    return result


@dataclass
class Summary:
    commits: int
    findings: int
    worth: int
    security_fixes: int
    security_recalled: int
    blocked_by_fixture: int
    median_seconds: float
    per_rule: dict[str, tuple[int, int]]
    # rule -> (remarks, remarks a label would have counted as worth reading)
    remarks_per_rule: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def precision(self) -> float:
        return self.worth / self.findings if self.findings else 1.0

    @property
    def recall(self) -> float:
        return self.security_recalled / self.security_fixes if self.security_fixes else 1.0


def summarise(results: list[CommitResult]) -> Summary:
    per_rule: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in results:
        for f, ok in zip(r.findings, r.verdicts, strict=True):
            row = per_rule[f.get("rule") or f.get("type") or "?"]
            row[0] += 1
            row[1] += int(ok)
    remarks: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in results:
        for f, ok in zip(r.remarks, r.remark_verdicts, strict=True):
            row = remarks[f.get("rule") or f.get("type") or "?"]
            row[0] += 1
            row[1] += int(ok)
    fixes = [r for r in results if r.commit.is_security_fix]
    return Summary(
        commits=len(results),
        findings=sum(len(r.findings) for r in results),
        worth=sum(sum(r.verdicts) for r in results),
        security_fixes=len(fixes),
        security_recalled=sum(r.recalled for r in fixes),
        blocked_by_fixture=sum(r.blocked_by_fixture for r in results),
        median_seconds=statistics.median(r.seconds for r in results) if results else 0.0,
        per_rule={k: (v[0], v[1]) for k, v in sorted(per_rule.items())},
        remarks_per_rule={k: (v[0], v[1]) for k, v in sorted(remarks.items())},
    )


@dataclass(frozen=True)
class Skipped:
    """A labelled commit that could not be reviewed on this machine, and why."""

    commit: LabelledCommit
    reason: str


def has_commit(root: Path, sha: str) -> bool:
    proc = subprocess.run(
        ["git", "-C", str(root), "cat-file", "-e", f"{sha}^{{commit}}"], capture_output=True, check=False
    )
    return proc.returncode == 0


def evaluate(
    work: Path, commits: list[LabelledCommit] | None = None
) -> tuple[list[CommitResult], list[Skipped]]:
    """Review every labelled commit that is on this machine; (results, commits skipped and why).

    A repository without a mirror, or a mirror fetched before the commit, skips the commit: the
    report names each one, so figures from an incomplete run are never mistaken for the full set.
    """
    commits = commits if commits is not None else load_commits()
    results: list[CommitResult] = []
    skipped: list[Skipped] = []
    clones: dict[str, Path | None] = {}
    for c in commits:
        if c.repo not in clones:
            mirror = mirror_of(c.repo)
            clones[c.repo] = (
                clone_for_review(mirror, work / c.repo.replace("/", "+")) if mirror is not None else None
            )
        root = clones[c.repo]
        if root is None:
            skipped.append(Skipped(c, f"no mirror of {c.repo}"))
        elif not has_commit(root, c.commit):
            skipped.append(Skipped(c, f"the mirror of {c.repo} lacks the commit"))
        else:
            results.append(run_commit(root, c))
    return results, skipped


def kinds(results: list[CommitResult]) -> Counter[str]:
    return Counter(r.commit.kind for r in results)
