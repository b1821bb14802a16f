"""The note model: parse/render round trips (property tests), defaults for hand-written notes, helpers."""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tiered_memory.model.note import (
    CATEGORIES,
    Note,
    body_of,
    default_id,
    is_note_path,
    json_text,
    legacy_id,
    new_id,
    parse,
    render,
    settled_slug,
    slugify,
    tier_of_path,
    to_datetime,
)

PATH = "memory/long-term/knowledge_base/domains/some-note.md"

# Strings YAML would read as something other than the string if written bare.
TRICKY_STRINGS = [
    "yes",
    "no",
    "Yes",
    "NO",
    "on",
    "off",
    "true",
    "False",
    "y",
    "n",
    "1.0",
    "1",
    "-2",
    "0x1F",
    "017",
    "1_000",
    "1e3",
    ".inf",
    "-.INF",
    ".nan",
    "2024-01-01",
    "2024-01-01T10:00:00Z",
    "2024-01-01 10:00:00+02:00",
    "12:30",
    "1:20:30",
    "null",
    "Null",
    "~",
    "",
    " ",
    "  leading and trailing  ",
    "key: value",
    "a: b: c",
    "http://example.com:8080/x?y=z#frag",
    "- not a list",
    "[not, a, list]",
    "{not: a map}",
    "# not a comment",
    "value # with hash",
    "&anchor",
    "*alias",
    "!tag",
    "%directive",
    "@at",
    "`tick`",
    "'single'",
    '"double"',
    "|",
    ">",
    "---",
    "...",
    "--- x",
    "line one\nline two",
    "trailing newline\n",
    "two trailing newlines\n\n",
    "\nleading newline",
    "line with trailing space \nnext",
    "crlf\r\nline",
    "tab\there",
    "中文笔记：数据库选型",
    "日本語のメモ",
    "한국어 메모",
    "emoji 🎉 and ünïcödé",
    "zero\u200bwidth",
    "line\u2028separator",
    "nel\x85char",
    "bom\ufeffinside",
    "back\\slash",
    "control\x07bell",
]

KNOWN_KEYS = [
    "id",
    "title",
    "category",
    "tags",
    "project",
    "entities",
    "importance",
    "confidence",
    "created",
    "updated",
    "status",
    "supersedes",
    "superseded_by",
    "source",
    "expires",
]

strings = st.one_of(st.sampled_from(TRICKY_STRINGS), st.text(max_size=40))
keys = st.one_of(
    st.sampled_from(KNOWN_KEYS),
    st.sampled_from(
        ["x-custom", "obsidian_alias", "yes", "null", "1.0", "2024-01-01", "a: b", "中文键", "---"]
    ),
    st.text(max_size=20),
)
datetimes = st.one_of(
    st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1)),
    st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1)).map(
        lambda d: d.replace(tzinfo=UTC)
    ),
    st.builds(
        lambda d, minutes: d.replace(tzinfo=timezone(timedelta(minutes=minutes))),
        st.datetimes(min_value=datetime(1900, 1, 2), max_value=datetime(2200, 1, 1)),
        st.integers(-14 * 60, 14 * 60),
    ),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    strings,
    st.dates(min_value=date(1000, 1, 1)),
    datetimes,
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)),
    max_leaves=12,
)
metas = st.dictionaries(keys, values, max_size=10)

BODY_LINES = [
    "",
    "---",
    "...",
    "--- ",
    "# Heading",
    "## Sub heading",
    "key: value",
    "- item",
    "    indented code",
    "中文段落，带标点。",
    "trailing spaces   ",
    "\t tab",
    "<!-- comment -->",
]


