"""Text and JSON renderings shared by the CLI, the daemon's socket and the MCP server."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from tiered_memory.index.catalog import NoteRow
from tiered_memory.index.retrieve import Hit, SearchResult
from tiered_memory.model import note as notes


def iso(ts: float | None) -> str:
    if not ts:
        return ""
    return datetime.fromtimestamp(ts, UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        import base64

        return base64.b64encode(value).decode("ascii")
    if isinstance(value, datetime):
        return value.isoformat()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [jsonable(v) for v in value]
    return value


def dumps(value: Any) -> str:
    return json.dumps(jsonable(value), ensure_ascii=False, indent=2)


def hit_dict(hit: Hit, explain: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": hit.id,
        "title": hit.title,
        "path": hit.path,
        "tier": hit.tier,
        "category": hit.category,
        "score": round(hit.score, 6),
        "updated": iso(hit.updated),
        "snippet": hit.snippet,
    }
    if explain:
        data["explain"] = hit.components
    return data


def result_dict(result: SearchResult, query: str, explain: bool = False) -> dict[str, Any]:
    return {
        "query": query,
        "mode": result.mode,
        "notice": result.notice,
        "results": [hit_dict(h, explain) for h in result.hits],
    }


def format_hits(result: SearchResult, explain: bool = False) -> str:
    if not result.hits:
        return "no matching memories"
    lines: list[str] = []
    for rank, hit in enumerate(result.hits, 1):
        day = iso(hit.updated)[:10]
        lines.append(f"{rank:>2}. {hit.score:.3f}  {hit.title}  [{hit.tier}/{hit.category}] {day}")
        lines.append(f"    id: {hit.id}   {hit.path}")
        if hit.snippet:
            lines.append(f"    {hit.snippet}")
        if explain:
            parts = "  ".join(f"{k}={v}" for k, v in hit.components.items())
            lines.append(f"    explain: {parts}")
    return "\n".join(lines)


def note_dict(note: notes.Note) -> dict[str, Any]:
    return {
        "id": note.id,
        "title": note.title,
        "path": note.path,
        "tier": note.tier,
        "category": note.category,
        "status": note.status,
        "tags": note.tags,
        "project": note.project,
        "entities": note.entities,
        "importance": note.importance,
        "confidence": note.confidence,
        "created": note.created,
        "updated": note.updated,
        "frontmatter": note.meta,
        "body": note.body,
        "warning": note.parse_warning,
    }


def row_dict(row: NoteRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "title": row.title,
        "path": row.path,
        "tier": row.tier,
        "category": row.category,
        "status": row.status,
        "tags": row.tags,
        "project": row.project,
        "entities": row.entities,
        "importance": row.importance,
        "confidence": row.confidence,
        "updated": iso(row.updated),
    }


def format_rows(rows: list[NoteRow]) -> str:
    if not rows:
        return "no notes"
    lines = []
    for row in rows:
        tags = f"  #{' #'.join(row.tags)}" if row.tags else ""
        lines.append(f"{iso(row.updated)[:10]}  {row.tier:<7} {row.category:<10} {row.id}  {row.title}{tags}")
    return "\n".join(lines)
