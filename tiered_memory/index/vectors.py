"""The vector side index: chunk vectors of every note in an hnswlib graph, one hit per note.

A side index is disposable (the vault is the truth), so `open` never raises over what it finds on
disk: files from another model, dimension or format version, or damaged files, give a fresh empty
index with `rebuilt = True` and the caller re-embeds. A long note may hold only its first passages'
vectors for a while (`partial`): the deeper passages are added by a later pass (`extend`), and the
set of such notes is saved with the graph, so a pass interrupted at any point resumes where the last
save left it. Each save writes the graph to a new uniquely
named file and then atomically replaces the small meta file that names it, so a crash at any
moment leaves the previous or the new index, never a graph paired with the wrong label map.
"""

from __future__ import annotations

__all__ = [
    "ABSENT",
    "EF_CONSTRUCTION",
    "FORMAT_VERSION",
    "M",
    "META_NAME",
    "READERS_LOCK",
    "SPACE",
    "VectorIndex",
    "meta_stamp",
]

import contextlib
import fcntl
import json
import os
import random
import re
import secrets
import threading
import time
import zlib
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tiered_memory.errors import IndexUnusable

if TYPE_CHECKING:
    import numpy as np


def _hnswlib() -> Any:
    """hnswlib, imported by the first process that opens the vector index: keyword-only commands
    (a keyword search, a keyword reindex) never do."""
    import hnswlib

    return hnswlib


# 2: notes may be partially embedded (the "partial" list). A format-1 index holds every chunk of
# every note, which format 2 reads as it is (no partial notes); a tmem that knows format 1 only
# rebuilds a format-2 index rather than take its partial notes for complete ones.
FORMAT_VERSION = 2
READABLE_FORMATS = (1, 2)
META_NAME = "vectors.meta.json"
ABSENT = (0, 0, 0)  # the stamp of no meta file at all
SPACE = "cosine"
M = 16
EF_CONSTRUCTION = 200
_ORPHAN_AGE_S = 3600.0  # stray files of a crashed save; younger ones may be another process's live save
# Held shared by every process while it loads the graph the meta names or writes a new pair, and
# tried exclusive by a save's sweep: a graph file no meta names is removed at once when nobody
# holds it (hnswlib reads a graph into memory whole, so a loaded index needs its file no more).
READERS_LOCK = "readers.lock"
_OWN_FILE = re.compile(r"vectors\.[0-9a-f]{12}\.bin|vectors\.meta\.json\.[0-9a-f]{12}\.tmp")


