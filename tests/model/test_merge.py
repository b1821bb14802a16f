"""The git merge driver's pure logic: frontmatter field by field, bodies by lines, JSON by key."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_memory.model.merge3 import (
    OURS_MARKER,
    SEPARATOR,
    UNLABELLED,
    MergeResult,
    merge3_lines,
    merge_file,
    merge_json,
    merge_note,
    split_lines,
)
from tiered_memory.model.note import Note, parse, render

PATH = "memory/mid-term/decisions/use-postgres.md"
OPENING, CLOSING = UNLABELLED.markers()  # what markers say when no caller names the versions

BODY = """# Use Postgres for the job queue

We compared Redis, SQS and Postgres for the background job queue.

## Decision
Postgres with SKIP LOCKED: one less service to run.

## Consequences
- Jobs live in the `jobs` table.
- Workers poll every 2 seconds.
- Retention is 30 days.
"""

BASE_META: dict[str, Any] = {
    "id": "use-postgres-3f2a",
    "title": "Use Postgres for the job queue",
    "category": "decision",
    "project": "billing",
    "tags": ["postgres", "queue", "infra"],
    "entities": ["Postgres", "Redis"],
    "importance": 0.6,
    "confidence": 0.9,
    "status": "active",
    "created": datetime(2024, 5, 1, 9, 0, tzinfo=UTC),
    "updated": datetime(2024, 5, 1, 9, 0, tzinfo=UTC),
    "access_count": 4,
}


def note_text(body: str = BODY, **changes: Any) -> str:
    """A realistic note: BASE_META with `changes` applied (None deletes a key)."""
    meta = dict(BASE_META)
    for key, value in changes.items():
        if value is None:
            meta.pop(key, None)
        else:
            meta[key] = value
    return render(Note(path=PATH, meta=meta, body=body, has_frontmatter=True))


def merged(result: MergeResult) -> tuple[dict[str, Any], str]:
    note = parse(result.text, PATH)
    assert note.parse_warning is None
    return note.meta, note.body


def day(d: int, hour: int = 9) -> datetime:
    return datetime(2024, 5, d, hour, 0, tzinfo=UTC)


BASE = note_text()


# ---- frontmatter -------------------------------------------------------------------------


def test_only_ours_changed_takes_ours_byte_for_byte() -> None:
    ours = note_text(importance=0.9, updated=day(2))
    result = merge_note(BASE, ours, BASE, PATH)
    assert result == MergeResult(ours, False, [])
    assert merge_note(BASE, BASE, ours, PATH).text == ours


def test_different_fields_on_each_side_are_both_kept() -> None:
    ours = note_text(importance=0.9)
    theirs = note_text(confidence=0.5, project="payments")
    meta, body = merged(merge_note(BASE, ours, theirs, PATH))
    assert (meta["importance"], meta["confidence"], meta["project"]) == (0.9, 0.5, "payments")
    assert body == BODY
    assert "conflict" not in meta


def test_tags_added_on_both_sides_and_removed_on_one() -> None:
    ours = note_text(tags=["postgres", "queue", "infra", "skip-locked"])  # added one
    theirs = note_text(tags=["postgres", "infra", "jobs"], entities=["Postgres", "Redis", "SQS"])
    meta, _ = merged(merge_note(BASE, ours, theirs, PATH))
    # "queue" removed on theirs stays removed; additions from both sides kept, ours' order first.
    assert meta["tags"] == ["postgres", "infra", "skip-locked", "jobs"]
    assert meta["entities"] == ["Postgres", "Redis", "SQS"]


def test_access_count_deltas_are_added() -> None:
    ours = note_text(access_count=7, updated=day(2))  # +3
    theirs = note_text(access_count=6, last_accessed=day(3))  # +2
    meta, _ = merged(merge_note(BASE, ours, theirs, PATH))
    assert meta["access_count"] == 9
    # the same count on both sides is still two sets of accesses
    meta, _ = merged(merge_note(BASE, note_text(access_count=5), note_text(access_count=5, importance=0.1)))
    assert meta["access_count"] == 6
    # base missing counts as 0: added on both sides sums both.
    meta, _ = merged(merge_note(note_text(access_count=None), note_text(access_count=2), theirs, PATH))
    assert meta["access_count"] == 8


def test_later_timestamps_win_across_formats() -> None:
    ours = note_text(updated="2024-05-03T08:00:00+02:00", last_accessed=day(5), importance=0.7)
    theirs = note_text(updated=day(2, 23), last_accessed="2024-05-04", confidence=0.5)
    meta, _ = merged(merge_note(BASE, ours, theirs, PATH))
    assert meta["updated"] == "2024-05-03T08:00:00+02:00"  # 06:00 UTC on the 3rd > 23:00 on the 2nd
    assert meta["last_accessed"] == day(5)


def test_scalar_changed_on_both_sides_takes_the_later_updated() -> None:
    ours = note_text(title="Postgres queue (ours)", updated=day(2))
    theirs = note_text(title="Postgres queue (theirs)", updated=day(3))
    result = merge_note(BASE, ours, theirs, PATH)
    meta, _ = merged(result)
    assert meta["title"] == "Postgres queue (theirs)"
    assert meta["updated"] == day(3)
    assert any(n.startswith("title:") and "theirs" in n for n in result.notes)
    # ours later (or a tie) -> ours
    meta, _ = merged(
        merge_note(BASE, note_text(title="A", updated=day(4)), note_text(title="B", updated=day(3)))
    )
    assert meta["title"] == "A"
    meta, _ = merged(merge_note(BASE, note_text(title="A"), note_text(title="B")))
    assert meta["title"] == "A"


def test_superseded_wins_and_brings_its_superseded_by() -> None:
    ours = note_text(status="completed", updated=day(5))
    theirs = note_text(status="superseded", superseded_by="use-sqs-91ab", updated=day(2))
    meta, _ = merged(merge_note(BASE, ours, theirs, PATH))
    assert meta["status"] == "superseded"
    assert meta["superseded_by"] == "use-sqs-91ab"
    assert meta["updated"] == day(5)


def test_deleted_key_rules() -> None:
    # deleted on ours, untouched on theirs -> deleted; deleted on ours, changed on theirs -> kept
    ours = note_text(project=None, confidence=None)
    theirs = note_text(confidence=0.4, importance=0.8)
    meta, _ = merged(merge_note(BASE, ours, theirs, PATH))
    assert "project" not in meta
    assert meta["confidence"] == 0.4
    assert meta["importance"] == 0.8


def test_unknown_keys_survive_and_key_order_is_ours_then_theirs() -> None:
    ours = note_text(review_by="2024-06-01", x_source={"app": "claude", "session": 12})
    theirs = note_text(aliases=["pg queue"], x_source={"app": "claude", "session": 12})
    meta, _ = merged(merge_note(BASE, ours, theirs, PATH))
    assert meta["review_by"] == "2024-06-01"
    assert meta["aliases"] == ["pg queue"]
    assert meta["x_source"] == {"app": "claude", "session": 12}
    assert list(meta)[-3:] == ["review_by", "x_source", "aliases"]
    assert list(meta)[: len(BASE_META)] == list(BASE_META)


def test_existing_conflict_flag_kept_and_resolution_respected() -> None:
    flagged = note_text(conflict=True)
    meta, _ = merged(merge_note(BASE, flagged, note_text(importance=0.1), PATH))
    assert meta["conflict"] is True
    # One side resolved a flagged note (dropped the flag), the other only touched another field.
    meta, _ = merged(merge_note(flagged, note_text(importance=0.1, conflict=True), BASE, PATH))
    assert "conflict" not in meta


# ---- body --------------------------------------------------------------------------------


def test_non_overlapping_body_edits_merge_cleanly() -> None:
    ours = note_text(BODY.replace("Redis, SQS and Postgres", "Redis, SQS, Kafka and Postgres"))
    theirs = note_text(
        BODY.replace("Retention is 30 days.", "Retention is 90 days.") + "\nSee also: ADR-12.\n"
    )
    result = merge_note(BASE, ours, theirs, PATH)
    meta, body = merged(result)
    assert not result.conflict and "conflict" not in meta
    assert "Kafka and Postgres" in body and "90 days" in body and body.endswith("See also: ADR-12.\n")
    assert OURS_MARKER not in body


def test_adjacent_line_edits_do_not_conflict() -> None:
    ours = note_text(BODY.replace("- Jobs live", "- All jobs live"))
    theirs = note_text(BODY.replace("- Workers poll every 2", "- Workers poll every 5"))
    result = merge_note(BASE, ours, theirs, PATH)
    assert not result.conflict
    assert "- All jobs live" in result.text and "every 5 seconds" in result.text


def test_overlapping_body_edits_keep_both_with_markers() -> None:
    ours = note_text(BODY.replace("Workers poll every 2 seconds.", "Workers poll every second."))
    theirs = note_text(
        BODY.replace("Workers poll every 2 seconds.", "Workers use LISTEN/NOTIFY."), updated=day(2)
    )
    result = merge_note(BASE, ours, theirs, PATH)
    meta, body = merged(result)
    assert result.conflict and meta["conflict"] is True
    ours_text, theirs_text = "- Workers poll every second.\n", "- Workers use LISTEN/NOTIFY.\n"
    expected = f"{OPENING}\n{ours_text}{SEPARATOR}\n{theirs_text}{CLOSING}\n"
    assert expected in body
    assert body.startswith("# Use Postgres") and body.endswith("- Retention is 30 days.\n")
    assert meta["updated"] == day(2)
    assert any(n.startswith("body: both sides changed line") for n in result.notes)


def test_identical_edits_apply_once() -> None:
    edited = BODY.replace("2 seconds", "5 seconds") + "- Dead jobs go to `jobs_dead`.\n"
    result = merge_note(BASE, note_text(edited, importance=0.8), note_text(edited, confidence=0.7), PATH)
    meta, body = merged(result)
    assert body == edited and not result.conflict
    assert (meta["importance"], meta["confidence"]) == (0.8, 0.7)


def test_unchanged_body_is_preserved_byte_for_byte() -> None:
    body = "line one\r\nline two\r\n\r\nno final newline"
    meta, got = merged(
        merge_note(note_text(body), note_text(body, importance=0.1), note_text(body, confidence=0.2))
    )
    assert got == body
    # and one side's edit keeps CRLF endings and the missing final newline
    ours = note_text(body.replace("line one", "line 1"))
    _, got = merged(merge_note(note_text(body), ours, note_text(body, confidence=0.2)))
    assert got == "line 1\r\nline two\r\n\r\nno final newline"


def test_added_on_both_sides_with_different_content_conflicts_and_keeps_both() -> None:
    ours = note_text("# Use Postgres for the job queue\n\nDecided on Monday.\n", updated=day(2))
    theirs = note_text("# Use Postgres for the job queue\n\nAgreed with the team.\n", tags=["db"])
    result = merge_note(None, ours, theirs, PATH)
    meta, body = merged(result)
    assert result.conflict and meta["conflict"] is True
    assert "Decided on Monday." in body and "Agreed with the team." in body
    assert body.startswith("# Use Postgres for the job queue\n\n" + OURS_MARKER)  # common lines outside
    assert meta["tags"] == ["postgres", "queue", "infra", "db"]
    assert meta["access_count"] == 8  # 0 + 4 + 4
    # same content added on both sides: no conflict
    assert merge_note(None, ours, ours, PATH).text == ours


def test_plain_markdown_without_frontmatter() -> None:
    base = "# Scratch\n\none\ntwo\nthree\n"
    result = merge_note(base, base.replace("one", "ONE"), base.replace("three", "THREE"))
    assert result == MergeResult("# Scratch\n\nONE\ntwo\nTHREE\n", False, [])


def test_malformed_frontmatter_falls_back_to_text_merge() -> None:
    broken = BASE.replace("importance: 0.6", "importance: [0.6")
    theirs = BASE.replace("Retention is 30 days.", "Retention is 60 days.")
    result = merge_note(BASE, broken, theirs, PATH)
    assert "importance: [0.6" in result.text and "60 days" in result.text
    assert not result.conflict
    assert "frontmatter unreadable" in result.notes[0]
    clash = merge_note(BASE, broken, BASE.replace("importance: 0.6", "importance: 0.7"), PATH)
    assert clash.conflict and "importance: [0.6" in clash.text and "importance: 0.7" in clash.text


# ---- merge3_lines ------------------------------------------------------------------------


def test_merge3_lines_basics() -> None:
    base = ["a", "b", "c"]
    assert merge3_lines(base, ["A", "b", "c"], ["a", "b", "C"]) == (["A", "b", "C"], False)
    assert merge3_lines(base, ["a", "x", "c"], ["a", "y", "c"]) == (
        ["a", OPENING, "x", SEPARATOR, "y", CLOSING, "c"],
        True,
    )
    # insert/delete at EOF on each side: inserted text survives the deletion
    assert merge3_lines(["a\n", "b\n"], ["a\n"], ["a\n", "b\n", "c\n"]) == (["a\n", "c\n"], False)


def test_split_lines_round_trips() -> None:
    for text in ("", "a", "a\n", "a\r\nb", "\n\n", "x\ny\n"):
        assert "".join(split_lines(text)) == text


def test_merged_line_without_final_newline_gets_one_when_text_follows() -> None:
    lines, conflicted = merge3_lines(["a\n", "b\n", "c\n"], ["a\n", "z"], ["a\n", "b\n", "c\n", "d\n"])
    assert (lines, conflicted) == (["a\n", "z\n", "d\n"], False)


_LINE = st.sampled_from(["a", "b", "c", "d", "e", "f", ""])
_LINES = st.lists(_LINE, max_size=8)


@settings(max_examples=400, deadline=None)
@given(_LINES, _LINES, _LINES)
def test_no_added_text_is_ever_lost(base: list[str], ours: list[str], theirs: list[str]) -> None:
    out, conflicted = merge3_lines(base, ours, theirs)
    for line in set(ours) | set(theirs):
        if line not in base:
            assert line in out
    # stronger, by count: every copy a side added is still there
    have, was = Counter(out), Counter(base)
    for side in (ours, theirs):
        for line, n in Counter(side).items():
            assert have[line] >= n - was[line]
    assert conflicted == (OPENING in out)


@settings(max_examples=200, deadline=None)
@given(_LINES, _LINES)
def test_one_sided_and_identical_changes_are_exact(base: list[str], side: list[str]) -> None:
    assert merge3_lines(base, side, base) == (side, False)
    assert merge3_lines(base, base, side) == (side, False)
    assert merge3_lines(base, side, side) == (side, False)


_TEXT = st.lists(st.sampled_from(["alpha\n", "beta\n", "gamma\n", "\n", "delta"]), max_size=6).map("".join)


@settings(max_examples=200, deadline=None)
@given(_TEXT, _TEXT, _TEXT)
def test_no_text_lost_through_merge_note(base: str, ours: str, theirs: str) -> None:
    result = merge_note(note_text(base), note_text(ours), note_text(theirs, updated=day(2)), PATH)
    _, body = merged(result)
    out = {line.rstrip("\n") for line in split_lines(body)}
    for line in split_lines(ours) + split_lines(theirs):
        assert line.rstrip("\n") in out or line in split_lines(base)
    for marker in (OPENING, SEPARATOR, CLOSING):  # markers always sit on lines of their own
        assert all(ln == marker + "\n" for ln in split_lines(body) if marker in ln)
    assert result.conflict == (OURS_MARKER in body)


# ---- JSON --------------------------------------------------------------------------------


def dump(value: Any) -> str:
    return json.dumps(value, indent=2) + "\n"


TASKS = {
    "version": 1,
    "updated": "2024-05-01T09:00:00Z",
    "tasks": [
        {"id": "t1", "title": "Write ADR", "status": "open"},
        {"id": "t2", "title": "Benchmark SKIP LOCKED", "status": "open"},
        {"id": "t3", "title": "Drop Redis", "status": "open"},
    ],
    "labels": ["infra", "db"],
}


def test_json_merged_by_key_and_by_id() -> None:
    ours = json.loads(json.dumps(TASKS))
    ours["tasks"][0]["status"] = "done"  # t1 changed
    ours["tasks"] = [t for t in ours["tasks"] if t["id"] != "t3"]  # t3 removed
    ours["tasks"].append({"id": "t4", "title": "Ops runbook", "status": "open"})
    ours["labels"].append("ops")
    theirs = json.loads(json.dumps(TASKS))
    theirs["tasks"][1]["title"] = "Benchmark SKIP LOCKED at 1k jobs/s"  # t2 changed
    theirs["tasks"].append({"id": "t5", "title": "Alerting", "status": "open"})
    theirs["labels"].remove("db")
    theirs["owner"] = "ana"
    result = merge_json(dump(TASKS), dump(ours), dump(theirs))
    got = json.loads(result.text)
    assert not result.conflict
    assert [t["id"] for t in got["tasks"]] == ["t1", "t2", "t4", "t5"]
    assert got["tasks"][0]["status"] == "done"
    assert got["tasks"][1]["title"] == "Benchmark SKIP LOCKED at 1k jobs/s"
    assert got["labels"] == ["infra", "ops"]
    assert got["owner"] == "ana"
    assert result.text == json.dumps(got, indent=2, ensure_ascii=False) + "\n"


def test_json_both_changed_item_uses_its_updated_and_deleted_vs_changed_keeps_change() -> None:
    base = {"tasks": [{"id": 1, "status": "open", "updated": "2024-05-01T09:00:00Z"}, {"id": 2, "n": "x"}]}
    ours = {"tasks": [{"id": 1, "status": "blocked", "updated": "2024-05-02T09:00:00Z"}]}  # and removed 2
    theirs = {"tasks": [{"id": 1, "status": "done", "updated": "2024-05-03T09:00:00Z"}, {"id": 2, "n": "y"}]}
    got = json.loads(merge_json(dump(base), dump(ours), dump(theirs)).text)
    assert got["tasks"] == [theirs["tasks"][0], {"id": 2, "n": "y"}]


def test_json_nested_objects_and_unicode() -> None:
    base = {"stack": {"current": "billing", "depth": 1}, "notes": "é"}
    ours = {"stack": {"current": "billing", "depth": 2}, "notes": "é"}
    theirs = {"stack": {"current": "会計", "depth": 1}, "notes": "é", "extra": True}
    result = merge_file(json.dumps(base), json.dumps(ours), json.dumps(theirs), "context_stack.json")
    assert json.loads(result.text) == {"stack": {"current": "会計", "depth": 2}, "notes": "é", "extra": True}
    assert "会計" in result.text and result.text.endswith("}\n")


def test_json_added_on_both_sides() -> None:
    got = json.loads(merge_json(None, dump({"a": 1, "l": [1, 2]}), dump({"b": 2, "l": [2, 3]})).text)
    assert got == {"a": 1, "l": [1, 2, 3], "b": 2}


def test_invalid_json_falls_back_to_line_merge() -> None:
    base = dump(TASKS)
    ours = base.replace('"version": 1', '"version": 2,,')
    theirs = base.replace('"version": 1', '"version": 3')
    result = merge_json(base, ours, theirs)
    assert result.conflict and result.notes[0] == "invalid JSON; merged as text"
    assert '"version": 2,,' in result.text and '"version": 3' in result.text and OURS_MARKER in result.text


@pytest.mark.parametrize(("path", "is_json"), [("memory/short-term/tasks.json", True), (PATH, False)])
def test_merge_file_dispatches_by_suffix(path: str, is_json: bool) -> None:
    base, ours, theirs = dump({"a": 1}), dump({"a": 1, "b": 2}), dump({"a": 1, "c": 3})
    result = merge_file(base, ours, theirs, path)
    if is_json:
        assert json.loads(result.text) == {"a": 1, "b": 2, "c": 3} and not result.conflict
    else:  # as a note the same edits are a text conflict, flagged in new frontmatter
        assert result.conflict
        assert yaml.safe_load(result.text.split("---\n")[1]) == {"conflict": True}


def test_insertions_at_one_spot_where_one_contains_the_other_merge_cleanly() -> None:
    base = ["# Log\n", "\n"]
    ours = [*base, "- deployed v2\n"]
    theirs = [*base, "- deployed v2\n", "- rolled back\n"]
    assert merge3_lines(base, ours, theirs) == (theirs, False)
    result = merge_note("".join(base), "".join(ours), "".join(theirs) + "- fixed\n")
    assert not result.conflict and result.text == "".join(theirs) + "- fixed\n"


# ---- nothing decided silently ------------------------------------------------------------------


def test_a_scalar_both_sides_changed_at_the_same_time_keeps_both_values() -> None:
    ours = note_text(importance=0.9, updated=day(2))
    theirs = note_text(importance=0.3, updated=day(2))  # same `updated`: nothing says which is newer
    result = merge_note(BASE, ours, theirs, PATH)
    meta, _ = merged(result)
    assert result.conflict and meta["conflict"] is True
    assert meta["importance"] == 0.9  # ours stays in the field...
    assert meta["conflict_values"] == {"importance": {"ours": 0.9, "theirs": 0.3}}  # ...theirs beside it
    assert any("neither is newer" in n for n in result.notes)


def test_tasks_both_machines_numbered_the_same_are_both_kept() -> None:
    base = json.dumps({"tasks": [{"id": 1, "text": "Calibrate", "status": "open"}]})
    ours = json.dumps(
        {
            "tasks": [
                {"id": 1, "text": "Calibrate", "status": "open"},
                {"id": 2, "text": "Laptop task", "status": "open"},
            ]
        }
    )
    theirs = json.dumps(
        {
            "tasks": [
                {"id": 1, "text": "Calibrate", "status": "open"},
                {"id": 2, "text": "Desktop task", "status": "open"},
            ]
        }
    )
    result = merge_json(base, ours, theirs)
    tasks = json.loads(result.text)["tasks"]
    assert [(t["id"], t["text"]) for t in tasks] == [
        (1, "Calibrate"),
        (2, "Laptop task"),
        (3, "Desktop task"),
    ]
    assert any("both sides added id 2; theirs is now 3" in n for n in result.notes)
    assert not result.conflict


def test_entries_with_a_random_uid_merge_by_it() -> None:
    base = json.dumps({"tasks": []})
    ours = json.dumps({"tasks": [{"uid": "a1", "id": 1, "text": "mine"}]})
    theirs = json.dumps({"tasks": [{"uid": "b2", "id": 1, "text": "yours"}]})
    tasks = json.loads(merge_json(base, ours, theirs).text)["tasks"]
    assert {t["uid"]: t["text"] for t in tasks} == {"a1": "mine", "b2": "yours"}


def test_a_json_value_changed_on_both_sides_keeps_both_visibly() -> None:
    base = json.dumps({"topic": {"value": "gps"}})
    ours = json.dumps({"topic": {"value": "gps drift"}})
    theirs = json.dumps({"topic": {"value": "rtk fix"}})
    result = merge_json(base, ours, theirs)
    data = json.loads(result.text)
    assert result.conflict and data["conflict"] is True
    assert data["topic"]["value"] == "gps drift"
    assert data["conflicts"] == [{"at": "topic.value", "ours": "gps drift", "theirs": "rtk fix"}]


def test_tasks_given_one_number_on_two_machines_are_numbered_apart() -> None:
    calibrate = {"uid": "c0", "id": 1, "text": "Calibrate", "created": "2026-03-01T09:00:00+00:00"}
    base = json.dumps({"tasks": [calibrate]})
    early = {"uid": "ff", "id": 2, "text": "Laptop task", "created": "2026-03-02T09:00:00+00:00"}
    late = {"uid": "aa", "id": 2, "text": "Desktop task", "created": "2026-03-02T10:00:00+00:00"}
    for ours, theirs in ((early, late), (late, early)):
        result = merge_json(
            base,
            json.dumps({"tasks": [calibrate, ours]}),
            json.dumps({"tasks": [calibrate, theirs]}),
        )
        numbers = {t["uid"]: t["id"] for t in json.loads(result.text)["tasks"]}
        # the one added first keeps its number, whichever side it came from; the later one is next
        assert numbers == {"c0": 1, "ff": 2, "aa": 3}
        assert any("#2 'Desktop task' is now #3" in n for n in result.notes)
        assert not result.conflict
    # without dates the smaller uid keeps the number; a number already in the base is never taken
    kept = {"uid": "zz", "id": 2, "text": "old"}
    merged = merge_json(
        json.dumps({"tasks": [kept]}),
        json.dumps(
            {"tasks": [kept, {"uid": "b1", "id": 2, "text": "x"}, {"uid": "a1", "id": 3, "text": "y"}]}
        ),
        json.dumps({"tasks": [kept, {"uid": "a2", "id": 3, "text": "z"}]}),
    )
    numbers = {t["uid"]: t["id"] for t in json.loads(merged.text)["tasks"]}
    assert numbers == {"zz": 2, "b1": 4, "a1": 3, "a2": 5}


# ---- many writers: additions at one spot are not a choice ------------------------------------


def test_lines_both_sides_appended_to_a_note_are_both_kept_without_markers() -> None:
    """Two machines append to one note (`tmem update --append`, `tmem profile set`, a list item
    typed in an editor): each only added lines, so both stay, ours first, and nothing is marked."""
    ours = note_text(BODY + "- Workers log every retry.\n", updated=day(2))
    theirs = note_text(BODY + "- Dead jobs go to `jobs_dead`.\n- Alerts page the on-call.\n", updated=day(3))
    result = merge_note(BASE, ours, theirs, PATH)
    meta, body = merged(result)
    assert not result.conflict and "conflict" not in meta
    assert (
        body
        == BODY + "- Workers log every retry.\n- Dead jobs go to `jobs_dead`.\n- Alerts page the on-call.\n"
    )
    assert any("kept both, ours first" in n for n in result.notes)
    # the same inside a section: a fact added under one heading on each machine
    ours = note_text(BODY.replace("## Consequences\n", "## Consequences\n- Owned by billing.\n"))
    theirs = note_text(BODY.replace("## Consequences\n", "## Consequences\n- Reviewed in May.\n"))
    result = merge_note(BASE, ours, theirs, PATH)
    assert not result.conflict
    assert "## Consequences\n- Owned by billing.\n- Reviewed in May.\n- Jobs live" in merged(result)[1]
    # a line changed on both sides is still a choice for a person
    assert merge_note(
        BASE,
        note_text(BODY.replace("30 days", "60 days") + "- more\n"),
        note_text(BODY.replace("30 days", "90 days") + "- other\n"),
        PATH,
    ).conflict


def test_lines_both_sides_added_around_a_line_each_got_elsewhere_are_kept_once() -> None:
    """Each machine added a line of its own next to one both got from a third machine since the
    merge base: the shared line stays once, each machine's own line is kept."""
    ours = note_text(BODY + "- Ours: workers log every retry.\n- Third: alerts page the on-call.\n")
    theirs = note_text(BODY + "- Third: alerts page the on-call.\n\n- Theirs: dead jobs kept a week.\n")
    result = merge_note(BASE, ours, theirs, PATH)
    _, body = merged(result)
    assert not result.conflict
    assert body == BODY + (
        "- Ours: workers log every retry.\n- Third: alerts page the on-call.\n\n- Theirs: dead jobs kept a week.\n"
    )


