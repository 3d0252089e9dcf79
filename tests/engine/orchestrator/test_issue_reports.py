"""Issue reports as tasks: what an issue's editor adds (links, HTML, screenshots, checklists) is
not the report's meaning, what the program printed points at the code that printed it, a link to
a line of the repository points at that line's definition, and a report's "example" and "test"
do not turn the pack towards tests and examples."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from engine.config import load_settings
from engine.index.indexer import index_repository
from engine.orchestrator.anchors import clean_report, extract_anchors, links, quoted_messages, split_pasted
from engine.orchestrator.budget import Priority
from engine.orchestrator.context.rank import asks_for_tests, is_report
from engine.orchestrator.core import Orchestrator
from engine.orchestrator.intent import Intent, classify_intent
from engine.repo.layout import RepoLayout

# A command-line toolkit shaped like click: the option help (where the fix goes), a pipeline
# example about images, and tests full of the report's words.
CORE = '''"""Commands, options and their help."""
import logging

log = logging.getLogger("toolkit.server")


class Option:
    """A command-line option."""

    def __init__(self, name, default=None, show_default=False, help=None):
        self.name = name
        self.default = default
        self.show_default = show_default
        self.help = help

    def get_help_record(self, ctx):
        """The option's line in the help page, its default displayed when show_default is set."""
        extra = []
        if self.show_default and self.default:
            extra.append(f"default: {self.default}")
        help = self.help or ""
        if extra:
            help = f"{help}  [{'; '.join(extra)}]"
        return self.name, help

    def get_default(self, ctx):
        """The value used when the option is not given."""
        return self.default


def handle_request(request):
    """Run one request; an error escaping it is logged, never raised."""
    try:
        return request.run()
    except Exception:
        log.error("Uncaught exception while handling %s", request, exc_info=True)
        return None
'''

IMAGEPIPE = '''"""An example pipeline: open, transform and display images."""


def open_image(path):
    """Open an image file (png, jpeg) for the pipeline."""
    return {"path": path, "image": path, "width": 653}


def display_image(image):
    """Display the image in a window of the image's width."""
    print("image", image["image"], "width", image["width"], "alt", "png")


def resize_image(image, width):
    """Resize the image to a new width, keeping its aspect."""
    image["width"] = width
    return image
'''

TESTS = '''from toolkit.core import Option


def test_show_default_example():
    """Example: the default is displayed in the help when show_default is set."""
    opt = Option("--name", default="x", show_default=True)
    assert "default: x" in opt.get_help_record(None)[1]


def test_show_default_not_displayed_example():
    """Example: no default displayed when show_default is off."""
    opt = Option("--name", default="x")
    assert "default" not in opt.get_help_record(None)[1]