def _file_crc(path: Path, sync: bool = False) -> tuple[int, int]:
    """(size, crc32) of a file, streamed: catches a damaged graph before hnswlib walks wild pointers."""
    crc, size = 0, 0
    with open(path, "rb") as fh:
        while block := fh.read(1 << 23):
            crc, size = zlib.crc32(block, crc), size + len(block)
        if sync:
            os.fsync(fh.fileno())  # the pass over a freshly saved graph also makes it durable
    return size, crc


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):  # not every platform opens directories; the files are synced
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class VectorIndex:
    """Paths map to labels of their chunks; labels are never reused, slots of deleted ones are."""

    def __init__(self, directory: Path, dim: int, model_id: str, capacity: int = 1024) -> None:
        if dim < 1:
            raise ValueError("dim must be positive")
        self.directory = Path(directory)
        self.dim = dim
        self.model_id = model_id
        self.rebuilt = False  # files were there but unusable: whatever was embedded must be again
        self.rebuild_reason: str | None = None
        self.created = False  # no files at all: as good as rebuilt if a catalog says notes were embedded
        self._capacity = max(16, capacity)
        self._index = _hnswlib().Index(space=SPACE, dim=dim)
        self._index.init_index(
            max_elements=self._capacity, ef_construction=EF_CONSTRUCTION, M=M, allow_replace_deleted=True
        )
        self._labels: dict[str, list[int]] = {}  # path -> labels of its chunks
        self._partial: set[str] = set()  # notes whose deeper passages are not embedded yet
        self._owner: dict[int, str] = {}  # label -> path, live labels only
        self._next_label = 0
        self._bin_name: str | None = None  # the graph file the on-disk meta names
        self._stale_bin: str | None = None  # a discarded index's graph, removed by the next save
        self._dirty = False
        self._lock = threading.RLock()
        # Indexes derived alongside this one (the multilingual vectors of notes not in English): saved whenever
        # it is, so every caller that saves this index (a build, the daemon) keeps them in step.
        self.alongside: list[VectorIndex] = []
        # Called after every save: what may be forgotten once these vectors are on disk (the
        # indexer's marks of refined drafts), whichever caller saved (a build, the daemon).
        self.on_saved: list[Callable[[], None]] = []
        self._changes = 0  # vectors added or removed in this process: a rebuild made meanwhile is void
        # The meta file as this index read it or last wrote it (`meta_stamp`): another process's
        # save shows as a file that differs from it, whenever the caller looks.
        self.disk_stamp: tuple[int, int, int] = ABSENT
        self.graph_builds = 0  # graphs built afresh by `rebuild` (a refinement's end)

    @classmethod
    def open(cls, directory: Path, dim: int, model_id: str, capacity: int = 1024) -> VectorIndex:
        index = cls(directory, dim, model_id, capacity)
        meta_path = index.directory / META_NAME
        # Taken before the read: a save by another process after it shows as a change.
        index.disk_stamp = meta_stamp(index.directory)
        try:
            if meta_path.exists():
                with _sharing(index.directory):  # no sweep removes the graph while it is read
                    index._load(meta_path)
            else:
                index.created = True
        except Exception as exc:  # any damage at all: start over rather than serve wrong vectors
            fresh = cls(directory, dim, model_id, capacity)
            fresh.rebuilt = True
            fresh.rebuild_reason = str(exc) if isinstance(exc, _Stale) else f"unreadable index ({exc!r})"
            fresh._dirty = True  # the next save replaces the stale files
            fresh._stale_bin = index._stale_bin
            fresh.disk_stamp = index.disk_stamp
            return fresh
        return index

    def _load(self, meta_path: Path) -> None:
        import numpy as np

        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if not isinstance(meta.get("bin"), str) or not _OWN_FILE.fullmatch(meta["bin"]):
            raise ValueError("the meta file names no graph file")
        self._stale_bin = meta["bin"]
        if meta.get("format") not in READABLE_FORMATS:
            raise _Stale(f"index format {meta.get('format')} is not {FORMAT_VERSION}")
        if meta.get("model_id") != self.model_id:
            raise _Stale(f"embedding model changed from {meta.get('model_id')!r} to {self.model_id!r}")
        if meta.get("dim") != self.dim or meta.get("space") != SPACE:
            raise _Stale(f"vector dimension changed from {meta.get('dim')} to {self.dim}")
        bin_path = self.directory / meta["bin"]
        if _file_crc(bin_path) != (meta["bin_size"], meta["bin_crc32"]):
            raise ValueError(f"{bin_path.name} does not match its checksum")
        graph = _hnswlib().Index(space=SPACE, dim=self.dim)
        graph.load_index(str(bin_path), max_elements=0, allow_replace_deleted=True)
        labels = np.asarray(meta["labels"], dtype=np.int64)
        counts = np.asarray(meta["counts"], dtype=np.int64)
        paths: list[str] = meta["paths"]
        found = (len(paths), int(counts.sum()), graph.element_count)
        if found != (len(counts), len(labels), meta["elements"]):
            raise ValueError("label map does not match the graph")
        if len(labels) and not np.isin(labels, np.asarray(graph.get_ids_list(), dtype=np.int64)).all():
            raise ValueError("label map names vectors the graph does not hold")
        bounds = np.cumsum(counts).tolist()
        flat = labels.tolist()
        start = 0
        for path, end in zip(paths, bounds, strict=True):
            chunk = flat[start:end]
            self._labels[path] = chunk
            self._owner.update(dict.fromkeys(chunk, path))
            start = end
        if len(self._owner) != len(flat) or len(self._labels) != len(paths):
            raise ValueError("a label or a path is listed twice")
        partial = meta.get("partial", [])
        if not isinstance(partial, list) or not set(partial) <= self._labels.keys():
            raise ValueError("the partial list names notes the index does not hold")
        self._partial = set(partial)
        self._index = graph
        self._next_label = int(meta["next_label"])
        self._bin_name = bin_path.name

    # --- changes -------------------------------------------------------------------------------

    def upsert(self, path: str, vectors: np.ndarray) -> None:
        self.upsert_many([(path, vectors)])

    def upsert_many(self, items: list[tuple[str, np.ndarray]], partial: Collection[str] = ()) -> None:
        """Replace each note's chunks; a note given no rows is removed. One add_items for all.
        Notes in `partial` got their first passages only: `partial_paths` lists them until
        `extend` adds the rest."""
        import numpy as np

        batch: dict[str, np.ndarray] = {}
        for path, vectors in items:  # a path given twice: the last one wins, as sequential upserts would
            rows = np.asarray(vectors, dtype=np.float32)
            rows = rows.reshape(1, -1) if rows.ndim == 1 else rows
            if rows.ndim != 2 or (rows.size and rows.shape[1] != self.dim):
                raise ValueError(f"vectors for {path!r} have shape {rows.shape}, expected (n, {self.dim})")
            if not np.isfinite(rows).all():
                raise ValueError(f"vectors for {path!r} contain NaN or infinity")
            batch[path] = rows.reshape(-1, self.dim)
        with self._lock:
            for path in batch:
                self._remove(path)
            kept = {p: rows for p, rows in batch.items() if len(rows)}
            if not kept:
                return
            data = np.ascontiguousarray(np.concatenate(list(kept.values())))
            first = self._next_label
            labels = np.arange(first, first + len(data), dtype=np.uint64)
            self._add(data, labels)
            self._next_label += len(data)
            for path, rows in kept.items():
                chunk = list(range(first, first + len(rows)))
                first += len(rows)
                self._labels[path] = chunk
                self._owner.update(dict.fromkeys(chunk, path))
                if path in partial:
                    self._partial.add(path)

    def extend(self, items: list[tuple[str, np.ndarray]]) -> None:
        """Add the deeper passages' vectors of partially embedded notes, which then count as
        complete. A note no longer partial (deleted, or embedded afresh meanwhile) is left as is:
        these rows were computed from a version of it that is gone."""
        import numpy as np

        with self._lock:
            kept = [(p, np.asarray(rows, dtype=np.float32).reshape(-1, self.dim)) for p, rows in items]
            kept = [(p, rows) for p, rows in kept if p in self._partial]
            for path, _ in kept:
                self._partial.discard(path)
                self._dirty = True
            kept = [(p, rows) for p, rows in kept if len(rows)]
            if not kept:
                return
            data = np.ascontiguousarray(np.concatenate([rows for _, rows in kept]))
            if not np.isfinite(data).all():
                raise ValueError("deeper passages' vectors contain NaN or infinity")
            first = self._next_label
            self._add(data, np.arange(first, first + len(data), dtype=np.uint64))
            self._next_label += len(data)
            for path, rows in kept:
                chunk = list(range(first, first + len(rows)))
                first += len(rows)
                self._labels[path].extend(chunk)
                self._owner.update(dict.fromkeys(chunk, path))

    def partial_paths(self) -> list[str]:
        """Notes whose deeper passages wait for a vector, in a stable order."""
        with self._lock:
            return sorted(self._partial)

    def delete(self, path: str) -> None:
        with self._lock:
            self._remove(path)

    def _remove(self, path: str) -> None:
        self._partial.discard(path)
        for label in self._labels.pop(path, ()):
            self._index.mark_deleted(label)
            del self._owner[label]
            self._dirty = True
            self._changes += 1

    def _add(self, data: np.ndarray, labels: np.ndarray) -> None:
        vacant = self._index.element_count - len(self._owner)  # slots of deleted vectors
        needed = self._index.element_count + max(0, len(data) - vacant)
        if needed > self._index.get_max_elements():
            self._index.resize_index(max(needed, 2 * self._index.get_max_elements(), self._capacity))
        self._dirty = True
        self._changes += 1
        # Refilling freed slots keeps the graph from growing with every edit of a note (hnswlib
        # supports that from many threads: its own stress test replaces with 50).
        self._index.add_items(data, labels, num_threads=-1, replace_deleted=vacant > 0)

    def rebuild(self, outside: Callable[[], AbstractContextManager[None]] | None = None) -> bool:
        """Build the graph afresh from the vectors it holds, same labels, in label order (as a
        build inserts them). A graph most of whose nodes were replaced (a vault's drafts refined
        to float32, each note deleted and added again) finds a query's neighbours less well than
        one built at once: on LoCoMo, vector-mode recall 0.2 points lower with the very same
        vectors. The building runs inside `outside` (a caller's lock let go, searches go on
        meanwhile); a change to the index meanwhile voids it (False), the next rebuild tries again."""
        import numpy as np

        with self._lock:
            changes = self._changes
            labels = sorted(self._owner)
            data = self._index.get_items(labels, return_type="numpy") if labels else None
            capacity = max(self._index.get_max_elements(), len(labels), self._capacity)
        with outside() if outside is not None else contextlib.nullcontext():
            graph = _hnswlib().Index(space=SPACE, dim=self.dim)
            graph.init_index(
                max_elements=capacity, ef_construction=EF_CONSTRUCTION, M=M, allow_replace_deleted=True
            )
            if data is not None:
                rows = np.ascontiguousarray(data, dtype=np.float32)
                graph.add_items(rows, np.asarray(labels, dtype=np.uint64), num_threads=-1)
        with self._lock:
            if self._changes != changes:
                return False
            self._index = graph
            self._dirty = True
            self.graph_builds += 1
        return True

    # --- queries -------------------------------------------------------------------------------

    def search(
        self, query: np.ndarray, k: int = 50, allowed: Callable[[str], bool] | None = None
    ) -> list[tuple[str, float]]:
        """[(path, cosine)] best first, one entry per note scored by its best chunk."""
        import numpy as np

        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.dim:
            raise ValueError(f"query has {q.shape[0]} dimensions, the index {self.dim}")
        with self._lock:
            live = len(self._owner)
            if k <= 0 or live == 0 or not np.isfinite(q).all() or not q.any():
                return []
            note_ok: Callable[[str], bool] | None = None
            exact = False
            if allowed is not None:
                verdicts: dict[str, bool] = {}  # allowed() once per note, not once per chunk visited

                def note_ok(path: str) -> bool:
                    ok = verdicts.get(path)
                    if ok is None:
                        ok = verdicts[path] = bool(allowed(path))
                    return ok

                # hnswlib walks ~1/selectivity of the graph to fill a filtered result: past a few
                # percent, scoring only the admitted chunks exactly is the faster road.
                sample = random.sample(tuple(self._labels), min(256, len(self._labels)))
                exact = sum(map(note_ok, sample)) < max(1, 0.05 * len(sample))
            fetch = min(live, 4 * k)  # notes with many chunks would otherwise crowd out others
            while True:
                labels, dists = self._exact(q, fetch, note_ok) if exact else self._knn(q, fetch, note_ok)
                hits = self._per_note(labels, dists)
                if len(hits) >= k or fetch >= live or len(labels) < fetch:
                    return hits[:k]
                fetch = min(live, 4 * fetch)

    def _knn(self, q: np.ndarray, fetch: int, note_ok: Callable[[str], bool] | None) -> tuple[Any, Any]:
        owner = self._owner
        keep = None if note_ok is None else (lambda label: label in owner and note_ok(owner[label]))
        self._index.set_ef(max(64, fetch))
        try:
            labels, dists = self._index.knn_query(q, k=fetch, num_threads=1, filter=keep)
            return labels[0], dists[0]
        except RuntimeError:
            # hnswlib found fewer than `fetch` (a narrow filter, or many deleted neighbours):
            # score the admitted chunks exactly instead.
            return self._exact(q, fetch, note_ok)

    def _exact(self, q: np.ndarray, fetch: int, note_ok: Callable[[str], bool] | None) -> tuple[Any, Any]:
        import numpy as np

        if note_ok is None:
            candidates = list(self._owner)
        else:
            candidates = [label for path, chunk in self._labels.items() if note_ok(path) for label in chunk]
        if not candidates:
            return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.float32)
        qn = q / np.linalg.norm(q)
        sims = np.concatenate(
            [  # stored vectors are unit length in the cosine space; batches bound the copy
                self._index.get_items(candidates[i : i + 8192], return_type="numpy") @ qn
                for i in range(0, len(candidates), 8192)
            ]
        )
        top = np.argsort(-sims, kind="stable")[:fetch]
        return np.asarray(candidates, dtype=np.uint64)[top], 1.0 - sims[top]

    def _per_note(self, labels: Any, dists: Any) -> list[tuple[str, float]]:
        hits: list[tuple[str, float]] = []
        seen: set[str] = set()
        for label, dist in zip(labels.tolist(), dists.tolist(), strict=True):
            path = self._owner.get(label)
            if path is not None and path not in seen:  # best first, so a note's first chunk is its best
                seen.add(path)
                hits.append((path, 1.0 - dist))
        return hits

    def chunks_of(self, path: str) -> int:
        """How many chunk vectors the index holds for a note (0 when none)."""
        with self._lock:
            return len(self._labels.get(path, ()))

    def vectors_of(self, path: str) -> np.ndarray:
        """The chunk vectors the index holds for a note, in the order they were added ((0, dim)
        for none); hnswlib's cosine space keeps them normalised."""
        import numpy as np

        with self._lock:
            labels = self._labels.get(path, [])
            if not labels:
                return np.zeros((0, self.dim), dtype=np.float32)
            return np.asarray(self._index.get_items(labels, return_type="numpy"), dtype=np.float32)

    def note_cosines(self, query: np.ndarray, paths: Iterable[str]) -> dict[str, float]:
        """Each of these notes' best chunk's cosine to `query`, as `search` scores a note; notes
        the index does not hold are left out."""
        import numpy as np

        q = np.asarray(query, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(q))
        if not norm or not np.isfinite(norm):
            return {}
        q = q / norm
        return {path: float((chunks @ q).max()) for path in paths if len(chunks := self.vectors_of(path))}

    def paths(self) -> set[str]:
        with self._lock:
            return set(self._labels)

    def has(self, path: str) -> bool:
        return path in self._labels

    def count(self) -> int:
        return len(self._labels)

    def chunk_count(self) -> int:
        return len(self._owner)

    # --- persistence ---------------------------------------------------------------------------

    def save(self) -> None:
        """Graph to a new file, then the meta naming it by atomic rename: a crash keeps the old pair."""
        self._save()
        for other in self.alongside:
            other.save()
        for saved in self.on_saved:
            saved()

    def _save(self) -> None:
        with self._lock:
            if not self._dirty and self._bin_name is not None:
                return
            token = secrets.token_hex(6)
            bin_path = self.directory / f"vectors.{token}.bin"
            tmp = self.directory / f"{META_NAME}.{token}.tmp"
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                with _sharing(self.directory):  # a sweep elsewhere leaves the new pair alone
                    self._index.save_index(str(bin_path))
                    size, crc = _file_crc(bin_path, sync=True)
                    expected = self._index.index_file_size()
                    if size != expected:  # hnswlib does not check its writes (a full disk)
                        raise OSError(f"only {size} of {expected} bytes of {bin_path.name} were written")
                    meta = json.dumps(self._meta(bin_path.name, size, crc), separators=(",", ":"))
                    with open(tmp, "w", encoding="utf-8") as fh:
                        fh.write(meta)
                        fh.flush()
                        os.fsync(fh.fileno())
                        written = os.fstat(fh.fileno())  # a rename keeps inode and mtime
                    os.replace(tmp, self.directory / META_NAME)
            except OSError as exc:
                for partial in (bin_path, tmp):
                    with contextlib.suppress(OSError):
                        partial.unlink()
                raise IndexUnusable(f"cannot save the vector index in {self.directory}: {exc}") from exc
            _fsync_dir(self.directory)
            self._bin_name, self._stale_bin, self._dirty = bin_path.name, None, False
            self.disk_stamp = (written.st_ino, written.st_mtime_ns, written.st_size)
            self._sweep()

    def _meta(self, bin_name: str, size: int, crc: int) -> dict[str, Any]:
        paths = list(self._labels)
        return {
            "format": FORMAT_VERSION,
            "model_id": self.model_id,
            "dim": self.dim,
            "space": SPACE,
            "hnswlib": getattr(_hnswlib(), "__version__", None),
            "bin": bin_name,
            "bin_size": size,
            "bin_crc32": crc,
            "elements": self._index.element_count,
            "next_label": self._next_label,
            "paths": paths,
            "counts": [len(self._labels[p]) for p in paths],
            "labels": [label for p in paths for label in self._labels[p]],
            "partial": sorted(self._partial),
        }

    def _sweep(self) -> None:
        """Drop the graph files no meta names: superseded ones (this process's and any other's)
        at once when no process is loading a graph or writing a pair, else only leftovers of
        crashed saves an hour old. The graph the meta on disk names now is always kept, whoever
        wrote it."""
        now = time.time()
        with _alone(self.directory) as alone:
            named = _named_graph(self.directory)
            if named is None:
                return  # no meta to tell which graph is current: nothing is removed
            for stray in self.directory.glob("vectors.*"):
                if stray.name in (named, self._bin_name) or not _OWN_FILE.fullmatch(stray.name):
                    continue
                with contextlib.suppress(OSError):  # gone already, or not ours to remove: harmless
                    if alone or now - stray.stat().st_mtime > _ORPHAN_AGE_S:
                        stray.unlink()


