"""Building and re-checking the real-history tasks of the context set (a developer tool, not a benchmark).

A real task is a fix from a project's history: the commit, its parent, the changelog line (or
issue text) that describes it in the user's words, and as gold the functions and methods the
commit changed, named and placed as semfora's extractor sees them *at the parent*. Benchmarks
never fetch from GitHub, so each task is pinned to a released sdist / npm tarball / Debian
package whose copy of every gold function is byte-identical to the parent's.

This module owns that procedure:

- ``candidates``: every commit in a range of a local git mirror (``fetch github:owner/name``) with
  the source functions it changed at its first parent, and whether each one is identical in a
  pinned corpus directory. It prints JSON lines for a person to pick tasks from.
- ``task``: one task file row for a chosen fix: its gold at the parent, each located and
  hash-checked in the pinned corpus, and the task text read from a file (a changelog line, or a
  GitHub issue's title and body as its reporter wrote them). It refuses a fix whose gold is not
  byte-identical in the corpus.
- ``gold_hash``: the sha256 of a symbol's text, recorded per gold in the task file
  (``sha256``), so that ``verify_pinned`` can prove at bench time, without GitHub, that the
  pinned corpus holds exactly the parent's code (bench_context calls it for every real task).

Run: ``python -m tests.bench.real_history candidates --git DIR --range A..B --corpus PATH
[--map repo/prefix=corpus/prefix]``, or ``... task --git DIR --commit SHA --corpus PATH
--corpus-name NAME --id ID --text FILE --repo owner/name --text-from URL``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Extensions whose changes can make gold: the languages the context set covers.
SOURCE_EXTENSIONS = (".py", ".js", ".mjs", ".cjs", ".ts", ".go", ".rb", ".php")
# Symbol kinds a gold may be (functions, methods and what a JS assignment defines).
FUNCTION_KINDS = frozenset({"function", "method", "constructor", "arrow", "getter", "setter"})
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True)
class Changed:
    file: str
    symbol: str
    kind: str
    start_line: int
    end_line: int
    text: str

    @property
    def sha256(self) -> str:
        return gold_hash(self.text)


def gold_hash(text: str) -> str:
    """The recorded fingerprint of a gold symbol's text (its lines, joined by \\n, no trailing \\n)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def symbol_text(source: str, start: int, end: int) -> str:
    return "\n".join(source.splitlines()[start - 1 : end])


def _git(git_dir: Path, *args: str) -> str:
    proc = subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout.decode("utf-8", errors="replace")


def _symbols(rel: str, source: str) -> list[Any]:
    from engine.semantic.extract import analyze_source

    return list(analyze_source(rel, source.encode("utf-8")).symbols)


def _is_source(rel: str) -> bool:
    from engine.policy.paths import classify_path

    return rel.endswith(SOURCE_EXTENSIONS) and classify_path(rel) == "source"


def changed_lines(git_dir: Path, parent: str, commit: str, rel: str) -> set[int]:
    """Lines of ``rel`` at ``parent`` that ``commit`` removed or changed, plus, for a pure
    insertion, the lines either side of it (the insertion lands inside whatever holds both)."""
    diff = _git(git_dir, "diff", "-U0", "--no-color", parent, commit, "--", rel)
    lines: set[int] = set()
    for row in diff.splitlines():
        m = HUNK.match(row)
        if not m:
            continue
        start, count = int(m.group(1)), int(m.group(2) if m.group(2) is not None else 1)
        if count:
            lines.update(range(start, start + count))
        else:
            lines.update((start, start + 1))  # inserted after line `start`
    return lines


def changed_symbols(git_dir: Path, commit: str) -> tuple[str, list[Changed], list[str]]:
    """(parent, the innermost functions/methods the commit changed at its first parent, notes)."""
    parent = _git(git_dir, "rev-parse", f"{commit}^1").strip()
    names = _git(git_dir, "diff", "--name-only", "--no-renames", parent, commit).split()
    out: list[Changed] = []
    notes: list[str] = []
    for rel in names:
        if not _is_source(rel):
            continue
        try:
            source = _git(git_dir, "show", f"{parent}:{rel}")
        except RuntimeError:
            notes.append(f"{rel}: new file")
            continue
        syms = [s for s in _symbols(rel, source) if s.kind in FUNCTION_KINDS]
        lines = changed_lines(git_dir, parent, commit, rel)
        hit: dict[str, Any] = {}
        outside = 0
        for line in sorted(lines):
            holders = [s for s in syms if s.start_line <= line <= s.end_line]
            if not holders:
                outside += 1
                continue
            inner = min(holders, key=lambda s: s.end_line - s.start_line)
            hit[inner.id] = inner
        if outside:
            notes.append(f"{rel}: {outside} changed line(s) outside any function")
        for sym in sorted(hit.values(), key=lambda s: s.start_line):
            out.append(
                Changed(
                    rel,
                    sym.qualified_name,
                    sym.kind,
                    sym.start_line,
                    sym.end_line,
                    symbol_text(source, sym.start_line, sym.end_line),
                )
            )
    return parent, out, notes


def find_in_corpus(corpus: Path, rel: str, symbol: str, text: str) -> dict[str, Any] | None:
    """The corpus's copy of ``symbol`` in ``rel`` (start line, identical or not), None when absent."""
    path = corpus / rel
    if not path.is_file():
        return None
    source = path.read_bytes().decode("utf-8", errors="replace")
    best = None
    for sym in _symbols(rel, source):
        if sym.qualified_name != symbol:
            continue
        mine = symbol_text(source, sym.start_line, sym.end_line)
        found = {"start_line": sym.start_line, "identical": mine == text, "sha256": gold_hash(mine)}
        if found["identical"]:
            return found
        best = best or found
    return best


