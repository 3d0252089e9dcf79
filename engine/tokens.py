"""Token estimation: the one chars-per-token constant and the estimate every budget is built on.

Owns ``CHARS_PER_TOKEN`` and ``estimate_tokens`` (and ``tokens_for_chars`` for a length already
counted). Ground floor: imports nothing of the engine. The exact, API-backed count lives in
``engine.llm.tokens.TokenCounter`` and falls back to this estimate.
"""

from __future__ import annotations

# English prose and code average about four characters per token for Claude-family tokenizers.
CHARS_PER_TOKEN = 4


def tokens_for_chars(chars: int) -> int:
    """Approximate tokens in a text of ``chars`` characters: ``ceil(chars / 4)``; 0 for 0."""
    return -(-chars // CHARS_PER_TOKEN)


def estimate_tokens(text: str) -> int:
    """Approximate tokens in ``text``: ``ceil(len(text) / 4)``; 0 for the empty string."""
    return tokens_for_chars(len(text))
