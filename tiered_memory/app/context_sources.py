"""What a context block is made of, read from the vault's structured files: the user profile, a
project's status.md and tasks.json, the active project (mid-term/active_contexts.json), the
current session and short-term keys, and any note's content lines. It only reads; it never writes.
"""

from __future__ import annotations

__all__ = [
    "ACTIVE_CONTEXTS",
    "CONTEXT_STACK",
    "CURRENT_SESSION",
    "DONE",
    "PREFERENCES",
    "PROFILE",
    "PROJECTS",
    "active_project",
    "describe",
    "essentials",
    "flatten",
    "live_keys",
    "one_line",
    "open_tasks",
    "summary_only",
    "valid_project_id",
]

import json
import re
from datetime import datetime
from typing import TYPE_CHECKING, Any

from tiered_memory.errors import BadInput, NoteParseError
from tiered_memory.model import dates, layout
from tiered_memory.model import note as notes

if TYPE_CHECKING:
    from tiered_memory.app.memory import Memory

PROFILE = layout.PROFILE
PREFERENCES = layout.PREFERENCES
CURRENT_SESSION = layout.CURRENT_SESSION
CONTEXT_STACK = layout.CONTEXT_STACK
ACTIVE_CONTEXTS = layout.ACTIVE_CONTEXTS
PROJECTS = layout.PROJECTS
DONE = {"done", "completed", "complete", "closed", "cancelled", "canceled", "resolved", "finished"}

_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_SUMMARY = re.compile(r"^##[ \t]+Summary[ \t]*\n(.*?)(?=^##?[ \t]|\Z)", re.MULTILINE | re.DOTALL)
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def essentials(note: notes.Note, keep_title: bool = False) -> list[str]:
    """A note's content lines: no comments, no blank lines, no title heading; headings become labels."""
    text = _COMMENT.sub("", note.text)
    out: list[str] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip():
            continue
        heading = _HEADING.match(line.strip())
        if heading:
            label = heading.group(2).strip()
            if not keep_title and label.lower() == note.title.lower():
                continue
            line = f"{label}:"
        out.append(line)
    # A trailing label with nothing under it says nothing.
    while out and out[-1].endswith(":") and not out[-1].startswith(("-", "*")):
        out.pop()
    return out


def summary_only(note: notes.Note) -> notes.Note:
    """A session note's `## Summary` section (its message log would crowd out everything else)."""
    if note.category != "session":
        return note
    match = _SUMMARY.search(note.body)
    if not match:
        return note
    return notes.Note(note.path, note.meta, match.group(1), True)


def flatten(lines: list[str]) -> str:
    """Content lines as one line: `Label: item; item. Text ...` (bullets dropped)."""
    out = ""
    for line in lines:
        item = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?", "", line).strip()
        if not item:
            continue
        if not out or out.endswith(":"):
            out += (" " if out else "") + item
        elif item.endswith(":"):
            out += ". " + item if out[-1] not in ".!?;" else " " + item
        else:
            out += ("; " if line.lstrip()[:1] in "-*+" else " ") + item
    return " ".join(out.split())


def open_tasks(data: Any) -> list[str]:
    """`- [ ] title (priority, due)` for each task not done, from the shapes tasks.json takes."""
    if isinstance(data, dict):
        items = data.get("tasks", data.get("items"))
        if items is None:
            items = [
                dict(v, id=k) if isinstance(v, dict) else {"title": k, "status": v} for k, v in data.items()
            ]
    else:
        items = data
    if not isinstance(items, list):
        return []
    out = []
    for item in items:
        if isinstance(item, str):
            title, extras = item, []
        elif isinstance(item, dict):
            status = str(item.get("status") or item.get("state") or "").strip().lower()
            if item.get("done") is True or item.get("completed") is True or status in DONE:
                continue
            title = str(
                next((item[k] for k in ("title", "name", "task", "text", "description") if item.get(k)), "")
            )
            extras = [
                f"{k} {item[k]}" if k == "due" else str(item[k])
                for k in ("priority", "due")
                if item.get(k) not in (None, "")
            ]
            if status and status not in ("todo", "open", "pending"):
                extras.insert(0, status)
        else:
            continue
        if title.strip():
            suffix = f" ({', '.join(extras)})" if extras else ""
            out.append(f"- [ ] {one_line(title)}{suffix}")
    return out


def active_project(memory: Memory) -> str | None:
    """The project named current in active_contexts.json, else its most recently active one."""
    rel = ACTIVE_CONTEXTS
    try:
        data = json.loads(memory.read_text(rel)) if memory.abspath(rel).is_file() else {}
    except (NoteParseError, ValueError, RecursionError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    for key in ("current", "current_project", "active_project", "active"):
        if isinstance(data.get(key), str) and data[key].strip():
            return str(data[key]).strip()
    projects = data.get("projects")
    candidates: list[tuple[str, str]] = []
    if isinstance(projects, dict):
        for pid, info in projects.items():
            info = info if isinstance(info, dict) else {"status": info}
            if _is_active(info):
                candidates.append((str(_when(info)), str(pid)))
    elif isinstance(projects, list):
        for info in projects:
            if isinstance(info, str):
                candidates.append(("", info))
            elif isinstance(info, dict) and info.get("id") and _is_active(info):
                candidates.append((str(_when(info)), str(info["id"])))
    if candidates:
        return max(candidates)[1]
    folder = memory.abspath(PROJECTS)
    found = sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
    return found[0] if len(found) == 1 else None


def valid_project_id(value: str) -> str:
    value = value.strip()
    if not value or value.startswith(".") or any(c in value for c in "/\\\x00"):
        raise BadInput(f"invalid project id '{value}': use letters, digits, '-' or '_' (no path characters)")
    return value


def _is_active(info: dict[str, Any]) -> bool:
    status = str(info.get("status", "active")).strip().lower()
    return info.get("active", True) is not False and status not in DONE | {"archived", "paused", "false"}


def _when(info: dict[str, Any]) -> str:
    for key in ("last_active", "updated", "last_seen", "since", "started"):
        if info.get(key):
            return str(info[key])
    return ""


def live_keys(stack: dict[str, Any], now: datetime) -> list[tuple[str, Any]]:
    """`tmem st` keys that have not expired: {"value", "set_at", "expires_at"} entries, or bare values."""
    out = []
    for key, raw in stack.items():
        if isinstance(raw, dict) and "value" in raw and set(raw) <= {"value", "set_at", "expires_at"}:
            expires = dates.to_datetime(raw.get("expires_at"))
            if expires is not None and expires <= now:
                continue
            raw = raw["value"]
        out.append((str(key), raw))
    return out


def describe(value: Any) -> str:
    if isinstance(value, dict):
        for key in ("title", "name", "topic", "context", "description", "summary"):
            if value.get(key):
                return str(value[key])
        return ", ".join(f"{k}: {v}" for k, v in value.items() if not isinstance(v, (dict, list)))
    if isinstance(value, list):
        return ", ".join(describe(v) for v in value)
    return "" if value is None else str(value)


def one_line(text: str) -> str:
    return " ".join(text.split())
