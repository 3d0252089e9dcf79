"""The one redactor: every text that leaves the process passes through ``redact`` first.

Owns masking (the spans ``content.find_secrets`` returns become ``[REDACTED]``) and the helpers
that apply it to whole JSON documents and model requests. Masking keeps line breaks, so line
numbers of redacted source, chunks and previews stay true. It is idempotent: redacting twice
changes nothing more.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import is_dataclass, replace
from typing import Any, TypeVar

from engine.policy.content import find_secrets, secret_free

MASK = "[REDACTED]"
# Line breaks as str.splitlines() counts them: a masked span keeps every one, in order.
_LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")

T = TypeVar("T")


def redact(text: str) -> str:
    """``text`` with API keys, tokens, private keys, URL passwords and secret assignments masked."""
    if not text or not isinstance(text, str):
        return text
    hits = find_secrets(text)
    if not hits:
        return text
    out: list[str] = []
    pos = 0
    for hit in hits:
        out.append(text[pos : hit.start])
        # Keep the line breaks of a masked span (a private-key block) so line numbers hold.
        span = text[hit.start : hit.end]
        out.append(MASK + "".join(ch for ch in span if ch in _LINE_BREAKS))
        pos = hit.end
    out.append(text[pos:])
    return "".join(out)


# A double-quoted string on one line, with its backslash escapes, as TOON and JSON write one.
_QUOTED_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')


def redact_quoted(text: str) -> str:
    """``redact(text)``, also inside escaped strings: TOON (and JSON) quote a signature such as
    ``def connect(password="hunter2")`` as ``"def connect(password=\\"hunter2\\")"``, where the
    secret assignment is no longer seen. Each such string is read back, redacted and re-quoted."""
    text = redact(text)
    if "\\" not in text:
        return text
    return "".join(_redact_quoted_line(line) if "\\" in line else line for line in text.splitlines(True))


def _redact_quoted_line(line: str) -> str:
    # Strings are taken left to right and an unterminated one ends the scan of the line: a regex
    # search would retry from every later quote, quadratic on a long line of escaped quotes.
    out: list[str] = []
    pos = 0
    while (start := line.find('"', pos)) >= 0:
        match = _QUOTED_STRING.match(line, start)
        if match is None:
            break
        quoted = match.group(0)
        out.append(line[pos:start])
        out.append(_redact_one_quoted(quoted) if "\\" in quoted else quoted)
        pos = match.end()
    out.append(line[pos:])
    return "".join(out)


def _redact_one_quoted(quoted: str) -> str:
    try:
        inner = json.loads(quoted)
    except ValueError:  # not JSON's escapes: left as it is (redact has seen it already)
        return quoted
    masked = redact(inner)
    return quoted if masked == inner else json.dumps(masked, ensure_ascii=False)


def redact_many(texts: Sequence[str]) -> list[str]:
    """``[redact(t) for t in texts]``, with one search deciding the texts that hold nothing to mask
    (the short texts of a file: a search per text cost the indexer 0.3 s on Django)."""
    free = secret_free(texts)
    return [text if ok else redact(text) for text, ok in zip(texts, free, strict=True)]


def contains_secret(text: str) -> bool:
    return bool(text) and bool(find_secrets(text))


def redact_json(value: T) -> T:
    """A copy of a JSON-like value (dicts, lists, tuples, strings) with every string redacted."""
    if isinstance(value, str):
        return redact(value)  # type: ignore[return-value]
    if isinstance(value, Mapping):
        return {k: redact_json(v) for k, v in value.items()}  # type: ignore[return-value]
    if isinstance(value, tuple):
        return tuple(redact_json(v) for v in value)  # type: ignore[return-value]
    if isinstance(value, list):
        return [redact_json(v) for v in value]  # type: ignore[return-value]
    return value


def redact_request(system: Any, messages: list[Any]) -> tuple[Any, list[Any]]:
    """A model request's system prompt and messages, redacted: the last check before the network.

    ``system`` may be a string or a list of prompt blocks (anything with a ``text``); message
    contents may be strings or lists of content blocks. Objects are rebuilt, never mutated.
    """
    return _redact_blocks(system), [_redact_message(m) for m in messages]


def _redact_blocks(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list | tuple):
        return [_redact_blocks(v) for v in value]
    if isinstance(value, Mapping):
        return redact_json(dict(value))
    text = getattr(value, "text", None)
    if isinstance(text, str) and is_dataclass(value) and not isinstance(value, type):
        return replace(value, text=redact(text))
    return value


def _redact_message(message: Any) -> Any:
    if isinstance(message, Mapping):
        out = dict(message)
        if "content" in out:
            out["content"] = _redact_blocks(out["content"])
        return out
    return _redact_blocks(message)
