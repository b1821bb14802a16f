"""The note operations every door offers: remember, show, read, update, related, list, edit, forget,
reindex (search is `app.recall`).

Each takes a request record from `app.api.notes` and returns its result record; the CLI, the
daemon's socket and the MCP server call these and nothing else, so a word means the same thing
whichever door it comes through (the same dedup, the same entity names, the same recall counts).
"""

from __future__ import annotations

__all__ = [
    "commit_hand_edit",
    "forget",
    "list_notes",
    "note_ref",
    "note_view",
    "read",
    "reindex",
    "related",
    "remember",
    "save_edit",
    "show",
    "stamp_hand_edits",
    "summary",
    "update",
]

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from tiered_memory.app import dedup, entities, filing, profiles, sealed, sections
from tiered_memory.app.api.notes import (
    ForgetRequest,
    Forgotten,
    ListRequest,
    NoteList,
    NoteRef,
    NoteRequest,
    NoteText,
    NoteView,
    ReadRequest,
    ReindexRequest,
    ReindexResult,
    RelatedNote,
    RelatedRequest,
    RelatedResult,
    RememberRequest,
    RememberResult,
    Saved,
    Updated,
    UpdateRequest,
)
from tiered_memory.app.memory import Memory
from tiered_memory.app.summaries import summary
from tiered_memory.errors import BadInput, TmemError
from tiered_memory.index.attachments import CATEGORY as ATTACHMENT
from tiered_memory.model import dates, layout, note_fields, note_stats
from tiered_memory.model import note as notes
from tiered_memory.model.folders import MARKDOWN_SUFFIXES
from tiered_memory.model.frontmatter import edit_frontmatter
from tiered_memory.model.search import SearchRequest
from tiered_memory.storage import access, locks
from tiered_memory.storage.transaction import Transaction


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


# ---- remember ----------------------------------------------------------------------------------


def remember(memory: Memory, request: RememberRequest) -> RememberResult:
    canonical = entities.canonical_names(memory, request.entities)
    new = filing.NewNote(**{**vars(request), "tags": list(request.tags), "entities": canonical})
    if not request.dedup:
        note = filing.add(memory, new)
        return RememberResult("added", f"remembered {note.id}", _filed(memory, note), commit=_head(memory))
    outcome = dedup.remember(memory, new)
    note = memory.read_note(outcome.note.path)
    return RememberResult(
        action=outcome.action,
        message=outcome.message,
        note=_filed(memory, note),
        other=note_ref(outcome.other) if outcome.other is not None else None,
        superseded=[note_ref(n) for n in outcome.superseded],
        commit=outcome.commit,
    )


def _filed(memory: Memory, note: notes.Note) -> NoteView:
    """A note just filed; outside the tier folders its tier is its folder's (the `folders:` rules)."""
    view = note_view(note)
    view.tier = view.tier or memory.tier_of(note.path)
    return view


def _head(memory: Memory) -> str | None:
    return memory.vault.git.rev("HEAD")


# ---- reading -----------------------------------------------------------------------------------


def show(memory: Memory, request: NoteRequest) -> NoteView:
    rel = sealed.resolve(memory, request.ref)
    note = memory.read_note(rel)
    view = note_view(note, memory.read_text(rel))
    # What the index knows beyond the file alone: the tier its folder maps to, the body's #tags,
    # the honest dates (model.note_dates), a hand-written note's confidence from the side file.
    row = memory.row(rel)
    if row is not None and not row.skipped:  # a row in no index (a template's) knows nothing more
        view.tier, view.tags, view.confidence = row.tier or view.tier, list(row.tags), row.confidence
        view.created = dates.from_epoch(row.created) if row.created else view.created
        view.updated = dates.from_epoch(row.updated) if row.updated else view.updated
    if not filing.filed_by_tmem(memory.vault, note):
        view.confidence = note_stats.confidence(access.stats(memory.root).get(note.id), view.confidence)
    view.fields, view.aliases = note.inline_fields, note.aliases
    return view


def list_notes(memory: Memory, request: ListRequest) -> NoteList:
    rows = memory.list_notes(
        replace(
            request,
            entities=profiles.expand_names(memory.vault, request.entities),
            folders=request.folders or list(memory.config.search.folders),
        )
    )
    # JSON state (tasks, the context stack) has its own commands (`task list`, `st list`); a
    # listing of notes shows notes. Search still finds it.
    rows = [r for r in rows if not notes.is_state_file(r.path)]
    if request.limit is not None:
        rows = rows[: request.limit]
    return NoteList([summary(r) for r in rows])


