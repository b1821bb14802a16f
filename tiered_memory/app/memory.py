"""Memory operations shared by the CLI, the daemon and the MCP server.

`Memory` ties a Vault (files and git) to an Indexer (side indexes) and a Searcher. Each public
method is one user-level operation: it validates input, changes files through the vault, commits,
and brings the indexes up to date for the paths it touched.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any

from tiered_memory.errors import BadInput, NoteNotFound
from tiered_memory.index.catalog import NoteRow
from tiered_memory.index.indexer import Indexer, IndexReport
from tiered_memory.index.retrieve import Searcher, SearchRequest, SearchResult
from tiered_memory.model import note as notes
from tiered_memory.storage import access, locks, transaction
from tiered_memory.storage.transaction import Transaction
from tiered_memory.storage.vault import Vault

MAX_TITLE = 80
# Where `add` files a long-term note of each category (seed 001's long-term tree).
LONG_TERM_HOMES = {
    "decision": "long-term/decisions",
    "error": "long-term/knowledge_base/lessons",
    "pattern": "long-term/knowledge_base/patterns",
    "profile": "long-term/relationships",
    "preference": "long-term/knowledge_base/preferences",
}


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


def default_embedder_factory(vault: Vault) -> Callable[[], Any]:
    def build() -> Any:
        from tiered_memory.index.embeddings import make_embedder

        cfg = vault.config.embeddings
        return make_embedder(
            cfg.provider,
            model=cfg.model,
            base_url=cfg.base_url,
            api_key_env=cfg.api_key_env,
            dim=cfg.dimensions,
            batch_size=cfg.batch_size,
            precision=cfg.precision,
        )

    return build


class Memory:
    def __init__(
        self,
        vault: Vault,
        *,
        embedder_factory: Callable[[], Any] | None = None,
        now: Callable[[], datetime] = notes.now_utc,
        warn: Callable[[str], None] = lambda message: None,
    ) -> None:
        self.vault = vault
        self.now = now
        self.warn = warn
        factory = embedder_factory if embedder_factory is not None else default_embedder_factory(vault)
        self.indexer = Indexer(vault, factory, warn)
        self.searcher = Searcher(self.indexer, vault.config.search, now)

        self._local = threading.local()

    def close(self) -> None:
        self.indexer.close()

    # ---- the unit of work ---------------------------------------------------------------------
    @contextmanager
    def change(self, message: str) -> Iterator[Transaction]:
        """The only way an operation changes the vault: under the write lock, collect its writes,
        moves and removals, make exactly one commit with `message`, then reindex exactly the
        touched paths. An exception undoes every change. A change opened inside another one (an
        operation built from others) joins it: one lock, one commit, the outer message."""
        outer: Transaction | None = getattr(self._local, "tx", None)
        if outer is not None:
            yield outer
            return
        with locks.hold(self.vault.state_dir, "write", wait=self.vault.config.git.lock_wait_seconds):
            self.recover()
            tx = Transaction(self.vault, message, warn=self.warn)
            self._local.tx = tx
            try:
                yield tx
            except BaseException:
                self._local.tx = None
                restored = tx.rollback()
                if restored:
                    self.indexer.update_paths(restored, vectors=False)
                raise
            self._local.tx = None
            tx.commit()
            if tx.touched:
                self.indexer.update_paths(tx.touched, vectors=self.indexer.vectors_loaded)

    def recover(self) -> list[str]:
        """Undo what an interrupted unit of work left behind (call holding the write lock)."""
        restored = transaction.recover(self.vault, self.warn)
        if restored:
            self.indexer.update_paths(restored, vectors=False)
        return restored

    # ---- indexing -----------------------------------------------------------------------------
    def refresh(self, *, vectors: bool = False, full: bool = False, progress: Any = None) -> IndexReport:
        report = self.indexer.refresh(vectors=vectors, full=full, progress=progress)
        for warning in report.warnings:
            self.warn(warning)
        return report

    # ---- finding notes ------------------------------------------------------------------------
    def resolve(self, ref: str) -> str:
        """An id or a path (relative to the vault or to memory/) -> the note's vault-relative path."""
        ref = ref.strip()
        if not ref:
            raise BadInput("empty note id")
        if "/" in ref or "\\" in ref or ref.endswith(notes.NOTE_SUFFIXES) or ref.startswith("."):
            rel = self.vault.safe_rel(ref)
            if not self.vault.abspath(rel).is_file():
                raise NoteNotFound(f"no note at {rel}")
            return rel
        self.refresh()
        found = self.indexer.catalog.by_id(ref)
        if not found:
            raise NoteNotFound(f"no note with id '{ref}'")
        if len(found) > 1:
            paths = ", ".join(sorted(r.path for r in found))
            raise BadInput(f"id '{ref}' is used by several notes ({paths}); give a path instead")
        return found[0].path

    def get(self, ref: str) -> notes.Note:
        return self.vault.read_note(self.resolve(ref))

    def list_notes(
        self,
        *,
        tiers: list[str] | None = None,
        categories: list[str] | None = None,
        tags: list[str] | None = None,
        projects: list[str] | None = None,
        entities: list[str] | None = None,
        statuses: list[str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[NoteRow]:
        self.refresh()
        request = SearchRequest(
            query="*",
            tiers=tiers or [],
            categories=categories or [],
            tags=tags or [],
            projects=projects or [],
            entities=entities or [],
            statuses=statuses or [],
            since=since,
            until=until,
            include_superseded=True,
        )
        rows = [r for r in self.indexer.catalog.rows().values() if Searcher._keep(r, request)]
        order = {t: i for i, t in enumerate(notes.TIERS)}
        return sorted(rows, key=lambda r: (order.get(r.tier, 9), -r.updated, r.path))

    # ---- search -------------------------------------------------------------------------------
    def search(self, request: SearchRequest, *, record_access: bool = True) -> SearchResult:
        self.refresh(vectors=request.mode != "keyword")
        result = self.searcher.search(request, access.counts(self.vault.root))
        if record_access and result.hits:
            access.record(self.vault.root, [h.id for h in result.hits], self.now())
        return result

    # ---- changing notes -----------------------------------------------------------------------
    def add(self, new: NewNote) -> notes.Note:
        note = self._prepare(new)
        with self.change(f"remember: {note.title} [{_tier_dir(note.tier or '')}/{note.category}]") as tx:
            tx.create_note(note)
        return self.vault.read_note(note.path)

    def add_many(self, items: list[NewNote], message: str) -> list[notes.Note]:
        """Write many notes and commit them together (transcript ingest, imports)."""
        prepared: list[notes.Note] = []
        with self.change(message) as tx:
            for new in items:
                note = self._prepare(new)
                tx.create_note(note)
                prepared.append(note)
        return prepared

    def _prepare(self, new: NewNote) -> notes.Note:
        """Validate and redact a new note and choose its file; nothing is written yet."""
        text = new.text
        if not text.strip():
            raise BadInput("nothing to remember: the text is empty")
        limit = int(self.vault.config.index.max_file_mb * 1024 * 1024)
        if len(text.encode("utf-8")) > limit:
            raise BadInput(
                f"text is larger than index.max_file_mb ({self.vault.config.index.max_file_mb} MB)"
            )
        if "\x00" in text:
            raise BadInput("text contains NUL bytes: binary data is not a note")
        text = self.redact(text)
        category = (new.category or "note").lower()
        if category not in notes.CATEGORIES:
            raise BadInput(f"unknown category '{category}' (one of: {', '.join(notes.CATEGORIES)})")
        tier = _tier_name(new.tier or ("mid" if new.project else "long"))
        title = self.redact((new.title or _first_line(text))[:MAX_TITLE].strip()) or "untitled"
        now = new.when or self.now()
        note_id = new.id or notes.new_id(title)
        meta: dict[str, Any] = {"id": note_id, "title": title, "category": category}
        if new.tags:
            meta["tags"] = list(dict.fromkeys(t.strip().lstrip("#") for t in new.tags if t.strip()))
        if new.project:
            meta["project"] = _safe_name(new.project, "project")
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
            rel = f"{notes.MEMORY_DIR}/{self.vault.safe_rel(new.folder).split('/', 1)[1]}/{note_id}.md"
            if notes.tier_of_path(rel) is None:
                raise BadInput(f"folder '{new.folder}' is not inside a tier folder")
        else:
            rel = self._home(tier, category, meta.get("project"), note_id, title, now)
        return notes.Note(path=rel, meta=meta, body=body, has_frontmatter=True)

    def _home(self, tier: str, category: str, project: Any, note_id: str, title: str, now: datetime) -> str:
        root = notes.MEMORY_DIR
        if tier == "long":
            folder = LONG_TERM_HOMES.get(category, "long-term/knowledge_base/domains")
            if category == "decision":
                return f"{root}/{folder}/{now:%Y-%m-%d}_{notes.slugify(title, 40)}.md"
            return f"{root}/{folder}/{note_id}.md"
        if tier == "mid" and project:
            return f"{root}/mid-term/projects/{project}/{note_id}.md"
        return f"{root}/{_tier_dir(tier)}/{note_id}.md"

    def redact(self, text: str) -> str:
        privacy = self.vault.config.privacy
        if not privacy.redact:
            return text
        try:
            from tiered_memory.model.redact import redact
        except ImportError:  # pragma: no cover - redact ships with the package
            return text
        cleaned, found = redact(text, privacy.sensitive_keywords)
        if found:
            kinds = ", ".join(sorted({m.kind for m in found}))
            self.warn(f"redacted {len(found)} secret(s) before writing: {kinds}")
        return cleaned

    def forget(self, ref: str, reason: str | None = None) -> notes.Note:
        rel = self.resolve(ref)
        note = self.vault.read_note(rel)
        why = f" ({reason})" if reason else ""
        with self.change(f"forget: {note.title} [{_tier_dir(note.tier or '')}]{why}") as tx:
            tx.remove_all([rel], reason=f"forgetting {note.title}")
        return note

    def after_edit(self, rel: str) -> str | None:
        """Reindex and commit a note a person just edited. Returns the commit sha, if any."""
        title = self.vault.read_note(rel).title if self.vault.abspath(rel).exists() else rel
        with self.change(f"edit: {title}") as tx:
            tx.include([rel])
        return tx.sha


def _first_line(text: str) -> str:
    for line in text.splitlines():
        stripped = line.strip().lstrip("#").strip()
        if stripped:
            return stripped
    return "untitled"


def _tier_name(value: str) -> str:
    value = value.strip().lower().removesuffix("-term")
    if value not in notes.TIER_DIRS:
        raise BadInput(f"unknown tier '{value}' (one of: short, mid, long, archive)")
    return value


def _tier_dir(tier: str) -> str:
    return notes.TIER_DIRS.get(tier, tier)


def _safe_name(value: str, what: str) -> str:
    """Project ids and similar become folder names: no path characters allowed."""
    value = value.strip()
    if not value or value in (".", "..") or any(c in value for c in "/\\\x00") or value.startswith("."):
        raise BadInput(f"invalid {what} id '{value}': use letters, digits, '-' or '_' (no path characters)")
    return PurePosixPath(value).name
