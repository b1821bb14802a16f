"""Session operations: start, append, end, show, list, ingest. `sessions.py` is the public face.

Every operation is one git commit and every write is atomic. Text is redacted before it reaches
a file. Ending a session or ingesting a transcript extracts memories (extract.py) and files them
through dedup.py, in the same commit as the session itself.
"""

from __future__ import annotations

__all__ = [
    "MAX_TITLE",
    "RECENT_IN_CURRENT",
    "Redactor",
    "append",
    "append_many",
    "current",
    "end",
    "ingest",
    "list_sessions",
    "recent",
    "show",
    "start",
]

import hashlib
import re
import secrets
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from tiered_memory.app import input_size, session_memories
from tiered_memory.app.filing import safe_name
from tiered_memory.errors import BadInput, NoteNotFound
from tiered_memory.model import layout, transcripts
from tiered_memory.model import note as notes
from tiered_memory.model import session_format as sn
from tiered_memory.model.agent_setup import project_slug
from tiered_memory.model.redact import redact
from tiered_memory.model.search import Filters
from tiered_memory.model.session_format import Session
from tiered_memory.model.transcripts import Message
from tiered_memory.storage.transaction import Transaction

if TYPE_CHECKING:
    from tiered_memory.app.memory import Memory
    from tiered_memory.storage.vault import Vault

MAX_TITLE = 80
RECENT_IN_CURRENT = 4


class Redactor:
    """Redacts quietly and counts, so a long transcript gives one warning instead of hundreds."""

    def __init__(self, memory: Memory) -> None:
        self.privacy = memory.config.privacy
        self.kinds: dict[str, int] = {}

    def __call__(self, text: str) -> str:
        if not self.privacy.redact or not text:
            return text
        cleaned, found = redact(text, self.privacy.sensitive_keywords)
        for match in found:
            self.kinds[match.kind] = self.kinds.get(match.kind, 0) + 1
        return cleaned

    def report(self, memory: Memory) -> None:
        if self.kinds:
            kinds = ", ".join(sorted(self.kinds))
            memory.warn(f"redacted {sum(self.kinds.values())} secret(s) before writing: {kinds}")


def _title(text: str | None, fallback: str) -> str:
    line = sn.first_sentence(text or "", MAX_TITLE) if text else ""
    return sn.cut_words(line or fallback, MAX_TITLE) or fallback


def _project(value: str | None) -> str | None:
    if value is None or not value.strip():
        return None
    return safe_name(value, "project")


def _cwd_project(memory: Memory, cwd: str | None) -> str | None:
    """The vault's project named like the transcript's working folder, if there is one."""
    name = transcripts.project_of(cwd)
    slug = project_slug(name) if name else None
    if slug and memory.abspath(f"{layout.PROJECTS}/{slug}").is_dir():
        return slug
    return None


# ---- finding sessions -----------------------------------------------------------------------------


def _find(memory: Memory, session_id: str, tx: Transaction | None = None) -> notes.Note:
    """The session with that id; read through `tx` when the caller is about to change it."""
    session_id = session_id.strip()
    if not session_id:
        raise BadInput("empty session id")
    memory.refresh()
    rows = [r for r in memory.by_id(session_id) if sn.is_session_path(r.path)]
    if not rows:
        raise NoteNotFound(f"no session with id '{session_id}' (tmem session list shows them)")
    return (tx or memory.vault).read_note(rows[0].path)


def _current_note(source: Vault | Transaction) -> notes.Note | None:
    if not source.exists(sn.CURRENT):
        return None
    current = source.read_note(sn.CURRENT)
    return None if current.parse_warning else current


def current(memory: Memory, tx: Transaction | None = None) -> Session | None:
    """The live session current_session.md points at, if it is still live; read through `tx` when
    the caller is about to change it."""
    source = tx or memory.vault
    pointer = _current_note(source)
    live_id = str(pointer.meta.get("session") or "") if pointer else ""
    if not live_id:
        return None
    path = f"{sn.LIVE_DIR}/{live_id}.md"
    if not memory.abspath(path).is_file():
        try:
            note = _find(memory, live_id)
        except NoteNotFound:
            return None
        path = note.path
    session = sn.from_note(source.read_note(path))
    return session if session.live else None


