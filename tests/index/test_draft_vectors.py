"""Draft vectors: a large backlog is embedded in int8 first (searchable at once, in the float32
index), then refined to float32 once nothing else waits; marks in the catalog say which notes are
drafts, and a kill at any point leaves a valid index that the next run completes."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from helpers import FAKE_CONFIG, FIXED_NOW, DraftingFake, kill_in_phase, write

from tiered_memory.app.api import Empty
from tiered_memory.app.api.notes import ReindexRequest
from tiered_memory.app.memory import Memory
from tiered_memory.app.notes import reindex
from tiered_memory.app.status import status
from tiered_memory.index.catalog import Catalog
from tiered_memory.index.embeddings import FakeEmbedder, draft_embedding
from tiered_memory.index.indexer import DRAFT_BACKLOG, REFINING
from tiered_memory.index.onnx_embedder import choose_draft_precision
from tiered_memory.index.vectors import VectorIndex
from tiered_memory.present.notes import reindex_text, status_text
from tiered_memory.storage.vault import Vault, init_vault

SHORT = DRAFT_BACKLOG + 40
LONG = 2
VNNI = frozenset({"avx2", "fma", "avx512f", "avx512_vnni"})
AVX_VNNI = frozenset({"avx2", "avx_vnni"})
AVX2_ONLY = frozenset({"avx2", "fma", "f16c"})


def long_body(i: int) -> str:
    """About 1,000 words: several chunks, each paragraph with a marker of its own."""
    return "\n\n".join(
        f"Paragraph {p} of long note {i}. "
        + " ".join(f"word{i}w{p}w{k}" for k in range(40))
        + f" deep{i}m{p}."
        for p in range(12)
    )


def make_backlog(root: Path, short: int = SHORT, long: int = LONG) -> None:
    init_vault(root, config_text=FAKE_CONFIG)
    for i in range(short):
        write(
            root,
            f"memory/long-term/n{i:03d}.md",
            f"# Note {i}\n\nmarker{i:03d} walrus and words of its own\n",
        )
    for i in range(long):
        write(root, f"memory/long-term/long{i}.md", f"# Long {i}\n\n{long_body(i)}\n")


def open_memory(root: Path, embedder: object) -> Memory:
    return Memory(Vault(root), embedder_factory=lambda: embedder, now=lambda: FIXED_NOW)


def notes_in(texts: list[str]) -> set[str]:
    """Which notes these texts are passages of (by their markers)."""
    found: set[str] = set()
    for text in texts:
        found |= {f"memory/long-term/n{m}.md" for m in re.findall(r"marker(\d{3})", text)}
        found |= {f"memory/long-term/long{m}.md" for m in re.findall(r"deep(\d+)m", text)}
    return found


def stored(memory: Memory) -> dict[str, np.ndarray]:
    vectors = memory.indexer.vectors()
    assert vectors is not None
    return {path: vectors.vectors_of(path) for path in vectors.paths()}


@pytest.fixture(scope="module")
def float32_build(tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    """The vectors of the same vault built on a CPU that never drafts."""
    root = tmp_path_factory.mktemp("plain") / "vault"
    make_backlog(root)
    embedder = DraftingFake(drafts=False)
    memory = open_memory(root, embedder)
    try:
        memory.refresh(vectors=True)
        assert [ran for ran, _ in embedder.runs if ran != "float32"] == []
        return stored(memory)
    finally:
        memory.close()


def assert_same(found: dict[str, np.ndarray], expected: dict[str, np.ndarray]) -> None:
    assert found.keys() == expected.keys()
    for path, rows in expected.items():
        assert found[path].shape == rows.shape, path
        assert np.abs(found[path] - rows).max() < 1e-6, path


def test_a_backlog_is_drafted_in_int8_then_refined_in_float32_to_a_float32_builds_vectors(
    tmp_path: Path, float32_build: dict[str, np.ndarray]
) -> None:
    root = tmp_path / "vault"
    make_backlog(root)
    embedder = DraftingFake()
    memory = open_memory(root, embedder)
    catalog = memory.indexer.catalog
    try:
        memory.refresh(vectors=False)
        phases: list[str] = []
        built = memory.indexer.ensure_vectors(deep=True, progress=lambda phase, d, t: phases.append(phase))
        drafted = notes_in(embedder.texts("int8"))
        # The batches of the backlog ran in int8 while more than DRAFT_BACKLOG notes waited; the
        # rest (and the few long notes' deeper passages) in float32.
        assert 0 < built.drafted == len(drafted) < SHORT + LONG
        assert built.drafts == catalog.count_drafts() == len(drafted)
        assert set(catalog.refinable()) == drafted
        assert "embedding (int8 drafts)" in phases and "embedding" in phases  # the bar says which
        assert REFINING not in phases  # a build without `refine` leaves the drafts
        # Every note is searchable by vectors at once, drafts in the float32 model's index.
        now = stored(memory)
        assert now.keys() == float32_build.keys()
        assert memory.indexer.vectors().model_id == FakeEmbedder(64).model_id  # type: ignore[union-attr]
        differ = [p for p in drafted if np.abs(now[p] - float32_build[p]).max() > 1e-3]
        assert len(differ) > len(drafted) // 2  # the drafts are not float32's vectors
        assert all(np.abs(now[p] - float32_build[p]).max() < 1e-6 for p in now.keys() - drafted)

        embedder.runs.clear()
        phases.clear()
        refined = memory.indexer.ensure_vectors(
            deep=True, refine=True, progress=lambda phase, d, t: phases.append(phase)
        )
        assert (refined.embedded, refined.deepened, refined.drafted) == (0, 0, 0)
        assert refined.refined == len(drafted) and refined.drafts == 0
        assert embedder.texts("int8") == []
        assert notes_in(embedder.texts("float32")) == drafted  # exactly the drafts, each once
        assert set(phases) == {REFINING}
        assert catalog.count_drafts() == 0 and catalog.drafts(drafted) == {}  # saved, then cleared
        assert_same(stored(memory), float32_build)
        # Most of the index was replaced: its graph is built afresh, as a float32 build's is.
        assert memory.indexer.vectors().graph_builds == 1  # type: ignore[union-attr]
    finally:
        memory.close()
    again = DraftingFake()
    reopened = open_memory(root, again)
    try:
        nothing = reopened.indexer.ensure_vectors(deep=True, refine=True)
        assert (nothing.embedded, nothing.deepened, nothing.refined, again.runs) == (0, 0, 0, [])
        assert_same(stored(reopened), float32_build)
    finally:
        reopened.close()


def test_a_rebuilt_graph_keeps_every_vector_and_a_change_meanwhile_voids_it(tmp_path: Path) -> None:
    import contextlib

    index = VectorIndex(tmp_path / "vectors", 64, "fake:64")
    fake = FakeEmbedder(64)
    texts = {f"n{i}": f"note {i} about topic{i} and walrus{i % 7}" for i in range(300)}
    index.upsert_many([(p, fake.embed([t])) for p, t in texts.items()])
    for p, t in list(texts.items())[:200]:  # replaced, as a refinement replaces its drafts
        index.upsert(p, fake.embed([t]))
    before = {p: index.vectors_of(p) for p in texts}
    query = fake.embed(["topic42 walrus0"])[0]
    assert index.rebuild() and index.graph_builds == 1
    assert {p: index.vectors_of(p) for p in texts}.keys() == before.keys()
    assert all(np.abs(index.vectors_of(p) - rows).max() < 1e-6 for p, rows in before.items())
    assert index.search(query, 1)[0][0] == "n42"
    index.save()
    reopened = VectorIndex.open(tmp_path / "vectors", 64, "fake:64")
    assert reopened.search(query, 1)[0][0] == "n42" and len(reopened.paths()) == 300

    @contextlib.contextmanager
    def an_edit_meanwhile() -> Iterator[None]:
        index.upsert("n7", fake.embed(["edited while the graph was built"]))
        yield

    assert not index.rebuild(an_edit_meanwhile) and index.graph_builds == 1
    assert index.search(fake.embed(["edited while the graph was built"])[0], 1)[0][0] == "n7"


def test_a_reindex_ends_once_every_note_is_searchable_and_says_who_refines(
    tmp_path: Path, float32_build: dict[str, np.ndarray]
) -> None:
    root = tmp_path / "vault"
    make_backlog(root)
    embedder = DraftingFake()
    memory = open_memory(root, embedder)
    try:
        first = reindex(memory, ReindexRequest())
        assert first.embedded == SHORT + LONG
        assert first.drafts > 0 and first.refiner == "reindex"  # no daemon runs
        line = reindex_text(first).splitlines()[-1]
        assert f"{first.drafts:,} notes have int8 draft vectors" in line
        assert "the next `tmem reindex`" in line and "float32" in line
        assert memory.indexer.catalog.count_drafts() == first.drafts

        second = reindex(memory, ReindexRequest())  # nothing else waits: this one refines
        assert (second.embedded, second.drafts, second.refiner) == (0, 0, "")
        assert len(reindex_text(second).splitlines()) == 1
        assert_same(stored(memory), float32_build)
    finally:
        memory.close()


def test_one_pass_asked_to_refine_drafts_the_backlog_and_ends_with_float32_vectors(
    tmp_path: Path, float32_build: dict[str, np.ndarray]
) -> None:
    """What the daemon's slices and the evaluation harness ask: everything, drafts refined."""
    root = tmp_path / "vault"
    make_backlog(root)
    embedder = DraftingFake()
    memory = open_memory(root, embedder)
    try:
        memory.refresh(vectors=False)
        report = memory.indexer.ensure_vectors(deep=True, refine=True)
        assert report.drafted > 0 and report.refined == report.drafted and report.drafts == 0
        assert memory.indexer.catalog.count_drafts() == 0
        assert_same(stored(memory), float32_build)
    finally:
        memory.close()


