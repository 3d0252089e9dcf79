"""Benchmark of semfora on large repositories: the ansible 10.7.0 sdist (scale) and Django 5.1.4 (mid-size).

Run: ``python -m tests.bench.bench_scale`` (part of ``make bench``). Each corpus is copied, put
under git (one commit: what a user's clone looks like) and measured in one run:

- files in git, code files indexed, symbols, tracked source bytes;
- cold index (symbols, calls, graphs and the full-text index; no vectors) against ctags over
  the same tree, alternated run by run, wall and CPU seconds, medians: ``ctags -R`` over the
  whole tree (every file ctags knows; for Django, ``--languages=Python``, as issues 2 and 14
  measured it), and beside it ``ctags -L`` over exactly the code files semfora parses; peak
  memory (PSS of the whole process tree) in one extra, sampled run;
- bytes on disk: index.db in total and per table (SQLite's ``dbstat``) against the tracked bytes;
- re-index with nothing changed and with one file changed (inside the indexing process, and
  the whole ``semfora index`` command);
- ``overview`` first (a new index state) and second, ``context`` and ``search`` as fresh
  processes (the ``semfora`` command, bytecode compiled) and inside one warm process.

A third tree, ``polyglot``, puts thirteen registry packages side by side (Python sdists, npm
tarballs, Debian source of PHP, Go and Ruby libraries: the context benchmark's corpora) and is
measured the same way, without targets, with a per-language profile of where the CPU goes:
tree-sitter's parse, its query captures (both in C) and the Python that turns captures into
symbols, calls and imports, per MB of source, on one core.

``SEMFORA_BENCH_BASELINE=DIR`` (a checkout of another commit) measures the same steps for that
code in the same run, alternated with this one, for a before/after table on a shared machine.
``SEMFORA_BENCH_RUNS`` (default 3) sets the number of timed runs; ``SEMFORA_BENCH_ONLY=ansible``
(or ``django``, ``polyglot``) measures one corpus.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.bench import corpora
from tests.bench.args import no_arguments
from tests.bench.bench_engine import LAST_CPU, _run_measured
from tests.bench.report import write_section

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
SEMFORA = str(Path(sys.executable).with_name("semfora"))
RUNS = int(os.environ.get("SEMFORA_BENCH_RUNS", "3"))
# Fresh-process runs of each command: enough for a stable median on a noisy machine.
CLI_RUNS = 5
# In-process repetitions of context and search after one warm-up.
WARM_RUNS = 10
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}
# Targets of issue 14 (ratios are to ctags measured in the same run).
ANSIBLE_COLD_RATIO = 6.0
DJANGO_COLD_RATIO = 12.0
RSS_TARGET_MB = 1024.0
DISK_RATIO = 1.5
NO_CHANGE_S = 0.5
OVERVIEW_SECOND_S = 0.3
CONTEXT_FRESH_S = 0.8
ONE_FILE_S = 0.3  # Django's (engine benchmark) target

TASKS = {
    "ansible": [
        "how does ansible-vault decrypt an encrypted file",
        "where are a module's arguments validated against its argument spec",
        "add a retry with backoff to the uri module's HTTP request",
        "explain how the ssh connection plugin builds its command line",
        "why would a playbook's handlers not be notified",
    ],
    "django": [
        "how does the CSRF middleware check the token",
        "where are database migrations applied",
        "add a max_length check to the slug field validation",
        "explain how the template engine resolves variables",
        "why would a redirect response lose its query string",
    ],
}
SEARCHES = {
    "ansible": ["vault decrypt", "argument spec validation", "ssh connection command", "handler notify"],
    "django": ["csrf token", "apply migration", "template variable resolve", "redirect response"],
}
# The file each corpus's one-file re-index edits (a real module, appended a small function).
ONE_FILE = {
    "ansible": "ansible_collections/community/general/plugins/modules/ini_file.py",
    "django": "django/utils/text.py",
    "polyglot": "django/django/utils/text.py",
}
TASKS["polyglot"] = [
    "how does express route a request to its handler",
    "where does monolog format a log record",
    "how does cobra parse command line flags",
    "explain how rack builds the response body",
    "how does the CSRF middleware check the token",
]
SEARCHES["polyglot"] = ["route handler", "log record formatter", "command flags parse", "response body"]
# The polyglot tree: one directory per registry package (names as the context benchmark's corpora).
POLYGLOT = (
    "django",
    "flask",
    "click-8.1.7",
    "werkzeug-3.1.3",
    "jinja2-3.1.4",
    "rich-13.7.1",
    "httpx-0.27.0",
    "express",
    "axios-1.7.4",
    "commander-12.1.0",
    "monolog-2.9.1",
    "mux-1.8.0",
    "cobra-1.6.1",
    "rack-2.2.22",
)

_PROFILE = """
import json, sys, time
from collections import defaultdict
from pathlib import Path
from engine.config import load_settings
from engine.store.discovery import discover
from engine.semantic.extract import _compiled, _parser, analyze_source
from tree_sitter import QueryCursor
root = Path(sys.argv[1])
found = discover(root, load_settings(root).settings.index)
by = defaultdict(list)
for c in found.candidates:
    by[c.language].append(c.path)
