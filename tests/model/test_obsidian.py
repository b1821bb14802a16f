"""Obsidian conventions in the note model: aliases, inline and nested tags, links, Dataview fields,
daily notes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tiered_memory.model import obsidian
from tiered_memory.model.note import parse, render
from tiered_memory.model.note_dates import git_blob_ids, note_dates
from tiered_memory.model.obsidian import Link

BODY = """# Survey
We chose #geodesy/datum and #idea, see #Idea again.
Not tags: #123, #fff, #A1B2C3, https://example.com/page#part, [[Note#Heading]], \\#escaped, ## Sub
Tags that look hex but are words: #cafe #decade.
`#inline-code [[not a link]]` and <!-- #hidden [[hidden]] --> and %% #secret %%
```python
# comment #notatag [[code link]]
key:: in code
```
~~~
#alsonot
~~~
CJK: #测绘 and nested/trailing #a/b/
"""


def test_inline_tags_skip_code_headings_urls_and_colours() -> None:
    assert obsidian.inline_tags(BODY) == ["geodesy/datum", "idea", "cafe", "decade", "测绘", "a/b"]


def test_nested_tags_expand_to_their_ancestors_for_filters() -> None:
    assert obsidian.expand_tags(["geodesy/datum/wgs84", "Geodesy"]) == [
        "geodesy/datum/wgs84",
        "geodesy/datum",
        "geodesy",
    ]


def test_note_merges_frontmatter_and_inline_tags_but_keeps_its_own_list() -> None:
    note = parse("---\ntags: [survey, Idea]\n---\n" + BODY, "Notes/survey.md")
    assert note.tags == ["survey", "Idea"]  # what tmem may write back
    assert note.all_tags == ["survey", "Idea", "geodesy/datum", "cafe", "decade", "测绘", "a/b"]


def test_links_of_every_kind_in_order() -> None:
    body = (
        "See [[Plan]], [[Projects/Plan|the plan]], [[Plan#Goals]] and [[Plan#^block1]].\n"
        "![[diagram.png]] [table](../Data/table.md#rows) [spaced](<My Note.md>) [enc](My%20Note.md)\n"
        "External: [site](https://example.com) [mail](mailto:a@b.c) [self](#local)\n"
        "| [[Cell\\|shown]] |\n"
        "```\n[[in code]]\n```\n"
    )
    assert obsidian.links(body) == [
        Link("Plan", "wikilink"),
        Link("Projects/Plan", "wikilink", shown="the plan"),
        Link("Plan", "wikilink", heading="Goals"),
        Link("Plan", "wikilink", heading="^block1"),
        Link("diagram.png", "embed"),
        Link("../Data/table.md", "markdown", heading="rows", shown="table"),
        Link("My Note.md", "markdown", shown="spaced"),
        Link("My Note.md", "markdown", shown="enc"),
        Link("Cell", "wikilink", shown="shown"),
    ]


def test_properties_link_like_the_body() -> None:
    text = (
        '---\nprogramming language: "[[Python MOC]]"\nrelated:\n'
        'class: ["[[Algoritmi (Class)|Algoritmi]]", "[[Notes#Week 2]]", plain]\n'
        "link: https://example.com\n---\nBody: [[Python Print Parameters]].\n"
    )
    assert parse(text, "Python Escaping Sequences.md").links == [
        Link("Python MOC", "wikilink"),
        Link("Algoritmi (Class)", "wikilink", shown="Algoritmi"),
        Link("Notes", "wikilink", heading="Week 2"),
        Link("Python Print Parameters", "wikilink"),
    ]


def test_dataview_inline_fields() -> None:
    body = (
        "status:: active\n"
        "- **due**:: 2026-12-01\n"
        "> quoted:: yes\n"
        "Task [priority:: high] for (owner:: Ana) and [priority:: urgent].\n"
        "A URL is not a field: https://example.com\n"
        "`code:: no`\n"
    )
    assert obsidian.inline_fields(body) == {
        "status": ["active"],
        "due": ["2026-12-01"],
        "quoted": ["yes"],
        "priority": ["high", "urgent"],
        "owner": ["Ana"],
    }
    assert parse(body, "a.md").inline_fields["owner"] == ["Ana"]


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        ("aliases: [WGS84, World Geodetic System]", ["WGS84", "World Geodetic System"]),
        ("aliases:\n  - WGS84\n  - WGS 84", ["WGS84", "WGS 84"]),
        ("aliases: Smith, John", ["Smith, John"]),  # one string is one alias
        ("alias: [Old]", ["Old"]),  # the older key
        ("aliases:", []),
    ],
)
def test_aliases(meta: str, expected: list[str]) -> None:
    assert parse(f"---\n{meta}\n---\nbody", "a.md").aliases == expected


@pytest.mark.parametrize(
    ("path", "title"),
    [
        ("Daily/2026-11-20.md", "2026-11-20"),
        ("2026-11-20 Standup_notes.md", "2026-11-20 Standup_notes"),
        ("memory/long-term/my-note_x.md", "my-note_x"),
        ("Embed files.md", "Embed files"),
        ("memory/mid-term/active_contexts.json", "active contexts"),  # JSON state reads as words
    ],
)
def test_titles_from_file_names_as_obsidian_shows_them(path: str, title: str) -> None:
    assert parse("no heading here", path).title == title
    # A heading in the note does not rename it: Obsidian's title is the file name.
    assert parse("## Change the title\n# Another name\n", path).title == title


def test_a_daily_note_is_created_on_its_date() -> None:
    note = parse("body", "Daily/2026-11-20.md", mtime=datetime(2027, 1, 1, tzinfo=UTC).timestamp())
    assert note.created == datetime(2026, 11, 20, tzinfo=UTC)


def test_a_note_dated_by_its_date_key_is_created_then() -> None:
    # A Quartz or Jekyll site's note: `date:` is when it was written; a fresh clone's mtime is not.
    clone_time = datetime(2027, 1, 1, tzinfo=UTC).timestamp()
    note = parse(
        "---\ntitle: Attention\ndate: 2024-03-05\n---\nbody", "content/attention.md", mtime=clone_time
    )
    assert note.created == datetime(2024, 3, 5, tzinfo=UTC)
    # `created` still comes first, and a `date:` that is no date is passed over.
    both = parse("---\ncreated: 2024-01-01\ndate: 2024-03-05\n---\nbody", "a.md", mtime=clone_time)
    assert both.created == datetime(2024, 1, 1, tzinfo=UTC)
    odd = parse("---\ndate: sometime in spring\n---\nbody", "Daily/2026-11-20.md", mtime=clone_time)
    assert odd.created == datetime(2026, 11, 20, tzinfo=UTC)


def _ts(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def test_updated_of_a_hand_written_note_is_when_its_content_was_written() -> None:
    note = parse("---\ncreated: 2026-10-01\n---\nedited today", "n.md", mtime=_ts("2026-11-20T09:00:00"))
    # Never committed: the edit's mtime.
    assert note_dates(note)[1] == datetime(2026, 11, 20, 9, tzinfo=UTC)
    # A fresh clone: every mtime is the clone time, the content's first commit is what counts.
    cloned = parse(render(note), "n.md", mtime=_ts("2027-03-01T00:00:00"))
    assert note_dates(cloned, committed=_ts("2026-11-20T09:01:00"))[1] == datetime(
        2026, 11, 20, 9, 1, tzinfo=UTC
    )
    assert note_dates(cloned, committed=_ts("2026-11-20T09:01:00"))[0] == datetime(2026, 10, 1, tzinfo=UTC)


def test_tmem_notes_keep_their_frontmatter_updated() -> None:
    text = "---\nid: x-1a2b\ncreated: 2026-10-01\nupdated: 2026-10-05\n---\nbody"
    note = parse(text, "n.md", mtime=_ts("2026-11-20T00:00:00"))
    assert note_dates(note, committed=_ts("2026-11-19T00:00:00"))[1] == datetime(2026, 10, 5, tzinfo=UTC)
    hand = parse(text.replace("id: x-1a2b\n", ""), "n.md", mtime=_ts("2026-11-20T00:00:00"))
    assert note_dates(hand)[1] == datetime(2026, 11, 20, tzinfo=UTC)


def test_blob_ids_match_git() -> None:
    # `printf 'hello\n' | git hash-object --stdin`
    assert git_blob_ids(b"hello\n") == ["ce013625030ba8dba906f756967f9e9ca394464a"]
    assert git_blob_ids(b"hello\r\n")[1] == "ce013625030ba8dba906f756967f9e9ca394464a"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("see [[Control Points|control points]] and [[Anna Berg]]", "see control points and Anna Berg"),
        ("| grid | [[Grid File\\|the grid file]] |", "| grid | the grid file |"),
        ("[[Plan#Budget]], [[Plan#^b1]], [[#Scope]]", "Plan > Budget, Plan, Scope"),
        ("![[map.png]] `[[in code]]` [[]]", "![[map.png]] `[[in code]]` [[]]"),
    ],
)
def test_link_text_shows_a_link_as_reading_view_does(text: str, shown: str) -> None:
    assert obsidian.link_text(text) == shown
