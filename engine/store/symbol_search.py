"""Ranked symbol search over index.db: exact, prefix, identifier parts, substring, fuzzy.

Each tier reads narrow rows through a covering index (name_lower, symbol_terms) and
only the final ``limit`` winners are loaded in full, so a query costs milliseconds
on tens of thousands of symbols. The scanning tiers (substring, fuzzy) run only
when the indexed ones found too little. Read-only; never writes.
"""

from __future__ import annotations

import difflib
import sqlite3
from typing import Any

from engine.semantic.model import Symbol
from engine.store.rows import SYMBOL_COLUMNS, identifier_parts, row_to_symbol, symbol_filters

# Per tier, consider this many times the limit so the in-tier ordering has room to work.
TIER_OVERFETCH = 4
# Prefix candidates read before ordering by length; "get" prefixes thousands of names.
PREFIX_CANDIDATES = 2000
# Candidates in the word tier before ordering; common words ("test") match thousands.
PARTS_CANDIDATES = 2000
# Counting a word's rows stops here: beyond it, the word is simply "common".
TERM_COUNT_CAP = 3000
# Substring matches are only looked for when the earlier tiers found fewer than this.
SUBSTRING_WHEN_FEWER = 10
# Fuzzy (typo) matches are only looked for when everything else found fewer than this.
FUZZY_WHEN_FEWER = 3
# Fuzzy matches below this difflib ratio are noise, not typos.
FUZZY_MIN_RATIO = 0.75
# Typo candidates share the first character and are within this many characters in length.
FUZZY_LENGTH_SLACK = 2
# At most this many distinct names are compared in the fuzzy tier, to bound its cost.
FUZZY_CANDIDATES = 3000

_LIGHT = "sid, short_name, exported, file, start_line"


def _filter_sql(module: str | None, kind: str | None, risk: str | None) -> tuple[str, list[Any]]:
    where, params = symbol_filters(module, kind, risk)
    return (" AND " + where[len("WHERE ") :]) if where else "", params


def _order(row: tuple[Any, ...]) -> tuple[Any, ...]:
    # Shorter names first (closer to the query), exported before private, then stable by place.
    return (len(row[1]), not row[2], row[3], row[4])


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
    q = query.strip()
    if not q or limit <= 0:
        return []
    ql = q.lower()
    extra, fparams = _filter_sql(module, kind, risk)
    filtered = bool(extra)
    chosen: dict[int, None] = {}

    def take(rows: list[tuple[Any, ...]]) -> None:
        for row in sorted(rows, key=_order):
            if len(chosen) >= limit:
                return
            chosen.setdefault(row[0], None)

    def light(where: str, params: list[Any], cap: int) -> list[tuple[Any, ...]]:
        sql = f"SELECT {_LIGHT} FROM symbols WHERE {where}{extra} LIMIT ?"
        return conn.execute(sql, [*params, *fparams, cap]).fetchall()

    def by_sids(sids: list[int]) -> list[tuple[Any, ...]]:
        if not sids:
            return []
        marks = ",".join("?" * len(sids))
        return light(f"sid IN ({marks})", list(sids), len(sids))

    fetch = limit * TIER_OVERFETCH
    if "." in q or "::" in q:
        take(light("qualified_name = ?", [q], fetch))
        take(light("name = ?", [q], fetch))  # JavaScript assignments: res.send
        ql = ql.replace("::", ".").rsplit(".", 1)[-1]
    else:
        # The name as typed before its other casings: `QuerySet` is the class, not 11 `queryset` methods.
        take(light("name = ?", [q], fetch))
    take(light("name_lower = ?", [ql], fetch))
    if len(chosen) < limit:
        # Narrow rows from the covering index, shortest first; full rows only for the winners.
        cands = conn.execute(
            "SELECT sid, name_lower FROM symbols INDEXED BY symbols_name_lower "
            "WHERE name_lower > ? AND name_lower < ? LIMIT ?",
            (ql, ql + "\uffff", PREFIX_CANDIDATES),
        ).fetchall()
        cands.sort(key=lambda r: len(r[1]))
        sids = [r[0] for r in cands if r[0] not in chosen]
        if filtered:
            take(by_sids(sids[: PREFIX_CANDIDATES // 2]))
        else:
            take(by_sids(sids[:fetch]))
    exact_hits = len(chosen)
    # Rarest word first (counted up to a cap); the others are probed on the (term, sid)
    # primary key, so a common word like "test" is never scanned in full.
    parts = sorted(
        set(identifier_parts(q)),
        key=lambda t: conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM symbol_terms WHERE term = ? LIMIT ?)", (t, TERM_COUNT_CAP)
        ).fetchone()[0],
    )
    if len(chosen) < limit and parts:
        probes = " ".join(
            "AND EXISTS (SELECT 1 FROM symbol_terms o WHERE o.term = ? AND o.sid = t.sid)" for _ in parts[1:]
        )
        sids = [
            r[0]
            for r in conn.execute(
                f"SELECT t.sid FROM symbol_terms t WHERE t.term = ? {probes} LIMIT ?",
                [*parts, PARTS_CANDIDATES],
            )
            if r[0] not in chosen
        ]
        take(by_sids(sids))
    # The scanning tiers are for names that do not exist as typed: substrings and typos.
    if not exact_hits and len(chosen) < SUBSTRING_WHEN_FEWER and len(ql) >= 3:
        sids = [
            r[0]
            for r in conn.execute(
                "SELECT sid FROM symbols INDEXED BY symbols_name_lower WHERE instr(name_lower, ?) > 0 LIMIT ?",
                (ql, fetch * 4),
            )
            if r[0] not in chosen
        ]
        take(by_sids(sids))
    if not exact_hits and len(chosen) < FUZZY_WHEN_FEWER and len(ql) >= 4:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT name_lower FROM symbols INDEXED BY symbols_name_lower "
                "WHERE name_lower >= ? AND name_lower < ? AND length(name_lower) BETWEEN ? AND ? LIMIT ?",
                (
                    ql[0],
                    ql[0] + "\uffff",
                    len(ql) - FUZZY_LENGTH_SLACK,
                    len(ql) + FUZZY_LENGTH_SLACK,
                    FUZZY_CANDIDATES,
                ),
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
        for _ratio, name in sorted(close, key=lambda c: (-c[0], c[1]))[:limit]:
            take(light("name_lower = ?", [name], limit))
    if not chosen:
        return []
    ids = list(chosen)
    marks = ",".join("?" * len(ids))
    rows = {
        r[0]: r[1:]
        for r in conn.execute(f"SELECT sid, {SYMBOL_COLUMNS} FROM symbols WHERE sid IN ({marks})", ids)
    }
    return [row_to_symbol(rows[sid]) for sid in ids if sid in rows]
