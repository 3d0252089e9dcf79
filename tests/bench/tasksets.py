"""The context benchmark's task sets: loading them, and checking every gold symbol against the index.

Owns the task-file format and the list of sets ``bench_context`` and ``retrieval_eval`` run. It never
builds packs or scores them (``pack_metrics`` scores, ``bench_context`` runs).

A task file is JSON: ``{"about": ..., "tasks": [...]}``. A task has ``id``, ``corpus`` (a name in
``tests.bench.corpora.CORPORA``), ``query`` (the task text the user types) and ``gold``: the symbols
that must be read or changed, each ``[file, qualified name]`` or ``{"file", "symbol", "start_line"}``
(file relative to the corpus root, qualified name as semfora names it, start line to tell apart two
definitions of one name). The new set adds ``kind`` (``real``: from a project's history, with
``source`` saying where; ``synthetic``: written for the set) and ``intent``.

Held-out parts are separate files (``*heldout*.json``): tuning never looks at them, and every table
reports them on their own rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
QUERIES = HERE / "queries"
NEWSET = QUERIES / "context"
ISSUES = QUERIES / "issues"


@dataclass(frozen=True)
class GoldRef:
    file: str
    symbol: str
    start_line: int | None = None
    sha256: str | None = None  # real tasks: the text of the symbol at the fix's parent commit


@dataclass(frozen=True)
class BenchTask:
    id: str
    set: str
    corpus: str
    query: str
    gold: tuple[GoldRef, ...]
    heldout: bool
    kind: str = "synthetic"  # real | synthetic
    intent: str = ""
    source: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class TaskSet:
    """One named set: its public file(s) and its held-out file(s)."""

    name: str
    title: str
    public: tuple[Path, ...]
    heldout: tuple[Path, ...]

    def load(self) -> list[BenchTask]:
        out: list[BenchTask] = []
        for paths, heldout in ((self.public, False), (self.heldout, True)):
            for path in paths:
                out += load_file(path, self.name, heldout)
        return out


def _gold(entry: Any) -> GoldRef:
    if isinstance(entry, list | tuple):
        return GoldRef(str(entry[0]), str(entry[1]), int(entry[2]) if len(entry) > 2 else None)
    if isinstance(entry, dict):
        line = entry.get("start_line")
        return GoldRef(
            str(entry["file"]),
            str(entry["symbol"]),
            int(line) if line is not None else None,
            str(entry["sha256"]) if entry.get("sha256") else None,
        )
    raise ValueError(f"gold entry must name a file and a symbol: {entry!r}")


def load_file(path: Path, set_name: str, heldout: bool) -> list[BenchTask]:
    """The tasks of one file (none when the file does not exist yet)."""
    if not path.is_file():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    rows = data.get("tasks", []) if isinstance(data, dict) else data
    return [
        BenchTask(
            id=str(row["id"]),
            set=set_name,
            corpus=str(row["corpus"]),
            query=str(row["query"]),
            gold=tuple(_gold(g) for g in row["gold"]),
            heldout=heldout,
            kind=str(row.get("kind", "synthetic")),
            intent=str(row.get("intent", "")),
            source=dict(row.get("source") or {}),
        )
        for row in rows
    ]


SETS: dict[str, TaskSet] = {
    "newset": TaskSet(
        "newset",
        "the context set (real-history and synthetic tasks, many repositories and languages)",
        tuple(sorted(NEWSET.glob("*public*.json"))) if NEWSET.is_dir() else (),
        tuple(sorted(NEWSET.glob("*heldout*.json"))) if NEWSET.is_dir() else (),
    ),
    "issues": TaskSet(
        "issues",
        "real issue reports (a GitHub issue's title and body as the task, the fix that closed it as gold)",
        (ISSUES / "public.json",),
        (ISSUES / "heldout.json",),
    ),
    "flask-django": TaskSet(
        "flask-django",
        "the search benchmark's set (synthetic, Flask 3.1.0 and Django 5.1.4)",
        (QUERIES / "tasks.json",),
        (QUERIES / "heldout.json",),
    ),
}


def load_sets(names: Iterable[str] | None = None) -> list[BenchTask]:
    chosen = list(names) if names else list(SETS)
    unknown = [n for n in chosen if n not in SETS]
    if unknown:
        raise SystemExit(f"unknown task set(s): {', '.join(unknown)} (known: {', '.join(SETS)})")
    return [t for n in chosen for t in SETS[n].load()]


class GoldMissing(SystemExit):
    """A gold symbol the index of its pinned corpus does not have: the set or the corpus is wrong."""


def resolve_gold(tasks: Iterable[BenchTask], store: Any) -> dict[GoldRef, Any]:
    """Each gold reference of ``tasks`` → the indexed symbol it names; fails loudly on any miss.

    ``store`` is a ``SymbolStore`` of the corpus. A reference with a start line must match it
    exactly; one without must be unambiguous in its file or is taken at its first definition.
    """
    found: dict[GoldRef, Any] = {}
    missing: list[str] = []
    by_file: dict[str, list[Any]] = {}
    for task in tasks:
        for ref in task.gold:
            if ref in found:
                continue
            if ref.file not in by_file:
                by_file[ref.file] = store.symbols_in_file(ref.file)
            matches = [s for s in by_file[ref.file] if s.qualified_name == ref.symbol]
            if ref.start_line is not None:
                matches = [s for s in matches if s.start_line == ref.start_line]
            if not matches:
                missing.append(
                    f"{task.id}: {ref.file} {ref.symbol}" + (f" @{ref.start_line}" if ref.start_line else "")
                )
                continue
            found[ref] = matches[0]
    if missing:
        raise GoldMissing(
            f"{len(missing)} gold symbol(s) are not in the index of their corpus:\n  " + "\n  ".join(missing)
        )
    return found


def check_pinned(refs: dict[GoldRef, Any], read: Any) -> None:
    """Fail loudly when a real task's gold symbol, as indexed in the pinned corpus, is not the text
    its fix's parent commit had (``sha256`` recorded in the task file). ``read(file)`` is the file's text."""
    from tests.bench.real_history import gold_hash, symbol_text

    wrong = [
        f"{ref.file} {ref.symbol}"
        for ref, sym in refs.items()
        if ref.sha256 and gold_hash(symbol_text(read(ref.file), sym.start_line, sym.end_line)) != ref.sha256
    ]
    if wrong:
        raise GoldMissing(
            f"{len(wrong)} gold symbol(s) differ from their fix's parent commit in the pinned corpus:\n  "
            + "\n  ".join(wrong)
        )
