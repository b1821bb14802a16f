from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tiered_memory.errors import IndexUnusable
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.index.vectors import META_NAME, READERS_LOCK, VectorIndex

DIM = 32


def rand(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)


def filled(
    directory: Path, notes: int = 50, capacity: int = 1024
) -> tuple[VectorIndex, dict[str, np.ndarray]]:
    index = VectorIndex.open(directory, DIM, "test:model", capacity=capacity)
    data = {f"notes/n{i}.md": rand(1 + i % 3, i) for i in range(notes)}
    index.upsert_many(list(data.items()))
    return index, data


def test_new_index_is_empty(tmp_path: Path) -> None:
    index = VectorIndex.open(tmp_path / "vec", DIM, "m")
    assert index.count() == 0 and index.paths() == set() and not index.rebuilt and index.created
    assert index.search(rand(1, 0)[0], k=5) == []
    assert index.search(rand(1, 0)[0], k=5, allowed=lambda p: True) == []


def test_upsert_and_search_finds_own_vector(tmp_path: Path) -> None:
    index, data = filled(tmp_path)
    assert index.count() == 50 and index.chunk_count() == sum(len(v) for v in data.values())
    hits = index.search(data["notes/n7.md"][0], k=5)
    assert hits[0][0] == "notes/n7.md" and hits[0][1] == pytest.approx(1.0, abs=1e-4)
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)


def test_fake_embedder_texts(tmp_path: Path) -> None:
    emb = FakeEmbedder(dim=64)
    index = VectorIndex.open(tmp_path, emb.dim, emb.model_id)
    texts = {
        "db.md": "Notes on the database migration to Postgres",
        "cat.md": "My cat likes tuna and sleeping in the sun",
        "trip.md": "Travel plans for the summer trip to Lisbon",
    }
    index.upsert_many([(p, emb.embed([t])) for p, t in texts.items()])
    assert index.search(emb.embed(["How do I migrate the database?"])[0], k=1)[0][0] == "db.md"


def test_one_entry_per_note_and_best_chunk_wins(tmp_path: Path) -> None:
    index = VectorIndex.open(tmp_path, DIM, "m")
    target = rand(1, 99)[0]
    near = target + 0.05 * rand(1, 1)[0]
    index.upsert("a.md", np.stack([rand(1, 2)[0], near, target + 0.02 * rand(1, 3)[0]]))  # 2 close chunks
    index.upsert("b.md", np.stack([target + 0.3 * rand(1, 4)[0]]))
    hits = index.search(target, k=10)
    assert [p for p, _ in hits] == ["a.md", "b.md"]  # a.md once, though two chunks beat b.md
    best = max(float(np.dot(v / np.linalg.norm(v), target / np.linalg.norm(target))) for v in (near,))
    assert hits[0][1] >= best - 1e-4


def test_k_distinct_notes_despite_many_chunks(tmp_path: Path) -> None:
    index = VectorIndex.open(tmp_path, DIM, "m")
    target = rand(1, 0)[0]
    # Three notes with 40 chunks each, all very close to the target, then 30 one-chunk notes.
    for n in range(3):
        index.upsert(f"big{n}.md", target + 0.01 * rand(40, 100 + n))
    index.upsert_many([(f"small{i}.md", rand(1, 200 + i)) for i in range(30)])
    hits = index.search(target, k=10)
    assert len(hits) == 10 and len({p for p, _ in hits}) == 10
    assert {p for p, _ in hits[:3]} == {"big0.md", "big1.md", "big2.md"}


def test_k_larger_than_count(tmp_path: Path) -> None:
    index, data = filled(tmp_path, notes=5)
    hits = index.search(rand(1, 1234)[0], k=50)
    assert {p for p, _ in hits} == set(data)


def test_replace_drops_old_chunks(tmp_path: Path) -> None:
    index, data = filled(tmp_path, notes=20)
    old = data["notes/n5.md"]
    new = rand(2, 555)
    index.upsert("notes/n5.md", new)
    assert index.count() == 20
    hit = index.search(old[0], k=20)
    assert dict(hit).get("notes/n5.md", 0.0) < 0.9  # the old vector is gone
    assert index.search(new[1], k=1)[0] == ("notes/n5.md", pytest.approx(1.0, abs=1e-4))
    index.upsert("notes/n5.md", np.zeros((0, DIM), dtype=np.float32))  # no chunks: removed
    assert "notes/n5.md" not in index.paths()


