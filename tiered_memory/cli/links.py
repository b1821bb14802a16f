"""`tmem links ID` (what a note links to, and what links to it) and `tmem related ID`."""

from __future__ import annotations

import click

from tiered_memory.app.api.links import LINKS, RELATED, LinkItem, LinksRequest, RelatedRequest
from tiered_memory.cli.options import backend, emit, json_option


@click.command()
@click.argument("ref")
@json_option
@click.pass_context
def links(ctx: click.Context, ref: str, as_json: bool) -> None:
    """Links of a note ([[wikilinks]], embeds, Markdown links) and the notes that link to it."""
    result = backend(ctx).run(LINKS, LinksRequest(ref))

    def text() -> str:
        lines = [f"{result.note.title}  ({result.note.id}, {result.note.path})", "links to:"]
        lines += [_outgoing(x) for x in result.outgoing] or ["  (none)"]
        lines.append("linked from:")
        lines += [f"  {x.source.title}  ({x.source.id})" for x in result.backlinks if x.source] or [
            "  (none)"
        ]
        return "\n".join(lines)

    emit(result.to_dict(), as_json, text)


def _outgoing(item: LinkItem) -> str:
    heading = f"#{item.heading}" if item.heading else ""
    if item.attachment:
        return f"  {item.attachment}  (attachment)"
    if item.note is None:
        return f"  {item.target}{heading}  (no such note yet)"
    return f"  {item.note.title}{heading}  ({item.note.id})"


@click.command()
@click.argument("ref")
@click.option("--limit", "-n", default=10, show_default=True, help="How many notes to list.")
@json_option
@click.pass_context
def related(ctx: click.Context, ref: str, limit: int, as_json: bool) -> None:
    """Notes related to a note: linked either way first, then those sharing its rarer tags."""
    result = backend(ctx).run(RELATED, RelatedRequest(ref, limit))

    def text() -> str:
        lines = [f"related to {result.note.title} ({result.note.id}):"]
        for item in result.related:
            tags = f": #{' #'.join(item.shared_tags)}" if item.shared_tags else ""
            lines.append(f"  {item.note.title}  ({item.note.id})  {item.reason}{tags}")
        return "\n".join(lines if result.related else [*lines, "  (none)"])

    emit(result.to_dict(), as_json, text)


COMMANDS = [links, related]
