"""The edit protocol: parsing replies and applying SEARCH/REPLACE and SYMBOL blocks."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.edits.protocol import EditBlockError, apply_blocks, parse_blocks

REPLY = """I will change the return value.

```python
src/app.py
<<<<<<< SEARCH
def f():
    return 1
=======
def f():
    return 2
>>>>>>> REPLACE
```

And add a file:

docs/new.md
<<<<<<< SEARCH
=======
# New
>>>>>>> REPLACE
"""


def _reader(files: dict[str, str]):
    return lambda rel: files.get(rel)


def test_parses_fenced_and_unfenced_blocks_with_paths() -> None:
    blocks = parse_blocks(REPLY)
    assert [(b.path, b.kind) for b in blocks] == [("src/app.py", "search"), ("docs/new.md", "search")]
    assert blocks[0].search == "def f():\n    return 1\n"
    assert blocks[0].replace == "def f():\n    return 2\n"
    assert blocks[1].search == "" and blocks[1].replace == "# New\n"


def test_crlf_reply_parses_like_lf() -> None:
    assert parse_blocks(REPLY.replace("\n", "\r\n")) == parse_blocks(REPLY)


def test_truncated_block_fails_the_whole_reply() -> None:
    text = REPLY + "\nsrc/app.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n"
    with pytest.raises(EditBlockError) as info:
        parse_blocks(text)
    assert info.value.failures[0].reason == "truncated"
    assert "nothing was staged" in info.value.message


def test_block_without_any_path_is_rejected() -> None:
    with pytest.raises(EditBlockError) as info:
        parse_blocks("<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n")
    assert info.value.failures[0].reason == "missing_path"


def test_exact_then_whitespace_then_blank_line_tolerant(tmp_path: Path) -> None:
    files = {"a.py": "def f():\n    if x:\n        return  1\n    return 0\n"}
    # whitespace-normalised: the model collapsed the double space and lost one indent level
    blocks = parse_blocks(
        "a.py\n<<<<<<< SEARCH\n    if x:\n    return 1\n=======\n    if y:\n    return 2\n>>>>>>> REPLACE\n"
    )
    out = apply_blocks(tmp_path, blocks, _reader(files))
    assert out["a.py"] == "def f():\n    if y:\n    return 2\n    return 0\n"
    # a spurious leading blank line in SEARCH is tolerated
    blocks = parse_blocks("a.py\n<<<<<<< SEARCH\n\n    return 0\n=======\n\n    return 3\n>>>>>>> REPLACE\n")
    out = apply_blocks(tmp_path, blocks, _reader(files))
    assert out["a.py"].endswith("    return 3\n")
    assert out["a.py"].count("\n") == files["a.py"].count("\n")


def test_whitespace_match_reindents_the_replacement(tmp_path: Path) -> None:
    files = {"a.py": "class A:\n    def m(self):\n        return 1\n"}
    blocks = parse_blocks(
        "a.py\n<<<<<<< SEARCH\ndef m(self):\n    return 1\n=======\ndef m(self):\n    return 42\n>>>>>>> REPLACE\n"
    )
    out = apply_blocks(tmp_path, blocks, _reader(files))
    assert out["a.py"] == "class A:\n    def m(self):\n        return 42\n"


def test_two_matches_is_an_error_with_locations(tmp_path: Path) -> None:
    files = {"a.py": "x = 1\ny = 2\nx = 1\n"}
    blocks = parse_blocks("a.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 5\n>>>>>>> REPLACE\n")
    with pytest.raises(EditBlockError) as info:
        apply_blocks(tmp_path, blocks, _reader(files))
    failure = info.value.failures[0]
    assert failure.reason == "ambiguous" and "lines 1, 3" in failure.message


def test_no_match_reports_nearest_real_lines_for_retry(tmp_path: Path) -> None:
    files = {"a.py": "".join(f"line{i} = {i}\n" for i in range(40)) + "def target():\n    return 'real'\n"}
    blocks = parse_blocks(
        "a.py\n<<<<<<< SEARCH\ndef target():\n    return 'imagined'\n=======\npass\n>>>>>>> REPLACE\n"
    )
    with pytest.raises(EditBlockError) as info:
        apply_blocks(tmp_path, blocks, _reader(files))
    failure = info.value.failures[0]
    assert failure.reason == "no_match"
    assert "41| def target():" in failure.nearest
    prompt = info.value.retry_prompt()
    assert "Block 1 for a.py" in prompt and "return 'real'" in prompt


def test_any_failed_block_means_nothing_applies(tmp_path: Path) -> None:
    files = {"a.py": "a = 1\n", "b.py": "b = 1\n"}
    text = (
        "a.py\n<<<<<<< SEARCH\na = 1\n=======\na = 2\n>>>>>>> REPLACE\n"
        "b.py\n<<<<<<< SEARCH\nnot there\n=======\nb = 2\n>>>>>>> REPLACE\n"
    )
    with pytest.raises(EditBlockError) as info:
        apply_blocks(tmp_path, parse_blocks(text), _reader(files))
    assert [f.index for f in info.value.failures] == [2]
    assert files == {"a.py": "a = 1\n", "b.py": "b = 1\n"}


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../outside.py", "outside_repo"),
        ("/etc/passwd", "outside_repo"),
        (".env", "secret_path"),
        ("keys/server.pem", "secret_path"),
        (".git/config", "outside_repo"),
        ("missing.py", "unknown_file"),
    ],
)
def test_hostile_or_unknown_targets_are_typed_failures(tmp_path: Path, path: str, reason: str) -> None:
    blocks = parse_blocks(f"{path}\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n")
    with pytest.raises(EditBlockError) as info:
        apply_blocks(tmp_path, blocks, _reader({}))
    assert info.value.failures[0].reason == reason


def test_empty_search_refuses_to_clobber_an_existing_file(tmp_path: Path) -> None:
    blocks = parse_blocks("a.py\n<<<<<<< SEARCH\n=======\nnew\n>>>>>>> REPLACE\n")
    with pytest.raises(EditBlockError) as info:
        apply_blocks(tmp_path, blocks, _reader({"a.py": "old\n"}))
    assert info.value.failures[0].reason == "file_exists"


def test_sequential_blocks_on_one_file_see_each_other(tmp_path: Path) -> None:
    text = (
        "a.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n"
        "<<<<<<< SEARCH\nx = 2\n=======\nx = 3\n>>>>>>> REPLACE\n"
    )
    out = apply_blocks(tmp_path, parse_blocks(text), _reader({"a.py": "x = 1\n"}))
    assert out == {"a.py": "x = 3\n"}


PY = '''import os


class Greeter:
    """Says hello."""

    @staticmethod
    def hello(name):
        return "hi " + name

    def bye(self):
        return "bye"


def main():
    return Greeter.hello("x")
'''


def test_symbol_block_replaces_a_method_and_keeps_its_indentation(tmp_path: Path) -> None:
    text = 'app.py\n<<<<<<< SYMBOL Greeter.bye\ndef bye(self):\n    return "see you"\n>>>>>>> REPLACE\n'
    out = apply_blocks(tmp_path, parse_blocks(text), _reader({"app.py": PY}))
    assert '    def bye(self):\n        return "see you"\n' in out["app.py"]
    assert 'return "bye"' not in out["app.py"]
    assert out["app.py"].count("\n") == PY.count("\n")


def test_symbol_block_with_decorator_replaces_the_decorated_definition(tmp_path: Path) -> None:
    text = (
        "app.py\n<<<<<<< SYMBOL Greeter.hello\n@staticmethod\ndef hello(name):\n"
        "    return 'hello ' + name\n>>>>>>> REPLACE\n"
    )
    out = apply_blocks(tmp_path, parse_blocks(text), _reader({"app.py": PY}))
    assert out["app.py"].count("@staticmethod") == 1
    assert "    @staticmethod\n    def hello(name):\n        return 'hello ' + name\n" in out["app.py"]


def test_unknown_symbol_lists_close_names(tmp_path: Path) -> None:
    text = "app.py\n<<<<<<< SYMBOL Greeter.hellp\ndef x():\n    pass\n>>>>>>> REPLACE\n"
    with pytest.raises(EditBlockError) as info:
        apply_blocks(tmp_path, parse_blocks(text), _reader({"app.py": PY}))
    failure = info.value.failures[0]
    assert failure.reason == "symbol_not_found" and "Greeter.hello" in failure.nearest


def _git_repo(root: Path, files: dict[str, str]) -> None:
    import subprocess

    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)


def _unknown_file_message(root: Path, path: str, files: dict[str, str], **kwargs: object) -> str:
    blocks = parse_blocks(f"{path}\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n")
    with pytest.raises(EditBlockError) as info:
        apply_blocks(root, blocks, _reader(files), **kwargs)  # type: ignore[arg-type]
    failure = info.value.failures[0]
    assert failure.reason == "unknown_file"
    return failure.message


def test_a_path_written_from_a_subdirectory_names_the_real_file(tmp_path: Path) -> None:
    # The model wrote the path relative to the package directory; its retry learns the real one.
    files = {"src/pkg/util.py": "x = 1\n", "src/pkg/other.py": "y = 1\n"}
    _git_repo(tmp_path, files)
    message = _unknown_file_message(tmp_path, "pkg/util.py", files)
    assert message == "pkg/util.py does not exist in the repository; did you mean src/pkg/util.py?"


def test_a_misspelt_path_names_the_closest_files_with_its_extension(tmp_path: Path) -> None:
    files = {"pkg/utils.py": "x = 1\n", "pkg/utils.md": "notes\n", "other/zzz.py": "z = 1\n"}
    _git_repo(tmp_path, files)
    assert _unknown_file_message(tmp_path, "pkg/utlis.py", files).endswith("did you mean pkg/utils.py?")


def test_no_hint_for_a_path_like_nothing_and_none_that_the_sandbox_refuses(tmp_path: Path) -> None:
    files = {"private/util.py": "x = 1\n", "app.py": "a = 1\n"}
    _git_repo(tmp_path, files)
    assert (
        _unknown_file_message(tmp_path, "zzz/qqq.py", files) == "zzz/qqq.py does not exist in the repository"
    )
    # A denied file is never named, even when it is the only one that fits.
    message = _unknown_file_message(tmp_path, "util.py", files, deny=["private/*"])
    assert "private" not in message and "did you mean" not in message
    assert "did you mean private/util.py?" in _unknown_file_message(tmp_path, "util.py", files)


@pytest.mark.parametrize(
    ("line", "path"),
    [
        ("docs/release notes.md", "docs/release notes.md"),
        ("release notes.md", "release notes.md"),
        ("`notes/the plan.md`", "notes/the plan.md"),
        ("**docs/a b.md**", "docs/a b.md"),
        ("docs/x y.md:", "docs/x y.md"),
    ],
)
def test_a_new_file_path_with_spaces_is_a_path(line: str, path: str) -> None:
    """Spaced paths counted only for files that existed: a new one was 'no file path'."""
    blocks = parse_blocks(f"{line}\n<<<<<<< SEARCH\n=======\nhello\n>>>>>>> REPLACE\n")
    assert [b.path for b in blocks] == [path]


@pytest.mark.parametrize("line", ["Create setup.py", "Then update the caller in app.py:", "Apply it now."])
def test_a_sentence_above_a_block_is_not_a_path(line: str) -> None:
    with pytest.raises(EditBlockError) as err:
        parse_blocks(f"{line}\n<<<<<<< SEARCH\n=======\nhello\n>>>>>>> REPLACE\n")
    assert err.value.failures[0].reason == "missing_path"


@pytest.mark.parametrize(
    "line", ["- src/app.py", "* `src/app.py`", "2. src/app.py", "1) **src/app.py**:", "+ File: src/app.py"]
)
def test_a_path_written_as_a_list_item_is_a_path(line: str) -> None:
    """A model that lists its files ("- src/app.py" above each block) got 'no file path'."""
    blocks = parse_blocks(f"{line}\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n")
    assert [b.path for b in blocks] == ["src/app.py"]


def test_a_windows_path_names_the_file_under_its_folders(tmp_path: Path) -> None:
    """`docs\\index.md` above a block created a file named 'docs\\index.md' in the root."""
    blocks = parse_blocks("docs\\guide\\new page.md\n<<<<<<< SEARCH\n=======\nhello\n>>>>>>> REPLACE\n")
    assert [b.path for b in blocks] == ["docs/guide/new page.md"]
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("x = 1\n")
    blocks = parse_blocks("src\\app.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n")
    assert apply_blocks(tmp_path, blocks, _reader({"src/app.py": "x = 1\n"})) == {"src/app.py": "x = 2\n"}


def test_a_second_empty_search_for_a_file_the_reply_creates_says_so(tmp_path: Path) -> None:
    """It said the file 'already exists and is not empty', of a file that was nowhere on disk."""
    reply = "".join(
        f"docs/new.md\n<<<<<<< SEARCH\n=======\n{text}\n>>>>>>> REPLACE\n\n" for text in ("# New", "more")
    )
    with pytest.raises(EditBlockError) as err:
        apply_blocks(tmp_path, parse_blocks(reply), _reader({}))
    failure = err.value.failures[0]
    assert (failure.index, failure.reason) == (2, "file_exists")
    assert failure.message.startswith("block 1 of this reply already creates docs/new.md")