def test_two_conflicted_versions_merged_keep_every_block_closed() -> None:
    """Two machines each merged an earlier conflict into the same spot and pushed before resolving
    it: their marker lines are not ordinary added lines (a separator both added would be kept once,
    leaving a block nothing closes), so the merge is a conflict of its own and every line stays."""
    earlier = "<<<<<<< {commit}\n- Owner: {mine}\n=======\n- Owner: c05\n>>>>>>> 8acf46f\n"
    ours = note_text(BODY + earlier.format(commit="8c87b89", mine="c02"), updated=day(2))
    theirs = note_text(BODY + earlier.format(commit="6dcbf00", mine="c01"), updated=day(3))
    result = merge_note(BASE, ours, theirs, PATH)
    body = merged(result)[1]
    assert result.conflict
    assert "- Owner: c02" in body and "- Owner: c01" in body and "- Owner: c05" in body
    lines = body.split("\n")
    opened = sum(line.startswith("<<<<<<<") for line in lines)
    assert opened == sum(line.startswith(">>>>>>>") for line in lines)
    assert sum(line == "=======" for line in lines) >= opened


# ---- a person's note (Obsidian) ----------------------------------------------------------

OBSIDIAN_HEAD = (
    "---\r\n"
    "type: Programming Note\r\n"
    "programming language:\r\n"
    'related: "[[Python MOC]]"  # the MOC it hangs from\r\n'
    "tags: [setup,  mac]\r\n"
    "created: 2025-12-12T15:27\r\n"
    "---\r\n"
)
OBSIDIAN_BODY = "".join(f"line {n}\r\n" for n in range(12))


