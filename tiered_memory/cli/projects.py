"""Mid-term project commands: `tmem project ...` and `tmem task ...`."""

from __future__ import annotations

from typing import Any

import click

from tiered_memory.cli.options import emit, json_option, open_memory, split_list


def _project_text(data: dict[str, Any]) -> str:
    lines = [
        f"{data['id']}: {data['title']}  [{data['status']}{', archived' if data['archived'] else ''}]  {data['path']}"
    ]
    if data["tags"]:
        lines.append("tags: " + ", ".join(data["tags"]))
    if data["description"]:
        lines.append(data["description"])
    for task in data["tasks"]:
        mark = "x" if task.get("status") == "done" else " "
        lines.append(f"  [{mark}] #{task.get('id')} {task.get('text')}")
    return "\n".join(lines)


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
    from tiered_memory.app import projects

    data = projects.new(open_memory(ctx), project_id, title, description, split_list(tags))
    emit(data, as_json, f"created project {data['id']} ({data['path']})")


@project.command("show")
@click.argument("project_id")
@json_option
@click.pass_context
def project_show(ctx: click.Context, project_id: str, as_json: bool) -> None:
    """Show a project: status, description, tasks (archived projects too)."""
    from tiered_memory.app import projects

    data = projects.show(open_memory(ctx), project_id)
    emit(data, as_json, lambda: _project_text(data))


@project.command("list")
@click.option("--all", "include_archived", is_flag=True, help="Include archived projects.")
@json_option
@click.pass_context
def project_list(ctx: click.Context, include_archived: bool, as_json: bool) -> None:
    """List projects (active ones unless --all)."""
    from tiered_memory.app import projects

    rows = projects.list_projects(open_memory(ctx), include_archived)
    text = "\n".join(f"{r['id']:<24} {r['status']:<10} {r['open_tasks']:>3} open  {r['title']}" for r in rows)
    emit(rows, as_json, text or "no projects")


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
    from tiered_memory.app import projects

    data = projects.update(
        open_memory(ctx), project_id, title=title, tags=split_list(tags) if tags else None, note=note
    )
    emit(data, as_json, f"updated project {data['id']}")


def _finish_text(data: dict[str, Any]) -> str:
    lines = [f"project {data['id']} {data['status']}"]
    lines += [f"  {m['src']} -> {m['dst']}" for m in data["moves"]]
    return "\n".join(lines)


@project.command("complete")
@click.argument("project_id")
@click.option("--summary", help="How it ended (kept in status.md).")
@json_option
@click.pass_context
def project_complete(ctx: click.Context, project_id: str, summary: str | None, as_json: bool) -> None:
    """Complete a project: decisions, lessons and patterns go to long-term, the rest to the archive."""
    from tiered_memory.app import projects

    data = projects.complete(open_memory(ctx), project_id, summary)
    emit(data, as_json, lambda: _finish_text(data))


@project.command("cancel")
@click.argument("project_id")
@click.option("--reason", help="Why (kept in status.md).")
@json_option
@click.pass_context
def project_cancel(ctx: click.Context, project_id: str, reason: str | None, as_json: bool) -> None:
    """Cancel a project: its folder moves to archive/projects/{id}/."""
    from tiered_memory.app import projects

    data = projects.cancel(open_memory(ctx), project_id, reason)
    emit(data, as_json, lambda: _finish_text(data))


@click.group()
def task() -> None:
    """A project's tasks (mid-term/projects/{id}/tasks.json)."""


_project_option = click.option("--project", "-p", "project_id", required=True, help="The project id.")


@task.command("add")
@click.argument("text", nargs=-1, required=True)
@_project_option
@json_option
@click.pass_context
def task_add(ctx: click.Context, text: tuple[str, ...], project_id: str, as_json: bool) -> None:
    """Add a task to a project."""
    from tiered_memory.app import projects

    data = projects.add_task(open_memory(ctx), project_id, " ".join(text))
    emit(data, as_json, f"added task #{data['id']} to {project_id}")


@task.command("done")
@click.argument("task_id", type=int)
@_project_option
@json_option
@click.pass_context
def task_done(ctx: click.Context, task_id: int, project_id: str, as_json: bool) -> None:
    """Mark task TASK_ID done."""
    from tiered_memory.app import projects

    data = projects.done_task(open_memory(ctx), project_id, task_id)
    emit(data, as_json, f"done: #{data['id']} {data['text']}")


@task.command("list")
@_project_option
@click.option("--all", "include_done", is_flag=True, help="Include done tasks.")
@json_option
@click.pass_context
def task_list(ctx: click.Context, project_id: str, include_done: bool, as_json: bool) -> None:
    """List a project's open tasks (all with --all)."""
    from tiered_memory.app import projects

    rows = projects.list_tasks(open_memory(ctx), project_id, include_done)
    text = "\n".join(
        f"[{'x' if t.get('status') == 'done' else ' '}] #{t.get('id')} {t.get('text')}" for t in rows
    )
    emit(rows, as_json, text or "no open tasks")


COMMANDS: list[click.Command] = [project, task]
