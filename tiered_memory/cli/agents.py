"""Commands for agents: `context`, `entity add|show|update|list`, `forget --entity`, `scan`
(`mcp` is in cli/mcp.py).

Each parses its input, runs one operation through the backend and renders the result with `present`.
"""

from __future__ import annotations

__all__ = [
    "context",
    "entity",
    "entity_add",
    "entity_list",
    "entity_show",
    "entity_update",
    "forget_entity_command",
    "scan",
]

import sys
from typing import Any

import click

from tiered_memory.app.api.agents import (
    CONTEXT,
    CONTEXT_FORMATS,
    ENTITY_ADD,
    ENTITY_KINDS,
    ENTITY_LIST,
    ENTITY_SHOW,
    ENTITY_UPDATE,
    FORGET_ENTITY,
    SCAN,
    ContextRequest,
    EntityAddRequest,
    EntityListRequest,
    EntityRequest,
    EntityUpdateRequest,
    ForgetEntityRequest,
    ScanRequest,
)
from tiered_memory.cli.options import backend, emit, json_option, split_list, warn
from tiered_memory.errors import BadInput
from tiered_memory.present import agents as show_agents


@click.command()
@click.option("--query", "-q", help="What the session is about; default: recent and important memories.")
@click.option("--project", help="Project id (default: the active one in mid-term/active_contexts.json).")
@click.option("--entity", help="A person or thing the session is about: their profile and notes.")
@click.option("--budget", type=int, help="Token budget (default: context.budget_tokens).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(list(CONTEXT_FORMATS)),
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
    request = ContextRequest(query, project, entity, budget, include_sensitive, fmt)
    block = backend(ctx, scan_ahead=True).run(CONTEXT, request)
    for notice in block.notices:
        warn(notice)
    emit(show_agents.context_dict(block), fmt == "json", block.text)


# ---- entities ------------------------------------------------------------------------------------


@click.group()
def entity() -> None:
    """People and other entities: profiles under long-term/relationships/."""


_KINDS = click.Choice(list(ENTITY_KINDS))


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
    request = EntityAddRequest(
        name,
        kind=fields["kind"],
        aliases=split_list(fields["aliases"]),
        preferences=list(fields["preferences"]),
        avoid=list(fields["avoid"]),
        personality=fields["personality"],
        note=fields["note"],
        sensitive=fields["sensitive"],
    )
    added = backend(ctx).run(ENTITY_ADD, request)
    emit(show_agents.entity_dict(added), as_json, show_agents.entity_added_text(added))


@entity.command("show")
@click.argument("name")
@click.option("--limit", type=int, default=20, show_default=True, help="Most related notes listed.")
@json_option
@click.pass_context
def entity_show(ctx: click.Context, name: str, limit: int, as_json: bool) -> None:
    """A profile and the notes about that entity."""
    found = backend(ctx).run(ENTITY_SHOW, EntityRequest(name, limit))
    emit(show_agents.entity_dict(found, related=True), as_json, lambda: show_agents.entity_text(found))


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
    request = EntityUpdateRequest(
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
    updated = backend(ctx).run(ENTITY_UPDATE, request)
    emit(show_agents.entity_dict(updated), as_json, show_agents.entity_updated_text(updated))


@entity.command("list")
@click.option("--kind", type=_KINDS, help="Only entities of this kind.")
@json_option
@click.pass_context
def entity_list(ctx: click.Context, kind: str | None, as_json: bool) -> None:
    """Every entity, most recently seen first."""
    found = backend(ctx).run(ENTITY_LIST, EntityListRequest(kind))
    emit(show_agents.entity_list_json(found), as_json, lambda: show_agents.entity_list_text(found))


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
    if not yes:
        if not sys.stdin.isatty():
            raise BadInput(show_agents.forget_entity_refused(name))
        click.confirm(show_agents.forget_entity_question(name), abort=True)
    report = backend(ctx).run(FORGET_ENTITY, ForgetEntityRequest(name, reason, mentions))
    emit(report.to_dict(), as_json, lambda: show_agents.forgot_entity_text(report))


# ---- scan ----------------------------------------------------------------------------------


@click.command()
@click.option("--history", is_flag=True, help="Also every commit on every branch (git log -p --all).")
@json_option
@click.pass_context
def scan(ctx: click.Context, history: bool, as_json: bool) -> None:
    """Report secrets already stored in the vault (masked). Exit 1 when any are found."""
    report = backend(ctx).run(SCAN, ScanRequest(history))
    emit(report.to_dict(), as_json, lambda: show_agents.scan_text(report))
    if report.found:
        sys.exit(1)
