"""Entity profiles as notes: where they live, their names and their body sections, read-only.

A profile is an ordinary note under `long-term/relationships/` whose frontmatter names an
`entity` (or a `kind`). This is the part of entities a search needs, to widen an `--entity`
filter to every name of that entity, without the operations that add, change or forget them
(app.entities) and their records.
"""

from __future__ import annotations

__all__ = [
    "Entity",
    "RELATIONSHIPS",
    "SECTIONS",
    "expand_names",
    "profiles_at",
    "section_items",
    "section_span",
]

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from tiered_memory.errors import NoteParseError
from tiered_memory.model import dates, layout
from tiered_memory.model import note as notes
from tiered_memory.storage.vault import Vault

RELATIONSHIPS = layout.RELATIONSHIPS
SECTIONS = {
    "preferences": "Preferences",
    "avoid": "Topics to avoid",
    "personality": "Personality",
    "notes": "Notes",
}
_H2 = re.compile(r"^##[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_ANY_HEADING = re.compile(r"^#{1,2}[ \t]+", re.MULTILINE)


@dataclass
class Entity:
    note: notes.Note

    @property
    def name(self) -> str:
        return str(self.note.meta.get("entity") or self.note.title)

    @property
    def kind(self) -> str:
        return str(self.note.meta.get("kind") or "person")

    @property
    def aliases(self) -> list[str]:
        return notes.str_list(self.note.meta.get("aliases"))

    @property
    def names(self) -> list[str]:
        """Every name notes may use for this entity in their `entities` field."""
        seen: dict[str, str] = {}
        for name in (self.name, *self.aliases, notes.slugify(self.name), self.note.id):
            seen.setdefault(name.casefold(), name)
        return list(seen.values())

    @property
    def last_seen(self) -> str:
        when = dates.to_datetime(self.note.meta.get("last_seen"))
        return when.isoformat().replace("+00:00", "Z") if when else ""

    @property
    def interaction_count(self) -> int:
        try:
            return max(0, int(self.note.meta.get("interaction_count") or 0))
        except (TypeError, ValueError, OverflowError):
            return 0

    def section(self, key: str) -> list[str]:
        return section_items(self.note.body, SECTIONS[key])

    def summary_lines(self) -> list[str]:
        """What a context block says about the entity, most useful first."""
        lines = [
            f"{self.name} ({self.kind})"
            + (f", also called {', '.join(self.aliases)}" if self.aliases else "")
        ]
        for key, label in (
            ("avoid", "Avoid talking about"),
            ("preferences", "Likes"),
            ("personality", "Personality"),
        ):
            items = self.section(key)
            if items:
                lines.append(f"{label}: {'; '.join(items)}")
        if self.last_seen or self.interaction_count:
            lines.append(f"Last seen {self.last_seen[:10] or 'never'}; {self.interaction_count} interactions")
        lines += [f"- {item}" for item in self.section("notes")]
        return lines


# ---- body sections --------------------------------------------------------------------------------


def section_span(body: str, title: str) -> tuple[int, int] | None:
    """[start, end) of the section's content (after its heading line, up to the next # or ## heading)."""
    for match in _H2.finditer(body):
        if match.group(1).strip().casefold() == title.casefold():
            start = match.end() + (1 if body[match.end() : match.end() + 1] == "\n" else 0)
            following = _ANY_HEADING.search(body, start)
            return start, following.start() if following else len(body)
    return None


def section_items(body: str, title: str) -> list[str]:
    span = section_span(body, title)
    if span is None:
        return []
    text = re.sub(r"<!--.*?-->", "", body[span[0] : span[1]], flags=re.DOTALL)
    items = []
    for line in text.splitlines():
        item = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", line).strip()
        if item:
            items.append(item)
    return items


# ---- finding --------------------------------------------------------------------------------


def profiles_at(vault: Vault) -> list[Entity]:
    """Every profile note under long-term/relationships/ (only that folder is read, not the vault),
    read through the vault, which never follows a symbolic link."""
    base = vault.abspath(RELATIONSHIPS)
    out = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith(".") or not name.endswith(".md"):
                continue
            rel = f"{RELATIONSHIPS}/{os.path.relpath(os.path.join(dirpath, name), base)}".replace(os.sep, "/")
            try:
                note = vault.read_note(rel)
            except NoteParseError:
                continue
            if note.meta.get("entity") or note.meta.get("kind"):
                out.append(Entity(note))
    return out


def expand_names(vault: Vault, names: Iterable[str]) -> list[str]:
    """`names` plus every other name of the entities they name: `--entity alice` also matches notes
    whose `entities` say "Alice Chen" (for search filters, which compare names exactly)."""
    wanted = [n.strip() for n in names if n and n.strip()]
    out = dict.fromkeys(wanted)
    if wanted:
        for entity in profiles_at(vault):
            known = {n.casefold() for n in entity.names}
            if any(w.casefold() in known for w in wanted):
                out.update(dict.fromkeys(entity.names))
    return list(out)
