"""The full-text writer process of large builds: the same index as writing in-process, nothing
committed that was not asked for, and one clear error when the child dies."""

from __future__ import annotations

import io
import os
import pickle
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import FIXED_NOW

from tiered_memory.app.memory import Memory
from tiered_memory.errors import IndexUnusable
from tiered_memory.index import fts_writer
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.index.fts import FtsDoc, FtsIndex, analysed_fields
from tiered_memory.model.search import SearchRequest
from tiered_memory.storage.vault import Vault

WORDS = "database migration schema friday survey datum pasta support group budget deadline release".split()


def _doc(i: int, rng: random.Random) -> FtsDoc:
    return FtsDoc(
        path=f"memory/long-term/n{i:04d}.md",
        id=f"n{i:04d}",
        title=" ".join(rng.choices(WORDS, k=3)),
        body=" ".join(rng.choices(WORDS, k=40)) + f" 控制点{i % 7}",
        tags=[rng.choice(WORDS)],
        entities=["Caroline"] if i % 5 == 0 else [],
        project="alpha" if i % 3 == 0 else "",
        tier="long",
        category="fact",
        status="active",
    )


@pytest.fixture
def docs() -> list[FtsDoc]:
    rng = random.Random(5)
    return [_doc(i, rng) for i in range(300)]


@pytest.fixture
def ix(tmp_path: Path) -> Iterator[FtsIndex]:
    index = FtsIndex.open(tmp_path / "fts")
    yield index
    index.close()


def _results(index: FtsIndex) -> list[list[tuple[str, float]]]:
    return [
        index.search(q, limit=20) for q in ("database migration", "support group deadline", "控制点", "alpha")
    ]


def test_the_child_writes_the_index_writing_in_process_would(
    ix: FtsIndex, docs: list[FtsDoc], tmp_path: Path
) -> None:
    with FtsIndex.open(tmp_path / "plain") as plain:
        plain.upsert(docs, new=True)
        expected = _results(plain)
    child = fts_writer.Child(ix, new=True)
    try:
        child.add(docs[:150])
        child.commit()
        child.add(docs[150:])  # sent while the first commit is written
        child.committed()
        assert ix.doc_count() == 150  # seen at once: no stale reader
        child.commit()
        child.committed()
    finally:
        child.close()
    assert ix.doc_count() == 300
    assert _results(ix) == expected
    assert all(hits for hits in expected)


def test_updates_and_deletes_through_the_child(ix: FtsIndex, docs: list[FtsDoc]) -> None:
    ix.upsert(docs[:10])
    changed = FtsDoc(**{**docs[0].__dict__, "body": "zebracorn crossing"})
    child = fts_writer.Child(ix, new=False)
    try:
        child.delete([docs[1].path])
        child.add([changed])
        child.commit()
        child.committed()
    finally:
        child.close()
    assert ix.doc_count() == 9
    assert [p for p, _ in ix.search("zebracorn")] == [docs[0].path]
    assert docs[1].path not in ix.paths()


def test_what_was_not_committed_is_dropped(ix: FtsIndex, docs: list[FtsDoc]) -> None:
    ix.upsert(docs[:5])
    child = fts_writer.Child(ix, new=False)
    child.add(docs[5:50])
    child.close()  # as when this process is killed: the child's input ends without a commit
    ix.reopen()
    assert ix.doc_count() == 5
    ix.upsert(docs[5:7])  # and the write lock was let go
    assert ix.doc_count() == 7


def test_end_of_input_mid_batch_cancels(ix: FtsIndex, docs: list[FtsDoc]) -> None:
    stream = io.BytesIO()
    pickle.dump(("add", [analysed_fields(d) for d in docs[:20]]), stream)
    pickle.dump(("commit", None), stream)
    pickle.dump(("add", [analysed_fields(d) for d in docs[20:40]]), stream)
    stream.write(pickle.dumps(("add", [analysed_fields(d) for d in docs[40:60]]))[:-7])  # cut short
    stream.seek(0)
    reply = io.BytesIO()
    assert fts_writer.serve(ix.directory, True, stream, reply) == 0
    reply.seek(0)
    assert pickle.load(reply) == ("ready", None)
    assert pickle.load(reply) == ("ok", None)
    ix.reopen()
    assert ix.doc_count() == 20


