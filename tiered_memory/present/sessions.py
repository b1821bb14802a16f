"""Sessions, ingested transcripts and extracted memories, as text and as JSON."""

from __future__ import annotations

__all__ = [
    "LEFT_OUT",
    "appended_text",
    "ended_text",
    "extract_dict",
    "extract_text",
    "indent",
    "ingested_text",
    "left_out_text",
    "outcome_lines",
    "session_dict",
    "session_line",
    "session_list_json",
    "session_list_text",
    "session_text",
    "started_text",
]

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from tiered_memory.model.session_format import plural

if TYPE_CHECKING:  # annotations only: listing sessions (a search's --recent) loads no other records
    from tiered_memory.app.api.session_list import MemoryOutcome, SessionList, SessionView
    from tiered_memory.app.api.sessions import ExtractResult


# Why a file of an opencode session's storage was left out, as the person reads it.
LEFT_OUT = {
    "link": "a symbolic link, not followed",
    "unreadable": "cannot be opened",
    "irregular": "not a regular file",
    "large": "larger than a record may hold",
    "not-json": "not UTF-8 JSON: still being written?",
}


def left_out_text(name: str, why: str) -> str:
    return f"opencode session: left out {name} ({LEFT_OUT.get(why, why)})"


def indent(text: str, prefix: str = "  ") -> list[str]:
    return [f"{prefix}{line}" if line.strip() else "" for line in text.splitlines()]


def _human(when: datetime | None) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if when else "?"


def _stamp(when: datetime | None) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if when else ""


# ---- JSON -----------------------------------------------------------------------------------------


def session_dict(session: SessionView, *, messages: bool = False) -> dict[str, Any]:
    """A session as `--json` shows it: the transcript only when asked for, the memories, commit and
    notice only when there are some."""
    data = session.to_dict()
    for name, wanted in (
        ("transcript", messages),
        ("memories", bool(session.memories)),
        ("commit", bool(session.commit)),
        ("notice", bool(session.notice)),
    ):
        if not wanted:
            data.pop(name)
    return data


def session_list_json(listing: SessionList) -> list[dict[str, Any]]:
    return [session_dict(s) for s in listing.sessions]


def extract_dict(result: ExtractResult) -> dict[str, Any]:
    if result.dry_run:
        return {
            "dry_run": True,
            "extractor": result.extractor,
            "candidates": [c.to_dict() for c in result.candidates],
        }
    return {
        "extractor": result.extractor,
        "commit": result.commit,
        "memories": [m.to_dict() for m in result.memories],
    }


# ---- text -----------------------------------------------------------------------------------------


def session_line(session: SessionView) -> str:
    state = "live" if session.live else "ended"
    return f"{_human(session.started)}  {state:<5}  {session.id}  {session.messages:>4} msgs  {session.title}"


def outcome_lines(outcomes: list[MemoryOutcome]) -> list[str]:
    return [f"  {o.action:<10} {o.message}" for o in outcomes]


def session_list_text(listing: SessionList, *, with_summary: bool = False) -> str:
    if not listing.sessions:
        return "no sessions"
    lines: list[str] = []
    for session in listing.sessions:
        lines.append(session_line(session))
        if with_summary and session.summary:
            lines += indent(session.summary, "    ")
    return "\n".join(lines)


def started_text(session: SessionView) -> str:
    return f'started session {session.id} "{session.title}"  ({session.path})'


def appended_text(session: SessionView, role: str) -> str:
    count = plural(session.messages, "message")
    return f'appended {role} message to {session.id} "{session.title}" ({count})'


def ended_text(session: SessionView) -> str:
    lines = [f'ended {session.id} "{session.title}": archived at {session.path}']
    lines += indent(session.summary)
    return "\n".join(lines + outcome_lines(session.memories))


def session_text(session: SessionView, grep: str | None = None) -> str:
    lines = [session_line(session), f"  {session.path}"]
    if session.summary:
        lines += ["", "Summary:", *indent(session.summary)]
    lines += ["", "Messages:" if not grep else f"Messages containing '{grep}':"]
    for message in session.transcript:
        when = f"  {_stamp(message.timestamp)}" if message.timestamp else ""
        lines.append(f"[{message.role}]{when}")
        lines += indent(message.content)
    if not session.transcript:
        lines.append("  (none)")
    return "\n".join(lines)


def ingested_text(session: SessionView) -> str:
    if session.notice and not session.memories and not session.commit:
        return session.notice
    head = session.notice or (
        f'ingested "{session.title}" as {session.id} ({plural(session.messages, "message")})'
    )
    return "\n".join([head, f"  {session.path}", *outcome_lines(session.memories)])


def extract_text(result: ExtractResult) -> str:
    if not result.dry_run:
        return "\n".join(outcome_lines(result.memories)) or "no memories found"
    if not result.candidates:
        return "no memories found"
    lines = []
    for row in result.candidates:
        target = f" {row.other}" if row.other else ""
        lines.append(f"[{row.category} {row.confidence:.2f}] {row.text}")
        lines.append(f"    would {row.would}{target}  ({row.cue})")
    return "\n".join(lines)
