"""Repository trust: a cloned repository's ``.semfora.toml`` may not run commands or widen reads.

Owns the list of settings that need trust (commands, hooks, what is read, where code is sent),
``filter_untrusted`` (what an untrusted file may still set) and ``TrustStore`` (the user's
trusted files, each pinned to the SHA-256 of its content, so a changed file needs trusting
again). User configuration and the environment are always trusted; only the repository file
is filtered. It reads and writes only the trust file it is given.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

# The file in the user's config directory that records trusted repositories.
TRUST_FILE = "trusted.json"
TRUST_FILE_VERSION = 1

# Settings an untrusted repository file may not set, and why (shown to the user as is).
RUNS_COMMAND = "runs a command"
WIDENS_READS = "widens what semfora reads and sends"
SENDS_ELSEWHERE = "sends code to another service"
LOADS_CODE = "loads a model (code) from a path"
HIDES_FROM_REVIEW = "hides code from `semfora ci`"
GATED_KEYS: dict[str, str] = {
    "edits.test_cmd": RUNS_COMMAND,
    "edits.lint_cmd": RUNS_COMMAND,
    "git.auto_commit": RUNS_COMMAND + " (git commit, with its hooks)",
    "edits.deny": WIDENS_READS,
    "index.exclude_dirs": WIDENS_READS,
    "ollama.host": SENDS_ELSEWHERE,
    "search.chroma_url": SENDS_ELSEWHERE,
    "llm.model": SENDS_ELSEWHERE,
    "search.embedding": LOADS_CODE,
    "review.vendored_dirs": HIDES_FROM_REVIEW,
}
# Lists an untrusted file may extend but not shorten: adding a deny pattern only narrows reads.
NARROWING_LISTS = frozenset({"edits.deny", "index.exclude_dirs"})
# Lists an untrusted file may shorten but not extend: a pull request that adds `src` to the
# vendored directories would have `semfora ci` pass over its own changes.
SHORTEN_ONLY_LISTS = frozenset({"review.vendored_dirs"})
# Any future key named like a command or a hook needs trust too.
COMMAND_SUFFIXES = ("_cmd", "_command", "hook", "hooks")


def needs_trust(key: str, value: Any) -> str | None:
    """Why ``key = value`` from an untrusted repository file is ignored, or None if it is harmless."""
    if key.rsplit(".", 1)[-1].endswith(COMMAND_SUFFIXES):
        return RUNS_COMMAND
    reason = GATED_KEYS.get(key)
    if reason is None:
        return None
    if key == "llm.model" and isinstance(value, str):
        # Claude goes to the Anthropic endpoint the user configured; ollama/ stays local.
        model = value.strip().lower()
        return None if model.startswith(("claude", "ollama/", "ollama_chat/")) else reason
    if key == "search.embedding" and isinstance(value, str):
        return reason if value.strip().lower().startswith("sentence-transformers:") else None
    if key == "git.auto_commit" and value is False:
        return None  # turning a command off is always allowed
    return reason


@dataclass(frozen=True)
class IgnoredSetting:
    """One setting of an untrusted repository file that was not applied."""

    key: str
    reason: str
    detail: str = ""  # e.g. "would remove .env, *.pem"

    def describe(self) -> str:
        """``edits.test_cmd = "pytest -x" (runs a command)``, as `semfora trust` lists it."""
        if self.detail.startswith("= "):
            return f"{self.key} {self.detail} ({self.reason})"
        return f"{self.key} ({self.reason}{': ' + self.detail if self.detail else ''})"


def _short(values: list[Any], limit: int = 4) -> str:
    shown = ", ".join(str(v) for v in values[:limit])
    return shown + (f" and {len(values) - limit} more" if len(values) > limit else "")


def filter_untrusted(
    flat: Mapping[str, Any], base_value: Callable[[str], Any]
) -> tuple[dict[str, Any], list[IgnoredSetting]]:
    """Split an untrusted repository file's settings into (applied, ignored).

    ``base_value(key)`` is the value the lower layers (defaults, user file) give ``key``.
    Narrowing lists are merged: entries the file adds are kept, entries it drops stay.
    """
    kept: dict[str, Any] = {}
    ignored: list[IgnoredSetting] = []
    for key, value in flat.items():
        reason = needs_trust(key, value)
        if reason is None:
            kept[key] = value
            continue
        if key in NARROWING_LISTS and isinstance(value, list):
            base = list(base_value(key) or [])
            dropped = [v for v in base if v not in value]
            added = [v for v in value if v not in base]
            if added:  # else the file changes nothing here, and `semfora config` must not name it
                kept[key] = base + added
            if dropped:
                ignored.append(IgnoredSetting(key, reason, f"would remove {_short(dropped)}"))
            continue
        if key in SHORTEN_ONLY_LISTS and isinstance(value, list):
            base = list(base_value(key) or [])
            added = [v for v in value if v not in base]
            kept[key] = [v for v in value if v in base]
            if added:
                ignored.append(IgnoredSetting(key, reason, f"would add {_short(added)}"))
            continue
        shown = value if not isinstance(value, str) else (value if len(value) <= 60 else value[:57] + "...")
        ignored.append(IgnoredSetting(key, reason, f"= {json.dumps(shown)}"))
    return kept, ignored


TrustState = Literal["none", "trusted", "untrusted", "changed"]


def file_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class RepoTrust:
    """Whether one repository's ``.semfora.toml`` is trusted as it is now."""

    root: str  # the real path of the repository root
    file: str | None  # the repository file, None when there is none
    digest: str | None  # SHA-256 of its content
    state: TrustState  # none: no file; changed: trusted once, edited since

    @property
    def trusted(self) -> bool:
        return self.state in ("none", "trusted")

    def to_json(self) -> dict[str, Any]:
        return {"root": self.root, "file": self.file, "sha256": self.digest, "state": self.state}


class TrustStore:
    """The trusted repository files of one user: ``{real root: {sha256, trusted_at}}`` in JSON."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            # An unreadable trust file trusts nothing; `semfora trust` rewrites it.
            return {}
        repos = data.get("repositories") if isinstance(data, dict) else None
        return repos if isinstance(repos, dict) else {}

    def _save(self, repos: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        payload = {"version": TRUST_FILE_VERSION, "repositories": repos}
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, indent=2, sort_keys=True)
        os.replace(tmp, self.path)

    def check(self, root: Path, repo_file: Path) -> RepoTrust:
        real = os.path.realpath(root)
        try:
            data = repo_file.read_bytes()
        except FileNotFoundError:
            return RepoTrust(real, None, None, "none")
        digest = file_digest(data)
        entry = self._load().get(real)
        if not isinstance(entry, dict):
            return RepoTrust(real, str(repo_file), digest, "untrusted")
        state: TrustState = "trusted" if entry.get("sha256") == digest else "changed"
        return RepoTrust(real, str(repo_file), digest, state)

    def trust(self, root: Path, repo_file: Path) -> RepoTrust:
        """Trust ``repo_file`` as it is now (its current SHA-256)."""
        digest = file_digest(repo_file.read_bytes())
        real = os.path.realpath(root)
        repos = self._load()
        repos[real] = {"sha256": digest, "file": str(repo_file), "trusted_at": time.time()}
        self._save(repos)
        return RepoTrust(real, str(repo_file), digest, "trusted")

    def revoke(self, root: Path) -> bool:
        """Forget ``root``; False when it was not trusted."""
        real = os.path.realpath(root)
        repos = self._load()
        if repos.pop(real, None) is None:
            return False
        self._save(repos)
        return True
