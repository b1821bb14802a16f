"""Whoosh full-text side index over the vault's notes.

The index is derived data: any problem opening it (corruption, schema change) is answered by wiping it
and telling the caller to reindex, never by raising.
"""

from __future__ import annotations

__all__ = [
    "FtsDoc",
    "FtsIndex",
    "MixedScriptTokenizer",
    "SCHEMA",
    "SCHEMA_VERSION",
    "Terms",
    "analysed_fields",
    "analyze",
    "doc_terms",
    "term_counts",
]

import bisect
import fcntl
import functools
import json
import math
import re
import threading
import unicodedata
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from whoosh.analysis import LowercaseFilter, RegexTokenizer, StemFilter, Token, Tokenizer
from whoosh.codec.whoosh3 import W3Codec
from whoosh.fields import ID, KEYWORD, TEXT, Schema
from whoosh.filedb.filestore import FileStorage
from whoosh.index import FileIndex
from whoosh.lang.porter import stem as _porter_stem
from whoosh.reading import SegmentReader
from whoosh.system import pack_uint

from tiered_memory.index import bm25f
from tiered_memory.index.bm25f import K1, B
from tiered_memory.index.confidence import request_form
from tiered_memory.index.names import Budget, held_near
from tiered_memory.index.query_language import foreign_function_words
from tiered_memory.index.query_terms import CONTEXT_WEIGHT, weighted_terms
from tiered_memory.model.lazy_re import LazyPattern
from tiered_memory.model.obsidian import expand_tags

if TYPE_CHECKING:
    import logging

    # A search process never writes: whoosh's writing side loads on the first write. Nor does it
    # load whoosh's searcher and query classes (a good part of a keyword search's start-up):
    # scores come from the postings (index.bm25f), only a `where` filter runs a whoosh query.
    from whoosh.reading import IndexReader
    from whoosh.writing import IndexWriter


def _log() -> logging.Logger:
    # logging loads with the first message (a cost a search, which rarely has one, never pays).
    import logging

    return logging.getLogger(__name__)


SCHEMA_VERSION = 1

_INDEX_NAME = "tmem"
_META_FILE = "tmem_fts_meta.json"
# Only names this module creates are ever deleted, so a mistaken directory argument can't wipe user files.
_OWNED_PREFIXES = (f"_{_INDEX_NAME}_", f"{_INDEX_NAME}_", f"{_INDEX_NAME}.")
_SEP = "\x1f"  # joins multi-valued label fields; never occurs in real tags/entities
_MERGE_FACTOR = 10
_BLOCK_LIMIT = 1024  # postings per whoosh block (see _codec)
_NEVER_MERGE_DOCS = 1000
_FILTER_CACHE_SIZE = 32
_IDF_CACHE_SIZE = 100_000  # terms' idf per index generation (bounded: the daemon lives for days)
_WRITE_LOCK_TIMEOUT = 30.0  # the daemon and a CLI command may both write
_POSTINGS_BUDGET = 4_000_000  # cached postings across segments, ~64 MB at most

# Han, kana, Hangul (syllables and jamo), bopomofo, CJK compatibility and extension planes.
_CJK = (
    "\u1100-\u11ff\u2e80-\u2fdf\u3005-\u3007\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u31a0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\U00020000-\U0003134f"
)
# Combining marks aren't `\w` in Python yet sit inside words: the dot of lower("İ"), Cyrillic/Hebrew/
# Arabic marks, Indic vowel signs (Hindi would otherwise shatter into single letters).
_MARKS = "\u0300-\u036f\u0483-\u0489\u0591-\u05bd\u0610-\u061a\u064b-\u065f\u0670\u0900-\u0963\u0966-\u0dff"
# Dotted digit runs stay whole so versions and decimals (3.11, v1.2.3) are single terms; other dots split,
# so `config.yaml` is findable by `config`.
# Compiled on first use: its Unicode classes are slow to compile, and ASCII text never needs it.
_TOKEN_RE = LazyPattern(rf"(?P<cjk>[{_CJK}]+)|(?P<word>[^\W_{_CJK}]+(?:[{_MARKS}]+[^\W_{_CJK}]*)*(?:\.\d+)*)")
# What _TOKEN_RE's word group matches in lowercased ASCII text: no CJK or marks can occur there, and
# the small class runs several times faster than the Unicode ones (analysis is most of a search's
# passage scoring). A test checks the two agree.
_ASCII_WORD_RE = re.compile(r"[a-z0-9]+(?:\.[0-9]+)*")

# Function words plus question words, so "When did Caroline go...?" searches for caroline/go/...
_STOP_WORDS = frozenset(
    """a about after again against all also am an and any are as at be because been before being between
    both but by can could did do does doing done during each either else ever for from further had has
    have having he her here hers herself him himself his how i if in into is it its itself just me my
    myself no nor not of on once only or other our ours ourselves please same she should so some such tell
    than that the their theirs them themselves then there these they this those through to too very was
    we were what whatever when whenever where wherever whether which while who whoever whom whose why with
    would yet you your yours yourself""".split()
)


def _fold_accents(word: str) -> str:
    # Only when the result is plain ASCII (café -> cafe): in other scripts the marks carry meaning.
    folded = "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))
    return folded if folded.isascii() else word


