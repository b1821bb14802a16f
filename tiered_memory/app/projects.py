"""Mid-term projects: `mid-term/projects/{id}/` with status.md, tasks.json and notes.md, registered in
`mid-term/active_contexts.json` so a session start can load the active ones without a scan.

Completing or cancelling a project applies its flow-table rules at once (decisions, lessons and
patterns to long-term, the rest to `archive/projects/{id}/`) in the same commit as the status change.
"""

from __future__ import annotations

__all__ = [
    "UID_PREFIX_MIN",
    "add_task",
    "cancel",
    "complete",
    "done_task",
    "find_task",
    "list_projects",
    "list_tasks",
    "new",
    "new_uid",
    "show",
    "task_record",
    "update",
]

import contextlib
import json
import os
import secrets
from datetime import datetime
from typing import Any

from tiered_memory.app.api.projects import (
    CancelRequest,
    CompleteRequest,
    Finished,
    NewProjectRequest,
    ProjectList,
    ProjectListRequest,
    ProjectRequest,
    ProjectSummary,
    ProjectUpdateRequest,
    ProjectView,
    Task,
    TaskAddRequest,
    TaskDoneRequest,
    TaskList,
    TaskListRequest,
)
from tiered_memory.app.lifecycle import apply_moves, load_notes
from tiered_memory.app.memory import Memory
from tiered_memory.app.project_files import (
    PROJECT_ID,
    archived_folder,
    exists,
    folder,
    notes_rel,
    require,
    status_note,
    status_rel,
    sync_registry,
    tasks_rel,
    validate_id,
)
from tiered_memory.errors import BadInput, NoteNotFound, NoteParseError
from tiered_memory.model import file_names, layout, tiers
from tiered_memory.model import note as notes
from tiered_memory.storage.transaction import Transaction
from tiered_memory.storage.vault import Vault


def new(memory: Memory, request: NewProjectRequest) -> ProjectView:
    """Create a project's folder and files and register it, in one commit."""
    pid = validate_id(request.id)
    title, description, tags = request.title, request.description, request.tags
    vault = memory.vault
    _check_new(vault, pid)
    now = memory.now()
    name = memory.redact(notes.one_line(title or pid).strip())[:80] or pid
    meta: dict[str, Any] = {
        "id": f"project-{pid}",
        "title": name,
        "category": "project",
        "status": "active",
        "project": pid,
    }
    if tags:
        meta["tags"] = list(dict.fromkeys(t.strip().lstrip("#") for t in tags if t.strip()))
    meta.update({"created": now, "updated": now})
    body = (
        f"# {name}\n\n{memory.redact(description.strip())}\n"
        if description and description.strip()
        else f"# {name}\n"
    )
    status = notes.Note(status_rel(pid), meta, body, True)
    notes_md = notes.Note(
        notes_rel(pid),
        {
            "id": f"project-{pid}-notes",
            "title": f"{name}: notes",
            "category": "note",
            "project": pid,
            "created": now,
            "updated": now,
        },
        f"# {name}: notes\n\n",
        True,
    )
    with memory.change(f"project new: {pid} ({name})") as tx:
        _check_new(vault, pid)  # again under the lock: another `project new` may have made it
        tx.create_note(status)
        tx.create_note(notes_md)
        tx.write_text(tasks_rel(pid), _dump_tasks({"tasks": []}))
        sync_registry(tx)
    return show(memory, ProjectRequest(pid))


def _check_new(vault: Vault, pid: str) -> None:
    if exists(vault, pid):
        raise BadInput(f"project '{pid}' already exists ({folder(pid)})")
    if archived_folder(vault, pid):
        raise BadInput(f"project '{pid}' already exists in the archive; choose another id")
    why = file_names.problem(pid)
    if why is not None:  # its folder would stop a clone on Windows
        raise BadInput(f"invalid project id '{pid}': {why}; choose another id")
    for base in (layout.PROJECTS, layout.ARCHIVE_PROJECTS):
        with contextlib.suppress(OSError):
            same = [n for n in os.listdir(vault.abspath(base)) if file_names.fold(n) == file_names.fold(pid)]
            if same:  # one folder on macOS and Windows
                raise BadInput(
                    f"project '{same[0]}' already exists ({base}/{same[0]}): ids differ only in case"
                )