@st.composite
def bodies(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        return draw(st.text())
    lines = draw(st.lists(st.one_of(st.sampled_from(BODY_LINES), st.text(max_size=30)), max_size=12))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    text = newline.join(lines)
    if draw(st.booleans()):
        text += newline
    if draw(st.booleans()):
        text = newline * draw(st.integers(1, 3)) + text
    return text


def assert_same_meta(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert list(got) == list(want)  # key order survives
    assert got == want
    # bool/int and date/datetime compare equal across types; the types must survive too.
    for key in want:
        assert type(got[key]) is type(want[key]), key


# ---- round trips ----------------------------------------------------------------------------


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(meta=metas, body=bodies())
@example(meta={"yes": "no", "null": "~", "version": "1.0", "day": "2024-01-01"}, body="---\n")
@example(meta={}, body="")
@example(meta={"title": "kept trailing newlines\n\n"}, body="")  # PyYAML's `|+` then `...`
@example(meta={"a": "nel\x85char", "\u2028": "x\u2029y"}, body="")  # breaks YAML folds
@example(meta={"title": "x"}, body="---\nnot: frontmatter\n---\n")
@example(meta={"unknown": {"nested": ["a", 1, None]}}, body="\r\n\r\n# Title\r\nno newline at end")
def test_render_then_parse_keeps_meta_and_body(meta: dict[str, Any], body: str) -> None:
    note = Note(path=PATH, meta=meta, body=body, has_frontmatter=True)
    text = render(note)
    back = parse(text, PATH)
    assert back.parse_warning is None, text
    assert back.has_frontmatter
    assert_same_meta(back.meta, meta)
    assert back.body == body
    # ...and rendering again is stable byte for byte.
    assert render(back) == text


@settings(max_examples=200, deadline=None)
@given(text=st.one_of(st.text(), bodies()))
def test_text_without_parsed_frontmatter_renders_back_unchanged(text: str) -> None:
    note = parse(text, PATH)
    if not note.has_frontmatter:
        # Hand-written notes (and ones whose frontmatter could not be read) are kept as they are.
        assert note.body == text
        assert note.meta == {}
        assert render(note) == text


@settings(max_examples=100, deadline=None)
@given(meta=metas, body=bodies(), update=st.dictionaries(st.sampled_from(KNOWN_KEYS), strings, max_size=3))
def test_with_meta_then_round_trip_keeps_body_and_other_keys(
    meta: dict[str, Any], body: str, update: dict[str, str]
) -> None:
    note = parse(render(Note(path=PATH, meta=meta, body=body, has_frontmatter=True)), PATH)
    changed = note.with_meta(**update)
    back = parse(render(changed), PATH)
    assert back.body == body
    for key, value in meta.items():
        if key not in update:
            assert back.meta[key] == value
    for key, value in update.items():
        assert back.meta[key] == value


TYPED_VIEWS = [
    "id",
    "title",
    "tier",
    "category",
    "status",
    "tags",
    "entities",
    "project",
    "importance",
    "confidence",
    "created",
    "updated",
    "superseded_by",
    "access_count",
    "sensitive",
    "text",
]
ODD_VALUES = st.sampled_from(
    [
        float("inf"),
        float("-inf"),
        float("nan"),
        10**30,
        -(10**30),
        1e300,
        99999999999999,
        "9999-99-99",
        [[]],
        {"a": {}},
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    meta=st.dictionaries(
        st.sampled_from([*KNOWN_KEYS, "access_count", "sensitive"]), st.one_of(values, ODD_VALUES), max_size=8
    ),
    mtime=st.one_of(st.none(), st.floats(-1e13, 1e13)),
)
@example(meta={"created": 99999999999999, "access_count": float("inf")}, mtime=None)
@example(meta={}, mtime=253402300800.0)  # year 10000
def test_typed_views_never_raise_whatever_the_frontmatter_holds(
    meta: dict[str, Any], mtime: float | None
) -> None:
    # A hand-typed value must not break indexing of the whole vault.
    note = Note(path=PATH, meta=meta, body="# Title\nbody", has_frontmatter=True, mtime=mtime)
    for name in TYPED_VIEWS:
        getattr(note, name)
    assert 0.0 <= note.importance <= 1.0
    assert 0.0 <= note.confidence <= 1.0
    assert note.access_count >= 0
    assert isinstance(note.id, str) and note.id
    assert isinstance(note.title, str)


def test_json_notes_render_their_text_unchanged() -> None:
    text = '{\n  "projects": {"falcon": {"status": "active"}}\n}'
    note = parse(text, "memory/mid-term/active_contexts.json")
    assert note.is_json
    assert note.meta == {}
    assert render(note) == text


# ---- hand-written notes ---------------------------------------------------------------------


def test_note_without_frontmatter_takes_defaults_from_path_and_mtime() -> None:
    mtime = datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC).timestamp()
    text = "Some intro line\n\n## Kafka retention settings\n\nKeep 7 days.\n"
    note = parse(text, "memory/mid-term/projects/falcon/kafka_notes.md", mtime=mtime)
    assert not note.has_frontmatter
    assert note.parse_warning is None
    assert note.id == "projects-falcon-kafka-notes"
    assert note.title == "kafka_notes"  # the file's name, as Obsidian shows it
    assert note.heading == ""  # a second-level heading is body text
    assert note.tier == "mid"
    assert note.category == "note"
    assert note.status == "active"
    assert note.tags == []
    assert note.importance == 0.5
    assert note.confidence == 1.0
    assert note.created == datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC)
    assert note.updated == note.created
    assert note.body == text


def test_title_falls_back_to_file_stem() -> None:
    note = parse("no heading here, #hashtag is not one\n", "memory/short-term/meeting_notes-today.md")
    assert note.title == "meeting_notes-today"
    assert note.id == "meeting-notes-today"
    assert note.tier == "short"


def test_heading_with_crlf_and_closing_hashes() -> None:
    note = parse("\r\n## Steps\r\n# Deploy checklist ##\r\nbody\r\n", "memory/long-term/x.md")
    assert (note.title, note.heading) == ("x", "Deploy checklist")  # the first level-one heading
    assert parse("## Only a second level\n", "a.md").heading == ""


def test_a_comment_in_fenced_code_is_not_the_heading() -> None:
    body = "## Iterators\n``` python\n# create a list of integers\nmylist = [1, 2]\n```\n"
    assert parse(body, "Python Iterators.md").heading == ""
    note = parse(body + "~~~sh\n# WARNING: erases the disk\n~~~\n# The `iter()` protocol\n", "a.md")
    assert note.heading == "The `iter()` protocol"  # inline code in a real heading is kept


def test_path_decides_the_tier_over_frontmatter() -> None:
    note = parse("---\ntier: long\nid: keep-me\n---\nbody\n", "memory/archive/sessions/a.md")
    assert note.tier == "archive"
    assert note.id == "keep-me"


def test_frontmatter_id_survives_a_move_between_tiers() -> None:
    text = "---\nid: stable-id-1a2b\n---\nbody\n"
    assert (
        parse(text, "memory/short-term/a.md").id
        == parse(text, "memory/archive/daily/b.md").id
        == "stable-id-1a2b"
    )


def test_id_without_frontmatter_is_the_same_in_every_tier() -> None:
    ids = {default_id(f"memory/{tier}/topic/Note One.md") for tier in ("short-term", "mid-term", "archive")}
    assert ids == {"topic-note-one"}


def test_known_fields_are_typed_and_clamped() -> None:
    text = (
        "---\n"
        "category: Decision\n"
        "status: SUPERSEDED\n"
        "tags: '#db, postgres, #db'\n"
        "entities: [Alice, null, Bob]\n"
        "importance: 7\n"
        "confidence: not-a-number\n"
        "created: 2024-01-01\n"
        "updated: '2024-02-03T04:05:06Z'\n"
        "superseded_by: new-one\n"
        "access_count: -3\n"
        "sensitive: 'yes'\n"
        "---\n"
    )
    note = parse(text, "memory/long-term/decisions/x.md")
    assert note.category == "decision"
    assert note.status == "superseded"
    assert note.tags == ["db", "postgres"]
    assert note.entities == ["Alice", "Bob"]
    assert note.importance == 1.0
    assert note.confidence == 1.0
    assert note.created == datetime(2024, 1, 1, tzinfo=UTC)
    assert note.updated == datetime(2024, 2, 3, 4, 5, 6, tzinfo=UTC)
    assert note.superseded_by == "new-one"
    assert note.access_count == 0
    assert note.sensitive is False  # only a real YAML true marks a note sensitive


def test_unknown_category_and_status_fall_back() -> None:
    note = parse("---\ncategory: gossip\nstatus: someday\n---\n", PATH)
    assert note.category == "note"
    assert note.status == "active"
    assert "note" in CATEGORIES


# ---- bad frontmatter ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "---\ntitle: [unclosed\n---\n# Body\n",
        "---\ntitle: 'open quote\n---\nbody\n",
        "---\n\tkey: tab indented\n---\nbody\n",
        "---\na: 1\n a: 2\n  - b\n---\nbody\n",
        "---\ntitle: ok\nno closing line\n",
    ],
)
def test_malformed_frontmatter_sets_warning_and_keeps_whole_text_as_body(text: str) -> None:
    note = parse(text, PATH)
    assert note.parse_warning
    assert note.body == text
    assert note.meta == {}
    assert not note.has_frontmatter
    assert render(note) == text  # nothing is lost if it is ever written back


