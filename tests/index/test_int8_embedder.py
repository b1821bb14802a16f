"""`precision: int8`: batches in int8 where the CPU has VNNI; the choice, and the vectors beside
float32's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import FAKE_CONFIG, FIXED_NOW, write

from tiered_memory.app.memory import Memory
from tiered_memory.errors import ConfigError
from tiered_memory.index.embeddings import FakeEmbedder, choose_runtime, make_embedder
from tiered_memory.index.onnx_embedder import choose_bulk_precision, cpu_features
from tiered_memory.model.search import SearchRequest
from tiered_memory.storage.vault import Vault, init_vault

VNNI = frozenset({"avx2", "fma", "avx512f", "avx512_vnni"})
AVX_VNNI = frozenset({"avx2", "fma", "avx_vnni"})
AVX2_ONLY = frozenset({"avx2", "fma", "f16c"})


def test_int8_batches_run_only_on_a_cpu_with_vnni_and_only_when_asked() -> None:
    assert choose_bulk_precision("int8", lambda: VNNI) == "int8"
    assert choose_bulk_precision("int8", lambda: AVX_VNNI) == "int8"
    # AVX2's int8 products saturate (more recall lost): float32 there, and where flags are unknown.
    assert choose_bulk_precision("int8", lambda: AVX2_ONLY) == "float32"
    assert choose_bulk_precision("int8", frozenset) == "float32"
    # The default stays float32 (int8 lost 1.2 points of hybrid R@5 on MADial en), VNNI or not.
    assert choose_bulk_precision("auto", lambda: VNNI) == "float32"
    assert choose_bulk_precision("float32", lambda: VNNI) == "float32"


def test_cpu_features_are_this_machines_flags() -> None:
    flags = cpu_features()
    if Path("/proc/cpuinfo").exists() and "flags" in Path("/proc/cpuinfo").read_text(errors="replace"):
        assert flags and all(" " not in f for f in flags)
    else:
        assert flags == frozenset()


def test_int8_is_onnx_and_bfloat16_is_torch(tmp_path: Path) -> None:
    assert choose_runtime("default", "int8") == "onnx"
    with pytest.raises(ConfigError, match="int8 runs the packaged model on ONNX Runtime only"):
        make_embedder("sentence-transformers", runtime="torch", precision="int8")
    with pytest.raises(ConfigError, match="packaged model only"):
        make_embedder("sentence-transformers", model=str(tmp_path), precision="int8")
    with pytest.raises(ConfigError, match="bfloat16 runs on torch only"):
        make_embedder("sentence-transformers", runtime="onnx", precision="bfloat16")


TEXTS = [
    "How do I migrate the Postgres database to the new server?",
    "Steps for moving a PostgreSQL database between hosts, with a rollback plan written up by the "
    "person on call and the dashboard numbers checked again the morning after.",
    "My cat likes tuna and sleeps on the sofa",
    "该项目控制点坐标系为 CGCS2000",
    "word " * 600,
    "",
]


@pytest.mark.model
def test_batches_on_a_vnni_cpu_run_int8_close_to_float32_and_queries_stay_float32(
    model_cache: Path,
) -> None:
    pytest.importorskip("onnxruntime")
    from tiered_memory.index.onnx_embedder import OnnxEmbedder

    plain = OnnxEmbedder(cache=model_cache, precision="int8", features=lambda: AVX2_ONLY)
    assert plain.bulk_precision == "float32"
    reference = plain.embed(TEXTS)
    assert np.abs(plain.embed_beside(TEXTS) - reference).max() < 1e-5
    assert "int8" not in plain._sessions  # never loaded

    assert OnnxEmbedder(cache=model_cache, features=lambda: VNNI).bulk_precision == "float32"  # auto
    fast = OnnxEmbedder(cache=model_cache, precision="int8", features=lambda: VNNI)
    assert fast.bulk_precision == "int8"
    # Another index: switching re-embeds, never mixes int8 and float32 documents.
    assert fast.model_id == plain.model_id + "+int8"
    assert "int8" not in fast._sessions  # a query never pays for it
    assert np.abs(fast.embed_beside(TEXTS) - reference).max() < 1e-5  # queries: float32
    batch = fast.embed(TEXTS)
    assert fast.int8_path.exists() and fast.int8_path.parent == fast.path.parent
    assert batch.shape == (6, 384) and batch.dtype == np.float32
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    cosines = (batch * reference).sum(axis=1)
    assert np.abs(batch - reference).max() > 1e-4  # int8 did run
    assert cosines.min() > 0.97 and cosines.mean() > 0.985, cosines
    # What search needs of it: the note about the database still nearest to the question.
    query = fast.embed_beside(["database migration to another server"])[0]
    assert int(np.argmax(batch[:4] @ query)) in (0, 1)


@pytest.mark.model
@pytest.mark.slow  # quantises the model again: ~20 s on a busy machine
def test_a_broken_int8_file_is_made_again(model_cache: Path, tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    from tiered_memory.index.onnx_embedder import OnnxEmbedder

    first = OnnxEmbedder(cache=model_cache, precision="int8", features=lambda: VNNI)
    vectors = first.embed(["a note about backups"])
    cache = tmp_path / "cache"
    (cache / "onnx").mkdir(parents=True)
    copy = cache / "onnx" / first.path.name
    copy.write_bytes(first.path.read_bytes())  # a float32 export to start from, not made again
    (cache / "onnx" / first.int8_path.name).write_bytes(b"not a model")  # a disk that filled up
    notices: list[str] = []
    again = OnnxEmbedder(cache=cache, precision="int8", notice=notices.append, features=lambda: VNNI)
    assert notices == []  # nothing to make for a query
    assert np.abs(again.embed(["a note about backups"]) - vectors).max() < 1e-6
    assert again.int8_path.stat().st_size > 1_000_000
    assert len(notices) == 1 and "int8" in notices[0] and "once" in notices[0]  # the build is not silent
    assert sorted(p.name for p in (cache / "onnx").iterdir()) == sorted([copy.name, again.int8_path.name])


@pytest.mark.model
@pytest.mark.slow  # a backlog of full-window texts, embedded twice
def test_a_query_cancels_an_int8_batch_and_the_batch_runs_again(model_cache: Path) -> None:
    """Queries first holds for int8 batches: the query's float32 run cancels the batch's run in
    the int8 model, and the batch's vectors are those of a batch nobody interrupted."""
    pytest.importorskip("onnxruntime")
    import threading
    import time

    from tiered_memory.index.onnx_embedder import OnnxEmbedder

    embedder = OnnxEmbedder(cache=model_cache, precision="int8", features=lambda: VNNI)
    texts = [f"note {i}: " + "the migration plan moves every table to the new host " * 30 for i in range(32)]
    began = time.monotonic()
    alone = embedder.embed(texts)
    whole = time.monotonic() - began
    expected = embedder.embed_beside(["rollback plan"])

    out: list[np.ndarray] = []
    backlog = threading.Thread(target=lambda: out.append(embedder.embed(texts)))
    backlog.start()
    time.sleep(whole / 8)
    waits: list[float] = []
    # Queries until one lands while a batch runs: on a busy machine the first few may fall between
    # two runs of the batch, and cancel nothing.
    while not waits or (backlog.is_alive() and not embedder.model_turns.preempted and len(waits) < 200):
        began = time.monotonic()
        vector = embedder.embed_beside(["rollback plan"])
        waits.append(time.monotonic() - began)
        assert np.abs(vector - expected).max() < 1e-5
        time.sleep(whole / 200)
    backlog.join(120)

    assert max(waits) < whole / 4, (waits, whole)
    assert np.abs(out[0] - alone).max() < 1e-5
    assert embedder.model_turns.preempted >= 1, (len(waits), whole)


