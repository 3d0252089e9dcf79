"""A protocol-faithful fake of the Anthropic Messages API on 127.0.0.1, for tests.

Speaks ``POST /v1/messages`` (SSE streaming exactly as Anthropic sends it, and plain
JSON), ``POST /v1/messages/count_tokens``, and answers from a queue of scripted
behaviours: replies, 429 with retry-after, 529 overloaded, 500, a mid-stream
disconnect, a slow stream. Every request is recorded (headers + JSON body + time).
Run standalone with ``python -m tests.fakes.fake_anthropic --port N --script FILE.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import signal
import sys
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from tests.fakes.quiet_server import QuietHTTPServer

DEFAULT_REPLY = "OK"
# Characters per text_delta event: small enough that tests see several deltas.
DEFAULT_CHUNK_CHARS = 8
# count_tokens reports the message framing on top of the text, as the real endpoint does.
FRAMING_TOKENS = 7
# serve_forever checks for shutdown this often; the default 0.5 s would slow every test teardown.
SHUTDOWN_POLL_SECONDS = 0.02


def fake_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    time: float  # time.monotonic() when the request arrived

    @property
    def system_text(self) -> str:
        system = self.body.get("system") or ""
        if isinstance(system, str):
            return system
        return "\n".join(block.get("text", "") for block in system)

    @property
    def all_text(self) -> str:
        """Everything sent to the model: system blocks and every message's text."""
        parts = [self.system_text]
        for message in self.body.get("messages", []):
            content = message.get("content")
            if isinstance(content, str):
                parts.append(content)
            else:
                parts.extend(block.get("text", "") for block in content or [])
        return "\n".join(parts)


@dataclass
class Action:
    """One scripted behaviour. ``type``: text | error | disconnect.

    text: ``text`` streamed in ``chunk_chars`` pieces, ``delay`` seconds between events.
    error: HTTP ``status`` with ``error_type`` and optional ``retry_after`` header; with
        ``in_stream=True`` it is sent as an SSE ``error`` event inside a 200 stream instead.
    disconnect: stream ``text`` for ``after_chunks`` deltas then drop the connection.
    """

    type: str = "text"
    text: str = DEFAULT_REPLY
    chunk_chars: int = DEFAULT_CHUNK_CHARS
    delay: float = 0.0
    stop_reason: str = "end_turn"
    status: int = 200
    error_type: str = "api_error"
    retry_after: float | None = None
    in_stream: bool = False
    after_chunks: int = 1
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Action:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