out = {}
for language, paths in sorted(by.items(), key=lambda kv: -len(kv[1])):
    data = [(p, (root / p).read_bytes()) for p in paths]
    analyze_source("warm-up", b"", language)
    compiled = _compiled(language)
    if compiled is None:
        continue
    parser, query = _parser(language), compiled.query
    t = time.process_time()
    trees = [parser.parse(d) for _p, d in data]
    parse = time.process_time() - t
    t = time.process_time()
    for tree in trees:
        QueryCursor(query).captures(tree.root_node)
    captures = time.process_time() - t
    del trees
    t = time.process_time()
    symbols = sum(len(analyze_source(p, d, language).symbols) for p, d in data)
    full = time.process_time() - t
    out[language] = {"files": len(data), "bytes": sum(len(d) for _p, d in data), "parse": parse,
                     "captures": captures, "full": full, "symbols": symbols}
print(json.dumps(out))
"""

_INDEX = """
import json, sys, time
from engine.config import load_settings
from engine.index.indexer import index_repository
from engine.repo.layout import RepoLayout
layout = RepoLayout.for_path(sys.argv[1])
settings = load_settings(layout.root).settings
t = time.perf_counter()
r = index_repository(layout, settings)
print(json.dumps({"seconds": time.perf_counter() - t, "files": r.files, "symbols": r.symbols,
                  "edges": r.edges, "changed": r.changed, "added": r.added}))
"""

_WARM = """
import json, statistics, sys, time
from engine import api as tools
from engine.config import load_settings
from engine.index.hybrid import search
from engine.orchestrator.core import Orchestrator
from engine.repo.layout import RepoLayout
root, tasks, queries, runs = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), int(sys.argv[4])
layout = RepoLayout.for_path(root)
settings = load_settings(layout.root).settings
out = {}
with tools.Engine.open(root) as engine:
    times = []
    for _ in range(2):
        t = time.perf_counter(); tools.get_repo_overview(engine); times.append(time.perf_counter() - t)
    out["overview"] = times
orch = Orchestrator(layout, settings)
orch.build_context(tasks[0], 8000)
ctx = []
for i in range(runs):
    t = time.perf_counter(); orch.build_context(tasks[i % len(tasks)], 8000); ctx.append(time.perf_counter() - t)
orch.close()
search(layout, settings, queries[0], record_metrics=False)
found = []
for i in range(runs):
    t = time.perf_counter(); search(layout, settings, queries[i % len(queries)], record_metrics=False)
    found.append(time.perf_counter() - t)