'''

FILES = {
    "toolkit/__init__.py": "",
    "toolkit/core.py": CORE,
    "examples/imagepipe.py": IMAGEPIPE,
    "tests/test_options.py": TESTS,
}

# The shape of a real report (pallets/click#2500): a title, a reproduction, a screenshot as HTML
# with a URL, an environment section.
EMPTY_DEFAULT_REPORT = """Empty string default values are not displayed

If an option has a default value of `""`, the `show_default` option does not display anything.

Reproducible example:
```
import toolkit

opt = toolkit.Option("--test_value", default="", show_default=True)
print(opt)
```

Expected to see a default displayed. Actual behavior:
<img width="653" alt="image" src="https://user-images.githubusercontent.com/53453358/235223998-5e387b8b.png">

Environment:

- Python version: 3.11.3
- Toolkit version: 8.0.3
"""

LOGGED_REPORT = """500 error when a request fails

With 6.5.1 I am getting a 500 and this in the log:

```
2025-06-11 23:12:48,612 - toolkit.server - ERROR - Uncaught exception while handling <Request>
Traceback (most recent call last):
  File "/usr/local/lib/python3.12/site-packages/other/routing.py", line 255, in dispatch
    request = make_request(start_line, headers)
ValueError: bad start line
```
"""

LINKED_REPORT = """The default is read twice

Looking at https://github.com/example/toolkit/blob/6f79daafe868b8ef20baecdcb45d12299529ed2e/toolkit/core.py#L27
the default is computed on every call; it should be cached.
"""


def _index(make_repo: Callable[..., Path]) -> tuple[RepoLayout, object]:
    root = make_repo(FILES)
    layout = RepoLayout.for_path(root)
    cfg = load_settings(layout.root).settings
    index_repository(layout, cfg)
    return layout, cfg


def test_report_markup_is_not_the_report() -> None:
    text = clean_report(
        EMPTY_DEFAULT_REPORT + "\n- [x] I've checked the docs and closed issues\n<!-- template -->"
    )
    for noise in ("https", "githubusercontent", "png", "<img", "I've checked", "template"):
        assert noise not in text, noise
    # what the reporter wrote stays, pasted code included
    assert "show_default" in text and 'toolkit.Option("--test_value"' in text
    # a markdown link keeps its text; a traceback's <module> is not HTML
    assert clean_report("see [the docs](https://x.org/d) here") == "see the docs here"
    assert "<module>" in clean_report('```\n  File "a.py", line 1, in <module>\n```')


def test_a_link_to_repository_code_is_an_anchor_with_its_line() -> None:
    assert links(LINKED_REPORT) == [("toolkit/core.py", 27)]
    anchors = extract_anchors(LINKED_REPORT)
    assert [(a.path, a.line) for a in anchors.links] == [("toolkit/core.py", 27)]
    assert not any("github" in a.text for a in anchors.items if a.kind != "link")


def test_messages_the_program_printed_are_phrases_to_look_up() -> None:
    assert "uncaught exception while handling" in quoted_messages(LOGGED_REPORT)
    assert "bad start line" in quoted_messages(LOGGED_REPORT)
    # a formatted value ends the phrase: the code has a placeholder there
    assert quoted_messages("TimeoutError: Operation timed out after 5 seconds") == [
        "operation timed out after"
    ]


def test_a_report_saying_example_and_test_is_not_about_tests() -> None:
    for request in ("add a test for the empty default", "where are the examples of pipelines"):
        assert not is_report(request, 0) and asks_for_tests(request, [], report=False)
    assert asks_for_tests("fix the fixture", ["tests/conftest.py"], report=False)
    prose, pasted = split_pasted(clean_report(EMPTY_DEFAULT_REPORT))
    assert is_report(prose, len(pasted))
    assert not asks_for_tests(prose, [], report=True)


def test_a_report_with_a_screenshot_and_an_example_gets_the_code_to_change(make_repo) -> None:
    layout, cfg = _index(make_repo)
    pack = Orchestrator(layout, cfg).build_context(EMPTY_DEFAULT_REPORT, budget=1200)
    code = [i for i in pack.items if i.kind == "source"]
    names = [i.symbol for i in code]
    # The screenshot's words (image, png, width, alt) and the report's "example" pull towards
    # the image pipeline example and the tests; the help record is what has to change.
    targets = [i for i in code if i.priority == Priority.CRITICAL]
    assert "Option.get_help_record" in [i.symbol for i in targets], names
    first = names.index("Option.get_help_record")
    assert all(i.file == "toolkit/core.py" for i in code[: first + 1]), names
    assert not [i for i in targets if not i.file.startswith("toolkit/")], names


def test_a_logged_message_points_at_the_code_that_logs_it(make_repo) -> None:
    layout, cfg = _index(make_repo)
    pack = Orchestrator(layout, cfg).build_context(LOGGED_REPORT, budget=1200)
    code = [i for i in pack.items if i.kind == "source"]
    lead = code[0]
    assert lead.symbol == "handle_request", [i.symbol for i in code]
    assert "spells the message the task quotes" in lead.reason


def test_a_linked_line_brings_its_definition(make_repo) -> None:
    layout, cfg = _index(make_repo)
    pack = Orchestrator(layout, cfg).build_context(LINKED_REPORT, budget=1200)
    linked = [i for i in pack.items if i.kind == "source" and i.symbol == "Option.get_default"]
    assert linked and "linked in the task (`toolkit/core.py#L27`)" in linked[0].reason


def test_a_report_asks_for_a_fix() -> None:
    """A report (paragraphs, pasted code) is an edit, whatever its story says ("where", "caller
    of", "security scan"); a leading verb still decides."""
    for report in (
        EMPTY_DEFAULT_REPORT,
        LOGGED_REPORT,
        "Where it breaks\n\nThe caller of run() passes None.",
    ):
        assert classify_intent(report).intent == Intent.EDIT, report
    assert classify_intent("explain why this fails\n\n```\nValueError\n```").intent == Intent.EXPLAIN
    assert classify_intent("where is the help page built").intent == Intent.LOCATE


def test_the_environment_a_report_lists_is_not_its_words() -> None:
    text = clean_report(
        "It breaks\n\nEnvironment:\n- Python version: 3.11.3\n- Click version: 8.0.3\nrich==13.7.1\n"
    )
    assert "version" not in text and "Environment" not in text and "rich" not in text
    assert "Use version 2.0 of the API" in clean_report("Use version 2.0 of the API")


# A test runner's own code (where the fix goes) and its tests, which say the task's words more often.
RUNNER_REPORT = '''"""How a failed test is reported."""


def format_failure(excinfo, hidden):
    """The lines shown for a failure; frames marked hidden are left out of the group's traceback."""
    frames = [f for f in excinfo.frames if f not in hidden]
    group = excinfo.group
    lines = [f"raised {type(excinfo.value).__name__}"]
    for sub in group.exceptions:
        lines.append(f"  sub-exception {sub!r}")
    lines.append(f"  last frame {frames[-1]}")
    return lines
'''

RUNNER_TESTS = '''from runner.report import format_failure


def test_group_raises_with_hidden_frames_crash():
    """A test raises an exception group with hidden frames: the crash report."""
    group = raise_group(hidden=True)
    assert format_failure(group, hidden=group.frames)


def test_group_raises_exception_group_crash_lines():
    """When a test raises an exception group, the crash lines name each sub-exception."""
    group = raise_group(hidden=False)
    assert "sub-exception" in format_failure(group, hidden=[])[1]


def test_group_hidden_frames_raises_group():
    """Hidden frames of a group: the test raises, the group crash is reported."""
    group = raise_group(hidden=True)
    assert format_failure(group, hidden=[])
'''


def test_a_fix_about_what_a_test_raises_gets_the_runner_code_not_its_tests(make_repo) -> None:
    """A testing tool's fix says "test" for the user's test: the tests of the tool, which repeat
    the fix's words, count as tests (less than the code), and the code to change leads the pack."""
    task = "Fixed crash when a test raises an exception group whose frames are all hidden."
    root = make_repo(
        {"runner/__init__.py": "", "runner/report.py": RUNNER_REPORT, "tests/test_report.py": RUNNER_TESTS}
    )
    layout = RepoLayout.for_path(root)
    cfg = load_settings(layout.root).settings
    index_repository(layout, cfg)
    pack = Orchestrator(layout, cfg).build_context(task, budget=600)
    code = [i.symbol for i in pack.items if i.kind == "source"]
    assert code and code[0] == "format_failure", code
    assert not asks_for_tests(task, [], report=False)
    # a request that acts on tests still gets them
    assert asks_for_tests("add a test for the hidden frames of a group", [], report=False)
