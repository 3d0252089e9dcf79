"""`semfora diff` and `semfora ci` as a user and a CI job run them: output formats and exit codes."""

from __future__ import annotations

import json
import re
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
    assert working.stdout.startswith("semantic diff HEAD..WORKING: 1 file, 1 modified\n")  # was "1 files"


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


def test_ci_json_flag_like_every_other_command(make_repo) -> None:
    """`semfora ci ... --json` was an unknown flag (exit 2) while every other command takes it."""
    root = _repo(make_repo)
    out = run_semfora("ci", "--mode", "commit", "--commit", "HEAD", "--json", "--path", str(root))
    assert out.returncode == 1, out.stderr
    assert json.loads(out.stdout)["status"] == "changes_requested"
    bad = run_semfora("ci", "--mode", "commit", "--commit", "nope", "--json", "--path", str(root))
    assert bad.returncode == 2 and json.loads(bad.stdout)["error_code"] == "DIFF_REF_NOT_FOUND"


def test_ci_sarif_is_what_code_scanning_accepts(make_repo) -> None:
    """`--output sarif`: SARIF 2.1.0 with what GitHub code scanning requires of each result (a
    known rule, a level, a message, a repository-relative location with a line, a fingerprint)."""
    root = _repo(make_repo)
    runs = [
        run_semfora("ci", "--mode", "commit", "--commit", "HEAD", "--output", "sarif", "--path", str(root))
        for _ in range(2)
    ]
    assert [r.returncode for r in runs] == [1, 1], runs[0].stderr
    log = json.loads(runs[0].stdout)
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    (run,) = log["runs"]
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert run["tool"]["driver"]["name"] == "semfora" and len(rules) == len(set(rules))
    assert run["results"], "the subprocess finding must be a result"
    for result in run["results"]:
        assert rules[result["ruleIndex"]] == result["ruleId"]
        assert result["level"] in ("error", "warning", "note") and result["message"]["text"]
        physical = result["locations"][0]["physicalLocation"]
        assert physical["artifactLocation"]["uri"] == "svc.py" and physical["region"]["startLine"] >= 1
    sub = next(r for r in run["results"] if r["ruleId"] == "new-subprocess")
    assert sub["level"] == "error" and sub["locations"][0]["physicalLocation"]["region"]["startLine"] == 5
    again = json.loads(runs[1].stdout)["runs"][0]["results"]
    assert [r["partialFingerprints"] for r in again] == [r["partialFingerprints"] for r in run["results"]]
    assert run["properties"]["status"] == "changes_requested"


def test_ci_github_annotations_escape_what_could_start_a_command(make_repo) -> None:
    """`--output github`: one workflow command a finding, then the verdict; a file name with a
    comma or a colon cannot break the properties, and a newline cannot start a command."""
    root = make_repo({"ok.py": "X = 1\n"})
    (root / "we,ird:name.py").write_text(
        "import subprocess\n\n\ndef go(cmd):\n    return subprocess.run(cmd)\n"
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "shell out")
    out = run_semfora("ci", "--mode", "commit", "--commit", "HEAD", "--output", "github", "--path", str(root))
    assert out.returncode == 1, out.stderr
    lines = out.stdout.splitlines()
    assert lines[-1].startswith("semfora ci: changes_requested (risk high, gate high)")
    pattern = re.compile(r"^::(error|warning|notice) (file=[^,:]+(,line=\d+)?,)?title=[^,:]+::\S.*$")
    assert all(pattern.match(line) for line in lines[:-1]), lines
    error = next(line for line in lines if line.startswith("::error "))
    assert "file=we%2Cird%3Aname.py,line=5," in error and "new subprocess use in go" in error


def test_a_missing_ref_says_why_and_how_to_get_it(make_repo, tmp_path) -> None:
    """'unknown revision' told a CI job to check the name when the base branch was simply not
    fetched, and a new repository to read `git log`, which has nothing to show."""
    root = _repo(make_repo)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--single-branch", str(root), str(clone))
    missing = run_semfora("ci", "--mode", "pr", "--base", "origin/release", "--path", str(clone))
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.count("\n") == 1 and "error[DIFF_REF_NOT_FOUND]" in missing.stderr
    assert "not fetched from origin" in missing.stderr and "git fetch origin release" in missing.stderr
    fresh = make_repo({"a.py": "A = 1\n"}, commit=False)
    empty = run_semfora("ci", "--mode", "commit", "--json", "--path", str(fresh))
    error = json.loads(empty.stdout)
    assert empty.returncode == 2 and "no commits yet" in error["error_message"]
    assert "WORKING" in error["hint"]


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


