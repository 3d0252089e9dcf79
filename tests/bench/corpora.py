"""Fetch the benchmark corpora into a cache directory (never committed).

Django and Flask come from PyPI sdists (`pip download --no-binary :all:`), Express
from the npm registry (`npm pack`). The cache defaults to ``.bench-cache/`` at the
project root; set ``SEMFORA_BENCH_CACHE`` to move it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
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
    archive = next(p for p in dl.iterdir() if p.name.lower().startswith(name.lower()) and version in p.name)
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


def django() -> Path:
    return pypi_sdist("django", "5.1.4")


def flask() -> Path:
    return pypi_sdist("flask", "3.1.0")


def express() -> Path:
    return npm_package("express", "4.21.2")


def ansible() -> Path:
    """The scale corpus: 44k files, 18.8k of them code (the ansible 10.7.0 sdist from PyPI)."""
    return pypi_sdist("ansible", "10.7.0")
