"""Whole turns against the fake Anthropic API: what was sent, NEED rounds, edit retries, staging."""

from __future__ import annotations

import json
import threading

import pytest

from engine.edits.session import EditSession
from engine.index.indexer import index_repository
from engine.llm.base import ModelUnavailable
from engine.llm.select import make_reasoner
from engine.orchestrator.core import MAX_NEED_ROUNDS, Orchestrator
from engine.orchestrator.runlog import load_run
from engine.tokens import estimate_tokens
from tests.engine.orchestrator.conftest import ENV_SECRET, PEM_SECRET, TOKEN_SECRET
from tests.fakes.fixtures import DUMMY_API_KEY

GOOD_EDIT = """I will apply the discount after tax.

src/shop/cart.py
<<<<<<< SEARCH
        sub = apply_discount(self.subtotal(), code)
        return sub + tax_for(sub)
=======
        sub = self.subtotal()
        return apply_discount(sub + tax_for(sub), code)
>>>>>>> REPLACE
"""

SYMBOL_EDIT = """src/shop/pricing.py
<<<<<<< SYMBOL tax_for
def tax_for(amount):
    \"\"\"Tax owed on an amount (20%).\"\"\"
    return round(amount * 0.2, 2)
>>>>>>> REPLACE
"""

MISMATCH = """src/shop/cart.py
<<<<<<< SEARCH
        sub = apply_discount(self.subtotal(), promo)
=======
        sub = 0
>>>>>>> REPLACE
"""

BAD_REPLIES = {
    "truncated": "src/shop/cart.py\n<<<<<<< SEARCH\n        sub = apply_discount(self.subtotal(), code)\n=======\n",
    "unknown_file": "src/shop/nothere.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n",
    "outside_repo": "../outside.py\n<<<<<<< SEARCH\n=======\nprint('escape')\n>>>>>>> REPLACE\n",
    "matches_twice": "src/shop/pricing.py\n<<<<<<< SEARCH\n    return round(amount, 2)\n=======\n"
    "    return amount\n>>>>>>> REPLACE\n",
    "one_good_one_bad": GOOD_EDIT + "\n" + MISMATCH,
}


def _orch(layout, cfg, **kw) -> Orchestrator:
    return Orchestrator(layout, cfg, make_reasoner(cfg), **kw)


def _session_files(layout, cfg) -> list[str]:
    return [f.path for f in EditSession.load_or_create(layout, cfg).files()]


def test_sent_request_is_budgeted_cached_and_secret_free(shop, fake_anthropic) -> None:
    layout, cfg = shop
    fake_anthropic.reply(GOOD_EDIT)
    streamed: list[str] = []
    result = _orch(layout, cfg).run_turn(
        "Fix Cart.total so the discount applies after tax; the API_TOKEN lives in @.env and config.pem",
        on_text=streamed.append,
        budget=1500,
    )
    assert result.outcome == "staged", result.errors
    assert "".join(streamed) == result.reply == GOOD_EDIT
    (req,) = fake_anthropic.message_requests()
    sent = req.all_text
    for secret in (ENV_SECRET, PEM_SECRET, TOKEN_SECRET, DUMMY_API_KEY):
        assert secret not in sent
    # Everything sent fits the curated budget plus the reserve for the system prompt.
    assert result.pack.total_tokens <= 1500
    assert estimate_tokens(sent) <= 1500 + cfg.budget.reserved_for_system
    system = req.body["system"]
    assert isinstance(system, list) and "cache_control" in system[-1]
    assert "<<<<<<< SYMBOL" in system[0]["text"]
    assert all("cache_control" not in m for m in req.body["messages"])
    assert "def total(self, code=None):" in req.body["messages"][0]["content"]
    assert result.edits_staged == ("src/shop/cart.py",) and result.hunks >= 1
    assert _session_files(layout, cfg) == ["src/shop/cart.py"]
    assert (
        "apply_discount(self.subtotal(), code)" in (layout.root / "src/shop/cart.py").read_text()
    )  # not written