def test_malformed_yaml_warning_names_a_line() -> None:
    note = parse("---\nok: 1\ntitle: [unclosed\n---\nbody\n", PATH)
    assert note.parse_warning is not None
    assert note.parse_warning.startswith("malformed YAML frontmatter")
    assert "line" in note.parse_warning


@pytest.mark.parametrize(
    "text", ["---\n- a\n- b\n---\nbody\n", "---\njust a sentence\n---\nbody\n", "---\n42\n---\n"]
)
def test_frontmatter_that_is_not_a_mapping(text: str) -> None:
    note = parse(text, PATH)
    assert note.parse_warning == "frontmatter is not a mapping"
    assert note.body == text
    assert note.meta == {}


def test_empty_frontmatter_is_an_empty_mapping() -> None:
    note = parse("---\n---\nbody\n", PATH)
    assert note.parse_warning is None
    assert note.has_frontmatter
    assert note.meta == {}
    assert note.body == "body\n"


def test_frontmatter_with_bom_and_crlf() -> None:
    note = parse("\ufeff---\r\ntitle: Hi\r\n---\r\nbody\r\n", PATH)
    assert note.parse_warning is None
    assert note.meta == {"title": "Hi"}
    assert note.body == "body\r\n"


def test_yaml_tags_that_run_code_are_refused() -> None:
    note = parse("---\nx: !!python/object/apply:os.system ['echo hi']\n---\nbody\n", PATH)
    assert note.parse_warning is not None
    assert note.meta == {}


