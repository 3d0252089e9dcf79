"""Pull the concrete handles out of a task: identifiers, paths, quoted strings, @mentions.

Owns the extraction rules only. Anchors are hints for retrieval; nothing here touches
the disk or the index, so a path anchor may still be rejected later by the sandbox.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Words too common in requests to be useful as search terms.
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "can",
        "could",
        "do",
        "does",
        "did",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "please",
        "should",
        "so",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "this",
        "those",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "add",
        "fix",
        "change",
        "make",
        "code",
        "file",
        "files",
        "function",
        "functions",
        "method",
        "methods",
        "class",
        "classes",
        "use",
        "used",
        "using",
        "work",
        "works",
        "new",
        "all",
        "any",
        "some",
        "also",
        "explain",
        "show",
        "find",
        "where",
        "locate",
        "implement",
        "update",
        "remove",
        "delete",
        "refactor",
        "rename",
        "review",
        "let",
        "lets",
        "one",
        "it's",
        "doesn't",
        "don't",
        "not",
        "no",
        "yes",
        "get",
        "set",
        "call",
        "calls",
        "called",
        "value",
        "values",
        "return",
        "returns",
    ]
)

# Extensions that make a bare word a path ("see app.py").
PATH_EXTENSIONS = (
    "py",
    "pyi",
    "js",
    "jsx",
    "ts",
    "tsx",
    "mjs",
    "cjs",
    "go",
    "rs",
    "java",
    "kt",
    "rb",
    "php",
    "c",
    "h",
    "cc",
    "cpp",
    "hpp",
    "cs",
    "swift",
    "scala",
    "sh",
    "toml",
    "yaml",
    "yml",
    "json",
    "md",
    "cfg",
    "ini",
    "html",
    "css",
    "sql",
    "txt",
)

# A fenced code block (```...```) or an indented block of four spaces: code the user pasted.
FENCED = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n.*?^[ \t]*\1[ \t]*$", re.M | re.S)
INDENTED = re.compile(r"(?:^(?: {4}|\t)[^\n]*\n?)+", re.M)
# Stack frames: Python (`File "pkg/mod.py", line 12, in name`) and JavaScript
# (`at name (path/file.js:12:5)`). A frame names the code the failure went through.
PY_FRAME = re.compile(r'File "([^"\n]+)", line (\d+), in ([\w<>.]+)')
JS_FRAME = re.compile(r"\bat (?:async )?([\w$.<>]+) \(([^\s()]+?):(\d+):\d+\)")
# What an issue report's editor adds around the words: URLs (their words, ``https``, ``github``,
# ``png``, weigh as the rarest of a report and point nowhere in the code), HTML (``<img width=..>``,
# ``<details>``), template comments and checklists ("- [x] I've checked the docs"). A link to a
# file of a repository (``.../blob/<ref>/src/pkg/mod.py#L218``) does point at code: it becomes a
# ``link`` anchor before the URL goes.
URL = re.compile(r"\b(?:https?://|www\.)[^\s<>()\[\]\"'`]+")
BLOB_LINK = re.compile(r"/(?:blob|tree)/[^/\s]+/([^\s#?]+?\.\w+)(?:[?#]L(\d+)(?:-L\d+)?)?$")
HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
HTML_TAG = re.compile(
    r"</?(?:img|details|summary|br|hr|p|a|b|i|em|strong|sub|sup|kbd|code|pre|div|span|ul|ol|li|"
    r"table|thead|tbody|tr|td|th|h[1-6]|blockquote|video|picture|source)\b[^<>]*>",
    re.I,
)
MD_IMAGE = re.compile(r"!\[[^\]\n]*\]\([^)\n]*\)")
MD_LINK = re.compile(r"\[([^\]\n]+)\]\([^)\n]*\)")
CHECKLIST = re.compile(r"^[ \t]*[-*] \[[ xX]\] [^\n]*$", re.M)
# The environment a report lists ("- Python version: 3.11.3", "OS: Ubuntu 22.04", "rich==13.7.1"):
# where the reporter runs, not what goes wrong; "version" and "python" would otherwise find the
# code that prints versions.
ENVIRONMENT_LINE = re.compile(
    r"^[ \t]*[-*]?[ \t]*(?:[A-Za-z][\w .()/-]{0,40}:[ \t]*v?\d+(?:\.\d+)+\b[^\n]*"
    r"|[\w.-]+==\d[^\s]*|(?:Environment|Platform|System info(?:rmation)?)[ \t]*:?[ \t]*)$",
    re.M | re.I,
)
# A commit message's trailers ("Co-authored-by: Name <name@example.com>", "Signed-off-by: ...")
# and e-mail addresses: who wrote the change, not what it is (a name weighs as the rarest word,
# and ``gmail.com`` reads as a dotted name to look up).
TRAILER_LINE = re.compile(
    r"^[ \t]*(?:Co-authored|Signed-off|Reviewed|Acked|Tested|Reported|Suggested|Helped|Approved)"
    r"-by:[^\n]*$",
    re.M | re.I,
)
# GitHub's closing references ("Fixes #2429", "closes owner/repo#12", "Refs: #7"): which issue
# the change settles, not what it does ("fixes" found code whose comment says "fix").
ISSUE_REFERENCE = re.compile(
    r"\b(?:fix(?:e[sd])?|close[sd]?|resolve[sd]?|refs?|see)\b:?[ \t]+(?:[\w.-]+/[\w.-]+)?#\d+\b",
    re.I,
)
# A conventional commit's type ("fix(gzip): ...", "feat!: ..."): ``fix(gzip)`` is no call of a
# function ``fix``; its scope (``gzip``) stays a word of the task.
CONVENTIONAL_TYPE = re.compile(
    r"^([ \t]*)(?:fix|feat|chore|docs|refactor|perf|test|tests|build|ci|style|revert)"
    r"(?:\(([^()\n]*)\))?!?:",
    re.M | re.I,
)
EMAIL = re.compile(r"<?\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b>?")
# ``@path`` or, for a path with spaces (what the app's completion inserts), ``@"src dir/a.py"``.
MENTION = re.compile(r'(?<![\w@])@(?:"([^"\n]{1,300})"|([\w./\\-]+[\w]))')
QUOTED = re.compile(r"`([^`\n]{1,200})`|\"([^\"\n]{1,200})\"|(?<!\w)'([^'\n]{1,200})'(?!\w)")
CALL = re.compile(r"\b([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)\(\s*\)?")
DOTTED = re.compile(r"\b([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)\b")
CAMEL = re.compile(r"\b([A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+|[a-z]+(?:[A-Z][a-z0-9]*)+|[A-Z]{2,}[a-z]\w*)\b")
SNAKE = re.compile(r"\b(_{0,2}[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+_{0,2})\b")
PATHLIKE = re.compile(
    r"(?<![\w@/])((?:[\w.-]+/)+[\w.-]+|[\w-]+(?:\.[\w-]+)*\.(?:" + "|".join(PATH_EXTENSIONS) + r"))(?![\w/])"
)
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")


@dataclass(frozen=True)
class Anchor:
    text: str
    # file_mention | symbol_mention | path | call | dotted | camel | snake | name | quoted | word
    # | frame (a stack frame: ``path`` and ``line`` say where) | snippet (an identifier in pasted code)
    # | link (a link to a repository file: ``path``, and ``line`` when the link names one)
    kind: str
    path: str = ""
    line: int = 0

    @property
    def is_symbolish(self) -> bool:
        return self.kind in {"symbol_mention", "call", "dotted", "camel", "snake", "name", "snippet"}


@dataclass(frozen=True)
class Anchors:
    """Every anchor of one task, strongest kinds first, without duplicates."""

    items: tuple[Anchor, ...]

    def of(self, *kinds: str) -> list[str]:
        return [a.text for a in self.items if a.kind in kinds]

    @property
    def symbols(self) -> list[str]:
        """Names to look up in the symbol index, @mentions and call-like names first."""
        return [a.text for a in self.items if a.is_symbolish]

    @property
    def paths(self) -> list[str]:
        return self.of("file_mention", "path")

    @property
    def words(self) -> list[str]:
        return self.of("word")

    @property
    def frames(self) -> list[Anchor]:
        """Stack frames of a pasted traceback, innermost last (as Python prints them)."""
        return [a for a in self.items if a.kind == "frame"]

    @property
    def links(self) -> list[Anchor]:
        """Links to files of a repository, in task order."""
        return [a for a in self.items if a.kind == "link"]

    @property
    def explicit(self) -> list[Anchor]:
        """Anchors the user named on purpose: @mentions, calls, paths, backticked names."""
        return [a for a in self.items if a.kind in {"file_mention", "symbol_mention", "path", "call", "name"}]

    def search_query(self) -> str:
        """A compact text query for hybrid search: identifiers, then the remaining words."""
        parts: list[str] = []
        for text in self.symbols + self.of("quoted") + self.words:
            if text not in parts:
                parts.append(text)
        return " ".join(parts[:12])


_TRACEBACK_HEAD = re.compile(r"Traceback \(most recent call last\):")
_PY_FRAME_PREFIX = re.compile(r'File "[^"\n]+", line \d+, in ')
_JS_FRAME_PLACE = re.compile(r"\(([^\s()]+?):\d+:\d+\)")


def links(task: str) -> list[tuple[str, int]]:
    """(repository path, line or 0) of each link to a file of a repository in ``task``, in order."""
    out: list[tuple[str, int]] = []
    for m in URL.finditer(task):
        found = BLOB_LINK.search(m.group(0).rstrip(".,;:"))
        if found:
            out.append((found.group(1), int(found.group(2) or 0)))
    return list(dict.fromkeys(out))


def clean_report(task: str) -> str:
    """``task`` without the markup an issue report carries: URLs, HTML, images, checklists.

    A markdown link keeps its text; pasted code keeps its lines except URLs (a ``<module>`` in
    a traceback is not HTML). What is left is what the reporter wrote about the code."""
    parts: list[str] = []
    last = 0
    for m in FENCED.finditer(task):
        parts.append(_clean_prose(task[last : m.start()]))
        parts.append(URL.sub(" ", m.group(0)))
        last = m.end()
    parts.append(_clean_prose(task[last:]))
    return "".join(parts)


def _clean_prose(text: str) -> str:
    text = HTML_COMMENT.sub(" ", text)
    text = TRAILER_LINE.sub("", text)
    text = ISSUE_REFERENCE.sub(" ", text)
    text = CONVENTIONAL_TYPE.sub(r"\1\2:", text)
    text = EMAIL.sub(" ", text)
    text = CHECKLIST.sub("", text)
    text = ENVIRONMENT_LINE.sub("", text)
    text = MD_IMAGE.sub(" ", text)
    text = MD_LINK.sub(r"\1", text)
    text = HTML_TAG.sub(" ", text)
    return URL.sub(" ", text)


def report_title(prose: str) -> str:
    """A report's title: its first line, when more follows it (a one-line task has none)."""
    lines = [line.strip() for line in prose.strip().splitlines()]
    if len([line for line in lines if line]) < 2:
        return ""
    return lines[0]


