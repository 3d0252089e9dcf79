"""Session memory: what this session has seen, and what past turns can teach this one.

Owns ``SemforaMemory`` (overview once per session, a 1,000-symbol LRU, a 5-minute
search cache, viewed symbols), session persistence under ``sessions/`` with ``--resume``,
the append-only episodic JSONL log and recall of past turns. Recall ranks the turns' vectors
(kept beside the log) when an embedding provider is available and falls back to a lexical
score over the JSONL otherwise; it never raises because a vector service is missing.
"""

from __future__ import annotations

import fcntl
import json
import logging
import math
import os
import re
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from engine.config import Settings
from engine.errors import NotFoundError, ServiceUnavailable
from engine.orchestrator.intent import is_debugging
from engine.policy.redaction import redact, redact_json
from engine.quarantine import set_aside
from engine.repo.layout import RepoLayout

log = logging.getLogger(__name__)

# Seed 004: 1,000 symbols x ~500 bytes keeps the cache near 500 KB.
MAX_CACHED_SYMBOLS = 1000
# Search results go stale as the user edits; five minutes covers a burst of related turns.
SEARCH_TTL_SECONDS = 300.0
# Only this much of a reply is kept in the episodic log; recall needs the gist, not the text.
EPISODE_REPLY_CHARS = 2000
# Below these scores a past turn is more likely noise than help (cosine for vectors,
# set-overlap cosine for the lexical fallback, which scores lower for the same match).
VECTOR_RECALL_THRESHOLD = 0.55
LEXICAL_RECALL_THRESHOLD = 0.3
# After a vector failure recall is lexical for this long, then the provider is asked again (an
# Ollama started after the app is used from then on; a dead one answers at once, its breaker open).
VECTORS_RETRY_SECONDS = 30.0
# Past turns without a vector of the current model embedded at most per recall (the latest first):
# turns remembered while the provider was down, or under another model, are found again.
BACKFILL_TURNS = 64
# Outcomes that mark a turn as failed: excluded from recall unless the task is debugging.
FAILED_OUTCOMES = frozenset({"failed", "error", "edit_failed", "cancelled"})
EPISODES_FILE = "episodes.jsonl"
TURN_VECTORS_FILE = "turn_vectors.jsonl"
LAST_POINTER = "LAST"


# Bytes read per step when looking back from a torn tail for the last whole line.
TAIL_STEP = 64 * 1024