def test_delete(tmp_path: Path) -> None:
    index, data = filled(tmp_path, notes=10)
    index.delete("notes/n3.md")
    index.delete("notes/never-indexed.md")  # harmless
    assert "notes/n3.md" not in index.paths() and index.count() == 9
    assert all(p != "notes/n3.md" for p, _ in index.search(data["notes/n3.md"][0], k=10))


def test_slots_of_deleted_vectors_are_reused(tmp_path: Path) -> None:
    index = VectorIndex.open(tmp_path, DIM, "m", capacity=16)
    for round_ in range(20):  # the same 10 notes rewritten again and again
        index.upsert_many([(f"n{i}.md", rand(1, 1000 * round_ + i)) for i in range(10)])
    assert index.count() == 10
    assert index._index.element_count <= 20  # not 200: freed slots were filled again
    last = rand(1, 1000 * 19 + 4)[0]
    assert index.search(last, k=1)[0][0] == "n4.md"
    index.delete("n0.md")
    index.save()
    reopened = VectorIndex.open(tmp_path, DIM, "m")
    elements = reopened._index.element_count
    reopened.upsert("fresh.md", rand(1, 5))  # the slot freed before the save is reused after it
    assert reopened._index.element_count == elements


def test_allowed_filter(tmp_path: Path) -> None:
    index, data = filled(tmp_path, notes=60)
    allowed = {"notes/n1.md", "notes/n2.md", "notes/n40.md"}
    calls: list[str] = []

    def only(path: str) -> bool:
        calls.append(path)
        return path in allowed

    hits = index.search(data["notes/n7.md"][0], k=10, allowed=only)
    assert {p for p, _ in hits} == allowed
    assert len(calls) == len(set(calls))  # asked once per note, not once per chunk
    assert index.search(data["notes/n7.md"][0], k=10, allowed=lambda p: False) == []
    top = index.search(data["notes/n7.md"][0], k=3, allowed=lambda p: p != "notes/n7.md")
    assert len(top) == 3 and "notes/n7.md" not in {p for p, _ in top}


def test_capacity_grows(tmp_path: Path) -> None:
    index = VectorIndex.open(tmp_path, DIM, "m", capacity=16)
    for i in range(100):
        index.upsert(f"n{i}.md", rand(2, i))
    assert index.chunk_count() == 200 and index._index.get_max_elements() >= 200
    assert index.search(rand(2, 77)[1], k=1)[0][0] == "n77.md"


def test_persistence_round_trip(tmp_path: Path) -> None:
    index, data = filled(tmp_path, notes=80)
    index.delete("notes/n9.md")
    queries = rand(5, 4242)
    before = [index.search(q, k=10) for q in queries]
    index.save()
    again = VectorIndex.open(tmp_path, DIM, "test:model")
    assert not again.rebuilt and not again.created and again.paths() == index.paths()
    after = [again.search(q, k=10) for q in queries]
    assert [[p for p, _ in hits] for hits in after] == [[p for p, _ in hits] for hits in before]
    # It keeps working after reopening: replace, add past capacity, save again.
    again.upsert("notes/n1.md", rand(3, 31337))
    again.upsert_many([(f"more/m{i}.md", rand(1, 9000 + i)) for i in range(2000)])
    again.save()
    third = VectorIndex.open(tmp_path, DIM, "test:model")
    assert third.count() == 79 + 2000
    assert third.search(rand(3, 31337)[2], k=1)[0][0] == "notes/n1.md"
    graphs = sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".bin")
    assert len(graphs) == 1  # the superseded graph files were removed


def test_empty_index_round_trip(tmp_path: Path) -> None:
    VectorIndex.open(tmp_path, DIM, "m").save()
    again = VectorIndex.open(tmp_path, DIM, "m")
    assert not again.rebuilt and again.count() == 0
    again.upsert("a.md", rand(1, 1))
    assert again.search(rand(1, 1)[0], k=1)[0][0] == "a.md"


def test_model_change_rebuilds_empty(tmp_path: Path) -> None:
    index, _ = filled(tmp_path)
    index.save()
    other = VectorIndex.open(tmp_path, DIM, "another:model")
    assert other.rebuilt and other.count() == 0
    assert other.rebuild_reason and "another:model" in other.rebuild_reason
    other.upsert("x.md", rand(1, 5))
    other.save()
    assert VectorIndex.open(tmp_path, DIM, "another:model").paths() == {"x.md"}
    assert len([p for p in tmp_path.iterdir() if p.suffix == ".bin"]) == 1  # the old model's graph is gone


