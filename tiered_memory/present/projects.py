"""Projects and their tasks, as text and as JSON."""

from __future__ import annotations

__all__ = [
    "created_text",
    "finished_text",
    "project_list_json",
    "project_list_text",
    "project_text",
    "task_added_text",
    "task_done_text",
    "task_line",
    "task_list_json",
    "task_list_text",
    "updated_text",
]

from typing import Any

from tiered_memory.app.api.projects import Finished, ProjectList, ProjectView, Task, TaskList


def task_line(task: Task) -> str:
    mark = "x" if task.status == "done" else " "
    return f"[{mark}] #{task.id} {task.text}"


def project_text(view: ProjectView) -> str:
    archived = ", archived" if view.archived else ""
    lines = [f"{view.id}: {view.title}  [{view.status}{archived}]  {view.path}"]
    if view.tags:
        lines.append("tags: " + ", ".join(view.tags))
    if view.description:
        lines.append(view.description)
    lines += [f"  {task_line(t)}" for t in view.tasks]
    return "\n".join(lines)


def project_list_json(listing: ProjectList) -> list[dict[str, Any]]:
    return [p.to_dict() for p in listing.projects]


def project_list_text(listing: ProjectList) -> str:
    lines = [f"{p.id:<24} {p.status:<10} {p.open_tasks:>3} open  {p.title}" for p in listing.projects]
    return "\n".join(lines) or "no projects"


def finished_text(done: Finished) -> str:
    lines = [f"project {done.id} {done.status}"]
    lines += [f"  {m.src} -> {m.dst}" for m in done.moves]
    return "\n".join(lines)


def task_list_json(listing: TaskList) -> list[dict[str, Any]]:
    return [t.to_dict() for t in listing.tasks]


def task_list_text(listing: TaskList) -> str:
    numbers = [t.id for t in listing.tasks]
    lines = []
    for t in listing.tasks:
        shared = t.uid and numbers.count(t.id) > 1  # `task done UID` tells them apart
        lines.append(task_line(t) + (f"  (uid {t.uid})" if shared else ""))
    return "\n".join(lines) or "no open tasks"


def created_text(view: ProjectView) -> str:
    return f"created project {view.id} ({view.path})"


def updated_text(view: ProjectView) -> str:
    return f"updated project {view.id}"


def task_added_text(task: Task, project_id: str) -> str:
    return f"added task #{task.id} to {project_id}"


def task_done_text(task: Task) -> str:
    return f"done: #{task.id} {task.text}"