def verify_pinned(corpus: Path, gold: Iterable[dict[str, Any]]) -> list[str]:
    """Gold entries (``file``, ``symbol``, ``start_line``, ``sha256``) whose text in the pinned
    corpus is not the recorded parent-commit text: each is a reason the task is invalid."""
    bad = []
    for g in gold:
        path = corpus / g["file"]
        if not path.is_file():
            bad.append(f"{g['file']}: missing")
            continue
        source = path.read_bytes().decode("utf-8", errors="replace")
        syms = [s for s in _symbols(g["file"], source) if s.qualified_name == g["symbol"]]
        match = [s for s in syms if s.start_line == g.get("start_line")] or syms
        if not any(gold_hash(symbol_text(source, s.start_line, s.end_line)) == g["sha256"] for s in match):
            bad.append(f"{g['file']} {g['symbol']}: text differs from the fix's parent")
    return bad


def _map(rel: str, mapping: list[tuple[str, str]]) -> str:
    for src, dst in mapping:
        if rel.startswith(src):
            return dst + rel[len(src) :]
    return rel


def candidates(
    git_dir: Path, rev_range: str, corpus: Path, mapping: list[tuple[str, str]], merges: bool
) -> None:
    args = ["log", "--format=%H%x09%P%x09%s", "--first-parent" if merges else "--no-merges", rev_range]
    for row in _git(git_dir, *args).splitlines():
        commit, parents, subject = row.split("\t", 2)
        try:
            parent, changed, notes = changed_symbols(git_dir, commit)
        except RuntimeError as exc:
            print(json.dumps({"commit": commit, "error": str(exc)}))
            continue
        if not changed:
            continue
        gold = []
        for c in changed:
            rel = _map(c.file, mapping)
            found = find_in_corpus(corpus, rel, c.symbol, c.text)
            gold.append(
                {
                    "file": rel,
                    "symbol": c.symbol,
                    "start_line": found["start_line"] if found else None,
                    "parent_start_line": c.start_line,
                    "sha256": c.sha256,
                    "identical": bool(found and found["identical"]),
                    "present": found is not None,
                }
            )
        print(
            json.dumps(
                {
                    "commit": commit,
                    "parent": parent,
                    "merge": len(parents.split()) > 1,
                    "subject": subject,
                    "all_identical": all(g["identical"] for g in gold),
                    "gold": gold,
                    "notes": notes,
                }
            ),
            flush=True,
        )


class NotPinnable(RuntimeError):
    """A fix whose gold is missing from, or different in, the pinned corpus."""


def task_row(
    git_dir: Path,
    commit: str,
    corpus: Path,
    mapping: list[tuple[str, str]],
    *,
    task_id: str,
    corpus_name: str,
    query: str,
    repo: str,
    text_from: str,
) -> dict[str, Any]:
    """One real task (the context set's format) for the fix ``commit``, pinned to ``corpus``."""
    parent, changed, _notes = changed_symbols(git_dir, commit)
    if not changed:
        raise NotPinnable(f"{commit}: changes no function or method")
    gold = []
    for c in changed:
        rel = _map(c.file, mapping)
        found = find_in_corpus(corpus, rel, c.symbol, c.text)
        if not found or not found["identical"]:
            raise NotPinnable(f"{commit}: {rel} {c.symbol} is not identical in {corpus_name}")
        entry = {"file": rel, "symbol": c.symbol, "start_line": found["start_line"], "sha256": c.sha256}
        if entry not in gold:
            gold.append(entry)
    return {
        "id": task_id,
        "corpus": corpus_name,
        "kind": "real",
        "intent": "edit",
        "query": query,
        "gold": gold,
        "source": {
            "repo": repo,
            "fix_commit": _git(git_dir, "rev-parse", commit).strip(),
            "parent_commit": parent,
            "text_from": text_from,
            "pinned": corpus_name,
            "check": "each gold's text at parent_commit is byte-identical to the pinned release's "
            "(sha256 per gold; re-checked by bench_context)",
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("candidates")
    c.add_argument("--git", type=Path, required=True, help="a git directory (a fetched mirror)")
    c.add_argument("--range", required=True, help="A..B: commits after A up to B")
    c.add_argument("--corpus", type=Path, required=True, help="the unpacked pinned release")
    c.add_argument("--map", action="append", default=[], help="repo/prefix=corpus/prefix")
    c.add_argument("--first-parent", action="store_true", help="walk merges on the first-parent line")
    t = sub.add_parser("task")
    t.add_argument("--git", type=Path, required=True)
    t.add_argument("--commit", required=True)
    t.add_argument("--corpus", type=Path, required=True)
    t.add_argument("--corpus-name", required=True, help="its name in tests.bench.corpora.CORPORA")
    t.add_argument("--map", action="append", default=[])
    t.add_argument("--id", required=True)
    t.add_argument("--text", type=Path, required=True, help="a file holding the task text")
    t.add_argument("--repo", required=True, help="owner/name")
    t.add_argument("--text-from", required=True, help="where the text comes from (an issue's URL)")
    args = parser.parse_args(argv)
    mapping = [tuple(m.split("=", 1)) for m in args.map]
    if args.cmd == "task":
        row = task_row(
            args.git,
            args.commit,
            args.corpus,
            mapping,  # type: ignore[arg-type]
            task_id=args.id,
            corpus_name=args.corpus_name,
            query=args.text.read_text(encoding="utf-8").strip(),
            repo=args.repo,
            text_from=args.text_from,
        )
        print(json.dumps(row))
        return 0
    candidates(args.git, args.range, args.corpus, mapping, args.first_parent)  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main())
