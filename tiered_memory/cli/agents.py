"""Commands for agents: `context`, `entity add|show|update|list`, `scan` (`mcp` is in cli/mcp.py)."""

from __future__ import annotations

import sys
from typing import Any

import click

from tiered_memory.cli.options import _vault_root, emit, json_option, open_memory, split_list, warn


@click.command()
@click.option("--query", "-q", help="What the session is about; default: recent and important memories.")
@click.option("--project", help="Project id (default: the active one in mid-term/active_contexts.json).")
@click.option("--entity", help="A person or thing the session is about: their profile and notes.")
@click.option("--budget", type=int, help="Token budget (default: context.budget_tokens).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["markdown", "json"]),
    default="markdown",
    show_default=True,
    help="markdown: the <project-memory> block for a system prompt; json: the block and its parts.",
)
@click.option("--include-sensitive", is_flag=True, help="Also memories marked sensitive.")
@click.pass_context
def context(
    ctx: click.Context,
    query: str | None,
    project: str | None,
    entity: str | None,
    budget: int | None,
    fmt: str,
    include_sensitive: bool,
) -> None:
    """Print a context block for an agent's system prompt, within a token budget."""
    if budget is not None and budget < 1:
        raise click.BadParameter("must be a positive number of tokens", param_hint="--budget")
    kwargs: dict[str, Any] = {
        "query": query,
        "project": project,
        "entity": entity,
        "budget": budget,
        "include_sensitive": include_sensitive,
        "fmt": fmt,
    }
    data = _context_via_daemon(ctx, kwargs)
    if data is None:
        from tiered_memory.app.context import build_context

        data = build_context(open_memory(ctx), **kwargs).to_dict()
    for notice in data.get("notices") or []:
        warn(notice)
    emit(data, fmt == "json", data["text"])


