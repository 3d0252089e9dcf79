"""Fetch the benchmark corpora into a cache directory (never committed).

Python projects come from PyPI sdists (`pip download --no-binary :all:`), JavaScript ones
from the npm registry (`npm pack`), Go, Ruby and PHP ones from Debian packages
(`apt-get download` + `dpkg-deb -x`, no root install; Debian ships Go sources under
/usr/share/gocode, Ruby libraries under /usr/lib/ruby/vendor_ruby, PHP under /usr/share/php).
Never from GitHub. The cache defaults to ``.bench-cache/`` at the project root; set
``SEMFORA_BENCH_CACHE`` to move it. ``CORPORA`` maps the names task files use to fetchers.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("SEMFORA_BENCH_CACHE", ROOT / ".bench-cache"))


def _unpack(archive: Path, dest: Path) -> Path:
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    children = [p for p in dest.iterdir() if p.is_dir()]
    return children[0] if len(children) == 1 else dest


def pypi_sdist(name: str, version: str) -> Path:
    dest = CACHE / f"{name}-{version}"
    if dest.exists() and any(dest.iterdir()):
        return next(p for p in dest.iterdir() if p.is_dir())
    dl = CACHE / "downloads"
    dl.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--no-binary",
            ":all:",
            "-d",
            str(dl),
            f"{name}=={version}",
        ],
        check=True,
    )
    # ``<name>-<version>.``: so that ``tornado 6.4`` never picks a downloaded ``tornado-6.4.1``.
    stem = f"{name}-{version}.".lower().replace("_", "-")
    archive = next(p for p in dl.iterdir() if p.name.lower().replace("_", "-").startswith(stem))
    dest.mkdir(parents=True, exist_ok=True)
    return _unpack(archive, dest)


def npm_package(name: str, version: str) -> Path:
    dest = CACHE / f"npm-{name}-{version}"
    if dest.exists() and any(dest.iterdir()):
        return next(p for p in dest.iterdir() if p.is_dir())
    dl = CACHE / "downloads"
    dl.mkdir(parents=True, exist_ok=True)
    subprocess.run(["npm", "pack", "--silent", f"{name}@{version}"], cwd=dl, check=True, capture_output=True)
    archive = dl / f"{name}-{version}.tgz"
    dest.mkdir(parents=True, exist_ok=True)
    return _unpack(archive, dest)


def debian_package(name: str, version: str, subdir: str) -> Path:
    """The ``subdir`` of Debian package ``name`` at ``version``, unpacked (not installed).

    Only the version the configured Debian release carries can be fetched; a task set pinned to
    another one fails here, loudly."""
    dest = CACHE / f"deb-{name}-{version}"
    tree = dest / subdir.strip("/")
    if tree.is_dir() and any(tree.iterdir()):
        return tree
    dl = CACHE / "downloads"
    dl.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["apt-get", "download", "-q", f"{name}={version}"], cwd=dl, check=True, capture_output=True
    )
    stem = f"{name}_{version.replace(':', '%3a')}_"
    deb = next(p for p in dl.iterdir() if p.name.startswith(stem) and p.suffix == ".deb")
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(["dpkg-deb", "-x", str(deb), str(dest)], check=True)
    if not tree.is_dir():
        raise FileNotFoundError(f"{name} {version}: no {subdir} in the package")
    return tree


def django() -> Path:
    return pypi_sdist("django", "5.1.4")


def flask() -> Path:
    return pypi_sdist("flask", "3.1.0")


def express() -> Path:
    return npm_package("express", "4.21.2")


def ansible() -> Path:
    """The scale corpus: 44k files, 18.8k of them code (the ansible 10.7.0 sdist from PyPI)."""
    return pypi_sdist("ansible", "10.7.0")


def _pypi(name: str, version: str) -> Callable[[], Path]:
    return lambda: pypi_sdist(name, version)


def _npm(name: str, version: str) -> Callable[[], Path]:
    return lambda: npm_package(name, version)


def _debian(name: str, version: str, subdir: str) -> Callable[[], Path]:
    return lambda: debian_package(name, version, subdir)


# Every corpus a task file may name, by the name it uses. The versions of the context set's
# corpora are pinned by its real-history tasks (each fix's parent has the same gold code).
CORPORA: dict[str, Callable[[], Path]] = {
    "flask": flask,
    "django": django,
    "express": express,
    "click-8.1.7": _pypi("click", "8.1.7"),
    "werkzeug-3.1.3": _pypi("werkzeug", "3.1.3"),
    "jinja2-3.1.4": _pypi("jinja2", "3.1.4"),
    "rich-13.7.1": _pypi("rich", "13.7.1"),
    "httpx-0.27.0": _pypi("httpx", "0.27.0"),
    "axios-1.7.4": _npm("axios", "1.7.4"),
    "commander-12.1.0": _npm("commander", "12.1.0"),
    # The issue-report set's own pins (tests/bench/queries/issues/): releases published before
    # the fixes whose issues the set quotes.
    "click-8.1.3": _pypi("click", "8.1.3"),
    "marshmallow-3.20.1": _pypi("marshmallow", "3.20.1"),
    "pyjwt-2.9.0": _pypi("pyjwt", "2.9.0"),
    "tornado-6.3.3": _pypi("tornado", "6.3.3"),
    "tornado-6.4": _pypi("tornado", "6.4"),
    "urllib3-2.0.7": _pypi("urllib3", "2.0.7"),
    "monolog-2.9.1": _debian("php-monolog", "2.9.1-1", "usr/share/php"),
    "mux-1.8.0": _debian(
        "golang-github-gorilla-mux-dev", "1.8.0-1", "usr/share/gocode/src/github.com/gorilla/mux"
    ),
    "cobra-1.6.1": _debian(
        "golang-github-spf13-cobra-dev", "1.6.1-1", "usr/share/gocode/src/github.com/spf13/cobra"
    ),
    "rack-2.2.22": _debian(
        "ruby-rack", "2.2.22-0+deb12u1", "usr/share/rubygems-integration/all/gems/rack-2.2.22"
    ),
}


def corpus(name: str) -> Path:
    """The unpacked corpus ``name`` (fetched on first use)."""
    try:
        fetch = CORPORA[name]
    except KeyError:
        raise SystemExit(f"unknown corpus {name!r} (known: {', '.join(sorted(CORPORA))})") from None
    return fetch()