def show(memory: Memory, request: ProjectRequest) -> ProjectView:
    """A project, active or archived: its status, description, tasks and files."""
    pid = validate_id(request.id)
    vault = memory.vault
    if exists(vault, pid):
        where = folder(pid)
        status = status_note(vault, pid)
        tasks = _load_tasks(vault, pid)["tasks"]
    else:
        archived = archived_folder(vault, pid)
        if not archived:
            raise NoteNotFound(f"no project '{pid}'")
        where = archived
        rel = f"{archived}/status.md"
        status = vault.read_note(rel) if vault.abspath(rel).is_file() else status_note(vault, pid)
        tasks = _read_tasks_file(vault, f"{archived}/tasks.json")["tasks"]
    files = sorted(
        vault.relpath(p)
        for p in vault.abspath(where).rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(vault.abspath(where)).parts)
    )
    return ProjectView(
        id=pid,
        title=status.title,
        status=status.status,
        archived=where != folder(pid),
        tags=status.tags,
        path=where,
        created=status.created,
        updated=status.updated,
        description=status.body.strip(),
        tasks=[task_record(t) for t in tasks],
        files=files,
    )


def list_projects(memory: Memory, request: ProjectListRequest) -> ProjectList:
    vault = memory.vault
    out: list[ProjectSummary] = []
    bases = [layout.PROJECTS] + ([layout.ARCHIVE_PROJECTS] if request.include_archived else [])
    for base in bases:
        root = vault.abspath(base)
        for child in sorted(root.iterdir()) if root.is_dir() else []:
            if child.is_dir() and not child.name.startswith(".") and PROJECT_ID.match(child.name):
                try:
                    out.append(_summary(vault, base, child.name))
                except NoteParseError:
                    continue
    return ProjectList(out)


def _summary(vault: Vault, base: str, name: str) -> ProjectSummary:
    where = f"{base}/{name}"
    rel = f"{where}/status.md"
    status = vault.read_note(rel) if vault.abspath(rel).is_file() else notes.Note(rel, {"title": name})
    tasks = _read_tasks_file(vault, f"{where}/tasks.json")["tasks"]
    return ProjectSummary(
        id=name,
        title=status.title,
        status=status.status,
        archived=base != layout.PROJECTS,
        path=where,
        updated=status.updated,
        open_tasks=sum(1 for t in tasks if t.get("status") != "done"),
    )


def update(memory: Memory, request: ProjectUpdateRequest) -> ProjectView:
    """Change a project's title or tags, or append a dated line to its notes.md."""
    vault = memory.vault
    pid = require(vault, request.id)
    title, tags, note = request.title, request.tags, request.note
    if title is None and tags is None and not note:
        raise BadInput("nothing to update: give --title, --tags or --note")
    now = memory.now()
    changes: dict[str, Any] = {"updated": now}
    if title is not None:
        if not title.strip():
            raise BadInput("the title cannot be empty")
        changes["title"] = memory.redact(notes.one_line(title).strip())[:80]
    if tags is not None:
        changes["tags"] = list(dict.fromkeys(t.strip().lstrip("#") for t in tags if t.strip())) or None
    what = ", ".join(k for k in ("title", "tags") if k in changes)
    if note and note.strip():
        what = ", ".join(filter(None, [what, "note"]))
    with memory.change(f"project update: {pid} ({what})") as tx:
        require(vault, pid)  # a writer before this one may have finished it
        tx.write_note(status_note(tx, pid).with_meta(**changes))
        if note and note.strip():
            _append_note(memory, tx, pid, note, now)
        sync_registry(tx)
    return show(memory, ProjectRequest(pid))


