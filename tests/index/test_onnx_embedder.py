"""embeddings.runtime: onnx — the packaged MiniLM exported at first use and run by ONNX Runtime."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tiered_memory.config import EmbeddingsConfig
from tiered_memory.errors import ConfigError, EmbedderUnavailable
from tiered_memory.index.embeddings import SentenceTransformerEmbedder, choose_runtime, make_embedder


def test_runtime_is_a_config_setting() -> None:
    assert EmbeddingsConfig().runtime == "auto"
    assert EmbeddingsConfig(runtime="onnx").runtime == "onnx"


def test_auto_runs_the_packaged_model_on_onnx_and_any_other_on_torch(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytest.importorskip("onnxruntime")
    assert choose_runtime("default", "auto") == "onnx"
    assert choose_runtime("all-MiniLM-L6-v2", "float32") == "onnx"
    assert choose_runtime("default", "bfloat16") == "torch"  # ONNX Runtime runs float32 only
    assert choose_runtime(str(tmp_path), "auto") == "torch"  # onnx runs the packaged model only
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # a platform without its wheels
    assert choose_runtime("default", "auto") == "torch"


def test_unknown_runtime_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="runtime"):
        make_embedder("sentence-transformers", runtime="tensorflow")


def test_onnx_runs_the_packaged_model_only(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="packaged model only"):
        make_embedder("sentence-transformers", model=str(tmp_path), runtime="onnx")


def test_missing_onnxruntime_says_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # `import onnxruntime` now fails
    monkeypatch.setenv("TMEM_CACHE_DIR", str(tmp_path))
    with pytest.raises(EmbedderUnavailable, match=r"pip install onnxruntime.*runtime: torch"):
        make_embedder("sentence-transformers", runtime="onnx")
    assert not (tmp_path / "onnx").exists()  # nothing exported for a runtime that cannot run it


def test_an_unwritable_cache_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv("TMEM_CACHE_DIR", str(blocker))
    with pytest.raises(EmbedderUnavailable, match="TMEM_CACHE_DIR"):
        make_embedder("sentence-transformers", runtime="onnx")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from tiered_memory.index.onnx_embedder import OnnxEmbedder

    cache = tmp_path_factory.mktemp("cache")
    notices: list[str] = []
    # Float32 batches whatever the CPU: these tests hold them to torch's vectors (int8 batches on
    # a CPU with VNNI: tests/index/test_int8_embedder.py).
    embedder = OnnxEmbedder(cache=cache, notice=notices.append, precision="float32")
    assert len(notices) == 1 and "exporting the embedding model to ONNX" in notices[0]
    return embedder, cache


TEXTS = [
    "How do I migrate the Postgres database to the new server?",
    "Steps for moving a PostgreSQL database between hosts",
    "My cat likes tuna and sleeps on the sofa",
    "该项目控制点坐标系为 CGCS2000",
    "word " * 600,  # longer than the model's window: truncated, as sentence-transformers does
    "",
]


@pytest.mark.model
def test_onnx_vectors_equal_torch_float32(built: tuple[Any, Path]) -> None:
    embedder, cache = built
    assert embedder.dim == 384 and embedder.max_tokens == 256
    assert list((cache / "onnx").iterdir()) == [embedder.path]  # no scratch folder left behind
    import onnx

    ops = {node.op_type for node in onnx.load(str(embedder.path)).graph.node}
    assert {"Attention", "BiasGelu", "LayerNormalization"} <= ops  # onnxruntime's BERT kernels
    assert "SkipLayerNormalization" not in ops  # its CPU kernel is slower than the Add and LayerNorm
    fast = embedder.embed(TEXTS)
    assert fast.shape == (6, 384) and fast.dtype == np.float32
    torch_model = SentenceTransformerEmbedder(precision="float32")
    assert np.abs(fast - torch_model.embed(TEXTS)).max() < 1e-5
    assert embedder.model_id == torch_model.model_id  # an index built by either serves both
    # One batch or one text at a time (other padding, other order): the same vectors.
    one_by_one = np.stack([embedder.embed([t])[0] for t in TEXTS])
    assert np.abs(one_by_one - fast).max() < 1e-5
    assert embedder.embed([]).shape == (0, 384)


@pytest.mark.model
def test_the_exported_model_is_reused_and_a_broken_one_rebuilt(built: tuple[Any, Path]) -> None:
    from tiered_memory.index.onnx_embedder import OnnxEmbedder

    first, cache = built
    path: Path = first.path
    stamp = path.stat().st_mtime_ns
    notices: list[str] = []
    again = OnnxEmbedder(cache=cache, notice=notices.append, precision="float32")
    assert notices == [] and path.stat().st_mtime_ns == stamp
    vectors = again.embed(["a note about backups"])

    path.write_bytes(b"not a model")  # a disk that filled up mid-write, say
    repaired = OnnxEmbedder(cache=cache, notice=notices.append, precision="float32")
    assert len(notices) == 1 and "again" in notices[0]
    assert np.abs(repaired.embed(["a note about backups"]) - vectors).max() < 1e-6


@pytest.mark.model
def test_thread_pools_follow_the_free_cores(built: tuple[Any, Path]) -> None:
    embedder = built[0]
    tuner = embedder._threads
    tuner.fixed = False  # as if OMP_NUM_THREADS were unset
    vectors = {}
    for free in (1, 2):
        tuner.free, tuner.checked = (lambda own, n=free: n), -1e9  # the next embed checks the cores again
        vectors[free] = embedder.embed(["the same text either way", "and another one"])
        assert embedder.workers == free
    assert list(embedder._sessions) == ["float32"]  # one session serves every core: one copy of the model
    assert np.abs(vectors[1] - vectors[2]).max() < 1e-5


@pytest.mark.model
def test_a_vault_embeds_with_onnx_by_default_and_when_configured(
    built: tuple[Any, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tiered_memory.app.memory import default_embedder_factory
    from tiered_memory.storage.vault import Vault, init_vault

    monkeypatch.setenv("TMEM_CACHE_DIR", str(built[1]))
    init_vault(tmp_path / "v")
    config = tmp_path / "v" / "tmem.yaml"
    text = config.read_text(encoding="utf-8")
    assert text.count("  runtime: auto\n") == 1  # the template names the setting and its default
    embedder = default_embedder_factory(Vault(tmp_path / "v"))()
    assert type(embedder).__name__ == "OnnxEmbedder"  # auto: the packaged model on ONNX Runtime
    config.write_text(text.replace("  runtime: auto\n", "  runtime: onnx\n"), encoding="utf-8")
    embedder = default_embedder_factory(Vault(tmp_path / "v"))()
    assert type(embedder).__name__ == "OnnxEmbedder"
    notes = embedder.embed(["We moved the Postgres database to the new host.", "The cat sleeps on the sofa."])
    query = embedder.embed(["database migration"])[0]
    assert notes[0] @ query > notes[1] @ query + 0.2


@pytest.mark.model
def test_a_query_does_not_wait_for_the_batch_in_the_model(built: tuple[Any, Path]) -> None:
    """Queries first: a search's query (`embed_beside`, as retrieve calls it) cancels the run a
    backlog's batch has in the model instead of waiting for it, and that run is run again: the
    batch's vectors are those of a batch nobody interrupted."""
    import threading
    import time

    embedder, _cache = built
    query = getattr(embedder, "embed_beside", embedder.embed)
    texts = [f"note {i}: " + "the migration plan moves every table to the new host " * 30 for i in range(24)]
    began = time.monotonic()
    alone = embedder.embed(texts)  # texts of the model's full window: each run takes a while
    whole = time.monotonic() - began
    expected = embedder.embed(["rollback plan"])

    out: list[np.ndarray] = []
    backlog = threading.Thread(target=lambda: out.append(embedder.embed(texts)))
    backlog.start()
    time.sleep(whole / 8)  # well inside the batch
    waits: list[float] = []
    turns = getattr(embedder, "model_turns", None)
    while not waits or (backlog.is_alive() and turns is not None and not turns.preempted and len(waits) < 5):
        began = time.monotonic()
        vector = query(["rollback plan"])
        waits.append(time.monotonic() - began)
        assert np.abs(vector - expected).max() < 1e-5
    backlog.join(120)

    assert max(waits) < whole / 4, (waits, whole)
    assert np.abs(out[0] - alone).max() < 1e-5
    assert turns is not None and turns.preempted >= 1  # a run was cancelled, and run again