def test_the_child_dies_with_its_parent(tmp_path: Path) -> None:
    # A parent that is killed leaves no writer behind (its input ends; on Linux the kernel ends it too).
    code = (
        "import os, sys, time\n"
        "from pathlib import Path\n"
        "from tiered_memory.index.fts import FtsIndex\n"
        "from tiered_memory.index import fts_writer\n"
        f"child = fts_writer.Child(FtsIndex.open(Path({str(tmp_path / 'fts')!r})), new=True)\n"
        "print(child.proc.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child_pid = int(parent.stdout.readline())
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(child_pid):
        time.sleep(0.05)
    assert not _alive(child_pid)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_a_child_that_dies_is_one_clear_error(ix: FtsIndex, docs: list[FtsDoc]) -> None:
    child = fts_writer.Child(ix, new=True)
    child.add(docs[:1])
    child.commit()
    child.committed()
    child.proc.kill()
    child.proc.wait()
    with pytest.raises(IndexUnusable, match=r"full-text writer process ended early .*tmem reindex"):
        child.add(docs[1:])
        child.commit()
        child.committed()
    child.close()
    assert ix.doc_count() == 1


def test_a_writer_that_does_not_start_hands_the_batch_to_this_process(
    ix: FtsIndex, docs: list[FtsDoc], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fts_writer.sys, "executable", "/bin/false")  # a Python that cannot run us
    sink = fts_writer.open_sink(ix, new=True, expected=fts_writer.CHILD_MIN_DOCS)
    try:
        sink.delete([docs[0].path])
        sink.add(docs)
        sink.commit()
        sink.committed()
    finally:
        sink.close()
    assert isinstance(sink, fts_writer.WithFallback) and isinstance(sink.inner, fts_writer.InProcess)
    assert ix.doc_count() == len(docs)


def test_small_batches_and_one_core_stay_in_process(ix: FtsIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    small = fts_writer.open_sink(ix, new=True, expected=fts_writer.CHILD_MIN_DOCS - 1)
    assert isinstance(small, fts_writer.InProcess)
    monkeypatch.setattr(fts_writer.os, "cpu_count", lambda: 1)
    one_core = fts_writer.open_sink(ix, new=True, expected=fts_writer.CHILD_MIN_DOCS * 10)
    assert isinstance(one_core, fts_writer.InProcess)


def test_a_vault_build_through_the_child(vault_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = vault_path / "memory" / "long-term"
    for i in range(120):
        (folder / f"w{i:03d}.md").write_text(f"# Note {i}\n\nThe {WORDS[i % len(WORDS)]} of week {i}.\n")
    monkeypatch.setattr(fts_writer, "CHILD_MIN_DOCS", 50)
    opened: list[str] = []
    real = fts_writer.Child.__init__

    def spy(self: fts_writer.Child, fts: FtsIndex, new: bool) -> None:
        opened.append("child")
        real(self, fts, new)

    monkeypatch.setattr(fts_writer.Child, "__init__", spy)
    memory = Memory(Vault(vault_path), embedder_factory=lambda: FakeEmbedder(64), now=lambda: FIXED_NOW)
    try:
        report = memory.refresh(vectors=False)
        assert opened == ["child"]
        assert report.added == 120
        hits = memory.searcher.search(SearchRequest(query="pasta week", mode="keyword")).hits
        assert hits and all(h.path.startswith("memory/long-term/w") for h in hits)
        indexed = [p for p, (_m, _s, digest) in memory.indexer.catalog.stats().items() if digest]
        assert memory.indexer.fts.doc_count() == len(indexed) == 120  # templates stay out of both
    finally:
        memory.close()


def _writers_left() -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if b"tiered_memory.index.fts_writer" in cmdline and (proc / "stat").exists():
            if _alive(int(proc.name)):
                found.append(int(proc.name))
    return found


def test_a_build_killed_at_any_point_leaves_a_vault_the_next_command_repairs(vault_path: Path) -> None:
    # A build large enough for the writer process, killed (-9) at a different point each round.
    folder = vault_path / "memory" / "long-term" / "bulk"
    folder.mkdir(parents=True)
    count = fts_writer.CHILD_MIN_DOCS + 100
    for i in range(count):
        (folder / f"b{i:05d}.md").write_text(
            f"# Bulk {i}\n\nThe {WORDS[i % len(WORDS)]} of batch b{i:05d}.\n"
        )
    env = dict(os.environ, TMEM_VAULT=str(vault_path), TMEM_AUTOSTART="0")
    tmem = [sys.executable, "-m", "tiered_memory"]
    for delay in (0.3, 1.0, 1.8, 2.6):
        build = subprocess.Popen([*tmem, "reindex", "--keyword-only", "--full"], env=env)
        time.sleep(delay)
        build.kill()
        build.wait()
        deadline = time.monotonic() + 10
        while _writers_left() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _writers_left() == []  # no writer outlives its parent
        done = subprocess.run([*tmem, "reindex", "--keyword-only"], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        memory = Memory(Vault(vault_path), embedder_factory=lambda: FakeEmbedder(64), now=lambda: FIXED_NOW)
        try:
            indexed = {p for p, (_m, _s, digest) in memory.indexer.catalog.stats().items() if digest}
            assert len(indexed) == count
            assert memory.indexer.fts.paths() == indexed  # the full text and the catalog agree
            hits = memory.searcher.search(SearchRequest(query="b01234", mode="keyword")).hits
            assert [h.path for h in hits][:1] == ["memory/long-term/bulk/b01234.md"]
        finally:
            memory.close()