def _write_current(memory: Memory, tx: Transaction, live: Session | None, last: Session | None = None) -> str:
    """Point current_session.md at `live` (or at nothing); returns its path for the commit."""
    pointer = _current_note(tx)
    if pointer is None and memory.abspath(sn.CURRENT).exists():
        # A hand-edited file whose frontmatter no longer parses: never overwrite a person's text.
        memory.warn(f"{sn.CURRENT} has unreadable frontmatter; not updating it (fix it by hand)")
        return sn.CURRENT
    if pointer is None:
        pointer = notes.Note(
            path=sn.CURRENT,
            meta={
                "id": "current-session",
                "title": "Current session",
                "category": "session",
                "status": "active",
            },
            body="# Current session\n",
            has_frontmatter=True,
        )
    recent = live.messages[-RECENT_IN_CURRENT:] if live else []
    body = sn.set_block(pointer.body, sn.current_block(live, last, recent))
    updated = pointer.with_meta(session=live.id if live else None, updated=memory.now())
    tx.write_note(notes.Note(sn.CURRENT, updated.meta, body, True))
    return sn.CURRENT


# ---- live sessions --------------------------------------------------------------------------------


def _new_live(
    memory: Memory, tx: Transaction, title: str | None, project: str | None
) -> tuple[notes.Note, Session]:
    now = memory.now()
    sid = f"ses-{now:%Y%m%d}-{secrets.token_hex(3)}"
    clean = _title(Redactor(memory)(title or ""), f"Session {now:%Y-%m-%d %H:%M}")
    meta: dict[str, Any] = {
        "id": sid,
        "title": clean,
        "category": "session",
        "status": "active",
        "session": sid,
    }
    if project:
        meta["project"] = project
    meta.update(created=now, updated=now, started=now, messages=0, source="tmem session")
    note = notes.Note(f"{sn.LIVE_DIR}/{sid}.md", meta, sn.new_body(clean), True)
    tx.create_note(note)
    return note, sn.from_note(note)


def start(memory: Memory, title: str | None = None, project: str | None = None) -> Session:
    with memory.change("session: start") as tx:
        _note, session = _new_live(memory, tx, title, _project(project))
        _write_current(memory, tx, session)
        tx.message = f'session: start "{session.title}"'
    session.sha = tx.sha
    return session


def append(memory: Memory, text: str, role: str = "user", session_id: str | None = None) -> Session:
    return append_many(memory, [Message(role, text)], session_id)


def append_many(memory: Memory, messages: Sequence[Message], session_id: str | None = None) -> Session:
    """Append messages (redacted, stamped with the clock when they carry no time) in one commit.

    With no session id the current live session is used, and one is started when there is none.
    """
    input_size.check(memory, (m.content for m in messages), "the message")
    redactor = Redactor(memory)
    clean: list[Message] = []
    for message in messages:
        role = message.role.strip().lower()
        if role not in transcripts.ROLES:
            raise BadInput(f"unknown role '{message.role}' (one of: {', '.join(transcripts.ROLES)})")
        text = redactor(message.content).strip()
        if text:
            clean.append(Message(role, text, message.timestamp or memory.now()))
    if not clean:
        raise BadInput("nothing to append: the message is empty")
    redactor.report(memory)
    with memory.change("session: append") as tx:
        started = ""
        if session_id:
            note = _find(memory, session_id, tx)
            if note.tier != "short" or note.status != "active":
                raise BadInput(f"session '{session_id}' has ended; start a new one")
        else:
            live = current(memory, tx)
            if live is None:
                note, _ = _new_live(memory, tx, clean[0].content, None)
                started = " (new session)"
            else:
                note = tx.read_note(live.path)
        if note.parse_warning:
            raise BadInput(f"{note.path}: {note.parse_warning}; fix it by hand first")
        body = sn.append_messages(note.body, clean)
        try:
            count = int(note.meta.get("messages") or 0)
        except (TypeError, ValueError):
            count = len(sn.parse_messages(note.body))
        updated = notes.Note(note.path, note.meta, body, True).with_meta(
            messages=count + len(clean), updated=memory.now()
        )
        tx.write_note(updated)
        session = sn.from_note(updated)
        _write_current(memory, tx, session)
        roles = ", ".join(dict.fromkeys(m.role for m in clean))
        what = sn.plural(len(clean), "message") if len(clean) > 1 else roles
        tx.message = f'session: append to "{session.title}" ({what}){started}'
    session.sha = tx.sha
    return session


# ---- ending, extraction ---------------------------------------------------------------------------


def _archive_path(memory: Memory, sid: str, started: datetime | None) -> str:
    day = started or memory.now()
    return f"{sn.ARCHIVE_DIR}/{day:%Y/%m/%d}/{sid}.md"


