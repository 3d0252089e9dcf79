"""The map around the code: one-line briefs and summaries of symbols the pack does not show whole.

Owns the digest texts: a *brief* (signature and the doc's first sentence) for callers,
callees, siblings and the ranked tail, and a *summary* (a model summary written earlier to
cache.db, else the extractive one) where a brief says too little. Packs never wait on a
model: missing model summaries are requested in the background after a turn
(``missing_summaries``). It never decides what enters the pack.
"""

from __future__ import annotations

from typing import Any

from engine.config import Settings
from engine.orchestrator.context.candidates import Candidate
from engine.query.summaries import SummaryCache
from engine.repo.layout import RepoLayout
from engine.semantic.model import Symbol

# A brief is the signature cut here (the name and first parameters identify the symbol) ...
BRIEF_SIGNATURE_CHARS = 60
# ... and the doc's first sentence cut here.
BRIEF_CHARS = 60


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


class Digests:
    """Briefs and summaries for one repository, cached in session memory by body hash."""

    def __init__(self, layout: RepoLayout, settings: Settings, memory: Any) -> None:
        self.layout = layout
        self.settings = settings
        self.memory = memory
        self._summaries = SummaryCache(layout, settings)

    def close(self) -> None:
        self._summaries.close()

    def brief(self, cand: Candidate) -> str:
        """One line: the signature and the doc's first sentence (what it is and what it is for)."""
        sym = cand.symbol
        if sym is None:
            first = next((line.strip() for line in cand.snippet.splitlines() if line.strip()), "")
            return first[:BRIEF_CHARS] or f"{cand.file}:{cand.start_line}"
        head = " ".join(sym.signature.split()).rstrip(":{ ") if sym.signature.strip() else ""
        text = _clip(head, BRIEF_SIGNATURE_CHARS) or f"{sym.kind} {sym.qualified_name}"
        doc = next((line.strip() for line in sym.doc.splitlines() if line.strip()), "")
        if doc:
            sentence = doc.split(". ", 1)[0].rstrip(".")
            text += " — " + _clip(sentence, BRIEF_CHARS)
        return text

    def summary(self, cand: Candidate) -> str:
        """A model summary written earlier, else the extractive one (signature, doc, calls, risk)."""
        sym = cand.symbol
        if sym is None:
            return cand.snippet.strip() or f"{cand.file}:{cand.start_line}"
        key = f"sum:{sym.id}:{sym.body_hash}"
        cached = self.memory.symbol(key)
        if cached is not None:
            return str(cached)
        from engine.llm.summarizer import SummaryFacts, extractive_summary

        facts = SummaryFacts(
            name=sym.qualified_name,
            kind=sym.kind,
            signature=sym.signature,
            doc=sym.doc,
            calls=tuple(c.name if not c.receiver else f"{c.receiver}.{c.name}" for c in sym.calls),
            risk_level=sym.risk.level,
            risk_reasons=tuple(sym.risk.reasons),
        )  # no file/lines: the item header already says where it is
        model = self.cached_model_summary(sym.body_hash or sym.id)
        if model:
            signature = sym.signature.strip().splitlines()[0] if sym.signature.strip() else sym.qualified_name
            out = f"{signature}\n{model}"
        else:
            out = extractive_summary(facts)
        self.memory.remember_symbol(key, out)
        return out

    def cached_model_summary(self, content_hash: str) -> str | None:
        """The model summary written earlier for this body hash (``cache.db``), or None."""
        return self._summaries.model_summary(content_hash)

    def requests_for(self, symbols: list[Symbol], source_of: Any, is_secret: Any) -> list[Any]:
        """Summary requests for ``symbols`` that have no model summary yet (for presummarize)."""
        from engine.llm.summarizer import SummaryFacts, SummaryRequest

        requests = []
        seen: set[str] = set()
        for sym in symbols:
            content_hash = sym.body_hash or sym.id
            if content_hash in seen or is_secret(sym.file):
                continue
            seen.add(content_hash)
            if self.cached_model_summary(content_hash) is not None:
                continue
            src = source_of(sym)
            facts = SummaryFacts(
                name=sym.qualified_name,
                kind=sym.kind,
                signature=sym.signature,
                doc=sym.doc,
                file=sym.file,
                start_line=sym.start_line,
                end_line=sym.end_line,
            )
            requests.append(SummaryRequest(src or sym.signature, content_hash, "symbol", facts))
        return requests