def test_non_string_keys_become_strings() -> None:
    note = parse("---\n1: one\n2024-01-01: day\n---\n", PATH)
    assert note.meta == {"1": "one", "2024-01-01": "day"}


# ---- with_meta ------------------------------------------------------------------------------


def test_with_meta_sets_and_removes_keys_and_keeps_the_rest() -> None:
    body = "\n\n# Title\r\nbody with --- inside\n---\n"
    note = parse(render(Note(PATH, {"id": "a", "x-custom": [1, 2], "title": "T"}, body, True)), PATH)
    changed = note.with_meta(title="New", status="completed", **{"x-custom": None})
    assert changed.meta == {"id": "a", "title": "New", "status": "completed"}
    assert list(changed.meta) == ["id", "title", "status"]
    assert changed.body == body
    assert changed.has_frontmatter
    assert note.meta == {"id": "a", "x-custom": [1, 2], "title": "T"}  # the original is untouched


def test_with_meta_on_a_hand_written_note_adds_frontmatter_and_keeps_body() -> None:
    body = "# Hand written\n\nno frontmatter\n"
    note = parse(body, PATH)
    text = render(note.with_meta(importance=0.9))
    assert text == "---\nimportance: 0.9\n---\n" + body


# ---- helpers --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "title",
    [
        "Use Postgres for the queue",
        "数据库选型",
        "Café crème brûlée",
        "",
        "!!!",
        "a" * 300,
        "Ünïcode 😀 mix 中文",
    ],
)
def test_new_id_is_readable_bounded_and_unique(title: str) -> None:
    ids = {new_id(title) for _ in range(20)}
    assert len(ids) > 1  # random suffix
    for value in ids:
        assert value == value.lower() == unicodedata.normalize("NFC", value)
        assert " " not in value and "/" not in value
        assert len(value) <= 45 and len(value.encode("utf-8")) <= 125


