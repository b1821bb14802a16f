"""Mid-term projects (status.md, tasks.json, notes.md, the active_contexts.json registry) and the
long-term adders (profile, knowledge, decisions, lessons, patterns)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from helpers import as_json, git, git_log, ok, one_error_line

from tiered_memory.app import longterm, projects
from tiered_memory.app.api import Empty
from tiered_memory.app.api.longterm import (
    DecideRequest,
    KnowledgeRequest,
    LongTermRequest,
    ProfileSetRequest,
)
from tiered_memory.app.api.projects import (
    CancelRequest,
    CompleteRequest,
    Finished,
    NewProjectRequest,
    ProjectListRequest,
    ProjectRequest,
    ProjectUpdateRequest,
    ProjectView,
    TaskAddRequest,
    TaskDoneRequest,
    TaskListRequest,
)
from tiered_memory.app.filing import NewNote, add
from tiered_memory.app.memory import Memory
from tiered_memory.errors import BadInput, NoteNotFound
from tiered_memory.model.layout import PROFILE
from tiered_memory.model.merge3 import merge_json
from tiered_memory.model.profile_facts import KEPT_TIMES, set_times

Run = Callable[..., Result]
P = "memory/mid-term/projects"


def registry(root: Path) -> dict[str, dict[str, object]]:
    data = json.loads((root / "memory/mid-term/active_contexts.json").read_text(encoding="utf-8"))
    entries: dict[str, dict[str, object]] = data["projects"]
    return entries


def test_new_project_creates_its_files_and_registers_it(memory: Memory, vault_path: Path) -> None:
    data = projects.new(
        memory, NewProjectRequest("survey", "Survey app", "GPS tablets in the field", ["geodesy"])
    )
    folder = vault_path / P / "survey"
    assert sorted(p.name for p in folder.iterdir()) == ["notes.md", "status.md", "tasks.json"]
    status = memory.vault.read_note(f"{P}/survey/status.md")
    assert status.meta["status"] == "active" and status.tags == ["geodesy"] and status.id == "project-survey"
    assert "GPS tablets in the field" in status.body
    assert json.loads((folder / "tasks.json").read_text()) == {"tasks": []}
    assert registry(vault_path)["survey"]["title"] == "Survey app"
    assert data.status == "active" and not data.archived
    assert git_log(vault_path)[0] == "project new: survey (Survey app)"
    with pytest.raises(BadInput, match="already exists"):
        projects.new(memory, NewProjectRequest("survey"))


@pytest.mark.parametrize("bad", ["../x", "a/b", "a\\b", ".hidden", "..", "has space", "", "x" * 65])
def test_project_ids_with_path_characters_are_refused(memory: Memory, vault_path: Path, bad: str) -> None:
    before = len(git_log(vault_path))
    with pytest.raises(BadInput, match="invalid project id"):
        projects.new(memory, NewProjectRequest(bad))
    assert len(git_log(vault_path)) == before
    assert not (vault_path / "memory/mid-term/x").exists()


def test_tasks(memory: Memory, vault_path: Path) -> None:
    projects.new(memory, NewProjectRequest("survey"))
    assert projects.add_task(memory, TaskAddRequest("survey", "Calibrate  GPS")).id == 1
    assert projects.add_task(memory, TaskAddRequest("survey", "Write report")).id == 2
    done = projects.done_task(memory, TaskDoneRequest("survey", 1))
    assert done.status == "done"
    assert [t.text for t in projects.list_tasks(memory, TaskListRequest("survey")).tasks] == ["Write report"]
    assert len(projects.list_tasks(memory, TaskListRequest("survey", include_done=True)).tasks) == 2
    assert git_log(vault_path)[0] == "task done: survey #1 Calibrate GPS"
    with pytest.raises(BadInput, match="already done"):
        projects.done_task(memory, TaskDoneRequest("survey", 1))
    with pytest.raises(NoteNotFound):
        projects.done_task(memory, TaskDoneRequest("survey", 9))
    with pytest.raises(NoteNotFound, match="no project 'other'"):
        projects.add_task(memory, TaskAddRequest("other", "x"))
    with pytest.raises(BadInput):
        projects.add_task(memory, TaskAddRequest("survey", "   "))


def test_tasks_carry_a_random_uid_so_two_clones_adding_one_keep_both(
    memory: Memory, vault_path: Path
) -> None:
    projects.new(memory, NewProjectRequest("survey"))
    first = projects.add_task(memory, TaskAddRequest("survey", "Calibrate GPS"))
    tasks_json = vault_path / P / "survey/tasks.json"
    base = tasks_json.read_text(encoding="utf-8")
    ours = projects.add_task(memory, TaskAddRequest("survey", "Write report"))
    ours_text = tasks_json.read_text(encoding="utf-8")
    git(vault_path, "reset", "-q", "--hard", "HEAD~1")  # the other clone, before our task
    theirs = projects.add_task(memory, TaskAddRequest("survey", "Order tablets"))
    theirs_text = tasks_json.read_text(encoding="utf-8")
    uids = [first.uid, ours.uid, theirs.uid]
    assert all(u and re.fullmatch(r"[0-9a-f]{16}", u) for u in uids) and len(set(uids)) == 3
    assert ours.id == theirs.id == 2  # the same number on both clones...
    assert [t["uid"] for t in json.loads(theirs_text)["tasks"]] == [first.uid, theirs.uid]
    merged = json.loads(merge_json(base, ours_text, theirs_text).text)["tasks"]
    # ...yet both tasks survive the merge, told apart by their uids
    assert sorted(t["text"] for t in merged) == ["Calibrate GPS", "Order tablets", "Write report"]
    assert {t["uid"] for t in merged} == set(uids)


def test_hand_written_tasks_are_listed_and_numbered_after(memory: Memory, vault_path: Path) -> None:
    projects.new(memory, NewProjectRequest("survey"))
    hand = {"tasks": [{"id": "t1", "title": "Write ADR", "status": "open", "owner": "ana"}, {"id": 4}]}
    (vault_path / P / "survey/tasks.json").write_text(json.dumps(hand), encoding="utf-8")
    listed = projects.list_tasks(memory, TaskListRequest("survey")).tasks
    assert [(t.id, t.text, t.status, t.uid) for t in listed] == [
        ("t1", "Write ADR", "open", None),
        (4, "", "open", None),
    ]
    assert projects.add_task(memory, TaskAddRequest("survey", "Next")).id == 5
    stored = json.loads((vault_path / P / "survey/tasks.json").read_text(encoding="utf-8"))["tasks"]
    assert stored[0] == hand["tasks"][0]  # fields tmem does not know are kept


def test_update_keeps_hand_written_text_and_appends_notes(memory: Memory, vault_path: Path) -> None:
    projects.new(memory, NewProjectRequest("survey"))
    status_path = vault_path / P / "survey/status.md"
    status_path.write_text(status_path.read_text() + "\nHand-written paragraph.\n", encoding="utf-8")
    text = status_path.read_text().replace("status: active", "status: active\nowner: ana")
    status_path.write_text(text, encoding="utf-8")
    projects.update(memory, ProjectUpdateRequest("survey", title="Survey 2", note="met the client"))
    after = status_path.read_text()
    assert "Hand-written paragraph." in after and "owner: ana" in after and "title: Survey 2" in after
    notes_md = (vault_path / P / "survey/notes.md").read_text()
    assert "- 2026-11-22 12:00: met the client" in notes_md
    assert registry(vault_path)["survey"]["title"] == "Survey 2"
    with pytest.raises(BadInput, match="nothing to update"):
        projects.update(memory, ProjectUpdateRequest("survey"))


def test_complete_distills_and_archives_in_one_commit(memory: Memory, vault_path: Path) -> None:
    projects.new(memory, NewProjectRequest("survey"))
    longterm.decide(memory, DecideRequest("Use CGCS2000", "national standard", project="survey"))
    longterm.lesson_add(memory, LongTermRequest("Naive datetimes broke CI", project="survey"))
    longterm.pattern_add(memory, LongTermRequest("Retry flaky uploads with backoff", project="survey"))
    add(memory, NewNote(text="Meeting notes with the client", project="survey"))
    before = len(git_log(vault_path))
    data = projects.complete(memory, CompleteRequest("survey", "shipped"))
    assert len(git_log(vault_path)) == before + 1
    assert git_log(vault_path)[0] == "project complete: survey (3 to long-term, 4 archived)"
    assert not (vault_path / P / "survey").exists()
    assert (vault_path / "memory/long-term/decisions/2026-11-22_use-cgcs2000.md").is_file()
    lessons = list((vault_path / "memory/long-term/knowledge_base/lessons").glob("naive-*.md"))
    assert len(lessons) == 1 and "project: survey" in lessons[0].read_text()
    assert list((vault_path / "memory/long-term/knowledge_base/patterns").glob("retry-*.md"))
    archived = vault_path / "memory/archive/projects/survey"
    assert sorted(p.name for p in archived.iterdir())[-3:] == ["notes.md", "status.md", "tasks.json"]
    status = (archived / "status.md").read_text()
    assert "status: completed" in status and "status_reason: shipped" in status
    assert "survey" not in registry(vault_path)
    assert len(data.moves) == 7 and data.commit == git(vault_path, "rev-parse", "HEAD").strip()
    assert Finished.from_dict(json.loads(json.dumps(data.to_dict()))) == data  # the daemon's wire
    shown = projects.show(memory, ProjectRequest("survey"))
    assert ProjectView.from_dict(json.loads(json.dumps(shown.to_dict()))) == shown
    assert shown.archived and shown.status == "completed"
    with pytest.raises(BadInput, match="archived"):
        projects.complete(memory, CompleteRequest("survey"))


def test_cancel_archives_everything(memory: Memory, vault_path: Path) -> None:
    projects.new(memory, NewProjectRequest("survey"))
    longterm.decide(memory, DecideRequest("Use CGCS2000", "national standard", project="survey"))
    projects.cancel(memory, CancelRequest("survey", "client left"))
    assert not (vault_path / "memory/long-term/decisions/2026-11-22_use-cgcs2000.md").exists()
    assert (vault_path / "memory/archive/projects/survey/2026-11-22_use-cgcs2000.md").is_file()
    assert git_log(vault_path)[0] == "project cancel: survey (0 to long-term, 4 archived)"
    listed = projects.list_projects(memory, ProjectListRequest(include_archived=True)).projects
    assert [(p.id, p.status, p.archived) for p in listed] == [("survey", "cancelled", True)]
    assert projects.list_projects(memory, ProjectListRequest()).projects == []


# ---- long-term ------------------------------------------------------------------------------------


def test_profile_set_replaces_one_line_and_keeps_the_rest(memory: Memory, vault_path: Path) -> None:
    path = vault_path / "memory/long-term/user_profile.md"
    original = path.read_text()
    path.write_text(
        original + "\nLikes short answers.\n\n- Editor: vim\n- timezone: UTC+8\n", encoding="utf-8"
    )
    data = longterm.profile_set(memory, ProfileSetRequest("editor", "helix"))
    assert data.facts == {"Editor": "helix", "timezone": "UTC+8"}
    longterm.profile_set(memory, ProfileSetRequest("language", "English"))
    text = path.read_text()
    assert "Likes short answers." in text and "One fact per line" in text
    assert text.endswith("- Editor: helix\n- timezone: UTC+8\n- language: English\n")
    assert git_log(vault_path)[0] == "profile set: language"
    for key, value in [("", "x"), ("a:b", "x"), ("k", "  ")]:
        with pytest.raises(BadInput):
            longterm.profile_set(memory, ProfileSetRequest(key, value))


def test_profile_set_keeps_times_of_facts_that_exist_and_stays_within_frontmatter_limits(
    memory: Memory, vault_path: Path
) -> None:
    """`fact_set_at` holds a time for each fact still in the profile, the latest KEPT_TIMES of them:
    one per fact ever set passed the 64 KiB frontmatter may hold, and every `profile set` after
    was refused."""
    path = vault_path / "memory/long-term/user_profile.md"
    longterm.profile_set(memory, ProfileSetRequest("editor", "vim"))
    longterm.profile_set(memory, ProfileSetRequest("shell", "fish"))
    path.write_text(path.read_text(encoding="utf-8").replace("- shell: fish\n", ""), encoding="utf-8")
    longterm.profile_set(memory, ProfileSetRequest("language", "English"))
    assert set(set_times(memory.vault.read_note(PROFILE).meta)) == {"editor", "language"}

    # A profile of many facts, each with its time (as `profile set` left them before):
    keys = [f"a fact about the person that has quite a long name {i:04d}" for i in range(800)]
    facts_text = "".join(f"- {k}: value {i}\n" for i, k in enumerate(keys))
    times = "".join(f"  {k}: '2026-01-01T00:00:00Z'\n" for k in keys[:790])  # 64.8 KB
    path.write_text(
        f"---\nid: user-profile\ntitle: User profile\nfact_set_at:\n{times}---\n# User profile\n\n{facts_text}",
        encoding="utf-8",
    )
    for key in keys[790:]:  # past 64 KiB kept whole
        longterm.profile_set(memory, ProfileSetRequest(key, "set again"))
    kept = set_times(memory.vault.read_note(PROFILE).meta)
    assert len(kept) == KEPT_TIMES and keys[-1] in kept
    head = path.read_text(encoding="utf-8").split("\n---\n", 1)[0]
    assert len(head) < 32 * 1024
    assert longterm.profile_show(memory, Empty()).facts[keys[-1]] == "set again"


def test_profile_set_on_a_profile_whose_frontmatter_grew_past_64_kib_keeps_working(
    run: Callable[..., Result], vault_path: Path
) -> None:
    """A frontmatter grown by hand past the 64 KiB of YAML tmem reads: every `profile set` was
    refused until it was trimmed. The fact goes in the body, the frontmatter keeps its bytes, and
    a line names the file and the frontmatter's size."""
    path = vault_path / PROFILE
    history = "".join(
        f"  - {2000 + i % 26}: a long line of a life written down by hand, number {i}\n" for i in range(1100)
    )
    head = f"---\nid: user-profile\ntitle: User profile\ncategory: profile\nlife:\n{history}---\n"
    body = "# User profile\n\nLikes short answers.\n\n- editor: vim\n- timezone: UTC+8\n"
    path.write_text(head + body, encoding="utf-8")
    git(vault_path, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qam", "my life")
    size = len(head.encode("utf-8")) // 1024
    assert size > 64

    done = ok(run("profile", "set", "editor", "helix"))
    assert done.stderr.strip() == (
        f"warning: {PROFILE}: its frontmatter is {size} KiB, past the 64 KiB tmem reads: 'editor' is "
        "set in the body and the frontmatter is left as it is (trim it by hand for tmem to read its "
        "fields again)"
    )
    ok(run("profile", "set", "language", "English"))
    assert path.read_text(encoding="utf-8") == head + body.replace("vim", "helix") + "- language: English\n"
    assert git_log(vault_path)[:2] == ["profile set: language", "profile set: editor"]
    assert git(vault_path, "status", "--porcelain") == ""
    shown = as_json(run("profile", "show", "--json"))
    assert shown["facts"] == {"editor": "helix", "timezone": "UTC+8", "language": "English"}


def test_profile_set_on_the_template_adds_a_list(memory: Memory, vault_path: Path) -> None:
    longterm.profile_set(memory, ProfileSetRequest("language", "English"))
    assert longterm.profile_show(memory, Empty()).facts == {"language": "English"}
    assert memory.vault.read_note("memory/long-term/user_profile.md").body.endswith(
        "-->\n\n- language: English\n"
    )


def test_knowledge_decision_lesson_pattern_homes(memory: Memory) -> None:
    fact = longterm.knowledge_add(
        memory, KnowledgeRequest("WGS84 and CGCS2000 differ by centimetres", "Geodesy")
    )
    assert fact.path.startswith("memory/long-term/knowledge_base/domains/geodesy/")
    assert fact.frontmatter["domain"] == "Geodesy" and fact.category == "fact"
    decision = longterm.decide(memory, DecideRequest("Use Postgres", "we need transactions"))
    assert decision.path == "memory/long-term/decisions/2026-11-22_use-postgres.md"
    assert "## Why\n\nwe need transactions" in decision.body
    assert longterm.lesson_add(memory, LongTermRequest("Pin the CI image")).path.startswith(
        "memory/long-term/knowledge_base/lessons/"
    )
    assert longterm.pattern_add(memory, LongTermRequest("Retry with backoff")).path.startswith(
        "memory/long-term/knowledge_base/patterns/"
    )
    with pytest.raises(BadInput, match="why"):
        longterm.decide(memory, DecideRequest("x", " "))
    with pytest.raises(NoteNotFound, match="no project"):
        longterm.decide(memory, DecideRequest("x", "y", project="nope"))
    with pytest.raises(BadInput, match="domain"):
        longterm.knowledge_add(memory, KnowledgeRequest("x", " "))


# ---- CLI ------------------------------------------------------------------------------------------


def test_cli_project_and_task_flow(run: Run, vault_path: Path) -> None:
    ok(run("project", "new", "survey", "--title", "Survey app", "--tags", "geodesy,gps"))
    added = as_json(run("task", "add", "--project", "survey", "Calibrate", "GPS", "--json"))
    assert added["id"] == 1 and added["text"] == "Calibrate GPS" and added["status"] == "open"
    assert re.fullmatch(r"[0-9a-f]{16}", added["uid"])
    tasks = json.loads(ok(run("task", "list", "-p", "survey", "--json")).stdout)
    assert [t["text"] for t in tasks] == ["Calibrate GPS"]
    assert ok(run("task", "done", "1", "-p", "survey")).stdout == "done: #1 Calibrate GPS\n"
    shown = json.loads(ok(run("project", "show", "survey", "--json")).stdout)
    assert shown["tags"] == ["geodesy", "gps"] and shown["tasks"][0]["status"] == "done"
    assert "survey" in ok(run("project", "list")).stdout
    ok(run("decide", "Use CGCS2000", "--why", "standard", "--project", "survey"))
    done = json.loads(ok(run("project", "complete", "survey", "--json")).stdout)
    # The CLI runs on the real clock: the decision's file name carries today's date.
    moved = {m["dst"] for m in done["moves"]}
    assert any(
        re.fullmatch(r"memory/long-term/decisions/\d{4}-\d{2}-\d{2}_use-cgcs2000\.md", p) for p in moved
    )
    assert ok(run("project", "list")).stdout == "no projects\n"


def test_cli_long_term_commands(run: Run, vault_path: Path) -> None:
    assert ok(run("profile", "set", "language", "English")).stdout == "language: English\n"
    assert json.loads(ok(run("profile", "show", "--json")).stdout)["facts"] == {"language": "English"}
    out = json.loads(ok(run("knowledge", "add", "--domain", "geodesy", "WGS84 vs CGCS2000", "--json")).stdout)
    assert out["path"].startswith("memory/long-term/knowledge_base/domains/geodesy/")
    assert ok(run("lesson", "add", "Pin", "the", "CI", "image")).stdout.startswith(
        "remembered pin-the-ci-image-"
    )
    assert ok(run("pattern", "add", "--tags", "net", "Retry")).stdout.startswith("remembered retry-")
    missing = run("decide", "Use X")
    assert missing.exit_code == 2 and "--why" in missing.output


def test_task_done_takes_a_uid_or_its_start_and_refuses_a_shared_number(
    memory: Memory, vault_path: Path
) -> None:
    projects.new(memory, NewProjectRequest("survey"))
    tasks = [
        {"id": 1, "text": "Calibrate", "uid": "0a1b2c3d4e5f6071"},
        {"id": 2, "text": "Laptop task", "uid": "1111aaaa2222bbbb"},
        {"id": 2, "text": "Desktop task", "uid": "9999cccc8888dddd"},  # an older merge's doing
    ]
    (vault_path / P / "survey/tasks.json").write_text(json.dumps({"tasks": tasks}), encoding="utf-8")
    with pytest.raises(
        BadInput, match="2 tasks numbered #2: give a uid .*1111aaaa2222bbbb.*9999cccc8888dddd"
    ):
        projects.done_task(memory, TaskDoneRequest("survey", 2))
    done = projects.done_task(memory, TaskDoneRequest("survey", "9999cccc8888dddd"))
    assert (done.text, done.status) == ("Desktop task", "done")
    assert git_log(vault_path)[0] == "task done: survey #2 Desktop task"
    assert projects.done_task(memory, TaskDoneRequest("survey", "1111aa")).text == "Laptop task"
    assert projects.done_task(memory, TaskDoneRequest("survey", "#1")).text == "Calibrate"
    with pytest.raises(NoteNotFound):
        projects.done_task(memory, TaskDoneRequest("survey", "1a"))  # too short to be a uid's start


def test_cli_lists_the_uids_of_tasks_that_share_a_number_and_takes_either(run: Run, vault_path: Path) -> None:
    ok(run("project", "new", "survey"))
    tasks = [
        {"id": 2, "text": "Laptop task", "uid": "1111aaaa2222bbbb"},
        {"id": 2, "text": "Desktop task", "uid": "9999cccc8888dddd"},
        {"id": 3, "text": "Alone", "uid": "5555eeee6666ffff"},
    ]
    (vault_path / P / "survey/tasks.json").write_text(json.dumps({"tasks": tasks}), encoding="utf-8")
    assert ok(run("task", "list", "-p", "survey")).stdout == (
        "[ ] #2 Laptop task  (uid 1111aaaa2222bbbb)\n"
        "[ ] #2 Desktop task  (uid 9999cccc8888dddd)\n"
        "[ ] #3 Alone\n"
    )
    line = one_error_line(run("task", "done", "2", "-p", "survey"), 2)
    assert "2 tasks numbered #2" in line and "9999cccc8888dddd" in line
    assert ok(run("task", "done", "9999cc", "-p", "survey")).stdout == "done: #2 Desktop task\n"
    assert ok(run("task", "done", "#3", "-p", "survey")).stdout == "done: #3 Alone\n"


def test_json_files_nested_past_the_recursion_limit_are_one_line(run: Run, vault_path: Path) -> None:
    """A tasks.json or active_contexts.json that came with a pull, nested thousands deep: the
    command that reads it says which file to fix, or reads it as empty; never a traceback."""
    ok(run("project", "new", "survey"))
    nested = "[" * 100_000
    (vault_path / "memory/mid-term/projects/survey/tasks.json").write_text(nested, encoding="utf-8")
    (vault_path / "memory/mid-term/active_contexts.json").write_text(nested, encoding="utf-8")
    line = one_error_line(run("task", "list", "-p", "survey"), 2)
    assert "tasks.json: not valid JSON" in line
    ok(run("context"))
    ok(run("project", "list"))