def end(
    memory: Memory, session_id: str | None = None, summary: str | None = None, *, extract: bool = True
) -> Session:
    """Summarise a live session, archive it under archive/sessions/YYYY/MM/DD/, extract its memories."""
    with memory.change("session: end") as tx:
        if session_id:
            note = _find(memory, session_id, tx)
        else:
            live = current(memory, tx)
            if live is None:
                raise NoteNotFound("no live session to end (tmem session list shows them)")
            note = tx.read_note(live.path)
        if note.tier != "short" or note.status != "active":
            raise BadInput(f"session '{note.id}' has already ended ({note.path})")
        if note.parse_warning:
            raise BadInput(f"{note.path}: {note.parse_warning}; fix it by hand first")
        session = sn.from_note(note)
        found = session_memories.plan(memory, session.messages, session.id, extract)
        now = memory.now()
        redactor = Redactor(memory)
        text = sn.build_summary(
            session.messages, session.started, now, found.highlights(), redactor(summary or "")
        )
        redactor.report(memory)
        body = sn.with_summary(note.body, text)
        meta = notes.Note(note.path, note.meta, body, True).with_meta(
            status="completed", ended=now, updated=now, messages=len(session.messages)
        )
        target = _archive_path(memory, session.id, session.started)
        archived = notes.Note(target, meta.meta, body, True)
        tx.create_note(archived)
        tx.remove(note.path)
        done = sn.from_note(archived)
        pointer_session = current(memory, tx)
        _write_current(memory, tx, pointer_session, done)
        outcomes = session_memories.store(memory, tx, found, session.id, session.project or None)
        tx.message = f'session: end "{done.title}" ({sn.plural(len(done.messages), "message")}; {session_memories.describe(outcomes)})'
        done.outcomes = outcomes
    done.sha = tx.sha
    return done


# ---- reading --------------------------------------------------------------------------------------


def show(memory: Memory, session_id: str) -> Session:
    note = _find(memory, session_id)
    if note.parse_warning:
        raise BadInput(f"{note.path}: {note.parse_warning}")
    return sn.from_note(note)


def list_sessions(memory: Memory, limit: int = 20) -> list[Session]:
    """Sessions, newest first (by start), live ones included; messages are not loaded."""
    if limit < 1:
        raise BadInput("limit must be at least 1")
    rows = [r for r in memory.list_notes(Filters(categories=["session"])) if sn.is_session_path(r.path)]
    # Started in the same second (scripts, hooks): the one written last is the more recent.
    rows.sort(key=lambda r: (-r.created, -r.mtime, r.path))
    out: list[Session] = []
    for row in rows[:limit]:
        note = memory.read_note(row.path)
        if not note.parse_warning:
            out.append(sn.from_note(note, with_messages=False))
    return out


def recent(memory: Memory, n: int = 5) -> list[Session]:
    """The n most recent sessions with their summaries (for "what did we talk about?")."""
    return list_sessions(memory, n)


# ---- ingest ---------------------------------------------------------------------------------------


def _ingest_id(key: str, day: datetime | None) -> str:
    """The id of the session `key` names; the day is part of it only when the transcript says
    when it happened, never the ingest date."""
    hashed = hashlib.blake2b(key.encode(), digest_size=4).hexdigest()
    return f"ses-{day:%Y%m%d}-{hashed[:6]}" if day else f"ses-{hashed}"


def _opening(messages: list[Message]) -> str:
    """What names a transcript that carries no session id of its own (an old Codex log, a Kimi
    session file, a chat export, a Markdown log): how it opens, up to the person's first words
    with their times. A transcript keeps its opening as it grows, so each copy of it finds the
    one session."""
    first_user = next((n for n, m in enumerate(messages) if m.role == "user"), 0)
    return "\x1e".join(
        f"{m.role}\x1f{m.timestamp.isoformat() if m.timestamp else ''}\x1f{m.content}"
        for m in messages[: first_user + 1]
    )


def _same_transcript(stored: list[Message], messages: list[Message]) -> bool:
    """Whether `stored` and `messages` are copies of one transcript: the one begins the other."""
    shorter = min(len(stored), len(messages))
    return all(
        (a.role, a.content) == (b.role, b.content)
        for a, b in zip(stored[:shorter], messages[:shorter], strict=True)
    )


def _stored(memory: Memory, tx: Transaction, sid: str) -> tuple[notes.Note | None, list[Message]]:
    try:
        existing = _find(memory, sid, tx)
    except NoteNotFound:
        return None, []
    return existing, sn.parse_messages(existing.body)


