"""What a new note holds and where it goes: validation, redaction, frontmatter and the file it
takes in the vault's tree. Nothing is written here; the operations write through a unit of work."""

from __future__ import annotations

__all__ = [
    "MAX_TITLE",
    "NewNote",
    "add",
    "add_many",
    "filed_by_tmem",
    "first_line",
    "home",
    "in_folder",
    "late_marks",
    "placed",
    "prepare",
    "remember_message",
    "safe_name",
    "tier_dir",
    "tier_name",
    "write",
]

import os
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from tiered_memory.app import input_size
from tiered_memory.app.api.notes import RememberRequest
from tiered_memory.errors import BadInput
from tiered_memory.model import file_names, layout
from tiered_memory.model import note as notes
from tiered_memory.model.layout import LONG_TERM_DEFAULT, LONG_TERM_HOMES
from tiered_memory.storage import safe_path, sealing
from tiered_memory.storage.vault import Vault

if TYPE_CHECKING:
    from tiered_memory.app.memory import Memory

MAX_TITLE = 80
_DRIVE = re.compile(r"^[A-Za-z]:")
# Characters a file name made from a title leaves out: path separators, what Windows refuses and
# what Obsidian's links use (`#` heading, `^` block, `|` shown text, `[[ ]]`).
_NOT_IN_NAME = re.compile(r'[\\/:*?"<>|#^\[\]\x00-\x1f\x7f]')


@dataclass
class NewNote(RememberRequest):
    """A memory to file: what any door may ask to remember, and what only tmem's own callers set."""

    extra: dict[str, Any] = field(default_factory=dict)  # more frontmatter (`supersedes`, `extractor`)
    # Set by importers: a fixed id, the time the memory is from.
    id: str | None = None
    when: datetime | None = None


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
    folder = placed(memory, new.folder) if new.folder is not None else None
    tier = tier_name(new.tier or ("mid" if new.project else "long"))
    title = memory.redact(notes.one_line(new.title or first_line(text))[:MAX_TITLE].strip()) or "untitled"
    now = new.when or memory.now()
    note_id = new.id or notes.new_id(title)
    meta: dict[str, Any] = {"id": note_id, "title": title, "category": category}
    if new.tags:
        meta["tags"] = list(dict.fromkeys(t.strip().lstrip("#") for t in new.tags if t.strip()))
    if new.project:
        meta["project"] = _project_spelling(memory, safe_name(new.project, "project"))
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
    if folder is not None:
        rel = in_folder(memory, folder, note_id, title)
        setting = memory.vault.folders.left_out_by(rel)
        if setting is not None:
            # The folder is in, but not this note's file (`exclude: [Notes/*-*.md]`, "Pre-flight"):
            # filed there, it would be in no index, found by no search.
            raise BadInput(
                f"folder '{folder}': the note's file {rel} is left out by {setting} in "
                f"{layout.CONFIG_NAME}: it would never be indexed or found; nothing written"
            )
        there = memory.tier_of(rel)
        if new.tier is not None and tier != there:
            raise BadInput(
                f"--tier {tier} does not go with folder '{folder}': a note there is {tier_dir(there)} "
                f"(its tier is the folder's, from `folders:` in {layout.CONFIG_NAME})"
            )
    else:
        rel = home(tier, category, meta.get("project"), note_id, title, now)
    if not rel.startswith(layout.MEMORY_DIR + "/"):
        meta[notes.FILED_BY] = notes.TMEM_MARK  # in a person's folders its keys alone say nothing
    note = notes.Note(path=rel, meta=meta, body=body, has_frontmatter=True)
    if new.id is None and sealing.by_rules(memory.vault, note):
        # Stored encrypted: known outside its envelope by its id alone (commit messages, logs),
        # so the id (and the file's name) must tell nothing of the title.
        note.meta["id"] = f"n-{secrets.token_hex(6)}"
        note.path = PurePosixPath(rel).with_name(f"{note.meta['id']}.md").as_posix()
    return note


