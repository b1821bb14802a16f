"""A basic-memory project: a folder of Markdown notes with frontmatter, observations and relations

    ---
    title: Coffee Brewing Methods
    type: note
    permalink: coffee/coffee-brewing-methods
    tags: [coffee, brewing]
    ---
    # Coffee Brewing Methods

    ## Observations
    - [method] Pour over gives more flavor clarity than French press #technique
    - [tip] Water at 205°F extracts best (just off the boil)

    ## Relations
    - relates_to [[Coffee Bean Origins]]
    - requires [[Burr Grinder]]

Each note becomes one memory with its body as written (relations are wikilinks tmem's link
graph already follows); the permalink is its id in basic-memory. The observations' categories
become tags, and a note whose observations are all decisions (or preferences...) gets that category.
"""

from __future__ import annotations

__all__ = ["CATEGORY_OF", "OBSERVATION", "read"]

import re
from pathlib import Path

from tiered_memory.app.filing import NewNote
from tiered_memory.app.importers.items import Item, read_text
from tiered_memory.errors import BadInput
from tiered_memory.model import dates
from tiered_memory.model import note as notes

OBSERVATION = re.compile(r"^\s*[-*]\s+\[([^\]]+)\]\s+(.+)$", re.MULTILINE)
CATEGORY_OF = {
    "decision": "decision",
    "preference": "preference",
    "pattern": "pattern",
    "fact": "fact",
    "error": "error",
    "bug": "error",
    "lesson": "error",
    "discovery": "discovery",
    "insight": "discovery",
}


def read(path: Path) -> list[Item]:
    files = sorted(path.rglob("*.md")) if path.is_dir() else [path]
    # A link inside the folder is not one of its notes: it may lead anywhere on the machine.
    files = [
        f
        for f in files
        if not any(p.startswith(".") for p in f.relative_to(path if path.is_dir() else f.parent).parts)
        and not (path.is_dir() and f.is_symlink())
    ]
    if not files:
        raise BadInput(f"{path}: no Markdown notes found")
    items: list[Item] = []
    for file in files:
        rel = file.relative_to(path).as_posix() if path.is_dir() else file.name
        try:
            text = read_text(file)
        except (OSError, UnicodeDecodeError):
            continue
        note = notes.parse(text, rel)
        if not note.body.strip():
            continue
        kinds = [m.group(1).strip().lower() for m in OBSERVATION.finditer(note.body)]
        categories = {CATEGORY_OF.get(k, "note") for k in kinds}
        category = categories.pop() if len(categories) == 1 else "note"
        permalink = str(note.meta.get("permalink") or rel.removesuffix(".md"))
        tags = note.tags + [k for k in dict.fromkeys(kinds) if k not in note.tags]
        new = NewNote(
            text=note.body,
            title=str(note.meta.get("title") or note.title),
            category=category,
            tags=tags,
            when=dates.to_datetime(note.meta.get("created")),
            extra={"permalink": permalink},
        )
        items.append(Item(permalink, text, new.title or rel, memory=new))
    return items