class FakeAnthropic:
    """Controller: start/stop the server, queue behaviours, read recorded requests."""

    def __init__(
        self, port: int = 0, *, default_text: str = DEFAULT_REPLY, record_path: Path | None = None
    ) -> None:
        self.default_text = default_text
        self.min_cache_tokens = 0  # the real API needs 1024 (Sonnet) or 2048 (Haiku); 0 caches any prefix
        self.context_window = 0  # tokens; above it a request is refused as "prompt is too long" (0: no limit)
        self.requests: list[RecordedRequest] = []
        self._script: deque[Action] = deque()
        self._lock = threading.Lock()
        self._cached_prefixes: set[str] = set()
        self._record_path = record_path
        self.server = QuietHTTPServer(("127.0.0.1", port), _make_handler(self))
        self.server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeAnthropic:
        self._thread = threading.Thread(
            target=self.server.serve_forever,
            args=(SHUTDOWN_POLL_SECONDS,),
            name="fake-anthropic",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # --- scripting -------------------------------------------------------
    def push(self, action: Action) -> FakeAnthropic:
        with self._lock:
            self._script.append(action)
        return self

    def reply(
        self,
        text: str,
        *,
        chunk_chars: int = DEFAULT_CHUNK_CHARS,
        delay: float = 0.0,
        stop_reason: str = "end_turn",
    ) -> FakeAnthropic:
        return self.push(
            Action("text", text=text, chunk_chars=chunk_chars, delay=delay, stop_reason=stop_reason)
        )

    def error(
        self,
        status: int,
        error_type: str | None = None,
        *,
        retry_after: float | None = None,
        in_stream: bool = False,
    ) -> FakeAnthropic:
        default_type = {
            429: "rate_limit_error",
            529: "overloaded_error",
            401: "authentication_error",
            400: "invalid_request_error",
            404: "not_found_error",
        }.get(status, "api_error")
        return self.push(
            Action(
                "error",
                status=status,
                error_type=error_type or default_type,
                retry_after=retry_after,
                in_stream=in_stream,
            )
        )

    def disconnect(
        self, text: str = "partial reply that never ends", *, after_chunks: int = 1
    ) -> FakeAnthropic:
        return self.push(Action("disconnect", text=text, after_chunks=after_chunks))

    def load_script(self, actions: list[dict[str, Any]]) -> FakeAnthropic:
        for data in actions:
            self.push(Action.from_json(data))
        return self

    def next_action(self) -> Action:
        with self._lock:
            return self._script.popleft() if self._script else Action("text", text=self.default_text)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._script)

    def message_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == "/v1/messages"]

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)
            if self._record_path is not None:
                with self._record_path.open("a", encoding="utf-8") as fh:
                    fh.write(
                        json.dumps(
                            {
                                "path": request.path,
                                "headers": request.headers,
                                "body": request.body,
                                "time": request.time,
                            }
                        )
                        + "\n"
                    )

    # --- token accounting ------------------------------------------------
    def usage_for(self, body: dict[str, Any]) -> dict[str, int]:
        """Input tokens split like Anthropic: the prefix up to the last cache_control is written once, then read."""
        system = body.get("system") or []
        blocks = [{"type": "text", "text": system}] if isinstance(system, str) else list(system)
        last_cached = max((i for i, b in enumerate(blocks) if b.get("cache_control")), default=None)
        prefix_text = "".join(
            b.get("text", "") for b in blocks[: (last_cached + 1) if last_cached is not None else 0]
        )
        rest_text = "".join(
            b.get("text", "") for b in blocks[(last_cached + 1) if last_cached is not None else 0 :]
        )
        rest_text += json.dumps(body.get("messages", []))
        usage = {
            "input_tokens": fake_tokens(rest_text),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        if prefix_text and fake_tokens(prefix_text) < self.min_cache_tokens:
            # Like the real API: a prefix below the model's minimum is silently not cached.
            usage["input_tokens"] += fake_tokens(prefix_text)
        elif prefix_text:
            key = hashlib.sha256((str(body.get("model")) + prefix_text).encode()).hexdigest()
            with self._lock:
                seen = key in self._cached_prefixes
                self._cached_prefixes.add(key)
            usage["cache_read_input_tokens" if seen else "cache_creation_input_tokens"] = fake_tokens(
                prefix_text
            )
        return usage


def _make_handler(fake: FakeAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            return

        def _json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("request-id", "req_" + uuid.uuid4().hex[:24])
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(
            self, status: int, error_type: str, message: str, headers: dict[str, str] | None = None
        ) -> None:
            self._json(
                status,
                {
                    "type": "error",
                    "error": {"type": error_type, "message": message},
                    "request_id": "req_" + uuid.uuid4().hex[:24],
                },
                headers,
            )

        def do_POST(self) -> None:  # noqa: N802 (http.server naming)
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._error(400, "invalid_request_error", "body is not JSON")
                return
            path = self.path.split("?", 1)[0]
            fake.record(
                RecordedRequest(
                    "POST", path, {k.lower(): v for k, v in self.headers.items()}, body, time.monotonic()
                )
            )
            if not self.headers.get("x-api-key") and not self.headers.get("authorization"):
                self._error(401, "authentication_error", "x-api-key header is required")
                return
            if not self.headers.get("anthropic-version"):
                self._error(400, "invalid_request_error", "anthropic-version header is required")
                return
            if path == "/v1/messages/count_tokens":
                usage = fake.usage_for(
                    {
                        **body,
                        "system": [
                            {k: v for k, v in b.items() if k != "cache_control"}
                            for b in (
                                [{"type": "text", "text": body["system"]}]
                                if isinstance(body.get("system"), str)
                                else body.get("system") or []
                            )
                        ],
                    }
                )
                self._json(200, {"input_tokens": usage["input_tokens"] + FRAMING_TOKENS})
                return
            if path != "/v1/messages":
                self._error(404, "not_found_error", f"no route {path}")
                return
            if (
                not body.get("model")
                or not isinstance(body.get("max_tokens"), int)
                or not body.get("messages")
            ):
                self._error(400, "invalid_request_error", "model, max_tokens and messages are required")
                return
            if fake.context_window and fake_tokens(json.dumps(body)) > fake.context_window:
                self._error(
                    400,
                    "invalid_request_error",
                    f"prompt is too long: {fake_tokens(json.dumps(body))} tokens > {fake.context_window} maximum",
                )
                return
            action = fake.next_action()
            if action.type == "error" and not action.in_stream:
                headers = {}
                if action.retry_after is not None:
                    headers["retry-after"] = f"{action.retry_after:g}"
                self._error(action.status, action.error_type, f"scripted {action.error_type}", headers)
                return
            usage = fake.usage_for(body)
            if body.get("stream"):
                self._stream(body, action, usage)
            else:
                self._whole(body, action, usage)

        def _whole(self, body: dict[str, Any], action: Action, usage: dict[str, int]) -> None:
            if action.delay:
                time.sleep(action.delay)
            self._json(
                200,
                {
                    "id": "msg_" + uuid.uuid4().hex[:24],
                    "type": "message",
                    "role": "assistant",
                    "model": body["model"],
                    "content": [{"type": "text", "text": action.text}],
                    "stop_reason": action.stop_reason,
                    "stop_sequence": None,
                    "usage": {**usage, "output_tokens": fake_tokens(action.text)},
                },
            )

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def _event(self, name: str, payload: dict[str, Any]) -> None:
            self._chunk(f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode())

        def _stream(self, body: dict[str, Any], action: Action, usage: dict[str, int]) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream; charset=utf-8")
            self.send_header("cache-control", "no-cache")
            self.send_header("request-id", "req_" + uuid.uuid4().hex[:24])
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            try:
                self._stream_events(body, action, usage)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client went away (cancel); nothing to finish

        def _stream_events(self, body: dict[str, Any], action: Action, usage: dict[str, int]) -> None:
            self._event(
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": "msg_" + uuid.uuid4().hex[:24],
                        "type": "message",
                        "role": "assistant",
                        "model": body["model"],
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {**usage, "output_tokens": 1},
                    },
                },
            )
            if action.type == "error":  # in-stream error event, as Anthropic sends for overload mid-flight
                self._event(
                    "error",
                    {
                        "type": "error",
                        "error": {"type": action.error_type, "message": f"scripted {action.error_type}"},
                    },
                )
                self.wfile.write(b"0\r\n\r\n")
                return
            self._event(
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            )
            self._event("ping", {"type": "ping"})
            step = max(1, action.chunk_chars)
            pieces = [action.text[i : i + step] for i in range(0, len(action.text), step)]
            for n, piece in enumerate(pieces):
                if action.type == "disconnect" and n >= action.after_chunks:
                    self.close_connection = True
                    self.connection.shutdown(2)  # drop mid-body: the chunked stream never terminates
                    return
                if action.delay:
                    time.sleep(action.delay)
                self._event(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                )
            if action.type == "disconnect":
                self.close_connection = True
                self.connection.shutdown(2)
                return
            self._event("content_block_stop", {"type": "content_block_stop", "index": 0})
            self._event(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": action.stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": fake_tokens(action.text)},
                },
            )
            self._event("message_stop", {"type": "message_stop"})
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fake Anthropic Messages API for tests.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", type=Path, help="JSON list of actions (see Action)")
    parser.add_argument("--default-text", default=DEFAULT_REPLY, help="reply when the script is empty")
    parser.add_argument("--record", type=Path, help="append every request as JSON lines here")
    args = parser.parse_args(argv)
    fake = FakeAnthropic(args.port, default_text=args.default_text, record_path=args.record)
    if args.script:
        fake.load_script(json.loads(args.script.read_text(encoding="utf-8")))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    fake.start()
    print(f"listening on {fake.url}", flush=True)
    try:
        stop.wait()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
    fake.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
