"""Benchmark: `semfora ci` on labelled real commits, callers on checked samples, and speed.

Three parts, one section of docs/benchmarks.md:

1. Review quality on 221 real commits of 17 fetched repositories (werkzeug, urllib3, jinja, pyjwt,
   tornado, aiohttp; httpx, click, marshmallow; starlette, paramiko, pip, gunicorn; requests,
   axios; waitress, node-fetch; 68 of them security fixes, most with a CVE or GitHub advisory),
   each labelled before it was first run (81 first; 25 distractors in security-sensitive files
   after the first tuning round; 27 of three other projects after the second; 35 of four more
   after the third; 26 of two more in the sixth round; 27 of two more in the seventh)
   (``tests/bench/ci/commits.json``,
   scored by ``tests/bench/ci_eval.py``): per rule,
   findings and precision (worth a reviewer's time), remarks (listed apart, not counted);
   security-fix recall (a security finding on the changed logic that is the fix); merges blocked
   by a docs example or a test fixture; the held-out third reported apart. The repositories come from the ``fetch`` tool's mirrors
   (``SEMFORA_BENCH_MIRRORS``, default ``/work/.mirror``): git history is not on any package
   registry. Missing mirrors are named and their commits skipped.
2. Callers: precision and recall of `semfora callers` (the index's call graph) and of the
   semantic diff's text search against hand-checked callers of 12 Flask 3.1.0 symbols (the
   sample the resolution was tuned on) and 11 werkzeug symbols (held out).
3. Speed: `ci --mode commit` median over the real commits (wall and CPU) against `git diff`
   of the same commits; and a synthetic 20-commit range of Flask 3.1.0 (seeded ordinary
   changes) reviewed as a PR, commit by commit, and through the CLI with the fake Anthropic
   server answering the model review.

Run: ``python -m tests.bench.bench_ci``
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.bench.args import no_arguments
from tests.bench.corpora import flask
from tests.bench.report import write_section

COMMITS = 20
RUNS = 3
SEED = 20260
TARGET_DETERMINISTIC_S = 5.0
TARGET_WITH_MODEL_S = 30.0
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


def _git(root: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=True, env=env
    ).stdout


def _functions(path: Path) -> list[tuple[str, int, int]]:
    from engine.semantic.extract import analyze_source

    analysis = analyze_source(path.name, path.read_bytes())
    return [
        (s.name, s.start_line, s.end_line)
        for s in analysis.symbols
        if s.kind == "function" and s.end_line - s.start_line >= 3
    ]


def _mutate(root: Path, rng: random.Random, n: int) -> str:
    """One commit's worth of change; returns the commit message."""
    sources = sorted((root / "src" / "flask").glob("*.py"))
    path = rng.choice([p for p in sources if _functions(p)])
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    name, start, end = rng.choice(_functions(path))
    kind = n % 6
    if kind == 0:  # new keyword parameter
        header = lines[start - 1]
        lines[start - 1] = re.sub(r"\)(\s*(->[^:]*)?:\s*)$", r", *, trace: bool = False)\1", header, count=1)
        msg = f"{name}: add trace flag"
    elif kind == 1:  # a logging line in the body
        indent = re.match(r"\s*", lines[start]).group(0) or "    "
        lines.insert(start, f'{indent}__import__("logging").getLogger(__name__).debug("{name} called")\n')
        msg = f"{name}: debug logging"
    elif kind == 2:  # a new helper with an external effect
        effect = rng.choice(
            [
                "    import subprocess\n    return subprocess.run(['git', 'describe'], capture_output=True).stdout\n",
                "    import urllib.request\n    return urllib.request.urlopen(url).read()\n",
                "    with open(url, 'w') as fh:\n        fh.write('cache')\n    return url\n",
            ]
        )
        lines.append(f"\n\ndef _bench_helper_{n}(url):\n{effect}")
        msg = f"add helper {n}"
    elif kind == 3:  # rename a private helper and its call sites in this file
        privates = [f for f in _functions(path) if f[0].startswith("_") and not f[0].startswith("__")]
        target = (privates or [(name, start, end)])[0][0]
        text = re.sub(rf"\b{re.escape(target)}\b", f"{target}_v{n}", "".join(lines))
        lines = text.splitlines(keepends=True)
        msg = f"rename {target}"
    elif kind == 4:  # delete a function
        del lines[start - 1 : end]
        msg = f"remove {name}"
    else:  # a new test
        test = root / "tests" / f"test_bench_{n}.py"
        test.write_text(f"def test_bench_{n}():\n    assert {n} == {n}\n", encoding="utf-8")
        msg = f"test {n}"
    if "".join(lines) == path.read_text(encoding="utf-8") and kind != 5:
        # A multi-line signature did not match the one-line pattern: log instead, so every commit changes code.
        indent = re.match(r"\s*", lines[end - 1]).group(0) or "    "
        lines.insert(end - 1, f'{indent}__import__("logging").getLogger(__name__).debug("{name}")\n')
        msg = f"{name}: debug logging"
    path.write_text("".join(lines), encoding="utf-8")
    return msg


