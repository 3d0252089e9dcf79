"""What the model is told: the system prompt, the rendered context pack, follow-up messages.

Owns the prompt text, the stable cached prefix (system prompt, overview, session
memory) and the ``NEED:`` request syntax. It renders items the orchestrator chose;
it never chooses or fetches anything itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.llm.base import PromptBlock
from engine.orchestrator.anchors import looks_like_path
from engine.orchestrator.budget import ContextItem

# Items with these ids belong to the stable prefix, so prompt caching can reuse them.
OVERVIEW_ID = "overview"
SESSION_MEMORY_ID = "session-memory"
PREFIX_IDS = (OVERVIEW_ID, SESSION_MEMORY_ID)
# One NEED request may name at most this many targets; more is exploring, not asking.
MAX_NEED_TARGETS = 6

SYSTEM_PROMPT = """\
You are semfora, a code-editing assistant working inside one repository.
You do not have tools. semfora's engine has already chosen the context you need: a
bounded overview of the repository, then symbols, summaries and source excerpts, each
labelled with its file, lines and the reason it was chosen. Reason only over what you
are given; do not invent files, symbols or line contents.

When the task needs a code change, answer with edit blocks. Two kinds exist.

1. Replace exact text. The SEARCH part must be copied exactly from the file, including
indentation, and must match only one place; include enough lines to be unique.
An empty SEARCH section creates a new file.

path/to/file.py
<<<<<<< SEARCH
exact lines from the file
=======
replacement lines
>>>>>>> REPLACE

2. Replace a whole symbol (a function, method or class) by its qualified name; you do not
need to repeat the old text:

path/to/file.py
<<<<<<< SYMBOL Class.method
full new definition
>>>>>>> REPLACE

Put the file path alone on the line before each block, relative to the repository root.
An item of kind `staged` lists edits staged earlier in this session and not yet on disk:
the file is its lines with those edits applied, so SEARCH may quote the staged lines.
Never edit secret files (.env, keys, *.pem, credentials). Keep explanations short and
put them before the blocks.

If you cannot answer without seeing more code, reply with only a NEED block and nothing
else, naming at most 6 symbols or files:

NEED:
- Class.method
- path/to/file.py

