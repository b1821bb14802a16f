"""What a new note holds and where it goes: validation, redaction, frontmatter and the file it
takes in the vault's tree. Nothing is written here; the operations write through a unit of work."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from tiered_memory.app import input_size
from tiered_memory.errors import BadInput
from tiered_memory.model import layout
from tiered_memory.model import note as notes
from tiered_memory.model.layout import LONG_TERM_DEFAULT, LONG_TERM_HOMES
from tiered_memory.storage import sealing

if TYPE_CHECKING:
    from tiered_memory.app.memory import Memory

MAX_TITLE = 80


@dataclass
class NewNote:
    text: str
    title: str | None = None
    tier: str | None = None
    category: str = "note"
    tags: list[str] = field(default_factory=list)
    project: str | None = None
    entities: list[str] = field(default_factory=list)
    importance: float | None = None
    confidence: float | None = None
    source: str | None = None
    session: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # Set by importers: a fixed id, the time the memory is from, a folder under memory/.
    id: str | None = None
    when: datetime | None = None
    folder: str | None = None


def prepare(memory: Memory, new: NewNote) -> notes.Note:
    """Validate and redact a new note and choose its file; nothing is written yet."""
    text = new.text
    if not text.strip():
        raise BadInput("nothing to remember: the text is empty")
    input_size.check(memory, [text, new.title])
    if "\x00" in text:
        raise BadInput("text contains NUL bytes: binary data is not a note")
    text = memory.redact(text)
    category = (new.category or "note").lower()
    if category not in notes.CATEGORIES:
        raise BadInput(f"unknown category '{category}' (one of: {', '.join(notes.CATEGORIES)})")
    tier = tier_name(new.tier or ("mid" if new.project else "long"))
    title = memory.redact((new.title or first_line(text))[:MAX_TITLE].strip()) or "untitled"
    now = new.when or memory.now()
    note_id = new.id or notes.new_id(title)
    meta: dict[str, Any] = {"id": note_id, "title": title, "category": category}
    if new.tags:
        meta["tags"] = list(dict.fromkeys(t.strip().lstrip("#") for t in new.tags if t.strip()))
    if new.project:
        meta["project"] = safe_name(new.project, "project")
    if new.entities:
        meta["entities"] = list(dict.fromkeys(e.strip() for e in new.entities if e.strip()))
    for key, value in (("importance", new.importance), ("confidence", new.confidence)):
        if value is not None:
            if not 0.0 <= value <= 1.0:
                raise BadInput(f"{key} must be between 0 and 1 (got {value})")
            meta[key] = value
    meta["created"] = now
    meta["updated"] = now
    meta["status"] = "active"
    if new.source:
        meta["source"] = new.source
    if new.session:
        meta["session"] = new.session
    meta.update(new.extra)
    body = text if text.endswith("\n") else text + "\n"
    if new.title and not body.lstrip().startswith("#"):
        body = f"# {title}\n\n{body}"
    if new.folder:
        rel = f"{layout.MEMORY_DIR}/{memory.vault.safe_rel(new.folder).split('/', 1)[1]}/{note_id}.md"
        if notes.tier_of_path(rel) is None:
            raise BadInput(f"folder '{new.folder}' is not inside a tier folder")
    else:
        rel = home(tier, category, meta.get("project"), note_id, title, now)
    note = notes.Note(path=rel, meta=meta, body=body, has_frontmatter=True)
    if new.id is None and sealing.by_rules(memory.vault, note):
        # Stored encrypted: known outside its envelope by its id alone (commit messages, logs),
        # so the id (and the file's name) must tell nothing of the title.
        note.meta["id"] = f"n-{secrets.token_hex(6)}"
        note.path = PurePosixPath(rel).with_name(f"{note.meta['id']}.md").as_posix()
    return note


def home(tier: str, category: str, project: Any, note_id: str, title: str, now: datetime) -> str:
    root = layout.MEMORY_DIR
    if tier == "long":
        folder = LONG_TERM_HOMES.get(category, LONG_TERM_DEFAULT)
        if category == "decision":
            return f"{root}/{folder}/{now:%Y-%m-%d}_{notes.slugify(title, 40)}.md"
        return f"{root}/{folder}/{note_id}.md"
    if tier == "mid" and project:
        return f"{root}/mid-term/projects/{project}/{note_id}.md"
    return f"{root}/{tier_dir(tier)}/{note_id}.md"


def add(memory: Memory, new: NewNote) -> notes.Note:
    """File one new note as its own commit (no dedup: the caller asked for exactly this note)."""
    return write(memory, prepare(memory, new))


def write(memory: Memory, note: notes.Note) -> notes.Note:
    """File a prepared note (its path perhaps changed by the caller) as its own commit."""
    with memory.change(remember_message(note)) as tx:
        tx.create_note(note)
    return memory.vault.read_note(note.path)


def remember_message(note: notes.Note) -> str:
    """The commit message of a new memory."""
    return f"remember: {note.title} [{tier_dir(note.tier or '')}/{note.category}]"


def add_many(memory: Memory, items: list[NewNote], message: str) -> list[notes.Note]:
    """Write many notes and commit them together (transcript ingest, imports)."""
    prepared: list[notes.Note] = []
    with memory.change(message) as tx:
        for new in items:
            note = prepare(memory, new)
            tx.create_note(note)
            prepared.append(note)
    return prepared


def first_line(text: str) -> str:
    for line in text.splitlines():
        stripped = line.strip().lstrip("#").strip()
        if stripped:
            return stripped
    return "untitled"


def tier_name(value: str) -> str:
    value = value.strip().lower().removesuffix("-term")
    if value not in layout.TIER_DIRS:
        raise BadInput(f"unknown tier '{value}' (one of: short, mid, long, archive)")
    return value


def tier_dir(tier: str) -> str:
    return layout.TIER_DIRS.get(tier, tier)


def safe_name(value: str, what: str) -> str:
    """Project ids and similar become folder names: no path characters allowed."""
    value = value.strip()
    if not value or value in (".", "..") or any(c in value for c in "/\\\x00") or value.startswith("."):
        raise BadInput(f"invalid {what} id '{value}': use letters, digits, '-' or '_' (no path characters)")
    return PurePosixPath(value).name
