"""Mid-term project commands: `tmem project ...` and `tmem task ...`.

Each parses its input, runs one operation through the backend and renders the result with `present`.
"""

from __future__ import annotations

__all__ = [
    "project",
    "project_cancel",
    "project_complete",
    "project_list",
    "project_new",
    "project_show",
    "project_update",
    "task",
    "task_add",
    "task_done",
    "task_list",
]

import click

from tiered_memory.app.api.projects import (
    PROJECT_CANCEL,
    PROJECT_COMPLETE,
    PROJECT_LIST,
    PROJECT_NEW,
    PROJECT_SHOW,
    PROJECT_UPDATE,
    TASK_ADD,
    TASK_DONE,
    TASK_LIST,
    CancelRequest,
    CompleteRequest,
    NewProjectRequest,
    ProjectListRequest,
    ProjectRequest,
    ProjectUpdateRequest,
    TaskAddRequest,
    TaskDoneRequest,
    TaskListRequest,
)
from tiered_memory.cli.options import backend, emit, json_option, split_list
from tiered_memory.present import projects as show


@click.group()
def project() -> None:
    """Mid-term projects: mid-term/projects/{id}/ with status.md, tasks.json and notes.md."""


@project.command("new")
@click.argument("project_id")
@click.option("--title", help="A readable name (default: the id).")
@click.option("--description", help="What the project is about.")
@click.option("--tags", multiple=True, help="Comma-separated tags (repeatable).")
@json_option
@click.pass_context
def project_new(
    ctx: click.Context,
    project_id: str,
    title: str | None,
    description: str | None,
    tags: tuple[str, ...],
    as_json: bool,
) -> None:
    """Create project PROJECT_ID and register it in active_contexts.json."""
    request = NewProjectRequest(project_id, title, description, split_list(tags))
    view = backend(ctx).run(PROJECT_NEW, request)
    emit(view.to_dict(), as_json, show.created_text(view))


@project.command("show")
@click.argument("project_id")
@json_option
@click.pass_context
def project_show(ctx: click.Context, project_id: str, as_json: bool) -> None:
    """Show a project: status, description, tasks (archived projects too)."""
    view = backend(ctx).run(PROJECT_SHOW, ProjectRequest(project_id))
    emit(view.to_dict(), as_json, lambda: show.project_text(view))


@project.command("list")
@click.option("--all", "include_archived", is_flag=True, help="Include archived projects.")
@json_option
@click.pass_context
def project_list(ctx: click.Context, include_archived: bool, as_json: bool) -> None:
    """List projects (active ones unless --all)."""
    listing = backend(ctx).run(PROJECT_LIST, ProjectListRequest(include_archived))
    emit(show.project_list_json(listing), as_json, lambda: show.project_list_text(listing))


@project.command("update")
@click.argument("project_id")
@click.option("--title", help="New title.")
@click.option("--tags", multiple=True, help="Replace the tags (comma-separated, repeatable).")
@click.option("--note", help="Append a dated line to the project's notes.md.")
@json_option
@click.pass_context
def project_update(
    ctx: click.Context,
    project_id: str,
    title: str | None,
    tags: tuple[str, ...],
    note: str | None,
    as_json: bool,
) -> None:
    """Change a project's title or tags, or add a note."""
    request = ProjectUpdateRequest(project_id, title, split_list(tags) if tags else None, note)
    view = backend(ctx).run(PROJECT_UPDATE, request)
    emit(view.to_dict(), as_json, show.updated_text(view))


@project.command("complete")
@click.argument("project_id")
@click.option("--summary", help="How it ended (kept in status.md).")
@json_option
@click.pass_context
def project_complete(ctx: click.Context, project_id: str, summary: str | None, as_json: bool) -> None:
    """Complete a project: decisions, lessons and patterns go to long-term, the rest to the archive."""
    done = backend(ctx).run(PROJECT_COMPLETE, CompleteRequest(project_id, summary))
    emit(done.to_dict(), as_json, lambda: show.finished_text(done))


@project.command("cancel")
@click.argument("project_id")
@click.option("--reason", help="Why (kept in status.md).")
@json_option
@click.pass_context
def project_cancel(ctx: click.Context, project_id: str, reason: str | None, as_json: bool) -> None:
    """Cancel a project: its folder moves to archive/projects/{id}/."""
    done = backend(ctx).run(PROJECT_CANCEL, CancelRequest(project_id, reason))
    emit(done.to_dict(), as_json, lambda: show.finished_text(done))


@click.group()
def task() -> None:
    """A project's tasks: add them, mark them done, list them.

    They are kept in mid-term/projects/{id}/tasks.json.
    """


_project_option = click.option("--project", "-p", "project_id", required=True, help="The project id.")


@task.command("add")
@click.argument("text", nargs=-1, required=True)
@_project_option
@json_option
@click.pass_context
def task_add(ctx: click.Context, text: tuple[str, ...], project_id: str, as_json: bool) -> None:
    """Add a task to a project."""
    added = backend(ctx).run(TASK_ADD, TaskAddRequest(project_id, " ".join(text)))
    emit(added.to_dict(), as_json, show.task_added_text(added, project_id))


@task.command("done")
@click.argument("task_id")
@_project_option
@json_option
@click.pass_context
def task_done(ctx: click.Context, task_id: str, project_id: str, as_json: bool) -> None:
    """Mark task TASK_ID done: its number (as `task list` shows it) or its uid (`--json`), or the
    start of the uid."""
    done = backend(ctx).run(TASK_DONE, TaskDoneRequest(project_id, task_id))
    emit(done.to_dict(), as_json, show.task_done_text(done))


@task.command("list")
@_project_option
@click.option("--all", "include_done", is_flag=True, help="Include done tasks.")
@json_option
@click.pass_context
def task_list(ctx: click.Context, project_id: str, include_done: bool, as_json: bool) -> None:
    """List a project's open tasks (all with --all)."""
    listing = backend(ctx).run(TASK_LIST, TaskListRequest(project_id, include_done))
    emit(show.task_list_json(listing), as_json, lambda: show.task_list_text(listing))
