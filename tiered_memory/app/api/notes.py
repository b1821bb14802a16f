"""Operations on single notes and on the whole vault: remember, show, read, update, related, list,
edit, forget, search, reindex, status."""

from __future__ import annotations

__all__ = [
    "FORGET",
    "ForgetRequest",
    "Forgotten",
    "GitState",
    "IndexState",
    "LIST",
    "ListRequest",
    "NoteList",
    "NoteRef",
    "NoteRequest",
    "NoteSummary",
    "NoteText",
    "NoteView",
    "READ",
    "REINDEX",
    "RELATED",
    "REMEMBER",
    "ReadRequest",
    "ReindexRequest",
    "ReindexResult",
    "RelatedNote",
    "RelatedRequest",
    "RelatedResult",
    "RememberRequest",
    "RememberResult",
    "SAVE_EDIT",
    "SHOW",
    "STATUS",
    "Saved",
    "Skipped",
    "StatusResult",
    "UPDATE",
    "UpdateRequest",
    "Updated",
]

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tiered_memory.app.api import Empty, Op
from tiered_memory.model.records import Record
from tiered_memory.model.search import Filters


@dataclass
class NoteRef(Record):
    id: str
    title: str
    path: str


@dataclass
class NoteSummary(Record):
    """One line of a listing."""

    id: str
    title: str
    path: str
    tier: str
    category: str
    status: str
    tags: list[str] = field(default_factory=list)
    project: str = ""
    entities: list[str] = field(default_factory=list)
    importance: float = 0.5
    confidence: float = 1.0
    updated: str = ""  # ISO 8601, UTC


@dataclass
class NoteView(Record):
    """A whole note: its typed fields, its frontmatter as written, its body and its file's text."""

    id: str
    title: str
    path: str
    tier: str | None
    category: str
    status: str
    tags: list[str]
    project: str
    entities: list[str]
    importance: float
    confidence: float
    created: datetime | None
    updated: datetime | None
    frontmatter: dict[str, Any]
    body: str
    warning: str | None = None
    text: str = ""
    fields: dict[str, list[str]] = field(default_factory=dict)  # Dataview `key:: value` fields of the body
    aliases: list[str] = field(default_factory=list)


# ---- remember ----------------------------------------------------------------------------------


@dataclass
class RememberRequest(Record):
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
    # A near-duplicate boosts the note it repeats and a contradiction supersedes the older note;
    # False files a new note whatever is already there.
    dedup: bool = True
    # A vault-relative folder to file the note in (an adopted vault's own `Recipes/`), named by its
    # title; its tier is the folder's (the `folders:` rules). None: tmem's tier tree decides.
    folder: str | None = None


@dataclass
class RememberResult(Record):
    action: str  # added, merged or superseded
    message: str
    note: NoteView
    other: NoteRef | None = None  # the note merged into, or the first one superseded
    superseded: list[NoteRef] = field(default_factory=list)
    commit: str | None = None


# ---- reading -----------------------------------------------------------------------------------


@dataclass
class NoteRequest(Record):
    """A note by id, or by path (relative to the vault or to memory/)."""

    ref: str


@dataclass
class ListRequest(Filters):
    """The notes the filters keep (the same filters as a search's), at most `limit` of them."""

    limit: int | None = None


@dataclass
class NoteList(Record):
    notes: list[NoteSummary] = field(default_factory=list)


# ---- changing ----------------------------------------------------------------------------------


@dataclass
class ForgetRequest(Record):
    ref: str
    reason: str | None = None


@dataclass
class Forgotten(Record):
    id: str
    title: str
    path: str
    commit: str | None = None


@dataclass
class Saved(Record):
    """A note a person edited, reindexed and committed."""

    path: str
    title: str
    commit: str | None = None


# ---- reading and changing a note by its id (what agents use) -------------------------------------


@dataclass
class ReadRequest(Record):
    """A note by id or vault path; `start`/`end` (1-based, inclusive) pick lines of its body."""

    id: str
    start: int | None = None
    end: int | None = None


@dataclass
class NoteText(Record):
    id: str
    title: str
    path: str
    tier: str | None
    category: str
    status: str
    frontmatter: dict[str, Any]
    body: str  # the whole body, or the lines asked for
    start: int  # the first body line returned (1-based)
    end: int  # the last one
    lines: int  # lines in the whole body
    updated: datetime | None = None


@dataclass
class UpdateRequest(Record):
    """Change a note in one commit: `body` replaces the body, `append` adds to its end, `fields`
    sets frontmatter keys (a null value removes the key). Secrets are redacted first.

    Or change part of the body (`app.sections`): `section` (a heading's text) with `operation`
    append, prepend or replace and its `text`; or `find` replaced by `replace`, refused unless
    `find` occurs exactly `count` times."""

    id: str
    body: str | None = None
    append: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None
    section: str | None = None
    operation: str | None = None  # append (the default), prepend or replace
    text: str | None = None
    find: str | None = None
    replace: str | None = None
    count: int = 1