class _Labelled(FakeEmbedder):
    """The fake vectors under another model's name: what the search's measured constants key on."""

    def __init__(self, model_id: str) -> None:
        super().__init__(64)
        self.model_id = model_id


@pytest.mark.parametrize(
    ("model_id", "floored"),
    [
        ("sentence-transformers:all-MiniLM-L6-v2+int8", True),
        ("sentence-transformers:all-MiniLM-L6-v2", True),
        ("fake:64", False),  # a model nothing was measured on: no floor
    ],
)
def test_an_int8_index_searches_with_its_float32_models_cosine_floor(
    tmp_path: Path, model_id: str, floored: bool
) -> None:
    """int8 documents are another index (their own model_id) on the same cosine scale, and their
    queries run in float32: the floor, margin, discount and confidence cut measured for the model
    hold for them too, instead of no floor at all."""
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG)
    for i, text in enumerate(("Sourdough needs rye flour.", "The Alps were cold.", "Pixel sleeps a lot.")):
        write(root, f"memory/long-term/n{i}.md", f"---\ntitle: Note {i}\n---\n{text}\n")
    memory = Memory(Vault(root), embedder_factory=lambda: _Labelled(model_id), now=lambda: FIXED_NOW)
    try:
        memory.refresh(vectors=True)
        hits = memory.search(
            SearchRequest(query="zebra crossing paint", mode="vector"), record_access=False
        ).hits
        assert all(h.components["cosine"] < 0.4 for h in hits)
        assert (hits == []) is floored, [(h.title, h.components) for h in hits]
    finally:
        memory.close()
