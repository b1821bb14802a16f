"""A claude-mem export (`scripts/export-memories.ts`): one JSON document

    {"exportedAt": "...", "exportedAtEpoch": ..., "query": "...", "project": "...",
     "totalObservations": 2, ...,
     "observations": [{"id": 41, "memory_session_id": "...", "project": "api", "type": "decision",
                       "title": "...", "subtitle": "...", "narrative": "...",
                       "facts": "[\"...\", \"...\"]", "concepts": "[\"...\"]",
                       "files_read": "[...]", "files_modified": "[...]",
                       "created_at": "...", "created_at_epoch": 1735000000000}],
     "sessions": [...], "summaries": [{"id": 7, "request": "...", "investigated": "...",
                  "learned": "...", "completed": "...", "next_steps": "...", ...}],
     "prompts": [{"id": ..., "prompt_text": "...", ...}]}

Observations and session summaries become memories (in their project); user prompts are
requests, not memories, and are left out.
"""

from __future__ import annotations

__all__ = ["TYPES", "read"]

import json
from pathlib import Path
from typing import Any

from tiered_memory.app.filing import NewNote
from tiered_memory.app.importers.items import Item, load_json, text_of
from tiered_memory.errors import BadInput
from tiered_memory.model import dates

TYPES = {
    "decision": "decision",
    "bugfix": "error",
    "feature": "discovery",
    "refactor": "pattern",
    "discovery": "discovery",
    "change": "fact",
}


def _list(value: Any) -> list[str]:
    """claude-mem stores lists as JSON text in SQLite columns."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return [value] if value.strip() else []
    return [str(v).strip() for v in value or [] if str(v).strip()] if isinstance(value, list) else []


def _when(record: dict[str, Any]) -> Any:
    epoch = record.get("created_at_epoch")
    if isinstance(epoch, int | float) and epoch > 1e11:
        epoch = epoch / 1000  # milliseconds
    return dates.to_datetime(epoch) or dates.to_datetime(record.get("created_at"))


def _project(record: dict[str, Any]) -> str | None:
    name = text_of(record.get("project"))
    return name.replace("/", "-").lstrip(".") or None


def read(path: Path) -> list[Item]:
    data = load_json(path)
    if not isinstance(data, dict) or not any(k in data for k in ("observations", "summaries")):
        raise BadInput(f"{path}: not a claude-mem export (no observations or summaries)")
    items: list[Item] = []
    for obs in data.get("observations") or []:
        facts = _list(obs.get("facts"))
        lines = [text_of(obs.get("subtitle")), text_of(obs.get("narrative"))] + [f"- {f}" for f in facts]
        files = _list(obs.get("files_modified")) or _list(obs.get("files_read"))
        if files:
            lines.append(f"Files: {', '.join(files[:10])}")
        text = "\n\n".join(line for line in lines if line)
        if not text:
            continue
        new = NewNote(
            text=text,
            title=text_of(obs.get("title"))[:80] or None,
            category=TYPES.get(text_of(obs.get("type")).lower(), "note"),
            tags=_list(obs.get("concepts")),
            project=_project(obs),
            when=_when(obs),
            extra={"claude_mem_session": text_of(obs.get("memory_session_id") or obs.get("sdk_session_id"))},
        )
        items.append(Item(f"observation:{obs.get('id')}", text, new.title or text[:80], memory=new))
    for summary in data.get("summaries") or []:
        parts = [
            (label, text_of(summary.get(key)))
            for label, key in (
                ("Request", "request"),
                ("Investigated", "investigated"),
                ("Learned", "learned"),
                ("Completed", "completed"),
                ("Next steps", "next_steps"),
                ("Notes", "notes"),
            )
        ]
        text = "\n\n".join(f"**{label}:** {value}" for label, value in parts if value)
        if not text:
            continue
        title = text_of(summary.get("request"))[:80] or "claude-mem session summary"
        new = NewNote(
            text=text,
            title=title,
            category="discovery" if text_of(summary.get("learned")) else "note",
            project=_project(summary),
            when=_when(summary),
            tags=["claude-mem", "summary"],
        )
        items.append(Item(f"summary:{summary.get('id')}", text, title, memory=new))
    return items