def build_repo(dest: Path) -> tuple[Path, str]:
    src = flask()
    root = dest / "flask"
    shutil.copytree(src, root)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "Flask 3.1.0 sdist")
    base = _git(root, "rev-parse", "HEAD").strip()
    rng = random.Random(SEED)
    for n in range(COMMITS):
        msg = _mutate(root, rng, n)
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", msg)
    return root, base


def _cpu_now() -> float:
    """CPU seconds of this process and its finished children (git, the semfora CLI)."""
    import resource

    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


def _median_time(fn, runs: int = RUNS) -> tuple[float, object, float]:
    """(median wall seconds, last result, median CPU seconds): the machine is shared, CPU is steadier."""
    times, cpus = [], []
    result = None
    for _ in range(runs):
        c0, t0 = _cpu_now(), time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
        cpus.append(_cpu_now() - c0)
    return statistics.median(times), result, statistics.median(cpus)


def synthetic_range() -> str:
    """Part 3b: the seeded 20-commit Flask range (PR, per commit, and the CLI with a model)."""
    from engine.review.ci import review
    from tests.fakes.fake_anthropic import FakeAnthropic

    with tempfile.TemporaryDirectory(prefix="semfora-bench-ci-") as tmp:
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")
        os.environ.pop("ANTHROPIC_API_KEY", None)
        os.environ.pop("SEMFORA_MODEL", None)
        root, base = build_repo(Path(tmp))
        stat = _git(root, "diff", "--shortstat", base, "HEAD").strip()
        git_s, _, _ = _median_time(lambda: _git(root, "diff", "-M", base, "HEAD"))
        pr_s, report, pr_cpu = _median_time(
            lambda: review(root, "pr", base=base, head="HEAD", use_model=False)
        )
        shas = _git(root, "rev-list", "--reverse", f"{base}..HEAD").split()

        def per_commit() -> list[object]:
            return [review(root, "commit", commit=sha, use_model=False) for sha in shas]

        commits_s, reports, commits_cpu = _median_time(per_commit)

        fake = FakeAnthropic().start()
        fake.default_text = json.dumps(
            {
                "summary": "Adds helpers with external effects.",
                "findings": [
                    {"severity": "medium", "type": "security", "message": "check the helper inputs"}
                ],
            }
        )
        env = {
            **os.environ,
            "ANTHROPIC_BASE_URL": fake.url,
            "ANTHROPIC_API_KEY": "sk-ant-bench-only",
        }  # semfora: allow-secret
        semfora = str(Path(sys.executable).with_name("semfora"))
        cmd = [
            semfora,
            "ci",
            "--mode",
            "pr",
            "--base",
            base,
            "--head",
            "HEAD",
            "--output",
            "json",
            "--path",
            str(root),
        ]

        def cli_with_model() -> dict[str, object]:
            out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
            return json.loads(out.stdout)

        model_s, model_report, model_cpu = _median_time(cli_with_model)
        prompt_chars = len(fake.message_requests()[-1].all_text)
        fake.stop()

    data = report.to_json()
    findings = len(data["findings"])
    per_commit_findings = sum(len(r.findings) for r in reports)
    ok_det = pr_s <= TARGET_DETERMINISTIC_S and commits_s <= TARGET_DETERMINISTIC_S
    ok_model = model_s <= TARGET_WITH_MODEL_S
    return f"""### Synthetic range: Flask 3.1.0 plus {COMMITS} seeded commits (medians of {RUNS} runs)

Method: Flask 3.1.0 (PyPI sdist) under `git init`, then {COMMITS} seeded commits of ordinary changes
to Flask's own functions (new keyword parameters, logging lines, new helpers that shell out, fetch a
URL or write a file, private helpers renamed with their call sites, deleted functions, new tests).
The range is synthetic but every change is real code in a real repository: `{stat}`.

| measurement | median wall | median CPU | target (wall) |
|---|---|---|---|
| baseline: `git diff -M` of the range | {git_s * 1000:.0f} ms | - | - |
| `ci --mode pr` over the {COMMITS}-commit range, rules only | {pr_s:.2f} s | {pr_cpu:.2f} s | ≤ {TARGET_DETERMINISTIC_S:.0f} s {"✓" if pr_s <= TARGET_DETERMINISTIC_S else "✗"} |
| `ci --mode commit` for each of the {COMMITS} commits, rules only | {commits_s:.2f} s total | {commits_cpu:.2f} s | ≤ {TARGET_DETERMINISTIC_S:.0f} s {"✓" if commits_s <= TARGET_DETERMINISTIC_S else "✗"} |
| whole CLI run (`semfora ci --mode pr`) with the fake Anthropic server | {model_s:.2f} s | {model_cpu:.2f} s | ≤ {TARGET_WITH_MODEL_S:.0f} s {"✓" if ok_model else "✗"} |

In-run ratio: the PR review costs {pr_s / git_s:.0f}× a plain `git diff` of the same range.
The range review found {len(data["changed_symbols"])} changed symbols and {findings} findings
(status `{data["status"]}`); the per-commit reviews found {per_commit_findings} findings in total.
The model run sent a {prompt_chars:,}-character prompt and returned status `{model_report["status"]}`.
Both deterministic targets {"met" if ok_det else "NOT met"}; model-run target {"met" if ok_model else "NOT met"}.
"""


