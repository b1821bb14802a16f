"""`tmem import`: memories from other tools (and tmem exports) through the same policy as `tmem add`.

Each importer module reads one tool's files into `Item`s; `run()` files them in one commit:

- a **memory** goes through dedup (added, merged into a near-duplicate, or superseding an older
  contradicted note) and redaction, exactly like `tmem add`;
- a **note** (tmem's own export, kept whole) is written at its own path with its own bytes, unless
  the vault has it already (`whole_notes`: by id, or at that path); a different note at that path
  is kept, and the import takes the next free name;
- a **session** (a conversation) becomes an archived session note, and its memories are extracted
  as `tmem ingest` does.

Every item carries its id in the source tool. The ledger `.tmem-imports.jsonl` (committed with the
import) remembers which source ids were imported and what their content was, so importing the same
file again changes nothing, and an item whose content changed since is imported again. The ledger
only speeds this up: without it (a clone made before it, a line a merge mangled) and without
`.tmem/`, each item is found in the notes themselves, so importing again still adds no note and
makes no commit: a memory is the note that names its source (`source:`, or `sources:` of the note
it was merged into) and holds its words; a session is the one with its id and the same messages
(its memories were extracted when it was stored, and are not again).
"""

from __future__ import annotations

__all__ = ["LEDGER", "READERS", "detect", "import_file", "load_ledger", "session_id", "summary"]

import contextlib
import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from tiered_memory.app import dedup, input_size, session_memories
from tiered_memory.app.api.portability import IMPORT_FORMATS, ImportedItem, ImportRequest, ImportResult
from tiered_memory.app.export import note_entry
from tiered_memory.app.filing import NewNote, safe_name
from tiered_memory.app.importers import (
    basic_memory,
    chatgpt,
    claude,
    claude_code,
    claude_mem,
    mcp_memory,
    mem0,
    tmem,
)
from tiered_memory.app.importers.items import Item, Reader, SessionItem
from tiered_memory.app.importers.whole_notes import WholeNotes
from tiered_memory.app.memory import Memory
from tiered_memory.errors import BadInput, VaultError
from tiered_memory.model import note as notes
from tiered_memory.model import session_format as sn
from tiered_memory.model.transcripts import Message
from tiered_memory.storage import editor_templates, safe_path, sealing
from tiered_memory.storage.transaction import Transaction

LEDGER = ".tmem-imports.jsonl"


class _DryRun(Exception):
    """Raised inside the unit of work to undo a dry run's writes."""


READERS: dict[str, Reader] = {
    "tmem": tmem.read,
    "claude": claude.read,
    "chatgpt": chatgpt.read,
    "mcp-memory": mcp_memory.read,
    "basic-memory": basic_memory.read,
    "claude-code": claude_code.read,
    "mem0": mem0.read,
    "claude-mem": claude_mem.read,
}


def import_file(memory: Memory, request: ImportRequest) -> ImportResult:
    fmt = request.format.lower()
    if fmt and fmt not in IMPORT_FORMATS:
        raise BadInput(f"unknown import format '{request.format}' (one of: {', '.join(IMPORT_FORMATS)})")
    path = Path(request.path).expanduser()
    if not path.exists():
        raise BadInput(f"{request.path}: no such file or folder")
    if not path.is_file() and not path.is_dir():
        raise BadInput(f"{request.path}: not a file or folder (a pipe, socket or device)")
    if not fmt:
        fmt = detect(path)
    with _as_expected(request.path, fmt):
        items = READERS[fmt](path)
    # Every item is checked before any is filed: a bad one refuses the whole file, nothing
    # written. A tmem export is read twice for that, an entry at a time, never held whole.
    survey = _survey(memory, _read(items, request.path, fmt), path)
    project = safe_name(request.project, "project") if request.project else None
    result = ImportResult(format=fmt, path=str(path), dry_run=request.dry_run)
    warnings: list[str] = []
    try:
        with memory.reporting_to(warnings.append), memory.change(f"import: {fmt}") as tx:
            if isinstance(items, tmem.ExportItems):  # before the notes: the commit's index pass reads it
                _carry_templates(memory, tx, tmem.templates_of(items.header))
            # Checked again as they are filed: the file may have changed since the survey (then
            # the unit of work is undone whole).
            checked = (_checked(memory, item, path) for item in _read(items, request.path, fmt))
            _run(memory, tx, fmt, checked, survey, project, result)
            tx.message = f"import: {fmt} {path.name} ({summary(result)})"
            if request.dry_run:
                raise _DryRun
    except _DryRun:
        pass
    else:
        result.commit = tx.sha
    result.warnings = list(dict.fromkeys(warnings))
    return result


