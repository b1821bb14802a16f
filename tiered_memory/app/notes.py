"""The note operations every door offers: remember, show, list, edit, forget, search, reindex.

Each takes a request record from `app.api.notes` and returns its result record; the CLI, the
daemon's socket and the MCP server call these and nothing else, so a word means the same thing
whichever door it comes through (the same dedup, the same entity names, the same recall counts).
"""

from __future__ import annotations

from datetime import UTC, datetime

from tiered_memory.app import dedup, entities, filing, sealed
from tiered_memory.app.api.notes import (
    ForgetRequest,
    Forgotten,
    ListRequest,
    NoteList,
    NoteRef,
    NoteRequest,
    NoteSummary,
    NoteView,
    ReindexRequest,
    ReindexResult,
    RememberRequest,
    RememberResult,
    Saved,
)
from tiered_memory.app.memory import Memory
from tiered_memory.index.catalog import NoteRow
from tiered_memory.model import layout
from tiered_memory.model import note as notes
from tiered_memory.model.search import SearchRequest, SearchResult


def note_view(note: notes.Note, text: str = "") -> NoteView:
    return NoteView(
        id=note.id,
        title=note.title,
        path=note.path,
        tier=note.tier,
        category=note.category,
        status=note.status,
        tags=note.tags,
        project=note.project,
        entities=note.entities,
        importance=note.importance,
        confidence=note.confidence,
        created=note.created,
        updated=note.updated,
        frontmatter=dict(note.meta),
        body=note.body,
        warning=note.parse_warning,
        text=text,
    )


def note_ref(note: notes.Note) -> NoteRef:
    return NoteRef(note.id, note.title, note.path)


def summary(row: NoteRow) -> NoteSummary:
    return NoteSummary(
        id=row.id,
        title=row.title,
        path=row.path,
        tier=row.tier,
        category=row.category,
        status=row.status,
        tags=row.tags,
        project=row.project,
        entities=row.entities,
        importance=row.importance,
        confidence=row.confidence,
        updated=iso(row.updated),
    )


def iso(ts: float | None) -> str:
    if not ts:
        return ""
    return datetime.fromtimestamp(ts, UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


# ---- remember ----------------------------------------------------------------------------------


def remember(memory: Memory, request: RememberRequest) -> RememberResult:
    new = filing.NewNote(
        text=request.text,
        title=request.title,
        tier=request.tier,
        category=request.category,
        tags=list(request.tags),
        project=request.project,
        entities=entities.canonical_names(memory, request.entities),
        importance=request.importance,
        confidence=request.confidence,
        source=request.source,
        session=request.session,
    )
    if not request.dedup:
        note = filing.add(memory, new)
        return RememberResult("added", f"remembered {note.id}", note_view(note), commit=_head(memory))
    outcome = dedup.remember(memory, new)
    note = memory.vault.read_note(outcome.note.path)
    return RememberResult(
        action=outcome.action,
        message=outcome.message,
        note=note_view(note),
        other=note_ref(outcome.other) if outcome.other is not None else None,
        superseded=[note_ref(n) for n in outcome.superseded],
        commit=outcome.commit,
    )


def _head(memory: Memory) -> str | None:
    return memory.vault.git.rev("HEAD")


# ---- reading -----------------------------------------------------------------------------------


def show(memory: Memory, request: NoteRequest) -> NoteView:
    rel = sealed.resolve(memory, request.ref)
    note = memory.vault.read_note(rel)
    return note_view(note, memory.vault.read_text(rel))


def list_notes(memory: Memory, request: ListRequest) -> NoteList:
    rows = memory.list_notes(
        tiers=request.tiers,
        categories=request.categories,
        tags=request.tags,
        projects=request.projects,
        entities=entities.expand_names(memory.vault.root, request.entities),
        statuses=request.statuses,
        since=request.since,
        until=request.until,
    )
    if request.limit is not None:
        rows = rows[: request.limit]
    return NoteList([summary(r) for r in rows])


def search(memory: Memory, request: SearchRequest) -> SearchResult:
    """Ranked notes; an entity filter matches every name of that entity; each hit returned is
    counted as a recall."""
    if request.entities:
        request.entities = entities.expand_names(memory.vault.root, request.entities)
    return sealed.add_hits(memory, request, memory.search(request))  # encrypted: in memory only


# ---- changing ----------------------------------------------------------------------------------


def forget(memory: Memory, request: ForgetRequest) -> Forgotten:
    rel = memory.resolve(request.ref)
    note = memory.vault.read_note(rel)
    why = f" ({request.reason})" if request.reason else ""
    with memory.change(f"forget: {note.title} [{layout.tier_dir(note.tier or '')}]{why}") as tx:
        tx.remove_all([rel], reason=f"forgetting {note.title}")
    return Forgotten(note.id, note.title, rel, tx.sha)


def save_edit(memory: Memory, request: NoteRequest) -> Saved:
    """Reindex and commit a note a person just edited."""
    ref = request.ref.strip()
    # A path is taken as it is: the person may have deleted the file in the editor.
    rel = (
        memory.vault.safe_rel(ref)
        if "/" in ref or ref.endswith(layout.NOTE_SUFFIXES)
        else memory.resolve(ref)
    )
    exists = memory.vault.abspath(rel).exists()
    title = memory.vault.read_note(rel).title if exists else rel
    with memory.change(f"edit: {title}") as tx:
        tx.include([rel])
    return Saved(rel, title, tx.sha)


# ---- the indexes -------------------------------------------------------------------------------


def reindex(memory: Memory, request: ReindexRequest) -> ReindexResult:
    if request.full:
        memory.indexer.wipe()
        memory.reopen()
    report = memory.refresh(vectors=not request.keyword_only, progress=memory.progress)
    compacted = memory.indexer.compact_fulltext()  # purge notes that edits left behind, if many
    return ReindexResult(
        added=report.added,
        changed=report.changed,
        deleted=report.deleted,
        unchanged=report.unchanged,
        embedded=report.embedded,
        vectors=report.vectors,
        rebuilt=list(report.rebuilt),
        warnings=list(report.warnings),
        compacted=compacted,
    )