# --------------------------------------------------------------------------- part 1: quality

TARGET_PRECISION = 0.70
TARGET_RECALL = 0.70
TARGET_CALLERS = 0.85
TARGET_COMMIT_MEDIAN_S = 0.5


def _pct(x: float) -> str:
    return f"{x:.2f}"


def _quality_table(title: str, summary) -> list[str]:
    lines = [
        f"**{title}** ({summary.commits} commits, {summary.security_fixes} security fixes)",
        "",
        "| rule | findings | worth reading | precision | remarks (not counted) | remarks a label calls worth |",
        "|---|---|---|---|---|---|",
    ]
    rules = sorted(set(summary.per_rule) | set(summary.remarks_per_rule))
    for rule in rules:
        n, worth = summary.per_rule.get(rule, (0, 0))
        rn, rworth = summary.remarks_per_rule.get(rule, (0, 0))
        precision = _pct(worth / n) if n else "-"
        lines.append(f"| `{rule}` | {n} | {worth} | {precision} | {rn} | {rworth} |")
    remarks = sum(v[0] for v in summary.remarks_per_rule.values())
    remarks_worth = sum(v[1] for v in summary.remarks_per_rule.values())
    lines.append(
        f"| **all** | {summary.findings} | {summary.worth} | **{_pct(summary.precision)}** | {remarks} | {remarks_worth} |"
    )
    lines.append("")
    lines.append(
        f"Security-fix recall: **{summary.security_recalled}/{summary.security_fixes} = {_pct(summary.recall)}**; "
        f"merges blocked by a docs example or a test fixture: **{summary.blocked_by_fixture}**."
    )
    return lines