def detect(path: Path) -> str:
    """The format of `path` when the file says it: a tmem export names itself in its first object
    (`"format": "tmem-export"`). Other tools' files say nothing that tells them apart for sure
    (Claude's and ChatGPT's are both `conversations.json`), so for those the person names it."""
    if path.is_file() and tmem.is_export(path):
        return "tmem"
    raise BadInput(
        f"{path}: cannot tell what wrote it; name it with --format (one of: {', '.join(IMPORT_FORMATS)})"
    )


def _carry_templates(memory: Memory, tx: Transaction, folders: list[str]) -> None:
    """The templates folder of the vault an export came from, for a vault whose editor names
    none: `.obsidian/templates.json` is made holding that folder alone (nothing else of the
    other vault's editor settings), so the index here leaves those notes out as it did there, and
    Obsidian's Templates plugin finds them. A vault whose editor names another folder keeps its
    setting, and a line says that the export's templates are notes here."""
    named = editor_templates.folders(memory.root, existing=False)
    missing = [folder for folder in folders if folder not in named]
    settings, key = editor_templates.SETTINGS[0]
    if missing and not named and not tx.exists(settings):
        tx.write_text(settings, json.dumps({key: missing[0]}, ensure_ascii=False, indent=2) + "\n")
        missing = missing[1:]
    for folder in missing:
        memory.warn(
            f"the export's templates folder {folder}/ is not one this vault's editor names: its notes are "
            f"indexed as notes here (name it in {settings} to leave them out)"
        )


@contextlib.contextmanager
def _as_expected(given: str, fmt: str) -> Iterator[None]:
    """An export is untrusted input: a shape the reader did not expect is bad input, whatever
    field it lacked, never a traceback."""
    try:
        yield
    except (KeyError, IndexError, TypeError, AttributeError, RecursionError) as exc:
        raise BadInput(f"{given}: not a {fmt} export as expected ({exc.__class__.__name__})") from None


def _read(items: Iterable[Item], given: str, fmt: str) -> Iterator[Item]:
    """The reader's items one by one, what it could not make of an entry said as `_as_expected`."""
    with _as_expected(given, fmt):
        yield from items


@dataclass
class _Survey:
    """What the check of every item leaves for the filing: no item, only what is small."""

    notes: bool = False  # some item is a note kept whole (a tmem export's)
    taken: list[str] = field(default_factory=list)  # the paths of those already in the vault


def _survey(memory: Memory, items: Iterable[Item], source: Path) -> _Survey:
    """Every item checked before anything is written (`_place`, `_check_size`): one entry with a
    path that is not a note's, or larger than a note may be, refuses the whole file (nothing
    written, nothing committed). The paths are said first, up to three, then a size."""
    survey = _Survey()
    refused: list[str] = []
    too_large: str | None = None
    for item in items:
        problem = _place(memory, item)
        if problem is not None:
            refused.append(problem)
        elif too_large is None:
            try:
                _check_size(memory, item, source)
            except BadInput as exc:
                too_large = str(exc)
        if item.note is not None:
            survey.notes = True
            if item.note.path and os.path.lexists(memory.abspath(item.note.path)):
                survey.taken.append(item.note.path)
    if refused:
        shown = ", ".join(refused[:3]) + (f" and {len(refused) - 3} more" if len(refused) > 3 else "")
        raise BadInput(f"{source}: nothing imported: entries with paths that are not notes: {shown}")
    if too_large is not None:
        raise BadInput(too_large)
    return survey


def _checked(memory: Memory, item: Item, source: Path) -> Item:
    """An item checked as `_survey` checks it, as it is filed: BadInput undoes the unit of work."""
    problem = _place(memory, item)
    if problem is not None:
        raise BadInput(f"{source}: nothing imported: an entry with a path that is not a note's: {problem}")
    _check_size(memory, item, source)
    return item


