"""The one source of truth for semfora's settings.

Defaults live in the pydantic models below; they are overlaid, in order, by the
user file ``$XDG_CONFIG_HOME/semfora/config.toml``, the repository file
``.semfora.toml`` and ``SEMFORA_*`` (plus a few well-known) environment variables.
A repository file the user has not trusted (``semfora trust``) cannot run commands or widen
what is read: ``engine.policy.trust`` filters it here, and what it ignored is reported once.
``docs/configuration.md`` is checked against these models by a test.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from engine.errors import ConfigError
from engine.policy.names import DEFAULT_DENY
from engine.policy.paths import VENDORED_DIRS
from engine.policy.trust import (
    TRUST_FILE,
    IgnoredSetting,
    RepoTrust,
    TrustStore,
    filter_untrusted,
    needs_trust,
)
from engine.repo.layout import config_home

# A current Sonnet; claude-sonnet-4-5 reaches end-of-life on 2026-11-30.
DEFAULT_MODEL = "claude-sonnet-4-6"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ModelPrice(_Section):
    """US dollars per million tokens."""

    input: float = Field(3.0, description="Price of one million input tokens.")
    output: float = Field(15.0, description="Price of one million output tokens.")
    cache_write: float = Field(3.75, description="Price of one million cache-write tokens.")
    cache_read: float = Field(0.30, description="Price of one million cache-read tokens.")


def _default_prices() -> dict[str, ModelPrice]:
    return {
        "claude-sonnet-4-6": ModelPrice(),
        "claude-sonnet-4-5": ModelPrice(),
        "claude-sonnet-4": ModelPrice(),
        "claude-sonnet-5": ModelPrice(),
        "claude-sonnet-5-5": ModelPrice(),
        "claude-opus-4-5": ModelPrice(input=5.0, output=25.0, cache_write=6.25, cache_read=0.5),
        "claude-opus-4-1": ModelPrice(input=15.0, output=75.0, cache_write=18.75, cache_read=1.5),
        "claude-haiku-4-5": ModelPrice(input=1.0, output=5.0, cache_write=1.25, cache_read=0.10),
    }


class LLMSettings(_Section):
    model: str = Field(
        DEFAULT_MODEL,
        description="Reasoning model. A Claude model name uses the Anthropic API; any other "
        "LiteLLM model string (e.g. ollama/qwen2.5-coder:7b) goes through LiteLLM. Env: SEMFORA_MODEL.",
    )
    max_output_tokens: int = Field(4000, ge=256, description="Maximum tokens in one model reply.")
    connect_timeout: float = Field(
        10.0, gt=0, description="Seconds to wait for a connection to the model API."
    )
    read_timeout: float = Field(
        60.0,
        gt=0,
        description="Seconds to wait for the first byte of a reply, and between its streamed chunks.",
    )
    max_retries: int = Field(
        4, ge=0, le=10, description="Retries on 429, 5xx, overloaded answers, timeouts and lost connections."
    )
    turn_timeout: float = Field(
        300.0,
        gt=0,
        le=3600,
        description="Seconds one turn may wait for the model in all (every call, retry and pause); "
        "then it fails with MODEL_TIMEOUT (exit 3). Each retry is shown as it happens.",
    )
    edit_retries: int = Field(
        2, ge=0, le=5, description="Times a failed edit block is sent back to the model."
    )
    exact_token_count: bool = Field(
        False, description="Count tokens with Anthropic's token-counting endpoint instead of chars/4."
    )
    prices: dict[str, ModelPrice] = Field(
        default_factory=_default_prices,
        description="Per-model price table (USD per million tokens) used to compute cost.",
    )


class BudgetSettings(_Section):
    context_tokens: int = Field(
        8000, ge=500, le=200_000, description="Per-request budget for curated context. Env: SEMFORA_BUDGET."
    )
    max_context_tokens: int = Field(100_000, ge=4000, description="The model's whole context window.")
    reserved_for_response: int = Field(4000, ge=0, description="Tokens kept free for the reply.")
    reserved_for_system: int = Field(2000, ge=0, description="Tokens kept for the system prompt.")


class OllamaSettings(_Section):
    host: str = Field("http://127.0.0.1:11434", description="Ollama base URL. Env: OLLAMA_HOST.")
    summary_model: str = Field("qwen2.5-coder:1.5b", description="Model used for symbol and file summaries.")
    timeout: float = Field(3.0, gt=0, description="Seconds before a summary falls back to extractive.")
    presummarize: bool = Field(
        False, description="Pre-summarize the highest fan-in symbols in the background."
    )


class IndexSettings(_Section):
    max_file_bytes: int = Field(1_000_000, ge=1024, description="Files larger than this are not indexed.")
    exclude_dirs: list[str] = Field(
        default_factory=lambda: [
            "node_modules",
            "vendor",
            "third_party",
            "dist",
            "build",
            "target",
            ".venv",
            "venv",
            "__pycache__",
            ".tox",
            ".mypy_cache",
            ".git",
            ".hg",
            ".svn",
            "bower_components",
        ],
        description="Directory names that are never indexed (vendored or build output).",
    )
    workers: int = Field(0, ge=0, le=64, description="Parser processes; 0 means one per core.")
    watch: bool = Field(True, description="Follow changes on disk while the app is open.")
    lock_timeout: float = Field(
        30.0, ge=0, description="Seconds `semfora index` waits for another indexer of the same repository."
    )


class SearchSettings(_Section):
    embedding: str = Field(
        "auto",
        description="Embedding provider: auto, none, ollama:MODEL, chroma-default or "
        "sentence-transformers:NAME_OR_PATH. Env: SEMFORA_EMBEDDING.",
    )
    chroma_url: str | None = Field(
        None,
        description="URL of a Chroma server (chroma run). Unset: embedded under the cache dir. The code "
        "index uses it, one collection per working tree and model (turn memory keeps its few vectors in "
        "`sessions/turn_vectors.jsonl`). Env: SEMFORA_CHROMA_URL.",
    )
    vector_service: Literal["auto", "off"] = Field(
        "auto",
        description="auto: one-shot commands (search, context, ask) ask a shared local process for vector "
        "results, started on demand and stopped after 10 idle minutes, so they need not import chromadb "
        "or load a model; off: every process searches vectors itself.",
    )
    expansion: bool = Field(False, description="Expand queries with 2 rewrites from a local LLM.")
    rerank: bool = Field(False, description="Rerank the top 20 candidates with a local LLM.")
    llm_model: str = Field("qwen2.5-coder:1.5b", description="Ollama model for expansion and rerank.")
    provider_timeout: float = Field(
        5.0, gt=0, description="Seconds before an embedding or LLM call is abandoned."
    )

    @field_validator("embedding")
    @classmethod
    def _known_embedding(cls, value: str) -> str:
        return check_embedding_spec(value)

    @field_validator("chroma_url")
    @classmethod
    def _chroma_address(cls, value: str | None) -> str | None:
        return check_chroma_url(value)

    local_embed_precision: Literal["auto", "float32", "bfloat16"] = Field(
        "auto",
        description="Arithmetic of a local sentence-transformers model on the torch runtime (bulk builds). "
        "auto: bfloat16 when the CPU has native bfloat16 (AMX or AVX512-BF16; about 3x faster, vectors "
        "within 1e-4 cosine of float32), else float32. Queries and small updates of a BERT model such as "
        "MiniLM use the light numpy runtime (float32), which needs no torch.",
    )


# What search.embedding may name: provider kinds, and whether each needs ":MODEL".
EMBEDDING_KINDS = {"auto": False, "none": False, "off": False, "chroma-default": False}
EMBEDDING_KINDS_WITH_MODEL = ("ollama", "sentence-transformers")
# A Chroma server address: http(s)://host[:port][/path], or host:port (http assumed).
_CHROMA_URL = re.compile(r"^(https?://)?[A-Za-z0-9._\-\[\]:]+(:\d{1,5})?(/\S*)?$")


def check_embedding_spec(value: str) -> str:
    """``value`` if it names a known embedding provider; ValueError says what is accepted."""
    spec = value.strip()
    kind, sep, model = spec.partition(":")
    if kind.lower() in EMBEDDING_KINDS and not sep:
        return spec
    if kind.lower() == "ollama" or (kind.lower() == "sentence-transformers" and model.strip()):
        return spec
    raise ValueError(
        f"unknown embedding provider {value!r}: use auto, none, ollama:MODEL, chroma-default "
        "or sentence-transformers:NAME_OR_PATH"
    )


def check_chroma_url(value: str | None) -> str | None:
    """``value`` if it looks like a Chroma server address (or is unset); ValueError otherwise."""
    if value is None or not value.strip():
        return None
    url = value.strip()
    host_part = url.split("://", 1)[-1].split("/", 1)[0]
    port = host_part.rsplit(":", 1)[1] if ":" in host_part and not host_part.endswith("]") else None
    scheme_ok = "://" not in url or url.startswith(("http://", "https://"))
    if not (
        scheme_ok
        and _CHROMA_URL.match(url)
        and host_part
        and (port is None or (port.isdigit() and 0 < int(port) < 65536))
    ):
        raise ValueError(f"not a Chroma server address: {value!r} (expected http://HOST:PORT)")
    if "://" not in url and port is None:
        raise ValueError(f"not a Chroma server address: {value!r} (expected http://HOST:PORT or HOST:PORT)")
    return url


class CacheSettings(_Section):
    ttl_days: int = Field(30, ge=1, description="Days before a cached expansion, rerank or summary expires.")
    max_mb: int = Field(200, ge=1, description="Size cap of cache.db in megabytes (LRU eviction).")


class MetricsSettings(_Section):
    level: Literal["off", "errors", "metrics", "debug", "full"] = Field(
        "metrics", description="What metrics.db records. Query text is kept only at 'full'."
    )


class EditSettings(_Section):
    deny: list[str] = Field(
        default_factory=lambda: list(DEFAULT_DENY),
        description="Glob patterns of secret files: never indexed, embedded, served, sent to a model or "
        "written (the default list is in docs/security.md). A repository's .semfora.toml may add "
        "patterns; removing one needs `semfora trust`.",
    )
    max_file_bytes: int = Field(2_000_000, ge=1024, description="Files above this size are not edited.")
    lint_cmd: str | None = Field(
        None,
        description="Command run after a commit of edits (e.g. 'ruff check'). From .semfora.toml only "
        "once the repository is trusted (`semfora trust`).",
    )
    test_cmd: str | None = Field(
        None,
        description="Command run after a commit of edits (e.g. 'pytest -q'). From .semfora.toml only "
        "once the repository is trusted (`semfora trust`).",
    )
    lock_timeout: float = Field(10.0, ge=0, description="Seconds a commit waits for another process's lock.")


class GitSettings(_Section):
    auto_commit: bool = Field(
        False, description="Make a git commit of exactly the files an edit commit changed."
    )


class ReviewSettings(_Section):
    vendored_dirs: list[str] = Field(
        default_factory=lambda: list(VENDORED_DIRS),
        description="Directory names of vendored third-party code (at any depth: `src/pip/_vendor/`). "
        "`semfora ci` reviews such files for secrets only and sums them up in one remark, so a vendored "
        "library bump does not flood the review; set to [] to review them like the project's own. A "
        "repository's .semfora.toml may remove names; adding one needs `semfora trust`.",
    )


class UISettings(_Section):
    theme: str = Field("semfora-dark", description="Theme name: built-in or from the user themes directory.")
    prompt_history: bool = Field(
        True,
        description="Keep the prompt's up/down history across sessions, per repository "
        "(prompts that look like they hold a secret are never written).",
    )


class Settings(_Section):
    llm: LLMSettings = Field(default_factory=LLMSettings)
    budget: BudgetSettings = Field(default_factory=BudgetSettings)
    ollama: OllamaSettings = Field(default_factory=OllamaSettings)
    index: IndexSettings = Field(default_factory=IndexSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    cache: CacheSettings = Field(default_factory=CacheSettings)
    metrics: MetricsSettings = Field(default_factory=MetricsSettings)
    edits: EditSettings = Field(default_factory=EditSettings)
    git: GitSettings = Field(default_factory=GitSettings)
    review: ReviewSettings = Field(default_factory=ReviewSettings)
    ui: UISettings = Field(default_factory=UISettings)


# Environment variables other tools rely on, mapped to their dotted keys.
ENV_ALIASES: dict[str, str] = {
    "SEMFORA_MODEL": "llm.model",
    "SEMFORA_EMBEDDING": "search.embedding",
    "SEMFORA_CHROMA_URL": "search.chroma_url",
    "SEMFORA_BUDGET": "budget.context_tokens",
    "OLLAMA_HOST": "ollama.host",
}
ENV_PREFIX = "SEMFORA_"  # SEMFORA_SECTION__KEY sets section.key


class LoadedSettings:
    """Effective settings plus where each overridden key came from, and what was not trusted."""

    def __init__(
        self,
        settings: Settings,
        sources: dict[str, str],
        files: list[Path],
        *,
        trust: RepoTrust | None = None,
        ignored: tuple[IgnoredSetting, ...] = (),
    ) -> None:
        self.settings = settings
        self.sources = sources
        self.files = files
        self.trust = trust
        self.ignored = ignored

    def source_of(self, dotted: str) -> str:
        return self.sources.get(dotted, "default")

    @property
    def untrusted_notice(self) -> str | None:
        """One sentence naming every ignored setting of an untrusted repository file, or None."""
        if not self.ignored or self.trust is None:
            return None
        why = "was edited since you trusted it" if self.trust.state == "changed" else "is not trusted"
        keys = "; ".join(i.describe() for i in self.ignored)
        return (
            f"{self.trust.file} {why}, so these settings are ignored: {keys}. "
            f"Review the file, then run `semfora trust --path {self.trust.root}` to apply them"
        )


def user_config_path() -> Path:
    return config_home() / "config.toml"


def trust_store() -> TrustStore:
    """The user's trusted repositories (``$XDG_CONFIG_HOME/semfora/trusted.json``)."""
    return TrustStore(config_home() / TRUST_FILE)