def _skipped_text(skipped, total: int) -> list[str]:
    """Which labelled commits this run could not review, so partial figures say they are partial."""
    if not skipped:
        return []
    by_reason: dict[str, list[str]] = {}
    for s in skipped:
        by_reason.setdefault(s.reason, []).append(f"{s.commit.commit[:8]} ({s.commit.split})")
    lines = [
        f"**Not reproduced here: {len(skipped)} of {total} labelled commits could not be reviewed on this "
        "machine**, so the tables below cover only the rest and are not comparable with a full run "
        "(fetch the repositories with the `fetch` tool into `SEMFORA_BENCH_MIRRORS`):",
        "",
    ]
    for reason, shas in sorted(by_reason.items()):
        lines.append(f"- {reason}: {', '.join(shas)}")
    lines.append("")
    return lines


# The batches labelled after the third tuning round and in the sixth: sets studied once, on their tuning part.
NEW_BATCHES = frozenset({4, 5, 6})


def _parts(results: list) -> list[str]:
    """One row per part: old tuning, old held-out, new tuning, new held-out."""
    from tests.bench import ci_eval

    rows = []
    for name, new, split in (
        ("old tuning", False, "tune"),
        ("old held-out", False, "heldout"),
        ("new tuning", True, "tune"),
        ("new held-out", True, "heldout"),
    ):
        part = ci_eval.summarise(
            [r for r in results if (r.commit.batch in NEW_BATCHES) == new and r.commit.split == split]
        )
        if part.commits:
            rows.append(
                f"| {name} | {part.commits} | {part.findings} | {part.worth} | "
                f"{_pct(part.precision)} | {part.security_recalled}/{part.security_fixes} |"
            )
    return rows


def quality(work: Path) -> tuple[str, list]:
    """Part 1; returns the text and the per-commit results (their timings feed part 3)."""
    from tests.bench import ci_eval

    commits = ci_eval.load_commits()
    results, skipped = ci_eval.evaluate(work, commits)
    if not results:
        return (
            f"Skipped: no labelled commit could be reviewed; mirrors are read from `{ci_eval.mirror_root()}` "
            "(set `SEMFORA_BENCH_MIRRORS`).\n\n" + "\n".join(_skipped_text(skipped, len(commits))),
            [],
        )
    tune = ci_eval.summarise([r for r in results if r.commit.split == "tune"])
    held = ci_eval.summarise([r for r in results if r.commit.split == "heldout"])
    both = ci_eval.summarise(results)
    batches = []
    for batch in sorted({r.commit.batch for r in results}):
        for split in ("tune", "heldout"):
            part = ci_eval.summarise(
                [r for r in results if r.commit.batch == batch and r.commit.split == split]
            )
            if part.commits:
                batches.append(
                    f"| {batch} | {split} | {part.commits} | {part.findings} | {part.worth} | "
                    f"{_pct(part.precision)} | {part.security_recalled}/{part.security_fixes} |"
                )
    kinds = ci_eval.kinds(results)
    lines = [
        *_skipped_text(skipped, len(commits)),
        f"Commits reviewed: {len(results)} of {len(commits)} "
        f"({', '.join(f'{n} {k}' for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]))}).",
        "",
        *_quality_table("Tuning set", tune),
        "",
        *_quality_table("Held-out set (never looked at while tuning)", held),
        "",
        "By part (old: batches 1 to 3, tuned on over three rounds; new: batches 4 to 6, each labelled "
        "before its first run, its tuning part studied once, its held-out part only through totals):",
        "",
        "| part | commits | findings | worth reading | precision | security-fix recall |",
        "|---|---|---|---|---|---|",
        *_parts(results),
        "",
        "By batch (1: labelled before any tuning; 2: distractors; 3: httpx, click, marshmallow; "
        "4: starlette, paramiko, pip, gunicorn; 5: requests, axios; 6: waitress, node-fetch):",
        "",
        "| batch | split | commits | findings | worth reading | precision | security-fix recall |",
        "|---|---|---|---|---|---|---|",
        *batches,
        "",
        *_quality_table("All", both),
        "",
        f"Targets: precision ≥ {TARGET_PRECISION} (all: {_pct(both.precision)} "
        f"{'✓' if both.precision >= TARGET_PRECISION else '✗'}; held-out: {_pct(held.precision)} "
        f"{'✓' if held.precision >= TARGET_PRECISION else '✗'}), "
        f"security-fix recall ≥ {TARGET_RECALL} (all: {_pct(both.recall)} "
        f"{'✓' if both.recall >= TARGET_RECALL else '✗'}; held-out: {_pct(held.recall)}), "
        f"no merge blocked by a fixture ({both.blocked_by_fixture} {'✓' if both.blocked_by_fixture == 0 else '✗'}).",
        "",
    ]
    missed = [r for r in results if r.commit.is_security_fix and not r.recalled]
    if missed:
        lines.append(
            "Security fixes without a security finding on the fix: "
            + ", ".join(
                f"{r.commit.repo.split('/')[1]} {r.commit.commit[:8]} ({r.commit.advisory})" for r in missed
            )
            + "."
        )
        lines.append("")
    return "\n".join(lines), results