class MixedScriptTokenizer(Tokenizer):
    """Lowercased, stop-filtered words for alphabetic scripts; overlapping bigrams for CJK runs, so
    Chinese/Japanese/Korean text is searchable without a dictionary."""

    def __eq__(self, other: object) -> bool:
        return other.__class__ is self.__class__

    def __hash__(self) -> int:
        return hash(self.__class__)

    def __call__(  # type: ignore[override]
        self,
        value: str,
        positions: bool = False,
        chars: bool = False,
        keeporiginal: bool = False,
        removestops: bool = True,
        start_pos: int = 0,
        start_char: int = 0,
        mode: str = "",
        **kwargs: Any,
    ) -> Iterator[Token]:
        t = Token(positions, chars, removestops=removestops, mode=mode, **kwargs)
        if not value.isascii():
            # Fullwidth Latin/digits (common in CJK text) become ASCII; char offsets refer to this form.
            value = unicodedata.normalize("NFKC", value)
        # Lowercase and stop here, not in whoosh filters: each filter is a per-token generator hop, and
        # that chain was a measurable share of indexing time.
        value = value.lower()
        pos = start_pos
        for m in _TOKEN_RE.finditer(value):
            text, stopped = m.group(), False
            if m.lastgroup == "cjk":
                pieces = [text] if len(text) == 1 else [text[i : i + 2] for i in range(len(text) - 1)]
                offsets = [m.start() + i for i in range(len(pieces))]
            else:
                # Stray letters (the `s` of `Caroline's`, `e.g.`) are noise; single digits are not.
                if len(text) == 1 and not text.isdigit():
                    continue
                if not text.isascii():
                    text = _fold_accents(text)
                stopped = text in _STOP_WORDS
                if stopped and removestops:
                    continue
                pieces, offsets = [text], [m.start()]
            for piece, start in zip(pieces, offsets, strict=True):
                t.text, t.boost, t.stopped = piece, 1.0, stopped
                if keeporiginal:
                    t.original = piece  # type: ignore[attr-defined]
                if positions:
                    t.pos = pos
                if chars:
                    t.startchar, t.endchar = start_char + start, start_char + start + len(piece)
                pos += 1
                yield t


# The analyzer as whoosh filters (what whoosh itself would run, e.g. for a parsed query). Indexing and
# `analyze` take the equivalent fast path below; a test checks the two give the same terms.
_ANALYZER: Any = MixedScriptTokenizer() | StemFilter(cachesize=100_000)

_WORD_CACHE_LIMIT = 200_000  # distinct words remembered (bounded: the daemon lives for days)
_word_terms: dict[str, str] = {}  # a matched word -> its stemmed term ("" when dropped)


def _word_term(word: str) -> str:
    """What the tokenizer and stem filter make of one (lowercased) word match: its stemmed term,
    or "" for a stray letter or a stop word."""
    term = _word_terms.get(word)
    if term is None:
        text = word
        if len(text) == 1 and not text.isdigit():
            term = ""
        else:
            if not text.isascii():
                text = _fold_accents(text)
            term = "" if text in _STOP_WORDS else _porter_stem(text)
        if len(_word_terms) >= _WORD_CACHE_LIMIT:
            _word_terms.clear()
        _word_terms[word] = term
    return term


def _cjk_pieces(run: str) -> list[str]:
    # Pieces of one or two characters: the Porter stemmer leaves them as they are.
    return [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]


def _normal(text: str) -> str:
    return (text if text.isascii() else unicodedata.normalize("NFKC", text)).lower()


def analyze(text: str) -> list[str]:
    """The terms the index holds for `text`, in order (same at index and query time).

    The same terms as `_ANALYZER`, without its per-token objects and generator hops: matching is
    one regex pass and each distinct word is stemmed once (cached)."""
    if text.isascii():
        words = _ASCII_WORD_RE.findall(text.lower())
        try:  # every word seen before (the usual case at query time): no call per word
            return [term for term in map(_word_terms.__getitem__, words) if term]
        except KeyError:
            return [term for term in map(_word_term, words) if term]
    out: list[str] = []
    for cjk, word in _TOKEN_RE.findall(_normal(text)):
        if cjk:
            out.extend(_cjk_pieces(cjk))
        elif term := _word_term(word):
            out.append(term)
    return out


def _query_terms(
    query: str, idf: Callable[[str], float], context_weight: float = CONTEXT_WEIGHT, weigh_form: bool = True
) -> list[tuple[str, float]]:
    """The terms every scoring of `query` searches for (`weighted_terms`), the words of a
    request's form weighed less (`confidence.request_form`) unless `weigh_form` is off."""
    form = request_form(query) if weigh_form else []
    terms = weighted_terms(query, analyze, idf, context_weight=context_weight, form=form)
    foreign = foreign_function_words(query)
    if not foreign:
        return terms
    dropped = {term for word in foreign for term in analyze(word)}
    kept = [(term, weight) for term, weight in terms if term not in dropped]
    if kept or any(term not in dropped for term in analyze(query)):
        # Its other words are in no note ("la contraseña del wifi"): nothing holds the question,
        # whatever holds its "la" and "del".
        return kept
    return terms  # a query of nothing but function words searches for them


def term_counts(text: str) -> dict[str, int]:
    """How often each term of `text` occurs: `analyze` counted, with the per-word work done once
    per distinct word of the text rather than once per occurrence."""
    counts: dict[str, int] = {}
    if text.isascii():
        for word, n in Counter(_ASCII_WORD_RE.findall(text.lower())).items():
            if term := _word_term(word):
                counts[term] = counts.get(term, 0) + n
        return counts
    for (cjk, word), n in Counter(_TOKEN_RE.findall(_normal(text))).items():
        if cjk:
            for piece in _cjk_pieces(cjk):
                counts[piece] = counts.get(piece, 0) + n
        elif term := _word_term(word):
            counts[term] = counts.get(term, 0) + n
    return counts


def _postings(counts: dict[str, int], boost: float) -> list[tuple[bytes, int, float, bytes]]:
    # What whoosh's Frequency format yields per term: (utf-8 term, frequency, weight, encoded
    # frequency); every token's boost is 1, so the weight is the frequency times the field boost.
    return [(term.encode("utf-8"), n, n * boost, pack_uint(n)) for term, n in counts.items()]


