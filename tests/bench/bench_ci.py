"""Benchmark: `semfora ci` over a 20-commit range of a real repository (Flask 3.1.0).

Method: the Flask 3.1.0 sdist is unpacked, `git init` over it and committed as the base. A
seeded script then makes 20 commits of ordinary changes to Flask's own functions: a new
keyword parameter, a logging line, a new helper that shells out / fetches / writes a file,
a private function renamed with its call sites, a deleted function, a new test. The range
is reviewed as one pull request and commit by commit, deterministically; then the whole CLI
run is repeated with the fake Anthropic server answering the model review.

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


def main() -> None:
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
    body = f"""## CI review (`semfora ci`)

Reproduce: `python -m tests.bench.bench_ci` (medians of {RUNS} runs).

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
    write_section("ci", body)
    print(body)


if __name__ == "__main__":
    main()
