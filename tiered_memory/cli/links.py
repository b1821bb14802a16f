"""`tmem links ID`: what a note links to, and what links to it (`tmem related` is in revise.py)."""

from __future__ import annotations

__all__ = ["links"]

import click

from tiered_memory.app.api.links import LINKS, LinkItem, LinksRequest
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
