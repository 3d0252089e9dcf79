"""Bytes → edit text → bytes is the identity, whatever endings a file mixes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from engine.edits.textformat import decode, encode

_LINE = st.text(
    alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=12
)


@given(
    st.lists(st.tuples(_LINE, st.sampled_from(["\n", "\r\n"])), max_size=40),
    st.booleans(),
    st.booleans(),
)
def test_an_unedited_file_encodes_back_to_its_own_bytes(lines, bom, final) -> None:  # type: ignore[no-untyped-def]
    body = "".join(line + end for line, end in lines)
    if not final and body:
        body = body[: -len(lines[-1][1])]
    data = (b"\xef\xbb\xbf" if bom else b"") + body.encode("utf-8")
    text, fmt = decode(data)
    assert "\r\n" not in text
    assert encode(text, fmt, text) == data


@given(st.lists(st.tuples(_LINE, st.sampled_from(["\n", "\r\n"])), min_size=2, max_size=40), st.data())
def test_lines_an_edit_does_not_touch_keep_their_endings(lines, data) -> None:  # type: ignore[no-untyped-def]
    raw = "".join(line + end for line, end in lines).encode("utf-8")
    text, fmt = decode(raw)
    index = data.draw(st.integers(0, len(lines) - 1))
    edited_lines = [line for line, _end in lines]
    edited_lines.insert(index, "brand new line")
    out = encode("\n".join(edited_lines) + "\n", fmt, text).decode("utf-8")
    kept = out.split("brand new line", 1)
    before, after = kept[0], kept[1].split("\n", 1)[1] if "\n" in kept[1] else ""
    assert before == "".join(line + end for line, end in lines[:index])
    assert after == "".join(line + end for line, end in lines[index:])
