"""Sensitive and excluded notes never reach a remote embedding API (a real local HTTP server records
every text it is sent); they stay keyword-searchable. Local embedders see everything."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
from helpers import FIXED_NOW, approve_outward

from tiered_memory.app.filing import NewNote, add
from tiered_memory.app.memory import Memory
from tiered_memory.index.embeddings import FakeEmbedder, HttpEmbedder, is_remote_embedder
from tiered_memory.model.privacy import keep_local, path_excluded
from tiered_memory.model.search import SearchRequest
from tiered_memory.storage.vault import Vault, init_vault


class EmbeddingServer:
    """An OpenAI-compatible /v1/embeddings endpoint that remembers every input it embedded."""

    def __init__(self) -> None:
        self.received: list[str] = []
        received = self.received

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                received.extend(body["input"])
                data = [{"index": i, "embedding": _vector(text)} for i, text in enumerate(body["input"])]
                payload = json.dumps({"data": data, "model": body["model"]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


def _vector(text: str) -> list[float]:
    # Deterministic 16-d vectors from word hashes: related texts share words, hence direction.
    out = np.zeros(16)
    for word in text.lower().split():
        digest = hashlib.blake2b(word.encode(), digest_size=2).digest()
        out[digest[0] % 16] += 1 if digest[1] & 1 else -1
    return [float(v) for v in out]


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    srv = EmbeddingServer()
    yield srv
    srv.close()


@pytest.fixture
def remote_memory(tmp_path: Path, server: EmbeddingServer) -> Iterator[Memory]:
    config = (
        "embeddings:\n  provider: openai\n"
        f"  base_url: {server.url}\n  model: test-embed\n  api_key_env: TMEM_TEST_EMBED_KEY\n"
        'privacy:\n  excluded_paths: ["long-term/relationships/**", "memory/mid-term/projects/secret-*"]\n'
    )
    vault = init_vault(tmp_path / "vault", config_text=config)
    approve_outward(vault.root)  # the embeddings API is this machine's user's choice
    memory = Memory(Vault(vault.root), now=lambda: FIXED_NOW)  # the vault's own embedder factory: HTTP
    yield memory
    memory.close()


def sent(server: EmbeddingServer) -> str:
    return "\n".join(server.received)


def test_sensitive_and_excluded_notes_are_never_sent(remote_memory: Memory, server: EmbeddingServer) -> None:
    memory = remote_memory
    public = add(memory, NewNote("Bridges in the harbour are surveyed every spring.", category="fact"))
    diary = add(memory, NewNote("My zebra diary entry about the therapist.", extra={"sensitive": True}))
    person = add(memory, NewNote("Walrus Wang prefers phone calls.", category="profile"))
    assert person.path.startswith("memory/long-term/relationships/")
    secret = add(memory, NewNote("Narwhal merger terms are confidential.", project="secret-deal"))
    report = memory.refresh(vectors=True)
    assert report.vectors == "ok"
    assert is_remote_embedder(memory.indexer.embedder())
    received = sent(server)
    assert "Bridges in the harbour" in received
    for word in ("zebra", "Walrus", "Narwhal"):
        assert word not in received
    vectors = memory.indexer.vectors()
    assert vectors is not None
    assert public.path in vectors.paths()
    assert not {diary.path, person.path, secret.path} & vectors.paths()
    # They are still found, by keywords.
    for word, note in (("zebra", diary), ("walrus", person), ("narwhal", secret)):
        keyword = memory.search(SearchRequest(query=word, mode="keyword"), record_access=False).hits
        assert [h.path for h in keyword] == [note.path]
        hybrid = memory.search(SearchRequest(query=word), record_access=False).hits
        assert note.path in [h.path for h in hybrid]
    # A later refresh does not send them either (they are not left pending).
    server.received.clear()
    memory.refresh(vectors=True)
    assert server.received == []


def test_a_note_marked_sensitive_later_loses_its_vector(
    remote_memory: Memory, server: EmbeddingServer
) -> None:
    memory = remote_memory
    note = add(memory, NewNote("Okapi sightings near the office."))
    memory.refresh(vectors=True)
    assert note.path in memory.indexer.vectors().paths()  # type: ignore[union-attr]
    server.received.clear()
    path = memory.vault.abspath(note.path)
    path.write_text(
        path.read_text().replace("status: active", "status: active\nsensitive: true") + "More okapi.\n"
    )
    memory.refresh(vectors=True)
    assert "okapi" not in sent(server).lower()
    assert note.path not in memory.indexer.vectors().paths()  # type: ignore[union-attr]


def test_local_embedders_embed_sensitive_notes(memory: Memory) -> None:
    note = add(memory, NewNote("Local zebra diary.", extra={"sensitive": True}))
    memory.refresh(vectors=True)
    assert not is_remote_embedder(memory.indexer.embedder())
    assert note.path in memory.indexer.vectors().paths()  # type: ignore[union-attr]


def test_path_globs() -> None:
    globs = ["long-term/relationships/**", "memory/mid-term/projects/secret-*", "archive/daily"]
    assert path_excluded("memory/long-term/relationships/alice.md", globs)
    assert path_excluded("memory/long-term/relationships/team/bob.md", globs)
    assert path_excluded("memory/mid-term/projects/secret-deal/status.md", globs)
    assert path_excluded("memory/archive/daily/2026-11-01.md", globs)
    assert not path_excluded("memory/long-term/user_profile.md", globs)
    assert not path_excluded("memory/mid-term/projects/public/status.md", globs)
    assert not path_excluded("memory/archive/daily-notes.md", globs)
    assert not path_excluded("memory/long-term/x.md", [])


def test_remote_detection_and_keep_local() -> None:
    from tiered_memory.model.note import Note

    assert is_remote_embedder(HttpEmbedder("http://127.0.0.1:9/v1", "m", dim=4))
    assert not is_remote_embedder(FakeEmbedder(8))
    assert keep_local(Note("memory/long-term/a.md", {"sensitive": True}), [])
    assert not keep_local(Note("memory/long-term/a.md", {"sensitive": "yes"}), [])  # only a real `true`
    assert keep_local(Note("memory/long-term/relationships/a.md"), ["long-term/relationships/*"])
