"""`semfora search`, `semfora cache stats|clear` and `semfora metrics` through the real console script."""

from __future__ import annotations

import json

from tests.conftest import ROOT, run_semfora

FILES = {
    "svc/auth.py": (
        "def should_strip_auth(request):\n"
        '    """Drop credentials before proxying."""\n'
        "    return request.host != 'internal'\n\n\n"
        "def getUserById(uid):\n"
        "    return USERS[uid]\n"
    ),
    "docs/guide.md": "# Guide\n\nCredentials are stripped before proxying.\n",
}


def test_search_json_builds_the_index_and_matches_the_contract(make_repo) -> None:
    root = make_repo(FILES)
    proc = run_semfora("search", "should strip auth", "--path", str(root), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    top = data["results"][0]
    assert top["file"] == "svc/auth.py" and top["symbol"] == "should_strip_auth"
    assert (top["start_line"], top["end_line"]) == (1, 3)
    assert set(top["sources"]) == {"fts", "vector", "symbols"} and top["sources"]["vector"] is None
    assert isinstance(top["score"], float) and "should_strip_auth" in top["snippet"]


def test_text_output_and_identifier_parts(make_repo) -> None:
    root = make_repo(FILES)
    proc = run_semfora("search", "user by id", cwd=root)
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith("svc/auth.py:6-7  getUserById")


def test_hostile_queries_are_text_not_errors(make_repo) -> None:
    root = make_repo(FILES)
    for query in ["foo(", "AND", '"', "*", "NEAR", "a:b"]:
        proc = run_semfora("search", query, "--path", str(root), "--json", "--mode", "fts")
        assert proc.returncode == 0, (query, proc.stdout, proc.stderr)
        assert "results" in json.loads(proc.stdout)


def test_vector_mode_with_vectors_off_warns_and_still_answers(make_repo) -> None:
    root = make_repo(FILES)
    proc = run_semfora("search", "credentials proxying", "--path", str(root), "--mode", "vector", "--json")
    assert proc.returncode == 0
    data = json.loads(proc.stdout)
    assert data["results"] and any("vectors are off" in w for w in data["warnings"])


def test_search_warnings_carry_the_code_errors_md_lists(make_repo) -> None:
    # `warning: vectors are off ...` had no code, unlike `warning: [INDEX_CORRUPT] ...`: a user
    # could not look it up in docs/errors.md.
    root = make_repo(FILES)
    proc = run_semfora("search", "credentials proxying", "--path", str(root), "--mode", "vector")
    assert proc.returncode == 0
    assert "warning: [VECTORS_OFF] vectors are off (search.embedding = none)" in proc.stderr
    documented = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    assert "| `VECTORS_OFF` | (warning)" in documented


def test_bad_input_exit_codes(make_repo, tmp_path) -> None:
    root = make_repo(FILES)
    proc = run_semfora("search", "x", "--path", str(tmp_path / "missing"), "--json")
    assert proc.returncode == 2 and json.loads(proc.stdout)["ok"] is False
    proc = run_semfora("search", "x", "--path", str(root), "--limit", "0")
    assert proc.returncode == 2 and proc.stderr.startswith("error[USAGE]")
    for blank in ("", "   "):
        proc = run_semfora("search", blank, "--path", str(root))
        assert proc.returncode == 2 and proc.stderr.startswith("error[USAGE]: search needs a query")
        assert "no results" not in proc.stdout
    proc = run_semfora("search", " ", "--path", str(root), "--json")
    assert proc.returncode == 2 and json.loads(proc.stdout)["error_code"] == "USAGE"


def test_cache_stats_clear_and_metrics(make_repo) -> None:
    root = make_repo(FILES)
    run_semfora("search", "should strip auth", "--path", str(root))
    run_semfora("search", "user by id", "--path", str(root))
    stats = json.loads(run_semfora("cache", "stats", "--path", str(root), "--json").stdout)
    assert stats["entries"] == 0 and stats["ttl_days"] == 30
    cleared = json.loads(run_semfora("cache", "clear", "--path", str(root), "--json").stdout)
    assert cleared == {"ok": True, "removed": 0}
    metrics = json.loads(run_semfora("metrics", "--path", str(root), "--json").stdout)
    assert metrics["level"] == "metrics" and metrics["days"][0]["searches"] == 2
    text = run_semfora("metrics", "--path", str(root)).stdout
    assert "searches" in text and "should strip auth" not in text


def test_a_hit_that_no_list_ranked_says_why_it_is_there(make_repo) -> None:
    # beta matches nothing; it is shown because it sits beside alpha, the best match.
    root = make_repo(
        {"pkg/a.py": "def alpha(x):\n    return beta(x) * 2\n\n\ndef beta(y):\n    return y + 1\n"}
    )
    lines = run_semfora("search", "alpha", "--path", str(root)).stdout.splitlines()
    beta = next(line for line in lines if line.startswith("pkg/a.py:5-6  beta"))
    assert beta.endswith("[same file as a match]"), beta
    assert not any(line.endswith("[]") for line in lines)
    data = json.loads(run_semfora("search", "alpha", "--path", str(root), "--json").stdout)
    near = next(r for r in data["results"] if r["symbol"] == "beta")
    assert near["sources"] == {"fts": None, "vector": None, "symbols": None}