def placed(memory: Memory, given: str) -> str:
    """The folder a person named for a new note (vault-relative, `/` between folders), checked:
    inside the vault, nothing hidden on the way (`.tmem/`, `.git/`, `.obsidian/`), no symbolic
    link or file among its existing folders, no git repository of its own (its notes would never
    be committed), and a place the `folders:` rules index. BadInput (one line) otherwise; nothing
    is made here (the unit of work makes missing folders as it writes)."""
    folder = given.strip()
    shown = f"folder '{given.strip()}'"
    if not folder:
        raise BadInput("the folder is empty: give one inside the vault, e.g. Recipes or Work/Meetings")
    if any(ord(c) < 32 or c == "\x7f" for c in folder):
        raise BadInput(f"folder {folder!r} has a control character: no folder name has one")
    if folder.startswith(("/", "~")) or _DRIVE.match(folder):
        raise BadInput(f"{shown} is absolute: give a folder inside the vault, relative to its root")
    if "\\" in folder:
        raise BadInput(f"{shown} has a backslash: separate folders with /")
    parts = [p for p in folder.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise BadInput(f"{shown} leads out of its folder (..): give a folder inside the vault")
    if not parts:
        raise BadInput(f"{shown} is the vault itself: give a folder inside it")
    if any(p.startswith(".") for p in parts):
        raise BadInput(f"{shown} is hidden (.tmem, .git, .obsidian...): tmem files no notes there")
    for depth, part in enumerate(parts):
        why = file_names.problem(part)
        if why is not None and not os.path.lexists(memory.abspath("/".join(parts[: depth + 1]))):
            raise BadInput(f"{shown}: {why}, so no clone there could check it out: choose another name")
    folder = "/".join(parts)
    safe_path.check(memory.root, f"{folder}/note.md")  # a link or a file on the way: one line
    for depth in range(1, len(parts) + 1):
        if os.path.lexists(memory.abspath("/".join([*parts[:depth], ".git"]))):
            raise BadInput(
                f"{shown}: {'/'.join(parts[:depth])} is a git repository of its own (never committed)"
            )
    setting = memory.vault.folders.left_out_by(f"{folder}/note.md")
    if setting is not None:
        raise BadInput(
            f"{shown} is left out by {setting} in {layout.CONFIG_NAME}: a note there would never be "
            "indexed or found; nothing written"
        )
    return folder


def in_folder(memory: Memory, folder: str, note_id: str, title: str) -> str:
    """The path of a new note in `folder`: in tmem's tier tree, named by its id as tmem names its
    notes; anywhere else (a person's own folders), by its title, as their editor names a note."""
    by_id = f"{folder}/{note_id}.md"
    if notes.tier_of_path(by_id) is not None:
        return by_id
    name = " ".join(_NOT_IN_NAME.sub(" ", title).split()).strip(" .")[:MAX_TITLE]
    name = notes.cut_to_bytes(name, notes.NAME_BYTES).rstrip(" .")  # 80 rare Chinese characters: 320 bytes
    if not name:
        return by_id
    rel = f"{folder}/{file_names.portable(name + '.md')}"  # "Con" is a device on Windows: Con-note.md
    return rel if memory.is_note(rel) else by_id


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
    return memory.read_note(note.path)


def remember_message(note: notes.Note) -> str:
    """The commit message of a new memory: its tier folder, or the folder it was filed in."""
    where = tier_dir(note.tier) if note.tier else PurePosixPath(note.path).parent.as_posix()
    return f"remember: {note.title} [{where}/{note.category}]"


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
    why = file_names.problem(value)
    if why is not None:  # its folder could not be checked out on Windows: a clone there would fail
        raise BadInput(f"invalid {what} id '{value}': {why}; use letters, digits, '-' or '_'")
    return PurePosixPath(value).name


def _project_spelling(memory: Memory, pid: str) -> str:
    """A project's id as its folder spells it: `Survey` names the folder `survey/` when there is
    one (on macOS and Windows the two are one folder), so its notes and their `project:` agree."""
    if memory.abspath(f"{layout.PROJECTS}/{pid}").is_dir():
        return pid
    try:
        folders = os.listdir(memory.abspath(layout.PROJECTS))
    except OSError:
        return pid
    wanted = file_names.fold(pid)
    return next((f for f in sorted(folders) if file_names.fold(f) == wanted), pid)


def filed_by_tmem(vault: Vault, note: notes.Note) -> bool:
    """Whether tmem filed `note` (`notes.written_by_tmem`), its mark in a person's folders taken
    only from a note that carried it from its first version (`late_marks`)."""
    return notes.written_by_tmem(note) and not late_marks(vault, [note])


def late_marks(vault: Vault, found: Iterable[notes.Note]) -> set[str]:
    """The notes among `found` in a person's folders whose mark (`filed_by: tmem`) came after their
    first version in git, or that git never saw. Filing writes the mark with the note, in the
    commit that adds it; one added later (by a pulled commit from another clone, a plugin, a hand
    edit) is data in a note that is still the person's, whose bytes tmem changes only when asked."""
    marked = [
        n.path for n in found if not n.path.startswith(layout.MEMORY_DIR + "/") and notes.written_by_tmem(n)
    ]
    if not marked:
        return set()
    first = vault.git.first_versions(marked)
    return {path for path in marked if path not in first or not _born_marked(first[path], path)}


def _born_marked(data: bytes, path: str) -> bool:
    """Whether a note's first version (its bytes `data`) carried tmem's mark."""
    note = notes.parse(data.decode("utf-8", errors="replace"), path)
    return note.meta.get(notes.FILED_BY) == notes.TMEM_MARK