def test_run_log_records_the_turn_redacted(shop, fake_anthropic) -> None:
    layout, cfg = shop
    fake_anthropic.reply(f"The key {DUMMY_API_KEY} is not needed.")
    result = _orch(layout, cfg).run_turn("explain Cart.total")
    data = load_run(layout, result.run_id)
    raw = json.dumps(data)
    assert DUMMY_API_KEY not in raw
    assert data["intent"] == "explain" and data["model"] and data["outcome"] == "answered"
    assert data["items"] and all(i["reason"] and "tokens" in i for i in data["items"])
    assert all(len(i["text_preview"]) <= 830 for i in data["items"])
    assert data["usage"]["output_tokens"] > 0 and "total" in data["timings"]
    episodes = (layout.sessions_dir / "episodes.jsonl").read_text().splitlines()
    assert json.loads(episodes[-1])["run_id"] == result.run_id


def _add_discount_rules(layout, cfg) -> None:
    """Sixty small definitions about carts, totals and discounts: more relevant code than a small budget holds."""
    rules = "".join(
        f"def discount_rule_{n}(cart, code):\n"
        f'    """Apply discount code {n} to the cart total."""\n'
        f"    return cart.total(code) * {n} / 100\n\n\n"
        for n in range(60)
    )
    (layout.root / "src/shop/rules.py").write_text(rules)
    index_repository(layout, cfg)


def test_a_past_turn_left_out_of_a_full_pack_says_which(shop, fake_anthropic) -> None:
    layout, cfg = shop
    # Enough relevant code to fill the budget before the past turn (low priority, last) is offered.
    _add_discount_rules(layout, cfg)
    fake_anthropic.reply("Cart.total adds tax to the discounted subtotal.")
    _orch(layout, cfg).run_turn("explain how Cart.total applies the discount")
    pack = _orch(layout, cfg).build_context("explain how Cart.total applies the discount code", budget=600)
    memory_notes = [n for n in pack.notes if n.startswith("left out memory")]
    assert memory_notes == ["left out memory similar past turn (lexical score 0.75): over budget"], pack.notes


def test_symbol_block_is_staged(shop, fake_anthropic) -> None:
    layout, cfg = shop
    fake_anthropic.reply(SYMBOL_EDIT)
    result = _orch(layout, cfg).run_turn("make tax_for charge 20%")
    assert result.outcome == "staged" and result.edits_staged == ("src/shop/pricing.py",)


def test_need_round_is_resolved_and_visible_as_budget_item(shop, fake_anthropic) -> None:
    layout, cfg = shop
    fake_anthropic.reply("NEED:\n- payment_gateway_url\n- src/shop/pricing.py\n- .env")
    fake_anthropic.reply("Thanks, here is the answer.")
    result = _orch(layout, cfg).run_turn("explain the checkout flow")
    assert result.need_rounds == 1 and result.outcome == "answered"
    first, second = fake_anthropic.message_requests()
    followup = second.body["messages"][-1]["content"]
    assert "def payment_gateway_url" in followup and "def tax_for" in followup
    assert ENV_SECRET not in second.all_text and ".env" in followup  # reported missing, not sent
    assert {i.reason for i in result.extra_items} == {"requested by the model (NEED round 1)"}
    assert result.pack.total_tokens + sum(i.tokens for i in result.extra_items) <= result.pack.budget
    data = load_run(layout, result.run_id)
    assert data["need_rounds"][0]["symbols"] == ["payment_gateway_url"]


def test_need_with_labels_and_a_name_on_its_first_line_fetches_every_target(shop, fake_anthropic) -> None:
    # "NEED: symbols: a, b" then "files: x.py" once asked for a symbol named "symbols:" and
    # dropped the file line: the model never saw the file it asked for.
    layout, cfg = shop
    fake_anthropic.reply("NEED: symbols: payment_gateway_url\nfiles: src/shop/pricing.py")
    fake_anthropic.reply("Thanks, here is the answer.")
    statuses: list[str] = []
    result = _orch(layout, cfg).run_turn("explain the checkout flow", on_status=statuses.append)
    followup = fake_anthropic.message_requests()[1].body["messages"][-1]["content"]
    assert "def payment_gateway_url" in followup and "def tax_for" in followup
    assert "symbols:" not in followup
    assert any("asked for 1 more symbol and 1 file" in s for s in statuses), statuses
    assert result.need_rounds == 1 and result.outcome == "answered"


