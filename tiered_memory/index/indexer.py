"""The only writer of the side indexes: catalog, Whoosh full text and hnswlib vectors under .tmem/.

`refresh()` compares the files under memory/ with the catalog (mtime and size first, then a content
hash) and touches only new, changed and deleted notes; `update_paths()` does the same for a list
of paths a watcher or a git diff named. Keyword indexing never loads the embedding model: vectors
are brought up to date separately, by whichever command first needs them.
"""

from __future__ import annotations

__all__ = [
    "DRAFT_BACKLOG",
    "EDITOR_TEMPLATE",
    "EMBEDDED_FORM",
    "EMBED_FORM",
    "FIRST_BOUNDED_BATCH",
    "FLUSH_EVERY",
    "FOLDER_RULES",
    "ID_RULE",
    "ID_RULE_KEY",
    "INDEX_FORMAT",
    "INLINE_VECTORS",
    "IndexReport",
    "Indexer",
    "LAST_COMMIT",
    "MAX_SPEAKER",
    "MIN_BOUNDED_SECONDS",
    "NOT_UTF8",
    "Progress",
    "READ_EVERY",
    "REBUILD_SHARE",
    "REFINING",
    "TOO_LARGE",
    "UNTOUCHED_TEMPLATE",
    "VECTORS_CURRENT",
    "VectorMarks",
    "YIELDING_BATCH_SECONDS",
    "content_hash",
    "embed_text",
    "fts_doc",
    "index_dir_size",
    "note_to_row",
    "snippet",
    "template_hashes",
]

import contextlib
import fcntl
import functools
import hashlib
import os
import re
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISREG
from typing import IO, TYPE_CHECKING

from tiered_memory.errors import EmbedderUnavailable, NoteParseError, TmemError
from tiered_memory.index import attachments, authors, indexed_privacy, scan_ahead, scan_mark
from tiered_memory.index.catalog import Catalog, NoteRow
from tiered_memory.index.fts import FtsDoc, FtsIndex
from tiered_memory.index.reader import IndexReader
from tiered_memory.index.settled_ids import SettledIds
from tiered_memory.model import note as notes
from tiered_memory.model import obsidian
from tiered_memory.model.folders import FolderRules
from tiered_memory.model.note_dates import note_dates
from tiered_memory.storage import editor_templates, locks, sealing, walk
from tiered_memory.storage.vault import ENCRYPTED, FileInfo, Vault, template_dir

if TYPE_CHECKING:
    # What writes the indexes and embeds loads on first use: a search in a fresh process finds the
    # vault unchanged far more often than not, and then needs none of it.
    import numpy as np

    from tiered_memory.index import fts_writer
    from tiered_memory.index.cjk_vectors import CjkVectors
    from tiered_memory.index.embeddings import Embedder
    from tiered_memory.index.graph import GraphEntry, LinkGraph
    from tiered_memory.index.identity import Identity, Move
    from tiered_memory.index.multilingual import MultilingualSource
    from tiered_memory.index.scan_ahead import Ahead
    from tiered_memory.index.vectors import VectorIndex
    from tiered_memory.index.written import ContentTimes

Progress = Callable[[str, int, int], None]  # (phase, done, total)
INDEX_FORMAT = "2"
FOLDER_RULES = "folder_rules"  # catalog meta: the `folders:` rules the catalog's notes were chosen by
NOT_UTF8 = "not_utf8"  # catalog meta: the names left out for their bytes, already warned about
VECTORS_CURRENT = "vectors_current"  # catalog meta: the embedder settings of the last complete vector pass
# catalog meta: the embedder settings when the deeper passages of every long note were embedded too
PASSAGES_CURRENT = "passages_current"
# catalog meta: the form of text (`embed_text`) the index's vectors were embedded from. Raise
# The rule that makes a note's default id from its path (`notes.default_id`): "2" keeps letters
# of every script. A catalog made under an earlier rule keeps its notes' ids (keep_ids_of_the_old_rule).
ID_RULE, ID_RULE_KEY = "2", "id_rule"
# EMBED_FORM whenever `embed_text` changes what it makes of some notes, and teach `_older_form`
# which ones: an index built by an older form embeds those again, a slice at a time like any
# backlog, and keeps every other note's vectors. (Form "2" leaves out what Obsidian draws: query
# blocks, Templater commands, HTML tags; form "3" also the base64 payload of data URIs; an index
# from before form "2" records no form.)
EMBED_FORM = "3"
EMBEDDED_FORM = "embed_form"
# Seconds of model time between two progress reports of a build: a bar that moves at least every
# second, in steps small enough not to cost throughput (a step is still ~10 texts at 20 texts/s).
PROGRESS_SECONDS = 0.5
FLUSH_EVERY = 5000  # notes written to the full text and then the catalog, per commit
LAST_COMMIT = 1000  # notes in a large batch's last full-text commit
FIRST_BOUNDED_BATCH = 8  # notes in a bounded pass's first batch, before any speed is known
# Every vector index a build makes or once made here: MiniLM's, the multilingual side's
# (index.cjk_vectors.DIRECTORY and EVERY_NOTE_DIRECTORY) and that side's former folder.
_VECTOR_DIRECTORIES = ("vectors", "vectors-multilingual", "vectors-multilingual-all", "vectors-cjk")
MIN_BOUNDED_SECONDS = 0.5  # a bounded pass whose time is up still embeds one batch this long
# Seconds of embedding per batch of a pass that gives way to queries (`yield_to`): what a query
# arriving meanwhile waits at most. Shorter batches cost little: a batch is at least one note.
YIELDING_BATCH_SECONDS = 0.15
MAX_SPEAKER = 200  # characters of a turn's `speaker:` kept in the catalog (a name, not a text)
INLINE_VECTORS = 32  # notes an update embeds before it returns; more are left to the background
# Notes waiting for vectors past which a batch is drafted (int8, where the embedder offers it:
# embeddings.draft_embedding) and refined to float32 once nothing else waits: one full batch of a
# build. An update (at most INLINE_VECTORS notes) is never a backlog.
DRAFT_BACKLOG = 128
DRAFTS = " (int8 drafts)"  # what a pass's progress phase adds while it drafts
REFINING = "refining draft vectors to float32"  # the progress phase of the refinement
# Share of the vector index's notes a refinement replaced past which its graph is built afresh
# at the refinement's end (VectorIndex.rebuild): a few replaced notes cost the graph nothing.
REBUILD_SHARE = 0.25
READ_EVERY = 500  # notes read per step (a writer process indexes one step while this one reads the next)
# Why a catalog row of a template note is in no index (see `template_hashes`).
UNTOUCHED_TEMPLATE = "a template nobody has written in yet"
# Why a note in the editor's templates folder (storage.editor_templates) is in no index.
EDITOR_TEMPLATE = "a template of the editor (its templates folder)"
# How the reason a file too large to index is skipped begins (see `_too_large`).
TOO_LARGE = "larger than index.max_file_mb"


@dataclass
class IndexReport:
    added: int = 0
    changed: int = 0
    deleted: int = 0
    unchanged: int = 0
    embedded: int = 0
    rebuilt: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    moved: list[Move] = field(default_factory=list)  # hand-written notes that kept their id across a move
    vectors: str = "skipped"  # "ok", "skipped" or why they could not be built
    pending_vectors: int = (
        -1
    )  # notes still without a current vector after a budgeted embedding (-1: not asked)
    tried: set[str] = field(default_factory=set, repr=False)  # notes an embedding run has read
    deepened: int = 0  # long notes whose deeper passages this run embedded
    deep_pending: int = 0  # long notes whose deeper passages still wait (a later pass embeds them)
    deep_tried: set[str] = field(default_factory=set, repr=False)  # notes a run has deepened
    drafted: int = 0  # notes whose vectors (first or deeper passages) this run embedded as int8 drafts
    refined: int = 0  # draft notes this run embedded again in float32
    drafts: int = 0  # notes whose vectors are drafts still to refine, after the run
    refine_total: int = 0  # draft notes the refinement counts against (progress)
    refine_tried: set[str] = field(default_factory=set, repr=False)  # notes a run has refined

    @property
    def touched(self) -> int:
        return self.added + self.changed + self.deleted


def content_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def fts_doc(note: notes.Note, row: NoteRow) -> FtsDoc:
    """The full-text document of a note, from the note and its catalog row. A first heading that
    is not the note's title (a file named `Callouts.md` that opens with `# Change the title`) is
    searched as an alias is. So is the file's name when a `title:` key says otherwise, outside the
    tier folders: it is the name the person's vault knows the note by, the one its `[[links]]`
    use (`[[verificar-que-un-test-falla]]` for a note titled "un test nuevo no vale...")."""
    aliases = tuple(row.aliases)
    names = [note.heading]
    if notes.tier_of_path(row.path) is None and not row.path.endswith(".json"):
        names.append(Path(row.path).stem)
    for name in names:
        if name and name.casefold() not in {n.casefold() for n in (row.title, *aliases)}:
            aliases += (name,)
    return FtsDoc(
        path=row.path,
        id=row.id,
        title=row.title,
        body=obsidian.without_inline_data(note.text),
        tags=row.tags,
        entities=row.entities,
        aliases=aliases,
        project=row.project,
        tier=row.tier,
        category=row.category,
        status=row.status,
        session=row.session,
        updated=row.updated,
    )