def _session_of(
    memory: Memory, tx: Transaction, transcript: transcripts.Transcript, messages: list[Message], digest: str
) -> tuple[str, notes.Note | None, list[Message]]:
    """(id, stored note if any, its messages) of the session a transcript is stored as. Its own
    session id names it; else its opening does, unless the session of that opening is another
    transcript that opens the same way: then, as before openings counted, its whole content. A
    session an earlier tmem stored under the hash of an earlier copy's whole content is found by
    its messages (`_earlier_copy_named`), so the grown transcript updates it whatever its name."""
    stamps = [m.timestamp for m in messages if m.timestamp]
    day = min(stamps) if stamps else None
    if transcript.origin:
        sid = _ingest_id(transcript.origin, day)
        return (sid, *_stored(memory, tx, sid))
    by_opening = _ingest_id(_opening(messages), day)
    existing, stored = _stored(memory, tx, by_opening)
    if existing is not None and _same_transcript(stored, messages):
        return by_opening, existing, stored
    by_content = _ingest_id(digest, day)
    found, held = _stored(memory, tx, by_content)
    if found is not None:
        return by_content, found, held
    earlier = _earlier_copy_named(memory, tx, messages, day, by_opening)
    if earlier is not None:
        return earlier
    return (by_content if existing is not None else by_opening), None, []


def _earlier_copy_named(
    memory: Memory, tx: Transaction, messages: list[Message], day: datetime | None, skip: str
) -> tuple[str, notes.Note, list[Message]] | None:
    """The session an earlier tmem stored a copy of this transcript as, under the name a hash of
    that copy's whole content gave it (which the grown transcript no longer has), if there is one:
    a session of a transcript with no origin, named as that hash names sessions (`ses-DAY-xxxxxx`
    of the transcript's first day, or `ses-xxxxxxxx` when it says no time), whose messages begin
    this one or are begun by it. The one holding the most messages, should there be several."""
    shape = re.compile(rf"ses-{day:%Y%m%d}-[0-9a-f]{{6}}" if day else r"ses-[0-9a-f]{8}")
    # Its first line is in the note as written, a backslash before it or not (`escape_line`).
    opening = messages[0].content.strip().splitlines()[0] if messages else ""
    best: tuple[str, notes.Note, list[Message]] | None = None
    for row in memory.rows().values():
        if row.id == skip or not shape.fullmatch(row.id) or not sn.is_session_path(row.path):
            continue
        note = tx.read_note(row.path)
        source = str(note.meta.get("source") or "")
        if note.parse_warning or note.meta.get("origin") or not source.startswith("transcript:"):
            continue
        if opening not in note.body:  # not read as messages unless it could hold them
            continue
        stored = sn.parse_messages(note.body)
        if stored and _same_transcript(stored, messages) and (best is None or len(stored) > len(best[2])):
            best = (row.id, note, stored)
    return best


class _Digest:
    """The transcript's hash, of its UTF-8 encoding: its text taken a megabyte at a time (not a
    second copy of a transcript of up to a hundred megabytes), or its lines as the parser reads
    them (the same hash as of the text they make)."""

    def __init__(self) -> None:
        self.hashed = hashlib.blake2b(digest_size=16)

    def text(self, text: str) -> str:
        step = 1 << 20
        for at in range(0, len(text), step):
            self.hashed.update(text[at : at + step].encode("utf-8"))
        return self.hashed.hexdigest()

    def lines(self, lines: Iterable[str]) -> Iterator[str]:
        for line in lines:
            self.hashed.update(line.encode("utf-8"))
            yield line


def _same_messages(stored: list[Message], messages: list[Message]) -> bool:
    """Whether `messages` are the `stored` ones, no more and no fewer."""
    return len(stored) == len(messages) and all(
        (a.role, a.content) == (b.role, b.content) for a, b in zip(stored, messages, strict=True)
    )


def _earlier_copy(stored: list[Message], messages: list[Message]) -> bool:
    """Whether `messages` are the first of the `stored` ones: an earlier copy of the transcript."""
    if len(messages) >= len(stored):
        return False
    return all((a.role, a.content) == (b.role, b.content) for a, b in zip(stored, messages, strict=False))