@pytest.mark.parametrize(
    ("title", "stem"),
    [
        ("数据库选型", "数据库选型"),
        ("東京の朝ごはん", "東京の朝ごはん"),
        ("한국어 메모", "한국어-메모"),
        ("Встреча с Иваном", "встреча-с-иваном"),
        ("Καλημέρα κόσμε", "καλημέρα-κόσμε"),
        ("مرحبا بالعالم", "مرحبا-بالعالم"),
        ("हिन्दी भाषा", "हिन्दी-भाषा"),
        ("Ünïcode 😀 mix 中文", "unicode-mix-中文"),
        ("!!!", "note"),
    ],
)
def test_new_id_keeps_the_words_of_every_script(title: str, stem: str) -> None:
    value = new_id(title)
    assert value[:-5] == stem and re.fullmatch(r"-[0-9a-f]{4}", value[-5:])


def test_a_chinese_id_is_cut_in_bytes_as_well() -> None:
    value = new_id("我" * 200)
    assert value[:-5] == "我" * 40 and len(value.encode("utf-8")) == 125
    rare = new_id("𠀀" * 200)  # four bytes each: 30 of them fill the 120 bytes
    assert rare[:-5] == "𠀀" * 30


def test_names_made_from_existing_names_keep_their_rule() -> None:
    """A note without an `id:` is known by its path's slug, in its own script; a name of Latin and
    CJK words by the first rule, so no such id changed (one indexed by it keeps it: the index)."""
    assert default_id("memory/long-term/Москва.md") == "москва"
    assert legacy_id("memory/long-term/Москва.md") == "note"
    assert default_id("memory/long-term/Moscow Москва.md") == "moscow-москва"
    assert default_id("memory/long-term/黄山日出.md") == "黄山日出"
    assert settled_slug("Заметки", 40) == "note" and slugify("Заметки", 40) == "заметки"


def test_new_id_keeps_accented_words_whole() -> None:
    assert new_id("Café crème").startswith("cafe-creme-")


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        ("Hello, World!", "hello-world"),
        ("  many   spaces  ", "many-spaces"),
        ("Use Postgres: SKIP LOCKED", "use-postgres-skip-locked"),
        ("naïve résumé", "naive-resume"),
        ("数据库 选型", "数据库-选型"),
        ("한국어 메모", "한국어-메모"),
        ("Привет, мир!", "привет-мир"),
        ("ＦＵＬＬ　ｗｉｄｔｈ", "full-width"),
        ('a<b>c:d"e|f?g*h', "a-b-c-d-e-f-g-h"),
        ("trailing dot. ", "trailing-dot"),
        ("../../etc/passwd", "etc-passwd"),
        ("", "note"),
        ("!!!", "note"),
    ],
)
def test_slugify(text: str, slug: str) -> None:
    assert slugify(text) == slug


def test_slugify_cuts_at_a_word_boundary() -> None:
    slug = slugify("alpha beta gamma delta epsilon zeta eta theta iota kappa", max_len=20)
    assert len(slug) <= 20
    assert slug == "alpha-beta-gamma"


@given(st.text())
def test_slugify_is_always_a_safe_file_name(text: str) -> None:
    slug = slugify(text)
    assert slug
    assert "/" not in slug and "\\" not in slug and "\x00" not in slug
    assert not slug.startswith(("-", ".")) and not slug.endswith(("-", ".", " "))
    assert not set(slug) & set('<>:"|?*') and all(ch.isprintable() for ch in slug)
    assert len(slug) <= 48 and len(slug.encode("utf-8")) <= 3 * 48
    assert slug == unicodedata.normalize("NFC", slug)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (date(2024, 1, 2), datetime(2024, 1, 2, tzinfo=UTC)),
        (datetime(2024, 1, 2, 3, 4, 5), datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
        (
            datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2))),
            datetime(2024, 1, 2, 1, 4, 5, tzinfo=UTC),
        ),
        ("2024-01-02", datetime(2024, 1, 2, tzinfo=UTC)),
        ("2024-01-02T03:04:05Z", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
        (" 2024-01-02T03:04:05+01:00 ", datetime(2024, 1, 2, 2, 4, 5, tzinfo=UTC)),
        (0, datetime(1970, 1, 1, tzinfo=UTC)),
        (1700000000, datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)),
        (1700000000.0, datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)),
        ("yesterday", None),
        ("", None),
        (None, None),
        (True, None),
        ([2024], None),
    ],
)
def test_to_datetime(value: Any, expected: datetime | None) -> None:
    got = to_datetime(value)
    assert got == expected
    if got is not None:
        assert got.tzinfo is not None