def append_line(path: Path, line: str) -> None:
    """Append ``line`` (ending in a newline) to a JSONL file as one whole line, durably.

    A process killed in the middle of an append leaves a last line without its newline; the next
    append used to land on the end of it, so that line was unreadable and the new one lost with
    it. The torn tail is cut off first (under an exclusive lock: several processes append to the
    same log), then the line goes out in one write and is synced.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            keep = _whole_lines_end(fd, size)
            log.warning("%s: cut a torn last line (%d bytes) left by an interrupted write", path, size - keep)
            os.ftruncate(fd, keep)
        data = line.encode("utf-8")
        while data:
            data = data[os.write(fd, data) :]
        os.fsync(fd)
    finally:
        os.close(fd)  # and with it the lock


def _whole_lines_end(fd: int, size: int) -> int:
    """The offset just after the last newline of the first ``size`` bytes of ``fd`` (0: none)."""
    end = size
    while end > 0:
        start = max(0, end - TAIL_STEP)
        at = os.pread(fd, end - start, start).rfind(b"\n")
        if at >= 0:
            return start + at + 1
        end = start
    return 0


class SemforaMemory:
    """Per-session working memory; thread-safe; ``clock`` is injectable for tests."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.RLock()
        self._overview: dict[int, str] = {}
        self.overview_loads = 0
        self._symbols: OrderedDict[str, Any] = OrderedDict()
        self._searches: dict[str, tuple[float, Any]] = {}
        self.viewed_symbols: list[str] = []

    # overview: loaded once per session (per size variant, when the budget changes)
    def overview(self, load: Callable[[], str], variant: int = 0) -> str:
        with self._lock:
            if variant not in self._overview:
                self._overview[variant] = load()
                self.overview_loads += 1
            return self._overview[variant]

    def forget_overview(self) -> None:
        """Drop the overview, e.g. after a reindex changed the repository's shape."""
        with self._lock:
            self._overview.clear()

    # symbols: an LRU of MAX_CACHED_SYMBOLS
    def remember_symbol(self, key: str, value: Any) -> None:
        with self._lock:
            self._symbols[key] = value
            self._symbols.move_to_end(key)
            while len(self._symbols) > MAX_CACHED_SYMBOLS:
                self._symbols.popitem(last=False)

    def symbol(self, key: str) -> Any | None:
        with self._lock:
            if key not in self._symbols:
                return None
            self._symbols.move_to_end(key)
            return self._symbols[key]

    @property
    def cached_symbol_count(self) -> int:
        with self._lock:
            return len(self._symbols)

    # searches: cached for SEARCH_TTL_SECONDS
    def search(self, key: str) -> Any | None:
        with self._lock:
            entry = self._searches.get(key)
            if entry is None:
                return None
            stamp, value = entry
            if self._clock() - stamp > SEARCH_TTL_SECONDS:
                del self._searches[key]
                return None
            return value

    def remember_search(self, key: str, value: Any) -> None:
        with self._lock:
            self._searches[key] = (self._clock(), value)

    def clear_searches(self) -> None:
        with self._lock:
            self._searches.clear()

    # viewed symbols: most recent last
    def viewed(self) -> list[str]:
        """The viewed symbols now (for ``restore_viewed``)."""
        with self._lock:
            return list(self.viewed_symbols)

    def restore_viewed(self, symbol_ids: list[str]) -> None:
        """Back to ``viewed()`` as it was: a pack built and set aside was never read."""
        with self._lock:
            self.viewed_symbols = list(symbol_ids)

    def mark_viewed(self, symbol_ids: list[str]) -> None:
        with self._lock:
            for sid in symbol_ids:
                if sid in self.viewed_symbols:
                    self.viewed_symbols.remove(sid)
                self.viewed_symbols.append(sid)

    def recency(self, symbol_id: str) -> float:
        """1.0 for the symbol viewed last, decaying towards 0; 0 if never viewed."""
        with self._lock:
            if symbol_id not in self.viewed_symbols:
                return 0.0
            age = len(self.viewed_symbols) - 1 - self.viewed_symbols.index(symbol_id)
            return 1.0 / (1.0 + age)


@dataclass(frozen=True)
class Episode:
    """One line of the episodic log: one turn."""

    ts: float
    session_id: str
    run_id: str
    request: str
    intent: str
    item_ids: tuple[str, ...]
    reply: str
    edits: tuple[str, ...]
    outcome: str

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["item_ids"] = list(self.item_ids)
        data["edits"] = list(self.edits)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Episode:
        return cls(
            ts=float(data.get("ts", 0.0)),
            session_id=str(data.get("session_id", "")),
            run_id=str(data.get("run_id", "")),
            request=str(data.get("request", "")),
            intent=str(data.get("intent", "")),
            item_ids=tuple(data.get("item_ids", ())),
            reply=str(data.get("reply", "")),
            edits=tuple(data.get("edits", ())),
            outcome=str(data.get("outcome", "")),
        )

    @property
    def failed(self) -> bool:
        return self.outcome in FAILED_OUTCOMES

    @property
    def text(self) -> str:
        """What recall matches against: the request, then the gist of the reply."""
        return f"{self.request}\n{self.reply[:500]}"