def _field_boost(field: Any) -> float:
    return float(getattr(field.format, "field_boost", 1.0))


class _Text(TEXT):  # type: ignore[misc]
    """A TEXT field indexed through `term_counts`: whoosh's own path spent most of a build's time
    in per-token generators. Same postings, same on-disk format."""

    def index(self, value: Any, **kwargs: Any) -> Any:
        if isinstance(value, dict):  # analysed already (`analysed_fields`), in another process
            return _postings(value, _field_boost(self))
        if not isinstance(value, str):
            return super().index(value, **kwargs)
        return _postings(term_counts(value), _field_boost(self))


class _Label(KEYWORD):  # type: ignore[misc]
    """Exact-value (case-insensitive), multi-valued; used only by `where` filters. Indexed without
    the analyzer chain: the values are the `_SEP`-separated parts, lowercased."""

    def index(self, value: Any, **kwargs: Any) -> Any:
        if not isinstance(value, str):
            return super().index(value, **kwargs)
        return _postings(Counter(v.lower() for v in value.split(_SEP) if v), _field_boost(self))


def _label() -> KEYWORD:
    return _Label(analyzer=RegexTokenizer(rf"[^{_SEP}]+") | LowercaseFilter())


def _text() -> TEXT:
    # No positions: phrase search isn't offered, and skipping them makes indexing faster and smaller.
    return _Text(analyzer=_ANALYZER, phrase=False)


SCHEMA = Schema(
    path=ID(stored=True, unique=True),
    id=ID(stored=True),
    session=ID(),
    title=_text(),
    body=_text(),
    tags_t=_text(),
    entities_t=_text(),
    project_t=_text(),
    tags=_label(),
    entities=_label(),
    project=_label(),
    tier=_label(),
    category=_label(),
    status=_label(),
)
_SEARCH_FIELDS = (("title", 2.0), ("tags_t", 1.5), ("entities_t", 1.5), ("project_t", 1.5), ("body", 1.0))
_FILTER_FIELDS = {
    "tier",
    "category",
    "status",
    "project",
    "tags",
    "entities",
    "session",
    "path",
    "path_prefix",
}
_EXACT_FILTER_FIELDS = {"session", "path"}


@dataclass
class FtsDoc:
    path: str
    id: str
    title: str
    body: str
    tags: list[str]
    entities: list[str]
    project: str
    tier: str
    category: str
    status: str
    session: str = ""
    updated: float = 0.0
    aliases: tuple[str, ...] = ()

    def _fields(self) -> dict[str, str]:
        return {
            "path": self.path,
            "id": self.id,
            "session": self.session,
            "title": "\n".join([self.title, *self.aliases]),  # an alias is searched as a title
            "body": self.body,
            "tags_t": " ".join(self.tags),
            "entities_t": " ".join(self.entities),
            "project_t": self.project,
            "tags": _SEP.join(expand_tags(self.tags)),  # `geodesy` filters find `geodesy/datum` too
            "entities": _SEP.join(self.entities),
            "project": self.project,
            "tier": self.tier,
            "category": self.category,
            "status": self.status,
        }


def analysed_fields(doc: FtsDoc) -> dict[str, Any]:
    """The document's fields with each text field already turned into its term counts: what a
    writer in another process adds (index.fts_writer), so the analysis runs on this side."""
    fields: dict[str, Any] = doc._fields()
    for name, _boost in _SEARCH_FIELDS:  # the text fields
        fields[name] = term_counts(fields[name])
    return fields


@dataclass
class Terms:
    """A document's analyzed terms per searched field and each field's length in terms."""

    counts: dict[str, Counter[str]]
    lengths: dict[str, int]


def doc_terms(doc: FtsDoc) -> Terms:
    """What `FtsIndex.score_apart` needs of a document kept out of the index."""
    fields = doc._fields()
    counts = {name: Counter(term_counts(fields[name])) for name, _ in _SEARCH_FIELDS}
    return Terms(counts, {name: sum(c.values()) for name, c in counts.items()})


def _merge_policy(writer: IndexWriter, segments: list[Any]) -> list[Any]:
    # Tiered merging: segments group by order of magnitude of their size, and a tier holding
    # _MERGE_FACTOR segments merges into one, so each note is rewritten O(log n) times. Segments of
    # _NEVER_MERGE_DOCS or more are left alone (compact() merges them): whoosh merges in pure Python,
    # and its own MERGE_SMALL stalled one-note upserts of a large vault for seconds by merging big
    # segments.
    # A segment whose documents are all deleted (a note edited again: its one-note segment of the
    # edit before) holds nothing and is dropped: every search process would open it for nothing.
    segments = [seg for seg in segments if seg.deleted_count() < seg.doc_count_all()]
    tiers: dict[int, list[Any]] = {}
    for seg in segments:
        if seg.doc_count_all() < _NEVER_MERGE_DOCS:
            tiers.setdefault(len(str(seg.doc_count_all())), []).append(seg)
    full = [group for _, group in sorted(tiers.items()) if len(group) >= _MERGE_FACTOR]
    if not full:
        return segments
    for seg in full[0]:
        reader = SegmentReader(writer.storage, writer.schema, seg)  # type: ignore[attr-defined]
        writer.add_reader(reader)
        reader.close()
    return [seg for seg in segments if seg not in full[0]]


