"""`tmem update --set` (and MCP `update`'s fields): values are read as YAML, the known keys are
checked against one table (one line naming the key and what it takes, exit 2, nothing written),
and a hand edit of the note not committed yet gets a commit of its own before the update's."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from daemon_process import DaemonProc, tmem
from helpers import FAKE_CONFIG, as_json, commit, git, git_log, one_error_line, remember, write
from mcp_client import call, error, serve

from tiered_memory.app.api.notes import UpdateRequest
from tiered_memory.app.filing import NewNote, add
from tiered_memory.app.memory import Memory
from tiered_memory.app.notes import update
from tiered_memory.errors import BadInput
from tiered_memory.model import note as notes
from tiered_memory.model import note_fields
from tiered_memory.storage.vault import Vault, init_vault

Run = Callable[..., Result]


def meta_of(vault_path: Path, rel: str) -> dict[str, Any]:
    return notes.parse((vault_path / rel).read_text(encoding="utf-8"), rel).meta


def head(vault_path: Path) -> str:
    return git(vault_path, "rev-parse", "HEAD").strip()


# ---- values are YAML -----------------------------------------------------------------------------


def test_a_flow_list_is_stored_as_a_list(run: Run, vault_path: Path) -> None:
    note = remember(run, "Carbonara has no cream.")
    done = as_json(run("update", note["id"], "--set", "tags=[cooking, italian]", "--json"))
    assert done["changed"] == ["fields.tags"]
    assert meta_of(vault_path, note["path"])["tags"] == ["cooking", "italian"]
    assert "tags:\n  - cooking\n  - italian\n" in (vault_path / note["path"]).read_text()


def test_values_read_as_yaml_and_text_as_typed(run: Run, vault_path: Path) -> None:
    note = remember(run, "The survey starts in spring.")
    as_json(
        run(
            "update",
            note["id"],
            "--set",
            "importance=0.8",
            "--set",
            "expires=2027-03-01",
            "--set",
            "title=2024",  # a known text key: the title typed, not the number
            "--set",
            "mood=see: later  # not a comment",  # a person's own key: the text typed
            "--set",
            "tags=field",  # one word is a list of one
            "--json",
        )
    )
    meta = meta_of(vault_path, note["path"])
    assert meta["importance"] == 0.8 and meta["expires"] == date(2027, 3, 1)
    assert meta["title"] == "2024" and meta["mood"] == "see: later  # not a comment"
    assert meta["tags"] == ["field"]


def test_a_broken_flow_list_is_one_line(run: Run, vault_path: Path) -> None:
    note = remember(run, "Tiles are cached.")
    before = head(vault_path)
    line = one_error_line(run("update", note["id"], "--set", "tags=[cooking, italian"), 2)
    assert "tags" in line and "flow list" in line
    assert head(vault_path) == before


# ---- known keys are checked ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("setting", "words"),
    [
        ("importance=7", "importance must be a number from 0 to 1 (got 7)"),
        ("importance=high", "importance must be a number from 0 to 1 (got 'high')"),
        ("confidence=-0.1", "confidence must be a number from 0 to 1"),
        ("importance=true", "importance must be a number from 0 to 1 (got True)"),
        ("category=bogus", "category must be one of discovery, decision,"),
        ("status=done", "status must be one of active, completed, cancelled, superseded"),
        ("tags=[[a], b]", "tags must be a list of words"),
        ("expires=soon", "expires must be a date"),
        ("project=../elsewhere", "project must be a project id"),
        ("tier=long", "tier cannot be set: a note's tier is its folder"),
        ("id=other", "id cannot be changed"),
    ],
)
def test_a_bad_value_of_a_known_key_is_refused_in_one_line(
    run: Run, vault_path: Path, setting: str, words: str
) -> None:
    note = remember(run, "The tile cache holds ten minutes.")
    text, before = (vault_path / note["path"]).read_bytes(), head(vault_path)
    line = one_error_line(run("update", note["id"], "--set", "tags=[ok]", "--set", setting), 2)
    assert words in line, line
    assert (vault_path / note["path"]).read_bytes() == text and head(vault_path) == before


def test_good_values_are_normalised() -> None:
    assert note_fields.checked(
        {
            "category": " Decision",
            "importance": "0.25",
            "tags": "#db, cache, db",
            "aliases": "Smith, John",
            "updated": "2026-11-20T08:00:00Z",
            "mine": "2026-11-20",
            "x": None,
        }
    ) == {
        "category": "decision",
        "importance": 0.25,
        "tags": ["db", "cache"],
        "aliases": ["Smith, John"],
        "updated": datetime(2026, 11, 20, 8, 0, tzinfo=UTC),
        "mine": date(2026, 11, 20),  # what the daemon's wire made text of `--set mine=2026-11-20`
        "x": None,
    }


def test_the_operation_checks_whichever_door_calls_it(memory: Memory) -> None:
    from tiered_memory.app import filing

    note = filing.add(memory, filing.NewNote(text="Redis holds the tiles."))
    with pytest.raises(BadInput, match=r"^importance must be a number from 0 to 1 \(got 'high'\)$"):
        update(memory, UpdateRequest(note.id, fields={"importance": "high"}))
    done = update(memory, UpdateRequest(note.id, fields={"tags": "tiles", "status": "Completed"}))
    assert set(done.changed) == {"fields.tags", "fields.status"}
    after = memory.vault.read_note(note.path).meta
    assert after["tags"] == ["tiles"] and after["status"] == "completed"


def test_mcp_update_refuses_a_word_for_importance(vault_path: Path) -> None:
    async def scenario(session: Any) -> None:
        added = await call(session, "remember", text="The map styles live in one repository.")
        wrong = await error(session, "update", id=added["id"], fields={"importance": "high"})
        assert "importance must be a number from 0 to 1 (got 'high')" in wrong
        wrong = await error(session, "update", id=added["id"], fields={"category": "bogus"})
        assert "category must be one of" in wrong
        done = await call(session, "update", id=added["id"], fields={"tags": "maps", "importance": 0.7})
        assert set(done["changed"]) == {"fields.tags", "fields.importance"}

    serve(vault_path, scenario)
    # The two refused updates wrote nothing: one update commit, the one that passed.
    assert [line for line in git_log(vault_path) if line.startswith("update:")] == [
        "update: The map styles live in one repository. (fields.tags, fields.importance)"
    ]


# ---- a pending hand edit gets its own commit -----------------------------------------------------


def test_a_pending_hand_edit_is_committed_apart_from_the_update(run: Run, vault_path: Path) -> None:
    note = remember(run, "Bake at 250 degrees.", "--title", "Pizza oven")
    path = vault_path / note["path"]
    path.write_text(path.read_text() + "\nA hand-added line about the stone.\n")
    done = as_json(run("update", note["id"], "--set", "tags=[cooking, italian]", "--json"))
    assert done["changed"] == ["fields.tags"]
    assert git_log(vault_path)[:2] == ["update: Pizza oven (fields.tags)", "edit: Pizza oven"]
    assert done["commit"] == head(vault_path)
    said = git(vault_path, "log", "-1", "--format=%b", "HEAD~1")
    assert "A hand edit, committed before `update` changed the note." in said
    hand = git(vault_path, "show", "--format=", "-U0", "HEAD~1")
    assert "+A hand-added line about the stone." in hand and "tags" not in hand
    own = git(vault_path, "show", "--format=", "-U0", "HEAD")
    added = [line for line in own.splitlines() if line.startswith(("+", "-")) and line[1:2] not in "+-"]
    assert "stone" not in own
    assert all(line.lstrip("+-").startswith(("tags:", "  - ", "updated:")) for line in added), added
    assert git(vault_path, "status", "--porcelain") == ""


def test_a_persons_note_edited_and_updated(run: Run, vault_path: Path) -> None:
    rel = "memory/long-term/knowledge/Sourdough.md"
    write(vault_path, rel, "# Sourdough\n\nFeed the starter daily.\n")
    commit(Vault(vault_path), [rel], "my note")
    write(vault_path, rel, "# Sourdough\n\nFeed the starter twice a day.\n")
    as_json(run("update", rel, "--set", "tags=bread", "--json"))
    assert git_log(vault_path)[:2] == ["update: Sourdough (fields.tags)", "edit: Sourdough"]
    assert (
        vault_path / rel
    ).read_text() == "---\ntags:\n  - bread\n---\n# Sourdough\n\nFeed the starter twice a day.\n"
    assert "twice a day" not in git(vault_path, "show", "--format=", "-U0", "HEAD")


def test_a_person_s_note_with_an_impossible_date_is_found_and_updated(run: Run, vault_path: Path) -> None:
    rel = "memory/long-term/Trip.md"
    write(vault_path, rel, "---\nupdated: 2024-13-45\n---\nFlights to Lisbon.\n")
    commit(Vault(vault_path), [rel], "my note")
    assert [
        h["path"] for h in as_json(run("search", "Lisbon", "--mode", "keyword", "--json"))["results"]
    ] == [rel]
    assert as_json(run("update", rel, "--append", "Then Porto.", "--json"))["changed"] == ["body"]
    assert (vault_path / rel).read_text().endswith("Flights to Lisbon.\n\nThen Porto.\n")


def test_a_persons_updated_time_moves_in_the_form_they_wrote_it(run: Run, vault_path: Path) -> None:
    rel = "Programming/Python Lists.md"
    text = "---\ncreated: 2023-09-24\nupdated: 2024-10-03T16:19\n---\nLists are ordered.\n"
    write(vault_path, rel, text)
    commit(Vault(vault_path), [rel], "my note")
    ok_ = as_json(run("update", rel, "--append", "Lists are mutable.", "--json"))
    assert ok_["changed"] == ["body"]
    new = (vault_path / rel).read_text()
    stamp = new.split("updated: ", 1)[1].split("\n", 1)[0]
    assert (
        abs(
            datetime.strptime(stamp, "%Y-%m-%dT%H:%M").replace(tzinfo=UTC) - datetime.now(UTC)
        ).total_seconds()
        < 120
    )
    assert new == text.replace("2024-10-03T16:19", stamp) + "\nLists are mutable.\n"


def test_without_a_hand_edit_the_update_is_one_commit(run: Run, vault_path: Path) -> None:
    note = remember(run, "Carbonara has no cream.", "--title", "Carbonara")
    before = head(vault_path)
    as_json(run("update", note["id"], "--set", "tags=[cooking]", "--json"))
    assert git(vault_path, "rev-parse", "HEAD~1").strip() == before
    assert git_log(vault_path)[0] == "update: Carbonara (fields.tags)"


@pytest.mark.parametrize("setting", ["importance=7", "importance=0.5"])
def test_an_update_refused_or_changing_nothing_leaves_the_hand_edit_alone(
    run: Run, vault_path: Path, setting: str
) -> None:
    note = remember(run, "Carbonara has no cream.", "--importance", "0.5")
    path = vault_path / note["path"]
    path.write_text(path.read_text() + "\nGuanciale, not bacon.\n")
    before = head(vault_path)
    result = run("update", note["id"], "--set", setting)
    assert result.exit_code == (2 if setting.endswith("7") else 0)
    assert head(vault_path) == before
    assert git(vault_path, "status", "--porcelain", "--", note["path"]).startswith(" M")


def test_through_the_daemon_values_keep_their_types(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG)
    daemon = DaemonProc(root, tmp_path / "daemon.log")
    try:
        added = json.loads(tmem(root, "add", "--json", "Sourdough needs a warm kitchen.").stdout)["note"]
        done = tmem(root, "update", added["id"], "--set", "tags=[bread, baking]", "--set", "due=2027-03-01")
        assert done.returncode == 0, done.stderr
        refused = tmem(root, "update", added["id"], "--set", "importance=high")
        assert refused.returncode == 2 and refused.stdout == ""
        assert refused.stderr.strip() == "tmem: importance must be a number from 0 to 1 (got 'high')"
    finally:
        assert daemon.stop() == 0
    text = (root / added["path"]).read_text()
    assert "tags:\n  - bread\n  - baking\n" in text and "\ndue: 2027-03-01\n" in text  # a date, not text


# ---- what an agent's fields may not do to a note ---------------------------------------------------


@pytest.mark.parametrize("key", ["", "  ", "a\nb: c", "x" * 101, "tab\there", "\u202eevil"])
def test_a_key_that_is_not_a_name_of_one_line_is_refused(memory: Memory, vault_path: Path, key: str) -> None:
    rel = remember_note(memory)
    before = (vault_path / rel).read_text(encoding="utf-8")
    commits = head(vault_path)
    with pytest.raises(BadInput, match="a frontmatter key is a name of one line"):
        update(memory, UpdateRequest(id=rel, fields={key: 1}))
    assert (vault_path / rel).read_text(encoding="utf-8") == before and head(vault_path) == commits


def test_fields_that_would_outgrow_what_tmem_reads_are_refused(memory: Memory, vault_path: Path) -> None:
    """Frontmatter past 64 KiB of YAML is ignored when read: the note would lose its id and title."""
    rel = remember_note(memory)
    before = (vault_path / rel).read_text(encoding="utf-8")
    many = {f"field{i}": "lamp " * 3000 for i in range(6)}  # 90 KB, each value within bounds
    with pytest.raises(BadInput, match="would leave its frontmatter unreadable"):
        update(memory, UpdateRequest(id=rel, fields=many))
    assert (vault_path / rel).read_text(encoding="utf-8") == before
    assert memory.read_note(rel).id == notes.parse(before, rel).id


def remember_note(memory: Memory) -> str:
    return add(memory, NewNote(text="The lighthouse lamp is trimmed daily.", title="Lamp")).path


def test_a_value_nested_too_deep_or_a_nul_is_refused(memory: Memory, vault_path: Path) -> None:
    """An agent's value nested hundreds deep would exhaust the recursion of every later reader of
    the note; a NUL would make it a binary file that no search finds by its id any more."""
    rel = remember_note(memory)
    before = (vault_path / rel).read_text(encoding="utf-8")
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(900):
        inner["a"] = {}
        inner = inner["a"]
    with pytest.raises(BadInput, match="nested at most 16 deep"):
        update(memory, UpdateRequest(id=rel, fields={"plan": deep}))
    with pytest.raises(BadInput, match="at most 1000 items"):
        update(memory, UpdateRequest(id=rel, fields={"plan": list(range(5000))}))
    for request in (UpdateRequest(id=rel, append="a\x00b"), UpdateRequest(id=rel, body="\x00")):
        with pytest.raises(BadInput, match="NUL bytes"):
            update(memory, request)
    assert (vault_path / rel).read_text(encoding="utf-8") == before
    update(memory, UpdateRequest(id=rel, fields={"plan": {"steps": [1, 2, {"a": "b"}]}}))
    assert memory.read_note(rel).meta["plan"] == {"steps": [1, 2, {"a": "b"}]}
