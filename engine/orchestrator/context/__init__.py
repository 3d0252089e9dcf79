"""Context packs, told end to end: terms -> candidates -> rank (graph) -> fill; NEED answers the rest.

Deterministic Python, no model decisions. The algorithm, in the style of aider's repomap:

1. **Terms** (``terms``): every word of the *whole* task, identifiers split into their parts,
   lightly stemmed, weighed by its rarity in the repository's index (IDF) and by how much the
   task insists on it. A long issue report rarely names the function it is about; its rare
   words (``307``, ``generator``, ``rewind``) are what that function's code says too.
2. **Candidates** (``candidates``), from two channels in parallel threads: the *anchor
   channel* (symbols the task names: ``@X``, ``X()``, backticks, identifiers, paths) and the
   *search channel* (hybrid search on the whole task, which focuses a long text on its
   rarest words), then the *file neighbourhood*: every definition of the best few files.
3. **Rank** (``rank``): each candidate's own lines against the whole task (BM25 with the
   task's term weights, plus the terms in its name), its channel ranks, the mass it gains in
   a personalised PageRank over call edges from the strongest candidates (``graph``), and
   the evidence of its file. Tests, docs and examples count less unless the task asks.
4. **Fill** (``fill``): code first. Relevant candidates, best first, as their source: whole
   when it fits the candidate's share of the budget, else head, the lines holding the task's
   terms and marked gaps (``excerpt``). Then the map: one-line briefs of the code's callers
   and callees and of relevant candidates that did not fit. Then more code with what is
   left. Relevance (an absolute share of the task's vocabulary, a name in the task, a top
   search rank, a call edge to a hit) decides when to stop, the budget how far to go.
5. **NEED** (``need``): names the model asks for, whole, within the round's own budget.

Every item carries the human reason it was chosen. Secret files never enter the pack and
every text is redacted. Every file is read through ``reads.RepoReader``, and the index only
through the read floor, ``engine.query`` (symbols, search hits, term statistics, summaries).
"""

from __future__ import annotations

from engine.orchestrator.context.candidates import Candidate
from engine.orchestrator.context.gatherer import ContextGatherer, ContextPack, StagedView
from engine.orchestrator.context.need import NeedAnswer
from engine.query.summaries import summary_cache_key

__all__ = ["Candidate", "ContextGatherer", "ContextPack", "NeedAnswer", "StagedView", "summary_cache_key"]
