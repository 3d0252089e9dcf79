"""`semfora context` and `semfora ask` through the real console script."""

from __future__ import annotations

import json

from tests.conftest import run_semfora
from tests.engine.orchestrator.conftest import ENV_SECRET, SHOP_FILES
from tests.engine.orchestrator.test_turn import GOOD_EDIT, MISMATCH, SYMBOL_EDIT


def test_context_json_needs_no_model_and_respects_the_budget(make_repo) -> None:
    root = make_repo(SHOP_FILES)
    proc = run_semfora(
        "context",
        "Fix Cart.total so the discount applies after tax",
        "--path",
        str(root),
        "--budget",
        "900",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["intent"] == "edit" and data["budget"] == 900
    assert 0 < data["total_tokens"] <= 900 == data["budget"]
    first = next(i for i in data["items"] if i["kind"] != "overview")
    assert first["symbol"] == "Cart.total" and first["priority"] == "critical" and first["kind"] == "source"
    assert ENV_SECRET not in proc.stdout


def test_a_budget_above_the_window_says_why_it_was_capped(make_repo) -> None:
    """`--budget 150000` showed `/94,000 tokens` and no word why."""
    root = make_repo(SHOP_FILES)
    proc = run_semfora("context", "explain Cart.total", "--budget", "150000", "--path", str(root))
    assert proc.returncode == 0, proc.stderr
    assert "/94,000 tokens" in proc.stdout
    assert "note: budget capped at 94,000 tokens (asked 150,000): the model's window" in proc.stdout
    data = json.loads(run_semfora("context", "explain Cart.total", "--path", str(root), "--json").stdout)
    assert not [n for n in data["notes"] if "capped" in n]  # the default budget fits


def test_ask_with_a_budget_above_the_window_says_why_before_the_reply(make_repo, fake_anthropic) -> None:
    # `ask --budget 150000` showed `/94,000 tokens` in its usage line and no word why.
    root = make_repo(SHOP_FILES)
    fake_anthropic.reply("The answer.")
    proc = run_semfora("ask", "explain Cart.total", "--budget", "150000", "--path", str(root))
    assert proc.returncode == 0, proc.stderr
    assert "semfora: budget capped at 94,000 tokens (asked 150,000): the model's window" in proc.stderr
    fake_anthropic.reply("The answer.")
    as_json = run_semfora("ask", "explain Cart.total", "--budget", "150000", "--path", str(root), "--json")
    data = json.loads(as_json.stdout)
    assert data["budget"] == 94000 and any(n.startswith("budget capped at 94,000") for n in data["notes"])
    fake_anthropic.reply("The answer.")
    plain = run_semfora("ask", "explain Cart.total", "--path", str(root))  # the default budget fits
    assert plain.returncode == 0 and "capped" not in plain.stderr


def test_ask_says_what_was_off_while_its_pack_was_built(make_repo, fake_anthropic) -> None:
    """With Ollama down, `context` said vector search was off (the pack is poorer for it) and
    the app said so under the reply; `ask` printed the answer and its usage line, not a word."""
    root = make_repo(SHOP_FILES)
    fake_anthropic.reply("The answer.")
    env = {"SEMFORA_EMBEDDING": "ollama:nomic-embed-text"}  # OLLAMA_HOST is a closed port
    proc = run_semfora("ask", "explain Cart.total", "--path", str(root), env=env)
    assert proc.returncode == 0, proc.stderr
    notes = [line for line in proc.stdout.splitlines() if line.startswith("-- note: ")]
    assert notes and "vector search is off" in notes[0], proc.stdout
    assert proc.stdout.index("The answer.") < proc.stdout.index(notes[0])


def test_context_text_prints_what_would_be_sent(make_repo) -> None:
    root = make_repo(SHOP_FILES)
    proc = run_semfora("context", "explain apply_discount", cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert "<<<<<<< SEARCH" in proc.stdout and "def apply_discount" in proc.stdout
    assert "## Task\nexplain apply_discount" in proc.stdout and "-- intent explain" in proc.stdout


def test_context_bad_path_is_a_usage_error(tmp_path) -> None:
    proc = run_semfora("context", "x", "--path", str(tmp_path / "missing"), "--json")
    assert proc.returncode == 2 and json.loads(proc.stdout)["ok"] is False


def test_ask_without_a_model_exits_3_with_advice(make_repo) -> None:
    root = make_repo(SHOP_FILES)
    proc = run_semfora("ask", "explain Cart", "--path", str(root))
    assert proc.returncode == 3
    assert "error[MODEL_UNAVAILABLE]" in proc.stderr
    assert "ANTHROPIC_API_KEY" in proc.stderr and "--model" in proc.stderr


def test_ask_streams_stages_and_reports_cost(make_repo, fake_anthropic) -> None:
    root = make_repo(SHOP_FILES)
    fake_anthropic.reply(GOOD_EDIT)
    proc = run_semfora("ask", "Fix Cart.total so the discount applies after tax", "--path", str(root))
    assert proc.returncode == 0, proc.stderr
    assert "I will apply the discount after tax." in proc.stdout
    assert "staged" in proc.stdout and "src/shop/cart.py" in proc.stdout
    assert "cost $" in proc.stdout and "output" in proc.stdout
    listed = run_semfora("edits", "list", "--path", str(root), "--json")
    assert "src/shop/cart.py" in listed.stdout
    assert "apply_discount(self.subtotal(), code)" in (root / "src/shop/cart.py").read_text()


def test_ask_apply_writes_the_file(make_repo, fake_anthropic) -> None:
    root = make_repo(SHOP_FILES)
    fake_anthropic.reply(GOOD_EDIT)
    proc = run_semfora("ask", "Fix Cart.total", "--path", str(root), "--apply", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["outcome"] == "applied" and data["cost_usd"] >= 0
    assert "return apply_discount(sub + tax_for(sub), code)" in (root / "src/shop/cart.py").read_text()


def test_ask_apply_names_every_file_it_wrote_earlier_staged_hunks_included(make_repo, fake_anthropic) -> None:
    # --apply commits every pending hunk; it said "applied 1 hunk in src/shop/pricing.py"
    # while it also wrote the hunk an earlier `ask` had staged in src/shop/cart.py.
    root = make_repo(SHOP_FILES)
    fake_anthropic.reply(GOOD_EDIT)
    assert run_semfora("ask", "Fix Cart.total", "--path", str(root)).returncode == 0  # staged only
    fake_anthropic.reply(SYMBOL_EDIT)
    proc = run_semfora("ask", "make tax_for charge 20%", "--path", str(root), "--apply")
    assert proc.returncode == 0, proc.stderr
    assert "apply_discount(sub + tax_for(sub), code)" in (root / "src/shop/cart.py").read_text()
    line = next(x for x in proc.stdout.splitlines() if x.startswith("-- applied"))
    assert "2 hunks" in line and "src/shop/cart.py" in line and "src/shop/pricing.py" in line, line
    assert "(1 of them staged before this turn)" in line


def test_ask_with_unappliable_edits_exits_1(make_repo, fake_anthropic) -> None:
    root = make_repo(SHOP_FILES)
    for _ in range(3):
        fake_anthropic.reply(MISMATCH)
    proc = run_semfora("ask", "Fix Cart.total", "--path", str(root), "--json")
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert data["outcome"] == "edit_failed" and data["edits_staged"] == []


def test_ask_with_a_local_model_and_ollama_down_exits_3_but_context_works(make_repo) -> None:
    root = make_repo(SHOP_FILES)
    proc = run_semfora(
        "ask", "explain Cart", "--path", str(root), "--model", "ollama/qwen2.5-coder:7b", "--json"
    )
    assert proc.returncode == 3
    assert json.loads(proc.stdout)["error_code"] == "MODEL_UNAVAILABLE"
    assert run_semfora("context", "explain Cart", "--path", str(root), "--json").returncode == 0


def test_ask_refreshes_the_index_before_building_the_pack(make_repo, fake_anthropic) -> None:
    root = make_repo(SHOP_FILES)
    assert run_semfora("context", "explain Cart", "--path", str(root), "--json").returncode == 0  # indexes
    cart = root / "src/shop/cart.py"
    cart.write_text(cart.read_text() + "\n    def discount_first(self):\n        return 42\n")
    fake_anthropic.reply("It returns 42.")
    proc = run_semfora("ask", "explain Cart.discount_first", "--path", str(root))
    assert proc.returncode == 0, proc.stderr
    (req,) = fake_anthropic.message_requests()
    assert "def discount_first(self):" in req.all_text
