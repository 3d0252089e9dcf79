"""The context benchmark's scoring rules: what counts as the model having a symbol's code.

These rules decide the figures the context work is tuned against, so each loophole a pack could
use to look better than it is (a signature in a summary, a class summary spanning a method, a
placeholder, a same-named method elsewhere in the file) is pinned here.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.bench import pack_metrics as pm
from tests.bench.bench_context import Unit, fill
from tests.bench.tasksets import SETS, load_file

SOURCE = '''import os


class Session:
    """A session."""

    @property
    def name(self) -> str:
        return self._name

    def resolve_redirects(self, resp, req, stream=False):
        """Receive a Response and yield redirects.

        More words here.
        """
        hist = []
        url = self.get_redirect_target(resp)
        previous_fragment = urlparse(req.url).fragment
        while url:
            prepared_request = req.copy()
            hist.append(resp)
        return hist


class Other:
    def resolve_redirects(self, resp, req, stream=False):
        return None
'''


def gold(symbol: str = "Session.resolve_redirects", start: int = 11, end: int = 22) -> pm.GoldSpan:
    return pm.gold_span("src/s.py", symbol, start, end, SOURCE)


def lines(first: int, last: int) -> str:
    return "\n".join(SOURCE.splitlines()[first - 1 : last])


def item(
    text: str, kind: str = "source", first: int | None = 11, last: int | None = 22, **kw: object
) -> dict:
    return {
        "kind": kind,
        "file": "src/s.py",
        "symbol": kw.get("symbol"),
        "start_line": first,
        "end_line": last,
        "text": text,
    }


def test_gold_span_reads_definition_and_body_past_the_docstring() -> None:
    g = gold()
    assert g.def_line == "def resolve_redirects(self, resp, req, stream=False):"
    assert g.body[0] == "hist = []"  # the docstring is not body
    assert len(g.body) == pm.BODY_LINES


def test_definition_line_skips_decorators() -> None:
    g = gold("Session.name", 7, 9)
    assert g.def_line_no == 8 and g.def_line.startswith("def name")


def test_full_source_counts_for_code_and_body() -> None:
    items = [item(lines(11, 22))]
    assert pm.code_covered(gold(), items) and pm.body_covered(gold(), items)


def test_signature_in_a_summary_passes_the_issue_rule_but_not_the_guard() -> None:
    digest = "def resolve_redirects(self, resp, req, stream=False):\nReceive a Response and yield redirects."
    items = [item(digest, kind="summary")]
    assert pm.code_covered(gold(), items)
    assert not pm.body_covered(gold(), items)


def test_docstring_quoted_verbatim_is_still_not_the_body() -> None:
    items = [item(lines(11, 15), kind="summary")]
    assert not pm.body_covered(gold(), items)


def test_class_summary_spanning_a_method_is_digest_only() -> None:
    items = [item('class Session:\n    """A session."""', kind="summary", first=4, last=22, symbol="Session")]
    assert pm.digest_covered(gold(), items)
    assert not pm.code_covered(gold(), items)
    assert pm.file_covered("src/s.py", items)


def test_elided_middle_still_counts_but_a_placeholder_does_not() -> None:
    head = lines(11, 20) + "\n        ... [1 line elided] ...\n" + lines(22, 22)
    assert pm.body_covered(gold(), [item(head)])
    placeholder = "def resolve_redirects(self, resp, req, stream=False):\n    ...  # body elided"
    assert not pm.body_covered(gold(), [item(placeholder)])


def test_same_named_method_of_another_class_does_not_count() -> None:
    other = item(lines(26, 27), first=26, last=27)
    assert not pm.code_covered(gold(), [other])


def test_item_of_another_file_does_not_count() -> None:
    wrong = dict(item(lines(11, 22)), file="src/other.py")
    assert not pm.code_covered(gold(), [wrong]) and not pm.file_covered("src/s.py", [wrong])


def test_numbered_lines_match() -> None:
    numbered = "\n".join(f"{n:4d} | {text}" for n, text in enumerate(SOURCE.splitlines()[10:22], 11))
    assert pm.body_covered(gold(), [item(numbered)])


def test_overview_never_covers() -> None:
    ov = {
        "kind": "overview",
        "file": "src/s.py",
        "symbol": None,
        "start_line": 1,
        "end_line": 99,
        "text": SOURCE,
    }
    assert not pm.code_covered(gold(), [ov]) and not pm.digest_covered(gold(), [ov])


def test_need_request_asks_for_named_gold_only() -> None:
    shown = item(
        "url = self.resolve_redirects(resp, req)", kind="summary", first=30, last=31, symbol="Session.send"
    )
    assert pm.need_request([gold()], [shown]) == ["resolve_redirects"]
    qualified = dict(shown, text="see Session.resolve_redirects")
    assert pm.need_request([gold()], [qualified]) == ["Session.resolve_redirects"]
    assert pm.need_request([gold()], [item("nothing relevant", kind="summary", first=30, last=31)]) == []
    assert pm.need_request([gold()], [item(lines(11, 22))]) == []  # already has the code


def test_brace_language_body_starts_after_the_opening_brace() -> None:
    js = "res.send = function send(body) {\n  // comment\n  var chunk = body;\n  return this;\n};\n"
    g = pm.gold_span("lib/response.js", "res.send", 1, 5, js)
    assert g.def_line.startswith("res.send") and g.body == ("var chunk = body;", "return this;", "};")
    php = "    public function push(\n        $a\n    ) {\n        $x = 1;\n    }\n"
    g = pm.gold_span("src/A.php", "A.push", 1, 5, php)
    assert g.body == ("$x = 1;", "}")


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=1, max_value=120), min_size=1, max_size=30),
    budget=st.integers(min_value=0, max_value=4000),
    cut=st.booleans(),
)
def test_baseline_fill_never_exceeds_the_budget(sizes: list[int], budget: int, cut: bool) -> None:
    units = [
        Unit(f"f{n}.py", 1, size, "\n".join("x = 1  # padding" for _ in range(size)))
        for n, size in enumerate(sizes)
    ]
    items, used = fill(units, budget, cut_last=cut)
    assert used <= budget
    for it in items:
        assert it["text"].count("\n") + 1 == it["end_line"] - it["start_line"] + 1


def test_task_files_are_well_formed() -> None:
    """Every task of every set names a corpus, a query and gold with file and symbol; ids are unique."""
    seen: set[str] = set()
    for task_set in SETS.values():
        for path, heldout in [(p, False) for p in task_set.public] + [(p, True) for p in task_set.heldout]:
            json.loads(path.read_text(encoding="utf-8"))
            for task in load_file(path, task_set.name, heldout):
                assert task.id not in seen, task.id
                seen.add(task.id)
                assert task.query.strip() and task.gold and task.corpus
                assert task.kind in ("real", "synthetic")
    assert seen


# Projects whose history the hidden held-out sets use: real tasks must come from other projects.
EXCLUDED_PROJECTS = (
    "requests",
    "flask",
    "xarray",
    "astropy",
    "pytest",
    "sphinx",
    "seaborn",
    "pylint",
    "sympy",
)


def test_context_set_composition() -> None:
    """The issue's set: >= 150 tasks, >= 6 repositories, >= 3 languages, >= 60 real tasks from other
    projects' history (each with its commits, text source and a recorded hash per gold), and a held-out
    third split by corpus and kind."""
    from tests.bench.corpora import CORPORA

    tasks = SETS["newset"].load()
    assert len(tasks) >= 150
    assert all(t.corpus in CORPORA for t in tasks)
    assert len({t.corpus.split("-")[0] for t in tasks}) >= 6
    real = [t for t in tasks if t.kind == "real"]
    assert len(real) >= 60
    for t in real:
        assert not any(t.source["repo"].lower().endswith("/" + p) for p in EXCLUDED_PROJECTS), t.id
        assert len(t.source["fix_commit"]) == 40 and len(t.source["parent_commit"]) == 40, t.id
        assert t.source["text_from"] and t.source["pinned"], t.id
        assert all(g.sha256 and g.start_line for g in t.gold), t.id
    extensions = {g.file.rsplit(".", 1)[-1] for t in tasks for g in t.gold}
    assert {"py", "js"} <= extensions and extensions & {"go", "rb", "php", "java"}
    held = [t for t in tasks if t.heldout]
    assert abs(len(held) / len(tasks) - 1 / 3) < 0.03
    for kind in ("real", "synthetic"):
        part = [t for t in tasks if t.kind == kind]
        assert abs(sum(t.heldout for t in part) / len(part) - 1 / 3) < 0.05


def test_issue_report_set_composition() -> None:
    """The issue-report set: >= 40 real tasks over >= 4 projects outside the hidden sets' projects, each
    a GitHub issue's own text (long prose, not a changelog line), with commits, a recorded hash per gold,
    a held-out third split by project, and no fix that the context set holds out."""
    from tests.bench.corpora import CORPORA

    tasks = SETS["issues"].load()
    assert len(tasks) >= 40
    assert all(t.corpus in CORPORA and t.kind == "real" for t in tasks)
    projects = {t.source["repo"] for t in tasks}
    assert len(projects) >= 4
    for t in tasks:
        assert not any(t.source["repo"].lower().endswith("/" + p) for p in EXCLUDED_PROJECTS), t.id
        assert "/issues/" in t.source["text_from"], t.id
        assert len(t.source["fix_commit"]) == 40 and len(t.source["parent_commit"]) == 40, t.id
        assert all(g.sha256 and g.start_line for g in t.gold), t.id
    # issue reports are long: the median task is several times a changelog line
    assert sorted(len(t.query) for t in tasks)[len(tasks) // 2] >= 400
    held = [t for t in tasks if t.heldout]
    assert abs(len(held) / len(tasks) - 1 / 3) < 0.05
    held_context = {t.source.get("fix_commit") for t in SETS["newset"].load() if t.heldout}
    assert not {t.source["fix_commit"] for t in tasks} & held_context
