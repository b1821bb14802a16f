"""People and other entities: one profile note each under `long-term/relationships/`.

A profile is an ordinary note a person can edit. Machine fields live in the frontmatter (`entity`
name, `kind`, `aliases`, `last_seen`, `interaction_count`, `entities: [name]` so search's
`--entity` filter finds the profile itself); what a person reads and search indexes lives in
body sections: Preferences, Topics to avoid, Personality, Notes. Other notes are linked to an
entity through their `entities` field; any of the entity's names (name, aliases, slug) matches.
`forget_entity` removes the profile and every note about the entity in one commit.
"""

from __future__ import annotations

__all__ = [
    "ForgetReport",
    "KINDS",
    "MAX_NAME",
    "add_entity",
    "canonical_names",
    "entity_add",
    "entity_forget",
    "entity_list",
    "entity_show",
    "entity_update",
    "entity_view",
    "find_entity",
    "forget_entity",
    "get_entity",
    "list_entities",
    "related_rows",
    "set_section",
    "update_entity",
]

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tiered_memory.app import sealed
from tiered_memory.app.api.agents import (
    EntityAddRequest,
    EntityList,
    EntityListRequest,
    EntityRequest,
    EntityUpdateRequest,
    EntityView,
    ForgetEntityRequest,
    ForgetEntityResult,
    RemovedNote,
)
from tiered_memory.app.api.notes import NoteSummary
from tiered_memory.app.memory import Memory
from tiered_memory.app.profiles import (
    RELATIONSHIPS,
    SECTIONS,
    Entity,
    profiles_at,
    section_items,
    section_span,
)
from tiered_memory.app.summaries import summary
from tiered_memory.errors import BadInput, Locked, NoteNotFound, NoteParseError
from tiered_memory.index.catalog import NoteRow
from tiered_memory.model import note as notes
from tiered_memory.model.search import Filters
from tiered_memory.storage import sealing

KINDS = ("person", "organization", "project", "place", "thing")
MAX_NAME = 80


def entity_view(entity: Entity, related: list[NoteSummary] | None = None) -> EntityView:
    """The record of a profile that operations return; `related`: notes about the entity."""
    return EntityView(
        id=entity.note.id,
        name=entity.name,
        kind=entity.kind,
        aliases=entity.aliases,
        path=entity.note.path,
        preferences=entity.section("preferences"),
        avoid_topics=entity.section("avoid"),
        personality=entity.section("personality"),
        notes=entity.section("notes"),
        last_seen=entity.last_seen,
        interaction_count=entity.interaction_count,
        sensitive=entity.note.sensitive,
        related=related or [],
    )


@dataclass
class ForgetReport:
    name: str
    removed: list[tuple[str, str]] = field(default_factory=list)  # (path, title)
    mentioned: list[str] = field(default_factory=list)  # notes naming the entity that were kept
    commit: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return self.result().to_dict()

    def result(self) -> ForgetEntityResult:
        return ForgetEntityResult(
            entity=self.name,
            removed=[RemovedNote(p, t) for p, t in self.removed],
            mentioned_not_removed=list(self.mentioned),
            commit=self.commit,
        )


# ---- body sections ---------------------------------------------------------------------------------


def set_section(body: str, title: str, items: Sequence[str], bullets: bool = True) -> str:
    """The body with this section's content replaced (or the section appended); the rest byte for byte."""
    content = "".join(f"- {i}\n" if bullets else f"{i}\n" for i in items)
    span = section_span(body, title)
    if span is None:
        if not items:
            return body
        sep = "" if body.endswith("\n\n") or not body else ("\n" if body.endswith("\n") else "\n\n")
        return f"{body}{sep}## {title}\n\n{content}"
    start, end = span
    block = f"\n{content}\n" if items else "\n"
    if end == len(body):
        block = block.rstrip("\n") + "\n"
    return body[:start] + block + body[end:]


# ---- finding -------------------------------------------------------------------------------------


def _profiles(memory: Memory) -> list[Entity]:
    return profiles_at(memory.vault)


def find_entity(memory: Memory, name: str) -> Entity | None:
    """The profile whose name, alias, slug or id is `name` (case-insensitive)."""
    wanted = name.strip().casefold()
    if not wanted:
        raise BadInput("empty entity name")
    slug = notes.slugify(name)
    for entity in _profiles(memory):
        if wanted in (n.casefold() for n in entity.names) or slug == notes.slugify(entity.name):
            return entity
    return None


