"""A protocol-faithful fake of the Ollama HTTP API on 127.0.0.1, for tests.

Speaks ``/api/tags``, ``/api/version``, ``/api/show``, ``/api/generate`` and ``/api/chat``
(NDJSON streaming by default, as Ollama does, or one JSON object with ``stream: false``),
``/api/embed`` and the legacy ``/api/embeddings``. Embeddings are a deterministic hashed
bag of words, so texts sharing words are close. Delay, death and scripted replies are
controllable; every request is recorded. Standalone: ``python -m tests.fakes.fake_ollama``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import signal
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from tests.fakes.quiet_server import QuietHTTPServer

DEFAULT_MODELS = ("qwen2.5-coder:1.5b", "qwen2.5-coder:7b", "nomic-embed-text:latest")
# Small, fixed dimension: enough to separate unrelated texts, cheap for tests.
EMBED_DIM = 64
# Characters per streamed NDJSON piece.
STREAM_CHUNK_CHARS = 6

# serve_forever checks for shutdown this often; the default 0.5 s would slow every test teardown.
SHUTDOWN_POLL_SECONDS = 0.02

_WORD = re.compile(r"[A-Za-z][a-z0-9]*|[0-9]+")


def embed_text(text: str, dim: int = EMBED_DIM) -> list[float]:
    """Hashed bag of words (identifiers split on case and underscores), L2-normalised."""
    vec = [0.0] * dim
    for word in _WORD.findall(text.replace("_", " ")):
        digest = hashlib.sha1(word.lower().encode()).digest()
        index = int.from_bytes(digest[:4], "little") % dim
        vec[index] += 1.0 if digest[4] % 2 == 0 else -1.0
    norm = math.sqrt(sum(x * x for x in vec)) or 1.0
    return [x / norm for x in vec]


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    body: dict[str, Any]
    time: float


class FakeOllama:
    """Controller: start/stop/kill, ``delay`` seconds before each answer, queued ``replies``."""

    def __init__(
        self,
        port: int = 0,
        *,
        models: tuple[str, ...] = DEFAULT_MODELS,
        strict_models: bool = False,
        record_path: Path | None = None,
    ) -> None:
        self.models = list(models)
        self.strict_models = strict_models
        self.delay = 0.0
        self.stream_delay = 0.0  # seconds between streamed NDJSON lines (a slow model)
        self.die_after_lines: int | None = None  # drop the connection after this many streamed lines
        # (HTTP status, Ollama's {"error": ...} text) for the next generate/chat request, as Ollama
        # answers a request it refuses (e.g. 400 "model does not support chat", 500 out of memory).
        self.fail_next: tuple[int, str] | None = None
        self.requests: list[RecordedRequest] = []
        self.responder: Callable[[str, str], str] | None = None  # (model, prompt) -> reply
        self._replies: deque[str] = deque()
        self._lock = threading.Lock()
        self._record_path = record_path
        self.server = QuietHTTPServer(("127.0.0.1", port), _make_handler(self))
        self.server.daemon_threads = True
        self._alive = False
        self.connections: set[Any] = set()

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeOllama:
        threading.Thread(
            target=self.server.serve_forever, args=(SHUTDOWN_POLL_SECONDS,), name="fake-ollama", daemon=True
        ).start()
        self._alive = True
        return self

    def stop(self) -> None:
        """Stop serving and close the socket: later connections are refused (a dead Ollama)."""
        if self._alive:
            self._alive = False
            self.server.shutdown()
            self.server.server_close()
            with self._lock:
                open_connections = list(self.connections)
            for conn in open_connections:  # keep-alive clients must see the death too
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    continue

    kill = stop

    def reply(self, *texts: str) -> FakeOllama:
        """Queue replies for the next generate/chat calls (then the default reply)."""
        with self._lock:
            self._replies.extend(texts)
        return self

    def answer(self, model: str, prompt: str) -> str:
        with self._lock:
            if self._replies:
                return self._replies.popleft()
        if self.responder is not None:
            return self.responder(model, prompt)
        words = " ".join(prompt.split()[:8])
        return f"This code handles {words}."

    def requests_to(self, path: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == path]

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)
            if self._record_path is not None:
                with self._record_path.open("a", encoding="utf-8") as fh:
                    fh.write(
                        json.dumps({"path": request.path, "body": request.body, "time": request.time}) + "\n"
                    )

    def knows(self, model: str) -> bool:
        if not self.strict_models:
            return True
        return model in self.models or f"{model}:latest" in self.models


def _make_handler(fake: FakeOllama) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def setup(self) -> None:
            super().setup()
            with fake._lock:
                fake.connections.add(self.connection)

        def finish(self) -> None:
            with fake._lock:
                fake.connections.discard(self.connection)
            try:
                super().finish()
            except OSError:
                return

        def _json(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _ndjson(self, lines: list[dict[str, Any]]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                for n, line in enumerate(lines):
                    if fake.die_after_lines is not None and n >= fake.die_after_lines:
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)  # mid-body: the chunked stream never ends
                        return
                    if n and fake.stream_delay:
                        time.sleep(fake.stream_delay)
                    data = (json.dumps(line) + "\n").encode()
                    self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

        def _begin(self, method: str) -> tuple[str, dict[str, Any]]:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else {}
            except json.JSONDecodeError:
                body = {"_invalid": raw.decode("utf-8", "replace")}
            path = self.path.split("?", 1)[0]
            fake.record(RecordedRequest(method, path, body, time.monotonic()))
            if fake.delay:
                time.sleep(fake.delay)
            return path, body

        def do_GET(self) -> None:  # noqa: N802
            path, _ = self._begin("GET")
            if path == "/api/tags":
                self._json(
                    200,
                    {
                        "models": [
                            {
                                "name": m,
                                "model": m,
                                "modified_at": _now(),
                                "size": 986_000_000,
                                "digest": hashlib.sha256(m.encode()).hexdigest(),
                                "details": {
                                    "format": "gguf",
                                    "family": "qwen2",
                                    "parameter_size": "1.5B",
                                    "quantization_level": "Q4_K_M",
                                },
                            }
                            for m in fake.models
                        ]
                    },
                )
            elif path == "/api/version":
                self._json(200, {"version": "0.6.5"})
            elif path in ("/", ""):
                body = b"Ollama is running"
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            else:
                self._json(404, {"error": "404 page not found"})

        def do_HEAD(self) -> None:  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:  # noqa: N802
            path, body = self._begin("POST")
            if "_invalid" in body:
                self._json(400, {"error": "invalid JSON"})
                return
            model = str(body.get("model") or "")
            if path in ("/api/generate", "/api/chat", "/api/embed", "/api/embeddings", "/api/show"):
                if not model:
                    self._json(400, {"error": "model is required"})
                    return
                if not fake.knows(model):
                    self._json(404, {"error": f"model '{model}' not found"})
                    return
            if path in ("/api/generate", "/api/chat") and fake.fail_next is not None:
                status, message = fake.fail_next
                fake.fail_next = None
                self._json(status, {"error": message})
                return
            if path == "/api/show":
                self._json(
                    200,
                    {
                        "modelfile": f"FROM {model}",
                        "parameters": "",
                        "template": "{{ .Prompt }}",
                        "details": {"format": "gguf", "family": "qwen2", "parameter_size": "1.5B"},
                        "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768},
                        "capabilities": ["completion"],
                    },
                )
            elif path == "/api/generate":
                prompt = str(body.get("prompt") or "")
                self._complete(model, prompt, body, chat=False)
            elif path == "/api/chat":
                messages = body.get("messages") or []
                prompt = "\n".join(str(m.get("content", "")) for m in messages)
                self._complete(model, prompt, body, chat=True)
            elif path == "/api/embed":
                raw = body.get("input")
                texts = [raw] if isinstance(raw, str) else list(raw or [])
                self._json(
                    200,
                    {
                        "model": model,
                        "embeddings": [embed_text(str(t)) for t in texts],
                        "total_duration": 1_000_000,
                        "load_duration": 100_000,
                        "prompt_eval_count": sum(len(str(t).split()) for t in texts),
                    },
                )
            elif path == "/api/embeddings":
                self._json(200, {"embedding": embed_text(str(body.get("prompt") or ""))})
            else:
                self._json(404, {"error": "404 page not found"})

        def _complete(self, model: str, prompt: str, body: dict[str, Any], *, chat: bool) -> None:
            text = fake.answer(model, prompt)
            prompt_tokens = max(1, len(prompt) // 4)
            eval_tokens = max(1, len(text) // 4)
            final = {
                "model": model,
                "created_at": _now(),
                "done": True,
                "done_reason": "stop",
                "total_duration": 5_000_000,
                "load_duration": 1_000_000,
                "prompt_eval_count": prompt_tokens,
                "prompt_eval_duration": 1_000_000,
                "eval_count": eval_tokens,
                "eval_duration": 3_000_000,
            }
            if body.get("stream", True) is False:
                if chat:
                    self._json(200, {**final, "message": {"role": "assistant", "content": text}})
                else:
                    self._json(200, {**final, "response": text, "context": [1, 2, 3]})
                return
            pieces = [text[i : i + STREAM_CHUNK_CHARS] for i in range(0, len(text), STREAM_CHUNK_CHARS)]
            lines: list[dict[str, Any]] = []
            for piece in pieces:
                part: dict[str, Any] = {"model": model, "created_at": _now(), "done": False}
                part.update(
                    {"message": {"role": "assistant", "content": piece}} if chat else {"response": piece}
                )
                lines.append(part)
            last = dict(final)
            last.update(
                {"message": {"role": "assistant", "content": ""}}
                if chat
                else {"response": "", "context": [1, 2, 3]}
            )
            lines.append(last)
            self._ndjson(lines)

    return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fake Ollama API for tests.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before every answer")
    parser.add_argument(
        "--reply", action="append", default=[], help="queued generate/chat reply (repeatable)"
    )
    parser.add_argument("--record", type=Path, help="append every request as JSON lines here")
    args = parser.parse_args(argv)
    fake = FakeOllama(args.port, record_path=args.record)
    fake.delay = args.delay
    fake.reply(*args.reply)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    fake.start()
    print(f"listening on {fake.url}", flush=True)
    try:
        stop.wait()
    except KeyboardInterrupt:
        stop.set()
    fake.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