def repo_config_path(repo_root: Path) -> Path:
    return Path(repo_root) / ".semfora.toml"


# (repository file, digest) pairs already reported in this process: one notice, not one per load.
_REPORTED: set[tuple[str, str]] = set()
_REPORTED_LOCK = threading.Lock()


def _stderr_notice(message: str) -> None:
    sys.stderr.write(f"semfora: warning[UNTRUSTED_CONFIG]: {message}\n")


# Where the untrusted-config notice goes; the app may point it at a toast.
notice_sink = _stderr_notice


def report_untrusted_once(loaded: LoadedSettings) -> bool:
    """Send ``loaded``'s untrusted notice to ``notice_sink`` once per file version and process."""
    notice = loaded.untrusted_notice
    if notice is None or loaded.trust is None:
        return False
    key = (loaded.trust.file or "", loaded.trust.digest or "")
    with _REPORTED_LOCK:
        if key in _REPORTED:
            return False
        _REPORTED.add(key)
    notice_sink(notice)
    return True


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and dotted != "llm.prices" and not dotted.startswith("llm.prices."):
            out.update(_flatten(value, dotted + "."))
        else:
            out[dotted] = value
    return out


class _NotATable(Exception):
    """``prefix`` holds a value where ``dotted`` needs it to be a table (``llm = "x"``, then ``llm.model``)."""

    def __init__(self, prefix: str) -> None:
        super().__init__(prefix)
        self.prefix = prefix