def _graph_as_loaded(embedder: Any, precision: str, tmp_path: Path) -> set[str]:
    """The op types of the graph ONNX Runtime runs for `precision` once it has made its own
    rewrites at load: the embedder's session opened again, saving its optimised graph."""
    import types

    import onnx
    import onnxruntime

    saved = tmp_path / f"{precision}-as-loaded.onnx"

    def options() -> Any:
        made = onnxruntime.SessionOptions()
        made.optimized_model_filepath = str(saved)
        return made

    real = embedder._ort
    embedder._ort = types.SimpleNamespace(**{**vars(onnxruntime), "SessionOptions": options})
    kept = dict(embedder._sessions)
    embedder._sessions.clear()
    try:
        embedder._session(precision)
    finally:
        embedder._ort = real
        embedder._sessions.clear()
        embedder._sessions.update(kept)
    return {node.op_type for node in onnx.load(str(saved)).graph.node}


@pytest.mark.model
def test_the_model_runs_layer_norms_apart_from_their_residual_adds(
    built: tuple[Any, Path], tmp_path: Path
) -> None:
    """ONNX Runtime's SkipLayerNormalization kernel took a quarter of an int8 text's time where
    the Add and LayerNormalization it fuses take a twentieth: neither the export nor the session
    fuses them, and attention stays fused."""
    from tiered_memory.index.onnx_embedder import OnnxEmbedder

    ops = _graph_as_loaded(built[0], "float32", tmp_path)
    assert "SkipLayerNormalization" not in ops
    assert {"Attention", "LayerNormalization"} <= ops
    int8 = OnnxEmbedder(cache=built[1], precision="int8", features=lambda: frozenset({"avx512_vnni"}))
    int8.embed(["the int8 copy is made from the export at the first batch"])
    ops = _graph_as_loaded(int8, "int8", tmp_path)
    assert "SkipLayerNormalization" not in ops
    assert {"QAttention", "LayerNormalization"} <= ops


