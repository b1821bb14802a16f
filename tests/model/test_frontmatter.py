"""Format-preserving frontmatter edits: only the edited key's text changes, byte for byte."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tiered_memory.errors import NoteParseError
from tiered_memory.model.frontmatter import edit_frontmatter
from tiered_memory.model.note import parse

HAND = (
    "\ufeff---\r\n"
    "title: Geodesy  # my own title\r\n"
    "tags: [geodesy,survey]\r\n"
    "aliases:\r\n"
    "    - WGS84\r\n"
    "    - 'World Geodetic System'\r\n"
    "# notes below are mine\r\n"
    'created: "2026-10-01"\r\n'
    "---\r\n"
    "# Geodesy\r\n"
    "We use #geodesy/datum WGS84.\r\n"
)


def test_changing_one_key_keeps_every_other_byte() -> None:
    out = edit_frontmatter(HAND, {"created": "2026-10-02"})
    assert out == HAND.replace('created: "2026-10-01"', "created: '2026-10-02'")


def test_a_replaced_flow_list_stays_a_flow_list() -> None:
    out = edit_frontmatter(HAND, {"tags": ["geodesy", "survey", "gps"]})
    assert out == HAND.replace("tags: [geodesy,survey]", "tags: [geodesy, survey, gps]")


def test_a_new_key_is_appended_with_the_files_line_endings() -> None:
    out = edit_frontmatter(HAND, {"status": "completed"})
    assert out == HAND.replace("---\r\n# Geodesy", "status: completed\r\n---\r\n# Geodesy")
    assert "\n" not in out.replace("\r\n", "")


def test_deleting_a_key_leaves_the_comments_around_it() -> None:
    out = edit_frontmatter(HAND, {"aliases": None})
    assert out == HAND.replace("aliases:\r\n    - WGS84\r\n    - 'World Geodetic System'\r\n", "")


def test_no_change_returns_the_same_text() -> None:
    assert edit_frontmatter(HAND, {}) is HAND
    assert edit_frontmatter(HAND, {"created": "2026-10-01", "missing": None}) is HAND


def test_a_note_without_frontmatter_gets_a_block_only_when_a_key_is_set() -> None:
    plain = "\ufeff# Survey log\r\nline\r\n"
    assert edit_frontmatter(plain, {"status": None}) is plain
    out = edit_frontmatter(plain, {"status": "active"})
    assert out == "\ufeff---\r\nstatus: active\r\n---\r\n# Survey log\r\nline\r\n"
    assert parse(out, "a.md").body == "# Survey log\r\nline\r\n"


def test_removing_the_last_key_removes_the_block() -> None:
    assert edit_frontmatter("\ufeff---\nstatus: active\n---\nbody\n", {"status": None}) == "\ufeffbody\n"
    commented = "---\n# keep me\nstatus: active\n---\nbody\n"
    assert edit_frontmatter(commented, {"status": None}) == "---\n# keep me\n---\nbody\n"


def test_duplicate_keys_keep_one_the_last_yaml_reads() -> None:
    out = edit_frontmatter("---\na: 1\nb: 2\na: 3\n---\n", {"a": 4})
    assert out == "---\nb: 2\na: 4\n---\n"


def test_values_yaml_would_coerce_are_written_quoted() -> None:
    out = edit_frontmatter("---\nx: 1\n---\n", {"answer": "yes", "version": "1.10", "when": "2026-01-01"})
    assert parse(out, "a.md").meta == {"x": 1, "answer": "yes", "version": "1.10", "when": "2026-01-01"}


def test_multiline_values_and_indented_blocks() -> None:
    text = "---\nsummary: |\n  line one\n  line two\n\n# after\nnext: x\n---\n"
    out = edit_frontmatter(text, {"summary": "new\ntext"})
    assert out == "---\nsummary: |-\n  new\n  text\n\n# after\nnext: x\n---\n"
    nested = "---\nmeta:\n  a: 1\n  b: [1, 2]\nafter: 2\n---\n"
    assert edit_frontmatter(nested, {"after": 3}) == nested.replace("after: 2", "after: 3")


def test_anchors_shared_between_keys_fall_back_to_a_correct_rewrite() -> None:
    out = edit_frontmatter("---\na: &x [1]\nb: *x\n---\nbody", {"a": None})
    assert parse(out, "a.md").meta == {"b": [1]}
    assert out.endswith("---\nbody")


@pytest.mark.parametrize(
    "text", ["---\na: [\n---\nbody", "---\n- a\n- b\n---\nbody", "---\nno closing fence\nbody"]
)
def test_unreadable_frontmatter_is_refused(text: str) -> None:
    with pytest.raises(NoteParseError):
        edit_frontmatter(text, {"status": "active"})


# ---- property: random hand-written notes ---------------------------------------------------------

_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)
_CJK = st.text(alphabet="测绘大地坐标系统笔记", min_size=1, max_size=4)
_KEY = st.one_of(_WORD, _CJK, st.sampled_from(["title", "tags", "aliases", "created", "updated", "id"]))
_PLAIN = st.one_of(_WORD, _CJK, st.builds(lambda a, b: f"{a} {b}", _WORD, _CJK))


@dataclass
class Entry:
    key: str
    text: str  # every line of the entry, each ending in "\n" (converted to the note's line ending)


def _scalar_text(draw: st.DrawFn) -> str:
    value = draw(_PLAIN)
    style = draw(st.sampled_from(["plain", "single", "double", "number", "date", "null"]))
    return {
        "plain": value,
        "single": f"'{value}'",
        "double": json.dumps(value, ensure_ascii=False),
        "number": str(draw(st.integers(0, 999))),
        "date": "2026-11-20",
        "null": "",
    }[style]


@st.composite
def entries(draw: st.DrawFn, key: str) -> Entry:
    comment = draw(st.sampled_from(["", "  # mine", " # 注释"]))
    shape = draw(st.sampled_from(["scalar", "flow", "block", "literal"]))
    if shape == "scalar":
        return Entry(key, f"{key}: {_scalar_text(draw)}{comment}\n".replace(": \n", ":\n"))
    items = draw(st.lists(_PLAIN, min_size=0 if shape == "flow" else 1, max_size=4))
    if shape == "flow":
        sep = draw(st.sampled_from([",", ", ", " , "]))
        return Entry(key, f"{key}: [{sep.join(items)}]{comment}\n")
    if shape == "block":
        indent = " " * draw(st.sampled_from([0, 2, 4]))
        return Entry(key, f"{key}:{comment}\n" + "".join(f"{indent}- {item}\n" for item in items))
    return Entry(key, f"{key}: |\n" + "".join(f"  {item}\n" for item in items))


@st.composite
def notes(draw: st.DrawFn) -> tuple[str, list[Entry], list[str], bool]:
    """(text, entries, comment lines, has frontmatter)."""
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    bom = draw(st.sampled_from(["", "\ufeff"]))
    keys = draw(st.lists(_KEY, unique=True, max_size=6))
    items = [draw(entries(k)) for k in keys]
    comments: list[str] = []
    block = ""
    for item in items:
        if draw(st.booleans()):
            comment = f"# {draw(_PLAIN)}\n"
            comments.append(comment)
            block += comment
        block += item.text
    body = draw(
        st.sampled_from(
            [
                "",
                "# Title\nSome text with #tag and [[Link]].\n",
                "测绘笔记\n---\nnot a fence\n",
                "```\n---\ncode\n```\n",
            ]
        )
    )
    has_fm = bool(items) or draw(st.booleans())
    text = (f"---\n{block}---\n{body}" if has_fm else body).replace("\n", eol)
    return bom + text, items, comments, has_fm


_EDIT_VALUES = st.one_of(st.none(), _PLAIN, st.lists(_PLAIN, max_size=3), st.integers(0, 5))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(note=notes(), key=_KEY, value=_EDIT_VALUES)
def test_editing_one_key_changes_only_that_keys_text(
    note: tuple[str, list[Entry], list[str], bool], key: str, value: Any
) -> None:
    text, items, comments, has_fm = note
    eol = "\r\n" if "\r\n" in text else "\n"
    before = parse(text, "n.md")
    out = edit_frontmatter(text, {key: value})
    after = parse(out, "n.md")

    expected = dict(before.meta)
    if value is None:
        expected.pop(key, None)
    else:
        expected[key] = value
    assert after.meta == expected
    # (A note without frontmatter keeps its BOM in its body: parse() only strips it before a fence.)
    assert after.body.removeprefix("\ufeff") == before.body.removeprefix("\ufeff")
    assert out.startswith("\ufeff") == text.startswith("\ufeff")
    if eol == "\r\n":
        assert not re.search(r"(?<!\r)\n", out)
    else:
        assert "\r" not in out

    # Every other entry and every comment is still there, verbatim and in order.
    kept = [item.text.replace("\n", eol) for item in items if item.key != key]
    position = 0
    for fragment in kept:
        found = out.find(fragment, position)
        assert found >= 0, (fragment, out)
        position = found + len(fragment)
    for comment in comments:
        assert comment.replace("\n", eol) in out
    if not has_fm and value is None:
        assert out == text
    # Nothing outside the edited entry changed: the region where the texts differ lies inside the
    # old entry's lines (a replacement or deletion) or is a pure insertion.
    if after.has_frontmatter or not before.has_frontmatter:
        start, old_end, new_end = _changed_region(text, out)
        old_entry = next((i.text.replace("\n", eol) for i in items if i.key == key), None)
        if old_entry is not None:
            # Everything before and after the old entry's text is kept (the smallest differing
            # region alone can slide into a neighbour: deleting "a: a" beside "aa: a").
            at = _line_start_find(text, old_entry)
            assert out.startswith(text[:at]) and out.endswith(text[at + len(old_entry) :]), (text, out)
            if value is None:
                assert out == text[:at] + text[at + len(old_entry) :]  # a deletion inserts nothing
        else:
            assert start == old_end  # a pure insertion
    else:  # the last key went, and the block with it
        assert out == ("\ufeff" if text.startswith("\ufeff") else "") + before.body.removeprefix("\ufeff")


def _line_start_find(text: str, fragment: str) -> int:
    """Where `fragment` starts at the beginning of a line of `text` ("a: a" is not inside "aa: a")."""
    at = text.find(fragment)
    while at > 0 and text[at - 1] != "\n":
        at = text.find(fragment, at + 1)
    assert at >= 0, (fragment, text)
    return at


def _changed_region(old: str, new: str) -> tuple[int, int, int]:
    """(start, end in old, end in new) of the single region where two texts differ."""
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    tail = 0
    while tail < min(len(old), len(new)) - start and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    return start, len(old) - tail, len(new) - tail


@settings(max_examples=200, deadline=None)
@given(note=notes())
def test_editing_nothing_is_byte_identical(note: tuple[str, list[Entry], list[str], bool]) -> None:
    text, items, _comments, _has_fm = note
    assert edit_frontmatter(text, {}) == text
    same = {k: v for k, v in parse(text, "n.md").meta.items() if v is not None}  # None would delete
    assert edit_frontmatter(text, same) == text  # every key set to the value it has
