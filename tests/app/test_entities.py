"""People and other entities: profiles, `--entity` filters, and forgetting one person in one commit."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from helpers import as_json, commit, git, git_log, ok

from tiered_memory.app.context import build_context
from tiered_memory.app.entities import (
    add_entity,
    canonical_names,
    find_entity,
    forget_entity,
    list_entities,
    section_items,
    set_section,
    update_entity,
)
from tiered_memory.app.filing import NewNote, add
from tiered_memory.app.memory import Memory
from tiered_memory.errors import BadInput, NoteNotFound

Run = Callable[..., Result]


def test_add_writes_a_profile_note_in_one_commit(memory: Memory) -> None:
    before = len(git_log(memory.vault.root))
    alice = add_entity(
        memory,
        "Alice Chen",
        aliases=["alice"],
        preferences=["hiking", "sci-fi novels"],
        avoid=["her previous employer"],
        personality="direct, curious",
        note="Met at the GIS conference",
    )
    assert alice.note.path == "memory/long-term/relationships/alice-chen.md"
    meta = alice.note.meta
    assert meta["entity"] == "Alice Chen" and meta["kind"] == "person" and meta["entities"] == ["Alice Chen"]
    assert meta["category"] == "profile" and meta["interaction_count"] == 0 and meta["aliases"] == ["alice"]
    body = alice.note.body
    assert body.startswith("# Alice Chen\n\n## Preferences\n\n- hiking\n- sci-fi novels\n")
    assert "## Topics to avoid\n\n- her previous employer\n" in body
    assert "## Personality\n\ndirect, curious\n" in body
    assert "## Notes\n\n- 2026-11-22: Met at the GIS conference\n" in body
    log = git_log(memory.vault.root)
    assert len(log) == before + 1 and log[0] == "entity: add Alice Chen (person)"
    for name in ("alice", "ALICE CHEN", "alice-chen"):
        found = find_entity(memory, name)
        assert found is not None and found.note.path == alice.note.path
    with pytest.raises(BadInput, match="already exists"):
        add_entity(memory, "alice")
    with pytest.raises(BadInput, match="unknown entity kind"):
        add_entity(memory, "Bob", kind="robot")


def test_secrets_in_entity_fields_are_redacted(memory: Memory) -> None:
    bob = add_entity(memory, "Bob", note="his wifi password is Tr0ub4dor&3x")
    assert "Tr0ub4dor" not in memory.vault.abspath(bob.note.path).read_text()
    assert "[REDACTED:password]" in bob.note.body


def test_update_changes_sections_and_keeps_hand_edits(memory: Memory) -> None:
    add_entity(memory, "Alice Chen", preferences=["hiking"])
    path = memory.vault.abspath("memory/long-term/relationships/alice-chen.md")
    path.write_text(path.read_text() + "\n## Projects together\n\nSurvey of the Huangpu bridge.\n")
    commit(memory.vault, ["memory/long-term/relationships/alice-chen.md"], "edit: by hand")
    updated = update_entity(
        memory,
        "alice chen",
        add_preferences=["tea"],
        remove_preferences=["hiking"],
        add_avoid=["politics"],
        personality="calm",
        note="Prefers email to calls",
        aliases=["ac"],
        seen=True,
    )
    assert updated.section("preferences") == ["tea"]
    assert updated.section("avoid") == ["politics"]
    assert updated.section("personality") == ["calm"]
    assert updated.section("notes") == ["2026-11-22: Prefers email to calls"]
    assert updated.aliases == ["ac"]
    assert updated.interaction_count == 1 and updated.last_seen == "2026-11-22T12:00:00Z"
    assert "## Projects together\n\nSurvey of the Huangpu bridge.\n" in updated.note.body
    assert git_log(memory.vault.root)[0].startswith("entity: update Alice Chen (preferences +1 -1, ")
    again = update_entity(memory, "ac", seen=True)
    assert again.interaction_count == 2
    with pytest.raises(BadInput, match="nothing to update"):
        update_entity(memory, "ac")
    with pytest.raises(BadInput, match="no preferences entry"):
        update_entity(memory, "ac", remove_preferences=["skiing"])
    with pytest.raises(NoteNotFound):
        update_entity(memory, "Nobody", seen=True)


def test_section_helpers_touch_only_their_section() -> None:
    body = "# X\n\nIntro line.\n\n## Preferences\n\n- a\n\n## Other\n\nkept\n"
    assert section_items(body, "Preferences") == ["a"]
    changed = set_section(body, "Preferences", ["a", "b"])
    assert changed == "# X\n\nIntro line.\n\n## Preferences\n\n- a\n- b\n\n## Other\n\nkept\n"
    assert set_section(changed, "Notes", ["n"]).endswith("kept\n\n## Notes\n\n- n\n")
    assert set_section(body, "Missing", []) == body


def test_list_and_canonical_names(memory: Memory) -> None:
    add_entity(memory, "Alice Chen", aliases=["alice"])
    add_entity(memory, "ACME Surveying", kind="organization")
    update_entity(memory, "ACME Surveying", seen=True)
    assert [e.name for e in list_entities(memory)] == ["ACME Surveying", "Alice Chen"]
    assert [e.name for e in list_entities(memory, "person")] == ["Alice Chen"]
    assert canonical_names(memory, ["alice", "Zed", "ALICE CHEN"]) == ["Alice Chen", "Zed"]


def test_entity_filter_finds_the_profile_and_linked_notes(run: Run, vault_path: Path) -> None:
    ok(run("entity", "add", "Alice Chen", "--alias", "alice", "--preference", "hiking"))
    ok(run("add", "--entity", "alice", "--", "Alice reviews the survey reports every Friday"))
    ok(run("add", "--", "The bridge survey uses CGCS2000"))
    found = {
        r["path"]
        for r in as_json(run("search", "--json", "--entity", "Alice Chen", "reports hiking"))["results"]
    }
    assert "memory/long-term/relationships/alice-chen.md" in found
    assert any("alice-reviews" in p for p in found)  # filed under the alias, found by the name
    by_alias = {
        r["title"] for r in as_json(run("search", "--json", "--entity", "ALICE", "hiking reports"))["results"]
    }
    assert by_alias == {"Alice Chen", "Alice reviews the survey reports every Friday"}
    shown = as_json(run("entity", "show", "Alice Chen", "--json"))
    assert shown["preferences"] == ["hiking"]
    assert [r["title"] for r in shown["related"]] == ["Alice reviews the survey reports every Friday"]
    text = ok(run("entity", "show", "alice")).stdout
    assert "likes: hiking" in text and "Alice reviews the survey reports" in text
    listed = as_json(run("entity", "list", "--json"))
    assert [e["name"] for e in listed] == ["Alice Chen"]
    assert ok(run("entity", "update", "alice", "--seen")).stdout.startswith("updated Alice Chen")
    missing = run("entity", "show", "Nobody")
    assert missing.exit_code == 1 and missing.stderr.startswith("tmem: no entity named 'Nobody'")


def test_context_entity_shows_the_profile_and_only_their_memories(memory: Memory) -> None:
    add_entity(memory, "Alice Chen", aliases=["alice"], avoid=["her previous employer"], preferences=["tea"])
    add(memory, NewNote("Alice reviews the survey reports every Friday.", entities=["alice"]))
    add(memory, NewNote("The bridge survey uses CGCS2000.", category="decision"))
    block = build_context(memory, entity="alice")
    assert block.entity == "Alice Chen"
    assert "## About Alice Chen" in block.text and "Avoid talking about: her previous employer" in block.text
    assert [m.title for m in block.memories] == ["Alice reviews the survey reports every Friday."]
    assert "CGCS2000" not in block.text
    plain = build_context(memory)
    assert "About Alice Chen" not in plain.text and "CGCS2000" in plain.text


def test_sensitive_profiles_stay_out_of_context(memory: Memory) -> None:
    add_entity(memory, "Dr Lin", preferences=["discretion"], sensitive=True)
    assert "discretion" not in build_context(memory, entity="Dr Lin").text
    assert "discretion" in build_context(memory, entity="Dr Lin", include_sensitive=True).text


# ---- forget --entity -----------------------------------------------------------------------------


def test_forget_entity_removes_everything_in_one_commit(run: Run, vault_path: Path) -> None:
    ok(run("entity", "add", "Alice Chen", "--alias", "alice"))
    ok(run("add", "--entity", "alice", "--", "Alice reviews the survey reports every Friday"))
    ok(
        run(
            "add", "--entity", "Alice Chen", "--project", "survey-app", "--", "Alice owns the control network"
        )
    )
    ok(run("add", "--", "Lunch with Alice Chen went well"))
    ok(run("add", "--", "The bridge survey uses CGCS2000"))
    before = git_log(vault_path)
    result = ok(run("forget", "--entity", "alice", "--yes", "--reason", "she asked"))
    log = git_log(vault_path)
    assert len(log) == len(before) + 1
    assert log[0] == "forget: everything about Alice Chen [3 note(s)] (she asked)"
    removed = git(vault_path, "show", "--name-status", "--format=", "HEAD").split()
    assert removed.count("D") == 3 and "memory/long-term/relationships/alice-chen.md" in removed
    assert "forgot 3 note(s) about Alice Chen in one commit" in result.stdout
    assert "kept 1 note(s) that only mention the name" in result.stdout
    assert not (vault_path / "memory/long-term/relationships/alice-chen.md").exists()
    searched = as_json(run("search", "--json", "--mode", "keyword", "Alice"))["results"]
    assert [r["title"] for r in searched] == ["Lunch with Alice Chen went well"]
    # git keeps the history: the profile can be brought back
    assert "# Alice Chen" in git(vault_path, "show", "HEAD~1:memory/long-term/relationships/alice-chen.md")
    ok(run("forget", "--entity", "Alice Chen", "--mentions", "--yes"))
    assert as_json(run("search", "--json", "--mode", "keyword", "Alice"))["results"] == []


def test_forget_entity_saves_uncommitted_notes_first(memory: Memory) -> None:
    root = memory.vault.root
    add_entity(memory, "Bob")
    hand = root / "memory/long-term/bob-notes.md"
    hand.write_text("---\nentities: [Bob]\n---\nBob's birthday is in May.\n")
    report = forget_entity(memory, "bob")
    assert {p for p, _ in report.removed} == {
        "memory/long-term/relationships/bob.md",
        "memory/long-term/bob-notes.md",
    }
    log = git_log(root)
    assert log[0].startswith("forget: everything about Bob [2 note(s)]")
    assert log[1] == "edit: save 1 note(s) before forgetting Bob"
    assert "birthday is in May" in git(root, "show", "HEAD~1:memory/long-term/bob-notes.md")
    assert report.to_dict()["commit"] == git(root, "rev-parse", "HEAD").strip()


def test_forget_entity_errors(run: Run) -> None:
    missing = run("forget", "--entity", "Nobody", "--yes")
    assert missing.exit_code == 1 and missing.stderr == "tmem: no entity or notes about 'Nobody'\n"
    neither = run("forget")
    assert neither.exit_code == 2 and "give a note REF, or --entity NAME" in neither.stderr
    ok(run("entity", "add", "Carol"))
    unconfirmed = run("forget", "--entity", "Carol")
    assert unconfirmed.exit_code == 2 and "without confirmation: pass --yes" in unconfirmed.stderr
