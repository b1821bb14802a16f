"""How a session looks on disk: one Markdown note per session. Pure: no I/O.

    ---
    id: ses-20261122-3fa9c1          # also `session:`, so `tmem search --session ID` finds it
    category: session
    status: active                   # completed once ended and archived
    started: ..., ended: ..., messages: 12, source: ..., origin: <the tool's own session id>
    ---
    # Fix the flaky CI job

    ## Summary                       # written when the session ends
    ...

    ## Messages

    ### user · 2026-11-22T12:00:05Z
    The build fails on ...

A content line that would read as a message heading is escaped with a backslash (shown as is by
Markdown viewers), so any text round-trips. Live sessions live in short-term/sessions/, ended ones
in archive/sessions/YYYY/MM/DD/; short-term/current_session.md points at the live one.
"""

from __future__ import annotations

__all__ = [
    "ARCHIVE_DIR",
    "BLOCK_END",
    "BLOCK_START",
    "CURRENT",
    "LIVE_DIR",
    "MESSAGES",
    "SUMMARY",
    "Session",
    "append_messages",
    "build_summary",
    "current_block",
    "cut_words",
    "first_sentence",
    "from_note",
    "human",
    "is_session_path",
    "keywords",
    "message_block",
    "new_body",
    "parse_messages",
    "plural",
    "set_block",
    "stamp",
    "summary_of",
    "with_summary",
]

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tiered_memory.model import dates, layout
from tiered_memory.model import note as notes
from tiered_memory.model.statements import STOPWORDS
from tiered_memory.model.transcripts import Message, escape_line, markdown_messages

LIVE_DIR = layout.LIVE_SESSIONS
ARCHIVE_DIR = layout.ARCHIVE_SESSIONS
CURRENT = layout.CURRENT_SESSION
MESSAGES = "## Messages"
SUMMARY = "## Summary"
BLOCK_START = "<!-- tmem:session -->"
BLOCK_END = "<!-- /tmem:session -->"
_MESSAGES_LINE = re.compile(r"^## Messages[ \t]*$", re.MULTILINE)
_SUMMARY_LINE = re.compile(r"^## Summary[ \t]*$", re.MULTILINE)
_BLOCK = re.compile(re.escape(BLOCK_START) + r".*?" + re.escape(BLOCK_END), re.DOTALL)
_KEYWORD_STOP = STOPWORDS | set(
    "that this with have from what when where which would could should about also just like will your "
    "they them then than into been were does done make made need want know think please thanks thank "
    "sure okay yes here there some more most much many other only over such very well where while "
    "can't don't it's i'm let's let me get got use used using one two all any how why who not but "
    "what's see look looks".split()
)


@dataclass
class Session:
    id: str
    title: str
    path: str
    status: str = "active"
    project: str = ""
    started: datetime | None = None
    ended: datetime | None = None
    updated: datetime | None = None
    message_count: int = 0
    summary: str = ""
    source: str = ""
    origin: str | None = None
    messages: list[Message] = field(default_factory=list)
    # Set by the operation that returned the session, not stored:
    outcomes: list[Any] = field(default_factory=list)  # dedup.RememberOutcome of its extraction
    sha: str | None = None
    notice: str = ""

    @property
    def live(self) -> bool:
        return self.status == "active"


def is_session_path(path: str) -> bool:
    return path.startswith((LIVE_DIR + "/", ARCHIVE_DIR + "/"))


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def stamp(when: datetime | None) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if when else ""


def human(when: datetime | None) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if when else "?"


# ---- body ---------------------------------------------------------------------------------------


def new_body(title: str) -> str:
    return f"# {title}\n\n{MESSAGES}\n"


def message_block(message: Message) -> str:
    when = f" · {stamp(message.timestamp)}" if message.timestamp else ""
    content = "\n".join(escape_line(line) for line in message.content.strip().splitlines())
    return f"\n### {message.role}{when}\n{content}\n"


def append_messages(body: str, messages: Sequence[Message]) -> str:
    if not _MESSAGES_LINE.search(body):
        body = body.rstrip("\n") + f"\n\n{MESSAGES}\n"
    if not body.endswith("\n"):
        body += "\n"
    return body + "".join(message_block(m) for m in messages)


def parse_messages(body: str) -> list[Message]:
    found = _MESSAGES_LINE.search(body)
    if not found:
        return []
    return markdown_messages(body[found.end() :].splitlines(), styles={"heading"}, fences=False)


def _head(body: str) -> str:
    """The part before the messages: a "## Summary" line inside a message is not the summary."""
    found = _MESSAGES_LINE.search(body)
    return body[: found.start()] if found else body


def summary_of(body: str) -> str:
    head = _head(body)
    start = _SUMMARY_LINE.search(head)
    if not start:
        return ""
    text = head[start.end() :]
    return "\n".join(_unescape_heading(line) for line in text.strip().splitlines())


def with_summary(body: str, summary: str) -> str:
    """The body with its Summary section (re)written just before the messages; the rest kept as is."""
    safe = "\n".join(_escape_heading(line) for line in summary.strip().splitlines())
    section = f"{SUMMARY}\n\n{safe}\n\n"
    head = _head(body)
    rest = body[len(head) :]
    old = _SUMMARY_LINE.search(head)
    if old:
        return head[: old.start()] + section + rest
    if rest:
        return head + section + rest
    return body.rstrip("\n") + "\n\n" + section