def test_need_is_bounded_to_two_rounds(shop, fake_anthropic) -> None:
    layout, cfg = shop
    for _ in range(MAX_NEED_ROUNDS + 1):
        fake_anthropic.reply("NEED: Cart.subtotal")
    result = _orch(layout, cfg).run_turn("explain the cart")
    assert len(fake_anthropic.message_requests()) == MAX_NEED_ROUNDS + 1
    assert result.need_rounds == MAX_NEED_ROUNDS and "after 2 rounds" in result.errors[0]


def test_failed_block_is_retried_with_nearest_lines_then_staged(shop, fake_anthropic) -> None:
    layout, cfg = shop
    fake_anthropic.reply(MISMATCH).reply(GOOD_EDIT)
    result = _orch(layout, cfg).run_turn("fix Cart.total")
    assert result.outcome == "staged" and result.edit_retries == 1
    retry = fake_anthropic.message_requests()[1].body["messages"]
    assert [m["role"] for m in retry] == ["user", "assistant", "user"]
    assert "sub = apply_discount(self.subtotal(), code)" in retry[-1]["content"]  # the nearest real line
    assert "none of them were staged" in retry[-1]["content"]


def test_the_next_turn_is_shown_what_is_staged_and_not_what_was_rejected(shop, fake_anthropic) -> None:
    """The model reads the files on disk: an edit staged by an earlier turn, which is not on
    disk yet, is in the next request (as the diff the user reviews), until it is rejected."""
    layout, cfg = shop
    fake_anthropic.reply(GOOD_EDIT).reply("Done.").reply("Done.")
    orch = _orch(layout, cfg)
    assert orch.run_turn("apply the discount after tax").outcome == "staged"
    orch.run_turn("now make the tax rate configurable")
    sent = fake_anthropic.message_requests()[1].all_text
    assert "### staged src/shop/cart.py" in sent
    # cart.py is small: the model reads it whole as it will be, not a diff and the old lines.
    assert "The whole file as it will read with them:" in sent
    assert "        return apply_discount(sub + tax_for(sub), code)" in sent
    assert "def add_item(self, name, price, qty=1):" in sent  # far from the hunk's context lines
    assert "sub = apply_discount(self.subtotal(), code)" not in sent  # the line on disk is not sent
    pack = orch.build_context("now make the tax rate configurable")
    assert [i.kind for i in pack.items if i.file == "src/shop/cart.py"] == ["staged"]
    session = EditSession.load_or_create(layout, cfg)
    session.reject_all()
    orch.run_turn("now make the tax rate configurable")
    assert "### staged" not in fake_anthropic.message_requests()[2].all_text


def test_a_secret_in_a_staged_file_shown_whole_is_masked(shop, fake_anthropic) -> None:
    """The whole staged file goes to the model: a key the edit put in it must not."""
    layout, cfg = shop
    session = EditSession.load_or_create(layout, cfg)
    block = (
        "src/shop/cart.py\n<<<<<<< SEARCH\n    def subtotal(self):\n=======\n"
        f'    api_key: str = "{ENV_SECRET}"\n\n    def subtotal(self):\n>>>>>>> REPLACE\n'
    )
    session.stage_blocks(block)
    pack = _orch(layout, cfg).build_context("use the api key in Cart")
    (staged,) = [i for i in pack.items if i.kind == "staged"]
    assert "The whole file as it will read" in staged.text and "def subtotal(self):" in staged.text
    assert ENV_SECRET not in staged.text