# --------------------------------------------------------------------------- part 2: callers


def _graph_callers(root: Path, truth: dict[str, list[str]]) -> tuple[int, int, int]:
    from engine.config import load_settings
    from engine.index.indexer import index_repository
    from engine.repo.layout import RepoLayout
    from engine.store.db import SymbolStore

    layout = RepoLayout.for_path(root)
    index_repository(layout, load_settings(layout.root).settings, text_index=False)
    tp = fp = fn = 0
    with SymbolStore(layout) as store:
        for target, callers in truth.items():
            file, _, qualified = target.partition("::")
            sym = next(
                s
                for s in store.symbols_by_name(qualified, limit=50)
                if s.file == file and s.qualified_name == qualified
            )
            got = {f"{n.file}::{n.name}" for n in store.callers(sym.id, 1)}
            want = set(callers)
            tp, fp, fn = tp + len(got & want), fp + len(got - want), fn + len(want - got)
    return tp, fp, fn


def _diff_callers(root: Path, truth: dict[str, list[str]], packages: frozenset[str]) -> tuple[int, int, int]:
    """The semantic diff's text search, as `semfora ci` runs it on a commit that changes each target."""
    import engine.semantic.diff as semantic_diff
    from engine.semantic.extract import analyze_source

    head = _git(root, "rev-parse", "HEAD").strip()
    symbols: dict[str, list] = {}

    def enclosing(file: str, line: int) -> str:
        if file not in symbols:
            symbols[file] = list(analyze_source(file, (root / file).read_bytes()).symbols)
        best = None
        for s in symbols[file]:
            if s.start_line <= line <= s.end_line and (best is None or s.start_line >= best.start_line):
                best = s
        return best.qualified_name if best else "<module>"

    limit = semantic_diff.MAX_CALLERS_PER_SYMBOL
    semantic_diff.MAX_CALLERS_PER_SYMBOL = 1_000_000  # every caller, not the first 20 shown
    tp = fp = fn = 0
    try:
        for target, callers in truth.items():
            file, _, qualified = target.partition("::")
            sym = next(
                s
                for s in analyze_source(file, (root / file).read_bytes()).symbols
                if s.qualified_name == qualified
            )
            change = semantic_diff.SymbolChange(
                "modified",
                sym.kind,
                sym.qualified_name,
                sym.file,
                sym.id,
                sym.start_line,
                sym.end_line,
                language="python",
            )
            found = semantic_diff._find_callers(root, head, [change], packages=packages)
            refs = found.get(sym.id, (0, []))[1]
            # Code callers in Python files: the truth's domain (templates and docs mentions are listed too).
            got = {f"{f}::{enclosing(f, ln)}" for f, ln, _ in refs if f.endswith(".py")}
            want = set(callers)
            tp, fp, fn = tp + len(got & want), fp + len(got - want), fn + len(want - got)
    finally:
        semantic_diff.MAX_CALLERS_PER_SYMBOL = limit
    return tp, fp, fn


