"""What a repository path is, by its name alone: source, test, docs, example or generated.

One lexical rule shared by chunking, ranking, CI review and the context gatherer, so that
``src/test/java/FooTest.java``, ``app/tests.py`` and ``pkg/spec/a_spec.rb`` get one answer
everywhere. It never touches the disk: resolving a path through the file system (symlinks,
``..``, outside the root) is the read sandbox's job, which calls this on the resolved path.
"""

from __future__ import annotations

import enum
import re
from functools import lru_cache


class PathKind(enum.StrEnum):
    SOURCE = "source"
    TEST = "test"
    DOCS = "docs"
    EXAMPLE = "example"
    GENERATED = "generated"
    # Resolved kinds: only ``engine.policy.sandbox.classify`` (which follows the real path)
    # returns these; ``classify_path`` below judges names only and never does.
    SECRET = "secret"
    OUTSIDE = "outside"
    GIT_INTERNAL = "git-internal"


# What rankers count as the project's own code; tests, docs and examples match many words of a
# task and are weighed down unless the task asks for them.
NON_SOURCE_KINDS = frozenset({PathKind.TEST, PathKind.DOCS, PathKind.EXAMPLE})


# Directories that hold tests wherever they sit. ``test/`` is not among them: inside a package it
# is often library code (Django's ``django/test/`` is the test client users import), so it counts
# only at the root or under ``src/`` (Maven and Gradle's ``src/test/``), below.
_TEST_DIRS = r"tests|__tests__|spec|specs|__specs__"
# ``testing/`` at the root is pytest's own layout (testing/python/collect.py is a test module);
# anywhere else it is a library (``numpy/testing``, Go's ``src/testing``).
_TEST_DIR = re.compile(rf"(^|/)({_TEST_DIRS})/|^(src/)?test/|^testing/")
# File names that are tests in their language: test_x.py, x_test.go, tests.py, conftest.py,
# x.test.ts, x.spec.js, x_spec.rb, FooTest.java, FooTests.cs, FooTest.php, FooSpec.scala.
_TEST_FILE = re.compile(
    r"(^|/)("
    r"test_[^/]*\.\w+|[^/]*_tests?\.\w+|tests\.py|conftest\.py"
    r"|[^/]*\.(test|spec)\.\w+|[^/]*_spec\.\w+"
    r"|[A-Z][^/]*(Test|Tests|Spec|IT)\.(java|kt|kts|cs|php|scala|groovy|swift)"
    r")$"
)
_DOCS_DIR = re.compile(r"(^|/)(docs?|documentation)/")
_DOCS_FILE = re.compile(r"\.(md|markdown|rst|txt|adoc)$", re.IGNORECASE)
_EXAMPLE_DIR = re.compile(r"(^|/)(examples?|samples?|demos?|tutorials?)/")
# Directory names of vendored third-party code, at any depth (``src/pip/_vendor/``): `semfora ci`
# sets their files apart (``review.vendored_dirs``). Not ``extern``: setuptools' ``extern`` is its
# own import shim, and ``packages`` is a monorepo's own code more often than a vendored copy.
VENDORED_DIRS = (
    "vendor",
    "_vendor",
    "vendored",
    "_vendored",
    "third_party",
    "thirdparty",
    "third-party",
    "node_modules",
    "bower_components",
)
_GENERATED = re.compile(
    r"(^|/)(node_modules|vendor|dist|build|third_party)/"
    r"|_pb2(_grpc)?\.pyi?$|\.pb\.go$|\.min\.(js|css)$|\.generated\.\w+$|(^|/)package-lock\.json$"
)


@lru_cache(maxsize=65536)
def classify_path(rel: str) -> PathKind:
    """The kind of a repository-relative POSIX path (``a/b.py``), by name only.

    Order matters: generated and vendored code first (never treated as the project's own),
    then tests (a test inside ``docs/`` is still a test), then examples, then docs.
    """
    if _GENERATED.search(rel):
        return PathKind.GENERATED
    if _TEST_DIR.search(rel) or _TEST_FILE.search(rel):
        return PathKind.TEST
    if _EXAMPLE_DIR.search(rel):
        return PathKind.EXAMPLE
    if _DOCS_DIR.search(rel) or _DOCS_FILE.search(rel):
        return PathKind.DOCS
    return PathKind.SOURCE


def is_test_path(rel: str) -> bool:
    """Test code by the usual conventions of its language (see ``classify_path``)."""
    return classify_path(rel) is PathKind.TEST


def is_non_source(rel: str) -> bool:
    """Tests, docs and examples (see ``NON_SOURCE_KINDS``)."""
    return classify_path(rel) in NON_SOURCE_KINDS