def test_a_large_staged_file_is_shown_as_the_diff_of_its_hunks(shop, fake_anthropic) -> None:
    """A file too large to send whole is shown as its staged diff; its code on disk still competes."""
    layout, cfg = shop
    filler = "".join(f"\n\ndef helper_{i}(x):\n    return x + {i}\n" for i in range(200))
    cart = layout.root / "src/shop/cart.py"
    cart.write_text(cart.read_text() + filler)
    fake_anthropic.reply(GOOD_EDIT)
    orch = _orch(layout, cfg)
    assert orch.run_turn("apply the discount after tax").outcome == "staged"
    pack = orch.build_context("apply the discount after tax in Cart.total")
    (staged,) = [i for i in pack.items if i.kind == "staged"]
    assert "+        return apply_discount(sub + tax_for(sub), code)" in staged.text
    assert "-        return sub + tax_for(sub)" in staged.text
    assert "helper_150" not in staged.text and "whole file" not in staged.text
    assert any(i.kind == "source" and i.file == "src/shop/cart.py" for i in pack.items)
    # The code of cart.py the pack also holds is its text on disk: the model and the reason the
    # user reads say which version each is (the reason said "the file's lines with these applied").
    assert "the code of src/shop/cart.py shown below is as on disk, without them" in staged.text
    assert staged.reason.endswith("the diff of its hunks (too long to send whole)")


def test_a_second_edit_of_a_staged_change_is_retried_against_the_staged_text(shop, fake_anthropic) -> None:
    """The model is shown the file on disk. When its next edit rewrites lines that an edit of
    an earlier turn has staged, the retry shows it the staged lines and says why, and if it
    still fails the user is told which staged hunk is in the way."""
    layout, cfg = shop
    fake_anthropic.reply(GOOD_EDIT)
    orch = _orch(layout, cfg)
    assert orch.run_turn("apply the discount after tax").outcome == "staged"
    (hunk,) = EditSession.load_or_create(layout, cfg).hunks()
    rewrite = GOOD_EDIT.replace("return apply_discount(sub + tax_for(sub), code)", "return sub")
    for _ in range(cfg.llm.edit_retries + 1):
        fake_anthropic.reply(rewrite)
    result = orch.run_turn("return the subtotal unchanged")
    assert result.outcome == "edit_failed"
    retry = fake_anthropic.message_requests()[2].body["messages"][-1]["content"]
    assert "return apply_discount(sub + tax_for(sub), code)" in retry  # the staged line
    assert "staged changes that are not on disk yet" in retry
    assert f"staged hunk #{hunk.id}" in result.errors[0]


@pytest.mark.parametrize("kind", sorted(BAD_REPLIES))
def test_malformed_replies_stage_nothing_after_bounded_retries(shop, fake_anthropic, kind: str) -> None:
    layout, cfg = shop
    for _ in range(cfg.llm.edit_retries + 1):
        fake_anthropic.reply(BAD_REPLIES[kind])
    result = _orch(layout, cfg).run_turn("fix Cart.total")
    assert result.outcome == "edit_failed" and result.errors
    assert result.edits_staged == () and _session_files(layout, cfg) == []
    assert len(fake_anthropic.message_requests()) == cfg.llm.edit_retries + 1
    assert not (layout.root.parent / "outside.py").exists()
    assert (
        ".env" not in {p.name for p in layout.root.iterdir()}
        or ENV_SECRET in (layout.root / ".env").read_text()
    )


@pytest.mark.parametrize(
    ("deny", "target"),
    [(None, ".env"), (["deploy/*.yaml"], "deploy/prod.yaml")],
    ids=["default-deny-list", "configured-deny-list"],
)
def test_an_edit_of_a_deny_listed_file_is_refused_once_without_asking_again(
    shop, fake_anthropic, deny, target
) -> None:
    layout, cfg = shop
    if deny is not None:
        cfg.edits.deny = [*cfg.edits.deny, *deny]
    reply = f"{target}\n<<<<<<< SEARCH\n=======\nSTOLEN=1\n>>>>>>> REPLACE\n"
    for _ in range(cfg.llm.edit_retries + 1):
        fake_anthropic.reply(reply)
    result = _orch(layout, cfg).run_turn("fix Cart.total")
    # One model call: a retry cannot make the write acceptable (it asked twice more, then refused).
    assert len(fake_anthropic.message_requests()) == 1
    assert result.outcome == "edit_failed" and result.edit_retries == 0
    assert result.to_json()["error_code"] == "SECRET_PATH_DENIED"
    (error,) = result.errors
    assert f"the reply edits {target}, on the secret deny-list (edits.deny)" in error
    assert "nothing was staged and the model was not asked again" in error
    assert _session_files(layout, cfg) == [] and not (layout.root / "deploy").exists()
    assert ENV_SECRET in (layout.root / ".env").read_text()