@pytest.mark.parametrize(
    ("path", "ok"),
    [
        ("memory/long-term/a.md", True),
        ("memory/short-term/current_session.md", True),
        ("memory/mid-term/active_contexts.json", True),
        ("memory/archive/daily/2024-01-01.markdown", True),
        ("memory/long-term/a.txt", False),
        ("memory/long-term/.hidden.md", False),
        ("memory/long-term/.obsidian/workspace.json", False),
        ("memory/other-tier/a.md", True),  # Markdown anywhere in the vault (an adopted folder)
        ("memory/a.md", True),
        ("notes/long-term/a.md", True),
        ("Daily/2026-11-20.md", True),
        ("notes/data.json", False),  # JSON outside the tier folders is some app's data
        ("Excalidraw/drawing.excalidraw.md", False),
        (".trash/old.md", False),
        ("tmem.yaml", False),
    ],
)
def test_is_note_path(path: str, ok: bool) -> None:
    assert is_note_path(path) is ok


def test_tier_of_path() -> None:
    assert tier_of_path("memory/short-term/x.md") == "short"
    assert tier_of_path("memory/mid-term/projects/p/x.md") == "mid"
    assert tier_of_path("memory/long-term/x.md") == "long"
    assert tier_of_path("memory/archive/x.md") == "archive"
    assert tier_of_path("memory/x.md") is None


def test_json_note_text_flattens_keys_and_values() -> None:
    text = '{"projects": {"falcon": {"status": "active", "owners": ["ana", "bo"], "gone": null}}, "n": 3}'
    note = parse(text, "memory/mid-term/active_contexts.json")
    assert note.text.splitlines() == [
        "projects: falcon: status: active",
        "projects: falcon: owners: ana",
        "projects: falcon: owners: bo",
        "n: 3",
    ]
    assert note.title == "active contexts"
    assert note.id == "active-contexts"


def test_invalid_json_text_is_indexed_as_it_is() -> None:
    assert json_text("{not json") == "{not json"
    assert json_text("[]") == ""


@pytest.mark.parametrize(
    "text",
    [
        "---\ntitle: x\ntags: [a, b]\n---\nThe body.\n",
        "\ufeff---\r\ntitle: x\r\n---\r\nWindows body\r\n",
        "---\ntitle: x\n...\nclosed by dots\n",
        "no frontmatter at all\n---\nnot a fence at the start\n",
        "---\ntitle: never closed\nbody?\n",
        "---\n---\nempty frontmatter\n",
        "",
    ],
)
def test_body_of_equals_the_parsed_body_without_parsing_yaml(text: str) -> None:
    assert body_of(text, "n.md") == parse(text, "n.md").body


def test_body_of_keeps_a_json_note_whole() -> None:
    text = '{"title": "x"}\n'
    assert body_of(text, "memory/long-term/a.json") == parse(text, "memory/long-term/a.json").body == text


@given(st.text(alphabet="-.:ab \n\r\t", max_size=60))
def test_body_of_agrees_with_parse_whenever_the_frontmatter_parses(text: str) -> None:
    note = parse(text, "n.md")
    if note.parse_warning is None or "closing" in note.parse_warning:
        assert body_of(text, "n.md") == note.body


def test_a_date_the_calendar_has_not_is_read_as_text() -> None:
    """`2024-02-30` matches YAML's date pattern and PyYAML raises on it: one typed by hand made
    every read of the vault fail with a traceback. It is text, as Obsidian shows it."""
    note = parse(
        "---\ndate: 2024-02-30\nupdated: 2024-13-45 10:00:00\nseen: 2024-02-29\n---\nBody.\n",
        "memory/long-term/n.md",
    )
    assert note.parse_warning is None
    assert note.meta == {"date": "2024-02-30", "updated": "2024-13-45 10:00:00", "seen": date(2024, 2, 29)}


def test_a_slug_leaves_redaction_markers_out() -> None:
    assert slugify("the deploy token is [REDACTED:github-token]") == "the-deploy-token-is"
    assert slugify("[REDACTED:password]") == "note"
    assert slugify("a [redacted] word") == "a-redacted-word"  # only tmem's own marker
