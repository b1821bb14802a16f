"""Links between notes: `tmem links ID` (outgoing links and backlinks) and `tmem related ID`."""

from __future__ import annotations

__all__ = ["LINKS", "LinkItem", "LinksRequest", "LinksResult"]

from dataclasses import dataclass, field

from tiered_memory.app.api import Op
from tiered_memory.app.api.notes import NoteRef
from tiered_memory.model.records import Record


@dataclass
class LinksRequest(Record):
    ref: str  # an id or a path


@dataclass
class LinkItem(Record):
    """One link as written (`target`, `kind`: wikilink, embed or markdown; `heading`) and the note
    it resolves to (`note` None when no note of the vault matches)."""

    target: str
    kind: str
    heading: str = ""
    source: NoteRef | None = None  # for a backlink: the note that links here
    note: NoteRef | None = None  # for an outgoing link: the note it points at
    attachment: str = ""  # for a link to an image, a PDF...: its vault path, found by file name


@dataclass
class LinksResult(Record):
    note: NoteRef
    outgoing: list[LinkItem] = field(default_factory=list)
    backlinks: list[LinkItem] = field(default_factory=list)


LINKS = Op("links", LinksRequest, LinksResult, runs="tiered_memory.app.links:links")
