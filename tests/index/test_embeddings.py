from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from tiered_memory.errors import ConfigError, EmbedderUnavailable
from tiered_memory.index.embeddings import (
    FakeEmbedder,
    HttpEmbedder,
    SentenceTransformerEmbedder,
    make_embedder,
    normalize_rows,
)

# --- FakeEmbedder ----------------------------------------------------------------------------------


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


def test_fake_shape_dtype_and_norms() -> None:
    emb = FakeEmbedder(dim=32)
    out = emb.embed(["hello world", "a much longer sentence about databases", "ünïcödé 数据库"])
    assert out.shape == (3, 32)
    assert out.dtype == np.float32
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    assert emb.model_id == "fake:32" and emb.dim == 32


def test_fake_empty_inputs() -> None:
    emb = FakeEmbedder()
    assert emb.embed([]).shape == (0, 64)
    blank = emb.embed([""])
    assert blank.shape == (1, 64) and np.isfinite(blank).all()  # zero row, not NaN


def test_fake_is_deterministic() -> None:
    texts = ["Notes on the database migration", "My cat likes tuna"]
    assert np.array_equal(FakeEmbedder().embed(texts), FakeEmbedder().embed(texts))


def test_fake_similar_beats_unrelated() -> None:
    emb = FakeEmbedder(dim=64)
    q, near, far = emb.embed(
        ["How do I migrate the database?", "Notes on the database migration to Postgres", "My cat likes tuna"]
    )
    assert cosine(q, near) > cosine(q, far) + 0.2


def test_normalize_rows_keeps_zero_rows() -> None:
    out = normalize_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert np.allclose(out, [[0.6, 0.8], [0.0, 0.0]])


# --- HttpEmbedder against a real local server ----------------------------------------------------

DIM = 8


