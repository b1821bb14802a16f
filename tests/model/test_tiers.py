"""The flow-table rules as a pure function: each rule fires, and does not fire, as configured."""

from __future__ import annotations

import ast
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers import FIXED_NOW

from tiered_memory.config import LifecycleConfig
from tiered_memory.model import layout, tiers
from tiered_memory.model import note as notes
from tiered_memory.model.tiers import Move, NoteInfo, ProjectInfo, plan

NOW = FIXED_NOW
RULES = LifecycleConfig()
P = "memory/mid-term/projects"


def ago(**delta: float) -> datetime:
    return NOW - timedelta(**delta)


def info(path: str, **fields: Any) -> NoteInfo:
    fields.setdefault("id", notes.default_id(path))
    fields.setdefault("created", ago(hours=1))
    return NoteInfo(path=path, **fields)


def status(pid: str, state: str = "active", touched: datetime | None = None, **fields: Any) -> NoteInfo:
    when = touched or ago(days=1)
    return info(
        f"{P}/{pid}/status.md", category="project", status=state, created=when, updated=when, **fields
    )


def moves_of(items: list[NoteInfo], rules: LifecycleConfig = RULES, **kw: Any) -> dict[str, Move]:
    return {m.src: m for m in plan(items, rules, NOW, **kw)}


def simulate(items: list[NoteInfo], moves: list[Move]) -> list[NoteInfo]:
    """What the vault holds after the moves (as lifecycle applies them), for a second plan."""
    by_src = {m.src: m for m in moves}
    out = []
    for item in items:
        move = by_src.get(item.path)
        if move is None:
            out.append(item)
        elif move.dst is not None:
            moved = replace(item, path=move.dst, moved_at=NOW)
            if "project" in move.meta:
                moved = replace(moved, project=str(move.meta["project"]))
            if "status" in move.meta:
                moved = replace(moved, status=str(move.meta["status"]))
            out.append(moved)
    return out


# ---- short -> archive ---------------------------------------------------------------------------


def test_short_note_older_than_the_ttl_is_archived_by_its_day() -> None:
    old = info("memory/short-term/chat.md", created=ago(hours=25))
    move = moves_of([old])[old.path]
    assert move.dst == "memory/archive/sessions/2026/11/21/chat.md"
    assert move.kind == "short-expired"
    assert "24 h" in move.reason


def test_short_note_younger_than_the_ttl_stays() -> None:
    assert moves_of([info("memory/short-term/chat.md", created=ago(hours=23))]) == {}


def test_the_ttl_comes_from_the_config() -> None:
    old = info("memory/short-term/chat.md", created=ago(hours=25))
    assert moves_of([old], LifecycleConfig(short_term_ttl_hours=48)) == {}
    assert old.path in moves_of([old], LifecycleConfig(short_term_ttl_hours=2))


def test_a_recent_update_or_arrival_restarts_the_ttl() -> None:
    edited = info("memory/short-term/a.md", created=ago(days=3), updated=ago(hours=2))
    restored = info("memory/short-term/b.md", created=ago(days=3), moved_at=ago(hours=2))
    assert moves_of([edited, restored]) == {}


def test_an_explicit_expiry_replaces_the_ttl() -> None:
    due = info("memory/short-term/a.md", created=ago(hours=1), expires=ago(minutes=1))
    later = info("memory/short-term/b.md", created=ago(days=5), expires=NOW + timedelta(hours=1))
    moves = moves_of([due, later])
    assert set(moves) == {due.path}
    assert moves[due.path].kind == "short-expired"


def test_short_notes_of_an_ended_session_are_archived_at_once() -> None:
    note = info("memory/short-term/n.md", session="ses-1", created=ago(minutes=5))
    record = info(
        "memory/archive/sessions/2026/11/22/ses-1.md",
        category="session",
        session="ses-1",
        created=ago(hours=2),
    )
    moves = moves_of([note, record])
    assert moves[note.path].kind == "session-ended"
    assert moves[note.path].dst == "memory/archive/sessions/2026/11/22/n.md"
    assert moves_of([note]) == {}  # no record: the session is still going
    assert note.path in moves_of([note], ended_sessions={"ses-1"})