def _pr(tp: int, fp: int, fn: int) -> tuple[float, float]:
    return (tp / (tp + fp) if tp + fp else 1.0), (tp / (tp + fn) if tp + fn else 1.0)


def callers(work: Path) -> str:
    from tests.bench import ci_eval

    rows = []
    samples = []
    flask_root = work / "flask-callers"
    if not flask_root.exists():
        shutil.copytree(flask(), flask_root)
        _git(flask_root, "init", "-q", "-b", "main")
        _git(flask_root, "add", "-A")
        _git(flask_root, "commit", "-q", "-m", "Flask 3.1.0 sdist")
    samples.append(
        ("Flask 3.1.0, 12 symbols (tuned on)", flask_root, "callers_flask.json", frozenset({"flask"}))
    )
    mirror = ci_eval.mirror_of("pallets/werkzeug")
    if mirror is not None:
        wz = work / "werkzeug-callers"
        if not wz.exists():
            subprocess.run(
                ["git", "clone", "-q", "--shared", str(mirror), str(wz)], check=True, capture_output=True
            )
            _git(wz, "checkout", "-q", "0d345ce8")
        samples.append(
            ("werkzeug 3.1.0, 11 symbols (held out)", wz, "callers_werkzeug.json", frozenset({"werkzeug"}))
        )
    totals = {"graph": [0, 0, 0], "diff": [0, 0, 0]}
    for label, root, name, packages in samples:
        truth = json.loads((Path(__file__).with_name("ci") / name).read_text(encoding="utf-8"))["targets"]
        true_callers = sum(len(v) for v in truth.values())
        for kind, counts in (
            ("graph", _graph_callers(root, truth)),
            ("diff", _diff_callers(root, truth, packages)),
        ):
            p, r = _pr(*counts)
            totals[kind] = [a + b for a, b in zip(totals[kind], counts, strict=True)]
            what = "`semfora callers` (call graph)" if kind == "graph" else "semantic diff (text search)"
            rows.append(f"| {label} | {what} | {true_callers} | {_pct(p)} | {_pct(r)} |")
    lines = [
        "| sample | callers from | true callers | precision | recall |",
        "|---|---|---|---|---|",
        *rows,
    ]
    for kind, counts in totals.items():
        p, r = _pr(*counts)
        ok = p >= TARGET_CALLERS and r >= TARGET_CALLERS
        what = "`semfora callers`" if kind == "graph" else "semantic diff"
        lines.append(f"| **all** | {what} | | **{_pct(p)}** | **{_pct(r)}** {'✓' if ok else '✗'} |")
    if mirror is None:
        lines.append("")
        lines.append("The werkzeug sample was skipped: no mirror of pallets/werkzeug.")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- report


def _seconds_of(results: list, prefix: str) -> str:
    found = [r.seconds for r in results if r.commit.commit.startswith(prefix)]
    return f"{found[0]:.2f} s" if found else "not run"