def split_pasted(task: str) -> tuple[str, list[str]]:
    """(the task's prose, the blocks the user pasted: fenced or indented code, logs, output)."""
    code = [m.group(0) for m in FENCED.finditer(task)]
    prose = FENCED.sub("\n", task)
    code += [m.group(0) for m in INDENTED.finditer(prose)]
    return INDENTED.sub("\n", prose), code


def search_text(task: str) -> str:
    """The task without markup (``clean_report``) and a traceback's boilerplate, for weighing
    words and searching.

    ``Traceback (most recent call last):`` and each frame's ``File "/usr/lib/...", line 12, in``
    (or a JavaScript frame's ``(/path/file.js:12:5)``) would lend their words (``usr``, ``site``,
    ``packages``, ``recent``) a weight they do not deserve; the frames' function names and the
    code lines they quote stay.
    """
    text = _TRACEBACK_HEAD.sub(" ", clean_report(task))
    text = _PY_FRAME_PREFIX.sub(" ", text)
    return _JS_FRAME_PLACE.sub(" ", text)


# Messages a report copies from what the program printed: an exception's text
# (``TimeoutError: Operation timed out after None seconds``), a log line's message
# (``tornado.application - ERROR - Uncaught exception``) and quoted strings. The code that emits a
# message usually spells it out, so its words, in order, find that code.
EXCEPTION_LINE = re.compile(r"\b[A-Z]\w*(?:Error|Exception|Warning|Failure|Exit)\b:[ \t]*([^\n]+)")
LOG_LINE = re.compile(
    r"\b(?:CRITICAL|ERROR|WARNING|WARN|INFO|DEBUG)\b[ \t]*[-:|][ \t]*(?:[\w.]+[ \t]*[-:|][ \t]*)?([^\n]+)"
)
QUOTED_MESSAGE = re.compile(r"\"([^\"\n]{6,200})\"|'([^'\n]{6,200})'")
MESSAGE_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")
# A run of at least this many words is a phrase worth looking up (two-word runs only from an
# exception's or a log line's text, where the whole message may be that short).
MESSAGE_MIN_WORDS = 3
# Words of a phrase looked up: long enough to be specific, short enough that a value the
# program formatted into the message (a path, a number) rarely falls inside.
MESSAGE_MAX_WORDS = 6
# Phrases looked up per task at most: each is one indexed query.
MAX_MESSAGES = 10