class EpisodicLog:
    """Append-only JSONL of turns for one repository (every session writes here)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def append(self, episode: Episode) -> None:
        data = episode.to_json()
        data["request"] = redact(data["request"])
        data["reply"] = redact(data["reply"][:EPISODE_REPLY_CHARS])
        line = json.dumps(data, ensure_ascii=False) + "\n"
        with self._lock:
            append_line(self.path, line)

    def read(self) -> list[Episode]:
        """Every episode; a torn last line (killed process) is skipped, not fatal."""
        if not self.path.is_file():
            return []
        episodes = []
        with self.path.open(encoding="utf-8", errors="replace") as fh:
            for number, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    episodes.append(Episode.from_json(json.loads(line)))
                except (json.JSONDecodeError, TypeError, ValueError):
                    log.warning("episodic log %s: skipping unreadable line %d", self.path, number)
        return episodes


@dataclass
class Session:
    """What survives between turns and across ``--resume``: id, turns, viewed symbols."""

    id: str
    created: float
    turns: list[dict[str, Any]] = field(default_factory=list)
    viewed_symbols: list[str] = field(default_factory=list)

    def summary_lines(self, limit: int = 8) -> list[str]:
        """The last turns as short lines for the session-memory block of the prompt."""
        lines = []
        for turn in self.turns[-limit:]:
            edits = ", ".join(turn.get("edits", [])) or "no edits"
            lines.append(f"- [{turn.get('outcome', '?')}] {turn.get('request', '')[:160]} ({edits})")
        return lines


class SessionUnreadable(NotFoundError):
    """A saved chat session that could not be read; it was set aside (exit 1 if raised)."""


class SessionStore:
    """Sessions as ``sessions/<id>.json`` plus a ``LAST`` pointer for ``--resume``."""

    def __init__(self, layout: RepoLayout) -> None:
        self.dir = layout.sessions_dir
        self.episodes = EpisodicLog(self.dir / EPISODES_FILE)
        self._lock = threading.Lock()

    def new(self) -> Session:
        """A fresh session; written (and made the one ``--resume`` finds) at its first save."""
        return Session(
            id=time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(3),
            created=time.time(),
        )

    def path_of(self, session_id: str) -> Path:
        if not re.fullmatch(r"[\w.-]+", session_id):
            raise NotFoundError(f"no session {session_id!r}", code="SESSION_NOT_FOUND")
        return self.dir / f"{session_id}.json"

    def save(self, session: Session) -> None:
        """Write the session atomically; its text (requests typed by the user) is redacted."""
        with self._lock:
            path = self.path_of(session.id)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(redact_json(asdict(session)), ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, path)
            (self.dir / LAST_POINTER).write_text(session.id, encoding="utf-8")

    def load(self, session_id: str) -> Session:
        """The saved session; a damaged file is set aside (said once) and reported as not found."""
        path = self.path_of(session_id)
        try:
            raw = path.read_bytes()
        except FileNotFoundError as exc:
            raise NotFoundError(f"no session {session_id!r}", code="SESSION_NOT_FOUND") from exc
        try:
            data = json.loads(raw.decode("utf-8"))
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            return Session(
                id=str(data["id"]),
                created=float(data.get("created", 0.0)),
                # Redacted again on the way in: a file written before redaction shows no secret either.
                turns=[redact_json(t) for t in list(data.get("turns", [])) if isinstance(t, dict)],
                viewed_symbols=[str(x) for x in list(data.get("viewed_symbols", []))],
            )
        except (UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
            set_aside(path, "the chat session", str(exc)[:120], "a new session starts")
            raise SessionUnreadable(
                f"session {session_id!r} was unreadable and was set aside", code="SESSION_NOT_FOUND"
            ) from exc

    def last(self) -> Session | None:
        pointer = self.dir / LAST_POINTER
        if not pointer.is_file():
            return None
        try:
            return self.load(pointer.read_text(encoding="utf-8", errors="replace").strip())
        except SessionUnreadable:
            return None  # already said, when it was set aside
        except NotFoundError as exc:
            log.warning("cannot resume the last session: %s", exc)
            return None

    def open(self, resume: bool) -> Session:
        """The last session when ``resume`` and one exists, else a new one."""
        if resume:
            session = self.last()
            if session is not None:
                return session
        return self.new()


@dataclass(frozen=True)
class RecalledTurn:
    episode: Episode
    score: float
    source: str  # "vector" or "lexical"


_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]+")


def _terms(text: str) -> set[str]:
    terms = set()
    for word in _TOKEN.findall(text):
        lower = word.lower()
        if len(lower) >= 3:
            terms.add(lower)
        terms.update(p for p in lower.split("_") if len(p) >= 3)
    return terms


def lexical_score(query: str, text: str) -> float:
    """Cosine of the two term sets: 1.0 for the same words, 0 for none in common."""
    q, d = _terms(query), _terms(text)
    if not q or not d:
        return 0.0
    return len(q & d) / math.sqrt(len(q) * len(d))


class NoEmbeddingProvider(ServiceUnavailable):
    """``search.embedding = auto`` found no provider on this machine: turn memory is lexical."""


class TurnRecall:
    """Recall of past turns: by vector similarity when vectors are on, lexical over JSONL otherwise.

    ``embed`` maps texts to vectors (the index's embedding provider; its ``spec`` attribute, when
    it has one, names the model); ``None`` means vectors are off and recall is lexical. A turn's
    vector is kept beside the episodic log, in ``TURN_VECTORS_FILE`` (one JSON line per turn: run
    id, model, failed flag, vector), and recall ranks them exactly. Not in Chroma: its HNSW files
    are written from buffers it never clears (chroma-core/chroma#7688), and a turn is stored by the
    process that just sent the model its API key in a request header, which one such file was
    seen to hold. Any vector failure degrades to lexical for the rest of the process, with one
    warning.
    """

    def __init__(
        self,
        layout: RepoLayout,
        log_: EpisodicLog,
        embed: Callable[[list[str]], list[list[float]]] | None = None,
        *,
        settings: Settings | None = None,
    ) -> None:
        self.layout = layout
        self.log = log_
        self.embed = embed
        self.settings = settings
        self.vectors = TurnVectors(log_.path.with_name(TURN_VECTORS_FILE))
        self.mode = "vector" if embed is not None else "lexical"
        # The provider set aside after a failure, and when: asked again after VECTORS_RETRY_SECONDS.
        self._resting: tuple[Callable[[list[str]], list[list[float]]], float] | None = None
        self._warned = False

    @property
    def _model(self) -> str:
        return str(getattr(self.embed, "spec", "") or "embeddings")

    def _degrade(self, exc: Exception) -> None:
        # `auto` that found no provider is the normal offline set-up (the index says "vectors off"
        # already): not worth a warning on every `ask`. A provider the user named that fails is,
        # once per process (the app asks again every VECTORS_RETRY_SECONDS).
        quiet = isinstance(exc, NoEmbeddingProvider) or self._warned
        self._warned = self._warned or not quiet
        log.log(
            logging.INFO if quiet else logging.WARNING,
            "turn memory: vectors unavailable (%s); using lexical recall",
            exc,
        )
        if self.embed is not None:
            self._resting = (self.embed, time.monotonic())
        self.embed = None
        self.mode = "lexical"

    def _wake(self) -> None:
        """Give a provider set aside after a failure another try once it has rested: the app and a
        long `--resume`d session otherwise kept lexical recall from the first failure on."""
        if self._resting is not None and time.monotonic() - self._resting[1] >= VECTORS_RETRY_SECONDS:
            self.embed, self._resting = self._resting[0], None
            self.mode = "vector"

    def remember(self, episode: Episode) -> None:
        """Index one finished turn for recall (the JSONL line is written by the caller)."""
        self._wake()
        if self.embed is None:
            return
        try:
            vector = self.embed([redact(episode.text)])[0]
            self.vectors.append(_turn_key(episode), self._model, episode.failed, vector)
        except Exception as exc:  # noqa: BLE001 - any vector failure must degrade, never break a turn
            self._degrade(exc)

    def recall(self, task: str, *, limit: int = 3) -> list[RecalledTurn]:
        """Past turns relevant to ``task`` above the score threshold; failed ones only when debugging."""
        include_failed = is_debugging(task)
        episodes = [e for e in self.log.read() if include_failed or not e.failed]
        if not episodes:
            return []
        self._wake()
        if self.embed is not None:
            try:
                return self._recall_vector(task, episodes, limit, include_failed)
            except Exception as exc:  # noqa: BLE001 - fall back to lexical, as documented
                self._degrade(exc)
        scored = [(lexical_score(task, e.text), e) for e in episodes]
        hits = [RecalledTurn(e, s, "lexical") for s, e in scored if s >= LEXICAL_RECALL_THRESHOLD]
        hits.sort(key=lambda h: (-h.score, -h.episode.ts))
        return hits[:limit]

    def _recall_vector(
        self, task: str, episodes: list[Episode], limit: int, include_failed: bool
    ) -> list[RecalledTurn]:
        assert self.embed is not None
        query = self.embed([task])[0]
        self._backfill(episodes)
        by_run = {e.run_id: e for e in episodes}
        hits = []
        for run_id, score in self.vectors.nearest(query, self._model, include_failed):
            episode = by_run.get(run_id)
            if episode is not None and score >= VECTOR_RECALL_THRESHOLD:
                hits.append(RecalledTurn(episode, score, "vector"))
        return hits[:limit]

    def _backfill(self, episodes: list[Episode]) -> None:
        """Embed the latest turns that have no vector of this model (remembered while the provider
        was down, or under another model): vector recall would never find them, and it is all
        recall asks while vectors are on."""
        assert self.embed is not None
        have = self.vectors.run_ids(self._model)
        lacking = [e for e in episodes if _turn_key(e) not in have][-BACKFILL_TURNS:]
        if not lacking:
            return
        vectors = self.embed([redact(e.text) for e in lacking])
        for episode, vector in zip(lacking, vectors, strict=True):
            self.vectors.append(_turn_key(episode), self._model, episode.failed, vector)


def _turn_key(episode: Episode) -> str:
    return episode.run_id or f"{episode.session_id}-{episode.ts}"


class TurnVectors:
    """The turn vectors of one repository: an append-only JSONL file, searched exactly.

    A repository has hundreds of turns, not millions: a scan with cosine similarity costs
    milliseconds and needs no index. A vector of another model is never compared (switching
    models starts recall afresh); a torn last line (a killed process) is skipped.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def append(self, run_id: str, model: str, failed: bool, vector: list[float]) -> None:
        line = json.dumps({"run_id": run_id, "model": model, "failed": failed, "vector": vector}) + "\n"
        with self._lock:
            append_line(self.path, line)

    def _rows(self, model: str) -> Iterator[dict[str, Any]]:
        """The readable lines of ``model`` (a torn or foreign line is skipped)."""
        if not self.path.is_file():
            return
        with self.path.open(encoding="utf-8", errors="replace") as fh:
            for line in fh:
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(row, dict) and row.get("model") == model:
                    yield row

    def run_ids(self, model: str) -> set[str]:
        """The turns that have a vector of ``model``."""
        return {str(row.get("run_id")) for row in self._rows(model)}

    def nearest(self, query: list[float], model: str, include_failed: bool) -> list[tuple[str, float]]:
        """``(run_id, cosine)`` of every stored turn of ``model``, best first (a turn stored twice
        counts once, with its latest vector)."""
        latest: dict[str, list[float]] = {}
        for row in self._rows(model):
            if row.get("failed") and not include_failed:
                continue
            vector = row.get("vector")
            if isinstance(vector, list) and len(vector) == len(query):
                latest[str(row.get("run_id"))] = vector
        scored = [(run_id, _cosine(query, vector)) for run_id, vector in latest.items()]
        scored.sort(key=lambda pair: -pair[1])
        return scored


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0
