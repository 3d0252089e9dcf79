"""Regular expressions in changed code that backtrack super-linearly (ReDoS), and the change that
removes one.

A fix for a regular-expression denial of service changes a pattern, not a name or a term the
concern catalogue knows: axios 5e7ad38f (``/\\/+$/`` to ``/\\/?\\/$/`` in ``combineURLs``) and axios
5b457116, CVE-2021-3749 (``/\\s*$/`` to ``str.trim()`` in ``trim``). This module finds the patterns
in a few lines of code (JavaScript ``/.../`` literals and ``RegExp("...")``, the pattern argument of
Python's ``re`` functions) and says which of them can backtrack on a crafted input:

- a repeated group whose body is one repeated item and otherwise optional parts or characters
  that item matches too, ``(a+)+``, ``(\\w+\\s?)*``, ``(.+\\.)*`` (node-fetch 28802387): a run of
  that item splits among the iterations in exponentially many ways;
- a branch that is not anchored at the start and is a repeated item then the end anchor,
  ``\\s*$``, ``\\/+$``: a search tries every start inside a long run that is not at the end, each
  in time proportional to the run (quadratic).

Text only: no regular expression read here is ever compiled or run.
"""

from __future__ import annotations

import re

# A JavaScript regular-expression literal where an expression may start (after ``(``, ``=``,
# ``,``, ``:``, ``[``, ``!``, ``&``, ``|``, ``?``, ``{``, ``}``, ``;``, ``+``, ``return`` or the
# start of the line): not a division.
_JS_LITERAL = re.compile(
    r"(?:^|[(=,:\[!&|?{};+]|\breturn)\s*/(?![*/])((?:\\.|\[(?:\\.|[^\]\\\n])*\]|[^/\\\n\[])+)/[dgimsuyv]*"
)
_QUOTED = r"""[rbuRBU]{0,2}(?:'((?:\\.|[^'\\\n])*)'|"((?:\\.|[^"\\\n])*)")"""
_JS_CONSTRUCTED = re.compile(r"\bRegExp\s*\(\s*" + _QUOTED)
_PYTHON_CALL = re.compile(
    r"\bre(?:gex)?\.(?:compile|match|fullmatch|search|sub|subn|split|findall|finditer)\s*\(\s*" + _QUOTED
)
_QUANTIFIER = re.compile(r"[*+]|\{\d*,\}")
# Longest pattern read: longer ones are generated tables, not hand-written checks.
MAX_PATTERN = 500


def patterns(code: str, family: str) -> list[str]:
    """The regular expressions written in ``code`` (``js`` or ``python`` ``family``), in order."""
    found: list[str] = []
    if family == "js":
        for line in code.splitlines():
            found.extend(m.group(1) for m in _JS_LITERAL.finditer(line))
        found.extend(
            m.group(1) if m.group(1) is not None else m.group(2) for m in _JS_CONSTRUCTED.finditer(code)
        )
    elif family == "python":
        found.extend(
            m.group(1) if m.group(1) is not None else m.group(2) for m in _PYTHON_CALL.finditer(code)
        )
    return [p for p in dict.fromkeys(found) if p and len(p) <= MAX_PATTERN]