def test_a_secret_file_in_the_work_tree_or_the_index_is_said_as_such(make_repo) -> None:
    # An untracked .env under `--commit WORKING` was "added to the repository"; it is not there yet.
    root = make_repo({"svc.py": "def ping(host):\n    return host\n"})
    (root / ".env").write_text("DB_PASSWORD=x\n")
    args = ["ci", "--mode", "commit", "--no-model", "--output", "json", "--path", str(root)]

    def leak(commit: str) -> str:
        report = json.loads(run_semfora(*args, "--commit", commit).stdout)
        (message,) = [f["message"] for f in report["findings"] if f["file"] == ".env"]
        return str(message)

    assert leak("WORKING") == (
        "a secret-bearing file is new in the work tree, untracked and not ignored by git "
        "(`git add` would commit it): .env"
    )
    git(root, "add", "-f", ".env")
    assert leak("STAGED") == "a secret-bearing file is staged to be added to the repository: .env"
    git(root, "commit", "-qm", "oops")
    assert leak("HEAD") == "a secret-bearing file is added to the repository: .env"


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


def test_progress_lines_only_once_a_review_is_slow() -> None:
    import io

    from semfora_cli.commands.review_cmds import PROGRESS_AFTER_S, PROGRESS_EVERY_S, StderrProgress

    now = [100.0]
    out = io.StringIO()
    progress = StderrProgress("ci", stream=out, clock=lambda: now[0])
    progress("reading changed files", 0, 6809)
    assert out.getvalue() == ""  # a short review prints nothing
    now[0] += PROGRESS_AFTER_S
    progress("reading changed files", 1200, 6809)
    progress("reading changed files", 1201, 6809)  # not again within the same phase at once...
    now[0] += PROGRESS_EVERY_S
    progress("reading changed files", 4000, 6809)  # ...but after a while
    progress("running the review rules", 0, 6809)  # and at every new phase
    assert out.getvalue().splitlines() == [
        "semfora ci: reading changed files 1200/6809 (2 s)",
        "semfora ci: reading changed files 4000/6809 (7 s)",
        "semfora ci: running the review rules 0/6809 (7 s)",
    ]
    # The rules are steps of one phase: one line for all of them, unless one takes a while.
    out = io.StringIO()
    progress = StderrProgress("ci", stream=out, clock=lambda: now[0])
    now[0] += PROGRESS_AFTER_S
    for done, rule in enumerate(("risk-raised", "security-logic", "public-api")):
        progress(f"running the review rules ({rule})", done, 11)
    now[0] += PROGRESS_EVERY_S
    progress("running the review rules (secrets)", 10, 11)
    assert out.getvalue().splitlines() == [
        "semfora ci: running the review rules (risk-raised) 0/11 (2 s)",
        "semfora ci: running the review rules (secrets) 10/11 (7 s)",
    ]


def test_a_branch_name_that_is_not_there_suggests_the_one_that_is(make_repo) -> None:
    """`semfora diff main WORKING` in a repository whose branch is `master` said only 'check the name'."""
    root = _repo(make_repo)
    git(root, "branch", "-M", "master")
    proc = run_semfora("diff", "main", "WORKING", "--path", str(root))
    assert proc.returncode == 2 and "error[DIFF_REF_NOT_FOUND]: unknown revision 'main'" in proc.stderr
    assert "did you mean 'master'?" in proc.stderr, proc.stderr
    typo = run_semfora("diff", "mastr", "--path", str(root))
    assert "did you mean 'master'?" in typo.stderr, typo.stderr
    nothing_like = run_semfora("diff", "zzzz", "--path", str(root))
    assert "did you mean" not in nothing_like.stderr and "git log --oneline" in nothing_like.stderr