@functools.cache
def template_hashes() -> frozenset[str]:
    """Content hashes of the vault template's notes as `init` writes them. A note still holding
    one has nothing of its own: its boilerplate words and vectors would match any query a little,
    so it is kept out of every index until a person writes in it."""
    found: set[str] = set()
    for path in template_dir().rglob("*"):
        if path.is_file() and path.suffix in (".md", ".json"):
            with contextlib.suppress(OSError, UnicodeDecodeError):
                found.add(content_hash(path.read_text(encoding="utf-8")))
    return frozenset(found)


def note_to_row(
    note: notes.Note, size: int, digest: str, *, committed: float | None = None, tier: str | None = None
) -> NoteRow:
    """The catalog row of a note. `committed`: when its current content was first committed (see
    model.dates); `tier`: the tier its folder maps to (model.folders), else its tier folder's."""
    created, updated = note_dates(note, committed)
    return NoteRow(
        path=note.path,
        id=note.id,
        title=note.title,
        tier=tier if tier is not None else note.tier or "",
        category=note.category,
        status=note.status,
        project=note.project,
        session=str(note.meta.get("session") or ""),
        seq=_int(note.meta.get("seq")),
        tags=note.all_tags,
        entities=note.entities,
        aliases=note.aliases,
        importance=note.importance,
        confidence=note.confidence,
        access_count=note.access_count,
        created=created.timestamp() if created else 0.0,
        updated=updated.timestamp() if updated else 0.0,
        superseded_by=note.superseded_by,
        sensitive=note.sensitive,
        snippet=snippet(_without_title_heading(note.text, note.title)),
        mtime=note.mtime or 0.0,
        size=size,
        hash=digest,
        warning=note.parse_warning or "",
        speaker=_name(note.meta.get("speaker")),
    )