def _place(memory: Memory, item: Item) -> str | None:
    """What is wrong with the path an item names (None when nothing, or when it names none): the
    import writes note files only, inside the vault, never through a symbolic link. A good path
    is made vault-relative in place (`tmem.vault_path`): where the export had the note, not moved
    into `memory/` because this vault has no such folder yet."""
    holder: notes.Note | SessionItem | None = item.note or item.session
    if holder is None or holder.path is None:
        return None
    given = holder.path
    problem = tmem.path_problem(given)
    if problem is None:
        rel = tmem.vault_path(given)
        problem = _destination_problem(memory, rel)
        holder.path = rel
    return None if problem is None else f"{given!r} ({problem})"


def _destination_problem(memory: Memory, rel: str) -> str | None:
    """Why this vault cannot take a note at `rel` (None when it can): its `folders:` rules make
    no note of it, or a folder on the way is a symbolic link (which could lead out of the vault)."""
    if not memory.is_note(rel):
        return "not a note of this vault"
    try:
        safe_path.check(memory.root, rel)
    except VaultError as exc:
        return str(exc).split(";", 1)[0]  # "Notes is a symbolic link", "Notes is a file, not a folder"
    return None


def _check_size(memory: Memory, item: Item, source: Path) -> None:
    """The item within the size one note may have, checked before it is redacted or filed: an
    item over it refuses the whole file, as a bad path does."""
    texts: list[object] = []
    if item.memory is not None:
        texts = [item.memory.text, item.memory.title]
    elif item.note is not None:
        texts = [item.note.body, *item.note.meta.values()]
    elif item.session is not None:
        texts = [item.session.title, item.session.summary, *(m.content for m in item.session.messages)]
    try:
        input_size.check(memory, texts, f"item '{item.source}'")
    except BadInput as exc:
        raise BadInput(f"{source}: nothing imported: {exc}") from None


def summary(result: ImportResult) -> str:
    parts = [(result.added, "added"), (result.merged, "merged"), (result.updated, "updated")]
    parts.append((result.skipped, "skipped"))
    return ", ".join(f"{n} {what}" for n, what in parts if n) or "nothing"


# ---- the ledger ---------------------------------------------------------------------------------


def load_ledger(memory: Memory) -> dict[str, dict[str, Any]]:
    path = memory.abspath(LEDGER)
    if not path.is_file():
        return {}
    found: dict[str, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").split("\n"):  # U+2028 in a title is inside its line
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a line a merge mangled: that item is simply imported again
        if isinstance(entry, dict) and entry.get("source"):
            found[str(entry["source"])] = entry
    return found


def _save_ledger(memory: Memory, tx: Transaction, entries: list[dict[str, Any]]) -> None:
    old = tx.read_text(LEDGER) if tx.exists(LEDGER) else ""
    if old and not old.endswith("\n"):
        old += "\n"
    lines = [json.dumps(e, ensure_ascii=False, sort_keys=True) + "\n" for e in entries]
    # A line redaction would change (an id or a path that reads like a token beside the key
    # `source`) would be stored with a marker for its source, which the next import of the same
    # file could never find, and so would record again: it is left out, and that item is found in
    # the vault as it is instead.
    kept = [line for line in lines if tx.redact is None or tx.redact(line) == line]
    if kept:
        tx.write_text(LEDGER, old + "".join(kept))


# ---- filing ---------------------------------------------------------------------------------------


def _run(
    memory: Memory,
    tx: Transaction,
    fmt: str,
    items: Iterable[Item],
    survey: _Survey,
    project: str | None,
    result: ImportResult,
) -> None:
    # The catalog answers "is it there?" (a session's id, the notes an item was filed as): it is
    # under .tmem/, which may be gone, so it is brought up to date first.
    memory.refresh()
    ledger = load_ledger(memory)
    recorded: list[dict[str, Any]] = []
    seen: dict[str, set[str]] = {}  # source -> the digests of its items in this file
    whole = WholeNotes(memory, survey.taken) if survey.notes else None
    for item in items:
        key = f"{fmt}:{item.source}"
        if key in seen:
            if item.digest not in seen[key]:  # not a copy: what it holds is not imported, and is said so
                seen[key].add(item.digest)
                why = "another entry of this file has its id"
                _count(result, ImportedItem(key, "skipped", item.title, "", why))
            continue
        seen[key] = {item.digest}
        before = ledger.get(key) or ledger.get(_sealed_source(key))
        if before is not None and before.get("digest") == item.digest:
            _count(
                result,
                ImportedItem(key, "skipped", item.title, str(before.get("path", "")), "already imported"),
            )
            continue
        if whole is not None and item.note is not None:
            done = whole.file(tx, key, item, str(before.get("path") or "") if before else None)
        else:
            done = _file(memory, tx, key, item, project, known=before is not None)
        if before is not None and done.action in ("added", "superseded"):
            done.action, done.why = "updated", done.why or "changed since the last import"
        _count(result, done)
        if done.action != "skipped" or done.why.startswith("exists"):
            recorded.append(
                {
                    "source": _sealed_source(key) if sealing.on_disk(memory.vault, done.path) else key,
                    "digest": item.digest,
                    "path": done.path,
                    "action": done.action,
                    "at": memory.now().isoformat(),
                }
            )
    # The ledger only speeds up the next import of the same items: an import that wrote nothing
    # else (every item already in the vault) leaves it as it is, so it makes no commit at all.
    if recorded and tx.touched:
        _save_ledger(memory, tx, recorded)


def _sealed_source(key: str) -> str:
    """How the ledger names the source of a note stored encrypted: by a digest, since the id a
    tool gave it (a tmem export's id made from the title, an entity's name) may tell what only the
    envelope may show, and the ledger is committed in plain text."""
    return "sealed:" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]