def _atoms(body: str) -> list[tuple[str, str]]:
    """``body`` (one branch, no top-level ``|``) as (atom, quantifier) pairs; a group is one atom."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\":
            atom, i = body[i : i + 2], i + 2
        elif ch == "[":
            j = i + 1
            if j < len(body) and body[j] == "^":
                j += 1
            if j < len(body) and body[j] == "]":
                j += 1
            while j < len(body) and body[j] != "]":
                j += 2 if body[j] == "\\" else 1
            atom, i = body[i : j + 1], j + 1
        elif ch == "(":
            depth, j = 0, i
            while j < len(body):
                if body[j] == "\\":
                    j += 2
                    continue
                if body[j] == "[":
                    while j < len(body) and body[j] != "]":
                        j += 2 if body[j] == "\\" else 1
                elif body[j] == "(":
                    depth += 1
                elif body[j] == ")":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            atom, i = body[i : j + 1], j + 1
        else:
            atom, i = ch, i + 1
        m = re.match(r"(?:[*+?]|\{\d*(?:,\d*)?\})[?+]?", body[i:])
        quantifier = m.group(0) if m else ""
        i += len(quantifier)
        out.append((atom, quantifier))
    return out


def _branches(body: str) -> list[str]:
    """``body`` split at its top-level ``|``."""
    out, depth, start, i = [], 0, 0, 0
    while i < len(body):
        ch = body[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[":
            while i < len(body) and body[i] != "]":
                i += 2 if body[i] == "\\" else 1
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            out.append(body[start:i])
            start = i + 1
        i += 1
    out.append(body[start:])
    return out


def _group_body(atom: str) -> str | None:
    if not (atom.startswith("(") and atom.endswith(")")):
        return None
    inner = atom[1:-1]
    m = re.match(r"\?(?:[:=!>]|<[=!]|P?<\w+>)", inner)
    return inner[m.end() :] if m else inner


def _repeats(quantifier: str) -> bool:
    return bool(_QUANTIFIER.match(quantifier))


# Items that match any character but a line end, and the literal characters each class covers.
_ANY = frozenset({".", "\\S", "[\\s\\S]", "[^]"})
_CLASS_COVERS = {"\\w": re.compile(r"[A-Za-z0-9_]"), "\\d": re.compile(r"[0-9]")}


def _covers(item: str, required: str) -> bool:
    """``item`` repeated can match the one character ``required`` matches (``.+`` covers ``\\.``
    in ``(.+\\.)*``): then the iterations can split one input in many ways."""
    char = (
        required[1]
        if required.startswith("\\") and len(required) == 2 and not required[1].isalnum()
        else required
    )
    if len(char) != 1 or (len(required) == 2 and required[1].isalnum()):
        return False
    if item in _ANY:
        return char != "\n" and not (item == "\\S" and char.isspace())
    covers = _CLASS_COVERS.get(item)
    return covers is not None and covers.fullmatch(char) is not None


def _ambiguous_repeat(body: str) -> str | None:
    """A repeated group whose one repeated item is all its other parts leave required, at any depth."""
    for branch in _branches(body):
        for atom, quantifier in _atoms(branch):
            inner = _group_body(atom)
            if inner is None:
                continue
            if _repeats(quantifier):
                for inner_branch in _branches(inner):
                    parts = _atoms(inner_branch)
                    repeated = [a for a, q in parts if _repeats(q)]
                    required = [a for a, q in parts if not q or q.startswith("{") and not q.startswith("{0")]
                    if (
                        len(repeated) == 1
                        and _group_body(repeated[0]) is None
                        and all(_covers(repeated[0], a) for a in required)
                    ):
                        return atom + quantifier
            if (nested := _ambiguous_repeat(inner)) is not None:
                return nested
    return None


def _run_before_end(body: str) -> str | None:
    """A branch not anchored at the start that is one repeated item and then ``$``."""
    for branch in _branches(body):
        parts = _atoms(branch)
        if (
            len(parts) == 2
            and _repeats(parts[0][1])
            and parts[1] == ("$", "")
            and parts[0][0] not in ("^", ".")
        ):
            return parts[0][0] + parts[0][1] + "$"
    return None


def backtracking(pattern: str) -> str | None:
    """The part of ``pattern`` that backtracks super-linearly on a crafted input, or None."""
    return _ambiguous_repeat(pattern) or _run_before_end(pattern)


def removed_backtracking(added: str, removed: str, family: str) -> list[str]:
    """Patterns of ``removed`` code that backtrack and whose backtracking part no pattern of the
    ``added`` code keeps: the change took a ReDoS out (or rewrote the pattern that had one)."""
    kept = {backtracking(p) for p in patterns(added, family)}
    out = []
    for p in patterns(removed, family):
        part = backtracking(p)
        if part is not None and part not in kept:
            out.append(p)
    return out