def test_rate_limit_is_retried_inside_the_turn(shop, fake_anthropic) -> None:
    layout, cfg = shop
    fake_anthropic.error(429, retry_after=0).error(529).reply("fine")
    result = _orch(layout, cfg).run_turn("explain Cart")
    assert result.reply == "fine" and len(fake_anthropic.message_requests()) == 3


def test_cancel_stops_the_turn_and_stages_nothing(shop, fake_anthropic) -> None:
    layout, cfg = shop
    fake_anthropic.reply(GOOD_EDIT, chunk_chars=4, delay=0.05)
    cancel = threading.Event()
    result = _orch(layout, cfg).run_turn("fix Cart.total", on_text=lambda _t: cancel.set(), cancel=cancel)
    assert result.outcome == "cancelled" and _session_files(layout, cfg) == []


def test_stable_prefix_is_reused_and_resume_remembers_the_session(shop, fake_anthropic) -> None:
    layout, cfg = shop
    fake_anthropic.reply("first answer").reply("second answer")
    first = _orch(layout, cfg).run_turn("explain Cart.add_item")
    assert first.usage.cache_creation_input_tokens > 0
    second = _orch(layout, cfg, resume=True).run_turn("explain Cart.add_item again")
    req = fake_anthropic.message_requests()[1]
    assert "explain Cart.add_item" in req.system_text  # session memory in the cached prefix
    assert second.usage.input_tokens > 0


def test_without_a_reasoner_a_turn_is_refused(shop) -> None:
    layout, cfg = shop
    with pytest.raises(ModelUnavailable):
        Orchestrator(layout, cfg).run_turn("explain Cart")


def test_summary_key_matches_the_summarizer(shop) -> None:
    from engine.llm.summarizer import Summarizer
    from engine.orchestrator.context import summary_cache_key

    layout, cfg = shop
    assert summary_cache_key(cfg, "abc") == Summarizer(layout, cfg).cache_key("abc", "symbol")


def test_model_summaries_arrive_in_the_background_and_serve_later_packs(
    shop, fake_anthropic, fake_ollama
) -> None:
    from engine.config import load_settings

    layout, _ = shop
    cfg = load_settings(layout.root).settings  # now pointing at the fake Ollama
    _add_discount_rules(layout, cfg)
    fake_ollama.responder = lambda _model, _prompt: "Model-written summary of this symbol."
    orch = _orch(layout, cfg)
    fake_anthropic.reply("answer")
    # A small budget that the relevant code more than fills: Cart.total and the code most like
    # the task are sent as source, Cart.total's callees in the map as summaries.
    task, budget = "explain Cart.total", 300
    before = orch.build_context(task, budget=budget)
    assert any(i.kind == "summary" for i in before.items)
    assert not any("Model-written" in i.text for i in before.items)  # a pack never waits on Ollama
    result = orch.run_turn(task, budget=budget)
    assert orch.presummary_thread is not None, [(i.kind, i.symbol) for i in result.pack.items]
    orch.presummary_thread.join(timeout=20)
    after = Orchestrator(layout, cfg).build_context(task, budget=budget)
    assert any("Model-written summary" in i.text for i in after.items if i.kind == "summary")


def test_exact_token_counting_goes_through_the_count_endpoint(shop, fake_anthropic, monkeypatch) -> None:
    from engine.config import load_settings

    layout, _ = shop
    monkeypatch.setenv("SEMFORA_LLM__EXACT_TOKEN_COUNT", "true")
    cfg = load_settings(layout.root).settings
    pack = Orchestrator(layout, cfg).build_context("explain Cart.total", budget=1200)
    counted = [r for r in fake_anthropic.requests if r.path == "/v1/messages/count_tokens"]
    assert counted and not fake_anthropic.message_requests()  # counting is not asking
    assert pack.total_tokens <= 1200