def ingest(
    memory: Memory,
    text: transcripts.Source,
    *,
    fmt: str | None = None,
    name: str = "input",
    title: str | None = None,
    project: str | None = None,
    extract: bool = True,
) -> Session:
    """Store a whole transcript (its text, or its JSON Lines a line at a time) as an archived
    session (one commit), extracting its memories.

    Ingesting the same transcript again changes nothing; a transcript that grew since (same
    origin session id) updates the stored session and extracts from the new messages only.
    """
    # Measured as the session note writes them (a heading each), each as it is parsed: a million
    # one-letter messages are no more than a megabyte of text, but twenty of note, and a hundred
    # times that as the records and messages they would be once all parsed; refused at the first
    # message past the limit, before any is redacted.
    meter = input_size.Meter(memory, f"{name}: the messages")

    def measure(message: Message) -> None:
        # One message over the limit on its own is refused before its block is made of its lines.
        meter.add(message.content if len(message.content) > meter.most else sn.message_block(message))

    hashing = _Digest()
    transcript = transcripts.parse(text if isinstance(text, str) else hashing.lines(text), fmt, name, measure)
    digest = hashing.text(text) if isinstance(text, str) else hashing.hashed.hexdigest()
    for warning in transcript.warnings:
        memory.warn(warning)
    project = _project(project) or _cwd_project(memory, transcript.cwd)
    redactor = Redactor(memory)
    messages = [Message(m.role, redactor(m.content), m.timestamp) for m in transcript.messages]
    stamps = [m.timestamp for m in messages if m.timestamp]
    started = min(stamps) if stamps else memory.now()
    ended = max(stamps) if stamps else memory.now()
    with memory.change("ingest") as tx:
        sid, existing, stored = _session_of(memory, tx, transcript, messages, digest)
        if existing is not None and (
            existing.meta.get("transcript_sha") == digest or _same_messages(stored, messages)
        ):
            # The same messages from another text of the transcript (read as an earlier tmem read
            # it, whole, or with parts the session never keeps changed): nothing to store either.
            session = sn.from_note(existing, with_messages=False)
            session.notice = f"already ingested as session {sid} ({existing.path}); nothing changed"
            return session
        known = len(stored)
        if existing is not None and _earlier_copy(stored, messages):
            # A hook's older snapshot of the transcript (pre-compact's, racing session-end's or
            # arriving late) must not take back the messages a later one stored.
            session = sn.from_note(existing, with_messages=False)
            session.notice = (
                f"session {sid} ({existing.path}) already holds these {sn.plural(len(messages), 'message')} "
                f"and {known - len(messages)} more; nothing changed"
            )
            return session
        clean_title = _title(redactor(title or transcript.title or ""), "") or _title(
            next((m.content for m in messages if m.role == "user"), ""),
            f"Transcript {started:%Y-%m-%d %H:%M}",
        )
        redactor.report(memory)
        fresh = messages[known:] if existing is not None and known <= len(messages) else messages
        found = session_memories.plan(memory, fresh, sid, extract)
        meta: dict[str, Any] = dict(existing.meta) if existing is not None else {}
        meta.update(id=sid, title=clean_title, category="session", status="completed", session=sid)
        if project:
            meta["project"] = project
        source = f"transcript:{transcript.format}"
        meta.update(created=started, updated=ended, started=started, ended=ended, messages=len(messages))
        meta.update(source=source, transcript=PurePosixPath(name).name, transcript_sha=digest)
        if transcript.origin:
            meta["origin"] = transcript.origin
        if transcript.cwd:
            meta["cwd"] = redactor(transcript.cwd)
        summary = sn.build_summary(messages, started, ended, found.highlights())
        body = sn.with_summary(sn.append_messages(sn.new_body(clean_title), messages), summary)
        path = existing.path if existing is not None else _archive_path(memory, sid, started)
        note = notes.Note(path, meta, body, True)
        limit = memory.config.index.max_file_mb
        if len(notes.render(note).encode("utf-8")) > limit * 1024 * 1024:
            raise BadInput(f"{name}: the session would be larger than index.max_file_mb ({limit} MB)")
        if existing is not None:
            tx.write_note(note)
        else:
            tx.create_note(note)
        outcomes = session_memories.store(memory, tx, found, sid, project)
        verb = "update" if existing is not None else "ingest"
        tx.message = f'{verb}: session "{clean_title}" ({sn.plural(len(messages), "message")}; {session_memories.describe(outcomes)})'
        session = sn.from_note(note)
        session.outcomes = outcomes
        if existing is not None:
            session.notice = f"updated session {sid}: {sn.plural(len(messages) - known, 'new message')}"
    session.sha = tx.sha
    return session
