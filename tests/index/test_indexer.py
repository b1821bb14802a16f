"""Incremental indexing: the catalog, Whoosh and hnswlib follow the files, and never touch the notes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers import FIXED_NOW, git_log, write

from tiered_memory.app.memory import Memory
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.index.indexer import UNTOUCHED_TEMPLATE, snippet
from tiered_memory.model.search import SearchRequest
from tiered_memory.storage.vault import Vault

NOTE = "memory/long-term/knowledge_base/domains/kafka.md"
TEMPLATES = 7  # files under memory/ in a fresh vault: template notes nobody has written in yet
SEED_COUNT = 0  # of them in the indexes: none until a person writes in one

OpenMemory = Callable[..., Memory]


@pytest.fixture
def open_memory(vault_path: Path) -> Iterator[OpenMemory]:
    """A new Memory on the fixture vault, as a fresh process would open it; all closed at the end."""
    opened: list[Memory] = []

    def make(dim: int = 64) -> Memory:
        memory = Memory(Vault(vault_path), embedder_factory=lambda: FakeEmbedder(dim), now=lambda: FIXED_NOW)
        opened.append(memory)
        return memory

    yield make
    for memory in opened:
        memory.close()


@pytest.fixture
def indexed(open_memory: OpenMemory) -> Memory:
    """A Memory on a vault an earlier process already indexed (catalog, full text and vectors exist)."""
    first = open_memory()
    first.refresh(vectors=True)
    first.close()
    return open_memory()


def keyword(memory: Memory, query: str, **filters: list[str]) -> list[str]:
    request = SearchRequest(query, mode="keyword", **filters)  # type: ignore[arg-type]
    return [hit.path for hit in memory.search(request, record_access=False).hits]


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Bytes and mtime of every file tmem must never rewrite behind the user's back."""
    out: dict[str, tuple[bytes, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in (".git", ".tmem")]
        for name in filenames:
            if name == ".tmem-access.jsonl":
                continue
            path = Path(dirpath) / name
            out[path.relative_to(root).as_posix()] = (path.read_bytes(), path.stat().st_mtime_ns)
    return out


# ---- keyword side: catalog + full text ---------------------------------------------------------


def test_first_refresh_keeps_untouched_templates_out_of_the_indexes(memory: Memory) -> None:
    report = memory.refresh()
    assert report.added == SEED_COUNT
    assert report.warnings == []
    assert memory.indexer.catalog.count() == SEED_COUNT
    assert memory.indexer.fts.doc_count() == SEED_COUNT
    assert {why for _path, why in memory.indexer.catalog.skipped()} == {UNTOUCHED_TEMPLATE}
    assert len(memory.indexer.catalog.skipped()) == TEMPLATES


def test_a_file_added_by_hand_is_indexed(indexed: Memory, vault_path: Path) -> None:
    indexed.refresh()
    write(vault_path, NOTE, "# Kafka\n\nRetention is seven days on the orders topic.\n")
    report = indexed.refresh()
    assert (report.added, report.changed, report.deleted) == (1, 0, 0)
    assert report.unchanged == TEMPLATES
    assert keyword(indexed, "retention orders") == [NOTE]
    row = indexed.indexer.catalog.get(NOTE)
    assert row is not None
    assert (row.id, row.title, row.tier) == ("knowledge-base-domains-kafka", "kafka", "long")  # its file name


def test_a_changed_file_is_reindexed(indexed: Memory, vault_path: Path) -> None:
    write(vault_path, NOTE, "# Kafka\n\nThe broker uses zookeeper.\n")
    indexed.refresh()
    assert keyword(indexed, "zookeeper") == [NOTE]
    write(vault_path, NOTE, "# Kafka\n\nThe broker now runs kraft mode, no more coordinator.\n", bump=5)
    report = indexed.refresh()
    assert (report.added, report.changed, report.deleted) == (0, 1, 0)
    assert keyword(indexed, "kraft") == [NOTE]
    assert keyword(indexed, "zookeeper") == []
    assert "kraft" in indexed.indexer.catalog.get(NOTE).snippet  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "opening",
    [
        "![](https://example.org/img/boiler_room_2026.png)",
        "![[boiler_room_2026.png]]",
        '![Boiler](b_r.jpg "x")',
    ],
)
def test_a_note_opening_with_an_image_shows_its_first_words(
    indexed: Memory, vault_path: Path, opening: str
) -> None:
    """An image embed is no text: the snippet is the words after it, an underscore inside a word kept."""
    write(vault_path, NOTE, f"{opening}\n\nThe boiler_room valve is _checked_ every **May**.\n")
    indexed.refresh()
    row = indexed.indexer.catalog.get(NOTE)
    assert row is not None and row.snippet == "The boiler_room valve is checked every May."