def get_entity(memory: Memory, name: str) -> Entity:
    entity = find_entity(memory, name)
    if entity is None:
        raise NoteNotFound(f"no entity named '{name}' (tmem entity list; tmem entity add NAME)")
    return entity


def list_entities(memory: Memory, kind: str | None = None) -> list[Entity]:
    found = [e for e in _profiles(memory) if kind is None or e.kind == kind]
    return sorted(found, key=lambda e: (e.last_seen == "", _neg(e.last_seen), e.name.casefold()))


def _neg(text: str) -> str:
    return "".join(chr(0x10FFFF - ord(c)) for c in text)  # sorts ISO times newest first


def canonical_names(memory: Memory, names: Iterable[str]) -> list[str]:
    """Entity names as their profiles spell them (an alias becomes the name); unknown ones as given."""
    wanted = [n.strip() for n in names if n and n.strip()]
    if not wanted:
        return []
    profiles = _profiles(memory)
    out: dict[str, str] = {}
    for name in wanted:
        match = next((e.name for e in profiles if name.casefold() in (n.casefold() for n in e.names)), name)
        out.setdefault(match.casefold(), match)
    return list(out.values())


def related_rows(memory: Memory, entity: Entity) -> list[NoteRow]:
    """Notes whose `entities` name this entity, newest first, without the profile itself."""
    rows = memory.list_notes(Filters(entities=entity.names))
    return sorted((r for r in rows if r.path != entity.note.path), key=lambda r: (-r.updated, r.path))


# ---- changing ------------------------------------------------------------------------------------


def _clean_name(memory: Memory, name: str) -> str:
    name = " ".join(name.split())
    if not name:
        raise BadInput("an entity needs a name")
    if len(name) > MAX_NAME:
        raise BadInput(f"entity name is longer than {MAX_NAME} characters")
    return memory.redact(name)


def _clean_items(memory: Memory, items: Iterable[str]) -> list[str]:
    return [memory.redact(" ".join(i.split())) for i in items if i and i.strip()]


def add_entity(
    memory: Memory,
    name: str,
    *,
    kind: str = "person",
    aliases: Sequence[str] = (),
    preferences: Sequence[str] = (),
    avoid: Sequence[str] = (),
    personality: str | None = None,
    note: str | None = None,
    sensitive: bool = False,
) -> Entity:
    name = _clean_name(memory, name)
    if kind not in KINDS:
        raise BadInput(f"unknown entity kind '{kind}' (one of: {', '.join(KINDS)})")
    for candidate in (name, *aliases):
        existing = find_entity(memory, candidate)
        if existing is not None:
            raise BadInput(
                f"entity '{existing.name}' already exists ({existing.note.path}); use tmem entity update"
            )
    now = memory.now()
    slug = notes.slugify(name)
    memory.refresh()
    note_id = slug if not memory.by_id(slug) else f"{kind}-{slug}"
    meta: dict[str, Any] = {
        "id": note_id,
        "title": name,
        "category": "profile",
        "entity": name,
        "kind": kind,
        "entities": [name],
    }
    alias_list = _clean_items(memory, aliases)
    if alias_list:
        meta["aliases"] = alias_list
    meta.update({"interaction_count": 0, "created": now, "updated": now, "status": "active"})
    if sensitive:
        meta["sensitive"] = True
    body = f"# {name}\n"
    body = set_section(body, SECTIONS["preferences"], _clean_items(memory, preferences))
    body = set_section(body, SECTIONS["avoid"], _clean_items(memory, avoid))
    if personality and personality.strip():
        body = set_section(body, SECTIONS["personality"], _clean_items(memory, [personality]), bullets=False)
    if note and note.strip():
        body = set_section(body, SECTIONS["notes"], [f"{now:%Y-%m-%d}: {_clean_items(memory, [note])[0]}"])
    profile = notes.Note(path=f"{RELATIONSHIPS}/{slug}.md", meta=meta, body=body, has_frontmatter=True)
    with memory.change(f"entity: add {name} ({kind})") as tx:
        rel = tx.create_note(profile)
    return Entity(memory.read_note(rel))