@dataclass
class Updated(Record):
    id: str
    title: str
    path: str
    changed: list[str] = field(default_factory=list)  # "body", "fields.tags", ...
    commit: str | None = None


@dataclass
class RelatedRequest(Record):
    id: str
    limit: int = 5


@dataclass
class RelatedNote(Record):
    id: str
    title: str
    path: str
    tier: str
    score: float
    why: str  # "links to", "linked from", "linked both ways", "shared tags" or "similar"
    shared_tags: list[str] = field(default_factory=list)  # tags it shares with the note, rarest first


@dataclass
class RelatedResult(Record):
    id: str
    by: str  # "links" (the note's links and tags) or "similarity" (its vectors)
    notes: list[RelatedNote] = field(default_factory=list)


# ---- the vault ---------------------------------------------------------------------------------


@dataclass
class ReindexRequest(Record):
    full: bool = False
    keyword_only: bool = False


@dataclass
class ReindexResult(Record):
    # added .. unchanged count files: notes, JSON state, and templates not written in (which
    # the catalog keeps unindexed); `notes` is the notes indexed, as `list` and `status` count them.
    added: int = 0
    changed: int = 0
    deleted: int = 0
    unchanged: int = 0
    embedded: int = 0
    vectors: str = "skipped"
    rebuilt: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    compacted: bool = False
    # Notes whose vectors are int8 drafts still to refine to float32 (a large backlog is drafted
    # first: searchable at once), and what refines them: "daemon" when one runs, else "reindex".
    drafts: int = 0
    refiner: str = ""
    notes: int = 0


@dataclass
class Skipped(Record):
    path: str
    why: str


@dataclass
class IndexState(Record):
    new_files: int
    changed_files: int
    deleted_files: int
    fresh: bool
    vectors_pending: int
    vector_model: str | None
    skipped: list[Skipped]
    bytes: int
    templates: int = 0  # template notes nobody has written in yet: in no index until someone does
    # Notes in the editor's templates folders (Obsidian's, Templater's): in no index, `show` reads them.
    editor_templates: int = 0
    template_folders: list[str] = field(default_factory=list)
    vector_drafts: int = 0  # notes whose vectors are int8 drafts, still to refine to float32


@dataclass
class GitState(Record):
    branch: str = ""
    last_commit: str = ""
    uncommitted: int = 0
    remotes: list[str] = field(default_factory=list)
    ahead: int | None = None
    behind: int | None = None
    error: str | None = None


@dataclass
class StatusResult(Record):
    vault: str
    notes: int
    tiers: dict[str, int]
    categories: dict[str, int]
    index: IndexState
    embedder: str
    size_bytes: int
    git: GitState
    conflicts: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)  # symbolic links under memory/, left alone
    # tmem.yaml's values that reach outside the vault and wait for `tmem config approve`, as
    # "key: value" (JSON): not used on this machine.
    not_approved: list[str] = field(default_factory=list)
    nested_repos: list[str] = field(default_factory=list)  # folders with a .git: never committed
    submodules: list[str] = field(default_factory=list)  # those git tracks as submodules (pointers)
    private_tracked: list[str] = field(default_factory=list)  # .tmem/... that git tracks: foreign state
    # Notes whose frontmatter could not be read (malformed YAML, no closing ---), with why: indexed
    # as plain text, and not auto-committed by the daemon until a person fixes them.
    malformed: list[Skipped] = field(default_factory=list)


REMEMBER = Op(
    "remember", RememberRequest, RememberResult, runs="tiered_memory.app.notes:remember", writes=True
)
SHOW = Op("show", NoteRequest, NoteView, runs="tiered_memory.app.notes:show")
LIST = Op("list", ListRequest, NoteList, runs="tiered_memory.app.notes:list_notes")
FORGET = Op("forget", ForgetRequest, Forgotten, runs="tiered_memory.app.notes:forget", writes=True)
SAVE_EDIT = Op("save_edit", NoteRequest, Saved, runs="tiered_memory.app.notes:save_edit", writes=True)
READ = Op("read", ReadRequest, NoteText, runs="tiered_memory.app.notes:read")
UPDATE = Op("update", UpdateRequest, Updated, runs="tiered_memory.app.notes:update", writes=True)
RELATED = Op("related", RelatedRequest, RelatedResult, runs="tiered_memory.app.notes:related")
REINDEX = Op("reindex", ReindexRequest, ReindexResult, runs="tiered_memory.app.notes:reindex")
STATUS = Op("status", Empty, StatusResult, runs="tiered_memory.app.status:status")
