"""The MCP reference memory server's knowledge graph (`memory.json`, `MEMORY_FILE_PATH`): JSON Lines
of entities and relations

    {"type": "entity", "name": "John_Smith", "entityType": "person",
     "observations": ["Speaks fluent Spanish", "Graduated in 2019"]}
    {"type": "relation", "from": "John_Smith", "to": "Anthropic", "relationType": "works_at"}

Each entity becomes one memory about it (`entities: [name]`): its observations as a list, its
relations as wikilinks. People are profiles (long-term/relationships/), the rest facts.
"""

from __future__ import annotations

__all__ = ["PEOPLE", "read"]

import json
from pathlib import Path
from typing import Any

from tiered_memory.app.filing import NewNote
from tiered_memory.app.importers.items import Item, read_text
from tiered_memory.errors import BadInput

PEOPLE = {"person", "people", "user", "contact", "human"}


def _records(path: Path) -> list[dict[str, Any]]:
    try:
        text = read_text(path, "utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path}: cannot read it ({exc.__class__.__name__})") from None
    stripped = text.strip()
    try:
        if stripped.startswith("{") and '"entities"' in stripped[:200] and "\n{" not in stripped:
            graph = json.loads(stripped)  # read_graph's answer: {"entities": [...], "relations": [...]}
            return [{"type": "entity", **e} for e in graph.get("entities") or []] + [
                {"type": "relation", **r} for r in graph.get("relations") or []
            ]
        return [json.loads(line) for line in text.split("\n") if line.strip()]  # U+2028 is inside a line
    except (ValueError, AttributeError, TypeError, RecursionError) as exc:
        raise BadInput(f"{path}: not an MCP memory graph ({exc.__class__.__name__})") from None


def read(path: Path) -> list[Item]:
    records = _records(path)
    entities: dict[str, dict[str, Any]] = {}
    relations: dict[str, list[tuple[str, str]]] = {}
    for record in records:
        if not isinstance(record, dict):
            raise BadInput(f"{path}: every line of an MCP memory graph is a JSON object")
        if record.get("type") == "entity" and record.get("name"):
            entities[str(record["name"])] = record
        elif record.get("type") == "relation" and record.get("from") and record.get("to"):
            relations.setdefault(str(record["from"]), []).append(
                (str(record["relationType"]), str(record["to"]))
            )
    if records and not entities:
        raise BadInput(f"{path}: no entities (not an MCP memory graph?)")
    items: list[Item] = []
    for name, entity in entities.items():
        kind = str(entity.get("entityType") or "thing")
        shown = name.replace("_", " ")
        observations = [str(o).strip() for o in entity.get("observations") or [] if str(o).strip()]
        lines = [f"{shown} ({kind})", ""] + [f"- {o}" for o in observations]
        links = relations.get(name, [])
        if links:
            lines += ["", "## Relations", ""] + [
                f"- {r.replace('_', ' ')} [[{t.replace('_', ' ')}]]" for r, t in links
            ]
        text = "\n".join(lines) + "\n"
        person = kind.lower() in PEOPLE
        new = NewNote(
            text=text,
            title=shown,
            category="profile" if person else "fact",
            tags=[kind.lower().replace(" ", "-")],
            entities=[shown],
            extra={"entity_type": kind},
        )
        items.append(Item(f"entity:{name}", text, shown, memory=new))
    return items
