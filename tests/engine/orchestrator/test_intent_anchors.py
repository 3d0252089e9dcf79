"""Intent rules and anchor extraction on requests a user would type."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.orchestrator.anchors import extract_anchors
from engine.orchestrator.intent import Intent, classify_intent, is_debugging


@pytest.mark.parametrize(
    ("task", "intent"),
    [
        ("Fix the redirect loop in Session.resolve_redirects", Intent.EDIT),
        ("add a timeout parameter to fetch()", Intent.EDIT),
        ("Rename make_response to build_response everywhere", Intent.REFACTOR),
        ("please refactor the config loader", Intent.REFACTOR),
        ("Where is url_for defined?", Intent.LOCATE),
        ("which file handles CSRF tokens", Intent.LOCATE),
        ("How does blueprint registration work?", Intent.EXPLAIN),
        ("explain SessionRedirectMixin", Intent.EXPLAIN),
        ("review the auth module", Intent.REVIEW),
        ("are there any security problems in the upload view", Intent.REVIEW),
        ("hello there", Intent.GENERAL),
        ("url_for builds the wrong URL for an external endpoint", Intent.EDIT),
        ("After upgrading, the progress bar hangs when the generator raises", Intent.EDIT),
    ],
)
def test_intent_rules(task: str, intent: Intent) -> None:
    assert classify_intent(task).intent == intent


def test_debugging_detection() -> None:
    assert is_debugging("why does login fail with a traceback")
    assert not is_debugging("explain the router")


def test_anchor_kinds() -> None:
    a = extract_anchors(
        'Fix Session.request() in @src/app/session.py so "get_redirect_target" and '
        "`HTTPAdapter` handle @Flask.make_response; see utils/helpers.py"
    )
    kinds = {x.text: x.kind for x in a.items}
    assert kinds["src/app/session.py"] == "file_mention"
    assert kinds["Flask.make_response"] == "symbol_mention"
    assert kinds["Session.request"] == "call"
    assert kinds["get_redirect_target"] == "snake"
    assert kinds["HTTPAdapter"] == "camel"
    assert kinds["utils/helpers.py"] == "path"
    assert "src/app/session.py" in a.paths and "utils/helpers.py" in a.paths
    assert a.symbols[0] == "Flask.make_response"  # @mentions first
    assert "fix" not in [w.lower() for w in a.words]


def test_a_quoted_mention_holds_a_path_with_spaces() -> None:
    a = extract_anchors('explain @"src dir/grüße.py" and @app.py')
    kinds = {x.text: x.kind for x in a.items}
    assert kinds["src dir/grüße.py"] == "file_mention" and kinds["app.py"] == "file_mention"
    assert "src" not in kinds and "dir/grüße.py" not in kinds


def test_pasted_code_and_tracebacks() -> None:
    task = (
        "Uploading fails:\n\n```python\nclient.post(url, data=chunks())\nprint(result)\n```\n\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/site-packages/client/sessions.py", line 31, in resolve_redirects\n'
        "    at sendRequest (/app/node_modules/client/lib/http.js:120:7)\n"
    )
    a = extract_anchors(task)
    frames = [(f.text, f.path, f.line) for f in a.frames]
    assert frames == [
        ("resolve_redirects", "/usr/lib/python3/site-packages/client/sessions.py", 31),
        ("sendRequest", "/app/node_modules/client/lib/http.js", 120),
    ]
    kinds = {x.text: x.kind for x in a.items if x.kind != "frame"}
    assert kinds["client.post"] == "snippet" and kinds["print"] == "snippet"
    assert "print" not in a.of("call")  # a call in pasted code is not a name the user pointed at
    from engine.orchestrator.anchors import search_text

    text = search_text(task)
    assert "site-packages" not in text and "most recent call" not in text and "resolve_redirects" in text


def test_plain_words_and_snake_case() -> None:
    a = extract_anchors("where does the csrf_token get validated for blueprint views")
    assert "csrf_token" in a.symbols
    assert {"validated", "blueprint", "views"} <= set(a.words)
    assert a.search_query().startswith("csrf_token")


@given(st.text(max_size=300))
def test_never_crashes_and_never_duplicates(task: str) -> None:
    a = extract_anchors(task)
    texts = [x.text for x in a.items]
    assert len(texts) == len(set(texts))
    classify_intent(task)