def _codec() -> W3Codec:
    """whoosh3's codec with 1024-posting blocks and without per-block field-length bounds.

    Blocks: the scorer decodes whole postings lists, and fewer, larger blocks than whoosh's 128
    halved cold-query time at 30k notes (and made the index ~10% smaller). Length bounds: only
    whoosh's own scorer reads them (to skip blocks that cannot make its top N); `_search` scores
    every posting with the length columns, which are still written, and skipping the bounds saves
    a length lookup per posting at commit. An attribute of the instance rather than a subclass:
    segments pickle their codec, and a class of ours would make the index unreadable to an older
    tmem sharing the vault."""
    codec = W3Codec(blocklimit=_BLOCK_LIMIT)
    codec.length_stats = False
    return codec


# First letters whose terms a generation keeps (`_Snapshot.initial_terms`): a question names few.
_INITIALS_CACHED = 8


class _Snapshot:
    """One index generation: its reader, deleted documents and cached statistics and filters."""

    def __init__(self, ix: FileIndex, reader: IndexReader) -> None:
        self.ix = ix
        self.reader = reader
        self.n = int(reader.doc_count_all())
        self.leaves: list[tuple[Any, int, str]] = []
        self.filters: dict[tuple[tuple[str, tuple[str, ...]], ...], frozenset[int]] = {}
        # Query terms' idf (FtsIndex._idf): one query asks for each term several times (search,
        # passage scores of each long note, snippets), and each answer is five lexicon lookups.
        self.idfs: dict[str, float] = {}
        self.field_idfs: dict[tuple[str, str], float] = {}
        # Stored paths of the documents searches have returned: whoosh decodes a document's stored
        # fields on every read, for each of a query's hundred candidates.
        self.paths: dict[int, str] = {}
        # The lexicon's terms by first letter (`initial_terms`), for the near spellings of names.
        self.initials: dict[str, list[str]] = {}
        deleted: list[int] = []
        for seg, offset in reader.leaf_readers() if self.n else []:
            segment: Any = seg.segment()
            self.leaves.append((seg, offset, segment.segment_id()))
            # The deleted set is small; iterating live ids would cost time in proportion to the vault per write.
            deleted.extend(offset + d for d in segment.deleted_docs())
        self.deleted = frozenset(deleted)

    def up_to_date(self) -> bool:
        """Whether this is still the newest generation (one directory listing)."""
        return bool(self.ix.latest_generation() == self.reader.generation())

    def idf(self, field: str, term: str) -> float:
        """whoosh's BM25F idf, deleted documents counted as whoosh counts them."""
        idf = self.field_idfs.get((field, term))
        if idf is None:
            if len(self.field_idfs) >= _IDF_CACHE_SIZE:  # bounded like `idfs`: a daemon lives for days
                self.field_idfs.clear()
            found = self.reader.doc_frequency(field, term)
            idf = self.field_idfs[field, term] = math.log(self.n / (found + 1)) + 1
        return idf

    def avg_field_length(self, field: str) -> float:
        return float(self.reader.field_length(field)) / (self.n or 1)

    def initial_terms(self, letter: str) -> list[str]:
        """Every term of the searched fields that starts with `letter`, read once per generation
        for a few letters (a lexicon walk: tens of milliseconds in a large vault)."""
        terms = self.initials.get(letter)
        if terms is None:
            found: set[str] = set()
            for field, _ in _SEARCH_FIELDS:
                for term in self.reader.expand_prefix(field, letter) if self.n else ():
                    found.add(term.decode("utf-8", "replace") if isinstance(term, bytes) else term)
            if len(self.initials) >= _INITIALS_CACHED:
                self.initials.clear()
            terms = self.initials[letter] = sorted(found)
        return terms

    def close(self) -> None:
        self.reader.close()


def _stored_path(snap: _Snapshot, docnum: int) -> str:
    path = snap.paths.get(docnum)
    if path is None:
        path = snap.paths[docnum] = snap.reader.stored_fields(docnum)["path"]
    return path


def _holds(ids: Any, doc: int) -> bool:
    """Whether a segment's ascending postings ids hold this segment-local docnum."""
    i = bisect.bisect_left(ids, doc)
    return i < len(ids) and ids[i] == doc


def _body_idf(snap: _Snapshot, term: str) -> float:
    if not any(snap.reader.doc_frequency(field, term) for field, _ in _SEARCH_FIELDS):
        return 0.0
    return snap.idf("body", term)