def test_a_touched_but_unchanged_file_is_not_reindexed(indexed: Memory, vault_path: Path) -> None:
    path = write(vault_path, NOTE, "# Kafka\n\nsame text\n")
    indexed.refresh()
    st = path.stat()
    os.utime(path, (st.st_atime, st.st_mtime + 10))
    report = indexed.refresh()
    assert report.touched == 0
    assert indexed.indexer.catalog.get(NOTE).mtime == path.stat().st_mtime  # type: ignore[union-attr]
    # ...and the new mtime is remembered: the next refresh does not even hash it again.
    calls: list[str] = []
    original = indexed.vault.read_text
    indexed.vault.read_text = lambda rel: calls.append(rel) or original(rel)  # type: ignore[method-assign]
    indexed.refresh()
    assert calls == []


def test_unchanged_files_are_not_read_again(
    indexed: Memory, vault_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(vault_path, NOTE, "# Kafka\n")
    indexed.refresh(vectors=True)
    calls: list[str] = []
    original = indexed.vault.read_text

    def spy(rel: str) -> str:
        calls.append(rel)
        return original(rel)

    monkeypatch.setattr(indexed.vault, "read_text", spy)
    report = indexed.refresh(vectors=True)
    assert report.touched == 0
    assert report.embedded == 0
    assert report.unchanged == TEMPLATES + 1
    assert calls == []


def test_a_second_refresh_in_the_process_that_created_the_index_is_incremental(
    memory: Memory, vault_path: Path
) -> None:
    # The daemon (and any long-lived Memory) is the process that first creates the catalog.
    assert memory.refresh().added == SEED_COUNT
    write(vault_path, NOTE, "# Kafka\n")
    report = memory.refresh()
    assert report.rebuilt == []
    assert (report.added, report.unchanged) == (1, TEMPLATES)


def test_after_rebuilding_a_corrupt_fulltext_index_refreshes_are_incremental(
    open_memory: OpenMemory, vault_path: Path
) -> None:
    open_memory().refresh()
    for path in (vault_path / ".tmem" / "fts").iterdir():
        path.write_bytes(b"garbage")
    memory = open_memory()
    assert "full text" in memory.refresh().rebuilt
    write(vault_path, NOTE, "# Kafka\n")
    report = memory.refresh()
    assert report.rebuilt == []
    assert (report.added, report.unchanged) == (1, TEMPLATES)


@pytest.mark.parametrize("frontmatter", [True, False])
def test_a_move_between_tiers_keeps_the_id(indexed: Memory, vault_path: Path, frontmatter: bool) -> None:
    head = "---\nid: kafka-retention-1a2b\ntitle: Kafka retention\n---\n" if frontmatter else ""
    src = "memory/short-term/kafka-retention.md"
    dst = "memory/archive/kafka-retention.md"
    write(vault_path, src, head + "Retention is seven days.\n")
    indexed.refresh(vectors=True)
    note_id = indexed.indexer.catalog.get(src).id  # type: ignore[union-attr]
    os.rename(vault_path / src, vault_path / dst)
    report = indexed.refresh(vectors=True)
    assert (report.added, report.deleted) == (1, 1)
    assert indexed.indexer.catalog.get(src) is None
    rows = indexed.indexer.catalog.by_id(note_id)
    assert [(r.path, r.tier) for r in rows] == [(dst, "archive")]
    assert keyword(indexed, "retention") == [dst]
    assert src not in indexed.indexer.fts.paths()
    vectors = indexed.indexer.vectors()
    assert vectors is not None
    assert dst in vectors.paths() and src not in vectors.paths()


def test_a_deleted_file_leaves_every_index(indexed: Memory, vault_path: Path) -> None:
    write(vault_path, NOTE, "# Kafka\n\nRetention is seven days.\n")
    indexed.refresh(vectors=True)
    vectors = indexed.indexer.vectors()
    assert vectors is not None and NOTE in vectors.paths()
    (vault_path / NOTE).unlink()
    report = indexed.refresh(vectors=True)
    assert report.deleted == 1
    assert indexed.indexer.catalog.get(NOTE) is None
    assert NOTE not in indexed.indexer.fts.paths()
    assert NOTE not in vectors.paths()
    assert keyword(indexed, "retention") == []
    hits = indexed.search(SearchRequest("retention seven days", mode="vector"), record_access=False).hits
    assert NOTE not in [h.path for h in hits]


def test_deleting_the_state_folder_rebuilds_on_the_next_search(
    open_memory: OpenMemory, vault_path: Path
) -> None:
    write(vault_path, NOTE, "# Kafka\n\nRetention is seven days.\n")
    first = open_memory()
    first.refresh(vectors=True)
    first.close()
    shutil.rmtree(vault_path / ".tmem")
    again = open_memory()
    hits = again.search(SearchRequest("kafka retention"), record_access=False).hits
    assert hits and hits[0].path == NOTE
    assert again.indexer.catalog.count() == SEED_COUNT + 1
    assert again.indexer.catalog.pending_vectors() == []


@pytest.mark.parametrize("keep_meta", [False, True], ids=["all-garbage", "segments-garbage"])
def test_a_corrupt_fulltext_index_is_rebuilt(
    open_memory: OpenMemory, vault_path: Path, keep_meta: bool
) -> None:
    write(vault_path, NOTE, "# Kafka\n\nRetention is seven days.\n")
    open_memory().refresh()
    fts_dir = vault_path / ".tmem" / "fts"
    files = [p for p in fts_dir.iterdir() if p.is_file()]
    assert files
    for path in files:
        if keep_meta and path.name.endswith(".json"):
            continue
        path.write_bytes(os.urandom(64) + b"\x00garbage\xff" * 50)
    memory = open_memory()
    assert keyword(memory, "retention") == [NOTE]
    assert memory.indexer.fts.doc_count() == SEED_COUNT + 1


def test_deleting_only_the_fulltext_folder_rebuilds_it(open_memory: OpenMemory, vault_path: Path) -> None:
    write(vault_path, NOTE, "# Kafka\n\nRetention is seven days.\n")
    open_memory().refresh()
    shutil.rmtree(vault_path / ".tmem" / "fts")
    assert keyword(open_memory(), "retention") == [NOTE]


def test_a_corrupt_catalog_is_rebuilt(open_memory: OpenMemory, vault_path: Path) -> None:
    write(vault_path, NOTE, "# Kafka\n\nRetention is seven days.\n")
    open_memory().refresh()
    for name in ("catalog.sqlite-wal", "catalog.sqlite-shm"):
        (vault_path / ".tmem" / name).unlink(missing_ok=True)
    (vault_path / ".tmem" / "catalog.sqlite").write_bytes(b"this is not a database" * 200)
    memory = open_memory()
    report = memory.refresh()
    assert "full text" in report.rebuilt
    assert keyword(memory, "retention") == [NOTE]
    assert memory.indexer.catalog.count() == SEED_COUNT + 1


def test_a_huge_note_is_skipped_with_a_warning(indexed: Memory, vault_path: Path) -> None:
    write(vault_path, NOTE, "# Kafka\n\nRetention is seven days.\n")
    huge = "memory/long-term/huge.md"
    line = "retention retention retention filler text for a very large note\n"
    write(vault_path, huge, line * (10 * 1024 * 1024 // len(line) + 1))
    assert (vault_path / huge).stat().st_size > 10 * 1024 * 1024
    report = indexed.refresh(vectors=True)
    assert [w for w in report.warnings if huge in w] == [
        f"skipped {huge}: larger than index.max_file_mb (10.0 MB, the limit is 2 MB)",
    ]
    assert keyword(indexed, "retention") == [NOTE]
    assert huge not in indexed.indexer.catalog.rows()
    skipped = [(p, why) for p, why in indexed.indexer.catalog.skipped() if why != UNTOUCHED_TEMPLATE]
    assert skipped == [(huge, "larger than index.max_file_mb (10.0 MB, the limit is 2 MB)")]
    hits = indexed.search(SearchRequest("retention seven days"), record_access=False).hits
    assert hits[0].path == NOTE and huge not in [h.path for h in hits]
    # The skip is remembered: the file is not read again until it changes.
    again = indexed.refresh()
    assert again.touched == 0 and again.warnings == []


def test_a_new_size_limit_reads_again_the_files_on_either_side_of_it(
    open_memory: OpenMemory, vault_path: Path
) -> None:
    """Raising `index.max_file_mb` brings in the file it skipped, at the next incremental refresh;
    lowering it drops the file now too large, in one line. Nothing else is read or embedded again."""
    write(vault_path, NOTE, "# Kafka\n\nRetention is seven days.\n")
    big = "memory/long-term/big.md"
    line = "compaction compaction filler text for a large note\n"
    write(vault_path, big, line * (3 * 1024 * 1024 // len(line) + 1))  # 3 MB: over the default 2
    first = open_memory()
    first.refresh(vectors=True)
    assert keyword(first, "compaction") == []
    first.close()
    config = vault_path / "tmem.yaml"
    settings = config.read_text(encoding="utf-8")

    config.write_text(settings + "index:\n  max_file_mb: 4\n", encoding="utf-8")
    raised = open_memory()
    report = raised.refresh(vectors=True)
    assert (report.added, report.changed, report.embedded, report.warnings) == (0, 1, 1, [])
    assert keyword(raised, "compaction") == [big]
    raised.close()

    config.write_text(settings + "index:\n  max_file_mb: 1\n", encoding="utf-8")
    lowered = open_memory()
    report = lowered.refresh(vectors=True)
    assert report.warnings == [
        f"dropped {big} from the indexes: larger than index.max_file_mb (3.0 MB, the limit is 1 MB)"
    ]
    assert (report.changed, report.embedded) == (0, 0)
    assert keyword(lowered, "compaction") == []
    vectors = lowered.indexer.vectors()
    assert vectors is not None and not vectors.has(big) and vectors.has(NOTE)
    assert lowered.refresh().touched == 0  # the new limit is remembered: nothing read again


def test_a_binary_file_is_skipped_with_a_warning(indexed: Memory, vault_path: Path) -> None:
    write(vault_path, NOTE, "# Kafka\n\nRetention is seven days.\n")
    blob = "memory/long-term/photo.md"
    (vault_path / blob).write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR retention" * 10)
    report = indexed.refresh()
    assert f"skipped {blob}: binary file, not a note" in report.warnings
    assert keyword(indexed, "retention") == [NOTE]
    assert indexed.indexer.catalog.get(blob).skipped  # type: ignore[union-attr]
    assert blob not in indexed.indexer.fts.paths()


def test_a_note_that_becomes_binary_leaves_the_index(indexed: Memory, vault_path: Path) -> None:
    write(vault_path, NOTE, "# Kafka\n\nRetention is seven days.\n")
    indexed.refresh(vectors=True)
    (vault_path / NOTE).write_bytes(b"\x00\x01retention\x02" * 10)
    report = indexed.refresh(vectors=True)
    assert any(w.startswith(f"skipped {NOTE}") for w in report.warnings)
    assert keyword(indexed, "retention") == []
    vectors = indexed.indexer.vectors()
    assert vectors is not None and NOTE not in vectors.paths()


def test_malformed_yaml_is_indexed_as_plain_text_and_left_alone(indexed: Memory, vault_path: Path) -> None:
    rel = "memory/long-term/broken.md"
    text = "---\ntitle: [zanzibar unclosed\ntags: a, b\n---\n# Broken frontmatter\n\nThe quokka lives on Rottnest.\n"
    path = write(vault_path, rel, text)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    report = indexed.refresh(vectors=True)
    warnings = [w for w in report.warnings if rel in w]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"{rel}: malformed YAML frontmatter")
    assert warnings[0].endswith("indexed as plain text")
    assert keyword(indexed, "quokka") == [rel]
    assert keyword(indexed, "zanzibar") == [rel]  # the frontmatter text is searchable too
    row = indexed.indexer.catalog.get(rel)
    assert row is not None and row.title == "broken"
    indexed.search(SearchRequest("quokka Rottnest"), record_access=True)
    indexed.get(rel)
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


@pytest.mark.parametrize(
    "frontmatter",
    [
        "created: 99999999999999\nupdated: .nan\naccess_count: .inf\n",
        "importance: .inf\nconfidence: -.inf\ntags: {a: 1}\nentities: 7\n",
        "id: 12\ntitle: 2024-01-01\nstatus: [x]\ncategory: null\n",
        "created: 0001-01-01\nupdated: '9999-12-31T23:59:59+00:00'\n",
    ],
)
def test_odd_frontmatter_values_do_not_break_indexing(
    indexed: Memory, vault_path: Path, frontmatter: str
) -> None:
    rel = "memory/long-term/odd.md"
    write(vault_path, rel, f"---\n{frontmatter}---\nThe wombat note.\n")
    report = indexed.refresh(vectors=True)
    assert report.added == 1
    assert keyword(indexed, "wombat") == [rel]
    assert indexed.search(SearchRequest("wombat"), record_access=False).hits[0].path == rel


def test_indexing_and_searching_never_rewrite_a_note(indexed: Memory, vault_path: Path) -> None:
    write(vault_path, NOTE, "# Kafka\n\nRetention is seven days.\n")
    write(vault_path, "memory/mid-term/hand.md", "no frontmatter, no heading, CRLF\r\nline two")
    write(
        vault_path,
        "memory/short-term/odd.md",
        "---\nid: odd\nweird-key: yes\ncreated: 2024-01-01\n---\nbody\n",
    )
    write(vault_path, "memory/long-term/bad.md", "---\n: : :\n---\nbad yaml\n")
    subprocess.run(["git", "-C", str(vault_path), "add", "-A"], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(vault_path),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "hand notes",
        ],
        check=True,
    )
    before = snapshot(vault_path)
    log_before = git_log(vault_path)
    indexed.refresh(vectors=True)
    for query, mode in (("retention", "hybrid"), ("line two", "keyword"), ("body", "vector")):
        indexed.search(SearchRequest(query, mode=mode), record_access=True)  # type: ignore[arg-type]
    indexed.list_notes()
    indexed.get("odd")
    indexed.refresh(full=True, vectors=True)
    assert snapshot(vault_path) == before
    assert git_log(vault_path) == log_before
    status = subprocess.run(
        ["git", "-C", str(vault_path), "status", "--porcelain"], capture_output=True, text=True
    )
    assert status.stdout == ""


def test_full_refresh_rebuilds_everything(indexed: Memory, vault_path: Path) -> None:
    write(vault_path, NOTE, "# Kafka\n")
    indexed.refresh()
    report = indexed.refresh(full=True)
    assert "full text" in report.rebuilt
    assert report.added == SEED_COUNT + 1
    assert indexed.indexer.fts.doc_count() == SEED_COUNT + 1


def test_update_paths_handles_create_change_and_delete(indexed: Memory, vault_path: Path) -> None:
    indexed.refresh()
    write(vault_path, NOTE, "# Kafka\n\nfirst words\n")
    report = indexed.indexer.update_paths([NOTE, "tmem.yaml", "memory/long-term/nope.md"], vectors=False)
    assert (report.added, report.changed, report.deleted) == (1, 0, 0)
    write(vault_path, NOTE, "# Kafka\n\nsecond words, longer\n", bump=5)
    assert indexed.indexer.update_paths([NOTE], vectors=False).changed == 1
    assert keyword(indexed, "second") == [NOTE]
    (vault_path / NOTE).unlink()
    assert indexed.indexer.update_paths([NOTE], vectors=False).deleted == 1
    assert indexed.indexer.catalog.get(NOTE) is None


# ---- vectors ---------------------------------------------------------------------------------


def test_update_paths_keeps_vectors_in_step_with_moves_deletes_and_skips(
    indexed: Memory, vault_path: Path
) -> None:
    indexed.refresh(vectors=True)
    vectors = indexed.indexer.vectors()
    assert vectors is not None
    other = "memory/long-term/moved-kafka.md"
    write(vault_path, NOTE, "# Kafka\n\nRetention is seven days.\n")
    indexed.indexer.update_paths([NOTE])
    assert vectors.has(NOTE)
    (vault_path / NOTE).rename(vault_path / other)  # a move: both paths reach update_paths
    report = indexed.indexer.update_paths([NOTE, other])
    assert report.embedded == 1 and not vectors.has(NOTE) and vectors.has(other)
    write(vault_path, other, "x" * (3 * 1024 * 1024), bump=5)  # over index.max_file_mb: skipped
    indexed.indexer.update_paths([other])
    assert not vectors.has(other)
    (vault_path / other).unlink()
    indexed.indexer.update_paths([other])
    assert vectors.paths() == set(indexed.indexer.catalog.rows())
    assert indexed.indexer.catalog.pending_vectors() == []


def test_refresh_with_vectors_leaves_nothing_pending(indexed: Memory, vault_path: Path) -> None:
    write(vault_path, NOTE, "# Kafka\n\nRetention is seven days.\n")
    report = indexed.refresh(vectors=True)
    assert report.vectors == "ok"
    assert report.embedded == 1  # the seed notes were embedded by the earlier process
    assert indexed.indexer.catalog.pending_vectors() == []
    vectors = indexed.indexer.vectors()
    assert vectors is not None
    assert vectors.paths() == set(indexed.indexer.catalog.rows())
    # Keyword-only work since then does not embed, and leaves the changed note pending.
    write(vault_path, NOTE, "# Kafka\n\nRetention is thirty days now.\n", bump=5)
    assert indexed.refresh().embedded == 0
    assert indexed.indexer.catalog.pending_vectors() == [NOTE]
    assert indexed.refresh(vectors=True).embedded == 1
    assert indexed.indexer.catalog.pending_vectors() == []


def test_vector_search_finds_the_note(memory: Memory, vault_path: Path) -> None:
    write(vault_path, NOTE, "# Kafka\n\nRetention is seven days on the orders topic.\n")
    hits = memory.search(SearchRequest("orders topic retention", mode="vector"), record_access=False).hits
    assert hits[0].path == NOTE
    assert hits[0].components["vector"] > 0


def test_changing_the_embedding_model_rebuilds_the_vectors(open_memory: OpenMemory, vault_path: Path) -> None:
    write(vault_path, NOTE, "# Kafka\n\nRetention is seven days on the orders topic.\n")
    first = open_memory(64)
    assert first.refresh(vectors=True).embedded == SEED_COUNT + 1
    first.close()

    second = open_memory(32)
    report = second.refresh(vectors=True)
    assert report.embedded == SEED_COUNT + 1  # every note again: no 64-d vector survives
    vectors = second.indexer.vectors()
    assert vectors is not None
    assert (vectors.dim, vectors.model_id) == (32, "fake:32")
    assert vectors.paths() == set(second.indexer.catalog.rows())
    assert second.indexer.catalog.get_meta("vector_model") == "fake:32"
    assert second.indexer.catalog.pending_vectors() == []
    meta = json.loads((vault_path / ".tmem" / "vectors" / "vectors.meta.json").read_text())
    assert (meta["model_id"], meta["dim"]) == ("fake:32", 32)
    hits = second.search(SearchRequest("orders topic retention", mode="vector"), record_access=False).hits
    assert hits[0].path == NOTE
    second.close()

    # Same dimension, different model: still rebuilt, never mixed.
    third = open_memory(32)
    assert third.refresh(vectors=True).embedded == 0  # same model: nothing to do
    third.close()
    fourth = open_memory(64)
    assert fourth.refresh(vectors=True).embedded == SEED_COUNT + 1


def test_deleting_only_the_vector_folder_re_embeds(open_memory: OpenMemory, vault_path: Path) -> None:
    write(vault_path, NOTE, "# Kafka\n\nRetention is seven days on the orders topic.\n")
    open_memory().refresh(vectors=True)
    shutil.rmtree(vault_path / ".tmem" / "vectors")
    memory = open_memory()
    assert memory.refresh(vectors=True).embedded == SEED_COUNT + 1
    hits = memory.search(SearchRequest("orders topic retention", mode="vector"), record_access=False).hits
    assert hits and hits[0].path == NOTE


def test_no_embedder_falls_back_to_keyword(vault_path: Path) -> None:
    from tiered_memory.errors import EmbedderUnavailable

    def broken() -> FakeEmbedder:
        raise EmbedderUnavailable("no model here")

    memory = Memory(Vault(vault_path), embedder_factory=broken, now=lambda: FIXED_NOW)
    try:
        write(vault_path, NOTE, "# Kafka\n\nRetention is seven days.\n")
        report = memory.refresh(vectors=True)
        assert report.vectors == "no model here"
        result = memory.search(SearchRequest("retention"), record_access=False)
        assert result.mode == "keyword"
        assert result.notice is not None and "no model here" in result.notice
        assert [h.path for h in result.hits] == [NOTE]
    finally:
        memory.close()


@pytest.mark.parametrize("unit", ["_", "![", "![[", "<!--", "![a]("])
def test_a_note_of_a_long_run_of_markup_is_indexed_in_linear_time(
    indexed: Memory, vault_path: Path, unit: str
) -> None:
    """A pulled note of 20,000 `_` between two letters (or `![`, `![[`, unclosed comments, embeds
    left open): its snippet took seconds, and minutes for a note of a megabyte, since each place in
    the run was tried to its end. Now the whole refresh takes a fraction of a second."""
    write(vault_path, NOTE, "a" + unit * 20_000 + "b\n")
    started = time.perf_counter()
    indexed.refresh()
    assert time.perf_counter() - started < 1.5
    assert indexed.indexer.catalog.get(NOTE) is not None
    began = time.perf_counter()
    snippet("a" + unit * 20_000 + "b")
    assert time.perf_counter() - began < 0.3


HEALTH = "memory/long-term/health/pressure.md"


def test_a_changed_excluded_folder_moves_only_its_notes_vectors(vault_path: Path) -> None:
    """With a remote embedder, removing a folder from `privacy.excluded_paths` (approved on this
    machine) embeds its notes at the next incremental refresh, and adding it back drops their
    vectors, in one line each: no other note is read or sent again, and the notes stay
    keyword-searchable throughout."""
    from tiered_memory import config
    from tiered_memory.index.embeddings import FakeEmbedder, HttpEmbedder

    sent: list[str] = []

    def api(url: str, body: bytes, headers: dict[str, str], timeout: float) -> bytes:
        texts = json.loads(body)["input"]
        sent.extend(texts)
        rows = FakeEmbedder(16).embed(texts).tolist()
        return json.dumps({"data": [{"index": i, "embedding": r} for i, r in enumerate(rows)]}).encode()

    def opened(excluded: str) -> Memory:
        (vault_path / "tmem.yaml").write_text(
            f"embeddings:\n  provider: openai\nprivacy:\n  excluded_paths: {excluded}\n", encoding="utf-8"
        )
        config.approve(vault_path, {"embeddings.provider": "openai", "privacy.excluded_paths": []})
        remote = HttpEmbedder("http://api.invalid/v1", "m", api_key_env=None, dim=16, transport=api)
        return Memory(Vault(vault_path), embedder_factory=lambda: remote, now=lambda: FIXED_NOW)

    write(vault_path, NOTE, "# Kafka\n\nRetention is seven days.\n")
    write(vault_path, HEALTH, "# Pressure\n\nMy blood pressure readings this spring.\n")
    first = opened("[long-term/health/]")
    first.refresh(vectors=True)
    first.close()
    assert sent and not any("blood" in text for text in sent)

    sent.clear()
    allowed = opened("[]")
    report = allowed.refresh(vectors=True)
    assert report.warnings == [
        "1 note no longer under privacy.excluded_paths: embedded by the embeddings API"
    ]
    assert report.embedded == 1 and sent and all("blood" in text for text in sent)
    vectors = allowed.indexer.vectors()
    assert vectors is not None and vectors.has(HEALTH) and vectors.has(NOTE)
    allowed.close()

    sent.clear()
    kept = opened("[long-term/health/]")
    report = kept.refresh(vectors=True)
    assert report.warnings == [
        "1 note under privacy.excluded_paths now: their vectors dropped, never sent to the embeddings API again"
    ]
    vectors = kept.indexer.vectors()
    assert vectors is not None and not vectors.has(HEALTH) and vectors.has(NOTE)
    assert sent == [] and keyword(kept, "pressure") == [HEALTH]
    assert kept.refresh(vectors=True).warnings == []  # the change is remembered: said once
    kept.close()
