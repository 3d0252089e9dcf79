"""Embedded vector builds run in a child process that never held a credential.

Chroma (1.5.x) writes a new HNSW segment's ``length.bin`` from a buffer it never clears, so the
file can carry whatever the writing process's memory held before (chroma-core/chroma#7688; one
such file held an ``Authorization`` header, see docs/security.md). The app and ``semfora index``
hold API keys; the process that writes an embedded store must not. ``build_in_clean_process``
starts ``python -m engine.index.vector_writer`` with every credential variable removed from its
environment, sends it the repository and the settings, and relays its progress; the child runs
``VectorIndexer`` as the parent would have, and leaves the HNSW files persisted
(``vectors._FirstSync``), so that the processes that only query the store, which do hold
keys, never write them. A Chroma server writes its files in its own process, so a server store is
written from this one, as before.

Protocol (JSON lines): the parent writes one request line (``root``, ``cache_dir``, ``settings``).
The child answers ``{"progress": [phase, done, total]}`` lines, and waits after each for ``go`` or
``stop`` (the parent's progress callback has run and its cancel event was read, so a cancel stops
the build exactly where it would have stopped in-process; the end of input, a parent that died,
stops it too); a ``{"notice": text}`` line (a damaged store it set aside) is said by the parent,
as its own. Its last line is one ``{"report": {...}}`` or ``{"error": {"code", "message",
"hint", "kind"}}``, on a descriptor of its own: whatever a library prints goes to stderr, which the parent
keeps for its error message.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
from dataclasses import asdict
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from engine import quarantine
from engine.errors import ConfigError, EmbeddingUnavailable, IndexError_, SemforaError, ServiceUnavailable
from engine.index.chroma import ChromaUnavailable
from engine.policy.content import environment_without_secrets
from engine.policy.redaction import redact

if TYPE_CHECKING:
    from engine.config import Settings
    from engine.index.pipeline import ProgressFn
    from engine.index.vectors import VectorReport
    from engine.repo.layout import RepoLayout

# The errors the child reports by kind, raised again as themselves in the parent.
_KINDS: dict[str, type[SemforaError]] = {
    cls.__name__: cls
    for cls in (ChromaUnavailable, EmbeddingUnavailable, ConfigError, ServiceUnavailable, IndexError_)
}
# The last lines of the child's stderr quoted when it ends without an answer.
STDERR_TAIL_CHARS = 1500


def build_vectors(
    layout: RepoLayout,
    settings: Settings,
    *,
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
) -> VectorReport:
    """Embed the chunks not embedded yet: in a child without credentials when the store is embedded
    and there is something to embed with, here otherwise (a server store, or vectors off)."""
    from engine.index.chroma import chroma_store
    from engine.index.embeddings import OFF_KINDS, choose_embedder, provider_kind
    from engine.index.vectors import VectorIndexer

    _spec, kind, _arg = provider_kind(settings)
    if kind in OFF_KINDS or chroma_store(layout, settings).is_server:
        return VectorIndexer(layout, settings).run(progress=progress, cancel=cancel)
    if kind in ("auto", "ollama"):
        # Probing costs little and, when nothing answers, no child needs to start just to say so
        # (the app tries again every minute while Ollama is down).
        choice = choose_embedder(settings)
        if not choice.enabled:
            return VectorIndexer(layout, settings, choice=choice).run(progress=progress, cancel=cancel)
    return build_in_clean_process(layout, settings, progress=progress, cancel=cancel)


def build_in_clean_process(
    layout: RepoLayout,
    settings: Settings,
    *,
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
) -> VectorReport:
    """Run ``VectorIndexer(layout, settings).run`` in a child without credentials; its report."""
    from engine.index.vectors import VectorReport

    request = {
        "root": str(layout.root),
        "cache_dir": str(layout.cache_dir),
        "settings": settings.model_dump(mode="json"),
    }
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as errors:
        child = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-P", "-m", "engine.index.vector_writer"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            env=environment_without_secrets(),
            cwd=str(layout.root),
            text=True,
            encoding="utf-8",
            close_fds=True,
        )
        assert child.stdin is not None and child.stdout is not None
        answer: dict[str, Any] | None = None
        try:
            child.stdin.write(json.dumps(request) + "\n")
            child.stdin.flush()
            for line in child.stdout:
                message = json.loads(line)
                if "notice" in message:
                    # A damaged store the child set aside: said here, where the user listens.
                    quarantine.notify(str(message["notice"]))
                    continue
                if "progress" in message:
                    if progress is not None:
                        phase, done, total = message["progress"]
                        progress(str(phase), int(done), int(total))
                    child.stdin.write("stop\n" if cancel is not None and cancel.is_set() else "go\n")
                    child.stdin.flush()
                    continue
                answer = message
                break
        except (OSError, ValueError):  # a child that died (a closed pipe) or wrote a garbled line
            answer = None  # reported below with the exit status and the last line of its stderr
        finally:
            with contextlib.suppress(OSError):
                child.stdin.close()
            try:
                child.wait(timeout=60)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        if answer is not None and "report" in answer:
            return VectorReport(**answer["report"])
        errors.seek(0)
        tail = redact(errors.read()[-STDERR_TAIL_CHARS:].strip())
    error = (answer or {}).get("error") or {}
    cls = _KINDS.get(str(error.get("kind")), SemforaError)
    message = str(
        error.get("message") or f"the vector build ended without an answer (exit {child.returncode})"
    )
    if tail and not error:
        message = f"{message}: {tail.splitlines()[-1]}"
    raise cls(
        message,
        code=str(error["code"]) if error.get("code") else None,
        hint=str(error["hint"]) if error.get("hint") else None,
    )


# --- the child --------------------------------------------------------------------------------


def _serve(requests: IO[str], answers: IO[str]) -> int:
    from engine.config import Settings
    from engine.index.vectors import VectorIndexer
    from engine.repo.layout import RepoLayout

    def send(message: dict[str, Any]) -> None:
        answers.write(json.dumps(message) + "\n")
        answers.flush()

    try:
        request = json.loads(requests.readline())
        layout = RepoLayout(Path(request["root"]))
        settings = Settings.model_validate(request["settings"])
    except (ValueError, KeyError, TypeError) as exc:
        send({"error": {"kind": "", "code": "", "message": f"unreadable vector build request: {exc}"}})
        return 2
    cancel = threading.Event()
    quarantine.add_listener(lambda notice: send({"notice": notice}))

    def progress(phase: str, done: int, total: int) -> None:
        send({"progress": [phase, done, total]})
        if requests.readline().strip() != "go":  # "stop", or the parent is gone
            cancel.set()

    try:
        if str(layout.cache_dir) != request["cache_dir"]:
            raise IndexError_(f"the vector build found {layout.cache_dir}, not {request['cache_dir']}")
        report = VectorIndexer(layout, settings).run(progress=progress, cancel=cancel)
    except SemforaError as exc:
        send(
            {
                "error": {
                    "kind": type(exc).__name__,
                    "code": exc.code,
                    "message": exc.message,
                    "hint": exc.hint,
                }
            }
        )
        return 1
    send({"report": asdict(report)})
    return 0


def main() -> int:
    # Answers go out on a descriptor of their own; fd 1 (print, progress bars) joins stderr.
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        return _serve(sys.stdin, answers)
    finally:
        with contextlib.suppress(OSError):
            answers.close()


if __name__ == "__main__":
    sys.exit(main())
