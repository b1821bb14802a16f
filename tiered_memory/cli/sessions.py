"""`tmem session start|append|end|show|list`, `tmem ingest`, `tmem extract` and `tmem recall --recent`.

Each parses its input, runs one operation through the backend and renders the result with `present`.
"""

from __future__ import annotations

__all__ = [
    "extract_command",
    "format_option",
    "ingest_command",
    "session_append",
    "session_end",
    "session_group",
    "session_list",
    "session_show",
    "session_start",
]


import click

from tiered_memory.app.api.session_list import SESSION_LIST, SessionListRequest
from tiered_memory.app.api.sessions import (
    EXTRACT,
    FORMATS,
    INGEST,
    ROLES,
    SESSION_APPEND,
    SESSION_END,
    SESSION_SHOW,
    SESSION_START,
    AppendRequest,
    EndRequest,
    ExtractRequest,
    IngestRequest,
    SessionRequest,
    StartRequest,
)
from tiered_memory.cli.input_text import open_transcript, read_input
from tiered_memory.cli.options import backend, emit, json_option, note_size_setting, warn
from tiered_memory.errors import BadInput
from tiered_memory.model import authors
from tiered_memory.present import sessions as show_sessions

format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(list(FORMATS)),
    default="auto",
    show_default=True,
    help="Transcript format (auto detects it): OpenAI-style JSON Lines, Claude Code JSONL, Codex rollout, opencode export, Markdown chat.",
)


def _read_text(ctx: click.Context, source: str | None) -> tuple[str, str]:
    """(text, name) from a file or '-' (stdin); binary, non-UTF-8 and oversized input is refused
    in one line."""
    return read_input(source, note_size_setting(ctx))


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
    session = backend(ctx).run(SESSION_START, StartRequest(" ".join(title) or None, project))
    emit(show_sessions.session_dict(session), as_json, show_sessions.started_text(session))


@session_group.command("append")
@click.argument("text", nargs=-1)
@click.option(
    "--role",
    type=click.Choice(list(ROLES)),
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
    if file_:
        body = _read_text(ctx, file_)[0]
    elif text and text != ("-",):
        body = " ".join(text)
    else:
        body = _read_text(ctx, "-" if text == ("-",) else None)[0]
    session = backend(ctx).run(SESSION_APPEND, AppendRequest(body, role, session_id))
    emit(show_sessions.session_dict(session), as_json, show_sessions.appended_text(session, role))


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
    session = backend(ctx).run(SESSION_END, EndRequest(session_id, summary, extract))
    emit(show_sessions.session_dict(session), as_json, lambda: show_sessions.ended_text(session))


@session_group.command("show")
@click.argument("session_id")
@click.option("--grep", help="Only the messages containing all these words.")
@json_option
@click.pass_context
def session_show(ctx: click.Context, session_id: str, grep: str | None, as_json: bool) -> None:
    """One session in detail: summary and messages."""
    session = backend(ctx).run(SESSION_SHOW, SessionRequest(session_id, grep))
    emit(
        show_sessions.session_dict(session, messages=True),
        as_json,
        lambda: show_sessions.session_text(session, grep),
    )


@session_group.command("list")
@click.option("--limit", type=int, default=20, show_default=True, help="At most this many sessions.")
@json_option
@click.pass_context
def session_list(ctx: click.Context, limit: int, as_json: bool) -> None:
    """Sessions, newest first, live ones included."""
    found = backend(ctx).run(SESSION_LIST, SessionListRequest(limit))
    emit(show_sessions.session_list_json(found), as_json, lambda: show_sessions.session_list_text(found))


# ---- tmem ingest / tmem extract ---------------------------------------------------------------


@click.command("ingest")
@click.argument("file", type=click.Path(allow_dash=True))
@format_option
@click.option("--title", help="Session title (default: the transcript's own, else its first user message).")
@click.option("--project", help="Project id the session and its memories belong to.")
@click.option(
    "--extract/--no-extract", default=True, show_default=True, help="Store the memories found in it."
)
@click.option("--agent", help="The agent whose session it is: its commit ends with `Agent: NAME`.")
@json_option
@click.pass_context
def ingest_command(
    ctx: click.Context,
    file: str,
    fmt: str,
    title: str | None,
    project: str | None,
    extract: bool,
    agent: str | None,
    as_json: bool,
) -> None:
    """Store a whole transcript as an archived session (and extract its memories).

    FILE is OpenAI-style JSONL, a Claude Code session, a Codex rollout, what `opencode export`
    prints, or a Markdown chat log (- reads stdin); or an opencode session itself, by its id
    (ses_…) or its folder of messages in opencode's storage."""
    if agent is not None and (why := authors.problem(agent)) is not None:
        raise BadInput(f"--agent: not an agent's name ({why})")
    with open_transcript(file, fmt, note_size_setting(ctx), _left_out) as given:
        request = IngestRequest(
            given.text,
            fmt=given.format or fmt,
            name=given.name,
            title=title,
            project=project,
            extract=extract,
            lines=given.lines,
        )
        tmem = backend(ctx)
        tmem.agent = agent.strip() if agent else None
        session = tmem.run(INGEST, request)
    emit(show_sessions.session_dict(session), as_json, lambda: show_sessions.ingested_text(session))


def _left_out(name: str, why: str) -> None:
    warn(show_sessions.left_out_text(name, why))


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
    if session_id and source:
        raise BadInput("give a FILE or --session, not both")
    if session_id:
        result = backend(ctx).run(
            EXTRACT, ExtractRequest(session=session_id, project=project, dry_run=dry_run)
        )
    else:
        with open_transcript(source, fmt, note_size_setting(ctx)) as given:
            request = ExtractRequest(
                text=given.text,
                fmt=given.format or fmt,
                name=given.name,
                project=project,
                dry_run=dry_run,
                lines=given.lines,
            )
            result = backend(ctx).run(EXTRACT, request)
    emit(show_sessions.extract_dict(result), as_json, lambda: show_sessions.extract_text(result))
