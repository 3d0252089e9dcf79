"""Classify a task into an intent by plain rules: explain, locate, edit, refactor, review, general.

Owns the rule table and nothing else; no model is ever asked. The intent decides how
``gather`` fills the budget (edit targets get full source, explain gets summaries first).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


class Intent(StrEnum):
    EXPLAIN = "explain"
    LOCATE = "locate"
    EDIT = "edit"
    REFACTOR = "refactor"
    REVIEW = "review"
    GENERAL = "general"


@dataclass(frozen=True)
class Classification:
    intent: Intent
    rule: str  # the words that decided it, shown in run logs


# A leading imperative verb is the strongest signal ("rename X", "fix Y").
LEADING_VERBS: dict[Intent, tuple[str, ...]] = {
    Intent.REFACTOR: (
        "refactor",
        "rename",
        "extract",
        "move",
        "split",
        "inline",
        "restructure",
        "reorganize",
        "reorganise",
        "deduplicate",
        "dedupe",
        "simplify",
        "decouple",
        "consolidate",
        "cleanup",
    ),
    Intent.EDIT: (
        "add",
        "fix",
        "change",
        "implement",
        "update",
        "make",
        "replace",
        "remove",
        "delete",
        "modify",
        "write",
        "create",
        "support",
        "handle",
        "convert",
        "bump",
        "set",
        "allow",
        "raise",
        "return",
        "introduce",
        "patch",
        "append",
        "insert",
        "use",
        "enable",
        "disable",
        "drop",
        "rewrite",
        "edit",
    ),
    Intent.REVIEW: ("review", "audit", "critique", "assess", "inspect"),
    Intent.LOCATE: ("find", "locate", "list", "show", "grep", "search"),
    Intent.EXPLAIN: ("explain", "describe", "summarize", "summarise", "document", "walk", "tell"),
}

# Otherwise phrases anywhere, checked in this order (first match wins): a question
# about *where* is a locate even if it says "how", a review keyword beats an edit verb.
PHRASES: tuple[tuple[Intent, str], ...] = (
    (
        Intent.LOCATE,
        r"^where\b|\bwhere(?:'s| is| are| does| do| did| can| should)\b"
        r"|\bwhich (?:file|module|function|class|method)s?\b|\bwho calls\b"
        r"|\bcallers? of\b|\busages? of\b|\bdefined\b|\bdefinition of\b",
    ),
    (
        Intent.REVIEW,
        r"\breview\b|\baudit\b|\bsecurity\b|\bvulnerab\w*|\bcode smells?\b|\bany (?:issues|bugs|problems)\b"
        r"|\brisk\w*\b",
    ),
    (Intent.REFACTOR, r"\brefactor\w*\b|\brename\b|\bextract\b|\bclean ?up\b|\bduplicat\w*\b"),
    (
        Intent.EXPLAIN,
        r"^(?:how|why|what)\b|\bhow (?:does|do|is|are)\b|\bwhat (?:does|is|are)\b|\bexplain\b"
        r"|\bunderstand\b|\bpurpose of\b",
    ),
    # A report of something going wrong asks for a fix even when it never says "fix".
    (
        Intent.EDIT,
        r"\bfix\b|\bimplement\b|\badd\b|\bchange\b|\bshould\b|\bbug\b|\bbroken\b|\bfails?\b"
        r"|\bwrong\b|\bincorrect(?:ly)?\b|\binstead of\b|\bregression\b|\bcrash\w*|\bhangs?\b"
        r"|\bdoes(?:n't| not) work\b|\btraceback\b",
    ),
)
# A task of several paragraphs, or with pasted code or output, is an issue report: its "where",
# "caller of" or "security" are the story's, not the question, and what it asks for is a fix
# (unless it opens with a verb that says otherwise: "Explain why ...").
REPORT_SHAPE = re.compile(r"\n[ \t]*\n\s*\S|```|~~~")

DEBUG_WORDS = re.compile(
    r"\b(?:debug\w*|bug|bugs|error|errors|fail\w*|traceback|exception|crash\w*|broken|regression"
    r"|doesn't work|does not work|stack ?trace)\b",
    re.I,
)


def classify_intent(task: str) -> Classification:
    """The intent of ``task`` and the rule that decided it."""
    text = task.strip().lower()
    words = re.findall(r"[a-z']+", text)
    first = words[0] if words else ""
    if first == "please" and len(words) > 1:
        first = words[1]
    for intent, verbs in LEADING_VERBS.items():
        if first in verbs:
            return Classification(intent, f"leading verb '{first}'")
    if REPORT_SHAPE.search(text):
        return Classification(Intent.EDIT, "a report (paragraphs or pasted code)")
    for intent, pattern in PHRASES:
        match = re.search(pattern, text)
        if match:
            return Classification(intent, f"phrase '{match.group(0).strip()}'")
    return Classification(Intent.GENERAL, "no rule matched")


def is_debugging(task: str) -> bool:
    """True when the task is about a failure, so failed past turns are worth recalling."""
    return bool(DEBUG_WORDS.search(task))