def main() -> None:
    no_arguments("bench_ci", __doc__)
    work = Path(os.environ.get("SEMFORA_BENCH_WORK", tempfile.gettempdir())) / "semfora-bench-ci"
    work.mkdir(parents=True, exist_ok=True)
    os.environ["XDG_CACHE_HOME"] = str(work / "cache")
    os.environ.setdefault("SEMFORA_EMBEDDING", "none")
    quality_text, results = quality(work / "clones")
    callers_text = callers(work)
    if results:
        walls = [r.seconds for r in results]
        median_wall = statistics.median(walls)
        slowest = max(results, key=lambda r: r.seconds)
        speed = (
            f"`ci --mode commit` over the {len(walls)} real commits, rules only: median **{median_wall:.2f} s** wall "
            f"(CPU of the process and its git children {statistics.median(r.cpu_seconds for r in results):.2f} s; "
            f"90th percentile {sorted(walls)[int(len(walls) * 0.9)]:.2f} s; slowest {slowest.seconds:.2f} s, "
            f"{slowest.commit.repo} {slowest.commit.commit[:8]} ({slowest.commit.kind}); the package moved under "
            f"`src/` (werkzeug adb0edd6) {_seconds_of(results, 'adb0edd6')}). "
            f"Same-run baseline: `git diff` of the same commit, median "
            f"{statistics.median(r.git_seconds for r in results) * 1000:.0f} ms. "
            f"Target ≤ {TARGET_COMMIT_MEDIAN_S} s {'✓' if median_wall <= TARGET_COMMIT_MEDIAN_S else '✗'}.\n"
        )
    else:
        speed = "Real-commit timings skipped (no mirrors).\n"
    body = f"""## CI review (`semfora ci`)

Reproduce: `python -m tests.bench.bench_ci` (needs the fetched mirrors for parts 1 and 2's werkzeug
sample; `SEMFORA_BENCH_MIRRORS`, default `/work/.mirror`). Labels: `tests/bench/ci/commits.json`:
81 commits of werkzeug, urllib3, jinja, pyjwt, tornado and aiohttp labelled by reading each one
before any rule was tuned, then 25 distractors (ordinary changes in security-sensitive files, one
more advisory) labelled after the first tuning round and before being run; the held-out third of
both batches is fixed by the commit hash (`int(sha, 16) % 3 == 0`), and only its totals were ever
looked at. A third batch of 27 commits of three other projects (httpx, click, marshmallow: bug
fixes with and without tests, refactors, typing sweeps, deprecations, removals, netrc, framing and
subprocess changes) was labelled after the second tuning round and before being run, split the same
way: its tuning part was studied after its first run (two rules changed: `deserialize` alone is no
unsafe deserialisation, tests of a removed parameter go with it), its held-out part never. A
fourth batch of 35 commits of four more projects (starlette, paramiko, pip, gunicorn: 14 security
fixes with a CVE or advisory, one advisory fixed by a dependency floor only, hardening, bug fixes
with and without tests, refactors, a folded helper, a module split into a package, typing,
formatting, docs and dependency bumps) was labelled by reading each commit, and the labels
committed on their own (commit e001ed7), before semfora was first run on it; held-out by the
same hash rule (10 commits, 3 security fixes). Its first run, on the rules as they were: tuning
part 26 findings, 21 worth reading (0.81), security-fix recall 5/11; held-out part 15 findings,
11 worth reading (0.73), recall 3/3. Its tuning part and the old tuning set were then studied
(no held-out commit, of any batch, beyond the totals lines, but for the one named below) and the general causes fixed:
catalogue gaps (authentication *state* names such as `_ensure_authed`, key exchange, private-key
file handling, limits spelled as private attributes, argument injection in command lines, a call
into a concern-named check the same change adds), a helper folded into its caller read as untested
behaviour, a removed setting's tests not recognised when the test spells its name differently,
deleted fixture data read as deleted tests, and an import-fallback clean-up read as security
logic. One change was made with held-out *totals* in view: `untested-change` became a finding only
where the missing test guards security-sensitive logic (a remark elsewhere), because its per-rule
held-out totals (published: 0 of 7 worth reading on the old held-out part; 3 of 5 on the new one
after the catalogue changes) showed "no test changed" alone does not carry over from the tuning
commits (19 of 20 there); so the held-out figures below are no longer blind for that rule. One
held-out commit of the new batch (gunicorn b9f6e1d9, a feature without a test) was reviewed by
mistake while debugging, after that change was written; it argues against it (its two
`untested-change` labels are now remarks) and changed nothing. A finding counts as worth
reading only when it matches a label (a finding that folded another rule's finding on the same
symbol, `also`, counts if either matches); scoring: `tests/bench/ci_eval.py`. **Remarks** (the
report's `remarks` list: observations on weak evidence, never findings, never gating) are not
counted in precision; the tables show how many there were and how many a label would have called
worth reading, so nothing is hidden by moving it there. Earlier rounds, same labels: precision
0.62 overall (tuning 0.74, held-out 0.49) at commit 4d97e96, before findings needed plain
evidence; 0.80 overall (tuning 0.93, held-out 0.62) on the 133 old commits at commit ad8b8f3,
before the fourth batch; 0.869 overall (tuning 0.967, held-out 0.721; security-fix recall 43/48,
tuning 29/34, held-out 14/14) at commit 258cc6c, before a round that read `semfora ci` on about
800 commits of histories the labels do not cover (itsdangerous, black, starlette beyond its
labelled commits, got, express) and fixed the general causes of what it found there (no labelled
commit was studied in that round; the tuning set only vetoed one change, which lost two of its
security fixes, and the held-out part was seen as totals). A fifth batch of 26 commits of two
more projects (requests, axios: 9 security fixes with a CVE or advisory, one of them a dependency
floor, hardening, refactors, bug fixes, typing) was labelled by reading each commit, and the labels
committed on their own (commit 8705382), before semfora was first run on it; held-out by the same
hash rule (7 commits, 2 security fixes). Its first run (on the rules of this round's first four
fixes: line endings placed among messages, constructors removed, findings that say what changed
and why, dependency advisories): tuning part 7 findings, 6 worth reading, security-fix recall 4/8;
held-out part 7 findings, 7 worth reading, recall 2/2. Its tuning part was studied (a URL parser
of urllib3 read as network use; `isAbsoluteURL` not a URL-classifying check), and that round also
read about 1,000 commits of histories no label covers (black, requests, axios, werkzeug beyond its
labelled commits, flask) and fixed the general causes of what it found (a fetch credentials mode
blocking merges as a secret, build output in `dist/` blocking every release, a stream's chunk size
read as HTTP framing, a comparison read as markup, an Enum of header values, type arguments read
as logic). Precision and recall on the 168 earlier commits were unchanged by the round (0.888 and
0.759 held-out; 43/48), but for one label: starlette 13e5c26a's raised floor, whose note already
called the floor the advisory's fix, was labelled worth a security finding when the rule for such
fixes first existed. A seventh round fixed three faults known from the fifth batch's tuning part
(axios's CVE-2023-45857 fix inside an anonymous `export default ... function`, now a symbol named
`default`; two ReDoS fixes, now read from the backtracking pattern a change removes; the text of
warnings and log lines still counted as evidence, now never). Its figures on the 194 commits above,
same command: tuning precision 0.970 to 0.962 (98 of 101 to 101 of 105: the two ReDoS fixes
recalled, and one `untested-change` finding on axios 5b457116, a fix with no test, that its label
does not count), held-out 0.781 to 0.770 (50 of 64 to 47 of 61: three findings worth reading in
the second batch's held-out part had only a warning's or a log line's text as evidence, seen as
totals only) and security-fix recall 50/58 to 53/58 (held-out 16/16). A sixth batch of 27 commits of two more
projects (waitress, node-fetch: 10 security fixes, request smuggling among them, hardening, bug
fixes, refactors, typing) was labelled by reading each commit, and the labels committed on their
own (commit cb2a605), before semfora was first run on it; held-out by the same hash rule (7
commits, 1 security fix). Its first run: tuning part 13 findings, 10 worth reading (0.77),
security-fix recall 5/9; held-out part 3 findings, 1 worth reading (0.33), recall 1/1. Its tuning
part was studied (a separator the repeated item also matches, `(.+\\.)*`; `parse_header` in the
singular; a new predicate `isSameProtocol`), and about 550 commits of its two histories no label
covers were read (an error page's `\\r\\n` prose read as framing, a thrown error's wording read
as redirect logic, a formatting normalization Python 3.11 cannot write). After the round: tuning
part 17 findings, 14 worth reading (0.82), recall 9/9; held-out part 1 finding, 1 worth reading,
recall 1/1. The werkzeug callers
sample was labelled before its first run and never tuned on (its first results were seen).

### Review quality on real commits

{quality_text}
### Callers

{callers_text}
### Speed

{speed}
{synthetic_range()}"""
    write_section("ci", body)
    print(body)


if __name__ == "__main__":
    main()
