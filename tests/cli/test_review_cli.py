"""`semfora diff` and `semfora ci` as a user and a CI job run them: output formats and exit codes."""

from __future__ import annotations

import json
import subprocess

from tests.conftest import git, run_semfora


def _repo(make_repo):
    root = make_repo({"svc.py": "def ping(host):\n    return host\n"})
    (root / "svc.py").write_text("import os\n\n\ndef ping(host):\n    return os.system('ping ' + host)\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "ping for real")
    return root


def test_diff_json_and_toon(make_repo) -> None:
    root = _repo(make_repo)
    out = run_semfora("diff", "HEAD~1", "HEAD", "--path", str(root), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    sym = data["files"][0]["symbols"][0]
    assert (sym["change"], sym["qualified_name"]) == ("modified", "ping")
    assert sym["new_external_calls"][0]["category"] == "subprocess"
    toon = run_semfora("diff", "HEAD~1", "HEAD", "--path", str(root), "--format", "toon")
    assert toon.returncode == 0 and "ping" in toon.stdout and not toon.stdout.startswith("{")
    (root / "svc.py").write_text("def ping(host, count):\n    return host\n")
    working = run_semfora("diff", "--path", str(root), "--format", "text")
    assert "signature: def ping(host) -> def ping(host, count)" in working.stdout


def test_ci_exit_codes_follow_the_gate(make_repo) -> None:
    root = _repo(make_repo)
    blocked = run_semfora(
        "ci", "--mode", "commit", "--commit", "HEAD", "--output", "json", "--path", str(root)
    )
    assert blocked.returncode == 1, blocked.stderr
    report = json.loads(blocked.stdout)
    assert report["status"] == "changes_requested" and report["risk_score"] == "high"
    assert "deterministic review only" in report["summary"]
    text = run_semfora("ci", "--mode", "pr", "--base", "HEAD~1", "--head", "HEAD", "--path", str(root))
    assert text.returncode == 1 and "changes_requested" in text.stdout and "svc.py:5" in text.stdout
    git(root, "commit", "-q", "--allow-empty", "-m", "nothing")
    approved = run_semfora("ci", "--mode", "commit", "--commit", "HEAD", "--path", str(root))
    assert approved.returncode == 0 and "approved" in approved.stdout


def test_ci_usage_and_unavailable_model(make_repo) -> None:
    root = _repo(make_repo)
    missing_base = run_semfora("ci", "--mode", "pr", "--path", str(root))
    assert missing_base.returncode == 2 and "error[USAGE]" in missing_base.stderr
    bad_ref = run_semfora(
        "ci", "--mode", "commit", "--commit", "nope", "--output", "json", "--path", str(root)
    )
    assert bad_ref.returncode == 2
    assert json.loads(bad_ref.stdout)["error_code"] == "DIFF_REF_NOT_FOUND"
    no_model = run_semfora("ci", "--mode", "commit", "--model", "claude-sonnet-4-5", "--path", str(root))
    assert no_model.returncode == 3 and "MODEL_UNAVAILABLE" in no_model.stderr


def test_shallow_clone_gives_the_fix(make_repo, tmp_path) -> None:
    root = _repo(make_repo)
    clone = tmp_path / "ci-checkout"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{root}", str(clone)], check=True)
    out = run_semfora("ci", "--mode", "pr", "--base", "HEAD~1", "--head", "HEAD", "--path", str(clone))
    assert out.returncode == 2
    assert "error[DIFF_SHALLOW_CLONE]" in out.stderr and "fetch-depth: 0" in out.stderr


def test_pre_commit_hook_blocks_a_staged_secret(make_repo) -> None:
    root = make_repo({"conf.py": "DEBUG = False\n"})
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    (root / "conf.py").write_text(f'DEBUG = False\nGITHUB_TOKEN = "{token}"\n')
    git(root, "add", "conf.py")
    hook = [
        "ci",
        "--mode",
        "commit",
        "--commit",
        "STAGED",
        "--no-model",
        "--output",
        "text",
        "--path",
        str(root),
    ]
    out = run_semfora(*hook)
    assert out.returncode == 1 and "blocked" in out.stdout and "conf.py:2" in out.stdout
    assert token not in out.stdout
    git(root, "reset", "-q", "conf.py")
    clean = run_semfora(*hook)
    assert clean.returncode == 0 and "approved" in clean.stdout


def test_working_reviews_what_is_not_yet_committed(make_repo) -> None:
    # Unstaged and untracked changes: STAGED sees none of them, WORKING sees both.
    root = make_repo({"svc.py": "def ping(host):\n    return host\n"})
    (root / "svc.py").write_text("import os\n\n\ndef ping(host):\n    return os.system('ping ' + host)\n")
    (root / "new.py").write_text("def fresh():\n    return 1\n")
    args = ["ci", "--mode", "commit", "--no-model", "--output", "json", "--path", str(root)]
    staged = json.loads(run_semfora(*args, "--commit", "STAGED").stdout)
    assert staged["changed_symbols"] == []
    out = run_semfora(*args, "--commit", "working")
    assert out.returncode == 1, out.stderr
    report = json.loads(out.stdout)
    assert {s["symbol"] for s in report["changed_symbols"]} == {"ping", "fresh"}
    assert report["status"] == "changes_requested"
    assert any(f["file"] == "svc.py" for f in report["findings"])
    usage = run_semfora("ci", "--mode", "pr", "--base", "HEAD", "--commit", "WORKING", "--path", str(root))
    assert usage.returncode == 2


def test_diff_text_counts_the_callers_it_does_not_name(make_repo) -> None:
    callers = "".join(f"def use_{n}():\n    return ping('h{n}')\n\n\n" for n in range(7))
    root = make_repo(
        {"svc.py": "def ping(host):\n    return host\n", "use.py": "from svc import ping\n\n\n" + callers}
    )
    (root / "svc.py").write_text("def ping(host, count):\n    return host\n")
    out = run_semfora("diff", "--path", str(root), "--format", "text")
    assert out.returncode == 0, out.stderr
    line = next(ln for ln in out.stdout.splitlines() if "callers (" in ln)
    assert line.strip().startswith("callers (7): use.py:") and line.endswith(", and 2 more"), line
    assert line.count("use.py:") == 5