def test_diff_lists_a_changed_secret_file_but_never_shows_its_content(make_repo) -> None:
    """`semfora diff` printed `def load_secret(password="hunter3")` from config/credentials.py."""
    root = make_repo(
        {"app.py": "def run():\n    return 1\n", "config/credentials.py": "def load():\n    return 1\n"}
    )
    (root / "config/credentials.py").write_text('def load_secret(password="hunter3"):\n    return password\n')
    (root / "app.py").write_text("def run(fast=False):\n    return 1\n")
    for fmt in ("--json", "--format=text", "--format=toon"):
        proc = run_semfora("diff", "HEAD", "WORKING", fmt, "--path", str(root))
        assert proc.returncode == 0, proc.stderr
        for leaked in ("hunter3", "load_secret", "password"):
            assert leaked not in proc.stdout, (fmt, leaked)
        assert "config/credentials.py" in proc.stdout and "run" in proc.stdout


def test_diff_masks_a_changed_secret_default_in_every_format(make_repo) -> None:
    """A password default changed in an ordinary file: JSON masked the signatures but TOON showed
    them (`password=\\"s3cr3t-old\\"`, its quotes escaped), and every format printed the change as
    `default of 'password' changed from 's3cr3t-old' to 'n3w-s3cr3t'`."""
    root = make_repo({"db.py": 'def connect(host, password="s3cr3t-old", retries=3):\n    return host\n'})
    (root / "db.py").write_text('def connect(host, password="n3w-s3cr3t", retries=5):\n    return host\n')
    for fmt in ("--json", "--format=text", "--format=toon"):
        proc = run_semfora("diff", "HEAD", "WORKING", fmt, "--path", str(root))
        assert proc.returncode == 0, proc.stderr
        for leaked in ("s3cr3t-old", "n3w-s3cr3t"):
            assert leaked not in proc.stdout, (fmt, leaked, proc.stdout)
        assert 'password=\\"[REDACTED]\\"' in proc.stdout or 'password="[REDACTED]"' in proc.stdout, fmt
        if fmt != "--format=text":  # the text format gives the signatures, not the parameter changes
            assert "default of 'retries' changed from 3 to 5" in proc.stdout, (fmt, proc.stdout)
            assert "default of 'password' changed from [REDACTED] to [REDACTED]" in proc.stdout, fmt


def test_a_range_in_base_or_commit_is_understood_or_explained(make_repo) -> None:
    """`--base HEAD~1..HEAD` and `--commit HEAD~1..HEAD` were 'unknown revision' (exit 2), though
    `semfora diff` takes ranges: a PR range now reviews, and a range given as one commit says how."""
    root = _repo(make_repo)
    for spelled in ("HEAD~1..HEAD", "HEAD~1...HEAD"):
        out = run_semfora("ci", "--mode", "pr", "--base", spelled, "--json", "--path", str(root))
        assert out.returncode == 1, out.stdout + out.stderr
        report = json.loads(out.stdout)
        assert (report["base"], report["head"]) == ("HEAD~1", "HEAD")
        assert report["findings"][0]["file"] == "svc.py"
    both = run_semfora("ci", "--mode", "pr", "--base", "HEAD~1..HEAD", "--head", "HEAD", "--path", str(root))
    assert both.returncode == 2 and "--base" in both.stderr and "--head" in both.stderr
    commit = run_semfora("ci", "--mode", "commit", "--commit", "HEAD~1..HEAD", "--path", str(root))
    assert commit.returncode == 2
    assert "--mode pr --base HEAD~1 --head HEAD" in commit.stderr, commit.stderr


def test_ci_text_lists_the_files_a_binary_a_rename_and_a_mode_change(make_repo) -> None:
    """A commit adding a binary, renaming a file and dropping an executable bit read
    '3 files, 0 symbol changes' with nothing to say which files."""
    root = make_repo({"run.sh": "#!/bin/sh\necho hi\n", "notes/a.txt": "a\n"})
    (root / "run.sh").chmod(0o755)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "exec")
    (root / "run.sh").chmod(0o644)
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00" + bytes(range(256)))
    git(root, "mv", "notes/a.txt", "notes/b.txt")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "assets")
    out = run_semfora("ci", "--mode", "commit", "--no-model", "--path", str(root))
    assert out.returncode == 0, out.stderr
    assert "files (3):" in out.stdout
    assert "added    logo.png (binary file: not analysed)" in out.stdout
    assert "renamed  notes/a.txt -> notes/b.txt  +0 -0" in out.stdout
    assert "modified run.sh  +0 -0 (mode 100755 -> 100644)" in out.stdout
    assert "run.sh is no longer executable (mode 100755 -> 100644)" in out.stdout
    report = json.loads(
        run_semfora("ci", "--mode", "commit", "--no-model", "--json", "--path", str(root)).stdout
    )
    png = next(f for f in report["files"] if f["path"] == "logo.png")
    assert png["binary"] is True and png["note"] == "binary file: not analysed"