def update_entity(
    memory: Memory,
    name: str,
    *,
    add_preferences: Sequence[str] = (),
    remove_preferences: Sequence[str] = (),
    add_avoid: Sequence[str] = (),
    remove_avoid: Sequence[str] = (),
    personality: str | None = None,
    note: str | None = None,
    aliases: Sequence[str] = (),
    kind: str | None = None,
    seen: bool = False,
    sensitive: bool | None = None,
) -> Entity:
    # Found and read under the write lock: the profile is rewritten from what the last writer left.
    with memory.change(f"entity: update {name}") as tx:
        entity = Entity(tx.read_note(get_entity(memory, name).note.path))
        profile = entity.note
        if profile.parse_warning:
            raise NoteParseError(f"{profile.path}: {profile.parse_warning}; fix it by hand first")
        now = memory.now()
        body = profile.body
        changes: list[str] = []
        for key, add, remove in (
            ("preferences", add_preferences, remove_preferences),
            ("avoid", add_avoid, remove_avoid),
        ):
            items = section_items(body, SECTIONS[key])
            dropped = {r.strip().casefold() for r in remove if r.strip()}
            kept = [i for i in items if i.casefold() not in dropped]
            unknown = dropped - {i.casefold() for i in items}
            if unknown:
                raise BadInput(f"{entity.name} has no {SECTIONS[key].lower()} entry '{sorted(unknown)[0]}'")
            new = [i for i in _clean_items(memory, add) if i.casefold() not in {k.casefold() for k in kept}]
            if new or len(kept) != len(items):
                body = set_section(body, SECTIONS[key], kept + new)
                counts = [
                    f"+{len(new)}" if new else "",
                    f"-{len(items) - len(kept)}" if len(kept) != len(items) else "",
                ]
                changes.append(f"{SECTIONS[key].lower()} {' '.join(c for c in counts if c)}")
        if personality is not None:
            body = set_section(
                body, SECTIONS["personality"], _clean_items(memory, [personality]), bullets=False
            )
            changes.append("personality")
        if note and note.strip():
            items = section_items(body, SECTIONS["notes"])
            body = set_section(
                body, SECTIONS["notes"], [*items, f"{now:%Y-%m-%d}: {_clean_items(memory, [note])[0]}"]
            )
            changes.append("note")
        meta: dict[str, Any] = {}
        new_aliases = [
            a
            for a in _clean_items(memory, aliases)
            if a.casefold() not in (n.casefold() for n in entity.names)
        ]
        if new_aliases:
            meta["aliases"] = entity.aliases + new_aliases
            changes.append("aliases")
        if kind is not None and kind != entity.kind:
            if kind not in KINDS:
                raise BadInput(f"unknown entity kind '{kind}' (one of: {', '.join(KINDS)})")
            meta["kind"] = kind
            changes.append(f"kind {kind}")
        if sensitive is not None and sensitive != profile.sensitive:
            meta["sensitive"] = True if sensitive else None
            changes.append("sensitive" if sensitive else "not sensitive")
        if seen:
            meta["last_seen"] = now
            meta["interaction_count"] = entity.interaction_count + 1
            changes.append("seen")
        if not changes:
            raise BadInput(
                "nothing to update: give --preference, --avoid, --personality, --note, --alias, --seen ..."
            )
        meta["updated"] = now
        updated = profile.with_meta(**meta)
        updated.body = body
        tx.write_note(updated)
        tx.message = f"entity: update {entity.name} ({', '.join(changes)})"
    return Entity(memory.read_note(profile.path))