def read(memory: Memory, request: ReadRequest) -> NoteText:
    """A note's frontmatter and its body, whole or lines `start`..`end` of it."""
    rel = sealed.resolve(memory, request.id)
    note = memory.read_note(rel)
    lines = note.body.splitlines()
    total = len(lines)
    start = max(1, request.start or 1)
    end = min(total, request.end if request.end is not None else total)
    if request.start is not None and start > max(total, 1):
        raise BadInput(f"{rel} has {total} line(s) in its body; start {start} is past the end")
    if end < start - 1:
        raise BadInput(f"end ({request.end}) is before start ({start})")
    whole = request.start is None and request.end is None
    body = note.body if whole else "\n".join(lines[start - 1 : end])
    return NoteText(
        id=note.id,
        title=note.title,
        path=rel,
        tier=note.tier,
        category=note.category,
        status=note.status,
        frontmatter=dict(note.meta),
        body=body,
        start=start if total else 0,
        end=end,
        lines=total,
        updated=note.updated,
    )


def update(memory: Memory, request: UpdateRequest) -> Updated:
    """Replace or extend a note's body and set frontmatter fields, in one commit.

    Known fields are checked first (model.note_fields: one line naming the key and what it takes,
    nothing written). A change a person made to the note that is not committed yet (an editor
    with no daemon running) is committed first, in a commit of its own: the update's commit holds
    the update alone, and the hand edit is not passed off as part of it."""
    if request.body is not None and request.append is not None:
        raise BadInput("give either body (replace) or append, not both")
    partial = sections.asked(request)  # a section edit or find/replace, its parts checked
    if request.body is None and request.append is None and not request.fields and not partial:
        raise BadInput("nothing to change: give body, append, a section edit, find/replace or fields")
    wanted = replace(
        request,
        body=memory.redact(request.body) if request.body is not None else None,
        append=memory.redact(request.append) if request.append is not None else None,
        fields={k: _redacted(memory, v) for k, v in note_fields.checked(request.fields).items()},
    )
    rel = sealed.resolve(memory, request.id)  # an encrypted note by its id too, while unlocked
    why = f" ({request.reason})" if request.reason else ""
    # One hold of the write lock for both commits: no other writer comes between the hand edit
    # and the update made on top of it.
    with locks.hold(memory.vault.state_dir, "write", wait=memory.config.git.lock_wait_seconds):
        # A look first: an update that is refused or changes nothing commits nothing.
        if _revised(memory, wanted, rel, memory.read_text(rel))[1].changed:
            commit_hand_edit(memory, rel, "committed before `update` changed the note")
        # Read under the write lock: what this writes is made from the note as the last writer left it.
        with memory.change(f"update: {rel}{why}") as tx:
            new_text, result = _revised(memory, wanted, rel, tx.read_text(rel))
            if result.changed:
                tx.write_text(rel, new_text)
            tx.message = f"update: {result.title} ({', '.join(result.changed)}){why}"
    result.commit = tx.sha
    return result


def commit_hand_edit(memory: Memory, rel: str, why: str) -> str | None:
    """Commit `rel` as it is on disk when it differs from its last commit (a hand edit no daemon
    committed yet), as the daemon's auto-commit does (`stamp_hand_edits` included), in a commit
    of its own whose message says `why`; returns its sha, None when there was nothing to commit."""
    with memory.change(f"edit: {rel}") as tx:
        try:
            data = tx.read_bytes(rel)
        except FileNotFoundError:
            return None  # the operation that follows says the note is gone
        try:
            if memory.vault.git.blob(f"HEAD:{rel}") == data:
                return None
        except TmemError:
            pass  # never committed: the whole file is the hand edit
        note = notes.parse(memory.vault.decode(rel, data), rel)
        tx.message = f"edit: {note.title}\n\nA hand edit, {why}.\n"
        tx.include([rel])
        stamp_hand_edits(memory, tx, [rel])
    return tx.sha


