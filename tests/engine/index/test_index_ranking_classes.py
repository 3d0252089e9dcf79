"""Ranking by class: tests and docs that repeat a feature's words do not push its implementation out."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.config import Settings
from engine.index import hybrid
from engine.index.fusion import SEARCH_RRF_K, TEST_WEIGHT
from engine.index.hybrid import FTS_CANDIDATES, search
from engine.repo.layout import RepoLayout

IMPL = '''"""Key rotation."""


def rotate_signing_key(store):
    """Replace the signing key and keep the old one for verification."""
    old = store.current()
    store.retire(old)
    return store.create()
'''


def _noisy_tests(n: int) -> dict[str, str]:
    """Test files that say "rotate signing key" far more often than the implementation does."""
    files = {}
    for i in range(n):
        body = "\n\n".join(
            f"def test_rotate_signing_key_{i}_{j}():\n"
            f'    """rotate signing key rotate signing key, then verify the signing key rotated."""\n'
            f"    assert rotate_signing_key(FakeStore()) is not None  # rotate signing key\n"
            for j in range(4)
        )
        files[f"tests/test_rotation_{i}.py"] = body + "\n"
    return files


def test_implementation_outranks_a_crowd_of_tests_that_repeat_its_words(indexed_repo) -> None:
    # More test chunks than FTS_CANDIDATES, each a better BM25 match than the implementation.
    files = {"keys/rotation.py": IMPL, **_noisy_tests(FTS_CANDIDATES // 4 + 4)}
    layout, settings = indexed_repo(files)
    for mode in ("fts", "hybrid"):
        hits = search(layout, settings, "how is the signing key rotated", mode=mode, limit=5)
        assert hits[0].file == "keys/rotation.py" and hits[0].symbol == "rotate_signing_key", mode
        assert hits[0].sources["fts"] == 1  # its rank among implementation chunks
        # The tests still show, below it: they are evidence too.
        assert any(h.file.startswith("tests/") for h in hits)


def test_one_hit_per_symbol(indexed_repo) -> None:
    layout, settings = indexed_repo({"keys/rotation.py": IMPL, **_noisy_tests(3)})
    hits = search(layout, settings, "rotate signing key", limit=20)
    keys = [(h.file, h.symbol, h.start_line) for h in hits]
    assert len(keys) == len(set(keys))


def test_a_long_symbol_split_into_parts_is_one_result_with_one_score(indexed_repo) -> None:
    # ~300 lines: chunked into overlapping parts, each of which matches the query.
    body = "\n".join(f"    total += ledger_balance(entry_{n})  # ledger balance" for n in range(300))
    long_fn = f'def reconcile_ledger(entries):\n    """Reconcile the ledger balance."""\n    total = 0\n{body}\n    return total\n'
    short_fn = (
        'def ledger_balance(entry):\n    """The ledger balance of one entry."""\n    return entry.amount\n'
    )
    layout, settings = indexed_repo({"books/ledger.py": long_fn + "\n\n" + short_fn})
    hits = search(layout, settings, "ledger balance", mode="fts", limit=10)
    names = [h.symbol for h in hits]
    assert names.count("reconcile_ledger") == 1
    long_hit = hits[names.index("reconcile_ledger")]
    # One list, one rank: its score is at most one rank-1 contribution, not one per part.
    assert long_hit.score <= 1.0 / (SEARCH_RRF_K + 1) + 1e-9


NESTED = '''def check_secret(raw, stored, on_upgrade=None):
    """Check a raw secret against the stored secret digest."""

    def upgrade_secret(raw_secret):
        """Re-hash the secret with the preferred hasher after a successful check."""
        on_upgrade(raw_secret)

    ok = digest(raw) == stored
    if ok and on_upgrade is not None:
        upgrade_secret(raw)
    return ok


def digest(raw):
    """Hash a secret with the preferred hasher."""
    return raw[::-1]
'''


def test_a_closure_is_not_listed_beside_the_function_around_it(indexed_repo, monkeypatch) -> None:
    layout, settings = indexed_repo({"auth/hashers.py": NESTED})
    query = "upgrade the secret after a check"
    monkeypatch.setattr(hybrid, "_without_nested", lambda ranked, limit: ranked[:limit])
    undeduped = [h.symbol for h in search(layout, settings, query, limit=10)]
    assert {"check_secret", "check_secret.upgrade_secret"} <= set(undeduped)  # both match
    monkeypatch.undo()
    hits = search(layout, settings, query, limit=10)
    names = [h.symbol for h in hits]
    # One of the two, the better ranked: the other's lines are inside (or around) it.
    assert len({"check_secret", "check_secret.upgrade_secret"} & set(names)) == 1
    assert names[0] == undeduped[0]
    spans = [(h.start_line, h.end_line) for h in hits if h.kind == "symbol"]
    for i, (lo, hi) in enumerate(spans):
        for lo2, hi2 in spans[i + 1 :]:
            assert not (lo <= lo2 and hi2 <= hi) and not (lo2 <= lo and hi <= hi2)


HASHERS = '''def make_password(password, salt=None):
    """Turn a plain-text password into a digest for storage."""
    return salt + password


def check_password(password, encoded):
    """Whether the raw password matches the stored digest."""
    return make_password(password, encoded[:4]) == encoded
'''


def _views(n: int) -> dict[str, str]:
    """Many classes with a ``get_object`` method: a name that points nowhere in particular."""
    return {
        f"views/v{i}.py": f"class View{i}:\n    def get_object(self):\n        return self.model{i}\n"
        for i in range(n)
    }


def test_a_name_made_of_two_query_words_is_found_from_plain_words(indexed_repo) -> None:
    layout, settings = indexed_repo({"auth/hashers.py": HASHERS, **_views(10)})
    # "passwords" and "checked" are inflected; the identifier joins their bare forms.
    hits = search(layout, settings, "how are passwords checked", mode="symbols", limit=5)
    assert hits and hits[0].symbol == "check_password"
    hybrid_hits = search(layout, settings, "how are passwords checked", limit=5)
    assert hybrid_hits[0].symbol == "check_password" and hybrid_hits[0].sources["symbols"] is not None
    # A composed name that ten symbols share is no pointer at all.
    assert search(layout, settings, "the object we get back", mode="symbols", limit=5) == []


_HASHERS_REPO: dict[int, tuple[RepoLayout, Settings]] = {}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    query=st.text(max_size=300)
    | st.lists(
        st.sampled_from(["passwords", "checked", "indexes", "hashing", "get", "AND", '"', "__"]), max_size=40
    ).map(" ".join)
)
def test_any_query_composes_names_without_error(indexed_repo, query) -> None:
    # One repository for every example (the fixture lives as long as the test): a repository
    # per example cost an index build each and left ~340 descriptors open per worker.
    if id(indexed_repo) not in _HASHERS_REPO:
        _HASHERS_REPO.clear()
        _HASHERS_REPO[id(indexed_repo)] = indexed_repo({"auth/hashers.py": HASHERS})
    layout, settings_ = _HASHERS_REPO[id(indexed_repo)]
    hits = search(layout, settings_, query, mode="symbols", limit=10, record_metrics=False)
    assert len(hits) <= 10


def test_a_composed_name_matching_an_assigned_js_function_does_not_crash(indexed_repo) -> None:
    """`res.sendfile = function (...)` is indexed with bare name `sendfile`: the words "send" and
    "file" compose that name, and the lookup must find it rather than fail on its dotted name."""
    js = "var res = module.exports = {};\nres.sendfile = function (path, options) {\n  return path;\n};\n"
    layout, settings_ = indexed_repo({"lib/response.js": js})
    hits = search(layout, settings_, "sending a file must refuse a relative path", mode="symbols", limit=5)
    assert hits and hits[0].symbol == "res.sendfile"


def test_the_test_discount_is_applied_once(indexed_repo) -> None:
    """A test that says exactly what the implementation says is worth TEST_WEIGHT of it, not
    TEST_WEIGHT squared: the fused order already discounted it, so the rescoring discounts only
    its own (lexical) opinion (before, it scored 0.82 against the implementation's 2.0)."""
    body = IMPL.split("\n\n\n", 1)[1]  # the function alone
    layout, settings = indexed_repo(
        {"keys/rotation.py": IMPL, "tests/test_rotation.py": body.replace("def rotate_", "def test_rotate_")}
    )
    hits = search(layout, settings, "rotate the signing key and retire the old one", mode="hybrid", limit=5)
    by_file = {h.file: h for h in hits}
    impl, test = by_file["keys/rotation.py"], by_file["tests/test_rotation.py"]
    assert hits[0] is impl  # the implementation first, as before
    assert test.score >= TEST_WEIGHT * impl.score, (test.score, impl.score)
