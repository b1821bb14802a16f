"""A note's links and backlinks (`tmem links ID`) and the notes related to it (`tmem related ID`), as text."""

from __future__ import annotations

from tiered_memory.app.api.links import LinkItem, LinksResult
from tiered_memory.app.api.notes import RelatedResult


def links_text(result: LinksResult) -> str:
    lines = [f"{result.note.title}  ({result.note.id}, {result.note.path})", "links to:"]
    lines += [_outgoing(x) for x in result.outgoing] or ["  (none)"]
    lines.append("linked from:")
    lines += [f"  {x.source.title}  ({x.source.id})" for x in result.backlinks if x.source] or ["  (none)"]
    return "\n".join(lines)


def _outgoing(item: LinkItem) -> str:
    heading = f"#{item.heading}" if item.heading else ""
    if item.attachment:
        return f"  {item.attachment}  (attachment)"
    if item.note is None:
        return f"  {item.target}{heading}  (no such note yet)"
    return f"  {item.note.title}{heading}  ({item.note.id})"


def related_text(result: RelatedResult) -> str:
    if not result.notes:
        return f"nothing related to {result.id}"
    lines = [f"related to {result.id} (by {result.by}):"]
    lines += [f"  {n.score:6.3f}  {n.why:<17} {n.title}  ({n.path})" for n in result.notes]
    return "\n".join(lines)


__all__ = ["links_text", "related_text"]
