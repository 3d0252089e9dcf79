"""A hostile repository for read-sandbox tests and the security benchmark.

``build_hostile_repo`` makes a real git repository whose every trap carries a canary: symlinks
to files and directories outside it (``etc_dir -> /etc``), chains, loops, dangling links, links
into ``.git`` and onto secrets, deny-listed files in every variant the policy must catch (case,
width, trailing dots, invisible characters), a FIFO and long names. A canary string appearing
in anything semfora returns is an escape. ``hostile_paths`` lists hand-written attacks;
``random_path`` generates more from the same pieces.
"""

from __future__ import annotations

import os
import random
import secrets
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}

APP = '''"""The one ordinary module: what semfora may read and send."""


def handler(request):
    """Answer a request."""
    return render(request)


def render(request):
    return "ok"
'''

# Deny-listed files, each holding its own canary (a plain word, so only the deny-list, not the
# content redactor, keeps it out). Names with invisible characters, width, case and trailing
# dots must be caught by name folding.
SECRET_FILES = (
    ".env",
    ".envrc",
    "prod.env",
    ".env_local",
    ".env-dev",
    ".env.production",
    ".pgpass",
    ".htpasswd",
    "keystore.jks",
    "app.keystore",
    "kubeconfig",
    "infra/terraform.tfvars",
    "infra/terraform.tfstate",
    "putty.ppk",
    "AuthKey.p8",
    ".docker/config.json",
    "id_rsa",
    "deploy/server.pem",
    "tls.key",
    "credentials.json",
    "config/secrets.yaml",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    ".env.",
    ".env..",
    ".e\u00adnv",
    ".env\u2060",
    ".env\ufe0f",
    ".env\U000e0041",
    ".ENV",
    ".\uff45\uff4e\uff56",
    "ID_RSA",
    "Server.PEM ",
)
# A source file on the deny-list: the indexer used to index it and MCP served its body.
SECRETS_PY = 'def get_secret():\n    return "{canary}"\n'


@dataclass
class HostileRepo:
    root: Path
    outside: Path
    canaries: dict[str, str] = field(default_factory=dict)  # label -> text that must never appear
    app_text: str = APP

    def leaked(self, text: str) -> list[str]:
        """The labels of every canary found in ``text``."""
        return [label for label, canary in self.canaries.items() if canary in text]


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, check=True, env={**os.environ, **GIT_ENV}
    )


def _passwd_canary() -> str | None:
    try:
        first = Path("/etc/passwd").read_text(encoding="utf-8", errors="replace").splitlines()[0]
    except (OSError, IndexError):
        return None
    return first if len(first) >= 10 else None


