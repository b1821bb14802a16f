"""The catalog: a SQLite table of every indexed note's metadata and content hash (`.tmem/catalog.sqlite`).

It is the manifest that makes indexing incremental (mtime, size and hash per path), the id -> path
map, and the source of the fields ranking needs (tier, importance, confidence, dates) without
opening note files. Derived data: deleting it triggers a full rebuild of every side index.
"""

from __future__ import annotations

__all__ = ["Catalog", "NoteRow", "SCHEMA_VERSION"]

import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from tiered_memory.errors import LockTimeout
from tiered_memory.model.note import STATE_SUFFIX

# Seconds a statement waits for another process's lock before it fails.
_BUSY_TIMEOUT = 30
# The rows that are notes, not JSON state (`note.is_state_file`): what a count of notes counts.
_NOTES_ONLY = f" AND substr(path, -{len(STATE_SUFFIX)}) != '{STATE_SUFFIX}'"

SCHEMA_VERSION = 6

# Tables beside `notes`, owned by index.graph (links, names, tags), index.identity (ids of moved
# notes, blob times), index.attachments, index.authors (who wrote each path, from git's log) and
# index.indexer (`drafts`: notes whose vectors a backlog embedded in int8, still to refine to
# float32, with the content hash they were drafted from).
# Created and dropped with the catalog, so one version number covers them all (a table added
# later is created empty in an older catalog: its owner fills it from scratch).
_SIDE_TABLES = {
    "links": "source TEXT, target TEXT, target_key TEXT, plain_key TEXT, kind TEXT, heading TEXT",
    "names": "key TEXT, path TEXT, rank INTEGER",
    "note_tags": "tag TEXT, path TEXT",
    "ids": "path TEXT PRIMARY KEY, id TEXT",
    "id_aliases": "alias TEXT, path TEXT",
    "vanished": "hash TEXT, id TEXT, path TEXT, at REAL",
    "blob_times": "blob TEXT PRIMARY KEY, time REAL",
    "attachments": "path TEXT PRIMARY KEY, mtime REAL, size INTEGER, tier TEXT",
    "note_authors": "path TEXT, name TEXT, email TEXT, agent TEXT, PRIMARY KEY (path, name, email, agent)",
    "drafts": "path TEXT PRIMARY KEY, hash TEXT",
    # index.settled_ids: notes going by a settled id instead of their default one, and the id
    # changes whose side-file state (stats, recalls) `tmem maintain` still has to carry over.
    "settled_ids": "path TEXT PRIMARY KEY, base TEXT, id TEXT",
    "id_moves": "old TEXT, new TEXT, path TEXT, at REAL",
}
_SIDE_INDEXES = (
    "links_source ON links(source)",
    "links_target ON links(target_key)",
    "links_plain ON links(plain_key)",
    "names_key ON names(key)",
    "names_path ON names(path)",
    "note_tags_tag ON note_tags(tag)",
    "note_tags_path ON note_tags(path)",
    "id_aliases_alias ON id_aliases(alias)",
    "id_aliases_path ON id_aliases(path)",
    "vanished_hash ON vanished(hash)",
    "note_authors_who ON note_authors(name, email, agent)",
    "settled_ids_base ON settled_ids(base)",
)
# Tables whose rows mirror files on disk: a change to which files they hold, or to a file's
# mtime or size, raises the catalog's generation
# (`Catalog.generation`): it tells a freshness scan whether the catalog moved since its last look.
_MIRROR_TABLES = ("notes", "attachments")
_GENERATION = "generation"
# Rows of these tables are derived from one note file: deleting its row deletes them. (Identity
# tables outlive a note's row: index.identity moves them along when the note moves.)
_PATH_COLUMNS = {"links": "source", "names": "path", "note_tags": "path", "drafts": "path"}


@dataclass
class NoteRow:
    path: str
    id: str
    title: str = ""
    tier: str = ""
    category: str = "note"
    status: str = "active"
    project: str = ""
    session: str = ""
    seq: int = 0  # position within its session (conversation turns), 0 when not ordered
    tags: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)
    importance: float = 0.5
    confidence: float = 1.0
    access_count: int = 0
    created: float = 0.0
    updated: float = 0.0
    superseded_by: str = ""
    sensitive: bool = False
    snippet: str = ""
    mtime: float = 0.0
    size: int = 0
    hash: str = ""
    # Files the indexer could not read as notes (binary, too large) keep a row so they are not
    # re-read on every refresh; `skipped` says why and they appear in no index.
    skipped: str = ""
    vec_hash: str = ""
    # Why the note's frontmatter was not read (malformed YAML, no closing ---): it is indexed as
    # plain text, and status and doctor name it until a person fixes it, whichever process indexed it.
    warning: str = ""
    # Who said it: the `speaker:` of a conversation turn filed as a note of its own, "" otherwise.
    # Session lifts tell a reply by the other person from the same person's next message by it.
    speaker: str = ""


