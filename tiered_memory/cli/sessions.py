"""`tmem session start|append|end|show|list`, `tmem ingest` and `tmem extract` (issue #7).

Only click is imported at the top: the core is imported inside the commands (`tmem --help` speed).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from tiered_memory.cli.options import emit, json_option, open_memory

if TYPE_CHECKING:
    from tiered_memory.app.dedup import RememberOutcome
    from tiered_memory.model.session_format import Session

FORMAT_CHOICES = ["auto", "openai", "jsonl", "claude-code", "markdown"]
format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMAT_CHOICES),
    default="auto",
    show_default=True,
    help="Transcript format (auto detects it): OpenAI-style JSON Lines, Claude Code JSONL, Markdown chat.",
)


# ---- rendering ----------------------------------------------------------------------------------


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def indent(text: str, prefix: str = "  ") -> list[str]:
    return [f"{prefix}{line}" if line.strip() else "" for line in text.splitlines()]


def outcome_dict(outcome: RememberOutcome) -> dict[str, Any]:
    return {
        "action": outcome.action,
        "id": outcome.note.id,
        "title": outcome.note.title,
        "path": outcome.note.path,
        "category": outcome.note.category,
        "confidence": outcome.note.confidence,
        "other": outcome.other.id if outcome.other is not None else None,
        "superseded": [n.id for n in outcome.superseded],
        "reason": outcome.reason,
        "message": outcome.message,
    }


def session_dict(session: Session, messages: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": session.id,
        "title": session.title,
        "path": session.path,
        "status": session.status,
        "project": session.project,
        "started": session.started,
        "ended": session.ended,
        "messages": session.message_count,
        "summary": session.summary,
        "source": session.source,
        "origin": session.origin,
    }
    if messages:
        data["transcript"] = [
            {"role": m.role, "content": m.content, "timestamp": m.timestamp} for m in session.messages
        ]
    if session.outcomes:
        data["memories"] = [outcome_dict(o) for o in session.outcomes]
    if session.sha:
        data["commit"] = session.sha
    if session.notice:
        data["notice"] = session.notice
    return data


def _line(session: Session) -> str:
    from tiered_memory.model.session_format import human

    state = "live" if session.live else "ended"
    return f"{human(session.started)}  {state:<5}  {session.id}  {session.message_count:>4} msgs  {session.title}"


def _outcome_lines(outcomes: list[RememberOutcome]) -> list[str]:
    return [f"  {o.action:<10} {o.message}" for o in outcomes]


def format_sessions(sessions: list[Session], with_summary: bool = False) -> str:
    if not sessions:
        return "no sessions"
    lines: list[str] = []
    for session in sessions:
        lines.append(_line(session))
        if with_summary and session.summary:
            lines += indent(session.summary, "    ")
    return "\n".join(lines)


def show_recent(ctx: click.Context, n: int, as_json: bool, query: str = "") -> None:
    """`tmem recall --recent N`: the latest sessions and their summaries instead of a search."""
    from tiered_memory.app.sessions import recent
    from tiered_memory.errors import BadInput

    if n < 1:
        raise BadInput("--recent must be at least 1")
    if query.strip():
        raise BadInput("--recent lists sessions and takes no query; search by topic without --recent")
    found = recent(open_memory(ctx), n)
    emit([session_dict(s) for s in found], as_json, lambda: format_sessions(found, with_summary=True))


def _read_text(source: str | None) -> tuple[str, str]:
    """(text, name) from a file or '-' (stdin); binary and non-UTF-8 input is refused in one line."""
    from tiered_memory.errors import BadInput

    if source in (None, "-"):
        if source is None and sys.stdin.isatty():
            raise BadInput("nothing to read: give the text or a FILE, or pipe it on stdin")
        data = sys.stdin.buffer.read()
        name = "stdin"
    else:
        path = Path(source)
        if not path.is_file():
            raise BadInput(f"{source}: no such file")
        data = path.read_bytes()
        name = path.name
    if b"\x00" in data[:8192]:
        raise BadInput(f"{name} is a binary file, not text")
    try:
        return data.decode("utf-8"), name
    except UnicodeDecodeError:
        raise BadInput(f"{name} is not UTF-8 text") from None


# ---- tmem session ... ---------------------------------------------------------------------------


@click.group("session")
def session_group() -> None:
    """Record a conversation: start it, append messages, end it (summary + archive + memories)."""


@session_group.command("start")
@click.argument("title", nargs=-1)
@click.option("--project", help="Project id the session belongs to.")
@json_option
@click.pass_context
def session_start(ctx: click.Context, title: tuple[str, ...], project: str | None, as_json: bool) -> None:
    """Start a live session (it becomes the current one)."""
    from tiered_memory.app.sessions import start

    session = start(open_memory(ctx), " ".join(title) or None, project)
    emit(session_dict(session), as_json, f'started session {session.id} "{session.title}"  ({session.path})')


@session_group.command("append")
@click.argument("text", nargs=-1)
@click.option(
    "--role",
    type=click.Choice(["user", "assistant", "system", "tool"]),
    default="user",
    show_default=True,
    help="Who said it.",
)
@click.option("--session", "session_id", help="Session id (default: the current one; started if none).")
@click.option(
    "--file", "file_", type=click.Path(dir_okay=False, allow_dash=True), help="Read the text from a file."
)
@json_option
@click.pass_context
def session_append(
    ctx: click.Context,
    text: tuple[str, ...],
    role: str,
    session_id: str | None,
    file_: str | None,
    as_json: bool,
) -> None:
    """Append a message (TEXT, --file, or stdin) to the current session, redacting secrets."""
    from tiered_memory.app.sessions import append

    if file_:
        body = _read_text(file_)[0]
    elif text and text != ("-",):
        body = " ".join(text)
    else:
        body = _read_text("-" if text == ("-",) else None)[0]
    session = append(open_memory(ctx), body, role, session_id)
    emit(
        session_dict(session),
        as_json,
        f'appended {role} message to {session.id} "{session.title}" ({plural(session.message_count, "message")})',
    )


@session_group.command("end")
@click.option("--session", "session_id", help="Session id (default: the current one).")
@click.option("--summary", help="A summary the agent wrote; tmem adds counts, topics and highlights.")
@click.option(
    "--extract/--no-extract", default=True, show_default=True, help="Store the memories found in it."
)
@json_option
@click.pass_context
def session_end(
    ctx: click.Context, session_id: str | None, summary: str | None, extract: bool, as_json: bool
) -> None:
    """End a session: write its summary, archive it, extract its memories (one commit)."""
    from tiered_memory.app.sessions import end

    session = end(open_memory(ctx), session_id, summary, extract=extract)

    def text() -> str:
        lines = [f'ended {session.id} "{session.title}": archived at {session.path}']
        lines += indent(session.summary)
        return "\n".join(lines + _outcome_lines(session.outcomes))

    emit(session_dict(session), as_json, text)


@session_group.command("show")
@click.argument("session_id")
@click.option("--grep", help="Only the messages containing all these words.")
@json_option
@click.pass_context
def session_show(ctx: click.Context, session_id: str, grep: str | None, as_json: bool) -> None:
    """One session in detail: summary and messages."""
    from tiered_memory.app.sessions import show
    from tiered_memory.model.session_format import stamp

    session = show(open_memory(ctx), session_id)
    if grep:
        words = grep.lower().split()
        session.messages = [m for m in session.messages if all(w in m.content.lower() for w in words)]

    def text() -> str:
        lines = [_line(session), f"  {session.path}"]
        if session.summary:
            lines += ["", "Summary:", *indent(session.summary)]
        lines += ["", "Messages:" if not grep else f"Messages containing '{grep}':"]
        for message in session.messages:
            when = f"  {stamp(message.timestamp)}" if message.timestamp else ""
            lines.append(f"[{message.role}]{when}")
            lines += indent(message.content)
        if not session.messages:
            lines.append("  (none)")
        return "\n".join(lines)

    emit(session_dict(session, messages=True), as_json, text)


@session_group.command("list")
@click.option("--limit", type=int, default=20, show_default=True, help="At most this many sessions.")
@json_option
@click.pass_context
def session_list(ctx: click.Context, limit: int, as_json: bool) -> None:
    """Sessions, newest first, live ones included."""
    from tiered_memory.app import sessions

    found = sessions.list(open_memory(ctx), limit)
    emit([session_dict(s) for s in found], as_json, lambda: format_sessions(found))


# ---- tmem ingest / tmem extract ---------------------------------------------------------------


@click.command("ingest")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@format_option
@click.option("--title", help="Session title (default: the transcript's own, else its first user message).")
@click.option("--project", help="Project id the session and its memories belong to.")
@click.option(
    "--extract/--no-extract", default=True, show_default=True, help="Store the memories found in it."
)
@json_option
@click.pass_context
def ingest_command(
    ctx: click.Context,
    file: str,
    fmt: str,
    title: str | None,
    project: str | None,
    extract: bool,
    as_json: bool,
) -> None:
    """Store a whole transcript (OpenAI JSONL, Claude Code JSONL or Markdown chat) as an archived session."""
    from tiered_memory.app.sessions import ingest

    text, name = _read_text(file)
    session = ingest(
        open_memory(ctx), text, fmt=fmt, name=name, title=title, project=project, extract=extract
    )

    def out() -> str:
        if session.notice and not session.outcomes and not session.sha:
            return session.notice
        head = (
            session.notice
            or f'ingested "{session.title}" as {session.id} ({plural(session.message_count, "message")})'
        )
        return "\n".join([head, f"  {session.path}", *_outcome_lines(session.outcomes)])

    emit(session_dict(session), as_json, out)


def _load_for_extract(ctx: click.Context, source: str | None, session_id: str | None, fmt: str) -> Any:
    """(messages or text, name, session id) to extract from, redacted."""
    from tiered_memory.app.sessions import show
    from tiered_memory.errors import BadInput
    from tiered_memory.model import transcripts

    if session_id:
        if source:
            raise BadInput("give a FILE or --session, not both")
        session = show(open_memory(ctx), session_id)
        return session.messages, session.id, session.id
    text, name = _read_text(source)
    forced = transcripts.normalize_format(fmt)
    if forced is None and transcripts.detect(text) == "markdown":
        found = transcripts.markdown_messages(text.splitlines())
        return (found or text), name, None
    return transcripts.parse(text, forced, name).messages, name, None


@click.command("extract")
@click.argument("source", required=False, type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--session", "session_id", help="Extract from a stored session instead of a file.")
@format_option
@click.option("--project", help="Project id the memories belong to.")
@click.option("--dry-run", is_flag=True, help="Only show what would be stored (and merged or superseded).")
@json_option
@click.pass_context
def extract_command(
    ctx: click.Context,
    source: str | None,
    session_id: str | None,
    fmt: str,
    project: str | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Find memories in a compaction summary, a transcript or a session, and store them without duplicates."""
    from tiered_memory.app import dedup
    from tiered_memory.app.session_memories import new_notes
    from tiered_memory.app.session_store import Redactor
    from tiered_memory.model import extract
    from tiered_memory.model.transcripts import Message

    memory = open_memory(ctx)
    material, name, sid = _load_for_extract(ctx, source, session_id, fmt)
    redact = Redactor(memory)  # extraction may send text to an LLM endpoint: secrets go first
    if isinstance(material, str):
        material = redact(material)
    else:
        material = [Message(m.role, redact(m.content), m.timestamp) for m in material]
    redact.report(memory)
    found, extractor = extract.run(memory.vault.config.extract, material, sid, memory.warn)
    items = new_notes(found, extractor, sid, project, f"extract:{name}")
    if dry_run:
        rows: list[dict[str, Any]] = []
        for candidate, item in zip(found, items, strict=True):
            verdict = dedup.judge(memory, item)
            other = verdict.other.note if verdict.other else None
            rows.append(
                {
                    "category": candidate.category,
                    "confidence": candidate.confidence,
                    "text": candidate.text,
                    "cue": candidate.cue,
                    "would": verdict.action.replace("added", "add")
                    .replace("merged", "merge")
                    .replace("superseded", "supersede"),
                    "other": other.id if other else None,
                    "reason": verdict.other.reason if verdict.other else "",
                }
            )

        def preview() -> str:
            if not rows:
                return "no memories found"
            lines = []
            for row in rows:
                target = f" {row['other']}" if row["other"] else ""
                lines.append(f"[{row['category']} {row['confidence']:.2f}] {row['text']}")
                lines.append(f"    would {row['would']}{target}  ({row['cue']})")
            return "\n".join(lines)

        emit({"dry_run": True, "extractor": extractor, "candidates": rows}, as_json, preview)
        return
    outcomes, sha = dedup.remember_many(memory, items, f"extract: memories from {name}")
    data = {"extractor": extractor, "commit": sha, "memories": [outcome_dict(o) for o in outcomes]}
    emit(data, as_json, lambda: "\n".join(_outcome_lines(outcomes)) or "no memories found")


COMMANDS: list[click.Command] = [session_group, ingest_command, extract_command]