def _append_note(memory: Memory, tx: Transaction, pid: str, text: str, now: datetime) -> str:
    rel = notes_rel(pid)
    if tx.exists(rel):
        current = tx.read_note(rel)
    else:
        current = notes.Note(
            rel,
            {"id": f"project-{pid}-notes", "title": f"{pid}: notes", "category": "note", "project": pid},
            f"# {pid}: notes\n\n",
            True,
        )
    line = " ".join(memory.redact(text.strip()).split())
    body = current.body if current.body.endswith("\n") or not current.body else current.body + "\n"
    updated = notes.Note(rel, dict(current.meta), f"{body}- {now:%Y-%m-%d %H:%M}: {line}\n", True).with_meta(
        updated=now
    )
    if current.parse_warning:
        raise NoteParseError(f"{rel}: {current.parse_warning}; fix it by hand before tmem changes it")
    tx.write_note(updated)
    return rel


def complete(memory: Memory, request: CompleteRequest) -> Finished:
    """Decisions, lessons and patterns go to long-term, the rest to the archive."""
    return _finish(memory, request.id, "completed", request.summary)


def cancel(memory: Memory, request: CancelRequest) -> Finished:
    """The whole folder goes to archive/projects/{id}/."""
    return _finish(memory, request.id, "cancelled", request.reason)


def _finish(memory: Memory, value: str, state: str, why: str | None) -> Finished:
    """Set the status, then apply the project's flow-table moves, all in one commit."""
    vault = memory.vault
    pid = require(vault, value)
    verb = "complete" if state == "completed" else "cancel"
    reason = memory.redact(why.strip()) if why and why.strip() else None
    with memory.change(f"project {verb}: {pid}") as tx:
        pid = require(vault, value)  # a writer before this one may have finished it
        status = status_note(tx, pid)
        if status.status == state:
            raise BadInput(f"project '{pid}' is already {state}")
        now = memory.now()
        changes: dict[str, Any] = {"status": state, "updated": now, f"{state}_at": now}
        if reason is not None:
            changes["status_reason"] = reason
        tx.write_note(status.with_meta(**changes))
        found, _hashes = load_notes(vault)
        moves = [m for m in tiers.plan(found, vault.config.lifecycle, now) if m.group == f"project:{pid}"]
        result = apply_moves(tx, moves, now)
        sync_registry(tx)
        to_long = sum(1 for a in result.applied if a.final and notes.tier_of_path(a.final) == "long")
        archived = sum(1 for a in result.applied if a.final and notes.tier_of_path(a.final) == "archive")
        body = "\n".join(f"{a.move.src} -> {a.final} ({a.move.reason})" for a in result.applied)
        tx.message = f"project {verb}: {pid} ({to_long} to long-term, {archived} archived)\n\n{body}".rstrip()
    return Finished(pid, state, [a.moved() for a in result.applied], tx.sha)


# ---- tasks ------------------------------------------------------------------------------------


