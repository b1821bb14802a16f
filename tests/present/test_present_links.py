"""`tmem links` is rendered by present/, as every door's text is (the CLI only picks the format)."""

from __future__ import annotations

from tiered_memory.app.api.links import LinkItem, LinksResult
from tiered_memory.app.api.notes import NoteRef, RelatedNote, RelatedResult
from tiered_memory.present.links import links_text, related_text

PLAN = NoteRef("plan", "Survey plan", "memory/mid-term/plan.md")
SITES = NoteRef("sites", "Sites", "memory/long-term/sites.md")


def test_links_text_lists_each_kind_of_link_and_the_backlinks() -> None:
    result = LinksResult(
        note=PLAN,
        outgoing=[
            LinkItem("Sites", "wikilink", heading="North", note=SITES),
            LinkItem("Budget", "wikilink"),
            LinkItem("map.png", "embed", attachment="memory/mid-term/map.png"),
        ],
        backlinks=[LinkItem("Survey plan", "wikilink", source=SITES)],
    )
    assert links_text(result) == (
        "Survey plan  (plan, memory/mid-term/plan.md)\n"
        "links to:\n"
        "  Sites#North  (sites)\n"
        "  Budget  (no such note yet)\n"
        "  memory/mid-term/map.png  (attachment)\n"
        "linked from:\n"
        "  Sites  (sites)"
    )


def test_a_note_without_links_says_none_both_ways() -> None:
    assert links_text(LinksResult(note=PLAN)) == (
        "Survey plan  (plan, memory/mid-term/plan.md)\nlinks to:\n  (none)\nlinked from:\n  (none)"
    )


def test_related_text_lists_each_note_with_its_score_and_why() -> None:
    note = RelatedNote("sites", "Sites", "memory/long-term/sites.md", "long", 0.5, "links to")
    assert related_text(RelatedResult("plan", "links", [note])) == (
        "related to plan (by links):\n   0.500  links to          Sites  (memory/long-term/sites.md)"
    )
    assert related_text(RelatedResult("plan", "similarity")) == "nothing related to plan"
