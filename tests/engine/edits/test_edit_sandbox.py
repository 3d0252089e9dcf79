"""The edit sandbox: no hostile path escapes the root, .git or the secret deny-list."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.config import Settings
from engine.edits import EditSession, is_secret_path, resolve_in_repo
from engine.edits.errors import FileRefused, PathDenied, SecretPathDenied
from engine.edits.sandbox import DEFAULT_DENY
from engine.errors import SandboxError
from engine.repo.layout import RepoLayout

PIECES = [
    "..",
    ".",
    "",
    "a",
    "sub",
    ".git",
    ".GIT",
    ".git.",
    ".Git ",
    "link_out",
    "link_in",
    "loop",
    "dangling",
    ".env",
    ".env.local",
    ".ＥＮＶ",
    "ｉｄ_rsa",
    "server.PEM",
    "x\x00y",
    "\u202egp.exe",
    "repo-evil",
    "Secret.txt",
    "..\u2215..",
    "\\..\\",
    "％２ｅ％２ｅ",
    "\u2024\u2024",
    "config",
    "new",
    "é",
    "e\u0301",
    "CREDENTIALS.json",
]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("sandbox")
    root = base / "repo"
    outside = base / "repo-evil"
    (root / "sub").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    outside.mkdir()
    (outside / "a").write_text("victim\n")
    (root / "a").write_text("ok\n")
    (root / "sub" / "a").write_text("ok\n")
    os.symlink(outside, root / "link_out")
    os.symlink(root / "sub", root / "link_in")
    os.symlink(root / "loop", root / "loop")
    os.symlink(base / "nowhere", root / "dangling")
    os.symlink(root / ".git", root / "sub" / "gitlink")
    return root, outside


def _check(root: Path, raw: str) -> None:
    try:
        resolved = resolve_in_repo(root, raw)
    except SandboxError:
        return
    real_root = os.path.realpath(root)
    real = os.path.realpath(resolved)
    assert real.startswith(real_root + os.sep), (raw, real)
    rel = os.path.relpath(real, real_root)
    assert not any(p.casefold().rstrip(". ") == ".git" for p in Path(rel).parts), (raw, rel)
    assert not is_secret_path(rel), (raw, rel)
    assert "\x00" not in raw


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    parts=st.lists(st.sampled_from(PIECES) | st.text(max_size=6), min_size=1, max_size=6),
    lead=st.sampled_from(["", "/", "./", "ROOT/", "//"]),
)
def test_no_generated_path_escapes(world: tuple[Path, Path], parts: list[str], lead: str) -> None:
    root, _ = world
    raw = "/".join(parts)
    raw = f"{root}/{raw}" if lead == "ROOT/" else lead + raw
    _check(root, raw)


@pytest.mark.parametrize(
    "raw",
    [
        "../repo-evil/a",
        "link_out/a",
        "link_out/../link_out/a",
        "/etc/passwd",
        "sub/../../repo-evil/a",
        "loop",
        "dangling",
        ".git/config",
        ".GIT/config",
        "sub/gitlink/config",
        "a\x00b",
        "\u202etxt.py",
        "",
    ],
)
def test_known_escapes_are_denied(world: tuple[Path, Path], raw: str) -> None:
    root, _ = world
    with pytest.raises(PathDenied):
        resolve_in_repo(root, raw)


@pytest.mark.parametrize(
    "name",
    [
        ".env",
        ".env.production",
        "deploy/key.pem",
        "id_rsa",
        "ID_ED25519",
        "config/secrets.yaml",
        "aws/credentials",
        ".ＥＮＶ",
        "sub/My_Secret.txt",
    ],
)
def test_secret_files_are_denied(world: tuple[Path, Path], name: str) -> None:
    root, _ = world
    assert is_secret_path(name, DEFAULT_DENY)
    with pytest.raises(SecretPathDenied):
        resolve_in_repo(root, name)


def test_symlink_inside_the_root_resolves_to_its_real_target(world: tuple[Path, Path]) -> None:
    root, _ = world
    assert resolve_in_repo(root, "link_in/a") == Path(os.path.realpath(root / "sub" / "a"))
    assert resolve_in_repo(root, "brand/new/file.py") == Path(os.path.realpath(root)) / "brand/new/file.py"


def test_session_refuses_binary_oversized_and_secret_files(make_repo) -> None:
    root = make_repo({"img.bin": b"\x89PNG\x00\x00data", "big.txt": "x" * 5000 + "\n", "ok.py": "a = 1\n"})
    settings = Settings()
    settings.edits.max_file_bytes = 4096
    session = EditSession.load_or_create(RepoLayout.for_path(root), settings)
    with pytest.raises(FileRefused) as info:
        session.stage_content("img.bin", "text\n")
    assert info.value.code == "BINARY_FILE"
    with pytest.raises(FileRefused) as info:
        session.stage_content("big.txt", "small\n")
    assert info.value.code == "FILE_TOO_LARGE"
    with pytest.raises(FileRefused):
        session.stage_content("ok.py", "y = 1\n" * 2000)
    with pytest.raises(SecretPathDenied):
        session.stage_content(".env", "TOKEN=1\n")
    assert session.is_empty


def test_commit_rechecks_a_symlink_swapped_after_staging(make_repo, tmp_path: Path) -> None:
    root = make_repo({"real/f.py": "a = 1\n"}, commit=False)
    os.symlink(root / "real", root / "dir")
    session = EditSession.load_or_create(RepoLayout.for_path(root))
    session.stage_content("dir/new.py", "b = 2\n")
    victim = tmp_path / "victim"
    victim.mkdir()
    (root / "dir").unlink()
    os.symlink(victim, root / "dir")
    # Staged by its real path (real/new.py): the swapped link cannot redirect the write.
    session.commit(all=True)
    assert list(victim.iterdir()) == []
    assert (root / "real" / "new.py").read_text() == "b = 2\n"
