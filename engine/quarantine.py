"""Damaged state files: detect, set aside once, say so once, never a traceback.

Owns recognising a corrupt SQLite file, moving a damaged file (with its ``-wal``/``-shm``) to
``NAME.corrupt-TIMESTAMP`` beside it, opening a rebuildable SQLite store that does this by
itself, and telling the user through whoever listens (the CLI prints a warning line; with
no listener it is logged). It never decides whether a store may be rebuilt: the caches,
metrics and vectors are; the edit journal and undo history refuse with typed errors instead.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

log = logging.getLogger("semfora.quarantine")

# SQLite's own words for a file that is not (or no longer) a usable database.
CORRUPTION_PHRASES = ("file is not a database", "malformed", "disk image", "file is encrypted")
# SQLite files beside the main one that belong to the same database.
SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")

T = TypeVar("T")
Listener = Callable[[str], None]
_listeners: list[Listener] = []
_listeners_lock = threading.Lock()


def add_listener(listener: Listener) -> None:
    """Send every "set aside" notice to ``listener`` (the CLI's warning printer, the app's toast)."""
    with _listeners_lock:
        if listener not in _listeners:
            _listeners.append(listener)


def remove_listener(listener: Listener) -> None:
    with _listeners_lock:
        if listener in _listeners:
            _listeners.remove(listener)


def notify(message: str) -> None:
    with _listeners_lock:
        targets = list(_listeners)
    if not targets:
        log.warning("%s", message)
    for listener in targets:
        listener(message)


def is_corruption(exc: BaseException) -> bool:
    """Whether a sqlite3 error means the file itself is damaged (not locked, not a bad query)."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    text = str(exc).lower()
    return any(phrase in text for phrase in CORRUPTION_PHRASES)


def aside_name(path: Path) -> Path:
    return path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")


def set_aside(
    path: Path, what: str, reason: str, consequence: str, *, companions: bool = False
) -> Path | None:
    """Move damaged ``path`` aside and say so once; returns where it went (None if already gone).

    ``what`` names the store for the user ("the search cache"), ``consequence`` says what
    happens now ("it is rebuilt empty").
    """
    aside = aside_name(path)
    try:
        os.replace(path, aside)
    except FileNotFoundError:
        return None  # another process moved it first, and said so
    if companions:
        for suffix in SQLITE_COMPANIONS:
            extra = path.with_name(path.name + suffix)
            if extra.exists():
                try:
                    os.replace(extra, aside.with_name(aside.name + suffix))
                except FileNotFoundError:
                    continue
    notify(f"{what} {path} was damaged ({reason}); moved it to {aside.name}; {consequence}")
    return aside


class RebuildableDB:
    """A SQLite file whose content can be rebuilt: a damaged file is set aside and started anew.

    ``connect()`` opens (creating the schema); ``run(fn)`` calls ``fn(conn)`` and, when SQLite
    reports the file damaged, sets it aside, reopens an empty one and calls ``fn`` once more.
    The caller serialises calls (its own lock).
    """

    def __init__(self, path: Path, schema: str, what: str, consequence: str) -> None:
        self.path = path
        self.schema = schema
        self.what = what
        self.consequence = consequence
        self.conn: sqlite3.Connection | None = None
        self._inode: int | None = None

    def connect(self) -> sqlite3.Connection:
        if self.conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                self.conn = self._open()
            except sqlite3.DatabaseError as exc:
                if not is_corruption(exc):
                    raise
                self._replace(exc)
                self.conn = self._open()
        return self.conn

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(str(self.path), timeout=10, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(self.schema)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError:
            conn.close()
            raise
        try:
            self._inode = self.path.stat().st_ino
        except FileNotFoundError:
            self._inode = None
        return conn

    def _replace(self, exc: BaseException) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        try:
            current = self.path.stat().st_ino
        except FileNotFoundError:
            return
        # Only the file this instance found damaged: another process may already have rebuilt it.
        if self._inode is None or current == self._inode:
            set_aside(self.path, self.what, str(exc), self.consequence, companions=True)

    def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        try:
            return fn(self.connect())
        except sqlite3.DatabaseError as exc:
            if not is_corruption(exc):
                raise
            self._replace(exc)
            return fn(self.connect())

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