def build_hostile_repo(base: Path) -> HostileRepo:
    """Create the hostile repository under ``base`` (and its outside victim beside it)."""
    tag = secrets.token_hex(4)
    root = base / "repo"
    outside = base / "outside"
    repo = HostileRepo(root, outside)
    (root / "src").mkdir(parents=True)
    outside.mkdir()
    repo.canaries["outside"] = f"CANARY_OUTSIDE_{tag}"
    (outside / "victim.txt").write_text(repo.canaries["outside"] + "\n")
    (outside / "module.py").write_text(
        f'"""{repo.canaries["outside"]}"""\n\n\ndef stolen():\n    return "{repo.canaries["outside"]}"\n'
    )
    passwd = _passwd_canary()
    if passwd:
        repo.canaries["/etc/passwd"] = passwd

    (root / "src" / "app.py").write_text(APP)
    (root / "src" / "café.py").write_text('def cafe():\n    return "latte"\n')
    (root / "README.md").write_text("# hostile\n\nAn ordinary readme.\n")
    (root / ("l" * 250 + ".py")).write_text("def long_name():\n    return 1\n")
    for n, rel in enumerate(SECRET_FILES):
        label = f"secret:{rel!r}"
        repo.canaries[label] = f"CANARY_SECRET_{n}_{tag}"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"value = {repo.canaries[label]}\n")
    repo.canaries["secret:secrets.py"] = f"CANARY_SECRETS_PY_{tag}"
    (root / "secrets.py").write_text(SECRETS_PY.format(canary=repo.canaries["secret:secrets.py"]))

    _git(root, "init", "-q", "-b", "main")
    repo.canaries["git"] = f"CANARY_GIT_{tag}"
    with (root / ".git" / "config").open("a") as fh:
        fh.write(f'[remote "origin"]\n\turl = https://example.com/{repo.canaries["git"]}.git\n')
        fh.write(f"# {repo.canaries['git']}\n")

    links = {
        "etc_dir": "/etc",
        "passwd_link": "/etc/passwd",
        "outside_file": str(outside / "victim.txt"),
        "outside_dir": str(outside),
        "src/outside_module.py": str(outside / "module.py"),
        "up": "../..",
        "src/rel_out.py": "../../outside/module.py",
        "gitcfg.txt": ".git/config",
        "gitdir": ".git",
        "src/deep_gitcfg.py": "../.git/config",
        "envlink.txt": ".env",
        "src/settings_link.py": "../secrets.py",
        "keylink": "id_rsa",
        "chain1": "chain2",
        "chain2": "chain3",
        "chain3": "/etc/passwd",
        "c_in1.py": "c_in2.py",
        "c_in2.py": "src/app.py",
        "loop_a": "loop_b",
        "loop_b": "loop_a",
        "self_loop": "self_loop",
        "dangling": "nowhere/at/all",
        "dangling_out": "/nonexistent/semfora/x",
        "src/ok_link.py": "app.py",
        # Files the overview reads by name: manifests, READMEs, package docstrings.
        "requirements.txt": str(outside / "victim.txt"),
        "requirements-dev.txt": "/etc/passwd",
        "src/README.md": "../../outside/victim.txt",
        "src/__init__.py": "../../outside/module.py",
    }
    for name, target in links.items():
        os.symlink(target, root / name)
    os.mkfifo(root / "pipe.py")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "hostile")
    return repo


# Path pieces the generator combines: traversal, links, .git and secret variants, bad bytes.
PIECES = (
    "..",
    ".",
    "",
    "src",
    "app.py",
    "etc_dir",
    "passwd",
    "shadow",
    "passwd_link",
    "outside_file",
    "outside_dir",
    "victim.txt",
    "module.py",
    "up",
    "outside",
    ".git",
    ".GIT",
    ".git.",
    ".Git ",
    ".g\u00adit",
    "gitdir",
    "config",
    "HEAD",
    "gitcfg.txt",
    "deep_gitcfg.py",
    "envlink.txt",
    "settings_link.py",
    "keylink",
    "chain1",
    "c_in1.py",
    "loop_a",
    "self_loop",
    "dangling",
    "dangling_out",
    "ok_link.py",
    "rel_out.py",
    "outside_module.py",
    "pipe.py",
    "café.py",
    "cafe\u0301.py",
    "secrets.py",
    "x" * 300,
    "l" * 250 + ".py",
    "\x00",
    "a\x00b",
    "\u202egp.exe",
    "%2e%2e",
    "..\u2215..",
    "\\..\\",
    *SECRET_FILES,
)


def hostile_paths(repo: HostileRepo) -> list[str]:
    """Hand-written attacks, each of which must get nothing back."""
    return [
        "etc_dir/passwd",
        "passwd_link",
        "chain1",
        "outside_file",
        "outside_dir/victim.txt",
        "outside_dir/module.py",
        "src/outside_module.py",
        "src/rel_out.py",
        "up/outside/victim.txt",
        "../outside/victim.txt",
        "src/../../outside/victim.txt",
        str(repo.outside / "victim.txt"),
        "/etc/passwd",
        ".git/config",
        ".GIT/config",
        ".git./config",
        "gitcfg.txt",
        "gitdir/config",
        "src/deep_gitcfg.py",
        "envlink.txt",
        "src/settings_link.py",
        "keylink",
        "secrets.py",
        "loop_a",
        "self_loop/x",
        "dangling",
        "dangling_out",
        "pipe.py",
        "x" * 300,
        "a/" * 2100,
        "a\x00b",
        *SECRET_FILES,
    ]


def random_path(rng: random.Random, repo: HostileRepo) -> str:
    """One generated path: 1 to 6 pieces, sometimes absolute or rooted at the repository."""
    parts = [rng.choice(PIECES) for _ in range(rng.randint(1, 6))]
    lead = rng.choice(["", "", "", "/", "./", f"{repo.root}/", f"{repo.outside}/"])
    return lead + "/".join(parts)