class _Handler(BaseHTTPRequestHandler):
    server: Any

    def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
        pass

    def do_POST(self) -> None:
        state = self.server.state
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        state["requests"].append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        if state.get("status", 200) != 200:
            self._send(state["status"], {"error": {"message": "model overloaded\nplease retry"}})
            return
        if self.headers.get("Authorization") != "Bearer sk-test":
            self._send(401, {"error": {"message": "bad key"}})
            return
        data = []
        for i, text in enumerate(body["input"]):
            vec = [float(len(text)), 1.0] + [float(i)] * (DIM - 2)
            data.append({"object": "embedding", "index": i, "embedding": vec})
        data.reverse()  # servers may answer out of order; the client must sort by "index"
        self._send(200, {"object": "list", "data": data, "model": body["model"]})

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture()
def server() -> Iterator[ThreadingHTTPServer]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.state = {"requests": []}  # type: ignore[attr-defined]
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def _url(srv: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{srv.server_address[1]}/v1/"


def test_http_embeds_sorts_normalises_and_sends_key(
    server: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMEM_TEST_KEY", "sk-test")
    emb = HttpEmbedder(_url(server), "test-model", api_key_env="TMEM_TEST_KEY", batch_size=2)
    assert emb.model_id == f"openai:test-model@{_url(server).rstrip('/')}"
    out = emb.embed(["a", "bbb", "cc"])
    assert out.shape == (3, DIM) and out.dtype == np.float32
    assert emb.dim == DIM  # discovered from the first answer
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    expected = normalize_rows(np.array([[1, 1] + [0] * 6, [3, 1] + [1] * 6, [2, 1] + [0] * 6], dtype=float))
    assert np.allclose(out, expected, atol=1e-6)  # rows back in input order despite the reversed answer
    requests = server.state["requests"]  # type: ignore[attr-defined]
    assert [r["path"] for r in requests] == ["/v1/embeddings", "/v1/embeddings"]  # batches of 2
    assert all(r["auth"] == "Bearer sk-test" for r in requests)
    assert requests[0]["body"] == {"model": "test-model", "input": ["a", "bbb"]}
    assert "sk-test" not in repr(vars(emb))  # the key is read per request, never stored
    assert emb.embed([]).shape == (0, DIM)


def test_http_dim_probe_when_not_given(server: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMEM_TEST_KEY", "sk-test")
    emb = HttpEmbedder(_url(server), "m", api_key_env="TMEM_TEST_KEY")
    assert emb.dim == DIM


def test_http_dim_mismatch_is_reported(server: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMEM_TEST_KEY", "sk-test")
    emb = HttpEmbedder(_url(server), "m", api_key_env="TMEM_TEST_KEY", dim=1536)
    with pytest.raises(EmbedderUnavailable, match="8-dimensional vectors, expected 1536"):
        emb.embed(["x"])


def test_http_missing_key_gives_401_with_hint(
    server: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TMEM_TEST_KEY", raising=False)
    emb = HttpEmbedder(_url(server), "m", api_key_env="TMEM_TEST_KEY")
    with pytest.raises(EmbedderUnavailable) as err:
        emb.embed(["x"])
    message = str(err.value)
    assert "HTTP 401" in message and "$TMEM_TEST_KEY" in message and "bad key" in message
    assert server.state["requests"][0]["auth"] is None  # type: ignore[attr-defined]


def test_http_server_error_is_one_line(server: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMEM_TEST_KEY", "sk-test")
    server.state["status"] = 500  # type: ignore[attr-defined]
    emb = HttpEmbedder(_url(server), "m", api_key_env="TMEM_TEST_KEY")
    with pytest.raises(EmbedderUnavailable) as err:
        emb.embed(["x"])
    message = str(err.value)
    assert "\n" not in message
    assert (
        "HTTP 500" in message and "/v1/embeddings" in message and "model overloaded please retry" in message
    )


def test_http_connection_refused_is_one_line() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    emb = HttpEmbedder(f"http://127.0.0.1:{port}/v1", "m", api_key_env=None, timeout=5)
    started = time.monotonic()
    with pytest.raises(EmbedderUnavailable) as err:
        emb.embed(["x"])
    assert time.monotonic() - started < 5
    message = str(err.value)
    assert "\n" not in message and f"127.0.0.1:{port}/v1/embeddings" in message and "cannot reach" in message


def test_http_bad_json_via_transport() -> None:
    def transport(url: str, body: bytes, headers: dict[str, str], timeout: float) -> bytes:
        return b"<html>\n<body>not an API</body></html>"

    emb = HttpEmbedder("http://example.invalid/v1", "m", api_key_env=None, transport=transport)
    with pytest.raises(EmbedderUnavailable, match="unexpected answer") as err:
        emb.embed(["x"])
    assert "\n" not in str(err.value)


def test_http_transport_exception_is_wrapped() -> None:
    def transport(url: str, body: bytes, headers: dict[str, str], timeout: float) -> bytes:
        raise ConnectionResetError("peer went away\nmid request")

    emb = HttpEmbedder("http://h/v1", "m", api_key_env=None, transport=transport)
    with pytest.raises(EmbedderUnavailable, match="ConnectionResetError: peer went away mid request"):
        emb.embed(["x"])


# --- make_embedder -------------------------------------------------------------------------------


def test_make_embedder_providers() -> None:
    assert make_embedder("fake", dim=16).model_id == "fake:16"
    http = make_embedder("openai", base_url="http://localhost:11434/v1", model="nomic-embed-text", dim=768)
    assert (
        isinstance(http, HttpEmbedder)
        and http.model_id == "openai:nomic-embed-text@http://localhost:11434/v1"
    )
    assert http.dim == 768 and http.api_key_env == "OPENAI_API_KEY"
    assert make_embedder("openai").model_id == "openai:text-embedding-3-small@https://api.openai.com/v1"
    with pytest.raises(EmbedderUnavailable, match=r"embeddings are turned off \(embeddings.provider: none\)"):
        make_embedder("none")
    with pytest.raises(ConfigError, match="unknown provider"):
        make_embedder("word2vec")


# --- SentenceTransformerEmbedder -----------------------------------------------------------------


def test_local_path_that_does_not_exist_fails_fast() -> None:
    started = time.monotonic()
    with pytest.raises(EmbedderUnavailable, match="no such directory"):
        SentenceTransformerEmbedder("/nonexistent/model/dir")
    assert time.monotonic() - started < 1


def test_unknown_model_offline_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    started = time.monotonic()
    with pytest.raises(EmbedderUnavailable) as err:
        SentenceTransformerEmbedder("no-such-org/no-such-embedding-model-xyz")
    assert time.monotonic() - started < 60  # torch's import is most of it; no network wait
    message = str(err.value)
    assert "\n" not in message
    assert "no-such-embedding-model-xyz" in message and "not available offline" in message


@pytest.mark.model
def test_packaged_minilm() -> None:
    emb = SentenceTransformerEmbedder()
    assert emb.dim == 384 and emb.max_tokens > 0
    assert emb.model_id == "sentence-transformers:all-MiniLM-L6-v2"
    q, near, far = emb.embed(
        ["How do I migrate the database?", "Notes on the database migration to Postgres", "My cat likes tuna"]
    )
    assert np.allclose(np.linalg.norm(np.stack([q, near, far]), axis=1), 1.0, atol=1e-4)
    assert cosine(q, near) > cosine(q, far) + 0.2
    assert emb.embed([]).shape == (0, 384)


def test_unknown_precision_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="precision"):
        SentenceTransformerEmbedder(precision="int4")


@pytest.mark.model
def test_bfloat16_vectors_agree_with_float32() -> None:
    texts = ["How do I migrate the database?", "该项目控制点坐标系为 CGCS2000", "My cat likes tuna " * 30]
    full = SentenceTransformerEmbedder(precision="float32")
    half = SentenceTransformerEmbedder(precision="bfloat16")
    assert full.precision == "float32" and half.precision == "bfloat16"
    assert full.model_id == half.model_id  # one index serves both
    agreement = np.sum(full.embed(texts) * half.embed(texts), axis=1)
    assert agreement.min() > 0.995
    assert SentenceTransformerEmbedder().precision in ("float32", "bfloat16")


class _FakeTorch:
    def __init__(self) -> None:
        self.threads: list[int] = []
        self.interop: list[int] = []

    def set_num_threads(self, n: int) -> None:
        self.threads.append(n)

    def set_num_interop_threads(self, n: int) -> None:
        self.interop.append(n)


def test_free_cores_counts_what_other_programs_leave() -> None:
    from tiered_memory.index.threads import free_cores

    assert free_cores(4, loadavg=lambda: (0.2, 0.0, 0.0)) >= 1
    assert free_cores(2, loadavg=lambda: (2.5, 0.0, 0.0)) == 1  # a busy machine: one thread, never 0
    assert free_cores(8, loadavg=lambda: (3.0, 0.0, 0.0)) <= 5


def test_free_cores_leaves_out_the_load_this_process_makes_itself() -> None:
    from tiered_memory.index.threads import free_cores

    # An idle 2-core machine where this process alone kept both cores busy: the load is its own.
    def alone() -> int:  # the tasks running this instant: this process's thread only
        return 1

    assert free_cores(2, loadavg=lambda: (2.0, 0.0, 0.0), own=2.0, running=alone) == 2
    assert (
        free_cores(2, loadavg=lambda: (3.0, 0.0, 0.0), own=2.0, running=alone) == 1
    )  # plus one other program
    assert free_cores(2, loadavg=lambda: (2.0, 0.0, 0.0), own=2.0, running=lambda: 2) == 1  # another, now


def test_a_long_build_on_an_idle_machine_keeps_its_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pool's own work raises the load average; read as other programs' load it shrank the
    pool to one thread a minute into every build, on an idle machine."""
    from tiered_memory.index import threads

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    clock = [0.0]
    cpu = [0.0]
    monkeypatch.setattr(threads.time, "monotonic", lambda: clock[0])
    torch = _FakeTorch()
    load = [0.1]  # the machine is idle but for this process, whose threads the load average counts
    tuner = threads.ThreadTuner(
        torch,
        every=10.0,
        free=lambda own: threads.free_cores(
            2, loadavg=lambda: (load[0], 0.0, 0.0), own=own, running=lambda: 1
        ),
        cpu_time=lambda: cpu[0],
    )
    for _ in range(12):  # two minutes of building on both cores
        clock[0] += 10.0
        cpu[0] += 20.0 if torch.threads[-1] == 2 else 10.0
        load[0] = min(2.0, load[0] + 0.5) if torch.threads[-1] == 2 else 1.0
        tuner.retune()
    assert torch.threads == [2]


def test_thread_tuner_sizes_the_pool_to_the_free_cores_and_rechecks(monkeypatch: pytest.MonkeyPatch) -> None:
    from tiered_memory.index.threads import ThreadTuner

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    free = [2]
    torch = _FakeTorch()
    tuner = ThreadTuner(torch, every=0.0, free=lambda own: free[0])
    assert torch.threads == [2] and torch.interop == [1]
    free[0] = 1  # another program started
    tuner.retune()
    free[0] = 16  # more cores than a small BERT uses
    tuner.retune()
    assert torch.threads == [2, 1, 4]


def test_thread_tuner_leaves_a_users_choice_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    from tiered_memory.index.threads import ThreadTuner

    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    torch = _FakeTorch()
    ThreadTuner(torch, free=lambda own: 1).retune()
    assert torch.threads == []


def test_thread_tuner_spares_a_core_for_work_done_meanwhile(monkeypatch: pytest.MonkeyPatch) -> None:
    """A hybrid search embeds its query while it runs its keyword side: the pool leaves that work a
    core for the duration, then gets its tuned size back; it never goes below one thread and
    never against the person's OMP_NUM_THREADS."""
    from tiered_memory.index.threads import ThreadTuner

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    torch = _FakeTorch()
    tuner = ThreadTuner(torch, free=lambda own: 2)
    with tuner.sparing(1):
        assert torch.threads == [2, 1]
    assert torch.threads == [2, 1, 2]
    with pytest.raises(RuntimeError), tuner.sparing(1):
        raise RuntimeError("the forward pass failed")
    assert torch.threads[-1] == 2  # restored anyway

    single = _FakeTorch()
    with ThreadTuner(single, free=lambda own: 1).sparing(1):
        assert single.threads == [1]  # already one thread: nothing to spare

    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    chosen = _FakeTorch()
    with ThreadTuner(chosen, free=lambda own: 2).sparing(1):
        assert chosen.threads == []