def test_dim_change_rebuilds(tmp_path: Path) -> None:
    index, _ = filled(tmp_path)
    index.save()
    other = VectorIndex.open(tmp_path, 16, "test:model")
    assert other.rebuilt and other.count() == 0 and other.dim == 16


def test_format_version_change_rebuilds(tmp_path: Path) -> None:
    index, _ = filled(tmp_path)
    index.save()
    meta = json.loads((tmp_path / META_NAME).read_text())
    meta["format"] = 999
    (tmp_path / META_NAME).write_text(json.dumps(meta))
    assert VectorIndex.open(tmp_path, DIM, "test:model").rebuilt


@pytest.mark.parametrize("damage", ["truncate_bin", "flip_bin", "delete_bin", "garbage_meta", "labels_meta"])
def test_corrupt_files_rebuild(tmp_path: Path, damage: str) -> None:
    index, _ = filled(tmp_path)
    index.save()
    meta_path = tmp_path / META_NAME
    bin_path = next(p for p in tmp_path.iterdir() if p.suffix == ".bin")
    raw = bin_path.read_bytes()
    if damage == "truncate_bin":
        bin_path.write_bytes(raw[: len(raw) // 2])
    elif damage == "flip_bin":
        bin_path.write_bytes(raw[:100] + bytes([raw[100] ^ 0xFF]) + raw[101:])
    elif damage == "delete_bin":
        bin_path.unlink()
    elif damage == "garbage_meta":
        meta_path.write_bytes(b"\x00{not json")
    else:
        meta = json.loads(meta_path.read_text())
        meta["labels"] = meta["labels"][:-1]
        meta_path.write_text(json.dumps(meta))
    reopened = VectorIndex.open(tmp_path, DIM, "test:model")
    assert reopened.rebuilt and reopened.count() == 0
    reopened.upsert("fresh.md", rand(1, 3))
    reopened.save()
    final = VectorIndex.open(tmp_path, DIM, "test:model")
    assert not final.rebuilt and final.paths() == {"fresh.md"}


def test_save_without_changes_is_a_no_op(tmp_path: Path) -> None:
    index, _ = filled(tmp_path, notes=5)
    index.save()
    before = sorted(p.name for p in tmp_path.iterdir())
    index.save()
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_bad_shapes_are_rejected(tmp_path: Path) -> None:
    index = VectorIndex.open(tmp_path, DIM, "m")
    with pytest.raises(ValueError):
        index.upsert("a.md", np.ones((2, DIM + 1), dtype=np.float32))
    with pytest.raises(ValueError):
        index.upsert("a.md", np.full((1, DIM), np.nan, dtype=np.float32))
    with pytest.raises(ValueError):
        index.search(np.ones(DIM + 1, dtype=np.float32))
    index.upsert("a.md", np.ones(DIM, dtype=np.float32))  # a single 1-D vector is one chunk
    assert index.chunk_count() == 1


@pytest.mark.parametrize("share", [0.004, 0.3])  # a narrow filter (scored exactly) and a broad one (hnswlib)
def test_filtered_search_matches_brute_force(tmp_path: Path, share: float) -> None:
    index = VectorIndex.open(tmp_path, DIM, "m")
    vectors = rand(1000, 7)
    index.upsert_many([(f"n{i}.md", vectors[i]) for i in range(1000)])
    admitted = {f"n{i}.md" for i in range(0, 1000, int(1 / share))}
    q = rand(1, 8)[0]
    hits = index.search(q, k=3, allowed=admitted.__contains__)
    sims = vectors @ (q / np.linalg.norm(q)) / np.linalg.norm(vectors, axis=1)
    ranked = [f"n{i}.md" for i in np.argsort(-sims) if f"n{i}.md" in admitted]
    assert [p for p, _ in hits] == ranked[:3]
    assert [s for _, s in hits] == pytest.approx(
        sorted(sims[[int(p[1:-3]) for p in ranked[:3]]], reverse=True), abs=1e-4
    )


def test_save_failure_is_an_index_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    index = VectorIndex.open(blocker / "vec", DIM, "m")
    index.upsert("a.md", rand(1, 1))
    with pytest.raises(IndexUnusable, match="cannot save the vector index"):
        index.save()


def test_partial_notes_are_saved_with_the_graph_and_completed_by_extend(tmp_path: Path) -> None:
    index = VectorIndex.open(tmp_path, DIM, "test:model")
    index.upsert_many([("long.md", rand(3, 1)), ("short.md", rand(1, 2))], partial={"long.md"})
    index.save()
    reopened = VectorIndex.open(tmp_path, DIM, "test:model")
    assert not reopened.rebuilt and reopened.partial_paths() == ["long.md"]
    deep = rand(4, 3)
    reopened.extend([("long.md", deep), ("short.md", rand(2, 4))])  # short.md is complete: ignored
    assert reopened.partial_paths() == [] and reopened.chunk_count() == 3 + 1 + 4
    assert reopened.search(deep[2], k=1)[0] == ("long.md", pytest.approx(1.0, abs=1e-4))
    reopened.save()
    again = VectorIndex.open(tmp_path, DIM, "test:model")
    assert again.partial_paths() == [] and again.chunk_count() == 8


def test_a_partial_note_embedded_afresh_or_deleted_waits_no_more(tmp_path: Path) -> None:
    index = VectorIndex.open(tmp_path, DIM, "test:model")
    index.upsert_many([("a.md", rand(2, 1)), ("b.md", rand(2, 2))], partial={"a.md", "b.md"})
    index.upsert_many([("a.md", rand(5, 3))])  # rewritten and embedded whole
    index.delete("b.md")
    assert index.partial_paths() == []
    index.extend([("a.md", rand(2, 4))])  # rows of a version that is gone: not added
    assert index.chunk_count() == 5


def test_a_format_1_index_is_read_as_complete(tmp_path: Path) -> None:
    """Format 1 (every chunk of every note) stays usable; format 2 adds the partial list."""
    index, data = filled(tmp_path, notes=10)
    index.save()
    meta = json.loads((tmp_path / META_NAME).read_text())
    assert meta["format"] == 2 and meta["partial"] == []
    meta["format"] = 1
    del meta["partial"]
    (tmp_path / META_NAME).write_text(json.dumps(meta))
    old = VectorIndex.open(tmp_path, DIM, "test:model")
    assert not old.rebuilt and old.count() == 10 and old.partial_paths() == []


def test_a_partial_list_naming_unknown_notes_rebuilds(tmp_path: Path) -> None:
    index, _ = filled(tmp_path, notes=5)
    index.save()
    meta = json.loads((tmp_path / META_NAME).read_text())
    meta["partial"] = ["notes/elsewhere.md"]
    (tmp_path / META_NAME).write_text(json.dumps(meta))
    assert VectorIndex.open(tmp_path, DIM, "test:model").rebuilt


def _save_in_another_process(directory: Path, path: str) -> None:
    """What `tmem reindex` does beside the daemon: open the index, change it, save it."""
    script = (
        "import sys, numpy as np\n"
        "from pathlib import Path\n"
        "from tiered_memory.index.vectors import VectorIndex\n"
        f"index = VectorIndex.open(Path(sys.argv[1]), {DIM}, 'test:model')\n"
        "index.upsert(sys.argv[2], np.ones((1, %d), dtype=np.float32))\n"
        "index.save()\n"
    ) % DIM
    subprocess.run([sys.executable, "-c", script, str(directory), path], check=True, timeout=60)


def graphs(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.suffix == ".bin")


def test_a_graph_another_process_superseded_goes_at_the_next_save(tmp_path: Path) -> None:
    """The daemon and a `tmem reindex` take turns saving: each removed only the graph it had read
    itself, so the other's stayed until the hourly sweep, and a day of reindexing filled .tmem/."""
    index, _ = filled(tmp_path)
    index.save()
    _save_in_another_process(tmp_path, "other.md")  # supersedes the graph this process read
    index.upsert("mine.md", rand(1, 7))
    index.save()  # and this save supersedes the other process's
    assert graphs(tmp_path) == [json.loads((tmp_path / META_NAME).read_text())["bin"]]
    assert VectorIndex.open(tmp_path, DIM, "test:model").has("mine.md")


def test_a_graph_is_kept_while_a_process_may_be_reading_it(tmp_path: Path) -> None:
    """A process loading the graph the meta named (or writing a new pair) holds the readers lock:
    no sweep removes a graph then, the next one does."""
    index, _ = filled(tmp_path)
    index.save()
    _save_in_another_process(tmp_path, "other.md")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys\n"
            f"handle = open({str(tmp_path / READERS_LOCK)!r}, 'a+')\n"
            "fcntl.flock(handle, fcntl.LOCK_SH)\n"
            "print('held', flush=True)\n"
            "sys.stdin.read()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        index.upsert("mine.md", rand(1, 7))
        index.save()
        assert len(graphs(tmp_path)) == 2  # the other process's graph may be being read: kept
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(10)
    index.upsert("mine.md", rand(1, 8))
    index.save()
    assert graphs(tmp_path) == [json.loads((tmp_path / META_NAME).read_text())["bin"]]