def _dump_tasks(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _read_tasks_file(source: Vault | Transaction, rel: str) -> dict[str, Any]:
    """A tasks.json, read from the vault or, to change it, through the unit of work."""
    try:
        data = json.loads(source.read_bytes(rel).decode("utf-8"))
    except FileNotFoundError:
        return {"tasks": []}
    except (OSError, ValueError, RecursionError):  # RecursionError: nested thousands deep
        raise NoteParseError(f"{rel}: not valid JSON; fix it by hand before tmem changes it") from None
    if isinstance(data, list):
        data = {"tasks": data}
    if not isinstance(data, dict) or not isinstance(data.get("tasks", []), list):
        raise NoteParseError(f'{rel}: expected {{"tasks": [...]}}; fix it by hand before tmem changes it')
    data.setdefault("tasks", [])
    data["tasks"] = [t for t in data["tasks"] if isinstance(t, dict)]
    return data


def _load_tasks(source: Vault | Transaction, pid: str) -> dict[str, Any]:
    return _read_tasks_file(source, tasks_rel(pid))


def _save_tasks(memory: Memory, tx: Transaction, pid: str, data: dict[str, Any]) -> None:
    tx.write_text(tasks_rel(pid), _dump_tasks(data))
    # tasks.json has no dates of its own: the project's status.md records the activity.
    tx.write_note(status_note(tx, pid).with_meta(updated=memory.now()))
    sync_registry(tx)


def task_record(task: dict[str, Any]) -> Task:
    """A task as tasks.json holds it; entries written by hand may lack fields or use `title`."""
    raw_id = task.get("id")
    text = task.get("text", task.get("title", ""))
    return Task(
        id=raw_id if isinstance(raw_id, int | str) and not isinstance(raw_id, bool) else None,
        text=str(text if text is not None else ""),
        status=str(task.get("status") or "open"),
        created=_text_or_none(task.get("created")),
        done=_text_or_none(task.get("done")),
        uid=_text_or_none(task.get("uid")),
    )


def _text_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def new_uid() -> str:
    """A task's identity across machines: random, so two clones never pick the same one."""
    return secrets.token_hex(8)


def add_task(memory: Memory, request: TaskAddRequest) -> Task:
    pid = require(memory.vault, request.project)
    line = " ".join(memory.redact(request.text).split())
    if not line:
        raise BadInput("the task text is empty")
    with memory.change(f"task add: {pid}") as tx:
        data = _load_tasks(tx, pid)
        next_id = max((int(t["id"]) for t in data["tasks"] if isinstance(t.get("id"), int)), default=0) + 1
        task = {
            "id": next_id,
            "text": line,
            "status": "open",
            "created": memory.now().isoformat(),
            "uid": new_uid(),
        }
        data["tasks"].append(task)
        _save_tasks(memory, tx, pid, data)
        tx.message = f"task add: {pid} #{next_id} {line[:60]}"
    return task_record(task)


def done_task(memory: Memory, request: TaskDoneRequest) -> Task:
    pid = require(memory.vault, request.project)
    with memory.change(f"task done: {pid} #{request.task}") as tx:
        data = _load_tasks(tx, pid)
        task = find_task(data["tasks"], request.task, pid)
        task_id = task.get("id")
        if task.get("status") == "done":
            raise BadInput(f"task #{task_id} of {pid} is already done")
        task["status"] = "done"
        task["done"] = memory.now().isoformat()
        _save_tasks(memory, tx, pid, data)
        tx.message = f"task done: {pid} #{task_id} {str(task.get('text', ''))[:60]}"
        return task_record(task)


UID_PREFIX_MIN = 4  # shorter starts of a uid would match a mistyped number by chance


def find_task(tasks: list[dict[str, Any]], ref: int | str, pid: str) -> dict[str, Any]:
    """A task by the number people type (`2` or `#2`) or by its uid, whole or a unique start of
    at least UID_PREFIX_MIN characters. A number two tasks share (an old merge gave both one) is
    refused with their uids, so each stays reachable."""
    given = str(ref).strip().removeprefix("#").lower()
    if not given:
        raise BadInput("give a task's number or uid")
    for task in tasks:
        if task.get("uid") == given:
            return task
    if given.isdigit():
        numbered = [t for t in tasks if str(t.get("id")) == given and not isinstance(t.get("id"), bool)]
        if len(numbered) == 1:
            return numbered[0]
        if numbered:
            uids = ", ".join(str(t.get("uid")) for t in numbered)
            raise BadInput(
                f"project '{pid}' has {len(numbered)} tasks numbered #{given}: give a uid ({uids})"
            )
    if len(given) >= UID_PREFIX_MIN:
        started = [t for t in tasks if isinstance(t.get("uid"), str) and t["uid"].startswith(given)]
        if len(started) == 1:
            return started[0]
        if started:
            raise BadInput(f"'{given}' starts {len(started)} task uids of '{pid}': give more of it")
    raise NoteNotFound(f"project '{pid}' has no task #{given}")


def list_tasks(memory: Memory, request: TaskListRequest) -> TaskList:
    pid = require(memory.vault, request.project)
    tasks = _load_tasks(memory.vault, pid)["tasks"]
    return TaskList([task_record(t) for t in tasks if request.include_done or t.get("status") != "done"])