def _revised(memory: Memory, request: UpdateRequest, rel: str, text: str) -> tuple[str, Updated]:
    """The note `rel`, whose text is `text`, with `request`'s changes (redacted, fields checked)."""
    note = memory.vault.parse(text, rel)
    if note.is_json:
        raise BadInput(f"{rel} is a JSON state file, not a note with a body and frontmatter")
    if note.parse_warning:
        raise BadInput(f"{rel}: {note.parse_warning}; fix it by hand before tmem changes it")
    head, body = text[: len(text) - len(note.body)], note.body
    changed: list[str] = []
    if request.body is not None:
        new_body = request.body
        if not new_body.endswith("\n"):
            new_body += "\n"
        if not new_body.startswith("\n") and body.startswith("\n"):
            new_body = "\n" + new_body  # the blank line after the frontmatter stays
        if new_body != body:
            body = new_body
            changed.append("body")
    elif request.append is not None and request.append.strip():
        addition = request.append.strip("\n")
        body = body.rstrip("\n") + ("\n\n" if body.strip() else "\n") + addition + "\n"
        changed.append("body")
    elif sections.wanted(request) and (edited := sections.edited(memory, request, body, rel)) != body:
        body = edited
        changed.append("body")
    fields = dict(request.fields)
    before = dict(note.meta)
    changed += [f"fields.{k}" for k, v in fields.items() if before.get(k) != v]
    if not changed:
        return text, Updated(note.id, note.title, rel, [], None)
    if "updated" not in fields and (
        note.meta.get("updated") not in (None, "") or filing.filed_by_tmem(memory.vault, note)
    ):
        # A note dated by its frontmatter has it moved (unless this update sets it); any other is
        # dated by when its content was written (model.note_dates), and a person's note gets no
        # key it did not have.
        fields["updated"] = dates.stamp_like(note.meta.get("updated"), memory.now().replace(microsecond=0))
    new_text = edit_frontmatter(head + body, fields) if note.has_frontmatter or fields else head + body
    # What tmem writes it must read back: a frontmatter grown past what the reader takes (64 KiB
    # of YAML) would leave the note without its id, title and every other field.
    if "\x00" in new_text:  # read back, a note holding a NUL is a binary file, not a note
        raise BadInput("the text contains NUL bytes: binary data is not a note")
    unreadable = notes.parse(new_text, rel).parse_warning
    if unreadable:
        raise BadInput(
            f"{rel}: the change would leave its frontmatter unreadable ({unreadable}); nothing written"
        )
    return new_text, Updated(note.id, str(fields.get("title") or note.title), rel, changed, None)


def _redacted(memory: Memory, value: Any) -> Any:
    """A field's value with secrets redacted from its text, in lists and mappings too."""
    if isinstance(value, str):
        return memory.redact(value)
    if isinstance(value, list):
        return [_redacted(memory, item) for item in value]
    if isinstance(value, dict):
        return {key: _redacted(memory, item) for key, item in value.items()}
    return value


def related(memory: Memory, request: RelatedRequest) -> RelatedResult:
    """Notes related to one: by its links and tags when it has any, else by similarity of meaning."""
    rel = memory.resolve(request.id)
    note = memory.read_note(rel)
    memory.fresh()
    rows = memory.rows()
    found: list[RelatedNote] = []
    for item in memory.links().related(rel, limit=request.limit):
        row = rows.get(item.path)
        if row is not None:
            found.append(
                RelatedNote(row.id, row.title, row.path, row.tier, item.score, item.reason, item.shared_tags)
            )
    if found:
        return RelatedResult(note.id, "links", found)
    query = f"{note.title}\n{note.body}"[:2000]
    search_request = SearchRequest(query=query, limit=request.limit + 1, mode="vector")
    try:
        result = memory.search(search_request, record_access=False)
    except TmemError:
        search_request.mode = "keyword"
        result = memory.search(search_request, record_access=False)
    for hit in result.hits:
        if hit.path != rel and hit.category != ATTACHMENT and len(found) < request.limit:
            found.append(RelatedNote(hit.id, hit.title, hit.path, hit.tier, round(hit.score, 4), "similar"))
    return RelatedResult(note.id, "similarity", found)


# ---- changing ----------------------------------------------------------------------------------


def forget(memory: Memory, request: ForgetRequest) -> Forgotten:
    rel = sealed.resolve(memory, request.ref)
    if not memory.is_note(rel):
        # A path can name any file under memory/ (a folder's .gitkeep, some app's data): forget
        # removes notes, whichever door asks.
        raise BadInput(f"{rel} is not a note; forget removes notes only")
    note = memory.read_note(rel)
    why = f" ({request.reason})" if request.reason else ""
    tier = f" [{layout.tier_dir(note.tier)}]" if note.tier else ""  # none: a note of the person's folders
    with memory.change(f"forget: {note.title}{tier}{why}") as tx:
        tx.remove_all([rel], reason=f"forgetting {note.title}")
    return Forgotten(note.id, note.title, rel, tx.sha)