def _escape_heading(line: str) -> str:
    return "\\" + line if re.match(r"^\\*## (?:Messages|Summary)[ \t]*$", line) else line


def _unescape_heading(line: str) -> str:
    return line[1:] if re.match(r"^\\+## (?:Messages|Summary)[ \t]*$", line) else line


def from_note(note: notes.Note, *, with_messages: bool = True) -> Session:
    meta = note.meta
    messages = parse_messages(note.body) if with_messages else []
    try:
        count = int(meta.get("messages") or 0)
    except (TypeError, ValueError):
        count = 0
    return Session(
        id=note.id,
        title=note.title,
        path=note.path,
        status="active" if note.status == "active" and note.tier == "short" else "completed",
        project=note.project,
        started=dates.to_datetime(meta.get("started")) or note.created,
        ended=dates.to_datetime(meta.get("ended")),
        updated=note.updated,
        message_count=len(messages) if with_messages else count,
        summary=summary_of(note.body),
        source=str(meta.get("source") or ""),
        origin=str(meta["origin"]) if meta.get("origin") else None,
        messages=messages,
    )


# ---- summary ------------------------------------------------------------------------------------


def first_sentence(text: str, limit: int = 140) -> str:
    for line in text.splitlines():
        line = line.strip().lstrip("#>-* ").strip()
        if line and not line.startswith(("[tool", "```")):
            piece = re.split(r"(?<=[.!?。！？])\s", line, maxsplit=1)[0]
            return cut_words(piece, limit)
    return ""


def cut_words(text: str, limit: int) -> str:
    """`text` in at most `limit` characters, cut at a word boundary with "…" when it is longer
    (mid-word only when one word is longer than half the room)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    room = text[: limit - 1]
    space = room.rfind(" ")
    if space >= limit // 2:
        room = room[:space]
    return room.rstrip(" ,;:-–—") + "…"


def keywords(messages: Sequence[Message], limit: int = 8) -> list[str]:
    """Words said at least twice in the conversation, most frequent first (ties alphabetical)."""
    counts: Counter[str] = Counter()
    for message in messages:
        if message.role not in ("user", "assistant"):
            continue
        for token in re.findall(r"[A-Za-z][A-Za-z0-9_+#.-]{2,}|[\u3400-\u9fff]{2,}", message.content):
            if re.match(r"[\u3400-\u9fff]", token):
                counts.update(token[i : i + 2] for i in range(len(token) - 1))
                continue
            word = token.lower().strip(".-")
            if len(word) >= 4 and word not in _KEYWORD_STOP:
                counts[word] += 1
    ranked = sorted((w for w, n in counts.items() if n >= 2), key=lambda w: (-counts[w], w))
    return ranked[:limit]


def build_summary(
    messages: Sequence[Message],
    started: datetime | None,
    ended: datetime | None,
    highlights: Sequence[tuple[str, str]] = (),
    written: str | None = None,
) -> str:
    """A deterministic summary: when, how many messages, first and last topic, keywords, highlights.

    `written` (a summary the agent wrote) comes first; the rest is always computed the same way.
    """
    lines: list[str] = []
    if written and written.strip():
        lines += [written.strip(), ""]
    roles = Counter(m.role for m in messages)
    by_role = ", ".join(f"{roles[r]} {r}" for r in ("user", "assistant", "system", "tool") if roles[r])
    lines.append(f"- When: {human(started)} -> {human(ended)}")
    lines.append(f"- Messages: {len(messages)}" + (f" ({by_role})" if by_role else ""))
    asked = [m for m in messages if m.role == "user"] or [m for m in messages if m.role != "tool"]
    if asked:
        first = first_sentence(asked[0].content)
        last = first_sentence(asked[-1].content)
        lines.append(f"- First topic: {first}")
        if len(asked) > 1 and last != first:
            lines.append(f"- Last topic: {last}")
    words = keywords(messages)
    if words:
        lines.append(f"- Keywords: {', '.join(words)}")
    if highlights:
        lines.append("- Highlights:")
        lines += [f"  - [{category}] {text}" for category, text in highlights]
    return "\n".join(lines)


# ---- current_session.md -------------------------------------------------------------------------


def current_block(live: Session | None, last: Session | None = None, recent: Sequence[Message] = ()) -> str:
    lines = [BLOCK_START]
    if live is not None:
        lines.append(
            f"Live session: **{live.title}** (`{live.id}`), started {human(live.started)}, "
            f"{plural(live.message_count, 'message')}: `{live.path}`"
        )
        if live.project:
            lines.append(f"Project: {live.project}")
        if recent:
            lines += ["", "Latest messages:"]
            for message in recent:
                text = " ".join(message.content.split())
                text = text if len(text) <= 160 else text[:159] + "…"
                lines.append(f"- {message.role}: {text}")
    elif last is not None:
        lines.append(
            f"No live session. Last session: **{last.title}** (`{last.id}`), ended {human(last.ended)}: `{last.path}`"
        )
    else:
        lines.append("No live session.")
    lines.append(BLOCK_END)
    return "\n".join(lines)


def set_block(body: str, block: str) -> str:
    """Replace tmem's block in current_session.md; the person's own text around it stays."""
    if _BLOCK.search(body):
        return _BLOCK.sub(lambda _m: block, body, count=1)
    return body.rstrip("\n") + "\n\n" + block + "\n"
