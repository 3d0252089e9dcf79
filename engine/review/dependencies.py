"""Dependency changes in a review: what a diff of manifest lines leaves for the reader to work out.

Reads the added and removed lines of Python requirement files (``requirements*.txt`` and ``.in``,
``constraints*.txt``,
``pyproject.toml``, ``setup.cfg``, ``setup.py``) and ``package.json``, pairs requirements by
name, and says what changed: a pinned version lowered, a dependency installed from outside the
package index (a URL, a VCS or a local path), or the plain list of upgrades, additions and
removals (a remark). Line-based on purpose: no resolver, no network, no registry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from engine.review.advisories import Advisory, cited, closed_by, first_fix_for, open_at
from engine.review.findings import Finding
from engine.semantic.diff import FileChange, SemanticDiff

PYTHON_MANIFESTS = frozenset({"pyproject.toml", "setup.cfg", "setup.py"})
# Requirements listed in a remark before the rest are counted: a lock-file refresh changes hundreds.
MAX_LISTED = 6
# ``name[extra] op version, op version ; marker`` or ``name @ url``, as pip reads a requirement.
_PY_REQ = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*"
    r"(?:@\s*(?P<url>\S+)|(?P<spec>(?:(?:===|==|>=|<=|~=|!=|>|<)\s*[\w.*+!-]+\s*,?\s*)*))"
    r"\s*(?:;.*)?$"
)
# ``git+https://...#egg=name``, a bare URL or a path on a requirements line.
_PY_SOURCE = re.compile(r"^(?:-e\s+)?(?P<url>(?:git|hg|svn|bzr)\+\S+|https?://\S+|file:\S+|\.{0,2}/\S+)")
# A TOML or Python line that is one quoted list element (``    "requests>=2.31",``).
_QUOTED_ELEMENT = re.compile(r"""^\s*(["'])(?P<req>[^"']+)\1\s*,?\s*(?:#.*)?$""")
# What a requirement with a version or a source has and a path, a name or a lint code has not.
_VERSIONED = re.compile(r"[=<>~!@]")
_QUOTED = re.compile(r"""(["'])([^"']+)\1""")
# Keys whose values are requirements (``dependencies = [...]``, ``install_requires=[...]``).
_REQUIREMENT_KEYS = re.compile(r"^\s*[\w.-]*(?:dependencies|requires|require)\w*\s*=", re.I)
_JS_DEP = re.compile(r"""^\s*"(?P<name>@?[\w.-]+(?:/[\w.-]+)?)"\s*:\s*"(?P<spec>[^"]*)"\s*,?\s*$""")
_JS_SOURCE = re.compile(r"^(?:git\+|git:|github:|gitlab:|bitbucket:|https?:|file:|link:)")
# A dependency's version range (``^1.2.3``, ``~1``, ``>=2 <3``, ``1.x``, ``*``, ``latest``); other
# ``"key": "value"`` lines of package.json (name, main, scripts) are not dependencies.
_JS_RANGE = re.compile(
    r"^(?:[\^~<>=v]*\s*\d[\w.*+-]*(?:\s*(?:\|\||-|<|>|=)*\s*[\d\w.*+-]+)*|\*|x|latest|next)$"
)
# package.json keys that hold a version but are no dependency.
_JS_NOT_DEPENDENCIES = frozenset({"version", "node", "npm", "yarn", "pnpm"})
# package.json keys that hold a link (the project's homepage, its repository, where to fund it or
# report bugs): a URL there installs nothing (express b274047a: "homepage is now installed from
# https://expressjs.com/"). A dependency of such a name (npm has a ``url`` package) given by a
# version is still one.
_JS_LINK_KEYS = frozenset({"homepage", "url", "repository", "bugs", "funding", "email", "web", "$schema"})


@dataclass(frozen=True)
class Requirement:
    name: str
    spec: str  # the version constraint as written (``==2.31.0``, ``^1.2``), "" for none
    source: str | None  # a URL, VCS or path it is installed from, instead of the index
    line: int


def _manifest_kind(path: str) -> str | None:
    """How the file lists requirements: ``js`` (package.json), ``requirements`` (one a line),
    ``setup.cfg`` (indented), ``python`` (quoted, in TOML or Python), or None."""
    name = PurePosixPath(path).name.lower()
    if name == "package.json":
        return "js"
    if name.endswith((".txt", ".in")) and ("requirement" in name or "constraint" in name):
        return "requirements"
    if name in PYTHON_MANIFESTS:
        return "setup.cfg" if name == "setup.cfg" else "python"
    return None


def _candidates(kind: str, text: str) -> list[str]:
    if kind == "requirements":
        return [text.split(" #", 1)[0].strip()]
    if kind == "setup.cfg":  # install_requires: one indented requirement a line (other sections
        # indent paths and names too: a requirement there needs its version)
        return [text.strip()] if text[:1].isspace() and _VERSIONED.search(text) and " = " not in text else []
    m = _QUOTED_ELEMENT.match(text)
    if m is not None:
        # A list element anywhere in the file (ruff's ``"E501",`` too): a requirement only when
        # it carries a version or a source.
        return [m.group("req")] if _VERSIONED.search(m.group("req")) else []
    if _REQUIREMENT_KEYS.match(text):
        return [q for _, q in _QUOTED.findall(text)]
    return []


def _parse_one(candidate: str, line: int) -> Requirement | None:
    if not candidate or candidate.startswith(("#", "-r", "-c", "--")):
        return None
    source = _PY_SOURCE.match(candidate)
    if source is not None:
        url = source.group("url")
        egg = re.search(r"#egg=([\w.-]+)", url)
        name = egg.group(1) if egg else PurePosixPath(url.split("#")[0].rstrip("/")).name.removesuffix(".git")
        return Requirement(name.lower(), "", url, line)
    m = _PY_REQ.match(candidate)
    if m is None:
        return None
    spec = re.sub(r"\s+", "", m.group("spec") or "").rstrip(",")
    return Requirement(m.group("name").lower().replace("_", "-"), spec, m.group("url"), line)


def _parse(kind: str, line: int, text: str) -> list[Requirement]:
    if kind == "js":
        m = _JS_DEP.match(text)
        if m is None:
            return []
        name, spec = m.group("name").lower(), m.group("spec").strip()
        if name in _JS_NOT_DEPENDENCIES:
            return []
        if _JS_SOURCE.match(spec):
            return [] if name in _JS_LINK_KEYS else [Requirement(name, "", spec, line)]
        return [Requirement(name, spec, None, line)] if _JS_RANGE.match(spec) else []
    return [r for c in _candidates(kind, text) if (r := _parse_one(c, line)) is not None]


def _pinned(spec: str) -> tuple[int, ...] | None:
    """The version a spec pins or sets as its floor (``==2.31.0``, ``>=2.31``, ``^1.2``, ``1.2.3``)."""
    m = re.match(r"^(?:===?|>=|~=|\^|~)?\s*v?(\d+(?:\.\d+)*)", spec)
    if m is None:
        return None
    return tuple(int(p) for p in m.group(1).split("."))


def _requirements(f: FileChange, kind: str, added: bool) -> dict[str, Requirement]:
    lines = f.added_lines if added else f.removed_lines
    out: dict[str, Requirement] = {}
    for n, text in lines:
        for req in _parse(kind, n, text):
            # One from a URL beside the index's is a second requirement, not the same one.
            out.setdefault(f"{req.name} @ {req.source}" if req.source else req.name, req)
    return out


def _advisories(items: list[Advisory]) -> str:
    return ", ".join(f"{a.id} ({a.what})" for a in items)


def _advisory_finding(
    f: FileChange,
    req: Requirement,
    old: Requirement,
    was: tuple[int, ...],
    now: tuple[int, ...],
    cited: list[str],
) -> Finding | None:
    """A requirement raised past the fix of a known advisory, or raised in a change that cites an
    advisory: a security fix made by a version number, which no code rule can see (starlette
    13e5c26a, GHSA-93gm-qmq6-w238: ``python-multipart>=0.0.7`` and nothing else)."""
    if now <= was:
        return None
    closed = closed_by(req.name, was, now)
    if closed:
        why = f"it leaves behind {_advisories(closed)}"
    elif cited:
        shown = ", ".join(cited[:3]) + (" ..." if len(cited) > 3 else "")
        why = f"the change cites {shown}; check that {req.spec} is the release that fixed it"
    else:
        return None
    development = development_manifest(f.path)
    return Finding(
        # A development requirement (tests, docs, linters) never reaches the package's users: the
        # fix is worth a glance, not a finding (urllib3 c9f8d395: idna in dev-requirements.txt).
        "info" if development else "low",
        "security",
        f"security fix by dependency: {req.name} raised from {old.spec or '(any)'} to {req.spec}"
        + (" (a development requirement)" if development else "")
        + f": {why}",
        f.path,
        req.line,
        None,
        rule="dependency-advisory",
    )


# Words of a manifest's path that make it a development one: what tests, docs, linters and CI
# install, never what the package's users get.
_DEVELOPMENT_WORDS = frozenset(
    {
        "dev",
        "develop",
        "development",
        "test",
        "tests",
        "testing",
        "doc",
        "docs",
        "lint",
        "ci",
        "tox",
        "bench",
        "typing",
    }
)


def development_manifest(path: str) -> bool:
    """``dev-requirements.txt``, ``requirements/test.txt``, ``docs/requirements.txt``, ``.github/...``."""
    lowered = path.lower()
    return lowered.startswith(".github/") or bool(set(re.split(r"[-_./]", lowered)) & _DEVELOPMENT_WORDS)


def _cited(diff: SemanticDiff) -> list[str]:
    """Advisory ids the change names: in its commit messages or its added lines (a changelog
    entry, a comment beside the requirement)."""
    return cited([*diff.messages, *(t for g in diff.files for _, t in g.added_lines)])


def _bare_requirement(f: FileChange, name: str) -> Requirement | None:
    """The requirement ``name`` listed without a version among the removed lines (``"jinja2",``)."""
    for n, text in f.removed_lines:
        m = _QUOTED_ELEMENT.match(text)
        raw = m.group("req").strip() if m is not None else text.split(" #", 1)[0].strip()
        bare = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(?:;.*)?$", raw)
        if bare is not None and bare.group(1).lower().replace("_", "-") == name:
            return Requirement(name, "", None, n)
    return None


def _still_open(req: Requirement, now: tuple[int, ...] | None, was: tuple[int, ...] | None) -> list[Advisory]:
    """Known advisories a pin (``==``) or a lowered floor lets back in."""
    if now is None:
        return []
    before = {a.id for a in open_at(req.name, was)} if was is not None else set()
    return [a for a in open_at(req.name, now) if a.id not in before]


def rule_dependencies(diff: SemanticDiff) -> list[Finding]:
    """Per manifest: a dependency now installed from outside the index (medium: nobody reviewed
    that code, and it can change under the same name), a pinned version lowered (low: an older
    release may bring back what a newer one fixed; medium when it brings back a known advisory),
    a security fix made by raising a requirement (low, ``security``: the reviewer sees the fix),
    and a remark listing the other changes."""
    out: list[Finding] = []
    for f in diff.files:
        kind = _manifest_kind(f.path)
        if kind is None or f.status == "deleted" or f.binary:
            continue
        before, after = _requirements(f, kind, added=False), _requirements(f, kind, added=True)
        listed: list[str] = []
        for key, req in after.items():
            name, old = req.name, before.get(key)
            if req.source and (old is None or old.source != req.source):
                out.append(
                    Finding(
                        "medium",
                        "dependency",
                        f"{name} is now installed from {req.source}, not from the package index: "
                        "pin it to a release (or to a commit hash) and review what it brings",
                        f.path,
                        req.line,
                        None,
                        rule="dependency-source",
                    )
                )
                continue
            if old is None and kind != "js" and (bare := _bare_requirement(f, name)) is not None:
                # ``"python-multipart"`` became ``"python-multipart>=0.0.7"``: a floor set where
                # any version would do is a floor raised from nothing.
                was_any = (0,)
                fixed = _advisory_finding(f, req, bare, was_any, _pinned(req.spec) or was_any, _cited(diff))
                if fixed is not None:
                    out.append(fixed)
                    continue
                listed.append(f"changed {name} (any) -> {req.spec or '(any)'}")
                continue
            if old is None:
                # Only where a pin is what gets installed: a requirements or constraints file. A
                # pyproject pin sits in a development group more often than not (werkzeug
                # 32f75a4e: ``jinja2==3.1.2`` under a new ``[dependency-groups]`` for the docs).
                pins = kind == "requirements" and req.spec.startswith(("==", "==="))
                pinned = _pinned(req.spec) if pins else None
                if pinned is not None and (known := _still_open(req, pinned, None)):
                    out.append(
                        Finding(
                            "low" if development_manifest(f.path) else "medium",
                            "security",
                            f"{name} added pinned to {req.spec}, a release with {_advisories(known)}: "
                            f"pin {first_fix_for(known[0], pinned)} or later",
                            f.path,
                            req.line,
                            None,
                            rule="dependency-advisory",
                        )
                    )
                    continue
                listed.append(f"added {name}{req.spec}")
                continue
            if old.spec == req.spec:
                continue
            was, now = _pinned(old.spec), _pinned(req.spec)
            if was is not None and now is not None and now < was and req.spec.startswith(("==", "===")):
                known = _still_open(req, now, was)
                out.append(
                    Finding(
                        "medium" if known and not development_manifest(f.path) else "low",
                        "security" if known else "dependency",
                        f"{name} pinned down from {old.spec} to {req.spec}: "
                        + (
                            f"that release has {_advisories(known)}, which {old.spec} had fixed"
                            if known
                            else "an older release may bring back what a newer one fixed; say why in the change"
                        ),
                        f.path,
                        req.line,
                        None,
                        rule="dependency-advisory" if known else "dependency-downgrade",
                    )
                )
                continue
            if was is not None and now is not None and now > was:
                fixed = _advisory_finding(f, req, old, was, now, _cited(diff))
                if fixed is not None:
                    out.append(fixed)
                    continue
            verb = "changed"
            if was is not None and now is not None and now != was:
                verb = "lowered" if now < was else "raised"
            listed.append(f"{verb} {name} {old.spec or '(any)'} -> {req.spec or '(any)'}")
        listed.extend(f"removed {req.name}" for key, req in before.items() if key not in after)
        if listed:
            shown = "; ".join(listed[:MAX_LISTED]) + (
                f"; and {len(listed) - MAX_LISTED} more" if len(listed) > MAX_LISTED else ""
            )
            out.append(
                Finding(
                    "info",
                    "dependency",
                    f"dependencies changed in {f.path}: {shown}",
                    f.path,
                    None,
                    None,
                    rule="dependency-change",
                )
            )
    return out