def forget_entity(
    memory: Memory, name: str, reason: str | None = None, mentions: bool = False
) -> ForgetReport:
    """Remove the profile and every note about the entity, in one commit (git keeps the history).

    Notes that only mention one of its names in their text are reported and kept, unless
    `mentions` asks for them too.
    """
    entity = find_entity(memory, name)
    names = entity.names if entity else [name.strip()]
    report = ForgetReport(entity.name if entity else name.strip())
    rows = memory.list_notes(Filters(entities=names))
    paths = dict.fromkeys(([entity.note.path] if entity else []) + [r.path for r in rows])
    titles = {r.path: r.title for r in rows}
    if entity:
        titles[entity.note.path] = entity.note.title
    pattern = _mention_pattern(names)
    for row in memory.list_notes():
        if row.path in paths or pattern is None:
            continue
        try:
            text = memory.read_text(row.path)
        except NoteParseError:
            continue
        if pattern.search(text):
            if mentions:
                paths[row.path] = None
                titles[row.path] = row.title
            else:
                report.mentioned.append(row.path)
    _sealed_about(memory, names, pattern, mentions, paths, titles, report)
    if not paths:
        raise NoteNotFound(f"no entity or notes about '{name}'")
    rels = list(paths)
    why = f" ({reason})" if reason else ""
    listing = "\n".join(f"- {rel}" for rel in rels)
    message = f"forget: everything about {report.name} [{len(rels)} note(s)]{why}\n\n{listing}"
    with memory.change(message) as tx:
        tx.remove_all(rels, reason=f"forgetting {report.name}")
    report.commit = tx.sha
    report.removed = [(rel, titles.get(rel, rel)) for rel in rels]
    return report


def _sealed_about(
    memory: Memory,
    names: Sequence[str],
    pattern: re.Pattern[str] | None,
    mentions: bool,
    paths: dict[str, None],
    titles: dict[str, str],
    report: ForgetReport,
) -> None:
    """The encrypted notes about the entity (or mentioning it), which the catalog knows by path
    only: read decrypted while unlocked; while locked, forgetting "everything about" someone
    could not be complete, so it is refused before anything is removed."""
    shut = sealed.locked(memory)
    if shut:
        raise Locked(
            f"{shut} encrypted note(s) may be about '{report.name}' and cannot be read while the "
            "vault is locked: tmem unlock first, so that all of them are forgotten"
        )
    wanted = {n.strip().lower() for n in names}
    for note in sealed.read_all(memory):
        if note.path in paths:
            continue
        if wanted & {e.strip().lower() for e in note.entities}:
            paths[note.path] = None
        elif pattern is not None and pattern.search(f"{note.title}\n{note.body}"):
            if not mentions:
                report.mentioned.append(note.path)
                continue
            paths[note.path] = None
        else:
            continue
        titles[note.path] = sealing.label(memory.vault, note)


def _mention_pattern(names: Sequence[str]) -> re.Pattern[str] | None:
    # Slugs and ids are for the `entities` field; in prose only real names of 3+ letters count.
    words = sorted(
        {n for n in names if len(n) >= 3 and not re.fullmatch(r"[a-z0-9-]+-[0-9a-f]{4}", n)},
        key=len,
        reverse=True,
    )
    if not words:
        return None
    return re.compile(r"(?<!\w)(?:" + "|".join(re.escape(w) for w in words) + r")(?!\w)", re.IGNORECASE)


# ---- the operations -------------------------------------------------------------------------------


def entity_add(memory: Memory, request: EntityAddRequest) -> EntityView:
    return entity_view(
        add_entity(
            memory,
            request.name,
            kind=request.kind,
            aliases=request.aliases,
            preferences=request.preferences,
            avoid=request.avoid,
            personality=request.personality,
            note=request.note,
            sensitive=request.sensitive,
        )
    )


def entity_update(memory: Memory, request: EntityUpdateRequest) -> EntityView:
    return entity_view(
        update_entity(
            memory,
            request.name,
            add_preferences=request.add_preferences,
            remove_preferences=request.remove_preferences,
            add_avoid=request.add_avoid,
            remove_avoid=request.remove_avoid,
            personality=request.personality,
            note=request.note,
            aliases=request.aliases,
            kind=request.kind,
            seen=request.seen,
            sensitive=request.sensitive,
        )
    )


def entity_show(memory: Memory, request: EntityRequest) -> EntityView:
    """A profile and the notes about that entity, newest first."""
    found = get_entity(memory, request.name)
    rows = related_rows(memory, found)[: max(0, request.limit)]
    return entity_view(found, [summary(r) for r in rows])


def entity_list(memory: Memory, request: EntityListRequest) -> EntityList:
    return EntityList([entity_view(e) for e in list_entities(memory, request.kind)])


def entity_forget(memory: Memory, request: ForgetEntityRequest) -> ForgetEntityResult:
    return forget_entity(memory, request.name, request.reason, mentions=request.mentions).result()
