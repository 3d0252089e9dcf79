"""The deterministic review rules: what any reviewer would flag in a semantic diff.

Each rule reads the SemanticDiff and returns findings; together they always run, with or
without a model. Thresholds are named below with the reason for their value. Changes that only
touch comments, docstrings, annotations, layout or names (``SymbolChange.logic_changed``) give
no findings: a reviewer reads them in seconds.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import PurePosixPath

from engine.policy.paths import is_test_path
from engine.review.dependencies import rule_dependencies
from engine.review.findings import SEVERITY_ORDER, Finding, Severity
from engine.review.secrets import BUILT, scan_files
from engine.review.security import changed_span, housekeeping_only, moved_lines, rule_security_logic
from engine.semantic.diff import CallerRef, ExternalCall, FileChange, SemanticDiff, SymbolChange
from engine.semantic.graph import family
from engine.semantic.surface import SOURCE_ROOTS, is_private_name, is_public_module, module_name
from engine.words import plural

# A function longer than this no longer fits on one screen; reviewers skim such code.
LARGE_FUNCTION_LINES = 80
# Nesting at this depth hides paths from review (engine.semantic.risk calls 6 high; 5 is a warning).
DEEP_NESTING = 5
# Effects a new call can have, and how loudly to report each: running code is worse than I/O.
EXTERNAL_SEVERITY: dict[str, Severity] = {
    "subprocess": "high",
    "eval": "high",
    "network": "medium",
    "database": "medium",
    "filesystem": "low",
}
CONTAINER_KINDS = frozenset({"class", "struct", "interface", "trait", "enum", "module", "namespace"})
FUNCTION_KINDS = frozenset({"function", "method"})
DOC_SUFFIXES = (".md", ".rst", ".txt", ".json", ".yaml", ".yml", ".toml", ".cfg", ".ini", ".lock")
# More API findings than this in one change is a mass change (a package move, a rewrite, a
# deprecation sweep): one finding with the counts says it better than a list nobody reads.
MASS_API_FINDINGS = 10
# A function must grow by more than this many lines to count as made long by the change: a few
# lines more on a function at the limit is not news.
LARGE_FUNCTION_GROWTH = 20
# Untested changes in more files than this are one mass change (a refactor, a typing sweep):
# one finding names the files.
MASS_UNTESTED_FILES = 3
# Methods whose change is presentation, not behaviour a test would pin down.
PRESENTATION_METHODS = frozenset({"__repr__", "__str__", "__rich_repr__", "__dir__", "__format__"})
# Names shorter than this are too common to prove that a test refers to a change (``run`` still
# counts: ``test_run`` names it).
MIN_REFERENCE_NAME = 3

__all__ = ["RULES", "is_test_path", "run_rules"]


def _built(path: str) -> bool:
    """A build's output (``dist/axios.min.js``): its removed functions and new effects are the
    source's, reported there (axios release commits: a minifier's ``xe`` "rose to high risk")."""
    return BUILT.search(path) is not None


def _reviewable(diff: SemanticDiff, path: str) -> bool:
    """Code a reviewer reviews as code: not tests, docs, examples, generated or build scripts."""
    return diff.in_library(path) and not path.endswith(DOC_SUFFIXES)


def _effect_calls(reasons: Iterable[str]) -> dict[str, list[str]]:
    """``network: requests.get, requests.post`` -> {"network": ["requests.get", "requests.post"]}
    (complexity is no effect: size and nesting have their own rule)."""
    out: dict[str, list[str]] = {}
    for reason in reasons:
        category, sep, detail = reason.partition(": ")
        if sep and not category.startswith("complexity"):
            out.setdefault(category, []).extend(d for d in detail.split(", ") if d)
    return out


def _called_name(call: str) -> str:
    """``subprocess.Popen`` -> ``Popen``; ``os.open(flags=...)`` -> ``open(flags=...)``."""
    name, paren, args = call.partition("(")
    return name.rsplit(".", 1)[-1] + paren + args


def _added_effects(s: SymbolChange) -> list[str]:
    """The effects the change added to ``s``, each with only the calls that are new: a reason
    whose list of calls changed (``network: requests.get`` -> ``network: requests.get,
    requests.post``) names the calls the function already made too. Compared by category and
    called name, as new external calls are (``Popen`` and ``subprocess.Popen`` are one call)."""
    before = {
        (category, _called_name(call))
        for category, calls in _effect_calls(s.risk_reasons_removed).items()
        for call in calls
    }
    out = []
    for category, calls in _effect_calls(s.risk_reasons_added).items():
        new = [c for c in dict.fromkeys(calls) if (category, _called_name(c)) not in before]
        if new:
            out.append(f"{category}: {', '.join(new)}")
    return out


def rule_risk_raised(diff: SemanticDiff) -> list[Finding]:
    """A symbol gained an effect (not merely branches: size and nesting have their own rule)."""
    out = []
    for s in diff.symbols:
        if is_test_path(s.file) or not s.logic_changed or _built(s.file):
            continue
        effects = _added_effects(s)
        if s.risk_raised and s.change != "added" and effects:
            # A rise to high is worth a finding; a rise to medium is a remark: the new effect
            # itself, when it is external, has its own finding (new-network, new-filesystem...).
            severity: Severity = "high" if s.risk_after == "high" else "info"
            out.append(
                Finding(
                    severity,
                    "risk",
                    f"risk of {s.qualified_name} rose from {s.risk_before} to {s.risk_after}: {'; '.join(effects)}",
                    s.file,
                    s.start_line,
                    s.qualified_name,
                    rule="risk-raised",
                )
            )
        elif s.change == "added" and s.risk_after == "high" and effects and not s.new_external_calls:
            out.append(
                Finding(
                    "info",
                    "risk",
                    f"new high-risk {s.kind} {s.qualified_name}: {'; '.join(effects)}",
                    s.file,
                    s.start_line,
                    s.qualified_name,
                    rule="risk-raised",
                )
            )
    return out


def rule_external_calls(diff: SemanticDiff) -> list[Finding]:
    """New effects on the outside world in the project's own code (calls into the project itself
    and test code that opens sockets or writes files are not external effects worth a finding)."""
    out = []
    for s in diff.symbols:
        if not _reviewable(diff, s.file):
            continue
        # One finding a category a symbol: a function that opens, writes and removes files is one
        # place to read, its calls named with their lines (it was one finding a call).
        by_category: dict[str, list[ExternalCall]] = {}
        for call in s.new_external_calls:
            by_category.setdefault(call.category, []).append(call)
        for category, calls in by_category.items():
            calls.sort(key=lambda c: c.line)
            line = calls[0].line or s.start_line
            named = (
                calls[0].call
                if len(calls) == 1
                else ", ".join(f"{c.call} (line {c.line})" if c.line else c.call for c in calls)
            )
            out.append(
                Finding(
                    EXTERNAL_SEVERITY.get(category, "medium"),
                    "security",
                    f"new {category} use in {s.qualified_name}: {named}",
                    s.file,
                    line,
                    s.qualified_name,
                    rule=f"new-{category}",
                    count=len(calls),
                )
            )
    return out


# --------------------------------------------------------------------------- public API


def _strip_root(path: str) -> str:
    for root in SOURCE_ROOTS:
        if path.startswith(root):
            return path[len(root) :]
    return path


def _api_message(s: SymbolChange, removed_code: frozenset[str] = frozenset()) -> str | None:
    """What breaks for users of a public symbol, or None when nothing does."""
    if s.language == "python":
        return _python_api_message(s, removed_code)
    if not s.exported or any(is_private_name(p) for p in s.qualified_name.split(".")):
        return None
    if _protocol_method(s) and s.change != "removed":
        return None
    if s.kind in ("variable", "constant"):
        return None
    if s.change == "removed" and s.qualified_name.endswith(".constructor"):
        cls = s.qualified_name.rpartition(".")[0]
        return (
            f"the constructor of public class {cls} was removed: new {cls}(...) now takes the "
            "arguments of the default or inherited constructor"
        )
    if s.change == "removed":
        return f"public {s.kind} {s.qualified_name} was removed{_removal_effect(s)}"
    if s.change == "renamed":
        return f"public {s.kind} {s.old_qualified_name} was renamed to {s.qualified_name}"
    if s.change == "moved" and s.old_file and _strip_root(s.old_file) != _strip_root(s.file):
        return f"public {s.kind} {s.qualified_name} moved from {s.old_file} to {s.file}"
    if s.change == "modified" and s.parameter_changes and s.kind not in CONTAINER_KINDS:
        return f"signature of public {s.kind} {s.qualified_name} changed: {'; '.join(s.parameter_changes)}"
    return None


def _removal_effect(s: SymbolChange) -> str:
    """What a removal does to the code that uses the symbol: the finding said only "was removed"."""
    if s.kind in ("method", "property", "getter", "setter", "field") or "." in s.qualified_name:
        return ": code that calls it on an instance now fails (AttributeError in Python, TypeError in JavaScript)"
    if s.language == "python":
        return ": code that imports it now fails with ImportError"
    return ": code that imports it now gets undefined or fails to load"


# Dunder methods users call by name; the others are called by the language (``==``, ``len()``,
# ``with``), positionally, so their parameter names and their presence are no import surface.
CALLED_DUNDERS = frozenset({"__init__", "__new__", "__call__", "__init_subclass__", "__class_getitem__"})
_DEFAULT_FROM_NONE = re.compile(r"^default of '(\w+)' changed from None to (.+)$")


def _protocol_method(s: SymbolChange) -> bool:
    leaf = (s.old_qualified_name or s.qualified_name).rsplit(".", 1)[-1]
    return (
        "." in s.qualified_name
        and leaf.startswith("__")
        and leaf.endswith("__")
        and leaf not in CALLED_DUNDERS
    )


def _python_api_message(s: SymbolChange, removed_code: frozenset[str] = frozenset()) -> str | None:
    """Python: judged by the import surface, not by text (``src/`` moves and re-exports keep paths)."""
    if s.import_path is None or s.kind in ("variable", "constant") or _protocol_method(s):
        return None
    if s.change == "removed" and s.constructor_from is not None:
        return _constructor_message(s)
    if s.change in ("removed", "moved", "renamed"):
        if s.still_importable:
            return None
        if s.change == "removed" and s.qualified_name == "__getattr__":
            return _module_getattr_message(s)
        if s.change == "removed":
            return f"public {s.kind} {s.import_path} was removed{_removal_effect(s)}"
        where = f"{s.old_qualified_name} is now {s.qualified_name}" if s.change == "renamed" else ""
        where = where or f"it moved to {s.file}"
        old_name = s.old_qualified_name or s.qualified_name
        old_module = module_name(s.old_file or s.file)
        # The dotted path users import it by today (``pkg.command.main``), not the bare name.
        old_path = f"{old_module}.{old_name}" if old_module else old_name
        return f"public {s.kind} {old_path} no longer imports from its old path ({where})"
    if s.change == "modified" and s.kind not in CONTAINER_KINDS:
        changes = [c for c in s.parameter_changes if not _fallback_moved_to_default(c, removed_code)]
        if changes:
            return f"signature of public {s.kind} {s.import_path} changed: {'; '.join(changes)}"
    return None


def _constructor_message(s: SymbolChange) -> str | None:
    """A class's ``__init__`` removed: the class still constructs, through the constructor it now
    inherits; what its callers lose is the arguments only the removed one took."""
    cls_path = (s.import_path or s.qualified_name).rpartition(".")[0]
    cls = s.qualified_name.rpartition(".")[0].rsplit(".", 1)[-1]
    head = f"the constructor of public class {cls_path} was removed: {cls}(...) now"
    source = s.constructor_from or ""
    if source == "object":
        if not s.parameter_changes:
            return None
        return f"{head} takes no arguments (object's constructor): {'; '.join(s.parameter_changes)}"
    if source.endswith(".__init__"):
        if not s.parameter_changes:
            return None  # the inherited constructor takes the same arguments
        return f"{head} takes the arguments of {source}: {'; '.join(s.parameter_changes)}"
    return (
        f"{head} takes the arguments of {source}'s constructor (defined outside this change): "
        "check that its callers' arguments still fit"
    )


# The names a module ``__getattr__`` answers for: ``name == "__version__"``, ``name in ("a", "b")``.
_SERVED_ONE = re.compile(r"""==\s*(['"])(\w+)\1""")
_SERVED_MANY = re.compile(r"""\bin\s*[(\[{]([^)\]}]*)[)\]}]""")
_QUOTED_NAME = re.compile(r"""(['"])(\w+)\1""")


def _module_getattr_message(s: SymbolChange) -> str:
    """A module's ``__getattr__`` (PEP 562) is called by Python, never by users: what they lose
    is the attributes it served (itsdangerous 4bb03cd6: ``itsdangerous.__version__``)."""
    module = (s.import_path or "").rpartition(".")[0] or module_name(s.old_file or s.file) or "the module"
    served: list[str] = []
    for statement in s.body_before:
        served += [m.group(2) for m in _SERVED_ONE.finditer(statement)]
        for group in _SERVED_MANY.finditer(statement):
            served += [m.group(2) for m in _QUOTED_NAME.finditer(group.group(1))]
    names = list(dict.fromkeys(served))
    if not names:
        return (
            f"the module __getattr__ of {module} was removed: the names it served dynamically "
            "(deprecated aliases, lazy imports) no longer resolve"
        )
    shown = ", ".join(f"{module}.{n}" for n in names[:6]) + (" ..." if len(names) > 6 else "")
    verb = "resolves" if len(names) == 1 else "resolve"
    return f"the module __getattr__ of {module} was removed: {shown}, which it served, no longer {verb}"


def _fallback_moved_to_default(change: str, removed_code: frozenset[str]) -> bool:
    """``default of 'x' changed from None to V`` where the change removed code that used V: the
    fallback the body applied for None moved into the signature, so a caller that leaves ``x``
    out gets what it got before (``algorithm=None`` -> ``algorithm="HS256"`` with
    ``algorithm_ = "HS256"`` gone from the body)."""
    m = _DEFAULT_FROM_NONE.match(change)
    if m is None:
        return False
    value = m.group(2).strip()
    variants = {value}
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        variants |= {f'"{value[1:-1]}"', f"'{value[1:-1]}'"}
    return any(v in line for v in variants for line in removed_code)


def _removed_code(diff: SemanticDiff) -> frozenset[str]:
    return frozenset(
        t.strip()
        for f in diff.files
        if _reviewable(diff, f.old_path or f.path)
        for n, t in f.removed_lines
        if n not in f.prose_removed and t.strip()
    )


def rule_public_api(diff: SemanticDiff) -> list[Finding]:
    out = []
    removed_code = _removed_code(diff) if any(s.parameter_changes for s in diff.symbols) else frozenset()
    updated: frozenset[tuple[str, int]] | None = None
    for f in diff.files:
        if not _reviewable(diff, f.path) and not (f.old_path and _reviewable(diff, f.old_path)):
            continue
        # Members of a class the change removes go with it: one finding for the class.
        gone = {s.qualified_name for s in f.symbols if s.change == "removed" and s.kind in CONTAINER_KINDS}
        # A name the same file defines again in another form (axios ab77a40e: the constructor
        # function AxiosHeaders became class AxiosHeaders) is still there.
        redefined = {s.qualified_name for s in f.symbols if s.change == "added"}
        for s in f.symbols:
            if not _reviewable(diff, s.old_file or s.file):
                continue
            if s.change == "removed" and (
                s.qualified_name.rpartition(".")[0] in gone or s.qualified_name in redefined
            ):
                continue
            message = _api_message(s, removed_code)
            if message is None:
                continue
            if s.callers_total:
                updated = updated if updated is not None else _updated_lines(diff)
                message += _call_sites_to_check(s, updated)
            out.append(
                Finding(
                    "medium",
                    "api",
                    message,
                    f.path,
                    s.start_line if s.change != "removed" else None,
                    s.qualified_name,
                    rule="public-api",
                )
            )
        # A private module's ``__all__`` (``httpx._compat``) is no import surface: its users are
        # the package's own modules, and a name the package re-exports is lost from the package.
        if f.lost_exports and f.module and is_public_module(f.module):
            package = f.module
            names = ", ".join(f.lost_exports[:8]) + (" ..." if len(f.lost_exports) > 8 else "")
            out.append(
                Finding(
                    "medium",
                    "api",
                    f"{plural(len(f.lost_exports), 'name')} no longer importable from {package}: {names}",
                    f.path,
                    None,
                    None,
                    rule="public-api",
                    count=len(f.lost_exports),
                )
            )
    if len(out) > MASS_API_FINDINGS:
        return [_collapse(out)]
    return out


def _collapse(findings: list[Finding]) -> Finding:
    kinds: dict[str, int] = {}
    for f in findings:
        key = (
            "removed"
            if " was removed" in f.message
            else "moved or renamed"
            if "no longer imports" in f.message or "renamed" in f.message or "moved" in f.message
            else "signature changes"
            if f.message.startswith("signature")
            else "exports lost"
        )
        kinds[key] = kinds.get(key, 0) + f.count
    files = sorted({f.file for f in findings if f.file})
    counts = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
    total = sum(kinds.values())
    first = "; ".join(f.message for f in findings[:3])
    return Finding(
        "medium",
        "api",
        f"public API changed in bulk: {counts} across {plural(len(files), 'file')}; first: {first}",
        files[0] if len(files) == 1 else None,  # one file: the reader (and an annotation) goes there
        None,
        None,
        rule="public-api",
        count=total,
    )


# --------------------------------------------------------------------------- SQL from strings

# A SQL statement in a string literal, then glued to a value: ``"... WHERE name = '" + name``,
# ``"... %s" % name``, ``f"... {name}"``, ``"... {}".format(name)``. A query passed with its
# parameters (``execute(sql, (name,))``) matches none of these.
# SQL as people write it in code: keywords in capitals, or in lower case with a WHERE condition
# (or ``insert into t (``); "please select a file from the list" is English.
_SQL_WORDS = re.compile(
    r"\b(?:SELECT\b.*?\bFROM|INSERT\s+INTO|UPDATE\s+[\w.]+\s+SET|DELETE\s+FROM"
    r"|WHERE\s+[\w.]+\s*(?:=|<|>|!=|LIKE\b|IN\b))"
    r"|(?i:\b(?:select|update|delete)\b.*\bwhere\s+[\w.]+\s*(?:=|<|>|!=|like\b|in\b)"
    r"|\binsert\s+into\s+[\w.]+\s*\()"
)
_LITERAL = re.compile(
    r"""(?P<prefix>(?<!\w)[rRbBuUfF]{0,2})(?P<q>["'])(?P<body>(?:\\.|(?!(?P=q)).)*)(?P=q)"""
)
# What glues a value to a literal: ``+ name``, ``% name``, ``.format(``; or ``name +`` before it.
_GLUED_AFTER = re.compile(r"^\s*(?:\+\s*[\w(]|%\s*[\w(]|\.format\s*\()")
_GLUED_BEFORE = re.compile(r"[\w)\]]\s*\+\s*$")


def _builds_sql(text: str) -> bool:
    """The line glues a value into the text of a SQL statement (``"... WHERE name = '" + name``,
    ``"... %s" % name``, ``f"... {name}"``, ``"... {}".format(name)``); a query passed with its
    parameters (``execute(sql, (name,))``) does not."""
    for m in _LITERAL.finditer(text):
        body = m.group("body")
        if not _SQL_WORDS.search(body):
            continue
        if "f" in m.group("prefix").lower() and "{" in body:
            return True
        if _GLUED_AFTER.match(text[m.end() :]) or _GLUED_BEFORE.search(text[: m.start()]):
            return True
    return False


_SQL_LANGUAGES = frozenset({"python", "javascript", "typescript", "tsx", "php", "ruby", "go", "java"})


def rule_sql_from_strings(diff: SemanticDiff) -> list[Finding]:
    """SQL the change builds by gluing values into the statement's text: an injection when a
    value comes from a user. Only lines the change adds, and only what was not there before in
    the same symbol (an edit next to an old concatenation is not news)."""
    out = []
    for f in diff.files:
        if f.status == "deleted" or f.language not in _SQL_LANGUAGES or not _reviewable(diff, f.path):
            continue
        added = [(n, t) for n, t in f.added_lines if n not in f.prose_added and _builds_sql(t)]
        if not added:
            continue
        before = Counter(" ".join(t.split()) for n, t in f.removed_lines if _builds_sql(t))
        for n, text in added:
            key = " ".join(text.split())
            if before[key] > 0:
                before[key] -= 1
                continue
            owner = _innermost(f.symbols, n)
            where = f" in {owner}" if owner else ""
            out.append(
                Finding(
                    "high",
                    "security",
                    f"SQL built from strings{where}: `{text.strip()[:100]}`; pass the values as query "
                    "parameters (execute(sql, params)) instead",
                    f.path,
                    n,
                    owner,
                    rule="sql-from-strings",
                )
            )
    return out


def _innermost(symbols: Iterable[SymbolChange], line: int) -> str | None:
    best: SymbolChange | None = None
    for s in symbols:
        inside = s.change != "removed" and s.start_line <= line <= s.end_line
        if inside and (best is None or s.start_line >= best.start_line):
            best = s
    return best.qualified_name if best is not None else None


# --------------------------------------------------------------------------- file modes


def _escapes_repository(path: str, target: str) -> bool:
    """A symlink at ``path`` pointing at ``target`` leaves the repository (absolute, or ``..``
    past its root)."""
    if target.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", target):
        return True
    depth = len(PurePosixPath(path).parts) - 1
    for part in PurePosixPath(target).parts:
        depth += -1 if part == ".." else (0 if part == "." else 1)
        if depth < 0:
            return True
    return False


def rule_file_modes(diff: SemanticDiff) -> list[Finding]:
    """What a diff of lines does not show: a symlink that now points outside the repository
    (whatever reads, packages or serves the file reads ``/etc/passwd`` or a home directory), and
    a file that gained or lost its executable bit (a remark: usually deliberate, worth a glance)."""
    from engine.semantic.diff import EXECUTABLE_MODE, SYMLINK_MODE

    out = []
    for f in diff.files:
        if f.status == "deleted":
            continue
        if f.mode_after == SYMLINK_MODE and f.link_target is not None:
            target = f.link_target.strip()
            was = "" if f.mode_before == SYMLINK_MODE else "now "
            if _escapes_repository(f.path, target):
                out.append(
                    Finding(
                        "medium",
                        "security",
                        f"{f.path} is {was}a symlink to {target}, outside the repository: whatever reads, "
                        "packages or serves it reads that file instead; commit the file itself",
                        f.path,
                        None,
                        None,
                        rule="symlink-outside",
                    )
                )
        elif f.mode_before and f.mode_after and f.mode_before != f.mode_after:
            became = "became executable" if f.mode_after == EXECUTABLE_MODE else "is no longer executable"
            if f.mode_before == SYMLINK_MODE or f.mode_after == SYMLINK_MODE:
                continue
            out.append(
                Finding(
                    "info",
                    "permissions",
                    f"{f.path} {became} (mode {f.mode_before} -> {f.mode_after})",
                    f.path,
                    None,
                    None,
                    rule="file-mode",
                )
            )
    return out


# --------------------------------------------------------------------------- dangling calls


def _updated_lines(diff: SemanticDiff) -> frozenset[tuple[str, int]]:
    """(file, line) of every line the change adds: a call site among them was updated with it."""
    return frozenset((f.path, n) for f in diff.files for n, _ in f.added_lines)


def _call_sites_to_check(s: SymbolChange, updated: frozenset[tuple[str, int]]) -> str:
    """`` (3 call sites to check: a.py:5, ...)``, leaving out the call sites the change itself
    rewrote (black 00cd1e4a: the one caller, updated to pass the new ``mode``, was "to check")."""
    code = [c for c in s.callers if c.via != "documentation"]
    done = [c for c in code if (c.file, c.line) in updated]
    if not done:
        sites = _caller_sites(s)
        return f" ({plural(s.callers_total, 'call site')} to check" + (f": {sites})" if sites else ")")
    left = [c for c in code if c not in done]
    total = plural(s.callers_total, "call site")
    if not left and s.callers_total <= len(done):
        return f" ({total}, updated in this change)"
    rest = f"; to check: {_sites(left)}" if left else ""
    return f" ({total}, {len(done)} updated in this change{rest})"


def _caller_sites(s: SymbolChange) -> str:
    """``pkg/cli.py:5, tests/test_core.py:9`` for the first code callers (the count says how many)."""
    return _sites(c for c in s.callers if c.via != "documentation")


def _sites(refs: Iterable[CallerRef], limit: int = 3) -> str:
    """``file:line (symbol)`` for the first ``limit`` refs, and how many more."""
    refs = list(refs)
    shown = ", ".join(f"{c.file}:{c.line}" + (f" ({c.symbol})" if c.symbol else "") for c in refs[:limit])
    return shown + (f" and {len(refs) - limit} more" if len(refs) > limit else "")


def _still_defined(f: FileChange, name: str) -> bool:
    """The change gives the module ``name`` another way: an import, an assignment, a definition."""
    word = re.compile(rf"\b{re.escape(name)}\b")
    for _n, text in f.added_lines:
        for m in word.finditer(text):
            if not text[m.end() :].lstrip().startswith("("):
                return True
    return False


def rule_removed_still_called(diff: SemanticDiff) -> list[Finding]:
    """A function or class removed while the project still imports it by name (``from pkg.core
    import render``: ImportError) or its own module still calls it (NameError): the first use
    fails, whatever else the change does. A bare call in another module may be that module's own
    function, so only these two are certain; the public-API finding lists the other call sites."""
    out = []
    for f in diff.files:
        if _built(f.path):
            continue
        # The new side's definitions of a name: a function moved into a class as a method
        # (axios ab77a40e: ``set: function(...)`` became the method ``set(...) {``) is defined
        # there, not called.
        defined = {
            (c.qualified_name.rsplit(".", 1)[-1], c.start_line) for c in f.symbols if c.change != "removed"
        }
        for s in f.symbols:
            if (
                s.change != "removed"
                or s.kind not in ("function", "class")
                or "." in s.qualified_name
                or s.file.endswith(".pyi")  # a stub removed beside its module: the module still defines it
                or s.still_importable
                or _still_defined(f, s.qualified_name)
            ):
                continue
            name = s.qualified_name
            bare = re.compile(rf"(?<![\w.]){re.escape(name)}\s*\(")
            own = [
                c
                for c in s.callers
                if f.status != "deleted"
                and c.file == f.path
                and c.via != "documentation"
                and bare.search(c.text)
                and (name, c.line) not in defined
            ]
            if not own and not s.importers:
                continue
            uses = []
            if s.importers:
                uses.append(
                    f"{_sites(s.importers)} still {'imports' if len(s.importers) == 1 else 'import'} it"
                )
            if own:
                uses.append(f"{f.path} still calls it at {_sites(own)}")
            out.append(
                Finding(
                    "high",
                    "correctness",
                    f"{s.kind} {name} was removed but {' and '.join(uses)}: restore it or update "
                    + ("the imports" if not own else "the callers"),
                    f.path,  # where the removal is, in the diff a reviewer reads
                    own[0].line if own else None,
                    name,
                    rule="removed-still-called",
                )
            )
    return out


# --------------------------------------------------------------------------- tests


def _removed_test_lines(f: FileChange, s: SymbolChange) -> str:
    return "\n".join(t for n, t in f.removed_lines if s.start_line <= n <= s.end_line)


def _words(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))


def _spelling(name: str) -> str:
    """One spelling for the forms a name takes: the class ``TolerateDangerousFraming`` is the
    setting ``"tolerate_dangerous_framing"`` a test sets."""
    return name.replace("_", "").lower()


def _mentions(removed_code: set[str], text: str) -> bool:
    spelled = {_spelling(n) for n in removed_code}
    return any(_spelling(w) in spelled for w in _words(text))


def _fixture_only(f: FileChange) -> bool:
    """A deleted file under the tests that defines no test: request samples, expected-output
    data, a module of fixtures. Its deletion is worth a glance (a remark), not a finding."""
    if f.language is None:
        return True
    return not any(s.kind in FUNCTION_KINDS | CONTAINER_KINDS and s.kind != "module" for s in f.symbols)


_REMOVED_PARAMETER = re.compile(r"^parameter '(\w+)' removed$")
# What pytest and unittest collect in Python: functions and methods whose name starts with
# ``test``. A fixture (``ca_cert_pem_file``), a helper, or a view or exception class defined inside
# a test is not a test, and deleting it deletes no test.
PYTHON_TEST_PREFIX = "test"


def _is_test(f: FileChange, s: SymbolChange) -> bool:
    """A test (or a class of tests) rather than a fixture, a helper or a definition nested in a test."""
    if s.kind not in FUNCTION_KINDS | CONTAINER_KINDS:
        return False
    parent = s.qualified_name.rpartition(".")[0]
    if parent and any(o.qualified_name == parent and o.kind in FUNCTION_KINDS for o in f.symbols):
        return False  # ``test_view.index``: a route the test defines
    if s.language in CALL_STYLE_TEST_LANGUAGES:
        return False  # its tests are calls, ``test('title', ...)``: see ``_removed_test_calls``
    if s.language == "python" and s.kind in FUNCTION_KINDS:
        return s.qualified_name.rsplit(".", 1)[-1].startswith(PYTHON_TEST_PREFIX)
    if s.language == "python":
        return any(o.qualified_name.startswith(s.qualified_name + ".") and _is_test(f, o) for o in f.symbols)
    return True


# Languages whose test runners (ava, jest, mocha, vitest, node:test) collect calls, not named
# functions: ``test('retries on abort', async t => ...)``, ``it('...')``. A named function in a
# test file there is a helper, a fake's method or a server factory, never a test.
CALL_STYLE_TEST_LANGUAGES = frozenset({"javascript", "typescript", "tsx"})
_TEST_CALL = re.compile(
    r"^\s*(?:test|it)(?:\.(?:only|skip|serial|failing|todo|concurrent))*\s*\(\s*"
    r"""(?P<q>['"`])(?P<title>.+?)(?P=q)"""
)


def _removed_test_calls(f: FileChange) -> tuple[list[str], int]:
    """(titles of ``test('…')``/``it('…')`` calls the change removes, how many it adds): a test
    whose title is on both sides was edited, not removed."""
    removed = Counter(m.group("title") for _, t in f.removed_lines if (m := _TEST_CALL.match(t)))
    added = Counter(m.group("title") for _, t in f.added_lines if (m := _TEST_CALL.match(t)))
    return list((removed - added).elements()), sum((added - removed).values())


def _first_names(names: list[str], limit: int = 5) -> str:
    """``a, b, c, d, e and 3 more``."""
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")


def rule_tests_removed(diff: SemanticDiff) -> list[Finding]:
    """Tests deleted without replacement, other than tests of code the same change removes."""
    removed_code = {
        (s.old_qualified_name or s.qualified_name).rsplit(".", 1)[-1]
        for s in diff.symbols
        if s.change in ("removed", "renamed") and not is_test_path(s.old_file or s.file)
    }
    # Parameters the change removes: tests that pass them (``localtime=True``) go with them.
    removed_code |= {
        m.group(1)
        for s in diff.symbols
        if not is_test_path(s.file)
        for change in s.parameter_changes
        if (m := _REMOVED_PARAMETER.match(change)) is not None
    }
    removed_code = {n for n in removed_code if len(n) >= MIN_REFERENCE_NAME}
    # A deprecation path the change removes takes the tests that assert its warning with it.
    deprecation_removed = any(
        _DEPRECATION.search(t)
        for f in diff.files
        if _reviewable(diff, f.old_path or f.path)
        for n, t in f.removed_lines
        if n not in f.prose_removed
    )
    out = []
    for f in diff.files:
        if not is_test_path(f.path):
            continue
        if f.status == "deleted":
            if _mentions(removed_code, "\n".join(t for _, t in f.removed_lines)):
                continue  # the tests of code this change removes
            if _fixture_only(f):
                out.append(
                    Finding(
                        "info",
                        "testing",
                        f"test fixture deleted (it defines no test): {f.path}",
                        f.path,
                        rule="tests-removed",
                    )
                )
                continue
            tests = [t for t in f.symbols if _is_test(f, t) and t.kind in FUNCTION_KINDS]
            what = f" with its {plural(len(tests), 'test')}" if tests else ""
            names = _first_names([t.qualified_name for t in tests])
            out.append(
                Finding(
                    "medium",
                    "testing",
                    f"test file deleted{what}: {f.path}" + (f" ({names})" if names else ""),
                    f.path,
                    rule="tests-removed",
                    count=max(1, len(tests)),
                )
            )
            continue
        if f.language in CALL_STYLE_TEST_LANGUAGES:
            titles, added_calls = _removed_test_calls(f)
            if titles and added_calls < len(titles):
                out.append(
                    Finding(
                        "medium",
                        "testing",
                        f"{plural(len(titles), 'test')} removed without replacement"
                        + (f" ({added_calls} new ones added)" if added_calls else "")
                        + f": {_first_names([repr(t) for t in titles])}",
                        f.path,
                        None,
                        None,
                        rule="tests-removed",
                        count=len(titles),
                    )
                )
            continue
        tests = [s for s in f.symbols if _is_test(f, s)]
        removed = [
            s
            for s in tests
            if s.change == "removed"
            and not _mentions(removed_code, _removed_test_lines(f, s))
            # A duplicate dropped: another test file still defines the test (click 1103c5ca).
            and s.qualified_name.rsplit(".", 1)[-1] not in diff.tests_defined_elsewhere
            and not (deprecation_removed and _DEPRECATION.search(_removed_test_lines(f, s)))
        ]
        added = [s for s in tests if s.change == "added" and s.kind in FUNCTION_KINDS]
        removed_functions = [s for s in removed if s.kind in FUNCTION_KINDS]
        if not removed or len(added) >= len(removed_functions) and removed_functions:
            continue  # replaced: as many tests written as deleted
        if not removed_functions and all(s.kind in CONTAINER_KINDS for s in removed):
            removed_functions = removed
        names = _first_names([s.qualified_name for s in removed_functions])
        out.append(
            Finding(
                "medium",
                "testing",
                f"{plural(len(removed_functions), 'test')} removed without replacement: {names}",
                f.path,
                None,
                removed_functions[0].qualified_name,
                rule="tests-removed",
                count=len(removed_functions),
            )
        )
    return out


def _call_names(s: SymbolChange) -> list[str]:
    return [c.rsplit(".", 1)[-1] for c in s.calls]


def _test_words(test: FileChange) -> set[str] | frozenset[str]:
    """The names a changed test file uses (and their ``_``-separated parts, and its own stem)."""
    identifiers = test.test_identifiers or _words("\n".join(t for _, t in test.added_lines))
    test_stem = PurePosixPath(test.path).stem
    identifiers = identifiers | {test_stem.removeprefix("test_").removesuffix("_test").removesuffix("_tests")}
    return identifiers | {part for word in identifiers for part in word.split("_") if part}


def _references(words: set[str], f: FileChange, changes: list[SymbolChange], own_module: bool = True) -> bool:
    """The changed tests (``words``: the union of their ``_test_words``, since a change is covered
    when any of them refers to it) refer to the changed module or to one of the changed symbols
    (``own_module=False``: to the symbols only). One union instead of a pass over every test
    file for every symbol: that was quadratic, a minute on a commit of 1,000 files."""
    stem = PurePosixPath(f.path).stem
    module_words = {stem} if stem != "__init__" else {PurePosixPath(f.path).parent.name}
    if f.module:
        module_words.add(f.module.rsplit(".", 1)[-1])
    if own_module and module_words & words:
        return True
    for s in changes:
        parts = s.qualified_name.split(".")
        if any(len(p) >= MIN_REFERENCE_NAME and p in words and not p.startswith("__") for p in parts):
            return True
    return False


def _changes_code(f: FileChange, s: SymbolChange, moved: frozenset[str]) -> bool:
    """The symbol has a changed line that is code (not prose) and was not merely moved here."""

    def real(
        lines: tuple[tuple[int, str], ...], first: int | None, last: int | None, prose: frozenset[int]
    ) -> bool:
        return any(
            n not in prose and text.strip() and " ".join(text.split()) not in moved
            for n, text in changed_span(lines, first, last)
        )

    return real(f.added_lines, s.start_line, s.end_line, f.prose_added) or real(
        f.removed_lines, s.old_start_line, s.old_end_line, f.prose_removed
    )


_DEPRECATION = re.compile(r"Deprecat\w*|RemovedIn\w*Warning|\bdeprecated\b")


def _added_code(f: FileChange, s: SymbolChange) -> str:
    if s.code_delta is not None:
        return "\n".join(s.code_delta[0])
    return "\n".join(
        t for n, t in changed_span(f.added_lines, s.start_line, s.end_line) if n not in f.prose_added
    )


def _folded(diff: SemanticDiff) -> frozenset[str]:
    """Ids of changed functions whose change only folds a removed helper into its caller.

    A function whose new statements are exactly the body of a function the change removes, and
    whose old statements only called it, now *is* that helper (``running_under_virtualenv``
    absorbing ``_running_under_venv``); a call site that only swaps the helper's name for the
    absorbing function's is the same call. Neither is new behaviour a test must cover.
    """
    bodies = {
        (s.old_qualified_name or s.qualified_name).rsplit(".", 1)[-1]: sorted(s.body_before)
        for s in diff.symbols
        if s.change == "removed" and s.body_before
    }
    if not bodies:
        return frozenset()
    out: set[str] = set()
    swaps: dict[str, str] = {}
    for s in diff.symbols:
        if s.change != "modified" or s.code_delta is None:
            continue
        added, removed = s.code_delta
        for helper, body in bodies.items():
            if (
                sorted(added) == body
                and removed
                and all(re.search(rf"\b{re.escape(helper)}\(", r) for r in removed)
            ):
                out.add(s.id)
                swaps[helper] = s.qualified_name.rsplit(".", 1)[-1]
                break
    for s in diff.symbols:
        if s.id in out or s.change != "modified" or s.code_delta is None or not swaps:
            continue
        added, removed = s.code_delta
        renamed = list(removed)
        for old, new in swaps.items():
            renamed = [re.sub(rf"\b{re.escape(old)}\b", new, r) for r in renamed]
        if added and sorted(renamed) == sorted(added):
            out.add(s.id)
    return frozenset(out)


def _untested_changes(diff: SemanticDiff) -> tuple[list[tuple[FileChange, list[SymbolChange]]], bool]:
    """Per library file, the changed functions no changed test refers to; and whether the change
    touched any test at all."""
    tests = [f for f in diff.files if is_test_path(f.path) and f.status != "deleted"]
    moved = moved_lines(diff)
    folded = _folded(diff)
    words: set[str] = set().union(*(_test_words(t) for t in tests))
    tested_helpers = {
        s.qualified_name.rsplit(".", 1)[-1]
        for f in diff.files
        if not is_test_path(f.path)
        for s in f.symbols
        if s.kind in FUNCTION_KINDS
        and s.logic_changed
        and bool(tests)
        and _references(words, f, [s], own_module=False)
    }
    out = []
    for f in diff.files:
        if f.status == "deleted" or not _reviewable(diff, f.path):
            continue
        changes = [
            s
            for s in f.symbols
            if s.kind in FUNCTION_KINDS
            and s.logic_changed
            and s.qualified_name.rsplit(".", 1)[-1] not in PRESENTATION_METHODS
            and s.id not in folded
            and _changes_code(f, s, moved)
        ]
        if not changes:
            continue
        if tests and _references(words, f, changes):
            continue
        # A change that routes through a changed helper the tests do exercise is covered by them.
        changes = [s for s in changes if not (set(_call_names(s)) & tested_helpers)]
        if changes:
            out.append((f, changes))
    return out, bool(tests)


def _names(changes: list[SymbolChange]) -> str:
    return ", ".join(s.qualified_name for s in changes[:3]) + (" ..." if len(changes) > 3 else "")


def rule_untested(diff: SemanticDiff) -> list[Finding]:
    """Behaviour changed and the change brings no test for it, wherever the tests live.

    A finding only when the evidence is plain: no test changed at all, the project has tests in
    the file's language, and the change is more than a deprecation path or a signature that
    forwards to another untested change. The rest are remarks: tests that came with the change but
    do not name it usually exercise it through the public entry points.
    """
    candidates, tests_changed = _untested_changes(diff)
    flagged = {
        s.qualified_name.rsplit(".", 1)[-1]: f.path
        for f, changes in candidates
        for s in changes
        if not s.signature_only
    }
    findings: list[Finding] = []
    remarks: list[Finding] = []
    for f, changes in candidates:
        deprecations = [s for s in changes if _DEPRECATION.search(_added_code(f, s))]
        # Imports, logging, warnings and the texts of messages: nothing a regression test pins.
        chores = [s for s in changes if s.code_delta is not None and housekeeping_only(s.code_delta)]
        forwards = [
            s
            for s in changes
            if s.signature_only and any(flagged.get(name, f.path) != f.path for name in _call_names(s))
        ]
        real = [s for s in changes if s not in deprecations and s not in forwards and s not in chores]
        line = (real or changes)[0].start_line
        family_tested = diff.test_families is None or family(f.language or "") in diff.test_families
        if not real:
            if deprecations and not forwards:
                why = "a deprecation path"
            elif forwards:
                why = "forwards to a change flagged above"
            else:
                why = "only imports, logging, warnings or message texts"
            message = f"behaviour changed without a test ({why}): {_names(changes)}"
        elif tests_changed:
            message = f"the tests changed with this change do not name it: {_names(real)}"
        elif not family_tested:
            message = (
                f"behaviour changed without a test (the repository has no {f.language} tests): {_names(real)}"
            )
        else:
            findings.append(
                Finding(
                    "low",
                    "testing",
                    f"behaviour changed without a test (no test changed): {_names(real)}",
                    f.path,
                    line,
                    None,
                    rule="untested-change",
                )
            )
            continue
        remarks.append(Finding("info", "testing", message, f.path, line, None, rule="untested-change"))
    if len(findings) > MASS_UNTESTED_FILES:
        # A sweep across many files (a refactor, a typing pass) is not a missing regression test.
        files = ", ".join(f.file or "" for f in findings[:5]) + (" ..." if len(findings) > 5 else "")
        return [
            *remarks,
            Finding(
                "info",
                "testing",
                f"behaviour changed without a test in {len(findings)} files: {files}",
                None,
                None,
                None,
                rule="untested-change",
                count=len(findings),
            ),
        ]
    return findings + remarks


def rule_tests(diff: SemanticDiff) -> list[Finding]:
    return rule_tests_removed(diff) + rule_untested(diff)


# --------------------------------------------------------------------------- size


def rule_size(diff: SemanticDiff) -> list[Finding]:
    """Long or deep functions, only when this change made them so (not when they already were).

    Remarks, not findings: how long a function may grow is the project's taste, and a fix that
    had to add lines is not wrong for it."""
    out = []
    for s in diff.symbols:
        if s.kind not in FUNCTION_KINDS or s.change not in ("added", "modified") or not s.logic_changed:
            continue
        if is_test_path(s.file):
            continue
        added = s.change == "added"
        grew = s.lines_before <= LARGE_FUNCTION_LINES and s.lines - s.lines_before > LARGE_FUNCTION_GROWTH
        if s.lines > LARGE_FUNCTION_LINES and (added or grew):
            out.append(
                Finding(
                    "info",
                    "complexity",
                    f"{s.change} {s.kind} {s.qualified_name} is {s.lines} lines long "
                    + (f"(was {s.lines_before}; " if not added else "(")
                    + f"over {LARGE_FUNCTION_LINES}); split it",
                    s.file,
                    s.start_line,
                    s.qualified_name,
                    rule="large-function",
                )
            )
        if s.max_nesting >= DEEP_NESTING and (added or s.max_nesting_before < DEEP_NESTING):
            out.append(
                Finding(
                    "info",
                    "complexity",
                    f"{s.qualified_name} nests {s.max_nesting} levels deep "
                    + (f"(was {s.max_nesting_before}; " if not added else "(")
                    + f"limit {DEEP_NESTING - 1}); flatten it with early returns or helpers",
                    s.file,
                    s.start_line,
                    s.qualified_name,
                    rule="deep-nesting",
                )
            )
    return out


def rule_secrets(diff: SemanticDiff) -> list[Finding]:
    return scan_files(diff.files, diff.target)


RULES: dict[str, Callable[[SemanticDiff], list[Finding]]] = {
    "risk-raised": rule_risk_raised,
    "external-calls": rule_external_calls,
    "security-logic": rule_security_logic,
    "public-api": rule_public_api,
    "removed-still-called": rule_removed_still_called,
    "sql-from-strings": rule_sql_from_strings,
    "file-modes": rule_file_modes,
    "dependencies": rule_dependencies,
    "tests": rule_tests,
    "size": rule_size,
    "secrets": rule_secrets,
}


# When several rules find something on one symbol, one finding leads and the others are folded
# into its message: a reviewer reads one finding a symbol. The most severe leads (with the
# group's highest severity); on a tie, the first of these (the security concern first), and
# risk-raised, which reports what the others' change did, never leads another. ``new-*`` stands
# for every new-effect rule.
FOLD_ORDER = (
    "sql-from-strings",
    "security-logic",
    "removed-still-called",
    "new-*",
    "risk-raised",
    "public-api",
)


def _fold_rank(rule: str | None) -> int | None:
    key = "new-*" if rule and rule.startswith("new-") else rule
    return FOLD_ORDER.index(key) if key in FOLD_ORDER else None


def fold_same_symbol(findings: list[Finding]) -> list[Finding]:
    """One finding a symbol: findings of the rules in ``FOLD_ORDER`` on the same symbol become
    one, led by the most severe (``also`` names the folded rules): a new ``subprocess.run`` was
    three findings (new-subprocess, risk-raised, security-logic) on one line."""
    groups: dict[tuple[str | None, str], list[int]] = {}
    for i, f in enumerate(findings):
        if f.symbol and not f.is_remark and _fold_rank(f.rule) is not None:
            groups.setdefault((f.file, f.symbol), []).append(i)
    out = list(findings)
    dropped: set[int] = set()
    for members in groups.values():
        if len(members) < 2:
            continue
        # risk-raised says what another finding's change did to the risk: it leads only alone.
        members.sort(
            key=lambda i: (
                findings[i].rule == "risk-raised",
                -SEVERITY_ORDER[findings[i].severity],
                _fold_rank(findings[i].rule),
            )
        )
        lead = members[0]
        # Two definitions of one name (an ``if``/``else`` pair) are two places to read: a rule's
        # own findings stay apart, only other rules' fold in.
        rest = [i for i in members[1:] if findings[i].rule != findings[lead].rule]
        if not rest:
            continue
        head = findings[lead]
        out[lead] = replace(
            head,
            severity=max((findings[i].severity for i in (lead, *rest)), key=lambda x: SEVERITY_ORDER[x]),
            message="; also ".join([head.message, *(findings[i].message for i in rest)]),
            blocking=head.blocking or any(findings[i].blocking for i in rest),
            also=(*head.also, *(findings[i].rule or "" for i in rest)),
        )
        dropped.update(rest)
    return [f for i, f in enumerate(out) if i not in dropped]


def run_rules(
    diff: SemanticDiff,
    rules: Iterable[str] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> list[Finding]:
    """Every deterministic rule (or the named ones), in a stable order; findings and remarks
    (``severity == "info"``) together, one finding a symbol. ``progress(phase, done, total)``
    hears each rule start (``running the review rules (security-logic)``, 3, 7)."""
    findings: list[Finding] = []
    for done, (name, rule) in enumerate(RULES.items()):
        if rules is None or name in rules:
            if progress is not None:
                progress(f"running the review rules ({name})", done, len(RULES))
            findings.extend(rule(diff))
    if rules is not None and "tests" in rules and "security-logic" not in rules:
        secured = {f.file for f in rule_security_logic(diff)}
    else:
        secured = {f.file for f in findings if f.rule == "security-logic" and not f.is_remark}
    return fold_same_symbol([_untested_gate(f, secured) for f in findings])


def _untested_gate(f: Finding, secured: set[str | None]) -> Finding:
    """An untested change is a finding where the missing test guards security-sensitive logic
    (the file has a security-logic finding); elsewhere "no test came with it" is an observation
    (a remark): a refactor, a tidy-up or a change the existing tests already pin reads the same."""
    if f.rule != "untested-change" or f.is_remark:
        return f
    if f.file in secured:
        # Why it matters, said in the finding: the name of a function alone told the reader nothing.
        return replace(
            f, message=f"{f.message}: a regression in this security-sensitive logic would go unnoticed"
        )
    return replace(f, severity="info", message=f"{f.message} (no security-sensitive logic in it)")
