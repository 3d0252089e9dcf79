"""The one door through which the context gatherer reads repository files.

Owns the pack's use of the policy sandbox (``engine.policy.sandbox``: inside the root through
every symlink, never ``.git``, never the deny-list, no loops, FIFOs or over-long names) and a
small cache of decoded file text. Every file read of ``engine.orchestrator.context`` goes
through ``RepoReader.text``. It never writes and never decides relevance.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

from engine.errors import SemforaError
from engine.policy.names import is_secret_name
from engine.policy.sandbox import ResolvedPath, read_bytes, resolve
from engine.repo.text import decode_source

log = logging.getLogger(__name__)

# Files larger than this are not read into a pack: the indexer skips them too, and a single
# generated file of megabytes would cost more to read than the whole rest of the pack.
MAX_READ_BYTES = 2_000_000
# Decoded files kept between packs (process-wide), checked against size and mtime before reuse:
# a task touches a few dozen files, and consecutive tasks mostly the same ones.
MAX_CACHED_FILES = 256


class RepoReader:
    """Reads text files of one repository for the pack, refusing secrets and escapes.

    Decoded files are shared by every reader of the process (keyed by real path, checked
    against size and mtime), so a fresh session re-reads nothing that has not changed.
    """

    _cache: OrderedDict[str, tuple[int, int, str, list[str]]] = OrderedDict()
    _cache_lock = threading.Lock()
    # (deny-list, path) -> secret? A pure function of its arguments, shared by every reader.
    _secret: dict[tuple[tuple[str, ...], str], bool] = {}

    def __init__(self, root: Path, deny: Sequence[str]) -> None:
        self.root = root
        self.deny = tuple(deny)
        self._lock = threading.Lock()
        self._resolved: dict[str, ResolvedPath | None] = {}
        self._loaded: dict[str, tuple[str, list[str]] | None] = {}

    def refresh(self) -> None:
        """Forget path resolutions and file states (once per pack): files change between packs."""
        with self._lock:
            self._resolved.clear()
            self._loaded.clear()

    def is_secret(self, rel: str) -> bool:
        key = (self.deny, rel)
        found = self._secret.get(key)
        if found is None:
            found = self._secret[key] = is_secret_name(rel, self.deny)
            if len(self._secret) > 100_000:  # a bound, not a policy: the cache only saves time
                self._secret.clear()
        return found

    def _resolve(self, rel: str) -> ResolvedPath | None:
        """``rel`` through the sandbox (symlinks followed, never outside, .git or a secret), memoised
        per pack."""
        with self._lock:
            if rel in self._resolved:
                return self._resolved[rel]
        try:
            real: ResolvedPath | None = resolve(self.root, rel, deny=self.deny)
        except SemforaError as exc:
            log.info("not reading %s for the pack: %s", rel, exc)
            real = None
        with self._lock:
            self._resolved[rel] = real
        return real

    def safe_rel(self, path: str) -> str | None:
        """The real repository-relative path of ``path`` if the pack may show it, else None
        (outside the root or inside .git through any symlink, secret, a loop, missing)."""
        resolved = self._resolve(path)
        return resolved.rel if resolved is not None else None

    def text(self, rel: str) -> str | None:
        """The decoded text of ``rel``, or None when it may not or cannot be read."""
        loaded = self._load(rel)
        return loaded[0] if loaded is not None else None

    def lines(self, rel: str) -> list[str]:
        """The lines of ``rel`` (1-based line n is ``lines[n - 1]``); empty when unreadable."""
        loaded = self._load(rel)
        return loaded[1] if loaded is not None else []

    def _load(self, rel: str) -> tuple[str, list[str]] | None:
        """One file's state per pack (the first look decides what the whole pack sees)."""
        with self._lock:
            if rel in self._loaded:
                return self._loaded[rel]
        loaded = self._read(rel)
        with self._lock:
            self._loaded[rel] = loaded
        return loaded

    def _read(self, rel: str) -> tuple[str, list[str]] | None:
        """THE read: resolve ``rel`` inside the root (never a secret), then decode it, cached."""
        resolved = self._resolve(rel)
        if resolved is None:
            return None
        real = resolved.path
        try:
            stat = real.stat()
        except OSError as exc:
            log.info("not reading %s for the pack: %s", rel, exc.strerror)
            return None
        key = str(real)
        with self._cache_lock:
            cached = self._cache.get(key)
            if cached is not None and cached[:2] == (stat.st_mtime_ns, stat.st_size):
                self._cache.move_to_end(key)
                return cached[2], cached[3]
        if stat.st_size > MAX_READ_BYTES:
            return None
        try:
            # Opened without following a link: a file swapped for one since ``resolve`` is refused.
            # A file declaring another encoding (PEP 263) is read as its characters.
            text = decode_source(read_bytes(resolved, max_bytes=MAX_READ_BYTES)).text
        except SemforaError as exc:
            log.info("cannot read %s: %s", rel, exc.message)
            return None
        lines = split_lines(text)
        with self._cache_lock:
            self._cache[key] = (stat.st_mtime_ns, stat.st_size, text, lines)
            while len(self._cache) > MAX_CACHED_FILES:
                self._cache.popitem(last=False)
        return text, lines


def split_lines(text: str) -> list[str]:
    """Lines as the parser numbers them: split at ``\\n`` only (a form feed is not a line break)."""
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    if lines and lines[-1] == "":
        lines.pop()
    return lines
