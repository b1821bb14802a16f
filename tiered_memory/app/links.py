"""`tmem links`: the link graph (index.graph) seen from one note."""

from __future__ import annotations

__all__ = ["links"]

import posixpath

from tiered_memory.app.api.links import (
    LinkItem,
    LinksRequest,
    LinksResult,
)
from tiered_memory.app.api.notes import NoteRef
from tiered_memory.app.memory import Memory
from tiered_memory.model.folders import is_attachment


def links(memory: Memory, request: LinksRequest) -> LinksResult:
    rel = memory.resolve(request.ref)
    memory.fresh()  # a path resolves without the index: the graph must hold the note first
    graph = memory.links()
    outgoing = graph.outgoing(rel)
    backlinks = graph.backlinks(rel)
    refs = _refs(memory, [rel, *(x.resolved for x in outgoing if x.resolved), *(x.source for x in backlinks)])
    files = memory.vault.attachments() if any(is_attachment(x.target) for x in outgoing) else []
    return LinksResult(
        note=refs[rel],
        outgoing=[
            LinkItem(
                x.target,
                x.kind,
                x.heading,
                note=refs.get(x.resolved) if x.resolved else None,
                attachment="" if x.resolved else _attachment(x.target, rel, files),
            )
            for x in outgoing
        ],
        backlinks=[LinkItem(x.target, x.kind, x.heading, source=refs[x.source]) for x in backlinks],
    )


def _attachment(target: str, source: str, files: list[str]) -> str:
    """The attachment a link names, as Obsidian finds it: the vault path, or the file name (one
    in the linking note's folder first, then the shortest path)."""
    if not is_attachment(target):
        return ""
    wanted = target.strip("/").lower()
    folder = posixpath.dirname(source)
    matches = [f for f in files if f.lower() == wanted or f.lower().endswith("/" + wanted)]
    matches.sort(key=lambda f: (posixpath.dirname(f) != folder, len(f), f))
    return matches[0] if matches else ""


def _refs(memory: Memory, paths: list[str]) -> dict[str, NoteRef]:
    rows = memory.rows(list(dict.fromkeys(paths)))
    return {p: NoteRef(r.id, r.title, p) for p, r in rows.items()}
