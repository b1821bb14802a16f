"""Cost of encryption at rest: milliseconds added per note read and per note write (target: at
most 10 ms), and the one-time key derivation of `tmem unlock`.

    .venv/bin/python scripts/bench_crypto.py [--notes 300] [--size 2000]

Reads: `Vault.read_note` of a plain note vs the same note stored encrypted. Writes: a unit of work
writing N notes (one commit) plain vs encrypted, per note. Search: building the in-memory index of
the N encrypted notes (decrypt, terms, vectors with the fake embedder, or `--model default` for the
real one) once per process, and the time scoring them takes in each search. Prints numbers; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from tiered_memory.app import sealed
from tiered_memory.app.memory import Memory
from tiered_memory.index.embeddings import FakeEmbedder, make_embedder
from tiered_memory.model import envelope
from tiered_memory.model import note as notes
from tiered_memory.storage import crypto
from tiered_memory.storage.transaction import Transaction
from tiered_memory.storage.vault import Vault, init_vault

CONFIG = "embeddings:\n  provider: fake\nprivacy:\n  encrypt: sensitive\n"


def _note(i: int, size: int, sensitive: bool) -> notes.Note:
    body = (f"Note {i}: Alice prefers tea over coffee and meets on Tuesdays. " * (size // 60 + 1))[:size]
    meta = {"id": f"n{i}", "title": f"Note {i}", "category": "profile"}
    if sensitive:
        meta["sensitive"] = True
    return notes.Note(
        f"memory/long-term/knowledge_base/domains/{'s' if sensitive else 'p'}{i}.md", meta, body, True
    )


def _write(vault: Vault, items: list[notes.Note]) -> float:
    """Per note: atomic write (temp file, fsync, rename) and journal entry of one unit of work."""
    tx = Transaction(vault, "bench")
    start = time.perf_counter()
    for note in items:
        tx.write_note(note)
    elapsed = time.perf_counter() - start
    tx.commit()
    return elapsed * 1000 / len(items)


def _read(vault: Vault, items: list[notes.Note], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for note in items:
            vault.read_note(note.path)
        times.append((time.perf_counter() - start) * 1000 / len(items))
    return statistics.median(times)


def _search(root: Path, model: str, rounds: int) -> tuple[float, float, float, dict[str, float]]:
    """(ms to build the in-memory index, ms to check it again unchanged, ms of that spent embedding,
    and per side the ms scoring the held notes takes in one search)."""
    factory = (
        (lambda: FakeEmbedder(64))
        if model == "fake"
        else (lambda: make_embedder("sentence-transformers", model))
    )
    memory = Memory(Vault(root), embedder_factory=factory)
    memory.refresh(vectors=True)
    embedder = memory.indexer.embedder()
    assert embedder is not None
    start = time.perf_counter()
    held = sealed.prepared(memory, "keyword")
    terms_ms = (time.perf_counter() - start) * 1000
    assert held is not None
    cfg = memory.vault.config.embeddings
    start = time.perf_counter()
    held.embed(embedder, cfg.chunk_tokens, cfg.chunk_overlap)  # all of them, no time budget
    embed_ms = (time.perf_counter() - start) * 1000
    start = time.perf_counter()
    sealed.prepared(memory)
    again_ms = (time.perf_counter() - start) * 1000
    # Scoring the held notes for one query, on its own: what a search adds besides reading its hits.
    query = "does Alice prefer tea on Tuesdays"
    qvec = embedder.embed([query])[0]
    added = {}
    for mode in ("keyword", "vector"):
        times = []
        for _ in range(rounds * 10):
            start = time.perf_counter()
            if mode == "keyword":
                held.keyword(query, memory.indexer.fts, lambda row: True)
            else:
                held.vector(qvec, embedder.model_id, lambda row: True)
            times.append(time.perf_counter() - start)
        added[mode] = statistics.median(times) * 1000
    memory.close()
    return terms_ms + embed_ms, again_ms, embed_ms, added


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, default=300)
    parser.add_argument("--size", type=int, default=2000, help="characters of body per note")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model", default="fake", help="fake, or a sentence-transformers model (default)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        vault = init_vault(root, CONFIG)
        vault = Vault(root)
        start = time.perf_counter()
        settings, key = crypto.new_settings("correct horse battery staple")
        derive_ms = (time.perf_counter() - start) * 1000
        (root / crypto.SETTINGS).write_text(crypto.settings_text(settings), encoding="utf-8")
        crypto.remember(root, key)
        plain = [_note(i, args.size, False) for i in range(args.notes)]
        secret = [_note(i, args.size, True) for i in range(args.notes)]
        # Alternating rounds, medians: a write's cost is mostly fsync, which a busy disk makes noisy.
        plain_times, sealed_times = [], []
        for _ in range(args.rounds):
            plain_times.append(_write(vault, plain))
            sealed_times.append(_write(vault, secret))
        write_plain, write_sealed = statistics.median(plain_times), statistics.median(sealed_times)
        assert envelope.is_envelope((root / secret[0].path).read_bytes())
        read_plain = _read(vault, plain, 5)
        read_sealed = _read(vault, secret, 5)
        data = os.urandom(args.size)
        start = time.perf_counter()
        for _ in range(1000):
            envelope.open_envelope(key, "p", envelope.seal(key, "p", data))
        raw_us = (time.perf_counter() - start) * 1e6 / 1000
        build_ms, again_ms, embed_ms, added = _search(root, args.model, args.rounds)
    print(
        f"notes: {args.notes} x {args.size} characters; scrypt n={settings.n} r={settings.r} p={settings.p}"
    )
    print(f"unlock (scrypt key derivation, once):  {derive_ms:7.1f} ms")
    print(
        f"write per note  plain {write_plain:6.3f} ms   encrypted {write_sealed:6.3f} ms   added {write_sealed - write_plain:+6.3f} ms"
    )
    print(
        f"read per note   plain {read_plain:6.3f} ms   encrypted {read_sealed:6.3f} ms   added {read_sealed - read_plain:+6.3f} ms"
    )
    print(f"seal + open alone: {raw_us:6.1f} us per note")
    print(
        f"search, {args.notes} encrypted notes in memory ({args.model} embedder): build {build_ms:7.1f} ms once"
        f" (embedding {embed_ms:.1f} ms), check unchanged {again_ms:6.1f} ms;"
        f" scoring them per search: keyword {added['keyword']:.2f} ms, vector {added['vector']:.2f} ms"
    )


if __name__ == "__main__":
    main()