semfora will fetch them and ask again. Ask only when the context really lacks something.
"""


@dataclass(frozen=True)
class NeedRequest:
    symbols: tuple[str, ...]
    files: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not self.symbols and not self.files


_NEED_HEAD = re.compile(r"^[ \t]*(?:\*\*)?NEED(?:\*\*)?[ \t]*:[ \t]*(.*)$", re.M)
# A label before the names ("symbols: A, B", "files: x.py"), singular or plural: not a name.
_NEED_LABEL = re.compile(r"^\s*(?:symbols?|files?|paths?)\s*:\s*", re.I)


def parse_need(reply: str) -> NeedRequest | None:
    """The ``NEED:`` request in ``reply``, or None when the reply has none (or edit blocks)."""
    if "<<<<<<<" in reply:
        return None
    match = _NEED_HEAD.search(reply)
    if match is None:
        return None
    names: list[str] = [p for p in re.split(r"[,\s]+", _NEED_LABEL.sub("", match.group(1))) if p]
    inline = bool(names)
    # The lines after the head line (not the rest of the head line: its end is a newline,
    # which read as the blank line that ends the list and dropped every item below it).
    for line in reply[match.end() :].splitlines()[1:]:
        stripped = line.strip()
        if not stripped:
            if names:
                break
            continue
        if stripped.startswith("```"):
            continue
        item = re.sub(r"^(?:[-*•]|\d+[.)])\s*", "", stripped)
        unlabelled = _NEED_LABEL.sub("", item)
        if inline and item == stripped and unlabelled == item:
            break  # after "NEED: a, b", only bulleted or labelled lines continue the list; prose ends it
        names.extend(p for p in re.split(r"[,\s]+", unlabelled) if p)
    symbols: list[str] = []
    files: list[str] = []
    for raw in names:
        name = raw.strip("`'\"()").removeprefix("@")
        if not name or not re.fullmatch(r"[\w./\\:-]+", name):
            continue
        target = files if looks_like_path(name) else symbols
        if name not in target:
            target.append(name)
    total = (symbols + files)[:MAX_NEED_TARGETS]
    return NeedRequest(tuple(s for s in symbols if s in total), tuple(f for f in files if f in total))


# Parts of an item's reason worth the model's tokens: how it relates to the task's code.
# Search ranks ("fts rank 2 for ...") matter to the user reading the budget pane, not the model.
_MODEL_REASON = re.compile(
    r"(?:edit target|under review|top match|best match|relevant code|excerpt: gaps marked[^;]*|"
    r"(?:callee|caller) of `[^`]+`|named in the task `[^`]+`|exact name match `[^`]+`|"
    r"requested by the model[^;]*|similar past turn[^;]*|viewed earlier in this session)"
)


def model_reason(reason: str) -> str:
    return "; ".join(dict.fromkeys(_MODEL_REASON.findall(reason)))


def render_item(item: ContextItem) -> str:
    """One item as the model sees it: a labelled header (with how it relates), then its text."""
    where = item.file or ""
    if item.file and item.start_line:
        where += f":{item.start_line}-{item.end_line or item.start_line}"
    label = " ".join(p for p in (item.kind, item.symbol or "", where) if p)
    why = model_reason(item.reason)
    return f"### {label}" + (f" ({why})" if why else "") + f"\n{item.text.rstrip()}\n"


# Headings of the prefix items in their cached system blocks.
PREFIX_HEADINGS = {OVERVIEW_ID: "## Repository overview\n", SESSION_MEMORY_ID: "## Earlier in this session\n"}


def item_text(item: ContextItem) -> str:
    """Exactly what the model receives for ``item``: a prefix block, or the rendered item.

    ``stable_prefix``, ``task_message`` and ``need_followup`` all send this string, so
    `semfora context --json` can show each item's ``text`` as the model reads it.
    """
    heading = PREFIX_HEADINGS.get(item.id)
    if heading is not None:
        return heading + item.text.rstrip() + "\n"
    return render_item(item)


def stable_prefix(items: list[ContextItem]) -> list[PromptBlock]:
    """System prompt, overview and session memory: the cached part of every request."""
    blocks = [PromptBlock(SYSTEM_PROMPT, cache=True)]
    by_id = {i.id: i for i in items}
    for item_id in PREFIX_IDS:
        item = by_id.get(item_id)
        if item is not None:
            blocks.append(PromptBlock(item_text(item), cache=True))
    return blocks


def task_message(task: str, items: list[ContextItem], intent: str) -> str:
    """The first user message: the curated context (outside the prefix), then the task."""
    body = [item_text(i) for i in items if i.id not in PREFIX_IDS]
    context = "\n".join(body) if body else "(no further context was found for this task)\n"
    return f"## Context ({intent})\n\n{context}\n## Task\n{task.strip()}\n"


def need_followup(items: list[ContextItem], missing: list[str]) -> str:
    """The user message answering a NEED request."""
    parts = ["Here is what you asked for."]
    parts.extend(item_text(i) for i in items)
    if missing:
        parts.append("Not found (or not allowed): " + ", ".join(missing))
    parts.append("Now answer the original task. Do not ask for more unless it is essential.")
    return "\n\n".join(parts) + "\n"


def edit_failure_followup(report: str, output_limit: int | None = None) -> str:
    """The user message sending failed edit blocks back to the model.

    ``output_limit``: the reply stopped at this many output tokens, so asking for the same
    reply again would only be cut again; the model is told to make it shorter.
    """
    cut = (
        f"Your reply stopped at the output limit ({output_limit:,} tokens), which cut it short. "
        "This time send only the edit blocks, with no explanation, and keep SEARCH sections to the "
        "few lines that locate each change.\n"
        if output_limit
        else ""
    )
    return (
        "Your edit blocks could not be applied, so none of them were staged:\n\n"
        f"{report.rstrip()}\n\n"
        "Reply again with the complete corrected set of edit blocks (all of them, not only the "
        "failed ones). Copy SEARCH text exactly from the real lines shown above, or use a SYMBOL block.\n"
        + cut
    )


def render_pack(system: list[PromptBlock], message: str) -> str:
    """The whole request as plain text, for `semfora context` (what would be sent)."""
    parts = []
    for i, block in enumerate(system):
        tag = "cached" if block.cache else "system"
        parts.append(f"===== system block {i + 1} ({tag}) =====\n{block.text.rstrip()}\n")
    parts.append(f"===== user =====\n{message.rstrip()}\n")
    return "\n".join(parts)