class _Counting:
    """QueriesFirst as the embedder uses it, counting how many batch runs are in the model at once."""

    def __init__(self, turns: Any) -> None:
        import threading

        self.turns = turns
        self.now = self.most = 0
        self.lock = threading.Lock()

    def query(self) -> Any:
        return self.turns.query()

    def batch(self, run: Any, options: Any, cost: float = 1.0) -> Any:
        def counted(cancel: Any) -> Any:
            with self.lock:
                self.now += 1
                self.most = max(self.most, self.now)
            try:
                return run(cancel)
            finally:
                with self.lock:
                    self.now -= 1

        return self.turns.batch(counted, options, cost)


@pytest.mark.model
def test_a_batch_runs_on_every_free_core_with_the_vectors_of_one_text_at_a_time(
    built: tuple[Any, Path],
) -> None:
    """Two free cores: two texts of a batch in the model at once, each on a thread of its own
    (one session's pool of two threads gave 1.6x one thread; two runs side by side 1.9x), and
    every vector where its text was, as when the texts are embedded one at a time."""
    embedder = built[0]
    tuner = embedder._threads
    tuner.fixed, tuner.free, tuner.checked = False, (lambda own: 2), -1e9
    texts = [
        f"note {i}: the migration plan moves table {i} to the new host. " * (1 + i % 7) for i in range(24)
    ]
    one_by_one = np.stack([embedder.embed([t])[0] for t in texts])
    real, counting = embedder.model_turns, _Counting(embedder.model_turns)
    embedder.model_turns = counting
    try:
        shared = embedder.embed(texts)
    finally:
        embedder.model_turns = real
    assert counting.most == 2 and embedder.workers == 2
    assert np.abs(shared - one_by_one).max() < 1e-5