def save_edit(memory: Memory, request: NoteRequest) -> Saved:
    """Reindex and commit a note a person just edited."""
    ref = request.ref.strip()
    # A path is taken as it is: the person may have deleted the file in the editor.
    rel = memory.safe_rel(ref) if "/" in ref or ref.endswith(layout.NOTE_SUFFIXES) else memory.resolve(ref)
    exists = memory.abspath(rel).exists()
    note = memory.read_note(rel) if exists else None
    title = note.title if note is not None else rel
    with memory.change(f"edit: {title}") as tx:
        tx.include([rel])
        if note is not None and filing.filed_by_tmem(memory.vault, note) and _edited(memory, rel):
            # tmem's own notes are dated by their frontmatter `updated` (model.note_dates): an
            # edit made through `tmem edit` moves it, changing only that key's text.
            text = tx.read_text(rel)
            tx.write_text(rel, edit_frontmatter(text, {"updated": memory.now()}))
    return Saved(rel, title, tx.sha)


def stamp_hand_edits(memory: Memory, tx: Transaction, paths: Iterable[str]) -> list[str]:
    """Move `updated` of tmem's own notes a person edited by hand (the daemon commits such edits);
    returns the paths stamped. tmem's notes are dated by that key (model.note_dates), so without
    it a hand edit would leave the note looking as old as before.

    Only notes tmem filed (an `id` and an `updated` in their frontmatter, under the tier folders)
    whose content differs from the last commit while their `updated` does not (a person who set
    it said when): a person's own notes are never written to."""
    stamped: list[str] = []
    for rel in paths:
        if not rel.startswith(layout.MEMORY_DIR + "/") or not rel.endswith(MARKDOWN_SUFFIXES):
            continue
        try:
            text = tx.read_text(rel)
            note = notes.parse(text, rel)
        except (TmemError, OSError):
            continue
        if not notes.written_by_tmem(note) or note.meta.get("updated") in (None, ""):
            continue
        try:
            before = notes.parse(memory.vault.git.blob(f"HEAD:{rel}").decode("utf-8"), rel)
        except (TmemError, UnicodeDecodeError):
            continue  # never committed: a note tmem filed always was
        if before.body == note.body and before.meta == note.meta:
            continue
        if str(before.meta.get("updated")) != str(note.meta.get("updated")):
            continue
        stamped_text = edit_frontmatter(text, {"updated": memory.now()})
        try:
            if tx.read_text(rel) != text:
                continue  # saved again meanwhile: never write over it (that save's event comes back)
        except (TmemError, OSError):
            continue
        tx.write_text(rel, stamped_text)
        stamped.append(rel)
    return stamped


def _edited(memory: Memory, rel: str) -> bool:
    """Whether the file differs from its last committed version (or was never committed)."""
    try:
        committed = memory.vault.git.blob(f"HEAD:{rel}")
    except TmemError:
        return True
    return memory.abspath(rel).read_bytes() != committed


# ---- the indexes -------------------------------------------------------------------------------


def reindex(memory: Memory, request: ReindexRequest) -> ReindexResult:
    kept, dropped = None, False
    if request.full:
        # Keyword-only: the keyword side is built again, the vectors (minutes of embedding) stay.
        kept = memory.indexer.vector_marks() if request.keyword_only else None
        dropped = request.keyword_only and kept is None and memory.indexer.vectors_on_disk()
        memory.indexer.wipe(keep_vectors=kept is not None)
        memory.reopen()
    report = memory.refresh(vectors=not request.keyword_only, progress=memory.progress)
    if kept is not None:
        memory.indexer.restore_vector_marks(kept)
    elif dropped:
        report.warnings.append(
            "the catalog did not say which notes the vectors were made from: they were removed"
            " too, and are made again by the next search, the daemon or `tmem reindex`"
        )
    compacted = memory.indexer.compact_fulltext()  # purge notes that edits left behind, if many
    # A backlog drafted in int8 is searchable now; its refinement is the background's (see
    # Indexer._refresh_vectors): this command ends once every note is searchable.
    running = locks.daemon_holder(memory.vault.state_dir) is not None
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
        drafts=report.drafts,
        refiner=("daemon" if running else "reindex") if report.drafts else "",
        notes=memory.note_count(),
    )