def test_fixed_files_and_session_and_temp_folders_never_move() -> None:
    items = [
        info(layout.CURRENT_SESSION, created=ago(days=9)),
        info(layout.CONTEXT_STACK, created=ago(days=9)),
        info("memory/short-term/temp/scratch.md", created=ago(days=9)),  # expired by shortterm.expire
        info(
            "memory/short-term/sessions/ses-2.md", category="session", created=ago(days=9), project="survey"
        ),
        info("memory/mid-term/workflows/release.md", importance=0.99),
        info("memory/long-term/user_profile.md", status="superseded"),
        status("survey"),
    ]
    assert moves_of(items) == {}


# ---- short -> mid ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "how"),
    [
        ({"project": "survey"}, "project field"),
        ({"tags": ("geodesy",)}, "shared tag"),
        ({"text": "calibrated the survey tablets"}, "project id in text"),
        ({"text": "notes on the Field Mapping work"}, "project title in text"),
    ],
)
def test_short_note_about_an_active_project_joins_it(fields: dict[str, Any], how: str) -> None:
    project = status("survey", title="Field Mapping", tags=("geodesy",))
    note = info("memory/short-term/n.md", **fields)
    move = moves_of([project, note])[note.path]
    assert move.dst == f"{P}/survey/n.md"
    assert move.kind == "short-to-project"
    assert how in move.reason
    assert move.meta == {"project": "survey"}


def test_short_note_not_about_a_project_stays() -> None:
    project = status("survey", title="Field Mapping")
    note = info("memory/short-term/n.md", text="surveys of customers", tags=("mapping",))
    assert moves_of([project, note]) == {}


def test_two_matching_projects_and_no_field_is_no_guess() -> None:
    items = [status("survey"), status("mapping"), info("memory/short-term/n.md", text="survey and mapping")]
    assert moves_of(items) == {}


def test_short_note_of_a_finished_or_unknown_project_follows_the_ttl() -> None:
    done = status("survey", "completed")
    young = info("memory/short-term/a.md", project="survey")
    unknown = info("memory/short-term/b.md", project="nowhere", created=ago(days=2))
    moves = moves_of([done, young, unknown])
    assert young.path not in moves
    assert moves[unknown.path].kind == "short-expired"


# ---- mid -> long ------------------------------------------------------------------------------------


def completed_project(state: str = "completed") -> list[NoteInfo]:
    return [
        status("survey", state),
        info(f"{P}/survey/tasks.json"),
        info(f"{P}/survey/notes.md"),
        info(f"{P}/survey/use-cgcs.md", category="decision", title="Use CGCS2000", created=ago(days=3)),
        info(f"{P}/survey/2026-11-01_datum.md", category="decision", title="Datum"),
        info(f"{P}/survey/naive-dates.md", category="error"),
        info(f"{P}/survey/retry.md", category="pattern"),
        info(f"{P}/survey/key-insight.md", importance=0.9),
        info(f"{P}/survey/meeting.md"),
    ]


def test_a_completed_project_hands_decisions_lessons_patterns_to_long_term() -> None:
    moves = moves_of(completed_project())
    dst = {src.rsplit("/", 1)[1]: m.dst for src, m in moves.items()}
    assert dst == {
        "status.md": "memory/archive/projects/survey/status.md",
        "tasks.json": "memory/archive/projects/survey/tasks.json",
        "notes.md": "memory/archive/projects/survey/notes.md",
        "use-cgcs.md": "memory/long-term/decisions/2026-11-19_use-cgcs2000.md",
        "2026-11-01_datum.md": "memory/long-term/decisions/2026-11-01_datum.md",
        "naive-dates.md": "memory/long-term/knowledge_base/lessons/naive-dates.md",
        "retry.md": "memory/long-term/knowledge_base/patterns/retry.md",
        "key-insight.md": "memory/long-term/knowledge_base/domains/key-insight.md",
        "meeting.md": "memory/archive/projects/survey/meeting.md",
    }
    assert {m.kind for m in moves.values()} == {"project-completed"}
    assert {m.group for m in moves.values()} == {"project:survey"}
    assert moves[f"{P}/survey/retry.md"].meta == {"project": "survey"}


