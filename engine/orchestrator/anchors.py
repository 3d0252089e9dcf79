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
MENTION = re.compile(r"(?<![\w@])@([\w./\\-]+[\w])")
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


def split_pasted(task: str) -> tuple[str, list[str]]:
    """(the task's prose, the blocks the user pasted: fenced or indented code, logs, output)."""
    code = [m.group(0) for m in FENCED.finditer(task)]
    prose = FENCED.sub("\n", task)
    code += [m.group(0) for m in INDENTED.finditer(prose)]
    return INDENTED.sub("\n", prose), code


def search_text(task: str) -> str:
    """The task without a traceback's boilerplate, for weighing words and searching.

    ``Traceback (most recent call last):`` and each frame's ``File "/usr/lib/...", line 12, in``
    (or a JavaScript frame's ``(/path/file.js:12:5)``) would lend their words (``usr``, ``site``,
    ``packages``, ``recent``) a weight they do not deserve; the frames' function names and the
    code lines they quote stay.
    """
    text = _TRACEBACK_HEAD.sub(" ", task)
    text = _PY_FRAME_PREFIX.sub(" ", text)
    return _JS_FRAME_PLACE.sub(" ", text)


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
        target = m.group(1).replace("\\", "/")
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
    for name in snippet_names:
        add(name, "snippet")
    return Anchors(tuple(found))