def test_json_with_another_output_format_is_a_usage_error(make_repo) -> None:
    """`--output sarif --json` printed the JSON report: the SARIF upload then failed on it."""
    root = _repo(make_repo)
    out = run_semfora("ci", "--mode", "commit", "--output", "sarif", "--json", "--path", str(root))
    assert out.returncode == 2
    error = json.loads(out.stdout)
    assert error["error_code"] == "USAGE" and "--output sarif" in error["error_message"]
    same = run_semfora("ci", "--mode", "commit", "--output", "json", "--json", "--path", str(root))
    assert same.returncode == 1 and json.loads(same.stdout)["status"] == "changes_requested"
    # `overview` and `diff` printed JSON without a word when another format was asked for too.
    for command in (("overview", "--format", "toon"), ("diff", "--format", "text")):
        both = run_semfora(*command, "--json", "--path", str(root))
        assert both.returncode == 2, command
        assert json.loads(both.stdout)["error_message"] == (
            f"--json and --format {command[-1]} ask for two formats; keep one (--json is --format json)"
        )
    assert run_semfora("overview", "--format", "json", "--json", "--path", str(root)).returncode == 0


def test_sarif_locations_are_uris_for_names_with_spaces_and_accents(make_repo) -> None:
    """`my pkg/módulo #1.py` went into SARIF as it is: not a URI (a space, and `#` starts a
    fragment), so code scanning could not place the alert."""
    root = make_repo({"my pkg/módulo #1.py": "def ping(host):\n    return host\n"})
    (root / "my pkg" / "módulo #1.py").write_text(
        "import os\n\n\ndef ping(host):\n    return os.system(host)\n"
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "shell out")
    out = run_semfora("ci", "--mode", "commit", "--no-model", "--output", "sarif", "--path", str(root))
    assert out.returncode == 1, out.stderr
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in json.loads(out.stdout)["runs"][0]["results"]
    }
    assert uris == {"my%20pkg/m%C3%B3dulo%20%231.py"}


def test_a_tree_or_a_blob_given_as_the_commit_says_what_it_names(make_repo) -> None:
    """`semfora ci --mode commit --commit HEAD^{tree}` said "unknown revision 'HEAD^{tree}'", though
    git knows it well: it is a tree, and the fix is to pass a commit."""
    root = _repo(make_repo)
    for ref, kind in (("HEAD^{tree}", "tree"), ("HEAD:svc.py", "blob")):
        proc = run_semfora("ci", "--mode", "commit", "--commit", ref, "--path", str(root))
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert f"error[DIFF_REF_NOT_FOUND]: '{ref}' names a {kind}, not a commit" in proc.stderr
        assert "unknown revision" not in proc.stderr and "pass a commit" in proc.stderr
    tree = run_semfora("ci", "--mode", "pr", "--base", "HEAD~1^{tree}", "--json", "--path", str(root))
    assert json.loads(tree.stdout)["error_message"].startswith("'HEAD~1^{tree}' names a tree, not a commit")


def test_a_pull_request_with_nothing_of_its_own_says_why(make_repo) -> None:
    """`ci --mode pr --base HEAD --head HEAD~1` (the two the wrong way round) approved with only
    'nothing changed'; it now says the head is already part of the base and how to swap them."""
    root = _repo(make_repo)
    swapped = run_semfora("ci", "--mode", "pr", "--base", "HEAD", "--head", "HEAD~1", "--path", str(root))
    assert swapped.returncode == 0, swapped.stderr
    assert (
        "note: HEAD~1 is already part of HEAD: it has no changes of its own to review (the wrong way "
        "round? --base is the branch the pull request merges into: --base HEAD~1 --head HEAD)"
    ) in swapped.stdout
    same = run_semfora("ci", "--mode", "pr", "--base", "HEAD", "--json", "--path", str(root))
    assert any(n.startswith("HEAD and HEAD are the same commit") for n in json.loads(same.stdout)["notes"])
    real = run_semfora("ci", "--mode", "pr", "--base", "HEAD~1", "--json", "--path", str(root))
    assert not [n for n in json.loads(real.stdout)["notes"] if "nothing to review" in n or "part of" in n]