@contextlib.contextmanager
def _sharing(directory: Path) -> Iterator[None]:
    """A shared hold on the directory's readers lock (a folder nobody may write: no hold)."""
    try:
        handle = open(directory / READERS_LOCK, "a+")  # noqa: SIM115 - held across the yield
    except OSError:
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_SH)
        yield


@contextlib.contextmanager
def _alone(directory: Path) -> Iterator[bool]:
    """Whether no process holds the readers lock (held exclusive, without waiting, meanwhile)."""
    try:
        handle = open(directory / READERS_LOCK, "a+")  # noqa: SIM115 - held across the yield
    except OSError:
        yield False
        return
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True


def _named_graph(directory: Path) -> str | None:
    """The graph file the meta on disk names, None when there is no meta or it cannot be read."""
    try:
        named = json.loads((directory / META_NAME).read_text(encoding="utf-8")).get("bin")
    except (OSError, ValueError, AttributeError):
        return None
    return named if isinstance(named, str) else None


def meta_stamp(directory: Path) -> tuple[int, int, int]:
    """(inode, mtime ns, size) of the vector index's meta file in `directory`, ABSENT if none:
    what tells one save of the index from another, by any process."""
    try:
        st = os.stat(directory / META_NAME)
    except OSError:
        return ABSENT
    return (st.st_ino, st.st_mtime_ns, st.st_size)


class _Stale(Exception):
    """Files that are fine but belong to another model, dimension or format."""
