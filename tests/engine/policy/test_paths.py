"""One path classifier: the cases the three old classifiers disagreed on get one answer."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.policy.paths import PathKind, classify_path, is_test_path


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("src/test/java/FooTest.java", PathKind.TEST),
        ("app/tests.py", PathKind.TEST),
        ("pkg/spec/a_spec.rb", PathKind.TEST),
        ("tests/test_app.py", PathKind.TEST),
        ("test/index.js", PathKind.TEST),
        ("lib/router.test.js", PathKind.TEST),
        ("server/handler_test.go", PathKind.TEST),
        ("conftest.py", PathKind.TEST),
        ("docs/tests/test_snippets.py", PathKind.TEST),
        ("testing/python/collect.py", PathKind.TEST),  # pytest's tests live in a root testing/
        ("numpy/testing/utils.py", PathKind.SOURCE),
        ("src/testing/testing.go", PathKind.SOURCE),
        # A package's own `test` module is library code that users import.
        ("django/test/client.py", PathKind.SOURCE),
        ("lib/testing.py", PathKind.SOURCE),
        ("src/main/java/Testable.java", PathKind.SOURCE),
        ("docs/index.rst", PathKind.DOCS),
        ("CHANGES.md", PathKind.DOCS),
        ("examples/tutorial/app.py", PathKind.EXAMPLE),
        ("node_modules/a/index.js", PathKind.GENERATED),
        ("proto/api_pb2.py", PathKind.GENERATED),
    ],
)
def test_each_path_gets_one_kind(path: str, kind: PathKind) -> None:
    assert classify_path(path) is kind
    assert is_test_path(path) is (kind is PathKind.TEST)


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200))
def test_any_text_classifies_without_error(path: str) -> None:
    assert isinstance(classify_path(path), PathKind)
