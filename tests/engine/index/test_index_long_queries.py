"""Long queries (issue reports) and the rescoring: the rare words decide, one prose word naming a symbol does not."""

from __future__ import annotations

from engine.index.hybrid import LONG_QUERY_TERMS, search
from engine.index.terms import stem, task_terms, tokens

HTTP = '''"""A small HTTP client."""


def post(url, data=None):
    """Send a POST request."""
    return request("post", url, data=data)


def request(method, url, data=None):
    """Build and send a request."""
    return Session().send(method, url, data)


class Session:
    def send(self, method, url, data):
        """Send the request and follow redirects."""
        response = transport(method, url, data)
        return self.follow_redirects(response, data)

    def follow_redirects(self, response, data):
        """Follow 301, 302, 307 and 308 answers; 307 and 308 resend the same body."""
        while response.status in (301, 302, 307, 308):
            if response.status in (307, 308) and hasattr(data, "__next__"):
                # a generator body was consumed by the first attempt: it cannot be rewound
                data = rewind(data)
            response = transport("get", response.location, data)
        return response


def transport(method, url, data):
    """Write the request on the wire."""
    return Wire().write(method, url, data)
'''

FILLER = {
    f"client/extra_{n}.py": (
        f'def helper_{n}(value):\n    """Normalise a post value, a request value or a header {n}."""\n'
        f"    return str(value).strip()\n"
    )
    for n in range(12)
}

REPORT = (
    "Hello, thanks for the library. We are using it in a service that uploads files and today we "
    "noticed something that looks like a regression after upgrading. When I POST with a generator "
    "as the data and the server answers with a 307 temporary redirect, the second request is sent "
    "with an empty body, because the generator was already consumed by the first attempt. It "
    "should raise a clear error that the body cannot be rewound instead of silently resending nothing."
)


def test_a_long_report_is_searched_by_its_rare_words(indexed_repo) -> None:
    layout, settings = indexed_repo({"client/http.py": HTTP, **FILLER})
    assert len(set(tokens(REPORT))) > LONG_QUERY_TERMS
    hits = search(layout, settings, REPORT, mode="hybrid", limit=5)
    names = [h.symbol for h in hits]
    # The fix goes where 307, consumed, generator and rewound are: not into `post`, which only
    # shares the word POST with the report.
    assert names[0] == "Session.follow_redirects", names
    assert names.index("post") > 0 if "post" in names else True
    assert hits[0].sources["symbols"] is None  # no name lookup from a prose word of a long query


def test_a_short_query_still_looks_a_plain_word_up_as_a_name(indexed_repo) -> None:
    layout, settings = indexed_repo({"client/http.py": HTTP, **FILLER})
    hits = search(layout, settings, "post", mode="hybrid", limit=3)
    assert hits[0].symbol == "post" and hits[0].sources["symbols"] == 1


def test_task_terms_weigh_rare_words_and_ignore_versions_and_glue() -> None:
    frequencies = {"post": 40, "generator": 3, "307": 1, "body": 30, "server": 25, "clear": 20}

    def df(words):  # type: ignore[no-untyped-def]
        return 1000, {w: frequencies.get(w, 0) for w in words}

    terms = task_terms(
        "When I POST a generator body on Python 3.11.2 the server answers 307, expected 200", df
    )
    order = sorted(terms.weights, key=lambda s: -terms.weights[s])
    assert order[:2] == ["307", "generator"]  # the rarest words lead
    assert "11" not in terms.words.values() and "expected" not in terms.words.values()
    assert "200" not in terms.weights  # absent from the index: it can find nothing
    assert stem("redirects") == stem("redirected") == stem("redirect")
    assert stem("cookies") == stem("cookie") and stem("bodies") == stem("body")
    assert tokens("resolve_redirects(getUserById)") == ["resolv", "redirect", "get", "user", "by", "id"]


def test_pasted_output_lends_its_words_once_and_never_its_numbers() -> None:
    def df(words):  # type: ignore[no-untyped-def]
        return 1000, dict.fromkeys(words, 5)

    log = "\n".join(f"12:00:{i:02d} GET /items/{i} status=500 slow_query" for i in range(50))
    terms = task_terms("the item list is slow", df, pasted=log)
    assert "500" not in terms.weights and "12" not in terms.weights
    # fifty log lines say "get" fifty times; the prose's own words still weigh more
    assert terms.weights[stem("get")] < terms.weights[stem("slow")]
    assert terms.weights[stem("query")] > 0


def test_a_reports_title_weighs_more_than_its_story() -> None:
    def df(words):  # type: ignore[no-untyped-def]
        return 1000, dict.fromkeys(words, 5)

    text = (
        "Empty defaults are not displayed\n\nThe help shows nothing; the help text and the default are lost."
    )
    plain = task_terms(text, df)
    titled = task_terms(text, df, title="Empty defaults are not displayed")
    ratio = titled.weights[stem("default")] / titled.weights[stem("help")]
    assert ratio > plain.weights[stem("default")] / plain.weights[stem("help")]


def test_in_a_report_words_no_definition_is_named_with_do_not_weigh() -> None:
    def df(words):  # type: ignore[no-untyped-def]
        return 1000, dict.fromkeys(words, 3)

    named = {"redirect": 4, "body": 2}

    def names(words):  # type: ignore[no-untyped-def]
        return {w: named.get(w, 0) for w in words}

    text = "After the upgrade a regression: the 307 redirect sends an empty body in our scenario"
    terms = task_terms(text, df, names=names)
    kept = set(terms.words.values())
    assert {"redirect", "body", "307"} <= kept  # the code's names, and a number, stay
    assert not kept & {"regression", "scenario", "upgrade"}  # prose only: rare, but not the point
    # a report none of whose words names anything keeps its words
    assert task_terms("regression in our scenario", df, names=lambda ws: dict.fromkeys(ws, 0)).weights


def test_a_long_report_is_searched_by_the_codes_vocabulary_first(indexed_repo) -> None:
    prose = (
        "Somewhat bewildering regression noticed yesterday afternoon during quarterly "
        "reconciliation spreadsheets rehearsal: apparently the unfortunate circumstance "
        "persists intermittently whenever "
    )
    # the prose's rare words are in the index, but only in a comment
    notes = f"def changelog_entry():\n    # {prose}\n    return None\n"
    layout, settings = indexed_repo({"client/http.py": HTTP, "client/notes.py": notes, **FILLER})
    hits = search(layout, settings, prose + REPORT, mode="hybrid", limit=5)
    assert hits[0].symbol == "Session.follow_redirects", [h.symbol for h in hits]