def quoted_messages(task: str) -> list[str]:
    """Phrases (lowercase words) of the messages ``task`` quotes, most specific first.

    Each message is cut at what is not a word (a number, a path, punctuation): the program
    formatted values there. Runs of words are kept whole up to ``MESSAGE_MAX_WORDS``; a longer
    one yields its head (values are usually formatted in after the message's words)."""
    text = clean_report(task)
    found: list[tuple[str, int]] = []  # (message, least words a run needs)
    for m in EXCEPTION_LINE.finditer(text):
        found.append((m.group(1), 2))
    for m in LOG_LINE.finditer(text):
        found.append((m.group(1), 2))
    for m in QUOTED_MESSAGE.finditer(text):
        found.append((m.group(1) or m.group(2), MESSAGE_MIN_WORDS))
    phrases: list[str] = []
    for message, least in found:
        for run in re.split(r"[^A-Za-z' ]+", message):
            words = MESSAGE_WORD.findall(run)
            if len(words) >= least:
                phrases.append(" ".join(w.lower() for w in words[:MESSAGE_MAX_WORDS]))
    unique = list(dict.fromkeys(phrases))
    return sorted(unique, key=lambda ph: -len(ph.split()))[:MAX_MESSAGES]


def looks_like_path(text: str) -> bool:
    if "/" in text and not text.startswith(("http:", "https:")):
        return True
    if re.fullmatch(r"\.[\w.-]+", text):
        return True  # a dotfile: .env, .gitignore
    return bool(re.search(r"\.(?:" + "|".join(PATH_EXTENSIONS) + r")$", text))