def _context_via_daemon(ctx: click.Context, kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """The daemon's answer when one runs (its index is warm), else None."""
    from tiered_memory.daemon import client

    via_daemon = getattr(client, "context_via_daemon", None)
    if via_daemon is None:
        return None
    # The daemon raises the same BadInput / NoteNotFound an in-process build would.
    answer = via_daemon(_vault_root(ctx), **kwargs)
    if isinstance(answer, dict) and isinstance(answer.get("text"), str):
        return answer
    return None


# ---- entities ------------------------------------------------------------------------------------


@click.group()
def entity() -> None:
    """People and other entities: profiles under long-term/relationships/."""


def _entity_text(data: dict[str, Any], related: list[Any] | None = None) -> str:
    lines = [f"{data['name']} ({data['kind']})  id: {data['id']}  {data['path']}"]
    if data["aliases"]:
        lines.append(f"  also: {', '.join(data['aliases'])}")
    for key, label in (("preferences", "likes"), ("avoid_topics", "avoid"), ("personality", "personality")):
        if data[key]:
            lines.append(f"  {label}: {'; '.join(data[key])}")
    lines.append(f"  last seen: {data['last_seen'] or 'never'}   interactions: {data['interaction_count']}")
    lines += [f"  - {n}" for n in data["notes"]]
    if related:
        from tiered_memory.present.notes import format_rows

        lines += ["", f"notes about {data['name']}:", format_rows(related)]
    return "\n".join(lines)


_KINDS = click.Choice(["person", "organization", "project", "place", "thing"])


@entity.command("add")
@click.argument("name")
@click.option(
    "--kind",
    type=_KINDS,
    default="person",
    show_default=True,
    help="What the entity is: a person, a project, a place...",
)
@click.option("--alias", "aliases", multiple=True, help="Another name notes may use (repeatable).")
@click.option("--preference", "preferences", multiple=True, help="Something they like (repeatable).")
@click.option("--avoid", multiple=True, help="A topic to avoid with them (repeatable).")
@click.option("--personality", help="A few words on their personality.")
@click.option("--note", help="A dated note.")
@click.option("--sensitive", is_flag=True, help="Keep the profile out of contexts and remote embedding APIs.")
@json_option
@click.pass_context
def entity_add(ctx: click.Context, name: str, as_json: bool, **fields: Any) -> None:
    """Create a profile for NAME (one commit)."""
    from tiered_memory.app.entities import add_entity

    memory = open_memory(ctx)
    added = add_entity(
        memory,
        name,
        kind=fields["kind"],
        aliases=split_list(fields["aliases"]),
        preferences=list(fields["preferences"]),
        avoid=list(fields["avoid"]),
        personality=fields["personality"],
        note=fields["note"],
        sensitive=fields["sensitive"],
    )
    emit(added.to_dict(), as_json, f"added {added.name} ({added.note.path})")


@entity.command("show")
@click.argument("name")
@click.option("--limit", type=int, default=20, show_default=True, help="Most related notes listed.")
@json_option
@click.pass_context
def entity_show(ctx: click.Context, name: str, limit: int, as_json: bool) -> None:
    """A profile and the notes about that entity."""
    from tiered_memory.app.entities import get_entity, related_rows
    from tiered_memory.present.notes import row_dict

    memory = open_memory(ctx)
    found = get_entity(memory, name)
    related = related_rows(memory, found)[:limit]
    data = {**found.to_dict(), "related": [row_dict(r) for r in related]}
    emit(data, as_json, lambda: _entity_text(data, related))


@entity.command("update")
@click.argument("name")
@click.option("--preference", "add_preferences", multiple=True, help="Add something they like (repeatable).")
@click.option("--remove-preference", "remove_preferences", multiple=True, help="Remove a preference.")
@click.option("--avoid", "add_avoid", multiple=True, help="Add a topic to avoid (repeatable).")
@click.option("--remove-avoid", multiple=True, help="Remove a topic to avoid.")
@click.option("--personality", help="Replace the personality text.")
@click.option("--note", help="Append a dated note.")
@click.option("--alias", "aliases", multiple=True, help="Add another name (repeatable).")
@click.option("--kind", type=_KINDS, help="Change what the entity is.")
@click.option("--seen", is_flag=True, help="Record an interaction now (last seen, interaction count + 1).")
@click.option("--sensitive/--not-sensitive", default=None, help="Mark or unmark the profile sensitive.")
@json_option
@click.pass_context
def entity_update(ctx: click.Context, name: str, as_json: bool, **fields: Any) -> None:
    """Change a profile (one commit)."""
    from tiered_memory.app.entities import update_entity

    memory = open_memory(ctx)
    updated = update_entity(
        memory,
        name,
        add_preferences=list(fields["add_preferences"]),
        remove_preferences=list(fields["remove_preferences"]),
        add_avoid=list(fields["add_avoid"]),
        remove_avoid=list(fields["remove_avoid"]),
        personality=fields["personality"],
        note=fields["note"],
        aliases=split_list(fields["aliases"]),
        kind=fields["kind"],
        seen=fields["seen"],
        sensitive=fields["sensitive"],
    )
    emit(updated.to_dict(), as_json, f"updated {updated.name} ({updated.note.path})")


@entity.command("list")
@click.option("--kind", type=_KINDS, help="Only entities of this kind.")
@json_option
@click.pass_context
def entity_list(ctx: click.Context, kind: str | None, as_json: bool) -> None:
    """Every entity, most recently seen first."""
    from tiered_memory.app.entities import list_entities

    found = list_entities(open_memory(ctx), kind)
    data = [e.to_dict() for e in found]

    def text() -> str:
        if not data:
            return "no entities (tmem entity add NAME)"
        return "\n".join(
            f"{(d['last_seen'] or 'never')[:10]:<10}  {d['kind']:<12} {d['name']}  ({d['interaction_count']} interactions)"
            for d in data
        )

    emit(data, as_json, text)


def forget_entity_command(
    ctx: click.Context,
    ref: str | None,
    name: str | None,
    yes: bool,
    reason: str | None,
    mentions: bool,
    as_json: bool,
) -> None:
    """`tmem forget --entity NAME`: the profile and every note about NAME, in one commit."""
    if not name:
        raise click.UsageError("give a note REF, or --entity NAME")
    if ref:
        raise click.UsageError("give either a note REF or --entity NAME, not both")
    from tiered_memory.app.entities import forget_entity

    memory = open_memory(ctx)
    if not yes:
        if not sys.stdin.isatty():
            click.echo(
                f"tmem: refusing to forget everything about '{name}' without confirmation: pass --yes",
                err=True,
            )
            sys.exit(2)
        click.confirm(f"Forget every memory about '{name}'?", abort=True)
    report = forget_entity(memory, name, reason, mentions=mentions)

    def text() -> str:
        lines = [
            f"forgot {len(report.removed)} note(s) about {report.name} in one commit ({(report.commit or '')[:8]}):"
        ]
        lines += [f"  {path}  {title}" for path, title in report.removed]
        if report.mentioned:
            lines.append(
                f"kept {len(report.mentioned)} note(s) that only mention the name (add --mentions to remove):"
            )
            lines += [f"  {path}" for path in report.mentioned]
        lines.append("git history still has them: `tmem restore` can bring them back")
        return "\n".join(lines)

    emit(report.to_dict(), as_json, text)


# ---- scan ----------------------------------------------------------------------------------


@click.command()
@click.option("--history", is_flag=True, help="Also every commit on every branch (git log -p --all).")
@json_option
@click.pass_context
def scan(ctx: click.Context, history: bool, as_json: bool) -> None:
    """Report secrets already stored in the vault (masked). Exit 1 when any are found."""
    from tiered_memory.app.scan import scan_vault
    from tiered_memory.storage.vault import Vault

    root = _vault_root(ctx)
    report = scan_vault(Vault(root), history=history)
    emit(report.to_dict(), as_json, report.render)
    if report.found:
        sys.exit(1)


COMMANDS: list[click.Command] = [context, entity, scan]
