"""What is embedded of an Obsidian dashboard note: the words a reader sees, not the Dataview
queries, Templater commands and HTML that Obsidian draws. Reduced from a public life-management
vault whose notes are mostly queries inside callouts: embedded whole, its "Spaced Repetition"
hub stood at a cosine of 0.27 to the query `spaced repetition`, under the packaged model's
floor (0.4), so vector mode found nothing; without the queries, 0.47."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import FAKE_CONFIG, FIXED_NOW, DraftingFake, write

from tiered_memory.app.memory import Memory
from tiered_memory.index.indexer import EMBED_FORM, EMBEDDED_FORM, embed_text
from tiered_memory.model import obsidian
from tiered_memory.model.note import parse
from tiered_memory.storage.vault import Vault, init_vault

HUB = (
    "---\nbanner_icon: 🚀\n---\n\n"
    "# 🚀 Nexus Starfleet Command (Spaced Repetition)\n\n"
    "> [!abstract] 🌌 Mission Briefing\n"
    "> This is your central hub for the Ebbinghaus review chain.\n\n"
    "> [!multi-column]\n>\n"
    "> > [!danger|flat] ⚠️ Delayed Missions (Past Due)\n"
    "> > ```dataview\n"
    "> > TABLE WITHOUT ID\n"
    '> >   study_rank as "Rank", file.link as "Topic"\n'
    "> > WHERE study_date < date(today)\n"
    "> > SORT study_date ASC\n"
    "> > ```\n\n"
    '<div class="nxs-card-links">\n'
    '  <a class="internal-link" data-href="0_Atlas/SRS_Studycards.md">Studycards</a>\n'
    "</div>\n\n"
    "```dataviewjs\nconst pages = dv.pages('#5note/3atomic');\ndv.table(['Card'], pages.map(p => [p.file.link]));\n```\n"
    "Created <% tp.date.now('YYYY-MM-DD') %> by the template.\n"
)


def test_shown_text_leaves_out_queries_templater_and_html_tags() -> None:
    shown = obsidian.shown_text(HUB)
    for source in ("TABLE WITHOUT ID", "study_date", "dv.pages", "tp.date", "<div", "data-href", "</a>"):
        assert source not in shown
    for words in (
        "Spaced Repetition",
        "Ebbinghaus review chain",
        "Delayed Missions",
        "Studycards",
        "by the template",
    ):
        assert words in shown


def test_code_a_person_wrote_is_kept() -> None:
    body = (
        "Make a link:\n```html\n<a href='x.html'>x</a>\n```\nand `<br>` breaks a line; a <b>bold</b> word.\n"
    )
    shown = obsidian.shown_text(body)
    assert "<a href='x.html'>x</a>" in shown and "`<br>`" in shown
    assert "a bold word" in shown
    assert obsidian.shown_text("plain words, 3 < 4 and 5 > 2\n") == "plain words, 3 < 4 and 5 > 2\n"


def test_an_unclosed_query_block_ends_the_note() -> None:
    assert obsidian.shown_text("Intro words\n```dataview\nLIST FROM #x\n") == "Intro words\n"


def test_the_indexer_embeds_what_a_reader_sees(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG)
    write(root, "2_Areas/6_Mind/Spaced_Repetition.md", HUB)
    fake = DraftingFake(drafts=False)
    memory = Memory(Vault(root), embedder_factory=lambda: fake, now=lambda: FIXED_NOW)
    try:
        memory.refresh(vectors=False)
        memory.indexer.ensure_vectors(deep=True)
    finally:
        memory.close()
    embedded = "\n".join(fake.texts("float32"))
    assert "Ebbinghaus review chain" in embedded
    assert "TABLE WITHOUT ID" not in embedded and "data-href" not in embedded
    assert embed_text(parse(HUB, "2_Areas/6_Mind/Spaced_Repetition.md")).startswith("Spaced_Repetition\n# 🚀")


def test_vectors_embedded_from_the_older_form_are_replaced_on_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index built before query blocks and HTML were left out: the next incremental reindex
    (or the daemon's backlog) embeds the notes that form changes again, and no other note."""
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG)
    write(root, "2_Areas/6_Mind/Spaced_Repetition.md", HUB)
    write(root, "Otters.md", "Otters hold hands while they sleep.\n")
    before = DraftingFake(drafts=False)
    with monkeypatch.context() as older:  # as a version before the change embedded: the whole text
        older.setattr(obsidian, "shown_text", lambda text: text)
        memory = Memory(Vault(root), embedder_factory=lambda: before, now=lambda: FIXED_NOW)
        try:
            memory.refresh(vectors=False)
            memory.indexer.ensure_vectors(deep=True)
            catalog = memory.indexer.catalog
            catalog.db.execute("DELETE FROM meta WHERE key=?", (EMBEDDED_FORM,))  # it recorded none
            catalog.db.commit()
        finally:
            memory.close()
    assert "TABLE WITHOUT ID" in "\n".join(before.texts("float32"))
    after = DraftingFake(drafts=False)
    memory = Memory(Vault(root), embedder_factory=lambda: after, now=lambda: FIXED_NOW)
    try:
        memory.refresh(vectors=True)  # no note changed
        assert memory.indexer.catalog.get_meta(EMBEDDED_FORM) == EMBED_FORM
    finally:
        memory.close()
    embedded = "\n".join(after.texts("float32"))
    assert "Ebbinghaus review chain" in embedded and "TABLE WITHOUT ID" not in embedded
    assert "Otters" not in embedded  # the form changes nothing of it: its vectors stand
