"""A mem0 export: what `Memory.get_all()` / `MemoryClient.get_all()` return, saved as JSON

    {"results": [{"id": "892db2ae-...", "memory": "Is a vegetarian", "hash": "...",
                  "user_id": "alex", "agent_id": null, "metadata": {"source": "chat"},
                  "categories": ["food", "health"],
                  "created_at": "2024-07-25T23:57:00.108347-07:00", "updated_at": "..."}]}

(a bare list of those records, or `{"memories": [...]}`, is read too). Each memory is one tmem
memory about its user; mem0's categories become tags.
"""

from __future__ import annotations

__all__ = ["read"]

from pathlib import Path
from typing import Any

from tiered_memory.app.filing import NewNote
from tiered_memory.app.importers.items import Item, load_json, text_of
from tiered_memory.errors import BadInput
from tiered_memory.model import dates


def _records(data: Any) -> list[Any]:
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        for key in ("results", "memories"):
            if isinstance(data.get(key), list):
                return list(data[key])
    raise BadInput('not a mem0 export (expected a list of memories or {"results": [...]})')


def read(path: Path) -> list[Item]:
    items: list[Item] = []
    for record in _records(load_json(path)):
        if not isinstance(record, dict) or not text_of(record.get("memory") or record.get("text")):
            continue
        text = text_of(record.get("memory") or record.get("text"))
        who = [text_of(record.get(k)) for k in ("user_id",) if text_of(record.get(k))]
        metadata = record.get("metadata") if isinstance(record.get("metadata"), dict) else {}
        categories = [str(c) for c in record.get("categories") or [] if str(c).strip()]
        category = (
            "preference" if any(c.lower() in ("preference", "preferences") for c in categories) else "fact"
        )
        extra: dict[str, Any] = {"mem0_id": str(record.get("id") or "")}
        if record.get("agent_id"):
            extra["agent"] = str(record["agent_id"])
        new = NewNote(
            text=text,
            category=category,
            tags=categories,
            entities=who,
            when=dates.to_datetime(record.get("created_at")),
            extra=extra | ({"mem0_metadata": metadata} if metadata else {}),
        )
        items.append(Item(str(record.get("id") or record.get("hash") or text), text, text[:80], memory=new))
    return items