_COLUMNS = [f.name for f in fields(NoteRow)]
_LIST_COLUMNS = {"tags", "entities", "aliases"}


def _to_db(row: NoteRow) -> tuple[Any, ...]:
    # getattr, not dataclasses.asdict: asdict deep-copies every list, a tenth of a rebuild's catalog time.
    values = (getattr(row, c) for c in _COLUMNS)
    return tuple(
        json.dumps(list(v), ensure_ascii=False) if c in _LIST_COLUMNS else v
        for c, v in zip(_COLUMNS, values, strict=True)
    )


_LIST_POSITIONS = [i for i, c in enumerate(_COLUMNS) if c in _LIST_COLUMNS]
_SENSITIVE = _COLUMNS.index("sensitive")


def _from_db(values: Sequence[Any]) -> NoteRow:
    # Positional, with empty lists not parsed: a search turns a few hundred rows into NoteRows,
    # and keyword arguments plus three json.loads a row were most of that time.
    data = list(values)
    for i in _LIST_POSITIONS:
        data[i] = json.loads(data[i]) if data[i] and data[i] != "[]" else []
    data[_SENSITIVE] = bool(data[_SENSITIVE])
    return NoteRow(*data)


class Catalog:
    def __init__(self, path: Path, busy_timeout: float = _BUSY_TIMEOUT) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        self.created = not path.exists()
        self.db = sqlite3.connect(path, timeout=busy_timeout, check_same_thread=False)
        try:
            self._setup()
        except sqlite3.OperationalError as exc:
            # Locked past the timeout, or the like: the file is sound, and other processes use it.
            self.db.close()
            if "locked" in str(exc):
                raise LockTimeout(
                    f"the index catalog {path} stayed locked by another process for {busy_timeout:g} s"
                ) from exc
            raise
        except sqlite3.DatabaseError:
            # Not a database (a damaged or foreign file): the catalog is derived data, start over.
            self.db.close()
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
            self.db = sqlite3.connect(path, timeout=busy_timeout, check_same_thread=False)
            self.created = True
            self._setup()

    def _setup(self) -> None:
        self._wal()
        self.db.execute("PRAGMA synchronous=NORMAL")
        # One process at a time from reading the schema version to setting it: processes that open
        # a new catalog together would otherwise each see version 0, and one would drop the tables
        # another has just made and is already writing to.
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self._schema()
        except BaseException:
            self.db.rollback()
            raise
        self.db.commit()

    def _wal(self) -> None:
        """Write-ahead logging, so readers never wait for a writer. Switching a new file to it takes
        the whole file, and SQLite answers "locked" at once, without waiting, while another process
        holds it: wait here instead, as long as any other statement would."""
        deadline = time.monotonic() + self.busy_timeout
        while True:
            try:
                self.db.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def _schema(self) -> None:
        version = self._user_version()
        if version != SCHEMA_VERSION:
            # Another version's catalog: start over; the caller sees `created` and rebuilds the indexes.
            self.db.execute("DROP TABLE IF EXISTS notes")
            self.db.execute("DROP TABLE IF EXISTS meta")
            for table in _SIDE_TABLES:
                self.db.execute(f"DROP TABLE IF EXISTS {table}")
            self.created = True
        cols = ", ".join(f"{c} {'TEXT PRIMARY KEY' if c == 'path' else ''}" for c in _COLUMNS)
        self.db.execute(f"CREATE TABLE IF NOT EXISTS notes ({cols})")
        self.db.execute("CREATE INDEX IF NOT EXISTS notes_id ON notes(id)")
        self.db.execute("CREATE INDEX IF NOT EXISTS notes_session ON notes(session)")
        self.db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
        for table, columns in _SIDE_TABLES.items():
            self.db.execute(f"CREATE TABLE IF NOT EXISTS {table} ({columns})")
        for index in _SIDE_INDEXES:
            self.db.execute(f"CREATE INDEX IF NOT EXISTS {index}")
        # A random start: a catalog deleted and rebuilt never reaches a number its predecessor had.
        start = str(int.from_bytes(os.urandom(6), "big"))
        self.db.execute("INSERT OR IGNORE INTO meta VALUES (?, ?)", (_GENERATION, start))
        for table in _MIRROR_TABLES:
            for name, event in (
                ("insert", "INSERT"),
                ("update", "UPDATE OF path, mtime, size"),
                ("delete", "DELETE"),
            ):
                self.db.execute(
                    f"CREATE TRIGGER IF NOT EXISTS {table}_{name}_generation AFTER {event} ON {table}"
                    f" BEGIN UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = '{_GENERATION}'; END"
                )
        self.db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def _user_version(self) -> int:
        try:
            return int(self.db.execute("PRAGMA user_version").fetchone()[0])
        except sqlite3.DatabaseError:
            return -1

    def close(self) -> None:
        self.db.close()

    # ---- meta ---------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        found = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if found is None else str(found[0])

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
        self.db.commit()

    def generation(self) -> int:
        """A number that changes whenever a note's or an attachment's row does, in any process."""
        found = self.db.execute("SELECT value FROM meta WHERE key=?", (_GENERATION,)).fetchone()
        return int(found[0]) if found else -1

    # ---- rows ---------------------------------------------------------------------------
    def stats(self, paths: Iterable[str] | None = None) -> dict[str, tuple[float, int, str]]:
        """path -> (mtime, size, hash): of every note, or of just these paths (a few lookups
        instead of a 100k-row dict when the daemon reindexes one edited note)."""
        select = "SELECT path, mtime, size, hash FROM notes"
        found = self.db.execute(select) if paths is None else self._where_path_in(select, paths)
        return {p: (m, s, h) for p, m, s, h in found}

    def upsert(self, rows: Iterable[NoteRow]) -> None:
        marks = ", ".join("?" for _ in _COLUMNS)
        self.db.executemany(f"INSERT OR REPLACE INTO notes VALUES ({marks})", (_to_db(r) for r in rows))
        self.db.commit()

    def delete(self, paths: Iterable[str]) -> None:
        wanted = [(p,) for p in paths]
        self.db.executemany("DELETE FROM notes WHERE path=?", wanted)
        for table, column in _PATH_COLUMNS.items():
            self.db.executemany(f"DELETE FROM {table} WHERE {column}=?", wanted)
        self.db.commit()

    def clear(self) -> None:
        """Delete every note row and what derives from it (a full rebuild); identity and blob
        times stay, they are not derived from the current files alone."""
        for table in ("notes", "attachments", *_PATH_COLUMNS):
            self.db.execute(f"DELETE FROM {table}")
        self.db.commit()

    def touch(self, items: Iterable[tuple[str, float, int]]) -> None:
        self.db.executemany("UPDATE notes SET mtime=?, size=? WHERE path=?", ((m, s, p) for p, m, s in items))
        self.db.commit()

    def set_vec_hash(self, items: Iterable[tuple[str, str]]) -> None:
        self.db.executemany("UPDATE notes SET vec_hash=? WHERE path=?", ((h, p) for p, h in items))
        self.db.commit()

    def reset_vectors(self) -> None:
        self.db.execute("UPDATE notes SET vec_hash=''")
        self.db.execute("DELETE FROM drafts")  # every note is embedded again, drafted or not
        self.db.commit()

    # ---- draft vectors (index.indexer: a backlog embedded in int8, refined to float32 later) ----
    def mark_drafts(self, items: Iterable[tuple[str, str]]) -> None:
        """(path, content hash): these notes' vectors are about to be int8 drafts."""
        self.db.executemany("INSERT OR REPLACE INTO drafts VALUES (?, ?)", items)
        self.db.commit()

    def clear_drafts(self, items: Iterable[tuple[str, str]]) -> None:
        """(path, hash) of marks whose float32 vectors are saved; a mark made again since (another
        hash) stays."""
        self.db.executemany("DELETE FROM drafts WHERE path=? AND hash=?", items)
        self.db.commit()

    def drafts(self, paths: Iterable[str]) -> dict[str, str]:
        """path -> the hash it was drafted from, for those of these paths that are marked."""
        return {p: h for p, h in self._where_path_in("SELECT path, hash FROM drafts", paths)}

    _REFINABLE = "FROM drafts d JOIN notes n ON n.path = d.path WHERE n.skipped = '' AND n.vec_hash = n.hash"

    def refinable(self) -> dict[str, str]:
        """path -> mark hash of the drafts whose note waits for no first vector (a note edited
        since it was drafted is embedded again by the first pass), in path order."""
        query = f"SELECT d.path, d.hash {self._REFINABLE} ORDER BY d.path"
        return {p: h for p, h in self.db.execute(query)}

    def count_drafts(self) -> int:
        """Notes whose vectors are int8 drafts still to refine (`refinable`)."""
        return int(self.db.execute(f"SELECT COUNT(*) {self._REFINABLE}").fetchone()[0])

    def get(self, path: str) -> NoteRow | None:
        found = self.db.execute(f"SELECT {', '.join(_COLUMNS)} FROM notes WHERE path=?", (path,)).fetchone()
        return None if found is None else _from_db(found)

    def rows(self, paths: Iterable[str] | None = None) -> dict[str, NoteRow]:
        select = f"SELECT {', '.join(_COLUMNS)} FROM notes"
        if paths is None:
            return {r.path: r for r in map(_from_db, self.db.execute(select + " WHERE skipped=''"))}
        return {r.path: r for r in map(_from_db, self._where_path_in(select, paths))}

    def sizes(self, paths: Iterable[str]) -> dict[str, int]:
        """path -> size on disk of these paths: what ranking asks of a keyword candidate before it
        reads the file, without building whole rows."""
        return {p: s for p, s in self._where_path_in("SELECT path, size FROM notes", paths)}

    def updated_and_entities(self, paths: Iterable[str]) -> dict[str, tuple[float, list[str]]]:
        """path -> (when last updated, else its mtime; its entities) of these paths: what ranking
        related notes asks of thousands of candidates, without building whole rows."""
        out: dict[str, tuple[float, list[str]]] = {}
        select = "SELECT path, updated, mtime, entities FROM notes"
        for path, updated, mtime, entities in self._where_path_in(select, paths):
            named = json.loads(entities) if entities and entities != "[]" else []
            out[path] = (float(updated or mtime or 0.0), named if isinstance(named, list) else [])
        return out

    def _where_path_in(self, select: str, paths: Iterable[str]) -> Iterator[tuple[Any, ...]]:
        """The rows of `select` for these paths, in batches under SQLite's bound-parameter limit."""
        wanted = list(dict.fromkeys(paths))
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            marks = ", ".join("?" for _ in part)
            yield from self.db.execute(f"{select} WHERE path IN ({marks})", part)

    def by_id(self, note_id: str) -> list[NoteRow]:
        """Notes with this id; failing that, the note that had it before a move (index.identity)."""
        select = f"SELECT {', '.join(_COLUMNS)} FROM notes WHERE id=? AND skipped=''"
        found = [_from_db(v) for v in self.db.execute(select, (note_id,))]
        if found:
            return found
        moved = [p for (p,) in self.db.execute("SELECT path FROM id_aliases WHERE alias=?", (note_id,))]
        return [row for row in self.rows(moved).values() if not row.skipped]

    def session_rows(self, sessions: Iterable[str]) -> dict[str, list[NoteRow]]:
        """Every note of these sessions, in session order (seq, then created, then path)."""
        wanted = [s for s in dict.fromkeys(sessions) if s]
        out: dict[str, list[NoteRow]] = {}
        select = f"SELECT {', '.join(_COLUMNS)} FROM notes WHERE skipped='' AND session IN"
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            marks = ", ".join("?" for _ in part)
            for values in self.db.execute(f"{select} ({marks})", part):
                row = _from_db(values)
                out.setdefault(row.session, []).append(row)
        for rows in out.values():
            rows.sort(key=lambda r: (r.seq, r.created, r.path))
        return out

    def has_pending_vectors(self) -> bool:
        query = "SELECT 1 FROM notes WHERE skipped='' AND vec_hash != hash LIMIT 1"
        return self.db.execute(query).fetchone() is not None

    def pending_vectors(self) -> list[str]:
        return [p for (p,) in self.db.execute("SELECT path FROM notes WHERE skipped='' AND vec_hash != hash")]

    def count(self, *, notes_only: bool = False) -> int:
        """Indexed files; with `notes_only`, without JSON state (`note.is_state_file`)."""
        where = _NOTES_ONLY if notes_only else ""
        return int(self.db.execute(f"SELECT COUNT(*) FROM notes WHERE skipped=''{where}").fetchone()[0])

    def skipped(self) -> list[tuple[str, str]]:
        return [(p, s) for p, s in self.db.execute("SELECT path, skipped FROM notes WHERE skipped != ''")]

    def warnings(self) -> list[tuple[str, str]]:
        """(path, why) of every indexed note whose frontmatter could not be read, by path."""
        query = "SELECT path, warning FROM notes WHERE skipped='' AND warning != '' ORDER BY path"
        return [(p, w) for p, w in self.db.execute(query)]

    def counts(self, column: str, *, notes_only: bool = False) -> dict[str, int]:
        if column not in ("tier", "category", "status"):
            raise ValueError(column)
        where = _NOTES_ONLY if notes_only else ""
        query = f"SELECT {column}, COUNT(*) FROM notes WHERE skipped=''{where} GROUP BY {column}"
        return {str(k): int(v) for k, v in self.db.execute(query)}
