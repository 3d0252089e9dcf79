"""Ranked symbol search over index.db: exact, prefix, identifier parts, substring, fuzzy.

Each tier is one indexed SQL lookup (name_lower, symbol_terms) so a query costs
milliseconds on tens of thousands of symbols; the two scanning tiers run only
when the indexed ones did not fill the limit. Read-only; never writes.
"""

from __future__ import annotations

import difflib
import sqlite3
from typing import Any

from engine.semantic.model import Symbol

# Tier scores: an exact name always outranks a prefix, which outranks a word match, etc.
SCORE_EXACT = 100.0
SCORE_QUALIFIED = 95.0
SCORE_PREFIX = 80.0
SCORE_PARTS = 60.0
SCORE_SUBSTRING = 40.0
SCORE_FUZZY = 20.0
# Fuzzy matches below this difflib ratio are noise, not typos.
FUZZY_MIN_RATIO = 0.75
# At most this many distinct names are compared in the fuzzy tier, to bound its cost.
FUZZY_CANDIDATES = 3000
# Per tier, fetch this many times the limit so the in-tier ordering has room to work.
TIER_OVERFETCH = 4
# Candidates in the word tier before scoring; common words ("get") match thousands.
PARTS_CANDIDATES = 400


def _filter_sql(module: str | None, kind: str | None, risk: str | None) -> tuple[str, list[Any]]:
    from engine.store.db import SymbolStore

    where, params = SymbolStore._filters(module, kind, risk)
    return (" AND " + where[len("WHERE ") :]) if where else "", params


def _tier_key(row: tuple[Any, ...]) -> tuple[Any, ...]:
    # Shorter names first (closer to the query), exported before private, then stable by place.
    return (len(row[1]), not row[11], row[4], row[6])


def rank_symbols(
    conn: sqlite3.Connection,
    query: str,
    *,
    module: str | None = None,
    kind: str | None = None,
    risk: str | None = None,
    limit: int = 20,
) -> list[Symbol]:
    """The best ``limit`` symbols for ``query``; see the module docstring for the tiers."""
    from engine.store.db import _SYMBOL_COLUMNS, _row_to_symbol, identifier_parts

    q = query.strip()
    if not q or limit <= 0:
        return []
    ql = q.lower()
    extra, fparams = _filter_sql(module, kind, risk)
    chosen: dict[int, tuple[float, tuple[Any, ...]]] = {}
    cols = f"sid, {_SYMBOL_COLUMNS}"

    def take(score: float, rows: list[tuple[Any, ...]]) -> None:
        for row in sorted(rows, key=lambda r: _tier_key(r[1:])):
            if len(chosen) >= limit:
                return
            if row[0] not in chosen:
                chosen[row[0]] = (score, row[1:])

    def run(sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
        return conn.execute(sql, params).fetchall()

    fetch = limit * TIER_OVERFETCH
    if "." in q or "::" in q:
        take(
            SCORE_QUALIFIED,
            run(f"SELECT {cols} FROM symbols WHERE qualified_name = ?{extra} LIMIT ?", [q, *fparams, fetch]),
        )
        ql = ql.replace("::", ".").rsplit(".", 1)[-1]
    take(
        SCORE_EXACT,
        run(f"SELECT {cols} FROM symbols WHERE name_lower = ?{extra} LIMIT ?", [ql, *fparams, fetch]),
    )
    if len(chosen) < limit:
        take(
            SCORE_PREFIX,
            run(
                f"SELECT {cols} FROM symbols WHERE name_lower > ? AND name_lower < ?{extra} "
                "ORDER BY length(name_lower) LIMIT ?",
                [ql, ql + "\uffff", *fparams, fetch],
            ),
        )
    parts = sorted(set(identifier_parts(q)))
    if len(chosen) < limit and parts:
        marks = ",".join("?" * len(parts))
        sids = [
            r[0]
            for r in run(
                f"SELECT sid FROM symbol_terms WHERE term IN ({marks}) GROUP BY sid "
                f"HAVING count(DISTINCT term) = ? LIMIT ?",
                [*parts, len(parts), PARTS_CANDIDATES],
            )
        ]
        if sids:
            smarks = ",".join("?" * len(sids))
            take(
                SCORE_PARTS,
                run(f"SELECT {cols} FROM symbols WHERE sid IN ({smarks}){extra}", [*sids, *fparams]),
            )
    if len(chosen) < limit and len(ql) >= 3:
        take(
            SCORE_SUBSTRING,
            run(
                f"SELECT {cols} FROM symbols WHERE instr(name_lower, ?) > 0{extra} LIMIT ?",
                [ql, *fparams, fetch],
            ),
        )
    if len(chosen) < limit and len(ql) >= 4:
        names = [
            r[0]
            for r in run(
                "SELECT DISTINCT name_lower FROM symbols WHERE name_lower >= ? AND name_lower < ? LIMIT ?",
                [ql[:2], ql[:2] + "\uffff", FUZZY_CANDIDATES],
            )
        ]
        matcher = difflib.SequenceMatcher(b=ql, autojunk=False)
        close: list[tuple[float, str]] = []
        for name in names:
            matcher.set_seq1(name)
            if matcher.real_quick_ratio() >= FUZZY_MIN_RATIO and matcher.quick_ratio() >= FUZZY_MIN_RATIO:
                ratio = matcher.ratio()
                if ratio >= FUZZY_MIN_RATIO:
                    close.append((ratio, name))
        for ratio, name in sorted(close, reverse=True)[:limit]:
            take(
                SCORE_FUZZY * ratio,
                run(
                    f"SELECT {cols} FROM symbols WHERE name_lower = ?{extra} LIMIT ?", [name, *fparams, limit]
                ),
            )
    return [_row_to_symbol(row) for _score, row in chosen.values()]