out["context"] = ctx
out["search"] = found
print(json.dumps(out))
"""


@dataclass
class Figures:
    """Everything measured for one corpus and one code tree."""

    label: str
    cold: list[float] = field(default_factory=list)
    cold_cpu: list[float] = field(default_factory=list)
    ctags: list[float] = field(default_factory=list)  # ctags -R over the tree (the targets' baseline)
    ctags_cpu: list[float] = field(default_factory=list)
    ctags_code: list[float] = field(default_factory=list)  # ctags -L over the code files
    ctags_code_cpu: list[float] = field(default_factory=list)
    peak_mb: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)
    disk: int = 0
    tables: list[tuple[str, int]] = field(default_factory=list)
    no_change: list[float] = field(default_factory=list)
    no_change_cli: list[float] = field(default_factory=list)
    one_file: list[float] = field(default_factory=list)
    overview_cli: list[float] = field(default_factory=list)  # first, then the rest
    context_cli: list[float] = field(default_factory=list)
    search_cli: list[float] = field(default_factory=list)
    warm: dict[str, list[float]] = field(default_factory=dict)
    languages: dict[str, dict[str, float]] = field(default_factory=dict)


def _env(cache: Path, code: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        XDG_CACHE_HOME=str(cache),
        SEMFORA_EMBEDDING="none",
        OLLAMA_HOST="http://127.0.0.1:9",
        PYTHONPATH=str(code or ROOT),
        **GIT_ENV,
    )
    return env


def _git_copy(src: Path, dest: Path) -> None:
    shutil.copytree(src, dest, symlinks=True)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "corpus"]):
        subprocess.run(["git", "-C", str(dest), *args], check=True, env={**os.environ, **GIT_ENV})


def _tracked(root: Path) -> tuple[int, int]:
    names = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z"], capture_output=True, check=True
    ).stdout.split(b"\0")
    files = [n.decode("utf-8", "surrogateescape") for n in names if n]
    return len(files), sum((root / f).lstat().st_size for f in files)


# ctags -R as the issues measured it: Django (issue 2's baseline) is a Python tree.
CTAGS_TREE_ARGS = {"django": ["--languages=Python"]}


def _ctags(root: Path, args: list[str], out: Path) -> tuple[float, float]:
    started = time.perf_counter()
    cpu_before = _cpu_children()
    # Options before the file arguments: ctags takes what follows "." as more files.
    subprocess.run(["/usr/bin/ctags", "-f", str(out), *args], cwd=root, check=True, capture_output=True)
    return time.perf_counter() - started, _cpu_children() - cpu_before


def _cpu_children() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _db(cache: Path) -> Path:
    return next(cache.glob("semfora/*/index.db"))


def _code_files(root: Path) -> list[str]:
    """The files semfora indexes as code (the same discovery the indexer runs)."""
    from engine.config import load_settings
    from engine.store.discovery import discover

    found = discover(root, load_settings(root).settings.index)
    return [c.path for c in found.candidates if c.language is not None]


def _tables(db: Path) -> list[tuple[str, int]]:
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        try:
            rows = conn.execute(
                "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
            ).fetchall()
        except sqlite3.OperationalError:  # an SQLite built without dbstat
            return []
    return [(str(n), int(s)) for n, s in rows]


# Every child runs here, not in the project directory: ``python -c`` puts the working directory
# first on sys.path, which would import this checkout's engine instead of the baseline's.
NEUTRAL_CWD = Path(tempfile.gettempdir())


def _run(cmd: list[str], env: dict[str, str], *, sample: bool = False) -> tuple[float, str, int]:
    return _run_measured(cmd, env, NEUTRAL_CWD, sample=sample)


def _cli(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    wall, out, _peak = _run([SEMFORA, *args], env)
    return wall, out


def _measure(corpus: str, root: Path, work: Path, code: Path | None, label: str, fig: Figures) -> None:
    """One round of every measurement for one code tree (called once per round, alternating trees)."""
    env_cold = _env(work / f"cold-{label}", code)
    shutil.rmtree(work / f"cold-{label}", ignore_errors=True)
    wall, out, _ = _run([PY, "-c", _INDEX, str(root)], env_cold, sample=False)
    report = json.loads(out)
    fig.cold.append(report["seconds"])
    fig.cold_cpu.append(LAST_CPU["seconds"])
    fig.counts = {k: int(report[k]) for k in ("files", "symbols", "edges")}
    print(
        f"  {corpus} [{label}] cold {report['seconds']:.2f}s (process {wall:.2f}s, CPU {LAST_CPU['seconds']:.1f}s)",
        flush=True,
    )


def _steady(corpus: str, root: Path, work: Path, code: Path | None, label: str, fig: Figures) -> None:
    """Everything after a cold build, on the index that build left (memory run included)."""
    cache = work / f"steady-{label}"
    shutil.rmtree(cache, ignore_errors=True)
    env = _env(cache, code)
    _wall, out, peak = _run([PY, "-c", _INDEX, str(root)], env, sample=True)
    fig.peak_mb = peak / 1024
    db = _db(cache)
    fig.tables = _tables(db)  # checkpoints the WAL first, so the file holds every page
    fig.disk = db.stat().st_size
    for _ in range(RUNS):
        _w, out, _ = _run([PY, "-c", _INDEX, str(root)], env, sample=False)
        assert json.loads(out)["changed"] == 0
        fig.no_change.append(json.loads(out)["seconds"])
        wall, out = _cli(["index", "--path", str(root), "--no-vectors", "--json"], env)
        fig.no_change_cli.append(wall)
    target = root / ONE_FILE[corpus]
    original = target.read_bytes()
    try:
        for i in range(RUNS):
            with target.open("a", encoding="utf-8") as fh:
                fh.write(f"\n\ndef bench_added_{label}_{i}(value):\n    return str(value)\n")
            _w, out, _ = _run([PY, "-c", _INDEX, str(root)], env, sample=False)
            report = json.loads(out)
            assert report["changed"] == 1, report
            fig.one_file.append(report["seconds"])
        # The index state just changed: the first overview builds and stores, the next ones read.
        for _ in range(CLI_RUNS + 1):
            wall, _out = _cli(["overview", "--path", str(root)], env)
            fig.overview_cli.append(wall)
        for i in range(CLI_RUNS):
            wall, _out = _cli(
                ["context", TASKS[corpus][i % len(TASKS[corpus])], "--path", str(root), "--json"], env
            )
            fig.context_cli.append(wall)
        for i in range(CLI_RUNS):
            query = SEARCHES[corpus][i % len(SEARCHES[corpus])]
            wall, _out = _cli(["search", query, "--path", str(root), "--json"], env)
            fig.search_cli.append(wall)
        _w, out, _ = _run(
            [
                PY,
                "-c",
                _WARM,
                str(root),
                json.dumps(TASKS[corpus]),
                json.dumps(SEARCHES[corpus]),
                str(WARM_RUNS),
            ],
            env,
        )
        fig.warm = json.loads(out)
    finally:
        target.write_bytes(original)
        _run([PY, "-c", _INDEX, str(root)], env, sample=False)
    print(
        f"  {corpus} [{label}] peak {fig.peak_mb:.0f} MB, disk {fig.disk / 1e6:.0f} MB, no-change "
        f"{statistics.median(fig.no_change):.3f}s, one file {statistics.median(fig.one_file):.3f}s, "
        f"overview 2nd {statistics.median(fig.overview_cli[1:]):.2f}s, context {statistics.median(fig.context_cli):.2f}s",
        flush=True,
    )


def _polyglot(dest: Path) -> Path:
    """One tree of every package in ``POLYGLOT``, each in a directory of its own."""
    for name in POLYGLOT:
        shutil.copytree(corpora.corpus(name), dest / name.split("-")[0], symlinks=True)
    return dest


def _corpus(
    corpus: str, src: Path, work: Path, baseline: Path | None
) -> tuple[Figures, Figures | None, dict[str, Any]]:
    root = work / corpus
    if corpus == "polyglot":
        staging = _polyglot(work / "polyglot-src")
        _git_copy(staging, root)
        shutil.rmtree(staging, ignore_errors=True)
    else:
        _git_copy(src, root)
    subprocess.run(
        [PY, "-m", "compileall", "-q", str(ROOT / "engine"), str(ROOT / "semfora_tui")], check=False
    )
    if baseline is not None:
        subprocess.run(
            [PY, "-m", "compileall", "-q", str(baseline / "engine"), str(baseline / "semfora_tui")],
            check=False,
        )
    files_in_git, tracked_bytes = _tracked(root)
    fig = Figures("this commit")
    base = Figures("baseline") if baseline is not None else None
    listing = work / f"{corpus}-code-files.txt"  # ctags reads exactly the files semfora indexes
    listing.write_text("\n".join(_code_files(root)) + "\n", encoding="utf-8")
    for _round in range(RUNS):
        ctags_s, ctags_cpu = _ctags(root, [*CTAGS_TREE_ARGS.get(corpus, []), "-R", "."], work / "tags")
        fig.ctags.append(ctags_s)
        fig.ctags_cpu.append(ctags_cpu)
        code_s, code_cpu = _ctags(root, ["-L", str(listing)], work / "tags-code")
        fig.ctags_code.append(code_s)
        fig.ctags_code_cpu.append(code_cpu)
        print(
            f"  {corpus} ctags -R {ctags_s:.2f}s (CPU {ctags_cpu:.1f}s), -L code files {code_s:.2f}s "
            f"(CPU {code_cpu:.1f}s)",
            flush=True,
        )
        _measure(corpus, root, work, None, "new", fig)
        if base is not None:
            _measure(corpus, root, work, baseline, "old", base)
    _steady(corpus, root, work, None, "new", fig)
    if corpus == "polyglot":
        _w, out, _ = _run([PY, "-c", _PROFILE, str(root)], _env(work / "profile", None))
        fig.languages = json.loads(out)
    if base is not None:
        _steady(corpus, root, work, baseline, "old", base)
    meta = {"files_in_git": files_in_git, "tracked_bytes": tracked_bytes}
    shutil.rmtree(root, ignore_errors=True)
    return fig, base, meta


def _med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _ok(good: bool) -> str:
    return "met" if good else "**missed**"


def _section(corpus: str, fig: Figures, base: Figures | None, meta: dict[str, Any]) -> str:
    ctags = _med(fig.ctags)
    cold = _med(fig.cold)
    ratio = cold / ctags
    ratio_target = ANSIBLE_COLD_RATIO if corpus == "ansible" else DJANGO_COLD_RATIO
    disk_ratio = fig.disk / meta["tracked_bytes"]
    overview_first = fig.overview_cli[0]
    overview_second = _med(fig.overview_cli[1:])
    warm_ov = fig.warm.get("overview", [float("nan"), float("nan")])

    base_rule = "---|" if base is not None else ""
    rows = [
        (
            "cold index vs ctags (in-process wall, median)",
            f"{cold:.2f} s = **{ratio:.1f} × ctags**",
            f"≤ {ratio_target:.0f} ×" if corpus != "polyglot" else "",
            _ok(ratio <= ratio_target) if corpus != "polyglot" else "",
            lambda b: f"{_med(b.cold):.2f} s = {_med(b.cold) / ctags:.1f} ×",
        ),
        (
            "the same against `ctags -L` over only the code files semfora parses",
            f"{cold / _med(fig.ctags_code):.1f} × ({_med(fig.ctags_code):.2f} s)",
            "",
            "",
            lambda b: f"{_med(b.cold) / _med(fig.ctags_code):.1f} ×",
        ),
        (
            "cold index CPU seconds (process tree) vs ctags -R CPU",
            f"{_med(fig.cold_cpu):.1f} s = {_med(fig.cold_cpu) / _med(fig.ctags_cpu):.1f} ×",
            "",
            "",
            lambda b: f"{_med(b.cold_cpu):.1f} s",
        ),
        (
            "peak memory (PSS of the process tree)",
            f"{fig.peak_mb:.0f} MB",
            f"≤ {RSS_TARGET_MB:.0f} MB" if corpus == "ansible" else "",
            _ok(fig.peak_mb <= RSS_TARGET_MB) if corpus == "ansible" else "",
            lambda b: f"{b.peak_mb:.0f} MB",
        ),
        (
            "index.db on disk vs tracked source",
            f"{fig.disk / 1e6:.0f} MB = **{disk_ratio:.2f} ×**",
            f"≤ {DISK_RATIO} ×" if corpus == "ansible" else "",
            _ok(disk_ratio <= DISK_RATIO) if corpus == "ansible" else "",
            lambda b: f"{b.disk / 1e6:.0f} MB = {b.disk / meta['tracked_bytes']:.2f} ×",
        ),
        (
            "re-index, nothing changed (in-process / whole command)",
            f"{_med(fig.no_change):.3f} s / {_med(fig.no_change_cli):.2f} s",
            f"≤ {NO_CHANGE_S} s" if corpus == "ansible" else "",
            _ok(_med(fig.no_change) <= NO_CHANGE_S) if corpus == "ansible" else "",
            lambda b: f"{_med(b.no_change):.3f} s / {_med(b.no_change_cli):.2f} s",
        ),
        (
            "re-index, one file changed (in-process)",
            f"{_med(fig.one_file):.3f} s",
            f"≤ {ONE_FILE_S} s" if corpus == "django" else "",
            _ok(_med(fig.one_file) <= ONE_FILE_S) if corpus == "django" else "",
            lambda b: f"{_med(b.one_file):.3f} s",
        ),
        (
            "`semfora overview`, fresh process: first after a change / then (median)",
            f"{overview_first:.2f} s / {overview_second:.2f} s",
            f"2nd ≤ {OVERVIEW_SECOND_S} s" if corpus == "ansible" else "",
            _ok(overview_second <= OVERVIEW_SECOND_S) if corpus == "ansible" else "",
            lambda b: f"{b.overview_cli[0]:.2f} s / {_med(b.overview_cli[1:]):.2f} s",
        ),
        (
            "overview in process: first / second call",
            f"{warm_ov[0] * 1000:.0f} ms / {warm_ov[1] * 1000:.1f} ms",
            "",
            "",
            lambda b: f"{b.warm['overview'][0] * 1000:.0f} ms / {b.warm['overview'][1] * 1000:.1f} ms",
        ),
        (
            "`semfora context --json`, fresh process (median of 5 tasks)",
            f"{_med(fig.context_cli):.2f} s",
            f"≤ {CONTEXT_FRESH_S} s" if corpus == "ansible" else "",
            _ok(_med(fig.context_cli) <= CONTEXT_FRESH_S) if corpus == "ansible" else "",
            lambda b: f"{_med(b.context_cli):.2f} s",
        ),
        (
            "`build_context` in a warm process (p50)",
            f"{_med(fig.warm['context']) * 1000:.0f} ms",
            "",
            "",
            lambda b: f"{_med(b.warm['context']) * 1000:.0f} ms",
        ),
        (
            "`semfora search --json`, fresh process (median)",
            f"{_med(fig.search_cli):.2f} s",
            "",
            "",
            lambda b: f"{_med(b.search_cli):.2f} s",
        ),
        (
            "hybrid search in a warm process (p50)",
            f"{_med(fig.warm['search']) * 1000:.0f} ms",
            "",
            "",
            lambda b: f"{_med(b.warm['search']) * 1000:.0f} ms",
        ),
    ]
    lines = ["| measure | result | target | |" + (" baseline (same run) |" if base is not None else "")]
    lines.append("|---|---|---|---|" + base_rule)
    for name, result, target, verdict, fn in rows:
        lines.append(
            f"| {name} | {result} | {target} | {verdict} |" + (f" {fn(base)} |" if base is not None else "")
        )
    table = "\n".join(lines)
    top = ", ".join(f"`{n}` {s / 1e6:.1f}" for n, s in fig.tables[:12])
    total_pages = sum(s for _n, s in fig.tables)
    languages = ""
    if fig.languages:
        rows_l = [
            "| language | files | MB | symbols | parse (C) s/MB | captures (C) s/MB | Python s/MB | all, CPU s |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for name, v in fig.languages.items():
            mb = max(v["bytes"] / 1e6, 1e-9)
            python = max(0.0, v["full"] - v["parse"] - v["captures"])
            rows_l.append(
                f"| {name} | {v['files']:,} | {mb:.1f} | {v['symbols']:,} | {v['parse'] / mb:.2f} | "
                f"{v['captures'] / mb:.2f} | {python / mb:.2f} | {v['full']:.2f} |"
            )
        languages = (
            "\nWhere the extraction CPU goes, per language (one core, this tree): tree-sitter's parse and "
            "query captures run in C; the rest is the Python that walks the captures.\n\n"
            + "\n".join(rows_l)
            + "\n"
        )
    base_top = ""
    if base is not None and base.tables:
        base_top = (
            "\nBaseline, the same: " + ", ".join(f"`{n}` {s / 1e6:.1f}" for n, s in base.tables[:8]) + " MB."
        )
    return f"""### {corpus}

