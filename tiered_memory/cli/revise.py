"""`tmem update` and `tmem related`: the operations agents use over MCP, from the command line too."""

from __future__ import annotations

__all__ = ["related", "update"]

from typing import Any

import click

from tiered_memory.app.api.notes import RELATED, UPDATE, RelatedRequest, UpdateRequest
from tiered_memory.cli.options import backend, emit, json_option
from tiered_memory.errors import BadInput
from tiered_memory.model import note_fields
from tiered_memory.present import revise as show_revise
from tiered_memory.present.links import related_text


def _field(value: str) -> tuple[str, Any]:
    """`key=value`: the value read as YAML (`[a, b]`, numbers, true, dates) where it is one, else
    as the text typed (model.note_fields); `key=` removes the key."""
    key, sep, raw = value.partition("=")
    if not sep or not key.strip():
        raise click.BadParameter(f"'{value}' is not KEY=VALUE", param_hint="--set")
    return key.strip(), note_fields.read_value(key.strip(), raw)


@click.command("update")
@click.argument("note_id", metavar="ID")
@click.option("--body", help="Replace the whole body (with --section: that section's text) with this text.")
@click.option("--append", help="Add this text at the end of the body (with --section: of that section).")
@click.option("--prepend", help="With --section: add this text at the start of that section.")
@click.option(
    "--section",
    help="A heading's text ('Tasks' or '## Tasks'): --append, --prepend or --body edit its section.",
)
@click.option("--find", "find_text", help="Replace this exact text of the body (with --replace).")
@click.option("--replace", "replacement", help="What --find's text becomes ('' deletes it).")
@click.option(
    "--count",
    type=int,
    default=1,
    show_default=True,
    help="With --find: how many times the text occurs; any other number is refused.",
)
@click.option(
    "--set",
    "fields",
    multiple=True,
    help="Set a frontmatter field: KEY=VALUE, the value as YAML ([a, b], 0.8, 2026-12-01) or text; "
    "KEY= removes it. Known keys are checked (importance 0..1, category...). Repeatable.",
)
@click.option("--reason", help="Why (goes into the commit message).")
@json_option
@click.pass_context
def update(
    ctx: click.Context,
    note_id: str,
    body: str | None,
    append: str | None,
    fields: tuple[str, ...],
    reason: str | None,
    as_json: bool,
    prepend: str | None,
    section: str | None,
    find_text: str | None,
    replacement: str | None,
    count: int,
) -> None:
    """Change a note (by id or path) in one commit: its body and frontmatter fields. Secrets are redacted.

    --section HEADING with --append, --prepend or --body changes only the text under that
    heading (up to the next heading); --find TEXT --replace NEW replaces an exact text, refused
    unless it occurs --count times (default 1)."""
    request = UpdateRequest(note_id, body, append, dict(_field(f) for f in fields), reason)
    request.find, request.replace, request.count = find_text, replacement, count
    if section is not None or prepend is not None:
        given = [
            (op, t)
            for op, t in (("append", append), ("prepend", prepend), ("replace", body))
            if t is not None
        ]
        if section is None or len(given) != 1:
            raise BadInput(
                "--section takes one of --append, --prepend or --body (and --prepend needs --section)"
            )
        request.body = request.append = None
        request.section, (request.operation, request.text) = section, given[0]
    result = backend(ctx).run(UPDATE, request)
    emit(result.to_dict(), as_json, show_revise.updated_text(result))


@click.command("related")
@click.argument("note_id", metavar="ID")
@click.option("--limit", type=click.IntRange(1, 200), default=10, show_default=True, help="Most notes.")
@json_option
@click.pass_context
def related(ctx: click.Context, note_id: str, limit: int, as_json: bool) -> None:
    """Notes related to one: by its links and shared tags, else by similarity of meaning."""
    result = backend(ctx).run(RELATED, RelatedRequest(note_id, limit))
    emit(result.to_dict(), as_json, lambda: related_text(result))
