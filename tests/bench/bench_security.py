"""Benchmark: the read sandbox and the redactor against generated attacks (issue 11).

Method: the hostile repository of tests/engine/policy/hostile.py (links to /etc and to a victim
directory beside it, chains, loops, dangling links, links into .git and onto secrets, every
deny-list variant, a FIFO, long names; each trap holds a canary) is built, indexed and attacked
with seeded, generated cases through every surface that takes a path or returns content:

- the sandbox itself (resolve + read),
- @mentions in a task (a whole context pack is built),
- NEED blocks (the model's follow-up request),
- every MCP tool that takes a path or returns content (through ``engine.mcp_server.answer``,
  exactly what a client receives),
- the indexer, over freshly generated hostile trees (the whole cache directory is scanned),
- the redactor, over generated code, config and prose lines with one planted secret each.

An escape is a canary in anything returned (or a resolved path outside the root, in .git or on
the deny-list); a crash is any exception that is not a typed ``SemforaError``; a miss is a
planted secret that survives redaction. The redactor's throughput over Django's Python files is
reported beside it, since every chunk of every indexed file goes through it.

Run: ``python -m tests.bench.bench_security`` (``--cases N`` to scale; the default is 2,400).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

SEED = 11
DEFAULT_CASES = 2400
# Share of the cases given to each surface (the indexer runs are slow: a tree each).
SHARES = {"sandbox": 0.30, "mention": 0.15, "need": 0.20, "mcp": 0.25, "redaction": 0.09, "indexer": 0.01}
CONTENT_TOOLS = (
    ("analyze_file", "path"),
    ("analyze_directory", "path"),
    ("get_symbol_source", "symbol"),
    ("get_symbol", "symbol"),
    ("get_module", "module"),
    ("list_symbols", "module"),
    ("search_symbols", "query"),
    ("search", "query"),
    ("get_call_graph", "symbol"),
)
PLANT_TEMPLATES = (
    'API_KEY = "{s}"',
    "export GITHUB_TOKEN={s}",
    "DB_PASS={s}",
    "  password: {s}",
    '{{"client_secret": "{s}"}}',
    "url = 'postgres://admin:{s}@db:5432/app'",
    "git remote add origin https://deploy:{s}@github.com/o/r.git",
    "headers['Authorization'] = 'Bearer {s}'",
)
# A secret in prose, with no name before it, is found by its format only: known token shapes.
PROSE_TEMPLATE = "see the key {s} in the vault"
TOKEN_SHAPES = (
    lambda r: "AKIA" + "".join(r.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16)),
    lambda r: "ghp_" + "".join(r.choice("abcdefghijkmnopqrstuvwxyzABCDEFGH0123456789") for _ in range(36)),
    lambda r: (
        "sk-ant-api03-" + "".join(r.choice("abcdefghijklmnopqrstuvwxyz0123456789_-") for _ in range(40))
    ),
    lambda r: "xoxb-" + "".join(r.choice("0123456789") for _ in range(12)) + "-abcdefghijkl",
    lambda r: "sk_live_" + "".join(r.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(24)),
    lambda r: "glpat-" + "".join(r.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(20)),
)


def _password(r: random.Random) -> str:
    """A password has no format: it is found by the name it is assigned to."""
    return "Pw" + "".join(r.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(10)) + "9"


# Every LEGIT_EVERY-th sandbox and mention case is a legitimate path (a link that stays inside,
# "..", an absolute path to the root, Unicode, a 250-byte name): a sandbox that refused
# everything would have no escapes, so what it serves is counted too.
LEGIT_EVERY = 5


def legit_paths(root: Path) -> list[str]:
    return [
        "src/app.py",
        "src/ok_link.py",
        "c_in1.py",
        "./src/app.py",
        "src/../src/app.py",
        f"{root}/src/app.py",
        "src/café.py",
        "README.md",
        "l" * 250 + ".py",
    ]


class Tally:
    def __init__(self) -> None:
        self.legit: Counter[str] = Counter()
        self.served: Counter[str] = Counter()
        self.cases: Counter[str] = Counter()
        self.escapes: Counter[str] = Counter()
        self.crashes: Counter[str] = Counter()
        self.refused: Counter[str] = Counter()
        self.examples: list[str] = []

    def note(self, surface: str, *, escaped: bool = False, crashed: str = "", refused: bool = False) -> None:
        self.cases[surface] += 1
        if escaped:
            self.escapes[surface] += 1
        if crashed:
            self.crashes[surface] += 1
            if len(self.examples) < 10:
                self.examples.append(f"{surface}: {crashed}")
        if refused:
            self.refused[surface] += 1


def _attempt(tally: Tally, surface: str, fn: Any, leaked: Any) -> None:
    from engine.errors import SemforaError

    try:
        out = fn()
    except SemforaError:
        tally.note(surface, refused=True)
        return
    except Exception as exc:  # the benchmark counts what the product must never do
        tally.note(surface, crashed=f"{type(exc).__name__}: {exc}"[:200])
        return
    escaped = bool(leaked(out))
    if escaped and len(tally.examples) < 10:
        tally.examples.append(f"{surface}: escape {leaked(out)}")
    tally.note(surface, escaped=escaped)


def _attack_world(work: Path, counts: dict[str, int], rng: random.Random, tally: Tally) -> None:
    from engine.api import Engine
    from engine.config import load_settings
    from engine.index.pipeline import refresh_text_index
    from engine.mcp_server import answer, build_tools
    from engine.orchestrator.budget import ContextBudget
    from engine.orchestrator.context import ContextGatherer
    from engine.orchestrator.memory import SemforaMemory
    from engine.orchestrator.prompts import parse_need
    from engine.policy.names import is_git_component, is_secret_name
    from engine.policy.sandbox import read_text, resolve
    from engine.repo.layout import RepoLayout
    from tests.engine.policy.hostile import build_hostile_repo, hostile_paths, random_path

    repo = build_hostile_repo(work)
    layout = RepoLayout.for_path(repo.root)
    settings = load_settings(layout.root).settings
    engine = Engine(layout, settings)
    engine.index()
    refresh_text_index(layout, settings)
    gatherer = ContextGatherer(layout, settings, SemforaMemory())
    tools = build_tools(engine)
    real_root = os.path.realpath(repo.root)
    fixed = hostile_paths(repo)

    def path(n: int) -> str:
        return fixed[n] if n < len(fixed) else random_path(rng, repo)

    def sandbox_case(raw: str) -> Any:
        resolved = resolve(repo.root, raw, deny=settings.edits.deny)
        text = read_text(repo.root, raw, deny=settings.edits.deny)
        real = os.path.realpath(resolved.path)
        rel = os.path.relpath(real, real_root)
        bad = not real.startswith(real_root + os.sep) or any(is_git_component(p) for p in rel.split("/"))
        return ["outside/.git/secret"] if bad or is_secret_name(rel) else text

    legit = legit_paths(repo.root)
    for n in range(counts["sandbox"]):
        if n % LEGIT_EVERY == LEGIT_EVERY - 1:
            raw = legit[(n // LEGIT_EVERY) % len(legit)]
            tally.legit["sandbox"] += 1
            try:
                text = read_text(repo.root, raw, deny=settings.edits.deny)
                tally.served["sandbox"] += bool(text) and not repo.leaked(text)
            except Exception as exc:  # a legitimate path refused: counted, shown
                tally.examples.append(f"sandbox: refused legitimate {raw[:60]!r}: {exc}"[:200])
            continue
        raw = path(n)
        _attempt(
            tally,
            "sandbox",
            lambda raw=raw: sandbox_case(raw),
            lambda out: out if isinstance(out, list) else repo.leaked(out),
        )

    def pack_text(task: str) -> str:
        pack = gatherer.build(task, ContextBudget.from_settings(settings, 4000))
        return "\n".join(f"{i.file} {i.text} {i.reason}" for i in pack.items) + "\n".join(pack.notes)

    for n in range(counts["mention"]):
        if n % LEGIT_EVERY == LEGIT_EVERY - 1:
            raw = legit[(n // LEGIT_EVERY) % 3]  # src/app.py and two links to it
            tally.legit["mention"] += 1
            pack = gatherer.build(f"explain @{raw}", ContextBudget.from_settings(settings, 4000))
            tally.served["mention"] += any(i.kind == "file" and "def handler" in i.text for i in pack.items)
            continue
        raw = path(n)
        _attempt(tally, "mention", lambda raw=raw: pack_text(f"explain @{raw} and handler"), repo.leaked)

    def need_text(raws: list[str]) -> str:
        need = parse_need("NEED:\n" + "".join(f"- {r}\n" for r in raws if "\n" not in r))
        if need is None:
            return ""
        answer = gatherer.resolve_need(
            None, need.symbols, need.files, ContextBudget.from_settings(settings, 8000), 1
        )
        return "\n".join(i.text for i in answer.items)

    for n in range(counts["need"]):
        raws = [path(n)] + [random_path(rng, repo) for _ in range(rng.randint(0, 3))]
        _attempt(tally, "need", lambda raws=raws: need_text(raws), repo.leaked)

    def mcp_text(name: str, args: dict[str, Any]) -> str:
        structured, text = answer(tools[name], args)
        return json.dumps(structured) + text

    for n in range(counts["mcp"]):
        name, arg = CONTENT_TOOLS[n % len(CONTENT_TOOLS)]
        raw = path(n // len(CONTENT_TOOLS)) if n < len(fixed) * len(CONTENT_TOOLS) else random_path(rng, repo)
        _attempt(tally, "mcp", lambda name=name, arg=arg, raw=raw: mcp_text(name, {arg: raw}), repo.leaked)

    cache_text = "\n".join(
        p.read_bytes().decode("utf-8", "replace") for p in layout.cache_dir.rglob("*") if p.is_file()
    )
    tally.note("indexer", escaped=bool(repo.leaked(cache_text)))
    gatherer.close()
    engine.close()


def _random_trees(work: Path, count: int, rng: random.Random, tally: Tally) -> None:
    import subprocess

    from engine.config import load_settings
    from engine.index.indexer import index_repository
    from engine.index.pipeline import refresh_text_index
    from engine.policy.names import is_secret_name
    from engine.repo.layout import RepoLayout
    from tests.engine.policy.hostile import GIT_ENV, SECRET_FILES

    for n in range(count):
        base = work / f"tree{n}"
        root, out = base / "r", base / "out"
        root.mkdir(parents=True)
        out.mkdir()
        canary = f"CANARY_TREE_{n}_{rng.randrange(1 << 32):08x}"
        (out / "module.py").write_text(f'"""{canary}"""\ndef stolen():\n    return "{canary}"\n')
        for name in rng.sample(SECRET_FILES, 4) + ["ok.py", "lib/util.py", "notes.md"]:
            target = root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(f'X = "{canary}"\n' if is_secret_name(name) else "def fine():\n    return 1\n")
        if rng.random() < 0.5:
            subprocess.run(["git", "-C", str(root), "init", "-q"], check=True, env={**os.environ, **GIT_ENV})
            with (root / ".git" / "config").open("a") as fh:
                fh.write(f"# {canary}\n")
        for k, dest in enumerate(
            rng.sample(
                ["/etc", "/etc/passwd", str(out), str(out / "module.py"), ".git/config", ".env", "loop"], 4
            )
        ):
            os.symlink(dest, root / f"link{k}.py")
        (root / "requirements.txt").symlink_to(out / "module.py")

        def run(root: Path = root, canary: str = canary) -> str:
            layout = RepoLayout.for_path(root)
            cfg = load_settings(root).settings
            index_repository(layout, cfg)
            refresh_text_index(layout, cfg)
            return "\n".join(
                p.read_bytes().decode("utf-8", "replace") for p in layout.cache_dir.rglob("*") if p.is_file()
            )

        _attempt(tally, "indexer", run, lambda text, canary=canary: canary in text)


def _redaction_cases(count: int, rng: random.Random, tally: Tally) -> None:
    from engine.policy.redaction import redact

    filler = ["def f(x):", "    return x + 1", "# a comment", "value = compute(a, b)", "", "class A:"]
    for _ in range(count):
        if rng.random() < 0.25:
            secret, template = _password(rng), rng.choice(PLANT_TEMPLATES)
        else:
            secret, template = rng.choice(TOKEN_SHAPES)(rng), rng.choice((*PLANT_TEMPLATES, PROSE_TEMPLATE))
        line = template.format(s=secret)
        text = "\n".join(rng.sample(filler, 3) + [line] + rng.sample(filler, 2))
        _attempt(tally, "redaction", lambda text=text: redact(text), lambda out, s=secret: s in out)


def _throughput() -> tuple[float, int, float] | None:
    """(MB/s, files, MB) of redacting Django's Python files, median of 3 passes; None offline."""
    from engine.policy.redaction import redact

    try:
        from tests.bench.corpora import django

        root = django()
    except Exception as exc:  # no corpus here: the figure is left out, the cases still run
        print(f"no Django corpus ({exc}); throughput not measured", file=sys.stderr)
        return None
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in sorted(root.rglob("*.py"))]
    size = sum(len(t) for t in texts) / 1e6
    runs = []
    for _ in range(3):
        t0 = time.perf_counter()
        for t in texts:
            redact(t)
        runs.append(time.perf_counter() - t0)
    return size / statistics.median(runs), len(texts), size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=DEFAULT_CASES)
    parser.add_argument("--no-write", action="store_true", help="print, do not update docs/benchmarks.md")
    args = parser.parse_args(argv)
    counts = {k: max(1, int(args.cases * share)) for k, share in SHARES.items()}
    rng = random.Random(SEED)
    tally = Tally()
    work = (
        Path(os.environ.get("SEMFORA_BENCH_WORK") or tempfile.mkdtemp(prefix="bench-security-")) / "security"
    )
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    os.environ["XDG_CACHE_HOME"] = str(work / "xdg-cache")
    os.environ["XDG_CONFIG_HOME"] = str(work / "xdg-config")
    os.environ["SEMFORA_EMBEDDING"] = "none"
    os.environ.setdefault("OLLAMA_HOST", "http://127.0.0.1:9")
    started = time.perf_counter()
    _attack_world(work / "world", counts, rng, tally)
    _random_trees(work / "trees", counts["indexer"], rng, tally)
    _redaction_cases(counts["redaction"], rng, tally)
    seconds = time.perf_counter() - started
    throughput = _throughput()
    total = sum(tally.cases.values())
    escapes = sum(tally.escapes.values())
    crashes = sum(tally.crashes.values())
    rows = [
        f"| {surface} | {tally.cases[surface]} | {tally.refused[surface]} | {tally.escapes[surface]} | "
        f"{tally.crashes[surface]} | "
        + (f"{tally.served[surface]}/{tally.legit[surface]}" if tally.legit[surface] else "")
        + " |"
        for surface in ("sandbox", "mention", "need", "mcp", "indexer", "redaction")
    ]
    total += sum(tally.legit.values())
    body = "\n".join(
        [
            "## Security (read sandbox and redaction, issue 11)",
            "",
            f"Command: `python -m tests.bench.bench_security` (seed {SEED}, {total} generated cases, "
            f"{seconds:.0f} s). Cases are hostile paths (tests/engine/policy/hostile.py) through each "
            "surface; `refused` counts typed refusals (`error[CODE]`), an escape is a canary from "
            "outside the root, `.git` or a deny-listed file in anything returned (for `redaction`: a "
            "planted secret that survived), a crash is any untyped exception.",
            "",
            "| surface | hostile cases | refused (typed) | escapes | crashes | legitimate paths served |",
            "|---|---|---|---|---|---|",
            *rows,
            f"| **all** | **{total - sum(tally.legit.values())}** | {sum(tally.refused.values())} | "
            f"**{escapes}** | **{crashes}** | {sum(tally.served.values())}/{sum(tally.legit.values())} |",
            "",
            "@mentions and NEED requests never raise: a refused path becomes a note in the pack "
            "(`@x: not found, secret or outside the repository`), so their `refused` column is 0 and "
            "what counts is that no canary reaches the pack. Every fifth sandbox and mention case is a "
            "legitimate path (a link that stays inside, `..`, the absolute path, Unicode, a 250-byte "
            "name), so a sandbox that refused everything would show here.",
            "",
            (
                f"Redactor throughput: {throughput[0]:.1f} MB/s over Django 5.1.4's {throughput[1]} Python "
                f"files ({throughput[2]:.1f} MB), median of 3 passes. Every chunk, signature and docstring "
                "is redacted once at index time, so this is the cost the policy adds to a cold index."
                if throughput
                else "Redactor throughput: not measured (no Django corpus)."
            ),
        ]
        + (["", "First problems:", *[f"- {e}" for e in tally.examples]] if tally.examples else [])
    )
    print(body)
    if not args.no_write:
        from tests.bench.report import write_section

        write_section("security", body)
    shutil.rmtree(work, ignore_errors=True)
    wrongly_refused = sum(tally.legit.values()) - sum(tally.served.values())
    return 0 if escapes == 0 and crashes == 0 and wrongly_refused == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