def _count(result: ImportResult, item: ImportedItem) -> None:
    result.items.append(item)
    if item.action in ("added", "superseded"):
        result.added += 1
    elif item.action == "merged":
        result.merged += 1
    elif item.action == "updated":
        result.updated += 1
    else:
        result.skipped += 1


def _file(
    memory: Memory, tx: Transaction, key: str, item: Item, project: str | None, *, known: bool
) -> ImportedItem:
    """File one memory or session; `known`: the ledger remembers an earlier import of this source
    (with other content), so the vault's copy is to be brought up to date, not found as it is."""
    if item.memory is not None:
        new = item.memory
        new.source = new.source or f"import:{key}"
        if project:
            new.project = project
        filed = None if known else _filed_as(memory, new)
        if filed is not None:
            # The note this very item was filed as, found by its source in the notes themselves
            # (the ledger is gone, or never came with a clone): it says what the item says.
            return ImportedItem(key, "skipped", filed.title, filed.path, "exists, unchanged")
        verdict = dedup.judge(memory, new)
        other = verdict.other.note if verdict.other is not None else None
        if verdict.action == "merged" and other is not None and new.source in _sources(other):
            # The note this very item was filed as (an import whose ledger line is gone): merging
            # it again would only raise the note's confidence on no new evidence.
            return ImportedItem(key, "skipped", other.title, other.path, "exists, unchanged")
        outcome = dedup.apply_verdict(memory, tx, new, verdict)
        path = outcome.other.path if outcome.action == "merged" and outcome.other else outcome.note.path
        why = outcome.reason if outcome.action != "added" else ""
        return ImportedItem(key, outcome.action, outcome.note.title, path, why)
    assert item.session is not None
    return _file_session(memory, tx, key, item.session, project, known=known)


def _sources(note: notes.Note) -> set[str]:
    listed = note.meta.get("sources")
    found = {str(s) for s in listed} if isinstance(listed, list) else set()
    return found | {str(note.meta.get("source") or "")}


def _filed_as(memory: Memory, new: NewNote) -> notes.Note | None:
    """The note that holds what `new` says and names its source (`source:`, or among the
    `sources:` of the note it was merged into), if there is one. Looked for among the notes with
    its title and the notes whose words best match its text, in any tier or state: an imported
    note archived or moved since is still the one the import made."""
    text = memory.redact(new.text)
    title = memory.redact(notes.one_line(new.title or "").strip())
    paths = [p for p, _score in memory.keyword_matches(text, dedup.NEIGHBOURS)]
    if title:
        paths += [r.path for r in memory.rows().values() if r.title == title]
    words = _words(text)
    for path in dict.fromkeys(paths):
        note = memory.read_note(path)
        if note.parse_warning or new.source not in _sources(note):
            continue
        if _words(dedup.plain_text(note)) >= words:
            return note
    return None