def _identifier_kind(name: str) -> str:
    if "." in name:
        return "dotted"
    if CAMEL.fullmatch(name):
        return "camel"
    if "_" in name.strip("_"):
        return "snake"
    return "name"  # a plain word the user marked as code, e.g. `redirect`


def extract_anchors(task: str) -> Anchors:
    """Identifiers, paths, quoted strings and @mentions of ``task``, in order of strength."""
    found: list[Anchor] = []
    seen: set[str] = set()

    def add(text: str, kind: str) -> None:
        text = text.strip().rstrip(".,;:")
        if not text or text in seen:
            return
        seen.add(text)
        found.append(Anchor(text, kind))

    # Pasted code and tracebacks first: a frame points at code the failure went through; an
    # identifier in pasted code is how the user calls the library, evidence but not a pointer.
    # The rest of the task is read without them, so ``print(x)`` in a snippet is not a name the
    # user meant.
    linked = [Anchor(path, "link", path, line) for path, line in links(task)]
    task = clean_report(task)
    prose, code = split_pasted(task)
    found_frames: list[tuple[int, Anchor]] = []
    for m in PY_FRAME.finditer(task):
        found_frames.append(
            (m.start(), Anchor(m.group(3), "frame", m.group(1).replace("\\", "/"), int(m.group(2))))
        )
    for m in JS_FRAME.finditer(task):
        found_frames.append(
            (m.start(), Anchor(m.group(1), "frame", m.group(2).replace("\\", "/"), int(m.group(3))))
        )
    # One anchor per distinct frame: a recursion or a loop repeats the same frame many times.
    frames = list(dict.fromkeys(a for _pos, a in sorted(found_frames, key=lambda f: f[0])))
    snippet_names: list[str] = []
    for block in code:
        cleaned = PY_FRAME.sub(" ", JS_FRAME.sub(" ", block))
        for m in re.finditer(r"([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)(\s*\()?", cleaned):
            word = m.group(1)
            called = m.group(2) is not None
            if (
                (called or "_" in word.strip("_") or "." in word or CAMEL.fullmatch(word))
                and len(word) > 2
                and word.lower() not in STOPWORDS
                and word not in snippet_names
            ):
                snippet_names.append(word)
    task = prose
    rest = task
    for m in MENTION.finditer(task):
        target = (m.group(1) or m.group(2)).replace("\\", "/")
        add(target, "file_mention" if looks_like_path(target) else "symbol_mention")
    rest = MENTION.sub(" ", rest)

    for m in QUOTED.finditer(rest):
        inner = next(g for g in m.groups() if g is not None).strip()
        if re.fullmatch(r"[A-Za-z_][\w.]*\(\)", inner):
            add(inner.removesuffix("()"), "call")
        elif looks_like_path(inner) and " " not in inner:
            add(inner, "path")
        elif re.fullmatch(r"[A-Za-z_][\w.]*", inner):
            add(inner, _identifier_kind(inner))
        else:
            add(inner, "quoted")
    rest = QUOTED.sub(" ", rest)

    for m in PATHLIKE.finditer(rest):
        add(m.group(1), "path")
    rest_no_paths = PATHLIKE.sub(" ", rest)

    for m in CALL.finditer(rest_no_paths):
        if m.group(0).rstrip().endswith(("(", ")")) and "(" in m.group(0):
            add(m.group(1), "call")
    for m in DOTTED.finditer(rest_no_paths):
        add(m.group(1), "dotted")
    for m in CAMEL.finditer(rest_no_paths):
        add(m.group(1), "camel")
    for m in SNAKE.finditer(rest_no_paths):
        add(m.group(1), "snake")
    for m in WORD.finditer(rest_no_paths):
        word = m.group(0)
        if word.lower() not in STOPWORDS and word not in seen:
            add(word, "word")
    for frame in frames:
        found.append(frame)
    found.extend(linked)
    for name in snippet_names:
        add(name, "snippet")
    return Anchors(tuple(found))