def test_a_single_note_or_a_backlog_of_one_batch_is_never_drafted(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    make_backlog(root, short=DRAFT_BACKLOG, long=0)  # not larger than DRAFT_BACKLOG: no backlog
    embedder = DraftingFake()
    memory = open_memory(root, embedder)
    try:
        report = memory.refresh(vectors=True)
        assert report.embedded == DRAFT_BACKLOG and report.drafted == 0
        rel = "memory/long-term/added.md"
        write(root, rel, "# Added\n\nmarker999 a note added on its own\n")
        added = memory.indexer.update_paths([rel])
        assert added.embedded == 1
        assert embedder.texts("int8") == [] and memory.indexer.catalog.count_drafts() == 0
    finally:
        memory.close()


def test_a_cpu_without_vnni_or_precision_float32_never_drafts(tmp_path: Path) -> None:
    assert choose_draft_precision("auto", lambda: VNNI) == "int8"
    assert choose_draft_precision("auto", lambda: AVX_VNNI) == "int8"
    assert choose_draft_precision("auto", lambda: AVX2_ONLY) is None  # no VNNI
    assert choose_draft_precision("auto", frozenset) is None  # flags unknown
    assert choose_draft_precision("float32", lambda: VNNI) is None
    assert choose_draft_precision("int8", lambda: VNNI) is None  # every batch int8 already, never refined
    assert draft_embedding(FakeEmbedder(64)) is None

    root = tmp_path / "vault"
    make_backlog(root)
    embedder = DraftingFake(drafts=False)
    assert draft_embedding(embedder) is None  # type: ignore[arg-type]
    memory = open_memory(root, embedder)
    try:
        report = memory.refresh(vectors=True)
        assert report.embedded == SHORT + LONG and report.drafted == report.drafts == 0
        assert embedder.texts("int8") == [] and memory.indexer.catalog.count_drafts() == 0
    finally:
        memory.close()


def test_a_draft_edited_before_its_refinement_is_embedded_again_and_not_refined_twice(
    tmp_path: Path,
) -> None:
    root = tmp_path / "vault"
    make_backlog(root)
    embedder = DraftingFake()
    memory = open_memory(root, embedder)
    catalog = memory.indexer.catalog
    try:
        memory.refresh(vectors=False)
        memory.indexer.ensure_vectors(deep=True)
        drafted = notes_in(embedder.texts("int8"))
        edited = sorted(p for p in drafted if "/n" in p)[0]
        write(root, edited, "# Edited\n\nmarker777 rewritten by hand\n", bump=5)
        embedder.runs.clear()
        # The daemon's way: vectors saved later, on its schedule.
        memory.indexer.update_paths([edited], save_vectors=False)
        own = embedder.texts("float32")
        assert embedder.runs == [("float32", own)] and notes_in(own) == {"memory/long-term/n777.md"}
        assert catalog.drafts([edited]) != {}  # marked until the float32 vectors are saved ...
        assert memory.indexer.drafts_waiting() == len(drafted) - 1  # ... but no longer to refine

        embedder.runs.clear()
        report = memory.indexer.ensure_vectors(deep=True, refine=True)
        assert report.refined == len(drafted) - 1 and embedder.texts("int8") == []
        refined = notes_in(embedder.texts("float32"))
        assert edited not in refined and "memory/long-term/n777.md" not in refined
        assert refined == drafted - {edited}
        assert catalog.count_drafts() == 0 and catalog.drafts([edited]) == {}
        vectors = memory.indexer.vectors()
        assert vectors is not None
        assert np.abs(vectors.vectors_of(edited) - FakeEmbedder(64).embed(own)).max() < 1e-6
    finally:
        memory.close()


class Killed(Exception):
    """Stands for a kill -9 at one point of the refinement."""


def _drafted_vault(root: Path, config: str | None = None) -> set[str]:
    """A backlog built with drafts (`config`: the vault's tmem.yaml instead of the template's);
    the notes drafted."""
    make_backlog(root)
    if config is not None:
        (root / "tmem.yaml").write_text(config, encoding="utf-8")
    embedder = DraftingFake()
    memory = open_memory(root, embedder)
    try:
        memory.refresh(vectors=False)
        memory.indexer.ensure_vectors(deep=True)
        return notes_in(embedder.texts("int8"))
    finally:
        memory.close()


def _finish(root: Path, drafted: set[str], float32_build: dict[str, np.ndarray]) -> None:
    """After the crash: the index opens as it was saved, the marks name the drafts still to
    refine, and the next run refines them and clears the marks."""
    embedder = DraftingFake()
    memory = open_memory(root, embedder)
    try:
        vectors = memory.indexer.vectors()
        assert vectors is not None and not vectors.rebuilt and not vectors.created
        assert set(memory.indexer.catalog.refinable()) == drafted
        report = memory.indexer.ensure_vectors(deep=True, refine=True)
        assert report.embedded == report.deepened == 0 and report.refined == len(drafted)
        assert memory.indexer.catalog.count_drafts() == 0
        assert_same(stored(memory), float32_build)
    finally:
        memory.close()


def test_a_crash_after_the_refined_vectors_are_saved_but_before_the_marks_go(
    tmp_path: Path, float32_build: dict[str, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "vault"
    drafted = _drafted_vault(root)

    def killed(self: Catalog, items: object) -> None:
        raise Killed

    with monkeypatch.context() as patch:
        patch.setattr(Catalog, "clear_drafts", killed)
        memory = open_memory(root, DraftingFake())
        try:
            with pytest.raises(Killed):
                memory.indexer.ensure_vectors(deep=True, refine=True)
        finally:
            memory.close()
    saved = VectorIndex.open(root / ".tmem" / "vectors", 64, FakeEmbedder(64).model_id)
    assert_same({p: saved.vectors_of(p) for p in saved.paths()}, float32_build)  # refined, on disk
    _finish(root, drafted, float32_build)  # stale marks: one more refinement, same vectors


def test_a_crash_after_refining_but_before_the_save(
    tmp_path: Path, float32_build: dict[str, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "vault"
    drafted = _drafted_vault(root)
    memory = open_memory(root, DraftingFake())
    try:
        vectors = memory.indexer.vectors()
        assert vectors is not None

        def killed() -> None:
            raise Killed

        monkeypatch.setattr(vectors, "save", killed)
        with pytest.raises(Killed):
            memory.indexer.ensure_vectors(deep=True, refine=True)
        assert memory.indexer.catalog.count_drafts() == len(drafted)  # the marks wait for a save
    finally:
        memory.close()
    _finish(root, drafted, float32_build)


REFINE_AND_PRINT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    sys.path.insert(0, "tests")
    from helpers import DraftingFake
    from tiered_memory.app.memory import Memory
    from tiered_memory.index import indexer
    from tiered_memory.storage.vault import Vault

    indexer.Indexer._save_every.__defaults__ = (0.0,)  # save after every batch

    class Slow(DraftingFake):
        def embed(self, texts):
            time.sleep(0.01 * len(texts))
            return super().embed(texts)

    memory = Memory(Vault(Path(sys.argv[1])), embedder_factory=lambda: Slow())
    memory.indexer.ensure_vectors(
        progress=lambda phase, done, total: print(phase, done, total, flush=True), deep=True, refine=True
    )
    print("finished", flush=True)
    """
)


def test_a_refinement_killed_midway_leaves_a_valid_index_and_the_next_run_completes(
    tmp_path: Path, float32_build: dict[str, np.ndarray]
) -> None:
    root = tmp_path / "vault"
    drafted = _drafted_vault(root, FAKE_CONFIG + "  batch_size: 1\n")  # batches of 16
    assert len(drafted) > 32
    script = tmp_path / "refine.py"
    script.write_text(REFINE_AND_PRINT, encoding="utf-8")
    kill_in_phase(script, root, REFINING, 16)  # a batch or more refined and saved

    embedder = DraftingFake()
    resumed = open_memory(root, embedder)
    try:
        vectors = resumed.indexer.vectors()
        assert vectors is not None and not vectors.rebuilt
        left = resumed.indexer.catalog.count_drafts()
        assert 0 < left < len(drafted)  # what was saved and cleared stays refined
        report = resumed.indexer.ensure_vectors(deep=True, refine=True)
        assert report.refined == left and report.drafts == 0
        assert embedder.texts("int8") == []
        assert_same(stored(resumed), float32_build)
    finally:
        resumed.close()


def test_status_counts_the_drafts_still_to_refine(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    drafted = _drafted_vault(root)
    memory = open_memory(root, DraftingFake())
    try:
        result = status(memory, Empty())
        assert result.index.vector_drafts == len(drafted)
        assert result.to_dict()["index"]["vector_drafts"] == len(drafted)
        assert f"{len(drafted)} draft vectors to refine" in status_text(result)
        memory.indexer.ensure_vectors(deep=True, refine=True)
        after = status(memory, Empty())
        assert after.index.vector_drafts == 0 and "draft vectors" not in status_text(after)
    finally:
        memory.close()


@pytest.mark.model
@pytest.mark.slow  # the packaged model embeds a backlog in int8, then again in float32, twice over
def test_with_the_packaged_model_a_refined_vault_has_a_float32_builds_vectors(
    tmp_path: Path, model_cache: Path
) -> None:
    pytest.importorskip("onnxruntime")
    from tiered_memory.index.onnx_embedder import OnnxEmbedder

    assert OnnxEmbedder(cache=model_cache, features=lambda: AVX2_ONLY).draft_precision is None
    assert OnnxEmbedder(cache=model_cache, precision="float32", features=lambda: VNNI).draft_precision is None
    drafting = OnnxEmbedder(cache=model_cache, features=lambda: VNNI)  # precision: auto
    assert drafting.draft_precision == "int8" and drafting.bulk_precision == "float32"
    plain = OnnxEmbedder(cache=model_cache, precision="float32", features=lambda: VNNI)
    assert drafting.model_id == plain.model_id  # one index: drafts are refined in it, never apart

    built: dict[str, dict[str, np.ndarray]] = {}
    for name, embedder in (("plain", plain), ("drafted", drafting)):
        root = tmp_path / name
        make_backlog(root, short=DRAFT_BACKLOG + 24, long=1)
        memory = open_memory(root, embedder)
        try:
            first = memory.refresh(vectors=True)  # `tmem reindex`: searchable, drafts left
            assert (first.drafted > 0) is (name == "drafted")
            if name == "drafted":
                marked = set(memory.indexer.catalog.refinable())
                drafts = {p: rows for p, rows in stored(memory).items() if p in marked}
                assert first.drafts == first.drafted == len(drafts)
                memory.refresh(vectors=True)  # the next reindex refines them
                assert memory.indexer.catalog.count_drafts() == 0
            built[name] = stored(memory)
        finally:
            memory.close()
    assert built["drafted"].keys() == built["plain"].keys()
    for path, rows in built["plain"].items():
        assert np.abs(built["drafted"][path] - rows).max() < 1e-5, path
    # What the drafts were meanwhile: int8's vectors, near float32's but not them.
    cosines = [float((drafts[p] * built["plain"][p]).sum(axis=1).min()) for p in drafts]
    assert min(cosines) > 0.97 and max(cosines) < 0.99999