def _words(text: str) -> set[str]:
    """The words of a memory's text that count (no heading lines)."""
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
    return dedup.tokens("\n".join(lines))


def _same(current: notes.Note, imported: notes.Note) -> bool:
    """Whether an exported note holds what the vault's note does. Compared as an export would
    carry the vault's note: JSON turned its dates into text (`due: 2024-05-01`), and the import
    read a date-only `updated` as a moment, so the two notes differ where their content does not."""
    wanted = notes.render(imported)
    if notes.render(current) == wanted:
        return True
    return notes.render(tmem.note_of(note_entry(current, _unchanged))) == wanted


def _unchanged(text: str) -> str:
    return text


def _same_messages(stored: list[Message], messages: list[Message]) -> bool:
    return len(stored) == len(messages) and all(
        (a.role, a.content) == (b.role, b.content) for a, b in zip(stored, messages, strict=True)
    )


def session_id(key: str, started: datetime | None) -> str:
    digest = hashlib.blake2b(key.encode("utf-8"), digest_size=4).hexdigest()[:6]
    return f"ses-{started:%Y%m%d}-{digest}" if started else f"ses-{digest}"


def _file_session(
    memory: Memory, tx: Transaction, key: str, item: SessionItem, project: str | None, *, known: bool
) -> ImportedItem:
    redact = memory.redact
    messages = [Message(m.role, redact(m.content), m.timestamp) for m in item.messages if m.content.strip()]
    if not messages:
        return ImportedItem(key, "skipped", item.title, "", "no messages")
    stamps = [m.timestamp for m in messages if m.timestamp]
    started = item.started or (min(stamps) if stamps else memory.now())
    ended = item.ended or (max(stamps) if stamps else started)
    sid = item.id or session_id(key, started)
    title = " ".join(redact(item.title or "").split())[:80] or sn.first_sentence(messages[0].content, 80)
    title = title or f"Conversation {started:%Y-%m-%d}"
    found = session_memories.plan(memory, messages, sid, item.extract)
    meta: dict[str, Any] = {"id": sid, "title": title, "category": "session", "status": "completed"}
    meta["session"] = sid
    if project:
        meta["project"] = project
    meta.update(created=started, updated=ended, started=started, ended=ended, messages=len(messages))
    meta["source"] = f"import:{key}"
    if item.meta.get("id"):  # a tmem session: its own frontmatter, in its own order
        meta = {**item.meta, **{k: v for k, v in meta.items() if k not in item.meta}}
    else:
        meta.update({k: v for k, v in item.meta.items() if k not in meta})
    summary_text = (
        redact(item.summary)
        if item.summary
        else sn.build_summary(messages, started, ended, found.highlights())
    )
    body = sn.with_summary(sn.append_messages(sn.new_body(title), messages), summary_text)
    rows = [r for r in memory.by_id(sid) if sn.is_session_path(r.path)]
    path = rows[0].path if rows else item.path or f"{sn.ARCHIVE_DIR}/{started:%Y/%m/%d}/{sid}.md"
    note = notes.Note(path, meta, body, True)
    current = memory.read_note(path) if rows else None
    if current is not None and not found.wanted and _same(current, note):
        return ImportedItem(key, "skipped", title, path, "exists, unchanged")
    if current is not None and not known and _same_messages(sn.parse_messages(current.body), messages):
        # Stored by an earlier import of this source (the ledger that said so is gone): its
        # memories were extracted then, and extracting them again would merge each into itself.
        return ImportedItem(key, "skipped", current.title, path, "exists, unchanged")
    if rows:
        tx.write_note(note, overwrite=True)  # the imported session replaces the one stored
    else:
        path = tx.create_note(note)
    outcomes = session_memories.store(memory, tx, found, sid, project)
    # Indexed when a later memory's dedup searches (`index_written`), else by the commit's one pass.
    memory.index_later([path])
    why = f"{sn.plural(len(messages), 'message')}; {session_memories.describe(outcomes)}"
    return ImportedItem(key, "updated" if rows else "added", title, path, why)