def test_an_active_project_keeps_its_notes() -> None:
    items = [i for i in completed_project("active") if i.importance < 0.8]
    assert moves_of(items) == {}


def test_an_important_mid_term_note_is_promoted() -> None:
    items = [
        status("survey"),
        info(f"{P}/survey/insight.md", importance=0.8, category="discovery"),
        info(f"{P}/survey/minor.md", importance=0.79),
        info("memory/mid-term/loose.md", importance=0.95, category="decision", title="Loose call"),
    ]
    moves = moves_of(items)
    assert set(moves) == {f"{P}/survey/insight.md", "memory/mid-term/loose.md"}
    assert moves[f"{P}/survey/insight.md"].dst == "memory/long-term/knowledge_base/domains/insight.md"
    assert moves["memory/mid-term/loose.md"].dst == "memory/long-term/decisions/2026-11-22_loose-call.md"
    assert {m.kind for m in moves.values()} == {"important"}
    assert "0.8 >= 0.8" in moves[f"{P}/survey/insight.md"].reason
    assert moves_of(items, LifecycleConfig(promote_importance=0.99)) == {}


def test_project_own_files_and_superseded_notes_are_not_promoted() -> None:
    items = [
        status("survey", importance=0.99),
        info(f"{P}/survey/old.md", importance=0.9, status="superseded"),
    ]
    assert moves_of(items) == {}


# ---- mid -> archive ----------------------------------------------------------------------------------


def test_a_cancelled_project_moves_whole_to_the_archive() -> None:
    moves = moves_of(completed_project("cancelled"))
    assert len(moves) == 9
    assert all(m.dst and m.dst.startswith("memory/archive/projects/survey/") for m in moves.values())
    assert {m.kind for m in moves.values()} == {"project-cancelled"}


def test_an_idle_project_is_archived_after_the_configured_days() -> None:
    idle = [status("survey", touched=ago(days=91)), info(f"{P}/survey/a.md", created=ago(days=95))]
    busy = [status("survey", touched=ago(days=91)), info(f"{P}/survey/a.md", created=ago(days=10))]
    moves = moves_of(idle)
    assert {m.kind for m in moves.values()} == {"project-idle"}
    assert "90 days" in moves[f"{P}/survey/a.md"].reason
    assert moves_of(busy) == {}
    assert moves_of(idle, LifecycleConfig(project_idle_days=120)) == {}


def test_a_short_note_does_not_join_a_project_being_archived() -> None:
    items = [status("survey", touched=ago(days=100)), info("memory/short-term/n.md", project="survey")]
    moves = moves_of(items)
    assert f"{P}/survey/status.md" in moves
    assert "memory/short-term/n.md" not in moves


# ---- long -> archive, retention ------------------------------------------------------------------------


def test_a_superseded_long_term_note_is_archived_with_its_successor_named() -> None:
    items = [
        info("memory/long-term/knowledge_base/domains/old.md", superseded_by="new-1"),
        info("memory/long-term/decisions/2026-01-01_x.md", status="superseded"),
        info("memory/long-term/knowledge_base/domains/new.md", id="new-1"),
    ]
    moves = moves_of(items)
    assert set(moves) == {items[0].path, items[1].path}
    assert moves[items[0].path].dst == "memory/archive/long-term/knowledge_base/domains/old.md"
    assert moves[items[0].path].reason == "superseded by new-1"
    assert moves[items[1].path].kind == "superseded"


