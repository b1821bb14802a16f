"""Dedup never waits for a cold model: with no daemon, `tmem add` compares a new memory with its
full-text candidates by their words; embeddings are compared only where the model is warm already
(the daemon loads it at start)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from helpers import FAKE_CONFIG, ok, write

from tiered_memory.app import dedup
from tiered_memory.app.filing import NewNote
from tiered_memory.app.memory import Memory
from tiered_memory.daemon import client
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.storage.vault import Vault, init_vault

OLDER = "The staging database is rebuilt every night from the production snapshot"
RESTATED = "Every night the staging database gets rebuilt from the production snapshot"  # words: 0.88
DISTINCT = "The staging database is backed up to the cold storage bucket every week"
# A restatement in other words: only embeddings see it (word overlap 0.70, below the default 0.8).
PINNED = "We decided to pin numpy to 1.26 because 2.0 broke the build"
PINNED_AGAIN = "We decided to pin numpy to version 1.26 since numpy 2.0 broke our build"

# `tmem add` in a fresh process, as a person runs it, then which heavy modules that process loaded.
ADD_AND_LIST_MODULES = (
    "import json, sys\n"
    "from tiered_memory.cli import cli\n"
    "try:\n"
    "    cli.main(sys.argv[1:], standalone_mode=False)\n"
    "except SystemExit:\n"
    "    pass\n"
    "heavy = {'torch', 'sentence_transformers', 'transformers', 'onnxruntime', 'hnswlib'}\n"
    "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in heavy)))\n"
)


def add_in_a_process(root: Path, text: str) -> tuple[dict[str, Any], list[str], float]:
    """`tmem add --json TEXT` in its own process: its result, the heavy modules it loaded, its time."""
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", ADD_AND_LIST_MODULES, "--vault", str(root), "add", "--json", text],
        capture_output=True,
        text=True,
        timeout=180,
    )
    took = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr
    *result, modules = proc.stdout.strip().splitlines()
    return json.loads("\n".join(result)), json.loads(modules), took


def test_add_without_a_daemon_merges_a_restatement_and_never_loads_the_model(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    init_vault(root)  # the default config: the packaged sentence-transformers model
    assert not client.socket_path(root).exists()
    template = len(list((root / "memory").rglob("*.md")))
    first, loaded, _ = add_in_a_process(root, OLDER)
    assert first["action"] == "added" and loaded == []
    again, loaded, took = add_in_a_process(root, RESTATED)
    assert again["action"] == "merged", again
    assert again["other"]["id"] == first["note"]["id"]
    assert loaded == []  # no torch, no sentence_transformers: the model was never loaded
    assert took < 30  # a cold model load alone took 12-24 s; this bound only catches a load
    other, loaded, _ = add_in_a_process(root, DISTINCT)
    assert other["action"] == "added" and loaded == []
    assert len(list((root / "memory").rglob("*.md"))) == template + 2  # no copy of the restatement


def test_dedup_without_a_warm_model_never_builds_one(vault_path: Path) -> None:
    # A low cosine threshold: were the model loaded, embeddings would decide.
    (vault_path / "tmem.yaml").write_text(FAKE_CONFIG + "dedup:\n  cosine: 0.5\n", encoding="utf-8")
    built: list[int] = []

    def factory() -> FakeEmbedder:
        built.append(1)
        return FakeEmbedder(64)

    memory = Memory(Vault(vault_path), embedder_factory=factory)
    try:
        first = dedup.remember(memory, NewNote(OLDER))
        merged = dedup.remember(memory, NewNote(RESTATED))
        assert merged.action == "merged" and merged.other is not None
        assert merged.other.id == first.note.id and "word overlap" in merged.reason
        assert dedup.remember(memory, NewNote(DISTINCT)).action == "added"
        # Words alone miss this restatement: it is added, and `tmem maintain` merges it later.
        assert dedup.judge(memory, NewNote(PINNED_AGAIN)).action == "added"
        assert built == []
        outcomes, _sha = dedup.remember_many(memory, [NewNote(RESTATED), NewNote(PINNED)], "extract: a batch")
        assert [o.action for o in outcomes] == ["merged", "added"]
        assert built == []
    finally:
        memory.close()


def test_a_warm_model_compares_embeddings(vault_path: Path) -> None:
    (vault_path / "tmem.yaml").write_text(
        FAKE_CONFIG + "dedup:\n  token_overlap: 1.0\n  cosine: 0.75\n", encoding="utf-8"
    )
    memory = Memory(Vault(vault_path), embedder_factory=lambda: FakeEmbedder(64))
    try:
        dedup.remember(memory, NewNote(PINNED))
        assert dedup.judge(memory, NewNote(PINNED_AGAIN)).action == "added"  # cold: words only
        memory.indexer.vectors()  # what the daemon does at start
        verdict = dedup.judge(memory, NewNote(PINNED_AGAIN))
        assert verdict.action == "merged" and verdict.other is not None
        assert "cosine" in verdict.other.reason
    finally:
        memory.close()


@pytest.fixture
def daemon_vault(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG + "dedup:\n  token_overlap: 1.0\n  cosine: 0.75\n")
    log = tmp_path / "daemon.log"
    cmd = [sys.executable, "-m", "tiered_memory", "--vault", str(root), "daemon", "run"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, log.read_text()
        info = client.ping(root)
        if info and info["ready"]:
            break
        assert time.monotonic() < deadline, "the daemon never became ready"
        time.sleep(0.05)
    yield root
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)


@pytest.mark.slow
def test_add_through_the_daemon_compares_embeddings(daemon_vault: Path) -> None:
    first, _, _ = add_in_a_process(daemon_vault, PINNED)
    again, _, _ = add_in_a_process(daemon_vault, PINNED_AGAIN)
    assert again["action"] == "merged", again
    assert again["other"]["id"] == first["note"]["id"]
    assert "cosine" in str(again["message"])


def test_a_restatement_words_miss_is_merged_by_maintain(vault_path: Path) -> None:
    from tiered_memory.app.maintain import run_maintenance

    # The fake embedder's cosine for this pair is lower than the real model's: so is the threshold.
    config = FAKE_CONFIG + "lifecycle:\n  merge_similarity: 0.75\n"
    (vault_path / "tmem.yaml").write_text(config, encoding="utf-8")
    memory = Memory(Vault(vault_path), embedder_factory=lambda: FakeEmbedder(64))
    try:
        first = dedup.remember(memory, NewNote(PINNED))
        again = dedup.remember(memory, NewNote(PINNED_AGAIN))
        assert again.action == "added"  # words alone: 0.70 < 0.8
        report = run_maintenance(memory)
        assert {(m.kept_id, m.dropped_id) for m in report.merges} in (
            {(first.note.id, again.note.id)},
            {(again.note.id, first.note.id)},
        )
        assert [m.method for m in report.merges] == ["embeddings"]
    finally:
        memory.close()


def test_add_shows_what_it_waits_for(
    vault_path: Path, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first `tmem add` on a vault never indexed indexes it first: that wait is shown (here every
    phase at once; a real one after a second), since seconds of silence read as a hang."""
    from tiered_memory.cli import progress
    from tiered_memory.index import indexer

    status_lines = progress.status_lines
    monkeypatch.setattr(progress, "status_lines", lambda: status_lines(patience=0.0))
    monkeypatch.setattr(indexer, "READ_EVERY", 10)  # progress after every 10 notes, not 500
    for i in range(40):
        write(vault_path, f"memory/long-term/knowledge_base/n{i}.md", f"# Note {i}\n\nThe note number {i}.\n")
    result = ok(run("add", OLDER))
    assert result.stdout.startswith("remembered")
    assert "tmem: indexing" in result.stderr


def test_maintain_shows_a_slow_model_load(
    vault_path: Path, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tmem maintain` does load the model (its merge compares embeddings): a load over a second says so."""
    from tiered_memory.index import embeddings

    def slow(*args: object, **kwargs: object) -> FakeEmbedder:
        time.sleep(1.3)
        return FakeEmbedder(64)

    monkeypatch.setattr(embeddings, "make_embedder", slow)
    result = ok(run("maintain"))
    assert "tmem: loading the embedding model" in result.stderr
