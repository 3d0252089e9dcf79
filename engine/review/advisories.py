"""Known security advisories of widely used packages, by the release that fixed each.

Data and version arithmetic only: which advisories a version floor or pin leaves open, and which
a raised floor closes. No network, no resolver: a short table of advisories that projects fix by
raising a requirement (``requests>=2.32.0`` for CVE-2024-35195), kept to advisories whose fixed
releases are published in the advisory itself. An advisory a change cites by id (in its commit
message or its added lines) counts too (engine.review.dependencies).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

Version = tuple[int, ...]


@dataclass(frozen=True)
class Advisory:
    """One advisory: its id, what it lets happen, and the first fixed release of each line that
    got a fix (``("1.26.18", "2.0.7")``: the 1.x line was fixed in 1.26.18, the 2.x line in 2.0.7)."""

    id: str
    what: str
    fixed: tuple[str, ...]


# Keyed by the package name as the manifest's parser lower-cases it (``_`` read as ``-``).
ADVISORIES: dict[str, tuple[Advisory, ...]] = {
    "requests": (
        Advisory("CVE-2023-32681", "Proxy-Authorization leaked to the destination on redirect", ("2.31.0",)),
        Advisory(
            "CVE-2024-35195",
            "verify=False on a Session kept for later requests to the same host",
            ("2.32.0",),
        ),
        Advisory("CVE-2024-47081", ".netrc credentials leaked to a host named by a crafted URL", ("2.32.4",)),
    ),
    "urllib3": (
        Advisory("CVE-2023-43804", "Cookie header kept on a cross-origin redirect", ("1.26.17", "2.0.6")),
        Advisory("CVE-2023-45803", "request body kept on a 303 redirect", ("1.26.18", "2.0.7")),
        Advisory(
            "CVE-2024-37891", "Proxy-Authorization kept on a cross-origin redirect", ("1.26.19", "2.2.2")
        ),
    ),
    "jinja2": (
        Advisory(
            "CVE-2024-22195", "xmlattr filter accepted keys with spaces (attribute injection)", ("3.1.3",)
        ),
        Advisory(
            "CVE-2024-34064", "xmlattr filter accepted keys with /, >, = (attribute injection)", ("3.1.4",)
        ),
        Advisory("CVE-2024-56201", "template file names could run code", ("3.1.5",)),
        Advisory("CVE-2024-56326", "sandbox escape through str.format", ("3.1.5",)),
        Advisory("CVE-2025-27516", "sandbox escape through the attr filter", ("3.1.6",)),
    ),
    "werkzeug": (
        Advisory("CVE-2023-25577", "unlimited multipart parts (denial of service)", ("2.2.3",)),
        Advisory(
            "CVE-2023-46136", "slow multipart parsing of large parts (denial of service)", ("2.3.8", "3.0.1")
        ),
        Advisory("CVE-2024-34069", "debugger reachable from another host (code execution)", ("3.0.3",)),
    ),
    "pyyaml": (Advisory("CVE-2020-14343", "full_load could run arbitrary code", ("5.4",)),),
    "python-multipart": (
        Advisory(
            "CVE-2024-24762", "regular expression denial of service in Content-Type parsing", ("0.0.7",)
        ),
    ),
    "aiohttp": (
        Advisory("CVE-2024-23334", "static routes with follow_symlinks allowed path traversal", ("3.9.2",)),
        Advisory("CVE-2024-52304", "request smuggling through chunk extensions", ("3.10.11",)),
    ),
    "pyjwt": (Advisory("CVE-2022-29217", "key confusion through algorithm selection", ("2.4.0",)),),
    "paramiko": (Advisory("CVE-2023-48795", "Terrapin prefix truncation of the SSH handshake", ("3.4.0",)),),
    "gunicorn": (Advisory("CVE-2024-1135", "request smuggling through Transfer-Encoding", ("22.0.0",)),),
    "idna": (Advisory("CVE-2024-3651", "quadratic time on crafted input (denial of service)", ("3.7",)),),
    "certifi": (Advisory("CVE-2023-37920", "trusted the removed e-Tugra root certificates", ("2023.7.22",)),),
    "setuptools": (
        Advisory("CVE-2022-40897", "regular expression denial of service in package_index", ("65.5.1",)),
        Advisory("CVE-2024-6345", "code injection through package_index download URLs", ("70.0.0",)),
    ),
    "axios": (
        Advisory("CVE-2023-45857", "XSRF-TOKEN sent to any host", ("0.28.0", "1.6.0")),
        Advisory("CVE-2024-39338", "server-side request forgery through path-relative URLs", ("1.7.4",)),
    ),
    "express": (Advisory("CVE-2024-29041", "open redirect through malformed URLs", ("4.19.2",)),),
    "lodash": (
        Advisory("CVE-2019-10744", "prototype pollution in defaultsDeep", ("4.17.12",)),
        Advisory("CVE-2021-23337", "command injection through template", ("4.17.21",)),
    ),
    "minimist": (Advisory("CVE-2021-44906", "prototype pollution", ("0.2.4", "1.2.6")),),
    "follow-redirects": (
        Advisory("CVE-2023-26159", "URL parsing confusion (open redirect)", ("1.15.4",)),
        Advisory("CVE-2024-28849", "Proxy-Authorization kept on a cross-host redirect", ("1.15.6",)),
    ),
    "ws": (
        Advisory(
            "CVE-2024-37890",
            "many headers crash the server (denial of service)",
            ("5.2.4", "6.2.3", "7.5.10", "8.17.1"),
        ),
    ),
}

# Advisory ids a change may cite: CVE, GitHub's GHSA and the Python advisory database's PYSEC.
ADVISORY_ID = re.compile(
    r"\b(CVE-\d{4}-\d{4,}|GHSA(?:-[23456789cfghjmpqrvwx]{4}){3}|PYSEC-\d{4}-\d+)\b", re.IGNORECASE
)


def version(text: str) -> Version | None:
    m = re.match(r"^v?(\d+(?:\.\d+)*)", text.strip())
    return tuple(int(p) for p in m.group(1).split(".")) if m else None


def _padded(v: Version, n: int = 4) -> Version:
    return v + (0,) * (n - len(v))


def is_fixed(advisory: Advisory, v: Version) -> bool:
    """``v`` carries the fix: at or past the fix of its own line (the same major version; the same
    major.minor when the advisory fixed several lines of one major), or past every fix."""
    fixes = [_padded(f) for f in (version(x) for x in advisory.fixed) if f is not None]
    pv = _padded(v)
    if pv >= max(fixes):
        return True
    same_major = [f for f in fixes if f[0] == pv[0]]
    line = [f for f in same_major if f[:2] == pv[:2]] if len(same_major) > 1 else same_major
    return any(f <= pv for f in line)


def first_fix_for(advisory: Advisory, v: Version) -> str:
    """The fixed release a user of ``v`` moves to (its line's, else the lowest above it)."""
    pv = _padded(v)
    later = [x for x in advisory.fixed if (f := version(x)) is not None and _padded(f) > pv]
    return later[0] if later else advisory.fixed[-1]


def closed_by(package: str, was: Version, now: Version) -> list[Advisory]:
    """Advisories open at ``was`` that ``now`` has fixed (a raised floor or pin)."""
    return [a for a in ADVISORIES.get(package, ()) if not is_fixed(a, was) and is_fixed(a, now)]


def open_at(package: str, v: Version) -> list[Advisory]:
    """Advisories ``v`` still has."""
    return [a for a in ADVISORIES.get(package, ()) if not is_fixed(a, v)]


def _spelled(advisory_id: str) -> str:
    """As advisories spell ids: ``CVE-2024-35195``, ``GHSA-93gm-qmq6-w238``."""
    kind, _, rest = advisory_id.partition("-")
    return f"GHSA-{rest.lower()}" if kind.upper() == "GHSA" else advisory_id.upper()


def cited(texts: list[str]) -> list[str]:
    """Advisory ids named in ``texts``, first seen first."""
    return list(dict.fromkeys(_spelled(m.group(1)) for t in texts for m in ADVISORY_ID.finditer(t)))
