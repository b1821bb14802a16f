"""The link graph in the catalog: what each note links to, backlinks, and related notes.

Links are stored as written (derived from each note alone, so indexing one note never touches
another) and resolved when asked, against the names of the notes indexed at that moment: a link
to a note that does not exist yet resolves as soon as the note appears.

Resolution follows Obsidian's: a Markdown link with a folder (`../x.md`) is read relative to the
linking note; then the target as a vault path (`Projects/Plan`), then as the end of a path
(`Plan`, `Projects/Plan`), the file name without its extension, case-insensitive. When several
notes have that name, the one in the linking note's folder wins, then the one with the shortest
path, then the first in alphabetical order. tmem goes one step further than Obsidian: a target
that names no file but is a note's title or one of its `aliases` resolves to that note.
"""

from __future__ import annotations

__all__ = ["GraphEntry", "LinkGraph", "NoteLink", "Related", "graph_entry", "name_key"]

import math
import posixpath
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field

from tiered_memory.index.catalog import Catalog
from tiered_memory.model import note as notes
from tiered_memory.model import obsidian

# names.rank: lower wins when one key names several kinds of thing.
_PATH, _SUFFIX, _TITLE, _ALIAS = 0, 1, 2, 3
_NOTE_SUFFIXES = (".md", ".markdown")


@dataclass(frozen=True)
class GraphEntry:
    """What the catalog keeps about one note for the graph (built by `graph_entry`)."""

    path: str
    links: list[obsidian.Link]
    names: list[tuple[str, int]]
    tags: list[str]


@dataclass(frozen=True)
class NoteLink:
    source: str
    target: str  # as written
    kind: str  # wikilink, embed or markdown
    heading: str
    resolved: str | None  # the note path it points at; None when no indexed note matches

    def to_dict(self) -> dict[str, str | None]:
        return {
            "source": self.source,
            "target": self.target,
            "kind": self.kind,
            "heading": self.heading,
            "resolved": self.resolved,
        }


@dataclass(frozen=True)
class Related:
    path: str
    reason: str  # "links to", "linked from", "linked both ways" or "shared tags"
    shared_tags: list[str] = field(default_factory=list)
    score: float = 0.0

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "reason": self.reason,
            "shared_tags": self.shared_tags,
            "score": self.score,
        }


def name_key(text: str) -> str:
    """How names compare: one Unicode form (a Mac writes `è` in a file name as `e` and an accent,
    a link typed in Obsidian has the one character), case-folded, `/` separators, no leading `./`
    or `/`, no note extension."""
    key = unicodedata.normalize("NFC", text.strip().replace("\\", "/")).casefold()
    while key.startswith(("./", "/")):
        key = key[1:] if key.startswith("/") else key[2:]
    for suffix in _NOTE_SUFFIXES:
        if key.endswith(suffix):
            return key[: -len(suffix)]
    return key


def graph_entry(note: notes.Note, title: str, aliases: Iterable[str], tags: Iterable[str]) -> GraphEntry:
    path_key = name_key(note.path)
    parts = path_key.split("/")
    names: dict[str, int] = {path_key: _PATH}
    for i in range(1, len(parts)):
        names.setdefault("/".join(parts[i:]), _SUFFIX)
    for text, rank in [(title, _TITLE), *((a, _ALIAS) for a in aliases)]:
        if text.strip():
            names.setdefault(name_key(text), rank)
    tag_keys = [t.casefold() for t in obsidian.expand_tags(tags)]
    return GraphEntry(note.path, note.links, sorted(names.items()), list(dict.fromkeys(tag_keys)))


def _link_key(link: obsidian.Link, source: str) -> str:
    """The key a link is looked up by: a Markdown path with a folder is made vault-relative."""
    target = link.target.replace("\\", "/")
    if link.kind != "wikilink" and ("/" in target) and not target.startswith("/"):
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(source), target))
        if not joined.startswith("../"):
            return name_key(joined)
    return name_key(target)


