"""A tmem export (`tmem export`, JSON or JSON Lines) back into a vault: notes at their paths with
their frontmatter and bodies, sessions with their messages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tiered_memory.app.export import read_export
from tiered_memory.app.importers.items import Item, SessionItem
from tiered_memory.model import dates
from tiered_memory.model import note as notes
from tiered_memory.model import session_format as sn
from tiered_memory.model.transcripts import Message

_DATES = ("created", "updated", "started", "ended")


def _meta(frontmatter: dict[str, Any]) -> dict[str, Any]:
    meta = dict(frontmatter)
    for key in _DATES:
        if isinstance(meta.get(key), str):
            meta[key] = dates.to_datetime(meta[key]) or meta[key]
    return meta


def read(path: Path) -> list[Item]:
    export = read_export(path)
    items: list[Item] = []
    for entry in export.entries:
        content = json.dumps(entry, sort_keys=True, ensure_ascii=False)
        meta = _meta(entry.get("frontmatter") or {})
        if entry.get("kind") == "note":
            note = notes.Note(
                str(entry["path"]), meta, str(entry.get("body") or ""), has_frontmatter=bool(meta)
            )
            items.append(Item(f"note:{entry.get('id') or entry['path']}", content, note.title, note=note))
        else:
            messages = [
                Message(
                    str(m.get("role") or "user"),
                    str(m.get("content") or ""),
                    dates.to_datetime(m.get("timestamp")),
                )
                for m in entry.get("messages") or []
            ]
            session = SessionItem(
                title=str(entry.get("title") or ""),
                messages=messages,
                started=dates.to_datetime(meta.get("started")) or dates.to_datetime(entry.get("started")),
                ended=dates.to_datetime(meta.get("ended")) or dates.to_datetime(entry.get("ended")),
                meta=meta,
                id=str(entry["id"]),
                path=str(entry.get("path") or "") or None,
                extract=False,
                summary=str(entry.get("summary") or "") or None,
            )
            if session.path and not sn.is_session_path(session.path):
                session.path = None
            items.append(Item(f"session:{entry['id']}", content, session.title, session=session))
    return items