def _set_dotted(target: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = target
    for depth, part in enumerate(parts[:-1], start=1):
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise _NotATable(".".join(parts[:depth]))
        node = child
    node[parts[-1]] = value


def _leaf_keys() -> dict[str, Any]:
    """Every settable key with its default (``llm.prices`` is one key: a table of tables)."""
    return {dotted: default for dotted, default, _doc in iter_keys()}


def _unknown_key_message(dotted: str) -> str:
    """``unknown setting`` plus the nearest real key, for a misspelt ``llm.modle``."""
    import difflib

    known = [*_leaf_keys(), *Settings.model_fields]
    near = difflib.get_close_matches(dotted, known, n=1, cutoff=0.6)
    if "." not in dotted:
        sections = ", ".join(Settings.model_fields)
        return (
            f"unknown section (did you mean {near[0]}?)"
            if near
            else f"unknown section (sections: {sections})"
        )
    section = dotted.split(".", 1)[0]
    if not near:
        keys = [k.split(".", 1)[1] for k in _leaf_keys() if k.startswith(section + ".")]
        return f"unknown setting (the keys of [{section}]: {', '.join(keys)})" if keys else "unknown setting"
    return f"unknown setting (did you mean {near[0]}?)"


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc


def _env_overrides(environ: Mapping[str, str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for var, dotted in ENV_ALIASES.items():
        if environ.get(var):
            found[dotted] = environ[var]
    lists = [dotted for dotted, default in _leaf_keys().items() if isinstance(default, list)]
    for var, value in environ.items():
        # An empty variable is unset, as it is for the well-known names (SEMFORA_MODEL=).
        if var.startswith(ENV_PREFIX) and "__" in var and value.strip():
            dotted = var[len(ENV_PREFIX) :].lower().replace("__", ".")
            found[dotted] = _env_list(value) if dotted in lists else value
    return found


def _env_list(value: str) -> list[str]:
    """A list setting from the environment: ``a,b`` or a TOML array ``["a", "b"]``."""
    text = value.strip()
    if text.startswith("["):
        try:
            parsed = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            parsed = None
        if isinstance(parsed, list):
            return [str(v) for v in parsed]
    return [part.strip() for part in text.split(",") if part.strip()]


def _env_var_for(dotted: str, environ: Mapping[str, str]) -> str:
    """The environment variable that set ``dotted`` (``SEMFORA_BUDGET``, ``SEMFORA_SEARCH__LIMIT``)."""
    long_name = ENV_PREFIX + dotted.upper().replace(".", "__")
    if environ.get(long_name):
        return long_name
    return next((var for var, key in ENV_ALIASES.items() if key == dotted and environ.get(var)), long_name)


def named_by_environment(dotted: str, environ: Mapping[str, str] | None = None) -> bool:
    """Whether the environment sets ``dotted`` (its well-known alias, e.g. ``SEMFORA_MODEL`` for
    ``llm.model``, or ``SEMFORA_SECTION__KEY``): this module is the only reader of settings from
    the environment."""
    return bool(_env_overrides(os.environ if environ is None else environ).get(dotted))


def load_settings(
    repo_root: Path | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> LoadedSettings:
    """Merge defaults, user file, repository file, environment and explicit overrides."""
    env = os.environ if environ is None else environ
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    files: list[Path] = []
    layers: list[tuple[str, dict[str, Any]]] = []
    trust: RepoTrust | None = None
    ignored: list[IgnoredSetting] = []
    user_file = user_config_path()
    user_flat: dict[str, Any] = {}
    if user_file.is_file():
        files.append(user_file)
        user_flat = _flatten(_read_toml(user_file))
        layers.append((str(user_file), user_flat))
    if repo_root is not None:
        repo_file = repo_config_path(Path(repo_root))
        if repo_file.is_file():
            files.append(repo_file)
            repo_flat = _flatten(_read_toml(repo_file))
            trust = trust_store().check(Path(repo_root), repo_file)
            if not trust.trusted:
                repo_flat, ignored = filter_untrusted(
                    repo_flat, lambda key: user_flat[key] if key in user_flat else _default_of(key)
                )
            layers.append((str(repo_file), repo_flat))
    layers.append(("env", dict(_env_overrides(env))))
    if overrides:
        layers.append(("flag", {k: v for k, v in overrides.items() if v is not None}))

    def origin_of(dotted: str) -> str:
        # A nested key (llm.prices.foo.input) is set by whoever set its nearest recorded parent.
        parts = dotted.split(".")
        found = next(
            (".".join(parts[:n]) for n in range(len(parts), 0, -1) if ".".join(parts[:n]) in sources), None
        )
        origin = sources[found] if found else "configuration"
        return _env_var_for(found or dotted, env) if origin == "env" else origin

    for origin, flat in layers:
        for dotted, value in flat.items():
            try:
                _set_dotted(merged, dotted, value)
            except _NotATable as exc:
                setter = _env_var_for(dotted, env) if origin == "env" else origin
                if exc.prefix in _leaf_keys():  # llm.model = "a", then llm.model.x = 1
                    raise ConfigError(f"{dotted}: {_unknown_key_message(dotted)} (from {setter})") from None
                raise ConfigError(
                    f"{exc.prefix}: must be a table of settings ([{exc.prefix}]), not a single value "
                    f"(from {origin_of(exc.prefix)})"
                ) from None
            sources[dotted] = origin
    try:
        settings = Settings.model_validate(merged)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        if first["type"] == "extra_forbidden":
            message = _unknown_key_message(where)
        else:
            message = str(first["msg"]).removeprefix("Value error, ")
        raise ConfigError(f"{where}: {message} (from {origin_of(where)})") from exc
    loaded = LoadedSettings(settings, sources, files, trust=trust, ignored=tuple(ignored))
    report_untrusted_once(loaded)
    return loaded


def settings_needing_trust(repo_file: Path) -> list[tuple[str, Any, str]]:
    """``(key, value, reason)`` for every setting of ``repo_file`` that applies only once trusted."""
    return [
        (key, value, reason)
        for key, value in _flatten(_read_toml(repo_file)).items()
        if (reason := needs_trust(key, value)) is not None
    ]


def _default_of(dotted: str) -> Any:
    node: Any = Settings()
    for part in dotted.split("."):
        node = getattr(node, part, None)
    return node


def theme_names() -> set[str]:
    """Names of the built-in themes and of the user's theme files (their ``name:`` line, else the stem)."""
    from importlib import resources

    names: set[str] = set()
    sources: list[tuple[str, str]] = []
    try:
        for entry in resources.files("themes").iterdir():
            if entry.name.endswith((".yaml", ".yml")):
                sources.append((entry.name, entry.read_text(encoding="utf-8")))
    except (ModuleNotFoundError, OSError):
        pass
    user_dir = config_home() / "themes"
    if user_dir.is_dir():
        for path in user_dir.iterdir():
            if path.suffix in (".yaml", ".yml") and path.is_file():
                try:
                    sources.append((path.name, path.read_text(encoding="utf-8")))
                except (OSError, UnicodeDecodeError):
                    continue
    for filename, text in sources:
        found = re.search(r"^name:\s*['\"]?([^'\"\s#]+)", text, re.M)
        names.add(found.group(1) if found else filename.rsplit(".", 1)[0])
    return names


def check_settings(loaded: LoadedSettings) -> None:
    """What a field cannot check alone (an installed theme); raises ConfigError (exit 2).

    `semfora config` and `doctor` call it; the app itself falls back to the default theme.
    """
    theme = loaded.settings.ui.theme
    known = theme_names()
    if known and theme not in known:
        raise ConfigError(
            f"ui.theme: unknown theme {theme!r} (from {loaded.source_of('ui.theme')}); "
            f"known: {', '.join(sorted(known))}",
            hint=f"add a theme file under {config_home() / 'themes'} or pick a known name",
        )


def iter_keys(model: type[BaseModel] = Settings, prefix: str = "") -> list[tuple[str, Any, str]]:
    """Every leaf key as ``(dotted, default, description)``, for docs and `semfora config`."""
    rows: list[tuple[str, Any, str]] = []
    for name, field in model.model_fields.items():
        dotted = f"{prefix}{name}"
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            rows.extend(iter_keys(ann, dotted + "."))
            continue
        default = field.get_default(call_default_factory=True)
        if isinstance(default, dict):
            default = {k: (v.model_dump() if isinstance(v, BaseModel) else v) for k, v in default.items()}
        rows.append((dotted, default, field.description or ""))
    return rows


def save_user_setting(dotted: str, value: Any) -> Path:
    """Persist one key into the user config file (used by `/theme`), keeping the other keys."""
    path = user_config_path()
    data: dict[str, Any] = _read_toml(path) if path.is_file() else {}
    _set_dotted(data, dotted, value)
    Settings.model_validate(data)  # refuse to write something we could not read back
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".toml.tmp")
    tmp.write_text(_dump_toml(data), encoding="utf-8")
    os.replace(tmp, path)
    return path


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def _dump_toml(data: Mapping[str, Any], prefix: str = "") -> str:
    scalars = [(k, v) for k, v in data.items() if not isinstance(v, Mapping)]
    tables = [(k, v) for k, v in data.items() if isinstance(v, Mapping)]
    lines = [f"{k} = {_toml_value(v)}" for k, v in scalars]
    out = "\n".join(lines) + ("\n" if lines else "")
    for key, table in tables:
        name = f"{prefix}{key}"
        inner = _dump_toml(table, name + ".")
        out += f"\n[{name}]\n{inner}"
    return out


def render_configuration_doc() -> str:
    """The body of docs/configuration.md, generated from the models above."""
    lines = [
        "# Configuration",
        "",
        "<!-- Generated from engine/config.py by `python -m engine.config > docs/configuration.md`;",
        "     tests/test_config.py fails when this page and the model disagree. -->",
        "",
        "semfora reads its settings in this order, later sources winning:",
        "",
        "1. the defaults below;",
        "2. the user file `$XDG_CONFIG_HOME/semfora/config.toml` (default `~/.config/semfora/config.toml`);",
        "3. the repository file `.semfora.toml` at the repository root. Until you run `semfora trust`,",
        "   it cannot set what runs commands (`edits.test_cmd`, `edits.lint_cmd`, `git.auto_commit`, any",
        "   `*_cmd` or hook), remove entries from `edits.deny` or `index.exclude_dirs` (adding is fine),",
        "   add entries to `review.vendored_dirs` (which would hide code from `semfora ci`), or",
        "   send code elsewhere (`ollama.host`, `search.chroma_url`, a non-Claude `llm.model`, a",
        "   `sentence-transformers:` path); those keys are ignored and reported once per run",
        "   (see [security.md](security.md));",
        "4. environment variables: the well-known ones in the table at the end, and",
        "   `SEMFORA_<SECTION>__<KEY>` for any key but `llm.prices` (for example",
        "   `SEMFORA_UI__THEME=semfora-light`); a list takes comma-separated values",
        "   (`SEMFORA_INDEX__EXCLUDE_DIRS=node_modules,dist`) or a TOML array, and an empty variable",
        "   counts as unset, as for the well-known names;",
        "5. command-line flags such as `--model` and `--budget`.",
        "",
        "`semfora config` prints every effective value and the source it came from. A wrong key or",
        "value stops every command with `CONFIG_INVALID` (exit 2), naming the key, the file or variable",
        "that set it, and for a misspelt key the nearest real one (`llm.modle: unknown setting (did you",
        "mean llm.model?)`).",
        "Keys are written in TOML tables: `budget.context_tokens` is `context_tokens` under `[budget]`.",
        "",
        "| key | default | meaning |",
        "|---|---|---|",
    ]
    for dotted, default, doc in iter_keys():
        shown = "(per-model table)" if dotted == "llm.prices" else f"`{_toml_value(default)}`"
        if default is None:
            shown = "unset"
        lines.append(f"| `{dotted}` | {shown} | {doc} |")
    lines += [
        "",
        "## Environment variables",
        "",
        "| variable | sets |",
        "|---|---|",
    ]
    for var, dotted in ENV_ALIASES.items():
        lines.append(f"| `{var}` | `{dotted}` |")
    lines += [
        "| `ANTHROPIC_API_KEY` | the Claude API key (never logged, never written to run logs) |",
        "| `ANTHROPIC_BASE_URL` | an alternative Anthropic API endpoint, with its scheme (`http://127.0.0.1:8080`); "
        "anything else is `CONFIG_INVALID` |",
        "| `XDG_CACHE_HOME` | where all per-repository state lives (`semfora/<repo-id>/`) |",
        "| `XDG_CONFIG_HOME` | where `semfora/config.toml` and user `themes/` live |",
        "",
        "## Model prices",
        "",
        "`llm.prices` maps a model name to USD per million tokens, used for the cost shown after",
        "each turn. Add a model in TOML like this:",
        "",
        "```toml",
        '[llm.prices."claude-sonnet-4-6"]',
        "input = 3.0",
        "output = 15.0",
        "cache_write = 3.75",
        "cache_read = 0.30",
        "```",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    import sys

    sys.stdout.write(render_configuration_doc())