class LinkGraph:
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.db = catalog.db

    # ---- writing (the indexer) -------------------------------------------------------------
    def replace(self, entries: Iterable[GraphEntry]) -> None:
        """Store these notes' links, names and tags, replacing what was stored for their paths."""
        batch = list(entries)
        if not batch:
            return
        paths = [(e.path,) for e in batch]
        self.db.executemany("DELETE FROM links WHERE source=?", paths)
        self.db.executemany("DELETE FROM names WHERE path=?", paths)
        self.db.executemany("DELETE FROM note_tags WHERE path=?", paths)
        self.db.executemany(
            "INSERT INTO links VALUES (?, ?, ?, ?, ?, ?)",
            [
                (e.path, link.target, _link_key(link, e.path), name_key(link.target), link.kind, link.heading)
                for e in batch
                for link in e.links
            ],
        )
        self.db.executemany(
            "INSERT INTO names VALUES (?, ?, ?)",
            [(key, e.path, rank) for e in batch for key, rank in e.names],
        )
        self.db.executemany(
            "INSERT INTO note_tags VALUES (?, ?)", [(t, e.path) for e in batch for t in e.tags]
        )
        self.db.commit()

    # ---- reading -----------------------------------------------------------------------------
    def resolve(self, target: str, source: str, kind: str = "wikilink") -> str | None:
        """The note path a link from `source` to `target` points at, or None."""
        link = obsidian.Link(target, kind)
        return self._resolve(_link_key(link, source), name_key(target), source)

    def _resolve(self, key: str, plain: str, source: str) -> str | None:
        for candidate in dict.fromkeys((key, plain)):
            found = self.db.execute("SELECT path, rank FROM names WHERE key=?", (candidate,)).fetchall()
            if not found:
                continue
            # A whole path and the end of a path are one kind of match: file names before titles
            # before aliases, and among equals the tie-break below.
            best = min(max(rank, _SUFFIX) for _, rank in found)
            paths = [p for p, rank in found if max(rank, _SUFFIX) == best]
            folder = posixpath.dirname(source)
            return min(paths, key=lambda p: (posixpath.dirname(p) != folder, p.count("/"), p))
        return None

    def named(self, text: str) -> list[str]:
        """The notes whose path, file name, title or one of whose aliases is `text`, as names
        compare (`name_key`)."""
        key = name_key(text)
        if not key:
            return []
        return sorted({p for (p,) in self.db.execute("SELECT path FROM names WHERE key=?", (key,))})

    def outgoing(self, path: str) -> list[NoteLink]:
        """The links in the note at `path`, in the order first written, each with the note it
        resolves to: a note that links [[Settings]] five times lists it once."""
        rows = self.db.execute(
            "SELECT target, target_key, kind, heading FROM links WHERE source=? ORDER BY rowid", (path,)
        ).fetchall()
        out: list[NoteLink] = []
        seen: set[tuple[str, str, str]] = set()
        for target, key, kind, heading in rows:
            resolved = self._resolve(key, name_key(target), path)
            same = (resolved or name_key(target), kind, heading)
            if same not in seen:
                seen.add(same)
                out.append(NoteLink(path, target, kind, heading, resolved))
        return out

    def backlinks(self, path: str) -> list[NoteLink]:
        """Links in other notes that resolve to `path` (one per link, in path order)."""
        keys = [k for (k,) in self.db.execute("SELECT key FROM names WHERE path=?", (path,))]
        if not keys:
            return []
        rows = self._links_to(keys)
        out: list[NoteLink] = []
        seen: set[tuple[str, str, str, str]] = set()
        for source, target, key, kind, heading in rows:
            if source == path or (source, target, kind, heading) in seen:
                continue
            if self._resolve(key, name_key(target), source) == path:
                seen.add((source, target, kind, heading))
                out.append(NoteLink(source, target, kind, heading, path))
        return sorted(out, key=lambda link: link.source)

    def links_by_names(self, path: str, entry: GraphEntry) -> list[NoteLink]:
        """The links to the note at `path` when the graph holds no names of it (`backlinks` finds
        none then): the catalog keeps it out (a plain note the privacy rules will seal), so its
        names come from `entry` (`graph_entry` of its text). A link counts when its target is one
        of those names and no note the graph holds answers to it."""
        keys = [key for key, _rank in entry.names]
        if not keys:
            return []
        rows = self._links_to(keys)
        return [
            NoteLink(source, target, kind, heading, path)
            for source, target, key, kind, heading in rows
            if source != path and self._resolve(key, name_key(target), source) is None
        ]

    def _links_to(self, keys: list[str]) -> list[tuple[str, str, str, str, str]]:
        """(source, target, target_key, kind, heading) of the links whose target, or its plain
        form, is one of these name keys, in source order."""
        marks = ", ".join("?" for _ in keys)
        return self.db.execute(
            "SELECT source, target, target_key, kind, heading FROM links"
            f" WHERE target_key IN ({marks}) OR plain_key IN ({marks}) ORDER BY source, rowid",
            keys + keys,
        ).fetchall()

    def related(self, path: str, limit: int = 10) -> list[Related]:
        """Linked notes first (both ways, then outgoing, then backlinks), then notes sharing tags,
        rarer shared tags counting more; among notes the tags rank alike, those that also link to
        the notes this one links to, or name its entities, then the more recently updated."""
        outgoing = {link.resolved for link in self.outgoing(path) if link.resolved and link.resolved != path}
        incoming = {link.source for link in self.backlinks(path)}
        linked = [
            *(Related(p, "linked both ways", score=3.0) for p in sorted(outgoing & incoming)),
            *(Related(p, "links to", score=2.0) for p in sorted(outgoing - incoming)),
            *(Related(p, "linked from", score=1.0) for p in sorted(incoming - outgoing)),
        ]
        if len(linked) >= limit:
            return linked[:limit]
        tags = [t for (t,) in self.db.execute("SELECT tag FROM note_tags WHERE path=?", (path,))]
        if not tags:
            return linked
        marks = ", ".join("?" for _ in tags)
        total = self.catalog.count()
        freq: dict[str, int] = dict(
            self.db.execute(f"SELECT tag, COUNT(*) FROM note_tags WHERE tag IN ({marks}) GROUP BY tag", tags)
        )
        shared: dict[str, list[str]] = {}
        for other, tag in self.db.execute(
            f"SELECT path, tag FROM note_tags WHERE tag IN ({marks}) ORDER BY path", tags
        ):
            if other != path and other not in outgoing and other not in incoming:
                shared.setdefault(other, []).append(tag)
        rarity = {t: _rarity(freq.get(t, 1), total) for t in tags}
        by_tags = [
            Related(p, "shared tags", sorted(ts), round(sum(rarity[t] for t in ts), 4))
            for p, ts in shared.items()
        ]
        by_tags.sort(key=lambda r: -r.score)
        wanted = limit - len(linked)
        if len(by_tags) > wanted > 0:
            # Only the notes that score at least as well as the last one shown can reach the list:
            # the tie-breaks are asked of them alone.
            cutoff = by_tags[wanted - 1].score
            by_tags = [r for r in by_tags if r.score >= cutoff]
        common = self._in_common(path, [r.path for r in by_tags])
        by_tags.sort(key=lambda r: (-r.score, *common.get(r.path, (0, 0.0)), r.path))
        return (linked + by_tags)[:limit]

    def _in_common(self, path: str, others: list[str]) -> dict[str, tuple[int, float]]:
        """For each of `others`: (minus) how many of `path`'s link targets and entities it shares,
        and (minus) when it was last updated: the order among notes the shared tags rank alike."""
        if not others:
            return {}
        keys = [
            k for (k,) in self.db.execute("SELECT DISTINCT target_key FROM links WHERE source=?", (path,))
        ]
        linked_alike: dict[str, int] = {}
        if keys:
            marks = ", ".join("?" for _ in keys)
            # Compared as written (each key already folded and, for a relative link, made a vault
            # path), not resolved: one query for all the candidates, however many share a tag.
            linked_alike = dict(
                self.db.execute(
                    f"SELECT source, COUNT(DISTINCT target_key) FROM links WHERE target_key IN ({marks})"
                    " GROUP BY source",
                    keys,
                )
            )
        facts = self.catalog.updated_and_entities([path, *others])
        mine = {name_key(e) for e in facts[path][1] if isinstance(e, str)} if path in facts else set()
        out: dict[str, tuple[int, float]] = {}
        for other in others:
            updated, entities = facts.get(other, (0.0, []))
            alike = len(mine.intersection(name_key(e) for e in entities if isinstance(e, str))) if mine else 0
            out[other] = (-(linked_alike.get(other, 0) + alike), -updated)
        return out


def _rarity(count: int, total: int) -> float:
    """What sharing a tag `count` notes of `total` have says (inverse document frequency): next to
    nothing for a tag nearly every note has, more the rarer it is."""
    return math.log((1 + max(total, count)) / max(count, 1))