def test_a_model_failure_is_raised_typed_and_still_logged(shop, fake_anthropic) -> None:
    from engine.errors import SemforaError
    from engine.orchestrator.runlog import list_runs

    layout, cfg = shop
    fake_anthropic.error(401)
    with pytest.raises(SemforaError) as info:
        _orch(layout, cfg).run_turn("explain Cart")
    assert info.value.exit_code in (1, 3)
    (run_id,) = list_runs(layout)
    data = load_run(layout, run_id)
    assert data["outcome"] == "error" and data["errors"]
    assert DUMMY_API_KEY not in json.dumps(data)


def test_presummarize_queues_the_highest_fan_in_symbols(
    shop, fake_anthropic, fake_ollama, monkeypatch
) -> None:
    from engine.config import load_settings
    from engine.store.db import SymbolStore

    layout, _ = shop
    monkeypatch.setenv("SEMFORA_OLLAMA__PRESUMMARIZE", "true")
    cfg = load_settings(layout.root).settings
    fake_ollama.responder = lambda _model, _prompt: "A hub, summarized ahead of time."
    orch = _orch(layout, cfg)
    fake_anthropic.reply("answer")
    result = orch.run_turn("explain Cart.add_item")
    assert orch.presummary_thread is not None
    orch.presummary_thread.join(timeout=20)
    with SymbolStore(layout) as store:
        hub = store.symbols_by_name("tax_for")[0]
    assert "tax_for" not in {i.symbol for i in result.pack.items if i.kind == "summary"}
    assert (
        orch.gatherer.digests.cached_model_summary(hub.body_hash or hub.id)
        == "A hub, summarized ahead of time."
    )


def test_each_item_text_is_exactly_what_the_model_receives(shop, fake_anthropic) -> None:
    layout, cfg = shop
    fake_anthropic.reply("NEED:\n- payment_gateway_url").reply("done")
    task = "Fix Cart.total so the discount applies after tax"
    result = _orch(layout, cfg, resume=False).run_turn(task, budget=3000)
    first, second = fake_anthropic.message_requests()
    items = result.pack.to_json()["items"]
    prefix = [i["text"] for i in items if i["id"] in ("overview", "session-memory")]
    rest = [i["text"] for i in items if i["id"] not in ("overview", "session-memory")]
    assert prefix and rest and all(t.startswith("### ") for t in rest)
    # The system blocks after the system prompt are the prefix items' texts, verbatim.
    assert [b["text"] for b in first.body["system"][1:]] == prefix
    # The user message is the other items' texts, verbatim and in order, then the task.
    context = "\n".join(rest)
    assert (
        first.body["messages"][0]["content"]
        == f"## Context ({result.pack.intent})\n\n{context}\n## Task\n{task}\n"
    )
    # What a NEED round adds is sent the same way.
    need = [i.to_json()["text"] for i in result.extra_items]
    assert need and all(t in second.body["messages"][-1]["content"] for t in need)
    assert "def payment_gateway_url" in need[0]


def test_a_reply_cut_at_the_output_limit_says_so_and_the_retry_asks_for_less(shop, fake_anthropic) -> None:
    # A reply that stopped at llm.max_output_tokens ended "answered" with nothing said, and a
    # block it cut was retried with no word of why, so the model sent the same length again.
    layout, cfg = shop
    fake_anthropic.reply("The cart sums items, then " * 20, stop_reason="max_tokens")
    answered = _orch(layout, cfg).run_turn("explain the cart")
    assert answered.outcome == "answered"
    assert any("stopped at the output limit (llm.max_output_tokens = 4,000" in e for e in answered.errors)

    cut_block = GOOD_EDIT[: GOOD_EDIT.index("=======")]
    fake_anthropic.reply(cut_block, stop_reason="max_tokens").reply(GOOD_EDIT)
    statuses: list[str] = []
    staged = _orch(layout, cfg).run_turn("fix Cart.total", on_status=statuses.append)
    assert staged.outcome == "staged" and staged.errors == ()  # the last reply was whole
    retry = fake_anthropic.message_requests()[-1].body["messages"][-1]["content"]
    assert "Your reply stopped at the output limit (4,000 tokens)" in retry
    assert any("the reply stopped at the output limit" in s for s in statuses), statuses
