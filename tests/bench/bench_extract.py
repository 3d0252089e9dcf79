"""Benchmark tree-sitter extraction alone (no store) on Django, and its recall against ctags.

Run: ``.venv/bin/python -m tests.bench.bench_extract`` (writes the "extract" section of
docs/benchmarks.md). Times are medians of RUNS runs; the ctags baseline is measured in
the same run so the ratio is comparable across machines.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from engine.semantic.extract import analyze_source
from tests.bench.args import no_arguments
from tests.bench.corpora import django, express
from tests.bench.report import write_section

# Three runs give a usable median on a noisy shared machine without taking minutes.
RUNS = 3
# The indexer uses two worker processes on this 2-core machine; so does this benchmark.
WORKERS = 2
# Files per task handed to a worker: large enough to amortise pickling.
CHUNK = 64


def _files(root: Path, suffix: str) -> list[tuple[str, bytes]]:
    return [
        (str(p.relative_to(root)), p.read_bytes()) for p in sorted(root.rglob(f"*{suffix}")) if p.is_file()
    ]


def _analyze_chunk(chunk: list[tuple[str, bytes]]) -> tuple[int, float]:
    """Symbols found and CPU seconds spent by this worker on the chunk."""
    start = time.process_time()
    found = sum(len(analyze_source(rel, data).symbols) for rel, data in chunk)
    return found, time.process_time() - start


def _ctags(root: Path, out: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        [
            "ctags",
            "-R",
            "--languages=Python",
            "--kinds-Python=cfm",
            "--fields=+n",
            "--output-format=json",
            "-f",
            str(out),
            ".",
        ],
        cwd=root,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - start


def _recall(root: Path, tags_file: Path, files: list[tuple[str, bytes]]) -> tuple[float, int, int]:
    spans: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for rel, data in files:
        for symbol in analyze_source(rel, data).symbols:
            spans.setdefault((rel, symbol.name), []).append((symbol.start_line, symbol.end_line))
    total = found = 0
    for line in tags_file.read_text(encoding="utf-8").splitlines():
        tag = json.loads(line)
        if tag.get("_type") != "tag":
            continue
        total += 1
        key = (tag["path"].removeprefix("./"), tag["name"])
        if any(start <= tag["line"] <= end for start, end in spans.get(key, ())):
            found += 1
    return found / total if total else 0.0, found, total


def main() -> None:
    no_arguments("bench_extract", __doc__)
    load_before = os.getloadavg()[0]
    root = django()
    files = _files(root, ".py")
    lines = sum(data.count(b"\n") for _, data in files)
    analyze_source("warm.py", b"def f():\n    pass\n")  # compile the query outside the timing

    tmp = Path(tempfile.mkdtemp(prefix="semfora-bench-"))
    try:
        ctags_times = [_ctags(root, tmp / f"tags{i}.json") for i in range(RUNS)]
        from tree_sitter_language_pack import get_parser

        parser = get_parser("python")
        parse_only = []
        for _ in range(RUNS):
            start = time.perf_counter()
            for _rel, data in files:
                parser.parse(data)
            parse_only.append(time.perf_counter() - start)
        serial, parallel, serial_cpu, parallel_cpu = [], [], [], []
        symbols = 0
        for _ in range(RUNS):
            start, cpu = time.perf_counter(), time.process_time()
            symbols = sum(len(analyze_source(rel, data).symbols) for rel, data in files)
            serial.append(time.perf_counter() - start)
            serial_cpu.append(time.process_time() - cpu)
        chunks = [files[i : i + CHUNK] for i in range(0, len(files), CHUNK)]
        with ProcessPoolExecutor(WORKERS) as pool:
            list(pool.map(_analyze_chunk, chunks[:WORKERS]))  # start workers and compile queries
            for _ in range(RUNS):
                start = time.perf_counter()
                results = list(pool.map(_analyze_chunk, chunks))
                parallel.append(time.perf_counter() - start)
                assert sum(found for found, _cpu in results) == symbols
                parallel_cpu.append(sum(cpu for _found, cpu in results))
        recall, found, total = _recall(root, tmp / "tags0.json", files)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    express_root = express()
    js_files = _files(express_root, ".js")
    js_symbols = sum(len(analyze_source(rel, data).symbols) for rel, data in js_files)

    ctags_s = statistics.median(ctags_times)
    serial_s = statistics.median(serial)
    parse_s = statistics.median(parse_only)
    parallel_s = statistics.median(parallel)
    per_100 = serial_s / lines * 100 * 1000
    body = f"""## Extraction (tree-sitter, no store)

Command: `.venv/bin/python -m tests.bench.bench_extract` — Django 5.1.4 sdist, {len(files)} `.py` files,
{lines:,} lines; medians of {RUNS} runs; {os.cpu_count()} CPUs visible.

| measure | value |
|---|---|
| `ctags -R --languages=Python --kinds-Python=cfm` | {ctags_s:.2f} s |
| tree-sitter parse alone, 1 process (the floor) | {parse_s:.2f} s ({parse_s / ctags_s:.1f} × ctags) |
| `analyze_source` over every file, 1 process | {serial_s:.2f} s wall, {statistics.median(serial_cpu):.2f} s CPU ({per_100:.2f} ms per 100 lines) |
| `analyze_source`, {WORKERS} worker processes | {parallel_s:.2f} s wall ({parallel_s / ctags_s:.1f} × ctags), {statistics.median(parallel_cpu):.2f} s CPU in the workers |
| symbols extracted | {symbols:,} |
| definition recall vs ctags (classes, functions, methods) | {recall:.2%} ({found:,} of {total:,}) |
| express@4.21.2: `.js` files / symbols | {len(js_files)} / {js_symbols} |

A ctags tag counts as found when a symbol of the same name in the same file spans its line.
Machine load (1-minute average) was {load_before:.1f} before and {os.getloadavg()[0]:.1f} after this run.
Target for the whole cold index (extraction is most of it): ≤ 8 × ctags.
"""
    write_section("extract", body)
    print(body)


if __name__ == "__main__":
    main()
