"""What a search asks for and what it finds: plain records shared by the index, the application
layer and every door (CLI, daemon socket, MCP)."""

from __future__ import annotations

__all__ = [
    "Filters",
    "Hit",
    "MAX_FILTER_VALUES",
    "MAX_QUERY_CHARS",
    "Mode",
    "SearchRequest",
    "SearchResult",
    "searched_query",
    "unknown_filter",
]

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from tiered_memory.model.layout import TIERS
from tiered_memory.model.note import ATTACHMENT, CATEGORIES, STATUSES
from tiered_memory.model.records import Record

Mode = Literal["hybrid", "keyword", "vector"]

# The most values one filter of a search or a listing takes (folders or globs, tags, projects...).
# Every note is matched against each of them, and the folder globs of a request are one regex of
# alternatives tried at each note's path: 10,000 `--in` globs took 5.6 s over 2,000 notes (and
# grow with both); a person names a few, an agent a handful.
MAX_FILTER_VALUES = 100


@dataclass(kw_only=True)
class Filters(Record):
    """Which notes a listing or a search keeps: each field given narrows to the notes matching one
    of its values; none given keeps every note. Keyword-only, so the records built on it
    (`SearchRequest`, `app.api.notes.ListRequest`) keep their own positional fields."""

    tiers: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    projects: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)
    # Folders or globs of vault paths (`en/`, `Projects/**/*.md`); none: the whole vault.
    folders: list[str] = field(default_factory=list)
    since: datetime | None = None
    until: datetime | None = None

    def problem(self) -> str | None:
        """A line naming a filter given more than MAX_FILTER_VALUES values, or a value no note can
        have (see `unknown_filter`); None when the filters can be applied as they are."""
        for f in dataclasses.fields(Filters):
            values = getattr(self, f.name)
            if isinstance(values, list) and len(values) > MAX_FILTER_VALUES:
                return f"too many {f.name} to filter by ({len(values):,}; at most {MAX_FILTER_VALUES})"
        return unknown_filter(self.tiers, self.categories, self.statuses)

    def values(self) -> dict[str, Any]:
        """The filter fields alone, by name (of a record built on them too: no query, no limit)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(Filters)}


@dataclass
class SearchRequest(Filters):
    """A query, how to run it (mode, limit) and what to keep (the filters, none by default)."""

    query: str
    limit: int | None = None
    mode: Mode = "hybrid"
    session: str | None = None
    # Only notes a machine or agent wrote: its commits' author name or email, or the agent they
    # name, starts with this (any case). See index.authors for what "wrote" counts.
    by: str | None = None
    include_superseded: bool = False
    include_sensitive: bool = True
    # Hits scoring below this are cut; None: `search.min_score`.
    min_score: float | None = None
    # False: the hits are not counted as recalls (a look-up made for the person, not by them:
    # the per-prompt hook's, like a context block's).
    record_access: bool = True


@dataclass
class Hit(Record):
    """One note found: where it is, what it is, its score (and, with `components`, of what)."""

    path: str
    id: str
    title: str
    tier: str
    category: str
    score: float
    snippet: str
    updated: float
    components: dict[str, float] = field(default_factory=dict)
    # The passage of the note that holds most of the query's terms, trimmed to sentence bounds
    # ("" when none does, e.g. a hit found by meaning alone): why this note came back.
    passage: str = ""


@dataclass
class SearchResult(Record):
    """The hits, best first, the mode that ran and a line to show the person (or None)."""

    hits: list[Hit]
    mode: Mode
    notice: str | None = None


# The most characters of one query that are searched. Every part of a search passes over the
# whole query several times (its terms, whether it is a request or a conversation, the names it
# gives, its embedding): a 1.3 MB query took 4 s in keyword mode and 6 s in hybrid mode on a vault
# of ten notes. Past this, far beyond a question or a pasted paragraph or conversation (the keyword
# side looks up at most `index.query_terms.MAX_LOOKED_UP` distinct terms, reached within a few
# thousand words, and the model reads the first 256 wordpieces), it is cut (`searched_query`).
MAX_QUERY_CHARS = 64 * 1024


def searched_query(query: str) -> str:
    """The part of `query` a search reads: all of it up to MAX_QUERY_CHARS; past that, its first
    and its last half of that, cut at whitespace. The start is what a pasted text is about (the
    keyword side keeps a long query's earlier terms, and the model reads its start); the end of a
    pasted conversation is what is being talked about now (its last turn counts fully)."""
    if len(query) <= MAX_QUERY_CHARS:
        return query
    half = (MAX_QUERY_CHARS - 1) // 2  # and a line break between them
    head, tail = query[:half], query[-half:]
    if not head[-1].isspace() and not query[half].isspace():  # the head ends inside a word: not it
        words = head.rsplit(None, 1)
        head = words[0] if len(words) == 2 else head
    line = tail.find("\n")
    if line >= 0:  # the tail starts at a line, as a conversation's turns do
        tail = tail[line + 1 :]
    elif not tail[0].isspace() and not query[-half - 1].isspace():  # ... or at a word
        words = tail.split(None, 1)
        tail = words[1] if len(words) == 2 else tail
    return f"{head.rstrip()}\n{tail.lstrip()}"


def unknown_filter(tiers: list[str], categories: list[str], statuses: list[str]) -> str | None:
    """A line naming a filter value no note can have (a typo answers "no notes" otherwise), with
    the values that exist; None when every value is known."""
    for name, values, known in (
        ("tier", tiers, TIERS),
        ("category", categories, (*CATEGORIES, ATTACHMENT)),
        ("status", statuses, STATUSES),
    ):
        for value in values:
            if value not in known:
                return f"unknown {name} '{value}' (one of: {', '.join(known)})"
    return None