{meta["files_in_git"]:,} files in git ({meta["tracked_bytes"] / 1e6:.0f} MB tracked), {fig.counts.get("files", 0):,} code files
indexed, {fig.counts.get("symbols", 0):,} symbols, {fig.counts.get("edges", 0):,} call sites. `ctags -R {" ".join(CTAGS_TREE_ARGS.get(corpus, []))}`
over the tree, alternated with the cold builds: {", ".join(f"{t:.2f}" for t in fig.ctags)} s (CPU {_med(fig.ctags_cpu):.1f} s);
`ctags -L` over the code files: {", ".join(f"{t:.2f}" for t in fig.ctags_code)} s (CPU {_med(fig.ctags_code_cpu):.1f} s).
Cold builds: {", ".join(f"{t:.2f}" for t in fig.cold)} s{"; baseline: " + ", ".join(f"{t:.2f}" for t in base.cold) + " s" if base is not None else ""}.

{table}

Bytes on disk per table and index (MB, `dbstat`; {total_pages / 1e6:.0f} MB of pages in a {fig.disk / 1e6:.0f} MB file): {top}.{base_top}
{languages}"""


def main() -> int:
    no_arguments("bench_scale", __doc__)
    load_before = os.getloadavg()[0]
    baseline = (
        Path(os.environ["SEMFORA_BENCH_BASELINE"]) if os.environ.get("SEMFORA_BENCH_BASELINE") else None
    )
    only = os.environ.get("SEMFORA_BENCH_ONLY")
    work = Path(os.environ.get("SEMFORA_BENCH_WORK") or tempfile.mkdtemp(prefix="semfora-scale-")) / "scale"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    sections = []
    try:
        for corpus, fetch in (
            ("ansible", corpora.ansible),
            ("django", corpora.django),
            ("polyglot", corpora.django),
        ):
            if only and corpus != only:
                continue
            print(f"corpus {corpus}", flush=True)
            fig, base, meta = _corpus(corpus, fetch(), work, baseline)
            sections.append(_section(corpus, fig, base, meta))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load_after = os.getloadavg()[0]
    body = f"""## Large repositories (issue 14)

Reproduce: `python -m tests.bench.bench_scale` (or `make bench BENCH=bench_scale`). Each corpus (PyPI sdist)
is copied and committed to a fresh git repository; every figure is the median of {RUNS} runs in this one
process, cold builds alternated with ctags. Index times are measured inside the indexing process
(`index_repository`, with the full-text index, without vectors); commands are whole fresh processes
(`semfora ...`, bytecode compiled). Memory is the PSS of the whole process tree, sampled every 20 ms
in one extra cold run.

{chr(10).join(sections)}
Machine load (1-minute average, 2 cores) was {load_before:.1f} at the start and {load_after:.1f} at the end
(a start above ~1 means other work shared the cores: ratios to ctags hold better than absolute times).
"""
    write_section("scale", body)
    print(body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