def test_a_person_s_frontmatter_keeps_its_bytes_when_both_sides_edit_the_body() -> None:
    base = OBSIDIAN_HEAD + OBSIDIAN_BODY
    ours = base.replace("line 1\r\n", "line 1\r\nadded on one machine\r\n")
    theirs = base.replace("line 10\r\n", "line 10\r\nadded on the other\r\n")
    result = merge_note(base, ours, theirs, "Programming/MacOS Setup.md")
    assert not result.conflict
    assert result.text == OBSIDIAN_HEAD + OBSIDIAN_BODY.replace(
        "line 1\r\n", "line 1\r\nadded on one machine\r\n"
    ).replace("line 10\r\n", "line 10\r\nadded on the other\r\n")


def test_a_key_one_side_changed_is_the_only_frontmatter_line_that_changes() -> None:
    base = OBSIDIAN_HEAD + OBSIDIAN_BODY
    ours = base.replace("line 1\r\n", "line one\r\n")
    theirs = base.replace("type: Programming Note", "type: Setup").replace("line 9\r\n", "line nine\r\n")
    result = merge_note(base, ours, theirs, "Programming/MacOS Setup.md")
    # theirs' frontmatter is the merged one: its bytes, as the person saved them
    assert result.text == theirs.replace("line 1\r\n", "line one\r\n")
    # a key from each side: ours' block with the one key theirs changed written again
    ours = ours.replace("tags: [setup,  mac]", "tags: [setup,  mac, brew]")
    result = merge_note(base, ours, theirs, "Programming/MacOS Setup.md")
    head = OBSIDIAN_HEAD.replace("type: Programming Note", "type: Setup").replace(
        "tags: [setup,  mac]", "tags: [setup,  mac, brew]"
    )
    assert result.text.startswith(head)
    assert parse(result.text, "x.md").meta["tags"] == ["setup", "mac", "brew"]


@pytest.mark.parametrize(
    ("before", "after"),
    [("publish: 1", "publish: true"), ("weight: 2", "weight: 2.0"), ("tags: [a, 1]", "tags: [a, true]")],
)
def test_a_value_changed_only_in_its_type_is_a_change_the_merge_keeps(before: str, after: str) -> None:
    """`1` and `true` are equal to Python's `==`, inside a list too: the other side's change of
    type is still a change, not lost behind this side's frontmatter bytes."""
    base = f"---\n{before}\nkept: x\n---\nLine one.\n"
    ours = base.replace("Line one.", "Line one, edited here.")
    theirs = base.replace(before, after)
    merged = merge_note(base, ours, theirs, "memory/long-term/n.md")
    assert not merged.conflict
    assert merged.text == f"---\n{after}\nkept: x\n---\nLine one, edited here.\n"