class FtsIndex:
    def __init__(self, directory: Path, ix: FileIndex, rebuilt: bool, created: bool) -> None:
        self.directory = directory
        self.rebuilt = rebuilt
        self.created = created  # no index existed: like `rebuilt`, everything needs indexing
        self._ix = ix
        self._lock = threading.RLock()
        self._snap: _Snapshot | None = None
        self._lengths: dict[tuple[str, str], bytes] = {}
        self._postings: OrderedDict[tuple[str, str, str], bm25f.Postings] = OrderedDict()
        self._postings_size = 0

    @classmethod
    def attach(cls, directory: Path) -> FtsIndex:
        """The index as another process of ours opened (and checked) it: never wiped or rebuilt
        here, any problem raises (the writer process of index.fts_writer)."""
        ix = _open_dir(directory)
        return cls(Path(directory), ix, rebuilt=False, created=False)

    @classmethod
    def open(cls, directory: Path) -> FtsIndex:
        """The index in `directory`: created when none is there, rebuilt when it is unreadable or
        of another schema (then `rebuilt`). Processes open it one at a time: the first commands
        on a new vault run at once, and one would take another's half-created index for a
        damaged one and wipe it under it."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        with open(directory.with_name(directory.name + ".lock"), "a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            return cls._open(directory)

    @classmethod
    def _open(cls, directory: Path) -> FtsIndex:
        # Any leftover file of ours (even a lone segment) means an index was here: the caller's idea of
        # what is indexed can't be trusted any more, so that case reports `rebuilt`.
        if not any(p.name.startswith(_OWNED_PREFIXES) for p in directory.iterdir()):
            return cls(directory, _create(directory), rebuilt=False, created=True)
        if _stored_version(directory) == SCHEMA_VERSION:
            try:
                ix = _open_dir(directory)
                index = cls(directory, ix, rebuilt=False, created=False)
                # The reader that validated the index serves the first search: opening every
                # segment's reader twice was a tenth of a keyword search in a fresh process.
                reader = _validated(ix)
                try:
                    index._snap = _Snapshot(ix, reader)
                except BaseException:
                    reader.close()
                    raise
                return index
            except Exception as exc:  # whatever the failure, the index is disposable
                _log().warning("full-text index at %s is unreadable (%s); rebuilding", directory, exc)
        else:
            _log().info("full-text index at %s has another schema version; rebuilding", directory)
        _wipe(directory)
        return cls(directory, _create(directory), rebuilt=True, created=False)

    # -- writing -------------------------------------------------------------------------------------

    def upsert(self, docs: Iterable[FtsDoc], new: bool = False) -> int:
        """Add or replace by path in one commit. For a full rebuild, batches of ~10k docs index fastest:
        much larger batches overflow the writer's memory pool and spill to disk. `new`: the caller
        knows no document of these paths is indexed (a rebuild), so none needs deleting first."""
        # Last one wins within a batch: whoosh can't replace a doc added earlier by the same writer.
        by_path = {d.path: d for d in docs}
        if not by_path:
            return 0
        with self._lock:
            writer, add = self.bulk_writer(new)
            try:
                try:
                    for doc in by_path.values():
                        add(**doc._fields())
                except BaseException:
                    _cancel(writer)
                    raise
                self.commit_bulk(writer)
            finally:
                self._reopen()
        return len(by_path)

    def bulk_writer(self, new: bool) -> tuple[IndexWriter, Callable[..., None]]:
        """A writer and its add function, for `upsert` and for one that adds many analysed documents
        and commits them with `commit_bulk` (index.fts_writer)."""
        writer = self._writer()
        # Under the write lock: with no segments there is nothing to replace, and plain adds skip a
        # per-document delete lookup (the full-reindex case).
        add = writer.add_document if new or not writer.segments else writer.update_document  # type: ignore[attr-defined]
        return writer, add

    @staticmethod
    def commit_bulk(writer: IndexWriter) -> None:
        try:
            writer.commit(mergetype=_merge_policy)
        except BaseException:
            _cancel(writer)
            raise

    @staticmethod
    def cancel_bulk(writer: IndexWriter) -> None:
        _cancel(writer)

    def reopen(self) -> None:
        """See commits made by another process now, not at the next up-to-date check."""
        with self._lock:
            self._reopen()

    def delete(self, paths: Iterable[str]) -> int:
        unique = set(paths)
        if not unique:
            return 0
        with self._lock:
            writer = self._writer()
            try:
                n = sum(writer.delete_by_term("path", p) for p in unique)
                if n:
                    writer.commit(mergetype=_merge_policy)
                else:
                    writer.cancel()
            except BaseException:
                _cancel(writer)
                raise
            finally:
                self._reopen()
        return n

    def clear(self) -> None:
        with self._lock:
            self._writer().commit(mergetype=lambda writer, segments: [])
            self._reopen()

    def compact(self) -> None:
        """Merge everything into one segment, purging deleted notes. Slow (tens of seconds at 100k notes):
        for idle time, when many large segments have piled up. Searches go on meanwhile (they read the
        old generation; whoosh's write lock keeps other writers out), only the swap takes the lock."""
        self._writer().commit(optimize=True)
        with self._lock:
            self._reopen()

    def fragmentation(self) -> tuple[int, float]:
        """(segments, fraction of stored documents that are deleted). Replaced notes stay in their old
        segment as deleted documents, and segments of _NEVER_MERGE_DOCS or more never merge on their
        own: both grow with every edit until compact() runs."""
        with self._lock:
            snap = self._current()
            if snap.n == 0:
                return len(snap.leaves), 0.0
            return len(snap.leaves), len(snap.deleted) / snap.n

    def needs_compaction(self, max_deleted: float = 0.25, max_segments: int = 30) -> bool:
        segments, deleted = self.fragmentation()
        return segments > 1 and (deleted > max_deleted or segments > max_segments)

    def _writer(self) -> IndexWriter:
        return self._ix.writer(procs=1, limitmb=256, timeout=_WRITE_LOCK_TIMEOUT, codec=_codec())

    def _reopen(self) -> None:
        # Not Searcher.refresh(): whoosh3's reader reuse keeps a reused segment's stale deletion set and
        # re-adds segments a merge dropped, so replaced or deleted notes would keep matching.
        if self._snap is not None:
            self._snap.close()
            self._snap = None

    # -- reading -------------------------------------------------------------------------------------

    def _current(self) -> _Snapshot:
        # up_to_date() costs one directory listing and picks up other processes' commits (daemon + CLI).
        if self._snap is not None and not self._snap.up_to_date():
            self._reopen()
        if self._snap is None:
            self._snap = _Snapshot(self._ix, self._ix.reader())
            alive = {segid for _, _, segid in self._snap.leaves}
            self._lengths = {k: v for k, v in self._lengths.items() if k[0] in alive}
        return self._snap

    def search(
        self,
        query: str,
        limit: int = 100,
        where: dict[str, list[str]] | None = None,
        coverage: dict[str, tuple[float, int]] | None = None,
        context_weight: float = CONTEXT_WEIGHT,
        field_boosts: bool = True,
        weigh_form: bool = True,
    ) -> list[tuple[str, float]]:
        """[(path, bm25f score)] best first; [] when the query has no searchable terms.

        `coverage`, when given, is filled with each returned path's share of the query's weight
        and the number of query terms it holds (`_coverage`): BM25 is relative to the other
        notes, these are not. `context_weight` (`weighted_terms`), `field_boosts` (off: every
        field counts as the body does) and `weigh_form` (off: a request's form words weigh as its
        other words, in the coverage too) are there to measure what each adds (the recall
        evaluation's ablation)."""
        for key in where or {}:
            if key not in _FILTER_FIELDS:
                raise ValueError(f"unknown filter field {key!r}; expected one of {sorted(_FILTER_FIELDS)}")
        try:
            with self._lock:
                snap = self._current()
                terms = _query_terms(str(query), lambda t: self._idf(snap, t), context_weight, weigh_form)
                if not terms or limit <= 0:
                    return []
                fields = _SEARCH_FIELDS if field_boosts else tuple((f, 1.0) for f, _ in _SEARCH_FIELDS)
                hits = self._search(snap, terms, limit, where, fields)
                if coverage is not None and hits:
                    coverage.update(self._coverage(snap, str(query), terms, hits, weigh_form))
                return [(_stored_path(snap, d), score) for d, score in hits]
        except Exception:
            _log().exception("full-text search failed for %r", query)
            return []

    def _coverage(
        self,
        snap: _Snapshot,
        query: str,
        terms: list[tuple[str, float]],
        hits: list[tuple[int, float]],
        weigh_form: bool = True,
    ) -> dict[str, tuple[float, int]]:
        """Each hit's share of the query's weight, and how many of its terms it holds. The share is
        the weighted idf of the query terms it holds in
        any searched field over that of all the query's terms. A term no note holds counts with
        the idf of a term held by one note (the rarest there is): "coordinate system" asked of a
        vault with no such words is not answered by a note that holds only "use"."""
        rarest = math.log(snap.n / 2) + 1 if snap.n > 1 else 1.0
        every = _query_terms(query, lambda t: self._idf(snap, t) or rarest, weigh_form=weigh_form)
        total = sum(w * (self._idf(snap, t) or rarest) for t, w in every)
        if total <= 0:
            return {}
        docs = sorted(d for d, _ in hits)
        held = dict.fromkeys(docs, 0.0)
        count = dict.fromkeys(docs, 0)
        for term, weight in terms:
            worth = weight * self._idf(snap, term)
            found: set[int] = set()
            for field, _ in _SEARCH_FIELDS:
                for seg, offset, segid in snap.leaves:
                    ids = self._leaf_postings(seg, segid, field, term).ids
                    if len(ids):
                        found.update(d for d in docs if d not in found and _holds(ids, d - offset))
            for d in found:
                held[d] += worth
                count[d] += 1
        return {_stored_path(snap, d): (min(1.0, held[d] / total), count[d]) for d in docs}

    def known(self, query: str, weigh_form: bool = True, apart: Sequence[Terms] = ()) -> float:
        """The share of the query's weight that some note holds: its terms weighed as the
        coverage weighs them (`_coverage`: a term no note holds counts with the idf of the rarest
        term there is), those held by any note over all of them. What no single note's coverage
        says: a question about a person, place or library the vault never mentions is not one it
        can answer, however close some note's meaning. `apart`: the terms of notes kept out of
        the index (`doc_terms`: sealed notes held in memory), which hold a term as well. 1.0 for a
        query with no searchable term."""

        def held_apart(term: str) -> bool:
            return any(term in doc.counts[field] for doc in apart for field, _ in _SEARCH_FIELDS)

        try:
            with self._lock:
                snap = self._current()
                if snap.n == 0 and not apart:
                    return 0.0
                rarest = math.log(snap.n / 2) + 1 if snap.n > 1 else 1.0
                every = _query_terms(
                    str(query), lambda t: self._idf(snap, t) or rarest, weigh_form=weigh_form
                )
                weights = [
                    (w * (idf or rarest), idf > 0 or held_apart(t))
                    for t, w in every
                    for idf in (self._idf(snap, t) if snap.n else 0.0,)
                ]
        except Exception:  # as `search`: an index that cannot be read judges nothing
            _log().exception("full-text search failed for %r", query)
            return 1.0
        total = sum(w for w, _ in weights)
        return sum(w for w, held in weights if held) / total if total > 0 else 1.0

    def unheard(self, names: Sequence[str], apart: Sequence[Terms] = ()) -> list[str]:
        """The names (`names.named_words` of a query) no note holds, nor a near spelling of
        (`names.near_spelling`, among the index's terms of the same first letter): what says a
        question is about someone or something the vault never mentions. `apart`: the terms of
        notes kept out of the index (`doc_terms`), which hold a name as well. None in an empty
        vault, which answers nothing anyway."""
        if not names:
            return []
        try:
            with self._lock:
                snap = self._current()
                if snap.n == 0 and not apart:
                    return []
                budget = Budget()  # the near spellings looked for, bounded for the query's names together
                return [name for name in names if not self._heard(snap, name, apart, budget)]
        except Exception:  # as `known`: an index that cannot be read judges nothing
            _log().exception("full-text search failed for %r", names)
            return []

    @staticmethod
    def _heard(snap: _Snapshot, name: str, apart: Sequence[Terms], budget: Budget) -> bool:
        terms = analyze(name)
        if not terms:
            return True
        term = terms[0]
        if any(term in doc.counts[field] for doc in apart for field, _ in _SEARCH_FIELDS):
            return True
        if snap.n and any(snap.reader.doc_frequency(field, term) for field, _ in _SEARCH_FIELDS):
            return True
        held = [*snap.initial_terms(term[0])]
        held += [
            t for doc in apart for field, _ in _SEARCH_FIELDS for t in doc.counts[field] if t[:1] == term[0]
        ]
        return held_near(term, held, budget)

    def passage_scores(self, query: str, texts: list[str], weigh_form: bool = True) -> list[float]:
        """BM25 of each text scored as if it were a note's whole body (the body field's statistics
        and the query's weighted terms): how well one passage of a long note answers on its own.
        `weigh_form`: as `search`'s."""
        with self._lock:
            snap = self._current()
            if snap.n == 0:
                return [0.0] * len(texts)
            terms = _query_terms(str(query), lambda t: self._idf(snap, t), weigh_form=weigh_form)
            avgfl = snap.avg_field_length("body") or 1.0
            idf = {t: w * snap.idf("body", t) for t, w in terms}
        out = []
        for text in texts:
            tokens = analyze(text)
            counts = Counter(tokens)
            norm = K1 * ((1 - B) + B * len(tokens) / avgfl)
            out.append(
                sum(i * counts[t] * (K1 + 1) / (counts[t] + norm) for t, i in idf.items() if counts[t])
            )
        return out

    def query_weights(self, query: str) -> list[tuple[str, float]]:
        """The query's weighted terms (`weighted_terms`), each weight times the term's body idf:
        what a passage holding the term is worth. One snapshot for all terms, not one per term."""
        with self._lock:
            snap = self._current()
            return [
                (t, w * self._idf(snap, t)) for t, w in _query_terms(str(query), lambda t: self._idf(snap, t))
            ]

    def score_apart(self, query: str, docs: list[Terms]) -> list[float]:
        """BM25F of documents kept out of this index (`doc_terms` of each: notes whose text must
        never reach the disk), on the scale of `search`: document frequencies and field lengths
        are this index's plus those of the documents given, as if they had been indexed with it."""
        if not docs:
            return []
        with self._lock:
            snap = self._current()
            reader = snap.reader
            total = snap.n + len(docs)
            lengths = {
                f: (snap.avg_field_length(f) * snap.n if snap.n else 0.0) + sum(d.lengths[f] for d in docs)
                for f, _ in _SEARCH_FIELDS
            }

            # Document frequencies of the query's terms among the documents given, counted once.
            apart: Counter[tuple[str, str]] = Counter()
            asked = set(analyze(str(query)))
            for doc in docs:
                for field, _ in _SEARCH_FIELDS:
                    counts = doc.counts[field]
                    apart.update((field, t) for t in asked if t in counts)

            @functools.cache
            def frequency(field: str, term: str) -> int:
                inside = int(reader.doc_frequency(field, term)) if snap.n else 0
                return inside + apart[(field, term)]

            def body_idf(term: str) -> float:
                if not any(frequency(f, term) for f, _ in _SEARCH_FIELDS):
                    return 0.0
                return math.log(total / (frequency("body", term) + 1)) + 1

            terms = _query_terms(str(query), body_idf)
            idf = {
                (f, t): w * (math.log(total / (frequency(f, t) + 1)) + 1)
                for f, _ in _SEARCH_FIELDS
                for t, w in terms
            }
        out = []
        for doc in docs:
            score = 0.0
            for field, boost in _SEARCH_FIELDS:
                counts = doc.counts[field]
                found = [(t, counts[t]) for t, _ in terms if t in counts]
                if not found:
                    continue
                norm = K1 * ((1 - B) + B * doc.lengths[field] / (lengths[field] / total or 1.0))
                for term, tf in found:
                    score += boost * idf[(field, term)] * tf * (K1 + 1) / (tf + norm)
            out.append(score)
        return out

    def coverage_apart(
        self, query: str, docs: list[Terms], weigh_form: bool = True
    ) -> list[tuple[float, int]]:
        """Each document kept out of this index (`doc_terms`), as `search`'s coverage judges a
        hit: its share of the query's weight and how many of its terms it holds (`_coverage`; a
        term only such documents hold counts with the idf of the rarest term there is)."""
        if not docs:
            return []
        try:
            with self._lock:
                snap = self._current()
                rarest = math.log(snap.n / 2) + 1 if snap.n > 1 else 1.0
                every = [
                    (t, w * ((self._idf(snap, t) if snap.n else 0.0) or rarest))
                    for t, w in _query_terms(
                        str(query),
                        lambda t: (self._idf(snap, t) if snap.n else 0.0) or rarest,
                        weigh_form=weigh_form,
                    )
                ]
        except Exception:  # as `search`: an index that cannot be read judges nothing
            _log().exception("full-text search failed for %r", query)
            return [(0.0, 0) for _ in docs]
        total = sum(worth for _, worth in every)
        out = []
        for doc in docs:
            held = [worth for t, worth in every if any(t in doc.counts[f] for f, _ in _SEARCH_FIELDS)]
            out.append((min(1.0, sum(held) / total) if total > 0 else 0.0, len(held)))
        return out

    def idf(self, term: str) -> float:
        """The body field's idf of an analyzed term; 0 when no note holds it in any searched field."""
        with self._lock:
            return self._idf(self._current(), term)

    @staticmethod
    def _idf(snap: _Snapshot, term: str) -> float:
        idf = snap.idfs.get(term)
        if idf is None:
            if len(snap.idfs) >= _IDF_CACHE_SIZE:
                snap.idfs.clear()
            idf = snap.idfs[term] = _body_idf(snap, term)
        return idf

    def _search(
        self,
        snap: _Snapshot,
        terms: list[tuple[str, float]],
        limit: int,
        where: dict[str, list[str]] | None,
        fields: Sequence[tuple[str, float]] = _SEARCH_FIELDS,
    ) -> list[tuple[int, float]]:
        if snap.n == 0:
            return []
        allowed = None if where is None else self._filter(snap, where)
        return bm25f.top(snap.n, self._contributions(snap, terms, fields), limit, snap.deleted, allowed)

    def _contributions(
        self, snap: _Snapshot, terms: list[tuple[str, float]], fields: Sequence[tuple[str, float]]
    ) -> Iterator[bm25f.Contribution]:
        for field, boost in fields:
            norms: tuple[float, ...] | None = None
            for term, weight in terms:
                factor = None
                for seg, offset, segid in snap.leaves:
                    postings = self._leaf_postings(seg, segid, field, term)
                    if not len(postings.ids):
                        continue
                    if factor is None:
                        factor = boost * (weight * snap.idf(field, term))
                    if norms is None:
                        norms = bm25f.norms(snap.avg_field_length(field) or 1.0)
                    yield bm25f.Contribution(
                        offset, postings, self._leaf_lengths(seg, segid, field), factor, norms
                    )

    def _leaf_postings(self, seg: Any, segid: str, field: str, term: str) -> bm25f.Postings:
        # Segments are immutable (only their deletion sets change), so postings cache by segment id.
        key = (segid, field, term)
        hit = self._postings.get(key)
        if hit is not None:
            self._postings.move_to_end(key)
            return hit
        hit = self._postings[key] = bm25f.decode_postings(seg, field, term)
        self._postings_size += len(hit.ids) + 1
        while self._postings_size > _POSTINGS_BUDGET:
            _, old = self._postings.popitem(last=False)
            self._postings_size -= len(old.ids) + 1
        return hit

    def _leaf_lengths(self, seg: Any, segid: str, field: str) -> bytes:
        if (segid, field) not in self._lengths:
            self._lengths[segid, field] = bm25f.decode_lengths(seg, field)
        return self._lengths[segid, field]

    def _filter(self, snap: _Snapshot, where: dict[str, list[str]]) -> frozenset[int]:
        key = tuple(sorted((k, tuple(sorted(set(v)))) for k, v in where.items()))
        docs = snap.filters.get(key)
        if docs is None:
            docs = frozenset()
            if all(values for _, values in key):
                from whoosh import query as wq
                from whoosh.searching import Searcher

                clauses = [_filter_clause(wq, name, values) for name, values in key]
                searcher = Searcher(snap.reader, closereader=False)
                docs = frozenset(searcher.docs_for_query(wq.And(clauses)))
            if len(snap.filters) >= _FILTER_CACHE_SIZE:
                snap.filters.pop(next(iter(snap.filters)))
            snap.filters[key] = docs
        return docs

    def doc_count(self) -> int:
        """How many notes the index holds; 0 for an index that cannot be read (as `search` and
        `known`: a search goes on, judged as in an empty vault)."""
        try:
            with self._lock:
                return int(self._current().reader.doc_count())
        except Exception:
            _log().exception("full-text index could not be read")
            return 0

    def paths(self) -> set[str]:
        with self._lock:
            return {fields["path"] for fields in self._current().reader.all_stored_fields()}

    def close(self) -> None:
        with self._lock:
            self._reopen()

    def __enter__(self) -> FtsIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _cancel(writer: IndexWriter) -> None:
    try:
        writer.cancel()
    except Exception:  # a writer whose commit failed may already be closed; the original error matters
        pass


def _stored_version(directory: Path) -> int | None:
    try:
        return int(json.loads((directory / _META_FILE).read_text(encoding="utf-8"))["schema_version"])
    except Exception:
        return None


def _validated(ix: FileIndex) -> IndexReader:
    # Opening a reader opens every segment; reading a term and a stored document touches the parts where
    # truncated or overwritten segments show up. Damage deeper in postings surfaces at search time,
    # where it is logged and answered with [].
    reader = ix.reader()
    try:
        next(iter(reader.lexicon("body")), None)
        next(iter(reader.all_stored_fields()), None)
    except BaseException:
        reader.close()
        raise
    return reader


def _wipe(directory: Path) -> None:
    for entry in directory.iterdir():
        if entry.name.startswith(_OWNED_PREFIXES):
            if entry.is_dir() and not entry.is_symlink():
                import shutil  # only to wipe a damaged index

                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)