def test_archive_retention_only_when_configured() -> None:
    old = info("memory/archive/sessions/2026/01/01/a.md", created=ago(days=400), moved_at=ago(days=31))
    recent = info("memory/archive/sessions/2026/11/01/b.md", created=ago(days=400), moved_at=ago(days=29))
    assert moves_of([old, recent]) == {}
    moves = moves_of([old, recent], LifecycleConfig(archive_retention_days=30))
    assert set(moves) == {old.path}
    assert moves[old.path].dst is None
    assert moves[old.path].kind == "retention"


# ---- clashes, chains, fixed point ------------------------------------------------------------------


def test_a_name_clash_gets_a_suffix() -> None:
    items = [
        info("memory/short-term/chat.md", created=ago(hours=30)),
        info("memory/archive/sessions/2026/11/21/chat.md"),
        info("memory/archive/sessions/2026/11/21/chat-2.md"),
    ]
    assert moves_of(items)[items[0].path].dst == "memory/archive/sessions/2026/11/21/chat-3.md"


def test_an_archived_project_of_the_same_id_gets_a_new_folder() -> None:
    items = [status("survey", "cancelled"), info("memory/archive/projects/survey/status.md")]
    assert moves_of(items)[f"{P}/survey/status.md"].dst == "memory/archive/projects/survey-2/status.md"


def test_moves_chain_to_a_fixed_point_in_one_plan() -> None:
    items = [
        status("survey"),
        info("memory/short-term/n.md", project="survey", importance=0.9, category="pattern"),
    ]
    move = moves_of(items)["memory/short-term/n.md"]
    assert move.dst == "memory/long-term/knowledge_base/patterns/n.md"
    assert move.kind == "short-to-project+important"
    assert move.meta == {"project": "survey"}


def fixture_notes() -> list[NoteInfo]:
    return [
        *completed_project(),
        status("idle", touched=ago(days=200)),
        info(f"{P}/idle/x.md", created=ago(days=200)),
        status("live", title="Live Project"),
        info(f"{P}/live/y.md", importance=0.85),
        info("memory/short-term/a.md", created=ago(days=2)),
        info("memory/short-term/b.md", text="about the live project today", importance=0.9),
        info("memory/short-term/c.md"),
        info("memory/long-term/knowledge_base/domains/old.md", superseded_by="z"),
        info("memory/archive/sessions/2025/01/01/ancient.md", moved_at=ago(days=500)),
    ]


def test_a_second_plan_after_applying_the_first_is_empty() -> None:
    items = fixture_notes()
    rules = LifecycleConfig(archive_retention_days=365)
    first = plan(items, rules, NOW)
    assert len(first) >= 15
    assert plan(simulate(items, first), rules, NOW) == []


def test_plan_is_deterministic_and_takes_notes_too() -> None:
    items = fixture_notes()
    assert plan(items, RULES, NOW) == plan(list(reversed(items)), RULES, NOW)
    text = "---\nid: chat-1\ncreated: 2026-11-20T10:00:00Z\n---\nhello\n"
    parsed = notes.parse(text, "memory/short-term/chat.md")
    assert [m.note_id for m in plan([parsed], RULES, NOW)] == ["chat-1"]


def test_given_projects_override_the_derived_ones() -> None:
    note = info("memory/short-term/n.md", project="survey")
    given = {"survey": ProjectInfo("survey", "Survey", "active", (), NOW)}
    assert moves_of([note], projects=given)[note.path].dst == f"{P}/survey/n.md"


def test_tiers_is_pure() -> None:
    source = Path(tiers.__file__).read_text(encoding="utf-8")
    imported: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
            imported.update(f"{node.module}.{a.name}" for a in node.names)
    upper = {"vault", "cli", "daemon", "service", "lifecycle", "maintain", "indexer", "git"}
    bad = sorted(m for m in imported if set(m.split(".")) & upper or m.split(".")[0] in {"os", "subprocess"})
    assert bad == []