def _name(value: object) -> str:
    """A frontmatter value that names someone: a string or a number as written, else "" (a list
    or a mapping names nobody)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return ""
    return " ".join(str(value).split())[:MAX_SPEAKER]


def _int(value: object) -> int:
    try:
        return int(value)  # type: ignore[call-overload,no-any-return]
    except (TypeError, ValueError, OverflowError):
        return 0


# What a snippet leaves out: comments (`_without_comments`), heading marks, emphasis, quote marks,
# and embedded images (`![alt](url)`, Obsidian's `![[name.png]]`): a note opening with a picture
# shows its first words. An underscore is emphasis only at a word's edge; inside one (`a_b_c.png`,
# `snake_case`) it stays. Every part is matched in time linear in the note, whatever it holds (a
# pulled note of a run of `_`, `![` or `![[` took minutes per snippet): a run of underscores is
# looked at from its start only, and an embed's name, alt text or address holds no bracket.
_MARKUP = re.compile(
    r"!\[\[[^\[\]\n]*\]\]|!\[[^\[\]\n]*\]\([^()\n]*\)|^#{1,6}\s+|[*`>]|(?<!\w)_+|(?<!_)_+(?!\w)",
    re.MULTILINE,
)
_COMMENT_OPEN, _COMMENT_CLOSE = "<!--", "-->"


def _without_comments(text: str) -> str:
    """`text` without its HTML comments; one left open stays (it ends nothing). Found with `find`,
    not a pattern: one open comment after another, each tried to the end of the note, is quadratic."""
    kept: list[str] = []
    at = 0
    while (start := text.find(_COMMENT_OPEN, at)) >= 0:
        end = text.find(_COMMENT_CLOSE, start + len(_COMMENT_OPEN))
        if end < 0:
            break
        kept.append(text[at:start])
        at = end + len(_COMMENT_CLOSE)
    kept.append(text[at:])
    return "".join(kept)


def _without_title_heading(text: str, title: str) -> str:
    """Results show the title already; a body opening with the same heading would repeat it."""
    head, _, rest = text.lstrip("\ufeff").lstrip().partition("\n")  # a BOM opens some editors' files
    return rest if head.lstrip("#").strip() == title.strip() else text


def snippet(text: str, length: int = 220) -> str:
    flat = " ".join(_MARKUP.sub("", _without_comments(text)).split())
    return flat if len(flat) <= length else flat[: length - 1].rsplit(" ", 1)[0] + "…"


def embed_text(note: notes.Note) -> str:
    """What the vector index embeds: the title gives short notes their subject; query blocks,
    Templater commands, HTML tags and the payload of pasted data URIs, which a reader never sees
    as words, are left out."""
    body = obsidian.shown_text(obsidian.without_inline_data(note.text)).strip()
    title = note.title.strip()
    return body if not title or body.startswith(("# " + title, title)) else f"{title}\n{body}"


class Indexer:
    def __init__(
        self,
        vault: Vault,
        embedder_factory: Callable[[], Embedder] | None = None,
        warn: Callable[[str], None] = lambda message: None,
        embedder_settings: str | None = None,
        ahead: Ahead | None = None,
        multilingual: MultilingualSource | None = None,
    ) -> None:
        """`embedder_settings`: a string that changes whenever the factory's model would (its
        config); with it, a vault whose vectors are current is known to be so without loading the
        model. None (a factory of unknown make) means: load it and look. `ahead`: a look at the
        disk already under way (index.scan_ahead): the first refresh's scan without the lock takes
        it; a rebuild, an update of given paths or close() before that stops it. `multilingual`:
        the model notes not in English are also embedded with (index.cjk_vectors), None for MiniLM alone."""
        self.vault = vault
        self._ahead = ahead
        self.clock: Callable[[], float] = time.monotonic  # what progress steps are timed by
        self._texts_per_second: float | None = None  # the model's speed, for progress steps
        if embedder_settings is not None and multilingual is not None:
            embedder_settings += f"|{multilingual.name}"  # installing it makes the vectors not current
        if embedder_settings is not None:  # vectors of an older text form are not current either
            embedder_settings += f"|form {EMBED_FORM}"
        self.embedder_settings = embedder_settings
        self._multilingual = multilingual
        self._cjk: CjkVectors | None = None
        self.dir = vault.state_dir
        self._embedder_factory = embedder_factory
        self._embedder: Embedder | None = None
        self.embedder_error: str | None = None
        self.warn = warn
        self.catalog = Catalog(self.dir / "catalog.sqlite")
        self._mark_path = self.dir / scan_mark.FILE
        self.attachments = attachments.Attachments(self.catalog)
        self._fts: FtsIndex | None = None
        self._vectors: VectorIndex | None = None
        self._saved_at = time.monotonic()
        self._rules_seen: str | None = None  # folder rules to record once the scan they changed is applied
        # Notes a change of the privacy settings moved, found by that scan (index.indexed_privacy).
        self._privacy_moved: indexed_privacy.Moves | None = None
        self._read_again: frozenset[str] = frozenset()  # notes read even when their text is unchanged
        self._not_utf8: set[str] = set()  # names a scan left out (`_named`), reported once per refresh
        # Set when an update left notes without a vector (see INLINE_VECTORS); a daemon takes it as
        # the signal to embed in the background, and clears it.
        self.vectors_deferred = False
        self._notes_per_second: float | None = None  # embedding speed, measured batch by batch
        # Drafts embedded again in float32 (by refinement, or as an edit's own vectors) whose marks
        # go once the vector index is saved: path -> the hash the mark holds. Until then a kill
        # leaves the mark, which costs one more refinement, never a draft taken for float32.
        self._refined: dict[str, str] = {}
        self._refined_since_graph = 0  # notes refinement replaced since the graph was built afresh
        # A note the vault reads goes by the id the catalog settled on where default ids collide.
        vault.settled_id = self._given_id
        self._ids_kept = False

    def _given_id(self, rel: str) -> str | None:
        """The id a note without an `id:` key at `rel` goes by when not its default one: settled
        among notes whose default ids collide, else the one the old rule made, which the index
        keeps for a note it knew by it (`keep_ids_of_the_old_rule`). Read only."""
        settled = self.settled_ids.id_of(rel)
        if settled is not None or not walk.is_utf8(rel):
            return settled
        old = notes.legacy_id(rel)
        if notes.default_id(rel) == old:
            return None
        found = self.catalog.db.execute("SELECT id FROM notes WHERE path=? AND skipped=''", (rel,)).fetchone()
        held = str(found[0]) if found else ""
        return held if held == old or held.startswith(old + "-") else None

    def keep_ids_of_the_old_rule(self) -> None:
        """Notes this index knows by the id the old rule made from their names (Latin and CJK words
        only: `notes.legacy_id`) keep it: the rule now keeps letters of every script, and an id a
        note goes by never changes (an agent, a link, the recall counts name it). Pinned like an
        id a move kept (`identity`), once per catalog; a note first indexed now goes by the new
        rule. Only names with letters the old rule dropped differ, so this is a few rows at most."""
        if self._ids_kept:
            return
        self._ids_kept = True
        if self.catalog.get_meta(ID_RULE_KEY) == ID_RULE:
            return
        kept: dict[str, str] = {}
        for path, note_id in self.catalog.db.execute("SELECT path, id FROM notes WHERE skipped=''"):
            old = notes.legacy_id(path)
            if notes.default_id(path) != old and (note_id == old or note_id.startswith(old + "-")):
                kept[path] = note_id
        if kept:
            self.identity.pin(kept)
        self.catalog.set_meta(ID_RULE_KEY, ID_RULE)

    # ---- lazily opened parts --------------------------------------------------------------
    @functools.cached_property
    def graph(self) -> LinkGraph:
        from tiered_memory.index.graph import LinkGraph

        return LinkGraph(self.catalog)

    @functools.cached_property
    def settled_ids(self) -> SettledIds:
        return SettledIds(self.catalog)

    @functools.cached_property
    def identity(self) -> Identity:
        from tiered_memory.index.identity import Identity

        return Identity(self.catalog)

    @functools.cached_property
    def content_times(self) -> ContentTimes:
        from tiered_memory.index.written import ContentTimes

        return ContentTimes(self.catalog, self.vault.root)

    @property
    def folders(self) -> FolderRules:
        return self.vault.folders

    @property
    def fts(self) -> FtsIndex:
        if self._fts is None:
            self._fts = FtsIndex.open(self.dir / "fts")
        return self._fts

    def reader(self) -> IndexReader:
        """The read side of these indexes, for ranking (`index.retrieve.Searcher`)."""
        return IndexReader(
            catalog=self.catalog,
            attachments=self.attachments,
            texts=self.vault,
            fulltext=lambda: self.fts,
            vectors=self.vectors,
            embedder=self.embedder,
            embedder_error=lambda: self.embedder_error,
            cjk_vectors=self.cjk_vectors,
            graph=lambda: self.graph,
        )

    def is_note(self, rel: str) -> bool:
        """A file the indexes hold: the `folders:` rules (anywhere in the vault)."""
        return self.folders.is_note(rel)

    def embedder(self) -> Embedder | None:
        """The embedder, loaded once; None (with `embedder_error` set) when none can load."""
        if self._embedder is None and self.embedder_error is None:
            if self._embedder_factory is None:
                self.embedder_error = "no embedder configured"
            else:
                try:
                    self._embedder = self._embedder_factory()
                except EmbedderUnavailable as exc:
                    self.embedder_error = str(exc)
        return self._embedder

    def held_vectors(self) -> VectorIndex | None:
        """The vector index this indexer has open, if it has opened one (never opens it)."""
        return self._vectors

    def vectors(self) -> VectorIndex | None:
        if self._vectors is None:
            embedder = self.embedder()
            if embedder is None:
                return None
            from tiered_memory.index.vectors import VectorIndex

            self._vectors = VectorIndex.open(self.dir / "vectors", embedder.dim, embedder.model_id)
            self._vectors.on_saved.append(self._forget_refined)
            fresh = self._vectors.rebuilt or self._vectors.created
            if fresh or self.catalog.get_meta("vector_model") != embedder.model_id:
                self.catalog.reset_vectors()
                self.catalog.set_meta("vector_model", embedder.model_id)
                self.catalog.set_meta(EMBEDDED_FORM, EMBED_FORM)
            else:
                if (older := self.catalog.get_meta(EMBEDDED_FORM)) != EMBED_FORM:
                    self._reembed_older_form(older)
                if (cjk := self.cjk_vectors()) is not None and cjk.fresh:
                    self._reembed_cjk()
            if (cjk := self.cjk_vectors()) is not None:
                self._vectors.alongside.append(cjk.index)
            self._recover_unsaved_vectors()
        return self._vectors

    def cjk_vectors(self) -> CjkVectors | None:
        """The multilingual vectors of notes not in English, when a multilingual model is installed."""
        if self._cjk is None and self._multilingual is not None:
            from tiered_memory.index import cjk_vectors

            every = self._multilingual.every_note
            folders = (cjk_vectors.DIRECTORY, cjk_vectors.EVERY_NOTE_DIRECTORY)
            used = folders[every]
            for name in (cjk_vectors.FORMER_DIRECTORY, folders[not every]):
                former = self.dir / name
                if former.is_dir() and not former.is_symlink():  # derived: the one used replaces it
                    shutil.rmtree(former, ignore_errors=True)
            self._cjk = cjk_vectors.CjkVectors(self.dir / used, self._multilingual)
        return self._cjk

    def _reembed_cjk(self) -> None:
        """A multilingual index started afresh beside current MiniLM vectors (the model was just
        installed, or its files were damaged): the notes that look in need of it by their catalog
        row (title and snippet) are embedded again, not the whole vault."""
        from tiered_memory.index.cjk_vectors import needs_multilingual

        rows = self.catalog.rows()
        every = self._multilingual is not None and self._multilingual.every_note
        self.catalog.set_vec_hash(
            [(p, "") for p, r in rows.items() if every or needs_multilingual(f"{r.title}\n{r.snippet}")]
        )

    def _reembed_older_form(self, older: str | None) -> None:
        """Vectors embedded from an older form of `embed_text`: the notes that form embedded
        differently are marked to be embedded again (their old vectors answer searches until
        then), the others keep theirs. Each note is read once, when the index is first opened."""
        stale = [rel for rel in self.catalog.rows() if self._older_form(rel, older)]
        self.catalog.set_vec_hash([(rel, "") for rel in stale])
        self.catalog.set_meta(EMBEDDED_FORM, EMBED_FORM)

    def _older_form(self, rel: str, older: str | None) -> bool:
        """Whether form `older` ("2", else "1": the note's whole text) embedded this note
        otherwise than today's."""
        try:
            text = self.vault.read_note(rel).text
        except (TmemError, OSError):
            return False  # unreadable now: embedded again anyway once it is read
        if older == "2":
            return obsidian.without_inline_data(text) != text
        return obsidian.shown_text(obsidian.without_inline_data(text)).strip() != text.strip()

    def _recover_unsaved_vectors(self) -> None:
        """Notes a daemon embedded but was killed before saving (it lists them first) get embedded again."""
        marker = self.dir / "vectors.unsaved"
        if not marker.exists() or locks.daemon_holder(self.dir) is not None:
            return  # a live daemon owns the list (in the daemon itself too: it holds the lock)
        paths = {line for line in marker.read_text(encoding="utf-8").splitlines() if line}
        self.catalog.set_vec_hash([(p, "") for p in sorted(paths)])
        marker.unlink(missing_ok=True)

    def _forget_refined(self) -> None:
        """The vector index was saved: the marks of drafts it now holds in float32 go."""
        if self._refined:
            self.catalog.clear_drafts(self._refined.items())
            self._refined = {}

    def drafts_waiting(self) -> int:
        """Notes whose vectors are int8 drafts still to refine (none refined but not yet saved)."""
        if not self._refined:
            return self.catalog.count_drafts()
        return len(self.catalog.refinable().keys() - self._refined.keys())

    @property
    def vectors_loaded(self) -> bool:
        """Whether this process has the vector index open (then changes keep it current too)."""
        return self._vectors is not None

    def close(self) -> None:
        if self._ahead is not None:  # no scan took it
            self._ahead.cancel()
            self._ahead = None
        if self._fts is not None:
            self._fts.close()
        self.catalog.close()

    def compact_fulltext(self, force: bool = False) -> bool:
        """Purge replaced and deleted notes from the full-text index once edits have fragmented it
        (see FtsIndex.fragmentation); True when it ran. Searches go on meanwhile."""
        if not force and not self.fts.needs_compaction():
            return False
        with self.locked():
            self.fts.compact()
        return True

    @contextlib.contextmanager
    def locked(self) -> Iterator[IO[str]]:
        """One writer at a time across processes (a CLI command and the daemon)."""
        with open(self.dir / "index.lock", "a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield handle
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def refresh_authors(self) -> None:
        """Who wrote each note, from the commits made since the last look (`index.authors`)."""
        with self.locked():
            authors.refresh(self.catalog, self.vault.git)

    # ---- keyword side: catalog + full text --------------------------------------------------
    def refresh(
        self,
        *,
        vectors: bool = False,
        full: bool = False,
        progress: Progress | None = None,
        budget: float | None = None,
    ) -> IndexReport:
        """Keyword side first (catalog and full text), then, with `vectors`, the pending vectors.

        The keyword side is searchable as soon as its lock is released: embedding runs after it, one
        batch per lock hold, so searches and edits of other processes go on meanwhile. `budget`
        (seconds) bounds the embedding; what it leaves stays pending (`report.pending_vectors`)."""
        report = IndexReport()
        # A look at the disk started before the application loaded serves this process's first
        # refresh only, and only its scan without the lock: it shows the files as of the start.
        ahead = self._take_ahead()
        try:
            # A scan without the lock first: when nothing changed (every search asks) no writer waits.
            work = full or self._needs_rebuild()
            unchanged = 0
            if not work:
                todo, deleted, _known, unchanged, attached = self._scan(ahead)
                work = bool(todo or deleted or attached[0] or attached[1] or self._rules_seen is not None)
        finally:
            if ahead is not None:
                ahead.cancel()  # not taken (a rebuild looks again, under the lock), or done with
        if work:
            with self.locked():
                self.keep_ids_of_the_old_rule()  # before a rebuild wipes the rows that say them
                if full or self._needs_rebuild():
                    report.rebuilt.append("full text")
                    self._wipe_keyword_side()
                todo, deleted, known, unchanged, attached = self._scan(split=False)
                report.unchanged = unchanged
                self._apply(todo, deleted, known, report, progress, fresh=bool(report.rebuilt))
                self._apply_attachments(*attached)
                self.catalog.set_meta("format", INDEX_FORMAT)
                if self._rules_seen is not None:
                    self._privacy_moves(report)
                    self.catalog.set_meta(FOLDER_RULES, self._rules_seen)
                    self._rules_seen = None
            if vectors and progress and report.touched:
                progress("keyword search ready", report.touched, report.touched)
        else:
            report.unchanged = unchanged  # files not read again: indexed notes and skipped ones alike
        if self._not_utf8:
            report.warnings += self._not_utf8_news()
        if vectors:
            # A full pass (`tmem reindex`) embeds long notes' deeper passages too, then refines
            # drafts unless it drafted some itself (it ends once every note is searchable; the
            # daemon or the next full pass refines them); a search's bounded pass leaves both.
            full_pass = budget is None
            self._embed_pending(report, progress, budget, deep=full_pass)
            if full_pass and not report.drafted and report.vectors == "ok":
                self._embed_pending(report, progress, None, deep=True, refine=True)
        return report

    def _take_ahead(self) -> Ahead | None:
        ahead, self._ahead = self._ahead, None
        return ahead

    def _scan(
        self, ahead: Ahead | None = None, *, split: bool = True
    ) -> tuple[
        list[FileInfo],
        list[str],
        dict[str, tuple[float, int, str]],
        int,
        tuple[dict[str, attachments.Stat], list[str]],
    ]:
        """(new or changed notes, deleted paths, the catalog's stats, unchanged count, (new or
        changed attachments, removed ones)): one stat per file, compared with the catalog's mtime
        and size. This runs before every search in a CLI process, so the per-file work is one stat
        and one dict lookup; the folder rules are applied to the files that differ only. `ahead`:
        a look at the disk already under way (index.scan_ahead), taken instead of one here; without
        one, and with `split`, a large vault is looked at by forked children, one per part. Not for
        a scan whose findings are applied: a file renamed between the two children's listings is
        seen under both names or neither, which a scan that only decides whether there is work
        reads as a change like any other."""
        self._read_again, self._privacy_moved = frozenset(), None  # this scan's findings alone
        templates = editor_templates.folders(self.vault.root)
        config = self.vault.config
        rules = scan_mark.folder_rules(config.folders, templates, config.index, config.privacy)
        mark = scan_mark.read(self._mark_path)
        own = None
        if split and ahead is None and mark is not None and mark.rows >= scan_ahead.SPLIT_ROWS:
            ahead = own = scan_ahead.start_parts(self.vault.root, self.folders, rules)  # two at once
        try:
            seen = self._look(ahead, rules, mark)
        finally:
            if own is not None:
                own.cancel()
        if seen is None:
            return [], [], {}, mark.rows if mark is not None else 0, ({}, [])  # the digest was all it took
        on_disk, attached_now, digest = seen
        generation = self.catalog.generation()  # read before the rows: a change after it voids the mark
        changed, removed = self.attachments.changes(attached_now)
        attached = ({p: st for p, st in changed.items() if self._named(p)}, removed)
        known = self.catalog.stats()
        deleted = [p for p in known if p not in on_disk]
        todo = [
            FileInfo(p, mtime, size)
            for p, (mtime, size) in on_disk.items()
            if ((k := known.get(p)) is None or k[0] != mtime or k[1] != size)
            and self.is_note(p)
            and self._named(p)
        ]
        if self.catalog.get_meta(FOLDER_RULES) != rules:  # notes the new rules leave out go
            deleted += [p for p in known if p in on_disk and not self.is_note(p)]
            # Notes that entered or left the editor's templates folder are read again, and so
            # are those on either side of a new size limit (only they: nothing else is embedded
            # again).
            again = {p for p in known if editor_templates.within(p, templates)}
            limit = _limit_bytes(config.index.max_file_mb)
            again.update(p for p, (_m, size, digest) in known.items() if digest and size > limit)
            again.update(
                p for p, why in self.catalog.skipped() if why == EDITOR_TEMPLATE or why.startswith(TOO_LARGE)
            )
            # And those on either side of a new sealed or excluded folder (index.indexed_privacy).
            moved = indexed_privacy.moves(
                indexed_privacy.recorded(self.catalog.get_meta(FOLDER_RULES)),
                config.privacy,
                (p for p in known if p in on_disk),
            )
            again.update(moved.sealed + moved.unsealed)
            self._privacy_moved = moved
            self._read_again = frozenset(moved.sealed)  # unchanged, yet out of the indexes now
            listed = {f.path for f in todo}
            todo += [
                FileInfo(p, *on_disk[p])
                for p in sorted(again)
                if p in on_disk and p not in listed and self.is_note(p) and self._named(p)
            ]
            self._rules_seen = rules
        elif not (todo or deleted or attached[0] or attached[1]):
            scan_mark.write(self._mark_path, scan_mark.Mark(digest, generation, len(known)))
        unchanged = len(known) - len(deleted) - sum(1 for f in todo if f.path in known)
        return todo, deleted, known, unchanged, attached

    def differing(self) -> tuple[list[str], list[str]]:
        """(note paths, attachment paths) whose file differs from the catalog by mtime or size:
        new, changed or deleted since they were indexed. The change detection of `refresh`, one
        stat per file, without applying anything (for `update_paths`: a daemon's last look before
        it stops, which also queues what it finds for a commit). A change of the folder rules is
        left to the next refresh, which rescans under them."""
        templates = editor_templates.folders(self.vault.root)
        config = self.vault.config
        rules = scan_mark.folder_rules(config.folders, templates, config.index, config.privacy)
        seen = self._look(None, rules, scan_mark.read(self._mark_path))
        if seen is None:
            return [], []  # as the last scan that found the indexes current saw it
        on_disk, attached_now, _digest = seen
        known = self.catalog.stats()
        notes_found = [p for p in known if p not in on_disk]
        notes_found += [
            p
            for p, (mtime, size) in on_disk.items()
            if ((k := known.get(p)) is None or k[0] != mtime or k[1] != size)
            and self.is_note(p)
            and walk.is_utf8(p)
        ]
        changed, removed = self.attachments.changes(attached_now)
        return sorted(notes_found), sorted([*(p for p in changed if walk.is_utf8(p)), *removed])

    def _privacy_moves(self, report: IndexReport) -> None:
        """What a change of the sealed or excluded folders moved, now applied: the notes whose
        exclusion changed wait for the vector pass again (it drops or embeds them), and one line
        says each kind of move."""
        moved, self._privacy_moved = self._privacy_moved, None
        if moved is None:
            return
        indexed = self.catalog.stats(moved.kept_local + moved.sent)
        self.catalog.set_vec_hash((p, "") for p, (_m, _s, digest) in indexed.items() if digest)
        remote = self.vault.config.embeddings.provider == "openai"  # the one that makes an HttpEmbedder
        report.warnings += moved.lines(sealing.key_set_up(self.vault), remote)

    def _look(self, ahead: Ahead | None, rules: str, mark: scan_mark.Mark | None) -> scan_mark.Seen | None:
        """What is on disk now; None when its digest alone shows the last scan's `mark` still holds."""
        seen = None
        digest = ahead.digest() if ahead is not None else None
        if digest is None:
            seen = scan_mark.look(self.vault.root, self.folders, rules)
            digest = seen.digest
        if mark is not None and mark.digest == digest and mark.generation == self.catalog.generation():
            return None
        if seen is None and ahead is not None:
            seen = ahead.seen()
        return seen if seen is not None else scan_mark.look(self.vault.root, self.folders, rules)

    def _apply_attachments(self, changed: dict[str, attachments.Stat], removed: list[str]) -> None:
        """Attachments are indexed by name only (index.attachments): nothing of them is read."""
        if removed:
            self.fts.delete(removed)
            self.attachments.forget(removed)
        if changed:
            tiers = {p: self.folders.tier_of(p) for p in changed}
            self.fts.upsert(attachments.doc(p, m, tiers[p]) for p, (m, _s) in changed.items())
            self.attachments.store({p: (m, s, tiers[p]) for p, (m, s) in changed.items()})

    def update_paths(
        self, paths: Iterable[str], *, vectors: bool = True, save_vectors: bool = True
    ) -> IndexReport:
        """Reindex just these vault-relative paths (created, changed, moved or deleted).

        `save_vectors=False` leaves changed vectors in memory: the daemon saves them every few
        seconds instead of after each edit (a save of a large vault is slow)."""
        if (ahead := self._take_ahead()) is not None:
            ahead.cancel()  # the files are read again here: a look from the start would be stale
        if self._needs_rebuild():
            return self.refresh(vectors=vectors)
        report = IndexReport()
        wanted = list(dict.fromkeys(paths))
        if not all(walk.is_utf8(p) for p in wanted):
            report.warnings += [_not_utf8_warning(walk.shown_name(p)) for p in wanted if not walk.is_utf8(p)]
            wanted = [p for p in wanted if walk.is_utf8(p)]
        with self.locked():
            known = self.catalog.stats(wanted)
            todo, deleted = [], []
            attached: dict[str, attachments.Stat] = {}
            gone: list[str] = []
            for rel in wanted:
                if self.folders.is_attachment(rel):
                    try:
                        stat = os.lstat(self.vault.abspath(rel))
                    except OSError:
                        gone.append(rel)
                        continue
                    if S_ISREG(stat.st_mode) and not self.vault.is_link(rel):
                        attached[rel] = (stat.st_mtime, stat.st_size)
                    continue
                if not self.is_note(rel):
                    continue
                try:
                    found = os.lstat(self.vault.abspath(rel))
                except OSError:
                    found = None
                # A link, a pipe or a device is no note (and a pipe's open could block): gone.
                if found is None or not S_ISREG(found.st_mode):
                    if rel in known:
                        deleted.append(rel)
                    continue
                todo.append(FileInfo(rel, found.st_mtime, found.st_size))
            self._apply(todo, deleted, known, report, None)
            if attached or gone:
                changed, _removed = self.attachments.changes(attached)
                known_attachments = self.attachments.stats()
                self._apply_attachments(changed, [p for p in gone if p in known_attachments])
            if vectors:
                self._refresh_vectors(report, None, save=save_vectors, only=wanted)
        return report

    def _needs_rebuild(self) -> bool:
        """A new or foreign catalog, or a full-text index found corrupt, means one full rebuild."""
        fts = self.fts
        missing = fts.created and self.catalog.count() > 0
        return (
            self.catalog.created or fts.rebuilt or missing or self.catalog.get_meta("format") != INDEX_FORMAT
        )

    def _wipe_keyword_side(self) -> None:
        self.catalog.clear()
        self.fts.clear()
        # Handled: later refreshes of this process are incremental again.
        self.catalog.created = False
        self.fts.rebuilt = False
        self.fts.created = False
        self.catalog.set_meta("format", INDEX_FORMAT)

    def _apply(
        self,
        todo: list[FileInfo],
        deleted: list[str],
        known: dict[str, tuple[float, int, str]],
        report: IndexReport,
        progress: Progress | None,
        fresh: bool = False,
    ) -> None:
        """`fresh`: the full text is empty (a rebuild), so documents are added without the
        per-document delete lookup an update costs."""
        self.keep_ids_of_the_old_rule()
        if deleted:
            self.catalog.set_meta(VECTORS_CURRENT, "")  # their vectors are now stale
            self.identity.forget(self.catalog.rows(deleted).values())
            self.fts.delete(deleted)
            self.catalog.delete(deleted)
            report.deleted += len(deleted)
            # Vectors of deleted notes are dropped by the next vector refresh, which compares the
            # vector index's paths with the catalog; keyword-only commands never open it.
        # Chunks bound memory and keep each Whoosh commit small enough not to spill to disk
        # (one 100k-note commit ran at a third of the speed of ten 10k ones).
        if todo:
            self.content_times.sync()
        from tiered_memory.index import fts_writer
        from tiered_memory.index.graph import GraphEntry

        templates = editor_templates.folders(self.vault.root) if todo else ()
        # A large batch is written by a second process while this one goes on reading notes.
        sink = fts_writer.open_sink(self.fts, new=fresh, expected=len(todo))
        try:
            rows_due: list[NoteRow] = []
            entries_due: list[GraphEntry] = []
            # Rows whose full text is being committed: written once that commit is done, while
            # the next notes are read (one commit in flight at a time).
            in_flight: tuple[list[NoteRow], list[GraphEntry]] | None = None
            tail_cut = len(todo) - LAST_COMMIT if len(todo) > FLUSH_EVERY else 0
            for start in range(0, len(todo), READ_EVERY):
                chunk = todo[start : start + READ_EVERY]
                rows, docs, touched, entries = self._read_chunk(chunk, known, report, templates)
                if touched:
                    self.catalog.touch(touched)
                skipped_paths = [r.path for r in rows if r.skipped]
                if skipped_paths:
                    sink.delete(skipped_paths)
                    # A note that became unreadable (or a template again) leaves no links or names.
                    entries += [GraphEntry(p, [], [], []) for p in skipped_paths]
                sink.add(docs)
                rows_due += rows
                entries_due += entries
                done = start + len(chunk)
                # A commit shortly before the end too: the last one, which nothing overlaps, is small.
                if len(rows_due) >= FLUSH_EVERY or done == len(todo) or start < tail_cut <= done:
                    sink.commit()
                    if in_flight is not None:
                        self._written(sink, *in_flight)
                    in_flight = (rows_due, entries_due)
                    rows_due, entries_due = [], []
                if progress:
                    progress("indexing", done, len(todo))
            if in_flight is not None:
                self._written(sink, *in_flight)
        finally:
            sink.close()
        if todo or deleted:
            added = {i.path for i in todo if i.path not in known}
            self.settled_ids.settle([i.path for i in todo] + deleted, added, self._has_own_id, time.time())

    def _has_own_id(self, rel: str) -> bool:
        """Whether the note at `rel` has an `id:` key (asked only where default ids collide)."""
        try:
            text = self.vault.read_text(rel, decrypt=False, other_names=False)
        except (TmemError, OSError, UnicodeDecodeError):
            return False
        return notes.parse(text, rel).meta.get("id") not in (None, "")

    def _written(self, sink: fts_writer.Sink, rows: list[NoteRow], entries: list[GraphEntry]) -> None:
        """The catalog and link rows of the oldest commit asked for, once the full text has it:
        the catalog never names a note the full text lacks."""
        sink.committed()
        if rows:
            self.catalog.upsert(rows)
        self.graph.replace(entries)

    def _read_chunk(
        self,
        chunk: list[FileInfo],
        known: dict[str, tuple[float, int, str]],
        report: IndexReport,
        templates: tuple[str, ...] = (),
    ) -> tuple[list[NoteRow], list[FtsDoc], list[tuple[str, float, int]], list[GraphEntry]]:
        """`templates`: the editor's template folders, whose notes are in no index (not read)."""
        from tiered_memory.index.graph import graph_entry
        from tiered_memory.model.note_dates import git_blob_ids

        limit = _limit_bytes(self.vault.config.index.max_file_mb)
        # Without a key set up here, nothing can be sealed: a note the rules would seal stays in
        # plain text on disk, and is indexed like any other.
        seals = sealing.key_set_up(self.vault)
        rows: list[NoteRow] = []
        touched: list[tuple[str, float, int]] = []
        read: list[tuple[notes.Note, FileInfo, str, bool, list[str]]] = []
        for info in chunk:
            previous = known.get(info.path)
            if editor_templates.within(info.path, templates):  # placeholders, not what was written
                rows.append(self._skip(info, EDITOR_TEMPLATE))
                continue
            if info.size > limit:
                rows.append(self._skip(info, _too_large(info.size, limit)))
                if previous is not None and previous[2]:  # it was in the indexes until now
                    report.warnings.append(f"dropped {info.path} from the indexes: {rows[-1].skipped}")
                else:
                    report.warnings.append(f"skipped {info.path}: {rows[-1].skipped}")
                continue
            try:
                # Plaintext never in .tmem/, nor a file with names outside the vault.
                text = self.vault.read_text(info.path, decrypt=False, other_names=False)
            except NoteParseError as exc:
                rows.append(self._skip(info, str(exc).split(": ", 1)[-1]))
                if not str(exc).endswith(ENCRYPTED):  # expected: not a problem to report
                    report.warnings.append(f"skipped {exc}")
                continue
            digest = content_hash(text)
            if previous is not None and previous[2] == digest and info.path not in self._read_again:
                touched.append((info.path, info.mtime, info.size))
                report.unchanged += 1
                continue
            if digest in template_hashes():
                rows.append(self._skip(info, UNTOUCHED_TEMPLATE))
                continue
            note = notes.parse(text, info.path, mtime=info.mtime)
            if seals and sealing.by_rules(
                self.vault, note
            ):  # written by hand, sealed at its commit: not here
                rows.append(self._skip(info, ENCRYPTED))
                continue
            if note.parse_warning:
                report.warnings.append(f"{info.path}: {note.parse_warning}; indexed as plain text")
            read.append((note, info, digest, previous is None, git_blob_ids(text.encode("utf-8"))))
            if previous is None:
                report.added += 1
            else:
                report.changed += 1
        first = self.content_times.first_commit(b for *_, blobs in read for b in blobs)
        own_ids = [note.path for note, *_ in read if note.meta.get("id") in (None, "")]
        pinned = self.identity.pinned(own_ids)
        settled = self.settled_ids.ids_of(own_ids)  # as settled last time; checked again after the batch
        noted: list[tuple[notes.Note, NoteRow]] = []
        new_rows: list[NoteRow] = []
        for note, info, digest, is_new, blobs in read:
            committed = min((first[b] for b in blobs if b in first), default=None)
            row = note_to_row(
                note, info.size, digest, committed=committed, tier=self.folders.tier_of(info.path)
            )
            row.mtime = info.mtime
            if note.path in pinned:
                row.id = pinned[note.path]
            elif note.path in settled:
                row.id = settled[note.path]
            elif is_new and note.path in own_ids:
                new_rows.append(row)
            rows.append(row)
            noted.append((note, row))
        report.moved += self.identity.adopt(new_rows)
        docs = [fts_doc(note, row) for note, row in noted]
        entries = [graph_entry(note, row.title, row.aliases, row.tags) for note, row in noted]
        return rows, docs, touched, entries

    def _named(self, rel: str) -> bool:
        """Whether a path can be indexed by its name: one whose bytes are not UTF-8 cannot be
        stored (SQLite, Whoosh), so it is left out and named once in the refresh's warnings."""
        if walk.is_utf8(rel):
            return True
        self._not_utf8.add(rel)
        return False

    def _not_utf8_news(self) -> list[str]:
        """Warnings for the names `_named` left out that no refresh has named yet (a name stays
        on disk, and every scan that compares would name it again)."""
        found = sorted(walk.shown_name(p) for p in self._not_utf8)
        self._not_utf8.clear()
        told = set((self.catalog.get_meta(NOT_UTF8) or "").split("\n"))
        if told != set(found):
            self.catalog.set_meta(NOT_UTF8, "\n".join(found))
        return [_not_utf8_warning(name) for name in found if name not in told]

    def _skip(self, info: FileInfo, why: str) -> NoteRow:
        return NoteRow(path=info.path, id="", mtime=info.mtime, size=info.size, hash="", skipped=why)

    # ---- vector side ------------------------------------------------------------------------
    def ensure_vectors(
        self,
        progress: Progress | None = None,
        budget: float | None = None,
        yield_to: Callable[[], bool] | None = None,
        unsaved: Callable[[list[str]], None] | None = None,
        unlocked: Callable[[], contextlib.AbstractContextManager[None]] | None = None,
        deep: bool = False,
        refine: bool = False,
    ) -> IndexReport:
        """Embed what waits for a vector. With `budget` (seconds) the pass stops when its time is
        up; with `yield_to` as well, its batches are short and it stops after the batch during
        which `yield_to()` turned true (a daemon's query waiting for the index): what is left stays
        pending (`report.pending_vectors`). With `unsaved` the vectors are not saved: each batch's
        paths go to it before they are embedded (a daemon lists them, to embed them again after a
        crash, and saves on its own schedule instead of making a waiting query wait for a save).
        With `unlocked` the model runs inside it (a daemon lets its queries at the indexes
        meanwhile); a note a query changed or deleted meanwhile keeps waiting for its vector.
        With `deep`, once every note has its first passages' vectors, the deeper passages of long
        notes follow (`report.deep_pending` tells how many notes still wait for them). With `refine`
        as well, once those are embedded too, the notes a backlog drafted in int8 are embedded again
        in float32 (`report.drafts` tells how many still wait)."""
        report = IndexReport()
        self._embed_pending(report, progress, budget, yield_to, unsaved, unlocked, deep=deep, refine=refine)
        return report

    def _embed_pending(
        self,
        report: IndexReport,
        progress: Progress | None,
        budget: float | None,
        yield_to: Callable[[], bool] | None = None,
        unsaved: Callable[[list[str]], None] | None = None,
        unlocked: Callable[[], contextlib.AbstractContextManager[None]] | None = None,
        deep: bool = False,
        refine: bool = False,
    ) -> None:
        """Embed the notes whose vectors are missing or stale, one batch per lock hold (see refresh);
        with `deep`, then the deeper passages of long notes, in batches the same way; with
        `refine`, then the drafts in float32."""
        if self.vectors_current() and (not deep or self.passages_current()):
            report.drafts = self.catalog.count_drafts() if refine else 0
            if not report.drafts:
                report.vectors, report.pending_vectors = "ok", 0
                return
        deadline = None if budget is None else time.monotonic() + budget
        while True:
            with self.locked() as handle:
                more = self._refresh_vectors(
                    report,
                    progress,
                    save=unsaved is None,
                    deadline=deadline,
                    yield_to=yield_to,
                    unsaved=unsaved,
                    unlocked=None if unlocked is None else lambda: _let_go(handle, unlocked),
                    deep=deep,
                    refine=refine,
                )
            if not more:
                break
        if report.vectors == "ok":
            report.drafts = self.drafts_waiting()
        if report.vectors == "ok" and report.pending_vectors == 0 and self.embedder_settings is not None:
            self.catalog.set_meta(VECTORS_CURRENT, self.embedder_settings)
            if deep and report.deep_pending == 0:
                self.catalog.set_meta(PASSAGES_CURRENT, self.embedder_settings)

    def vectors_current(self) -> bool:
        """Nothing to embed or drop, told without loading the model (seconds of torch import): the
        last vector pass finished under today's embedder settings, no note was deleted since (its
        vector would be stale), none waits for a vector, and no daemon left unsaved ones behind.
        Deeper passages of long notes may still wait (see `passages_current`)."""
        return (
            self._vectors is None
            and self.embedder_settings is not None
            and self.catalog.get_meta(VECTORS_CURRENT) == self.embedder_settings
            and not self.catalog.has_pending_vectors()
            and not (self.dir / "vectors.unsaved").exists()
            and (self.dir / "vectors").is_dir()
        )

    def passages_current(self) -> bool:
        """No long note waits for its deeper passages' vectors, told without loading the index:
        the last pass that embedded them found none left, and none was embedded partially since."""
        return self.embedder_settings is not None and (
            self.catalog.get_meta(PASSAGES_CURRENT) == self.embedder_settings
        )

    def _refresh_vectors(
        self,
        report: IndexReport,
        progress: Progress | None,
        save: bool = True,
        only: list[str] | None = None,
        deadline: float | None = None,
        yield_to: Callable[[], bool] | None = None,
        unsaved: Callable[[list[str]], None] | None = None,
        unlocked: Callable[[], contextlib.AbstractContextManager[None]] | None = None,
        deep: bool = False,
        refine: bool = False,
    ) -> bool:
        """Embed what the catalog marks pending and drop vectors of notes gone from it. With `only`
        (the paths an update touched) the stale check looks at those paths alone: O(edit), not
        O(vault), which is what keeps an edit at 100k notes as fast as at 1k. With `deadline`
        (time.monotonic) it embeds one batch and returns True while more are pending and time
        remains, so the caller can let go of the lock between batches; with `yield_to` as well, its
        batches last about YIELDING_BATCH_SECONDS and it ends the pass like a deadline reached as
        soon as `yield_to()` is true.

        A long note gets the vectors of its first passages (`chunking.select_passages`: the lead
        and the most distinctive ones) and is searchable by them; with `deep`, once no note is
        pending, the passages left are embedded the same way, batch by batch (the vector index
        keeps the list of such notes with every save, so a killed pass resumes).

        Drafts: while more than DRAFT_BACKLOG notes wait (first or deeper passages, never an
        update's), a batch runs in the embedder's draft precision where it has one (int8:
        `embeddings.draft_embedding`), into the same index, its notes marked in the catalog before
        their vectors are stored. With `refine`, once no note waits for its first or deeper
        passages, the marked notes are embedded again in float32, batch by batch; a mark goes once the index holding the float32 vectors is saved (`_forget_refined`),
        so a kill at any point costs at most one more refinement."""
        from tiered_memory.index.chunking import chunk_text, select_passages
        from tiered_memory.index.embeddings import draft_embedding, is_remote_embedder
        from tiered_memory.model.privacy import keep_local

        vectors = self.vectors()
        embedder = self._embedder
        if vectors is None or embedder is None:
            report.vectors = self.embedder_error or "no embedder"
            return False
        # Sensitive and excluded notes never go to a remote API: no vector, still keyword-searchable.
        excluded = self.vault.config.privacy.excluded_paths if is_remote_embedder(embedder) else None
        # Notes tried once this run (unreadable ones stay pending) are not tried again.
        pending = [p for p in self.catalog.pending_vectors() if p not in report.tried]
        left_behind = 0
        if only is not None:
            # An update embeds the notes it touched, and only a few: notes waiting from before (a
            # keyword-first build) and a big batch (a pull, a folder copied in) are embedded in
            # the background, a slice at a time, and never hold the lock for minutes.
            touched = set(only)
            waiting = len(pending)
            pending = [p for p in pending if p in touched]
            if len(pending) > INLINE_VECTORS:
                pending = []
            left_behind = waiting - len(pending)
            self.vectors_deferred = self.vectors_deferred or left_behind > 0
        first_round = report.pending_vectors < 0
        if first_round:  # the total the progress counts against
            report.pending_vectors = len(pending)
        if only is None:
            stale: set[str] = set()
            if first_round:
                known = self.catalog.stats()
                stale = set(vectors.paths()) - {p for p, (_m, _s, h) in known.items() if h}
        else:
            known = self.catalog.stats([*only, *pending])
            stale = {p for p in only if not known.get(p, (0, 0, ""))[2] and vectors.has(p)}
        cjk = self.cjk_vectors()
        for rel in stale:
            vectors.delete(rel)
            if cjk is not None:
                cjk.index.delete(rel)
        # The deeper passages come once no note waits for its first ones.
        deepening = deep and only is None and not pending
        if deepening:
            deep_waiting = {*vectors.partial_paths(), *(cjk.waiting() if cjk is not None else ())}
            pending = [p for p in sorted(deep_waiting) if p not in report.deep_tried]
            if first_round or report.deep_pending <= 0:
                report.deep_pending = len(pending)
        # Drafts are refined once nothing else waits.
        refining = deepening and not pending and refine
        marks: dict[str, str] = {}
        if refining:
            deepening = False
            marks = {
                p: h
                for p, h in self.catalog.refinable().items()
                if p not in self._refined and p not in report.refine_tried
            }
            pending = list(marks)
            if first_round or report.refine_total <= 0:
                report.refine_total = len(pending)
        drafting = draft_embedding(embedder) if only is None and not refining else None
        cfg = self.vault.config.embeddings
        batch = max(16, cfg.batch_size * 4)
        if deadline is not None:
            batch = self._batch_within(deadline, batch, YIELDING_BATCH_SECONDS if yield_to else None)
        stepwise = deadline is not None or (only is None and save)
        if refining:
            stage, done_before, total = REFINING, report.refined, report.refine_total
        elif deepening:
            stage, done_before, total = "embedding deeper passages", report.deepened, report.deep_pending
        else:
            stage, done_before, total = "embedding", report.embedded, report.pending_vectors
        for start in range(0, len(pending), batch):
            part = pending[start : start + batch]
            draft = drafting is not None and len(pending) - start > DRAFT_BACKLOG
            phase = stage + DRAFTS if draft else stage
            tried = report.refine_tried if refining else report.deep_tried if deepening else report.tried
            tried.update(part)
            if (only is None and not first_round) or deepening or refining:
                known = self.catalog.stats(part)
            items: list[tuple[str, list[str], str]] = []
            cjk_items: list[tuple[str, list[str], str]] = []
            cjk_deeper: list[tuple[str, list[str]]] = []  # the multilingual side's deeper passages
            minilm_waiting = set(vectors.partial_paths()) if deepening or refining else set()
            partial: set[str] = set()
            for rel in part:
                digest = known.get(rel, (0, 0, ""))[2]
                if refining and not digest:
                    continue  # gone: its mark went with its catalog row
                if deepening and not digest:
                    items.append((rel, [], digest))  # gone: no longer waits (the stale check drops it)
                    cjk_deeper.append((rel, []))
                    continue
                try:
                    note = self.vault.read_note(rel)
                except NoteParseError:
                    if deepening:  # its first passages stay; the rest is not tried again and again
                        items.append((rel, [], digest))
                        cjk_deeper.append((rel, []))
                    elif refining:  # its drafts stay until it can be read and is embedded again
                        self._refined[rel] = marks[rel]
                    continue
                if excluded is not None and keep_local(note, excluded):
                    vectors.delete(rel)
                    self.catalog.set_vec_hash([(rel, digest)])
                    continue
                text = embed_text(note)
                chunks = chunk_text(text, cfg.chunk_tokens, cfg.chunk_overlap) or [note.title or rel]
                first = select_passages(chunks)
                if refining:  # float32 vectors of every passage the index holds for it
                    texts = [chunks[i] for i in first]
                    if rel in minilm_waiting:
                        partial.add(rel)  # the deeper passages still come (in float32)
                    else:
                        picked = set(first)
                        texts += [chunk for i, chunk in enumerate(chunks) if i not in picked]
                    items.append((rel, texts, digest))
                    continue
                if deepening:
                    picked = set(first)
                    rest = [chunk for i, chunk in enumerate(chunks) if i not in picked]
                    # A note may wait on one side only (a kill between the two indexes' saves).
                    items.append((rel, rest if rel in minilm_waiting else [], digest))
                    cjk_deeper.append((rel, rest))
                    continue
                if len(first) < len(chunks):
                    partial.add(rel)
                items.append((rel, [chunks[i] for i in first], digest))
                if cjk is not None:  # the multilingual side follows the same two passes
                    cjk_items.append((rel, [chunks[i] for i in first], text))
            flat = [c for _, chunks, _ in items for c in chunks]
            began = time.monotonic()

            def step(
                texts_done: int,
                _done: int = done_before,
                _items: int = len(items),
                _flat: int = max(1, len(flat)),
                _phase: str = phase,
            ) -> None:
                if progress:
                    progress(_phase, min(total, _done + _items * texts_done // _flat), total)

            embed = drafting if draft and drafting is not None else embedder.embed
            with unlocked() if unlocked is not None else contextlib.nullcontext():
                matrix = self._embed_in_steps(embed, flat, step) if flat else None
                cjk_first = cjk.embed_first(cjk_items) if cjk is not None and cjk_items else None
                cjk_rows = cjk.embed_deeper(cjk_deeper) if cjk is not None and cjk_deeper else None
            if items and not deepening:
                self._measure_rate(len(items), time.monotonic() - began)
            if unlocked is not None and items:  # a query may have edited or deleted some meanwhile
                now_known = self.catalog.stats([rel for rel, _, _ in items])
                current = [now_known.get(rel, (0, 0, ""))[2] == digest for rel, _, digest in items]
            else:
                current = [True] * len(items)
            offset = 0
            batch_items = []
            for (rel, chunks, _digest), fresh in zip(items, current, strict=True):
                if fresh:
                    rows = (
                        matrix[offset : offset + len(chunks)] if matrix is not None else _no_rows(vectors.dim)
                    )
                    batch_items.append((rel, rows))
                offset += len(chunks)
            if unsaved is not None and not refining:  # a refined note keeps its mark until saved
                # Listed after the model ran: a save made while it ran (the lock let go) clears
                # the list, and must not take these with it.
                unsaved([rel for rel, _ in batch_items])
            fresh_paths = {rel for (rel, _, _), fresh in zip(items, current, strict=True) if fresh}
            if draft:  # marked before the vectors are stored, hence before any save holds them
                drafted = [(rel, digest) for rel, chunks, digest in items if rel in fresh_paths and chunks]
                self.catalog.mark_drafts(drafted)
                for rel, _ in drafted:
                    self._refined.pop(rel, None)
                report.drafted += len(drafted)
                self.vectors_deferred = True  # a daemon that ran this (a reindex) refines them after
            if refining:
                if batch_items:
                    vectors.upsert_many(batch_items, partial)
                self._refined.update({rel: marks[rel] for rel in fresh_paths})
                report.refined += len(fresh_paths)
                self._refined_since_graph += len(fresh_paths)
                if start + batch >= len(pending):  # the last drafts: the graph as a build makes it
                    self._settle_graph(vectors, None if unlocked is None else unlocked)
            elif deepening:
                vectors.extend(batch_items)
                if cjk is not None and cjk_rows:
                    cjk.store_deeper(cjk_rows, fresh_paths)
                report.deepened += len(items)
            else:
                if not draft and fresh_paths:  # embedded afresh in float32: no longer drafts
                    self._refined.update(self.catalog.drafts(fresh_paths))
                if batch_items:
                    vectors.upsert_many(batch_items, partial)
                if partial & fresh_paths:
                    self.catalog.set_meta(PASSAGES_CURRENT, "")
                    # An update's long note: its deeper passages are the background's (a daemon's).
                    self.vectors_deferred = self.vectors_deferred or only is not None
                if cjk is not None and cjk_first is not None:
                    cjk.store_first(cjk_first, partial, fresh_paths)
                self.catalog.set_vec_hash([(rel, digest) for rel, _, digest in items if rel in fresh_paths])
                report.embedded += len(items)
            done_before = report.refined if refining else report.deepened if deepening else report.embedded
            if progress:
                progress(phase, min(total, done_before), total)
            more = start + batch < len(pending)
            # The caller comes back for the next stage: deeper passages, then refinement.
            next_stage = only is None and (
                (deep and not deepening and not refining) or (deepening and refine)
            )
            if stepwise and (more or next_stage):
                out_of_time = deadline is not None and (
                    time.monotonic() >= deadline or (yield_to is not None and yield_to())
                )
                if save:
                    self._save_every(vectors)
                if out_of_time:
                    report.vectors = "ok"
                    report.pending_vectors = 0 if deepening or refining else len(pending) - start - len(part)
                    report.deep_pending = self._deep_waiting(vectors)
                    if save:
                        vectors.save()
                    return False
                return True  # let go of the lock; the caller comes back for the next batch
        # The later stages: the first passes' last batch (or the deeper ones') too.
        if (pending or stale or deepening or refining) and save:
            vectors.save()
        report.vectors = "ok"
        report.pending_vectors = left_behind
        report.deep_pending = self._deep_waiting(vectors)
        return False

    def _settle_graph(
        self,
        vectors: VectorIndex,
        unlocked: Callable[[], contextlib.AbstractContextManager[None]] | None,
    ) -> None:
        """After a refinement that replaced a large share of the index's notes, its graph built
        afresh (outside the locks when the caller lets go of them)."""
        if self._refined_since_graph and self._refined_since_graph >= REBUILD_SHARE * vectors.count():
            if vectors.rebuild(unlocked):
                self._refined_since_graph = 0

    def _deep_waiting(self, vectors: VectorIndex) -> int:
        """Long notes whose deeper passages wait for a vector, MiniLM's or the multilingual one."""
        cjk = self.cjk_vectors()
        return len({*vectors.partial_paths(), *(cjk.waiting() if cjk is not None else ())})

    def _embed_in_steps(
        self, embed: Callable[[list[str]], np.ndarray], texts: list[str], step: Callable[[int], None]
    ) -> np.ndarray:
        """`embed(texts)` (an embedder's `embed` or `embed_draft`) in steps of about PROGRESS_SECONDS at the speed measured so
        far, `step(texts done)` after each, so a build's bar moves at least every second whatever
        the batch. The texts go longest first, so each step pads to a length close to its own
        (what sentence-transformers does within one call, done here across the steps)."""
        import numpy as np

        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        parts: list[np.ndarray] = []
        done = 0
        while done < len(texts):
            rate = self._texts_per_second
            size = 2 if rate is None else max(1, int(rate * PROGRESS_SECONDS))
            picked = order[done : done + size]
            began = self.clock()
            parts.append(embed([texts[i] for i in picked]))
            took = self.clock() - began
            if took > 0:
                measured = len(picked) / took
                self._texts_per_second = measured if rate is None else (rate + measured) / 2
            done += len(picked)
            step(done)
        rows = np.concatenate(parts, axis=0)
        out = np.empty_like(rows)
        out[np.asarray(order, dtype=np.int64)] = rows
        return out

    def _batch_within(self, deadline: float, largest: int, step: float | None = None) -> int:
        """How many notes a bounded pass (a daemon's slice, a search's budget) embeds next: what
        fits the time left at the speed measured so far, and at most `step` seconds' worth. A fixed
        batch of 128 notes takes 16 s on a CPU that embeds 8 notes a second: a daemon's one-second
        slice would keep queries and a stop request waiting that long."""
        if self._notes_per_second is None:
            return min(largest, FIRST_BOUNDED_BATCH if step is None else 1)
        seconds = max(deadline - time.monotonic(), MIN_BOUNDED_SECONDS)
        if step is not None:
            seconds = min(seconds, step)
        return max(1, min(largest, int(self._notes_per_second * seconds)))

    def _measure_rate(self, notes: int, seconds: float) -> None:
        rate = notes / max(seconds, 1e-3)
        old = self._notes_per_second
        self._notes_per_second = rate if old is None else (old + rate) / 2  # the load changes

    def _save_every(self, vectors: VectorIndex, seconds: float = 30.0) -> None:
        """Save a long build's vectors now and then, so an interrupted build keeps most of them."""
        now = time.monotonic()
        if now - self._saved_at >= seconds:
            vectors.save()
            self._saved_at = time.monotonic()

    # ---- maintenance ----------------------------------------------------------------------------
    def wipe(self, *, keep_vectors: bool = False) -> None:
        """Delete every side index (used by `reindex --full` and when an index is found broken);
        `keep_vectors`: all but the vector indexes (a keyword-only rebuild: see `vector_marks`)."""
        self.close()
        vectors = () if keep_vectors else _VECTOR_DIRECTORIES
        for name in (
            "fts",
            *vectors,
            "catalog.sqlite",
            "catalog.sqlite-wal",
            "catalog.sqlite-shm",
            scan_mark.FILE,
        ):
            target = self.dir / name
            if target.is_dir():
                import shutil  # rarely needed

                shutil.rmtree(target, ignore_errors=True)
            elif target.exists():
                target.unlink()

    def vector_marks(self) -> VectorMarks | None:
        """What the catalog knows of the vectors on disk (which content each note's vectors were
        made from, the drafts, the model), for a keyword-only rebuild to keep them: the catalog is
        built again, the vectors are not. None when the catalog knows none (it cannot be read, was
        found broken and started afresh, or no vector was ever made): then they go too."""
        try:
            hashes = {p: r.vec_hash for p, r in self.catalog.rows().items() if r.vec_hash}
            drafts = self.catalog.drafts(hashes)
            meta = {k: self.catalog.get_meta(k) for k in _VECTOR_META}
        except (sqlite3.Error, OSError):
            return None
        if meta["vector_model"] is None:
            return None
        return VectorMarks(hashes, drafts, {k: v for k, v in meta.items() if v is not None})

    def vectors_on_disk(self) -> bool:
        """Whether a vector index was ever saved here."""
        return any((self.dir / name).is_dir() for name in _VECTOR_DIRECTORIES)

    def restore_vector_marks(self, marks: VectorMarks) -> None:
        """Put `vector_marks` back into the rebuilt catalog. A note changed since is embedded again
        (its content hash is no longer its vectors'); the last pass is taken as current only when
        no note it embedded is gone (a gone note's vectors are dropped by the next pass)."""
        rows = self.catalog.rows()
        kept = [(p, h) for p, h in marks.hashes.items() if p in rows]
        self.catalog.set_vec_hash(kept)
        self.catalog.mark_drafts((p, h) for p, h in marks.drafts.items() if p in rows)
        for key, value in marks.meta.items():
            if key == "vector_model" or len(kept) == len(marks.hashes):
                self.catalog.set_meta(key, value)


_VECTOR_META = ("vector_model", VECTORS_CURRENT, PASSAGES_CURRENT)


@dataclass(frozen=True)
class VectorMarks:
    """The catalog's record of the vectors on disk (see `Indexer.vector_marks`)."""

    hashes: dict[str, str]  # path -> the content hash its vectors were made from
    drafts: dict[str, str]  # path -> the content hash its int8 draft vectors were made from
    meta: dict[str, str]


@contextlib.contextmanager
def _let_go(
    handle: IO[str], unlocked: Callable[[], contextlib.AbstractContextManager[None]]
) -> Iterator[None]:
    """The index's file lock and the caller's lock released for a while, and taken back in the
    caller's order (its lock first, then the file's): a writer holding the caller's lock and
    waiting for the file's cannot deadlock with us."""
    fcntl.flock(handle, fcntl.LOCK_UN)
    try:
        with unlocked():
            yield
    finally:
        fcntl.flock(handle, fcntl.LOCK_EX)


def _no_rows(dim: int) -> np.ndarray:
    import numpy as np

    return np.zeros((0, dim), dtype=np.float32)


def _limit_bytes(max_file_mb: float) -> int:
    return int(max_file_mb * 1024 * 1024)


def _too_large(size: int, limit: int) -> str:
    """Why a file is skipped for its size, both sizes in MB (one decimal: a 2.4 MB file over a
    limit of 2 MB would read "2 MB" in whole MB)."""
    return f"{TOO_LARGE} ({size / 1024 / 1024:.1f} MB, the limit is {limit / 1024 / 1024:g} MB)"


def _not_utf8_warning(shown: str) -> str:
    return f"skipped {shown}: its name is not UTF-8 (rename it to index it)"


def index_dir_size(vault: Vault) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(vault.root / ".tmem"):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.path.getsize(Path(dirpath) / name)
    return total
