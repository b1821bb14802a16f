"""`tmem links ID`: what a note links to, and what links to it (`tmem related` is in revise.py)."""

from __future__ import annotations

__all__ = ["links"]

import click

from tiered_memory.app.api.links import LINKS, LinksRequest
from tiered_memory.cli.options import backend, emit, json_option
from tiered_memory.present.links import links_text


@click.command()
@click.argument("ref")
@json_option
@click.pass_context
def links(ctx: click.Context, ref: str, as_json: bool) -> None:
    """Links of a note ([[wikilinks]], embeds, Markdown links) and the notes that link to it."""
    result = backend(ctx).run(LINKS, LinksRequest(ref))
    emit(result.to_dict(), as_json, lambda: links_text(result))