def _storage(directory: Path) -> FileStorage:
    # Without mmap: whoosh copies every mapped segment file it opens into memory (BytesIO), so a
    # reader of a large vault was slow to open and held a copy of the index; read from the file,
    # it opens at once and reads only the postings a query needs. The files of a segment then
    # share one file position, so a reader is not for two threads at once: every read here holds
    # the index's lock, and writers open readers of their own.
    return FileStorage(str(directory), supports_mmap=False)


def _open_dir(directory: Path) -> FileIndex:
    # Passing our schema skips unpickling the stored one, which depends on class paths.
    return FileIndex(_storage(directory), schema=SCHEMA, indexname=_INDEX_NAME)


def _create(directory: Path) -> FileIndex:
    ix = FileIndex.create(_storage(directory), SCHEMA, _INDEX_NAME)
    (directory / _META_FILE).write_text(json.dumps({"schema_version": SCHEMA_VERSION}), encoding="utf-8")
    return ix


def _filter_clause(wq: Any, name: str, values: tuple[str, ...]) -> Any:
    """One filter field's whoosh query (`wq`: whoosh.query, imported by the first filter)."""
    if name == "path_prefix":
        # A prefix "" (a glob that starts with a wildcard) narrows nothing.
        return wq.Every() if "" in values else wq.Or([wq.Prefix("path", v) for v in values])
    return wq.Or([wq.Term(name, v if name in _EXACT_FILTER_FIELDS else v.lower()) for v in values])
