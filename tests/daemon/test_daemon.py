"""The daemon as a real subprocess over temporary vaults (fake embedder): live indexing, the socket
protocol, crash recovery, auto-commit, shutdown; plus the schedule's pure functions in-process.

Every daemon a test starts is stopped by a finalizer, by pid, and waited for."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from daemon_process import DaemonProc, note, stop_detached, tmem, wait_for
from helpers import FAKE_CONFIG, FIXED_NOW, commit, git_log, write

from tiered_memory.app.api.agents import CONTEXT, ContextRequest
from tiered_memory.app.api.lifecycle import (
    MAINTAIN,
    ST_GET,
    ST_SET,
    MaintainRequest,
    MaintainResult,
    StKeyRequest,
    StSetRequest,
)
from tiered_memory.app.api.projects import (
    PROJECT_NEW,
    TASK_ADD,
    TASK_LIST,
    NewProjectRequest,
    TaskAddRequest,
    TaskListRequest,
)
from tiered_memory.app.api.recall import SEARCH
from tiered_memory.app.filing import NewNote, add
from tiered_memory.app.memory import Memory
from tiered_memory.backend import DaemonBackend, open_backend
from tiered_memory.config import parse_config
from tiered_memory.daemon import client
from tiered_memory.daemon.jobs import DEFAULT_JOBS, commit_message, due_jobs, initial_last_runs
from tiered_memory.daemon.loop import Daemon, Timings
from tiered_memory.errors import BadInput, LockTimeout
from tiered_memory.index.catalog import Catalog
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.index.vectors import VectorIndex
from tiered_memory.model.search import SearchRequest, SearchResult
from tiered_memory.storage.vault import Vault, init_vault

# Every test here runs a daemon process: out of the quick loop (`pytest -m "not slow"`).
pytestmark = pytest.mark.slow

LONG = "memory/long-term/knowledge_base/domains"


@pytest.fixture
def make_daemon(tmp_path: Path) -> Iterator[Callable[..., DaemonProc]]:
    started: list[DaemonProc] = []

    def make(config: str = FAKE_CONFIG, *args: str, name: str = "vault") -> DaemonProc:
        root = tmp_path / name
        if not root.exists():
            init_vault(root, config_text=config)
        daemon = DaemonProc(root, tmp_path / f"{name}.log", *args)
        started.append(daemon)
        return daemon

    yield make
    for daemon in started:
        daemon.stop()


@pytest.fixture
def detached(tmp_path: Path) -> Iterator[Path]:
    """A vault for `tmem daemon start`; whatever daemon runs on it at the end is stopped."""
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG)
    yield root
    stop_detached(root)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProc]:
    """One daemon for the tests that only add, edit and search (starting one costs ~2 s)."""
    base = tmp_path_factory.mktemp("shared")
    home = base / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": str(home / ".gitcfg"),
    }
    env.pop("TMEM_VAULT", None)
    root = base / "vault"
    with pytest.MonkeyPatch.context() as patch:
        for key in ("HOME", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL"):
            patch.setenv(key, env[key])
        init_vault(root, config_text=FAKE_CONFIG + "search:\n  decay_lambda: 0\n")
    daemon = DaemonProc(root, base / "daemon.log", env=env)
    yield daemon
    daemon.stop()


# ---- live indexing ------------------------------------------------------------------------------------


def test_write_edit_rename_delete_show_up_in_search(shared: DaemonProc) -> None:
    root = shared.root
    rel = f"{LONG}/quokka.md"
    write(root, rel, note("Quokka facts", "The quokka smiles on Rottnest island."))
    wait_for(lambda: shared.paths("quokka rottnest", mode="keyword") == [rel], what="the new note")
    write(root, rel, note("Quokka facts", "Now this note is about wombats burrowing."))
    wait_for(lambda: shared.paths("wombats burrowing", mode="keyword") == [rel], what="the edit")
    assert shared.paths("rottnest", mode="keyword") == []
    moved = f"{LONG}/wombat.md"
    os.rename(root / rel, root / moved)
    wait_for(lambda: shared.paths("wombats burrowing", mode="keyword") == [moved], what="the rename")
    assert shared.paths("wombats", mode="vector")[0] == moved  # vectors follow the rename too
    (root / moved).unlink()
    wait_for(lambda: shared.paths("wombats burrowing", mode="keyword") == [], what="the deletion")


def test_atomic_save_patterns_index_the_real_file_only(shared: DaemonProc) -> None:
    root = shared.root
    folder = root / LONG
    folder.mkdir(parents=True, exist_ok=True)
    # Temp file then rename (VS Code, Obsidian, tmem itself).
    write(root, f"{LONG}/.axolotl.md.a1b2.tmp", note("Axolotl", "Axolotls regrow limbs."))
    os.replace(folder / ".axolotl.md.a1b2.tmp", folder / "axolotl.md")
    # vim: backup by rename, write anew, swap file alongside, backup removed.
    write(root, f"{LONG}/pangolin.md", note("Pangolin", "Pangolins have scales."))
    wait_for(lambda: shared.paths("pangolins scales", mode="keyword"), what="the first pangolin")
    write(root, f"{LONG}/.pangolin.md.swp", "b0VIM swap")
    os.rename(folder / "pangolin.md", folder / "pangolin.md~")
    write(root, f"{LONG}/pangolin.md", note("Pangolin", "Pangolins roll into armoured balls."))
    (folder / "pangolin.md~").unlink()
    # JetBrains safe write.
    write(root, f"{LONG}/okapi.md___jb_tmp___", note("Okapi", "Okapis are related to giraffes."))
    os.replace(folder / "okapi.md___jb_tmp___", folder / "okapi.md")
    wait_for(
        lambda: shared.paths("armoured balls", mode="keyword") == [f"{LONG}/pangolin.md"], what="vim's save"
    )
    wait_for(
        lambda: shared.paths("regrow limbs", mode="keyword") == [f"{LONG}/axolotl.md"], what="the rename save"
    )
    wait_for(
        lambda: shared.paths("giraffes", mode="keyword") == [f"{LONG}/okapi.md"], what="the JetBrains save"
    )
    (folder / ".pangolin.md.swp").unlink()
    shared.request({"op": "flush"})
    catalog = Catalog(root / ".tmem" / "catalog.sqlite")
    try:
        indexed = list(catalog.stats())
    finally:
        catalog.close()
    assert not [p for p in indexed if any(m in p for m in (".tmp", "~", "___jb", ".swp"))]


def test_folders_moved_in_and_out(shared: DaemonProc, tmp_path: Path) -> None:
    root = shared.root
    for i in range(3):
        write(
            root, f"memory/mid-term/projects/capybara/n{i}.md", note(f"Capybara {i}", f"capybara chill {i}")
        )
    wait_for(lambda: len(shared.paths("capybara chill", mode="keyword")) == 3, what="the project notes")
    shutil.move(
        str(root / "memory/mid-term/projects/capybara"), str(root / "memory/archive/projects/capybara")
    )
    moved = sorted(f"memory/archive/projects/capybara/n{i}.md" for i in range(3))
    wait_for(lambda: sorted(shared.paths("capybara chill", mode="keyword")) == moved, what="the moved folder")
    shutil.move(str(root / "memory/archive/projects/capybara"), str(tmp_path / "capybara"))
    wait_for(lambda: shared.paths("capybara chill", mode="keyword") == [], what="the folder moved out")


def test_socket_is_private_to_the_user(shared: DaemonProc) -> None:
    path = client.socket_path(shared.root)
    assert path.parent == shared.root / ".tmem"
    assert path.stat().st_mode & 0o777 == 0o600


def test_malformed_requests_get_an_error_and_the_daemon_keeps_serving(shared: DaemonProc) -> None:
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(str(client.socket_path(shared.root)))
    sock.settimeout(10)
    reader = sock.makefile("rb")

    def ask(raw: bytes) -> dict[str, Any]:
        sock.sendall(raw + b"\n")
        reply: dict[str, Any] = json.loads(reader.readline())
        return reply

    assert ask(b"this is not json") == {
        "ok": False,
        "error": "malformed request: not a JSON object on one line",
        "code": 2,
    }
    assert ask(b"[1, 2]")["error"] == 'malformed request: expected {"op": ...}'
    # Nested past Python's recursion limit: still an error reply, on the same connection.
    assert ask(b"[" * 100_000)["error"] == "malformed request: not a JSON object on one line"
    assert ask(b'{"op": "teleport"}')["error"].startswith("unknown op 'teleport' (known: ")
    assert ask(b'{"op": "call"}')["error"] == 'call needs the operation\'s "name"'
    assert ask(b'{"op": "call", "name": "teleport"}')["error"].startswith("unknown operation 'teleport'")

    def search(fields: bytes) -> dict[str, Any]:
        return ask(b'{"op": "call", "name": "search", "request": ' + fields + b"}")

    assert search(b'{"query": 5}')["error"] == "bad request for search: field query: expected text"
    assert search(b'{"query": "x", "mode": "psychic"}')["code"] == 2
    assert search(b'{"query": "x", "since": "last tuesday"}')["code"] == 2
    assert search(b'{"query": "x", "colour": "red"}')["error"] == (
        "bad request for search: unknown field(s): colour"
    )
    assert search(b'{"query": "  "}') == {
        "ok": False,
        "error": "empty query: say what to search for",
        "code": 2,
    }
    pong = ask(b'{"op": "ping", "id": 7}')
    assert isinstance(pong.pop("phase"), str) and "progress" in pong
    pong.pop("progress")
    assert pong == {"ok": True, "pid": shared.proc.pid, "ready": True, "version": "0.1.0", "id": 7}
    sock.close()
    big = socket.socket(socket.AF_UNIX)
    big.connect(str(client.socket_path(shared.root)))
    big.settimeout(10)
    big.sendall(b'{"op": "ping", "pad": "' + b"x" * (2 << 20) + b'"}\n')
    big_reader = big.makefile("rb")
    assert json.loads(big_reader.readline())["error"] == "request larger than 1 MB"
    big.sendall(b'{"op": "ping"}\n')  # the same connection still serves
    assert json.loads(big_reader.readline())["ok"] is True
    big.close()
    with pytest.raises(Exception, match="empty query"):
        client.call(shared.root, "search", {"query": ""})
    assert client.ping(shared.root) is not None
    assert shared.proc.poll() is None


def test_daemon_answers_exactly_what_in_process_search_answers(shared: DaemonProc) -> None:
    root = shared.root
    write(root, f"{LONG}/kafka.md", note("Kafka retention", "Kafka keeps the orders topic for 7 days."))
    write(
        root,
        "memory/short-term/tea.md",
        note("Tea", "The user drinks oolong tea, no sugar, while reading Kafka."),
    )
    wait_for(lambda: len(shared.paths("kafka orders oolong", mode="keyword")) == 2, what="the notes")
    shared.request({"op": "flush"})  # vectors saved, so an in-process search loads the same ones
    memory = Memory(Vault(root))
    try:
        for request in (
            SearchRequest("kafka orders topic"),
            SearchRequest("oolong", mode="vector", limit=3),
            SearchRequest("kafka", mode="keyword", tiers=["long"]),
        ):
            local = memory.search(request, record_access=False)
            served = SearchResult.from_dict(client.call(root, "search", request.to_dict()))
            assert served == local
            assert served.hits
    finally:
        memory.close()


def test_tmem_search_through_the_daemon_loads_no_heavy_module(shared: DaemonProc) -> None:
    # Its own note, so the test holds when it runs alone as well as after the others.
    write(shared.root, f"{LONG}/zookeeper.md", note("Zookeeper quorum", "Zookeeper needs three nodes."))
    wait_for(lambda: shared.paths("zookeeper", mode="keyword"), what="the note")
    code = (
        "import sys, json\n"
        "from tiered_memory.cli import cli\n"
        "try:\n"
        f"    cli.main(['--vault', {str(shared.root)!r}, 'search', '--json', 'zookeeper'], standalone_mode=False)\n"
        "except SystemExit:\n    pass\n"
        "heavy = {'pydantic', 'whoosh', 'hnswlib', 'numpy', 'torch', 'git', 'sqlite3'}\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in heavy)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    lines = out.stdout.strip().splitlines()
    assert json.loads("\n".join(lines[:-1]))["results"], out.stdout
    assert lines[-1] == "[]"


def test_edits_are_seen_after_memory_is_replaced(shared: DaemonProc) -> None:
    """The watcher covers the whole vault, so a memory/ folder swapped for a copy stays watched."""
    root = shared.root
    shutil.copytree(root / "memory", root / "memory.new")
    os.rename(root / "memory", root / "memory.old")
    os.rename(root / "memory.new", root / "memory")
    write(root, f"{LONG}/narwhal.md", note("Narwhal", "Narwhals have a long tusk."))
    wait_for(
        lambda: shared.paths("narwhals tusk", mode="keyword") == [f"{LONG}/narwhal.md"], what="a later edit"
    )
    shutil.rmtree(root / "memory.old")


# ---- bursts, crashes, starts ----------------------------------------------------------------------------


def test_a_burst_of_1000_files_is_indexed_in_one_batch(make_daemon: Callable[..., DaemonProc]) -> None:
    """A burst is one batch because its events come closer together than the quiet spell. On a
    busy machine the daemon may read the burst's ~3,000 events over more than the batch's cap
    (five quiet spells), which then cuts it in two: the cap is lifted here, and the quiet spell is
    two seconds, so that only a debouncer that does not batch splits it."""
    daemon = make_daemon(FAKE_CONFIG + "daemon:\n  debounce_ms: 2000\n", "--max-batch-seconds", "600")
    before = daemon.status()
    started = last = time.monotonic()
    longest = 0.0  # the writer's own longest pause, told on a failure: one past 2 s would split it
    for i in range(1000):
        write(
            daemon.root,
            f"memory/archive/sessions/2026/11/s{i:04d}.md",
            note(f"Session {i}", f"burst marker{i:04d}"),
        )
        longest, last = max(longest, time.monotonic() - last), time.monotonic()
    wrote = f"written in {last - started:.1f} s, longest pause {longest:.2f} s"
    wait_for(lambda: daemon.status()["notes"] == before["notes"] + 1000, 60.0, "the burst to be indexed")
    after = daemon.status()
    assert after["batches"] == before["batches"] + 1, (wrote, daemon.log.read_text(errors="replace")[-3000:])
    assert after["last_event"]["paths"] == 1000
    assert daemon.paths("marker0999", mode="keyword") == ["memory/archive/sessions/2026/11/s0999.md"]
    # The batch was indexed without embedding it in one go; its vectors follow, a slice at a time.
    catalog = Catalog(daemon.root / ".tmem" / "catalog.sqlite")
    try:
        wait_for(lambda: not catalog.pending_vectors(), 60.0, "the burst to be embedded in the background")
    finally:
        catalog.close()


def test_edits_that_fragment_the_full_text_index_get_it_compacted(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    daemon = make_daemon(FAKE_CONFIG, "--vector-save-seconds", "0.3")
    for i in range(20):
        write(daemon.root, f"memory/long-term/k{i:02d}.md", note(f"Fact {i}", f"original wording {i}"))
    wait_for(lambda: daemon.paths("original", mode="keyword", limit=50).__len__() == 20, 30.0, "indexing")
    for i in range(12):  # 12 replaced copies among 32 stored documents: over the 25 % threshold
        write(daemon.root, f"memory/long-term/k{i:02d}.md", note(f"Fact {i}", f"revised wording {i}"))
        time.sleep(0.05)
    daemon_log = daemon.root / ".tmem" / "daemon.log"

    def compacted() -> bool:
        text = daemon.log.read_text(encoding="utf-8", errors="replace")
        if daemon_log.exists():
            text += daemon_log.read_text(encoding="utf-8", errors="replace")
        return "compacted the full-text index" in text

    wait_for(compacted, 30.0, "the compaction")
    assert len(daemon.paths("revised", mode="keyword", limit=50)) == 12
    assert len(daemon.paths("original", mode="keyword", limit=50)) == 8
    assert daemon.status()["errors"] == 0


def _running(pid: int | None) -> bool:
    """Whether `pid` still runs: a zombie (ended, waiting for a parent that may never reap it
    in a container) does not."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except FileNotFoundError:
        return False
    return stat.rsplit(b")", 1)[-1].split()[0] != b"Z"


def test_kill_9_then_start_again_and_two_starts(detached: Path) -> None:
    root = detached
    started = tmem(root, "daemon", "start")
    assert started.returncode == 0, started.stderr
    pid = client.lock_holder(root)
    assert pid and started.stdout.strip() == f"daemon started (pid {pid})"
    again = tmem(root, "daemon", "start")
    assert again.returncode == 0 and again.stdout.strip() == f"daemon already running (pid {pid})"
    foreground = tmem(root, "daemon", "run")
    assert foreground.returncode == 2
    assert foreground.stderr.strip() == f"tmem: a tmem daemon is already running for this vault (pid {pid})"

    rel = f"{LONG}/ibis.md"
    write(root, rel, note("Ibis", "The sacred ibis wades through marshes."))
    wait_for(lambda: _paths(root, "ibis marshes", "keyword") == [rel], what="the new note")
    os.kill(pid, signal.SIGKILL)  # its vectors were not saved yet (they are every 30 s)
    wait_for(lambda: client.lock_holder(root) is None, what="the lock to be released")
    status = tmem(root, "daemon", "status")
    assert status.returncode == 1 and "did not stop cleanly" in status.stdout
    assert client.socket_path(root).exists()  # stale: nothing listens
    assert client.ping(root) is None

    restarted = tmem(root, "daemon", "start")
    assert restarted.returncode == 0, restarted.stderr
    assert client.lock_holder(root) not in (None, pid)
    assert _paths(root, "sacred ibis wading", "vector")[0] == rel  # re-embedded after the crash
    log = (root / ".tmem" / "daemon.log").read_text()
    assert f"a previous daemon (pid {pid}) did not shut down cleanly" in log
    assert "re-embedding 1 note(s) whose vectors were not saved" in log
    assert "1 note(s) changed since the last commit; they will be auto-committed" in log
    second = client.lock_holder(root)
    stopped = tmem(root, "daemon", "stop")
    assert stopped.returncode == 0 and stopped.stdout.startswith("daemon stopped (pid ")
    assert not _running(second)  # "stopped" means the process has ended, not that it is ending
    assert not client.socket_path(root).exists() and not client.heartbeat_path(root).exists()
    assert tmem(root, "daemon", "stop").stdout.strip() == "daemon not running"
    # The edit the killed daemon had indexed but not committed is committed by the next one.
    assert (
        subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain"], capture_output=True, text=True
        ).stdout
        == ""
    )
    assert git_log(root)[0].startswith("edit: ")


def _paths(root: Path, query: str, mode: str) -> list[str]:
    return [h["path"] for h in client.call(root, "search", {"query": query, "mode": mode})["hits"]]


def test_status_reports_health(detached: Path) -> None:
    assert tmem(detached, "daemon", "start").returncode == 0
    write(detached, f"{LONG}/heron.md", note("Heron", "Grey herons stand still."))
    wait_for(lambda: _paths(detached, "herons", "keyword"), what="the note")
    shown = tmem(detached, "daemon", "status")
    assert shown.returncode == 0
    for label in ("running (pid", "last event:", "queue:", "notes indexed:", "last commit:", "memory (RSS):"):
        assert label in shown.stdout
    data = json.loads(tmem(detached, "daemon", "status", "--json").stdout)
    assert data["running"] and data["ready"] and data["queue"] == 0 and data["notes"] >= 1
    assert data["last_event"]["paths"] == 1 and 0 < data["rss_mb"] < 800
    beat = client.read_heartbeat(detached)
    assert beat and beat["pid"] == data["pid"] and time.time() - beat["heartbeat_at"] < 30


# ---- auto-commit and shutdown ----------------------------------------------------------------------------


def test_auto_commit_of_hand_edits(make_daemon: Callable[..., DaemonProc]) -> None:
    daemon = make_daemon(FAKE_CONFIG + "daemon:\n  autocommit_seconds: 1\n")
    root = daemon.root
    start = len(git_log(root))
    write(root, f"{LONG}/otter.md", note("Otter habits", "Sea otters hold hands while sleeping."))
    write(root, f"{LONG}/水獭.md", note("水獭", "水獭睡觉时手拉着手。"))  # raw, not C-quoted, names
    profile = root / "memory/long-term/user_profile.md"
    profile.write_text(profile.read_text() + "\nLikes otters.\n")
    (root / "memory/long-term/relationships/contacts.md").unlink()
    wait_for(lambda: len(git_log(root)) == start + 1, what="the auto-commit")
    message = subprocess.run(
        ["git", "-C", str(root), "log", "-1", "--format=%B"], capture_output=True, text=True
    ).stdout
    subject, _, body = message.partition("\n")
    assert subject.startswith("edit: Otter habits; 水獭; ") and subject.endswith(" (+1 more)")
    assert f"added    Otter habits  ({LONG}/otter.md)" in body
    assert f"added    水獭  ({LONG}/水獭.md)" in body
    assert "edited   " in body and "(memory/long-term/user_profile.md)" in body
    assert "deleted  " in body and "(memory/long-term/relationships/contacts.md)" in body
    changed = subprocess.run(
        ["git", "-C", str(root), "show", "--name-status", "--format=", "HEAD"], capture_output=True, text=True
    ).stdout.split("\n")
    assert sorted(line for line in changed if line) == [
        f'A\t"{LONG}/\\346\\260\\264\\347\\215\\255.md"',
        f"A\t{LONG}/otter.md",
        "D\tmemory/long-term/relationships/contacts.md",
        "M\tmemory/long-term/user_profile.md",
    ]

    # A file that does not parse (half-written frontmatter) is not committed until it is fixed.
    broken = write(root, f"{LONG}/half.md", "---\ntitle: [unfinished\n")
    wait_for(lambda: "not auto-committing" in daemon.log.read_text(), what="the refusal")
    assert len(git_log(root)) == start + 1
    broken.write_text(note("Half done", "Finished now."))
    wait_for(lambda: len(git_log(root)) == start + 2, what="the commit of the fixed note")
    assert git_log(root)[0] == "edit: Half done"

    # Never while the user's own git command holds the index lock (a live process has it open).
    lock = root / ".git" / "index.lock"
    holder = open(lock, "w")  # noqa: SIM115 - held open across the wait, as a running git would
    write(root, f"{LONG}/otter.md", note("Otter habits", "Otters also use stones as tools."))
    wait_for(lambda: "auto-commit waits: .git/index.lock exists" in daemon.log.read_text(), what="the wait")
    time.sleep(1.5)
    assert len(git_log(root)) == start + 2
    holder.close()
    lock.unlink()
    wait_for(lambda: len(git_log(root)) == start + 3, what="the commit after the lock is gone")
    assert not subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain"], capture_output=True, text=True
    ).stdout.strip()


@pytest.mark.parametrize("seen", ["queued", "unreported"])
def test_sigterm_flushes_pending_index_updates_and_the_auto_commit(
    make_daemon: Callable[..., DaemonProc], seen: str
) -> None:
    """Whether the write's event is waiting in the queue, or never reached the daemon (still on
    its way when the watcher stopped; here, no watcher at all), the stop indexes and commits it."""
    args = () if seen == "queued" else ("--no-watch",)
    daemon = make_daemon(FAKE_CONFIG + "daemon:\n  debounce_ms: 5000\n  autocommit_seconds: 3600\n", *args)
    root = daemon.root
    start = len(git_log(root))
    rel = f"{LONG}/lynx.md"
    write(root, rel, note("Lynx", "The lynx has tufted ears."))
    if seen == "queued":
        wait_for(lambda: daemon.status()["queue"] > 0, what="the event in the queue")
    assert daemon.stop() == 0
    catalog = Catalog(root / ".tmem" / "catalog.sqlite")
    try:
        row = catalog.get(rel)
        assert row is not None and row.vec_hash == row.hash  # indexed and embedded
    finally:
        catalog.close()
    assert not (root / ".tmem" / "vectors.unsaved").exists()  # ...and the vectors saved
    assert len(git_log(root)) == start + 1 and git_log(root)[0] == "edit: Lynx"
    assert not client.socket_path(root).exists() and client.lock_holder(root) is None
    assert "SIGTERM received: flushing and stopping" in daemon.log.read_text()


def test_an_edit_only_a_rescan_found_is_auto_committed(make_daemon: Callable[..., DaemonProc]) -> None:
    """No event came (an inotify overflow, a watcher restarting, a file system that sends none):
    the rescan indexes the edit, and the auto-commit takes it as it takes a reported one, not
    only at the next start."""
    daemon = make_daemon(
        FAKE_CONFIG + "daemon:\n  autocommit_seconds: 1\n", "--no-watch", "--reconcile-seconds", "1"
    )
    root = daemon.root
    start = len(git_log(root))
    write(root, f"{LONG}/egret.md", note("Egret", "The egret wades in the shallows."))
    wait_for(lambda: daemon.paths("egret", mode="keyword"), what="the rescan's indexing")
    wait_for(lambda: len(git_log(root)) == start + 1, 20.0, what="the auto-commit")
    assert git_log(root)[0] == "edit: Egret"


def test_the_last_scan_at_a_stop_is_bounded_and_leaves_the_rest_to_the_next_start(
    vault_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A stop finds writes the watcher never reported, and indexes them for `last_scan` seconds
    at most: with no time at all, it says how many it left, and the next start indexes them."""

    def serve(last_scan: float) -> Daemon:
        daemon = Daemon(
            vault_path,
            timings=Timings(heartbeat=0.05, watch=False, last_scan=last_scan),
            embedder_factory=lambda: FakeEmbedder(64),
        )
        thread = threading.Thread(target=daemon.run)
        thread.start()
        try:
            wait_for(daemon.ready.is_set, 30.0, "the daemon to be ready")
            for i in range(3):
                write(vault_path, f"{LONG}/heron-{last_scan}-{i}.md", note(f"Heron {i}", "Herons fish."))
        finally:
            daemon.request_stop()
            thread.join(60)
        assert not thread.is_alive() and daemon.exit_code == 0
        return daemon

    def indexed() -> list[str]:
        catalog = Catalog(vault_path / ".tmem" / "catalog.sqlite")
        try:
            return sorted(p for p in catalog.stats() if "heron" in p)
        finally:
            catalog.close()

    with caplog.at_level("INFO", logger="tiered_memory.daemon"):
        serve(0.0)
    assert indexed() == []
    assert "3 note(s) are left for the next start's scan to index" in caplog.text
    serve(5.0)
    assert len(indexed()) == 6  # the three left before, found at the start; three more at this stop
    assert "last scan: 3 note(s) and 0 attachment(s) the watcher had not reported" in caplog.text


def test_the_daemon_exits_when_the_vault_disappears(
    make_daemon: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    daemon = make_daemon()
    os.rename(daemon.root, tmp_path / "moved-away")
    assert daemon.proc.wait(20) == 1
    assert f"the vault folder {daemon.root} disappeared; the daemon stops" in daemon.log.read_text()


def test_the_daemon_exits_when_its_state_folder_is_deleted(make_daemon: Callable[..., DaemonProc]) -> None:
    daemon = make_daemon()
    while (daemon.root / ".tmem").exists():  # the daemon may write a heartbeat meanwhile
        shutil.rmtree(daemon.root / ".tmem", ignore_errors=True)
    assert daemon.proc.wait(20) == 1  # else a second daemon could start beside it
    assert ".tmem was removed; the daemon stops" in daemon.log.read_text()


# ---- the client -------------------------------------------------------------------------------------


def test_a_stale_or_silent_socket_never_hangs_the_client(vault_path: Path, run: Callable[..., Any]) -> None:
    write(vault_path, "memory/long-term/tea.md", "# Tea\n\nThe user drinks green tea.\n")
    path = client.socket_path(vault_path)
    path.parent.mkdir(exist_ok=True)
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(path))
    stale.close()  # the file stays, nothing listens: what kill -9 leaves
    start = time.monotonic()
    assert client.ping(vault_path) is None
    result = run("search", "--json", "user")
    assert result.exit_code == 0 and json.loads(result.stdout)["results"]
    assert "hint: the tmem daemon does not answer" in result.stderr
    assert "hint:" not in run("search", "user").stderr  # said once
    assert time.monotonic() - start < 20
    path.unlink()
    silent = socket.socket(socket.AF_UNIX)
    silent.bind(str(path))
    silent.listen(1)  # accepts into the backlog, never answers
    try:
        start = time.monotonic()
        with pytest.raises(client.DaemonUnavailable, match="did not answer"):
            client.request(vault_path, {"op": "ping"}, timeout=0.5)
        assert time.monotonic() - start < 3
    finally:
        silent.close()


def test_tmem_search_output_is_identical_with_and_without_the_daemon(detached: Path) -> None:
    root = detached
    (root / "tmem.yaml").write_text(
        FAKE_CONFIG + "search:\n  decay_lambda: 0\n"
    )  # scores must not age between runs
    write(root, f"{LONG}/kafka.md", note("Kafka retention", "Kafka keeps the orders topic for 7 days."))
    write(root, "memory/short-term/tea.md", note("Tea", "Oolong tea without sugar, while reading Kafka."))
    assert tmem(root, "daemon", "start").returncode == 0
    queries = [
        ["--json", "kafka orders"],
        ["--explain", "oolong tea"],
        ["--json", "--mode", "keyword", "kafka"],
    ]
    served = []
    for args in queries:
        (root / ".tmem-access.jsonl").unlink(missing_ok=True)  # access counts move the prior
        served.append(tmem(root, "search", *args))
    assert tmem(root, "daemon", "stop").returncode == 0
    for args, via_daemon in zip(queries, served, strict=True):
        (root / ".tmem-access.jsonl").unlink(missing_ok=True)
        local = tmem(root, "search", *args)
        assert via_daemon.returncode == local.returncode == 0
        assert via_daemon.stdout == local.stdout
        assert "Kafka retention" in local.stdout or "Tea" in local.stdout
    assert "hint:" not in served[0].stderr


# ---- in-process: the schedule and the job runner ------------------------------------------------------


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def test_schedule_rules() -> None:
    cfg = parse_config(
        {"daemon": {"sync_minutes": 15, "backup_daily": True}, "lifecycle": {"maintenance_time": "03:30"}}
    )
    morning = at("2026-11-22T10:00:00+08:00")
    first = initial_last_runs(morning, cfg, {})
    # A first start after 03:30 does not run the daily jobs at once; interval jobs run now.
    assert sorted(due_jobs(morning, cfg, first)) == ["expiry", "sync"]
    ran = {**first, "expiry": morning.isoformat(), "sync": morning.isoformat()}
    assert due_jobs(morning + timedelta(minutes=14), cfg, ran) == []
    assert due_jobs(morning + timedelta(minutes=15), cfg, ran) == ["sync"]
    assert sorted(due_jobs(morning + timedelta(hours=1), cfg, ran)) == ["expiry", "sync"]
    next_day = at("2026-11-23T03:29:00+08:00")
    assert "maintenance" not in due_jobs(next_day, cfg, ran)
    assert {"maintenance", "backup"} <= set(due_jobs(next_day + timedelta(minutes=1), cfg, ran))
    # Off at 03:30 for two days: runs once when next up, not twice.
    late = at("2026-11-25T18:00:00+08:00")
    assert due_jobs(late, cfg, ran).count("maintenance") == 1
    assert "maintenance" not in due_jobs(late, cfg, {**ran, "maintenance": late.isoformat()})
    # Started before the time: runs the same day.
    early = at("2026-11-22T01:00:00+08:00")
    assert "maintenance" in due_jobs(early.replace(hour=4), cfg, initial_last_runs(early, cfg, {}))
    plain = parse_config({})
    assert sorted(initial_last_runs(morning, plain, {})) == ["expiry", "maintenance"]


def failing_job(daemon: Daemon) -> object:
    raise LockTimeout("maintenance is already running")


def test_run_due_jobs_calls_jobs_and_logs_failing_ones(
    vault_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[tuple[str, datetime]] = []
    clock = {"now": at("2026-11-22T10:00:00+00:00")}
    jobs = {"expiry": lambda d: calls.append(("expiry", d.local_now())), "maintenance": failing_job}
    daemon = Daemon(
        vault_path, jobs=jobs, local_now=lambda: clock["now"], embedder_factory=lambda: FakeEmbedder(64)
    )
    daemon.open_memory()
    try:
        assert daemon.run_due_jobs() == ["expiry"]
        assert daemon.run_due_jobs() == []
        clock["now"] = at("2026-11-23T04:00:00+00:00")
        with caplog.at_level("INFO", logger="tiered_memory.daemon"):
            assert daemon.run_due_jobs() == ["expiry"]  # maintenance was due, and failed
            assert daemon.run_due_jobs() == []  # not retried in a loop
            clock["now"] = at("2026-11-24T04:00:00+00:00")
            daemon.run_due_jobs()
        failed = [r.getMessage() for r in caplog.records if "failed" in r.getMessage()]
        assert failed == ["scheduled maintenance failed: maintenance is already running"] * 2
        assert len(calls) == 3
        # The day's maintenance is claimed in the record the installed timer's tick shares.
        saved = json.loads((vault_path / ".tmem" / "maintain.schedule.json").read_text())
        assert saved["maintenance"].startswith("2026-11-24T04:00")
    finally:
        assert daemon.memory is not None
        daemon.memory.close()


def test_the_scheduled_jobs_run_the_application(vault_path: Path) -> None:
    stack = "memory/short-term/context_stack.json"
    write(vault_path, stack, json.dumps({"old": {"value": 1, "expires_at": "2026-11-01T00:00:00+00:00"}}))
    commit(Vault(vault_path), [stack], "a key that has expired")
    daemon = Daemon(vault_path, now=lambda: FIXED_NOW, embedder_factory=lambda: FakeEmbedder(64))
    daemon.open_memory()
    try:
        assert DEFAULT_JOBS["expiry"](daemon) == 1
        assert json.loads((vault_path / stack).read_text()) == {}
        assert git_log(vault_path)[0] == "st expire: 1 key(s), 0 temp file(s) archived"
        report = DEFAULT_JOBS["maintenance"](daemon)
        assert isinstance(report, MaintainResult) and report.now == FIXED_NOW
    finally:
        assert daemon.memory is not None
        daemon.memory.close()


def test_auto_commit_moves_updated_of_tmem_notes_only(vault_path: Path) -> None:
    daemon = Daemon(vault_path, now=lambda: FIXED_NOW, embedder_factory=lambda: FakeEmbedder(64))
    memory = daemon.open_memory()
    try:
        own = add(memory, NewNote(text="Otters hold hands while sleeping.", title="Otters")).path
        set_by_hand = add(memory, NewNote(text="Seals sleep in water.", title="Seals")).path
        mine = "Notes/mine.md"  # a person's, with the keys a note-taking plugin writes
        write(vault_path, mine, "---\nid: mine\nupdated: 2026-01-01\n---\nOwn words.\n")
        plain = "memory/long-term/plain.md"
        write(vault_path, plain, "# Plain\n\nNo frontmatter at all.\n")
        for rel in (own, set_by_hand):
            text = (vault_path / rel).read_text(encoding="utf-8")
            write(vault_path, rel, re.sub(r"(?m)^updated: .*$", "updated: 2026-01-01", text))
        commit(Vault(vault_path), [own, set_by_hand, mine, plain], "older notes")
        for rel in (own, set_by_hand, mine, plain):
            (vault_path / rel).write_text((vault_path / rel).read_text(encoding="utf-8") + "Edited.\n")
        hand_dated = (
            (vault_path / set_by_hand).read_text(encoding="utf-8").replace("2026-01-01", "2026-02-02")
        )
        (vault_path / set_by_hand).write_text(hand_dated, encoding="utf-8")
        theirs = {rel: (vault_path / rel).read_bytes() for rel in (mine, plain)}
        daemon._commit_hand_edits([own, set_by_hand, mine, plain], lambda: "edit: by hand")
        own_text = (vault_path / own).read_text(encoding="utf-8")
        assert "updated: 2026-01-01" not in own_text and own_text.endswith("Edited.\n")
        assert (vault_path / set_by_hand).read_text(encoding="utf-8") == hand_dated
        assert {rel: (vault_path / rel).read_bytes() for rel in (mine, plain)} == theirs
        assert git_log(vault_path)[0] == "edit: by hand"
        assert not subprocess.run(
            ["git", "-C", str(vault_path), "status", "--porcelain"], capture_output=True, text=True
        ).stdout.strip()
        row = memory.indexer.catalog.get(own)
        assert row is not None and row.updated == FIXED_NOW.timestamp()
    finally:
        memory.close()


def test_a_save_landing_while_updated_is_stamped_is_kept(
    vault_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    daemon = Daemon(vault_path, now=lambda: FIXED_NOW, embedder_factory=lambda: FakeEmbedder(64))
    memory = daemon.open_memory()
    try:
        own = add(memory, NewNote(text="Otters hold hands while sleeping.", title="Otters")).path
        (vault_path / own).write_text((vault_path / own).read_text(encoding="utf-8") + "Edited.\n")
        second_save = (vault_path / own).read_text(encoding="utf-8") + "Edited again.\n"
        real_blob = memory.vault.git.blob

        def blob_while_saving(spec: str) -> bytes:
            found = real_blob(spec)  # the committed version is read: the person saves meanwhile
            (vault_path / own).write_text(second_save, encoding="utf-8")
            return found

        monkeypatch.setattr(memory.vault.git, "blob", blob_while_saving)
        daemon._commit_hand_edits([own], lambda: "edit: by hand")
        assert (vault_path / own).read_text(encoding="utf-8") == second_save
    finally:
        memory.close()


def test_commit_message_lists_titles() -> None:
    items = [("edited", f"memory/x/{i}.md", f"Note {i}") for i in range(5)] + [
        ("deleted", "memory/x/gone.md", "")
    ]
    text = commit_message(items, 60)
    lines = text.splitlines()
    assert lines[0] == "edit: Note 0; Note 1; Note 2 (+3 more)"
    assert lines[2] == "Hand edits committed by the tmem daemon after 60 s without changes."
    assert lines[-1] == "deleted  memory/x/gone.md  (memory/x/gone.md)"
    assert len(lines) == 4 + 6


def test_context_is_served_by_the_daemon(shared: DaemonProc) -> None:
    tmem = open_backend(shared.root)
    try:
        served = tmem.run(CONTEXT, ContextRequest(query="kafka retention", fmt="json"))
        assert tmem.kind == "daemon"
    finally:
        tmem.close()
    assert served.text and served.tokens <= served.budget
    with pytest.raises(BadInput, match="bad request for context: unknown field"):
        client.call(shared.root, "context", {"colour": "red"})


def test_lifecycle_and_project_operations_run_in_the_daemon(shared: DaemonProc) -> None:
    tmem = open_backend(shared.root)
    try:
        assert tmem.kind == "daemon"
        view = tmem.run(PROJECT_NEW, NewProjectRequest("socket-proj", title="Through the socket"))
        assert view.path == "memory/mid-term/projects/socket-proj" and view.created is not None
        task = tmem.run(TASK_ADD, TaskAddRequest("socket-proj", "Ship it"))
        assert task.id == 1 and task.uid
        assert tmem.run(TASK_LIST, TaskListRequest("socket-proj")).tasks == [task]
        entry = tmem.run(ST_SET, StSetRequest("mood", {"calm": True}, "1h"))
        assert entry.expires_at is not None and tmem.run(ST_GET, StKeyRequest("mood")) == entry
        plan = tmem.run(MAINTAIN, MaintainRequest(dry_run=True))
        assert plan.dry_run and plan.commit is None
        assert tmem.kind == "daemon"  # none of them fell back to this process
    finally:
        tmem.close()


def test_socket_paths_too_long_for_sockaddr_still_work(tmp_path: Path) -> None:
    from tiered_memory.daemon.protocol import SocketServer

    root = tmp_path / ("deep-" * 12) / ("vault-" * 10)
    (root / ".tmem").mkdir(parents=True)
    assert len(str(client.socket_path(root))) > 108
    server = SocketServer(
        client.socket_path(root), lambda line, send: {"ok": True, "echo": json.loads(line)["op"]}
    )
    server.start()
    try:
        assert client.socket_path(root).stat().st_mode & 0o777 == 0o600
        assert client.request(root, {"op": "hello"}) == {"ok": True, "echo": "hello"}
    finally:
        server.stop()
    assert not client.socket_path(root).exists()


def test_a_request_too_large_for_the_socket_is_not_sent(tmp_path: Path) -> None:
    """A long transcript to ingest never reaches the daemon's 1 MB line limit: the request is not
    sent (so the backend runs the operation in-process instead)."""
    (tmp_path / ".tmem").mkdir()
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(client.socket_path(tmp_path)))
    server.listen(1)
    try:
        with pytest.raises(client.DaemonUnavailable, match="larger than the daemon accepts") as raised:
            client.call(tmp_path, "ingest", {"text": "x" * client.MAX_REQUEST}, timeout=5)
        assert raised.value.sent is False
    finally:
        server.close()


def test_an_operation_survives_a_vector_index_another_process_rewrote(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    # The events of the new note wait in the debouncer, so the operation's first read applies
    # them: a second use of the indexes inside the operation, which must not reload (and close)
    # the memory the operation holds because another process saved the vectors meanwhile.
    daemon = make_daemon(FAKE_CONFIG + "daemon:\n  debounce_ms: 8000\n  autocommit_seconds: 0\n")
    write(daemon.root, f"{LONG}/pulled.md", note("Pulled", "A note a sync brought in."))
    other = Memory(Vault(daemon.root), embedder_factory=lambda: FakeEmbedder(64))
    try:
        other.refresh(vectors=True)  # what `tmem sync` does in its own process: saves the vectors
    finally:
        other.close()
    write(daemon.root, f"{LONG}/fresh.md", note("Fresh", "Written while the vectors were saved."))
    tmem = open_backend(daemon.root)
    try:
        assert tmem.kind == "daemon"
        plan = tmem.run(MAINTAIN, MaintainRequest(dry_run=True))
        assert plan.dry_run
        # the operation's read applied the queued events: the note is indexed without a flush
        assert f"{LONG}/fresh.md" in daemon.paths("written while the vectors were saved", mode="keyword")
    finally:
        tmem.close()


def test_a_backend_goes_back_to_the_daemon_once_it_is_restarted(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    # A long-lived caller (an MCP server) whose daemon was killed runs its operations itself for a
    # while, then finds the restarted daemon: not every later operation in this process, writing
    # the indexes beside the daemon's for the rest of its life.
    daemon = make_daemon()
    root = daemon.root
    write(root, f"{LONG}/otters.md", note("Otters", "Otters hold hands while sleeping."))
    ran_here: list[str] = []
    local = open_backend(root, daemon=False)
    real_run = local.run

    def run_here(op: Any, request: Any) -> Any:
        ran_here.append(op.name)
        return real_run(op, request)

    local.run = run_here  # type: ignore[method-assign]
    now = [0.0]
    tmem = DaemonBackend(root, lambda line: None, None, lambda: local, clock=lambda: now[0])
    ask = SearchRequest("otters sleeping", mode="keyword")
    try:
        assert tmem.run(SEARCH, ask).hits and ran_here == []
        daemon.proc.kill()
        daemon.proc.wait(10)
        assert tmem.run(SEARCH, ask).hits and ran_here == ["search"]  # answered here
        make_daemon()  # restarted
        now[0] += 5.0
        tmem.run(SEARCH, ask)
        assert ran_here == ["search"] * 2  # not asked again at once: a dead socket costs a wait
        now[0] += DaemonBackend.RETRY_DAEMON
        assert tmem.run(SEARCH, ask).hits and tmem.kind == "daemon"
        assert ran_here == ["search"] * 2  # the restarted daemon answered
    finally:
        tmem.close()


def test_vectors_another_process_saves_during_a_use_are_reloaded(vault_path: Path) -> None:
    """The daemon took its stamp of the vector index after each use of it: a save by another
    process (`tmem reindex`, a sync) landing during that use was stamped as the daemon's own, and
    the daemon served its older vectors, without the other process's notes, until a restart."""
    write(vault_path, f"{LONG}/otters.md", note("Otters", "Otters hold hands while sleeping."))
    commit(Vault(vault_path), [f"{LONG}/otters.md"], "a note")
    daemon = Daemon(vault_path, now=lambda: FIXED_NOW)
    daemon.open_memory()
    try:
        daemon.reindex()  # the daemon's vectors, saved by the daemon: its stamp
        assert not daemon.embedding.rewritten_elsewhere()
        with daemon.indexing() as memory:
            served = memory.indexer.vectors()
            assert served is not None and not served.has(f"{LONG}/kelp.md")
            write(vault_path, f"{LONG}/kelp.md", note("Kelp", "Sea otters wrap themselves in kelp."))
            other = tmem(vault_path, "reindex")  # another process saves the vectors meanwhile
            assert other.returncode == 0, other.stderr
        assert daemon.embedding.rewritten_elsewhere()  # seen: the next use loads them
        with daemon.indexing() as memory:
            reloaded = memory.indexer.vectors()
            assert reloaded is not None and reloaded.has(f"{LONG}/kelp.md")
    finally:
        assert daemon.memory is not None
        daemon.memory.close()


@pytest.mark.slow
def test_the_daemon_applies_changed_settings_without_a_restart(
    make_daemon: Callable[..., DaemonProc],
) -> None:
    """A person who names a templates folder in Obsidian, or changes `folders:` in tmem.yaml,
    while the daemon runs gets the new rules at once, not at the next hourly rescan or restart:
    the templates' placeholders leave the index, and so do the notes tmem.yaml now excludes."""
    daemon = make_daemon(FAKE_CONFIG + "daemon:\n  debounce_ms: 100\n")
    root = daemon.root
    write(root, "Templates/monthly.md", note("Monthly log", "Placeholder {{date}} for the kelp survey log."))
    write(root, "Drafts/otters.md", note("Otters draft", "Draft about otters and kelp forests."))
    wait_for(lambda: len(daemon.paths("kelp", mode="keyword")) == 2, what="both notes indexed")
    write(root, ".obsidian/templates.json", json.dumps({"folder": "Templates"}))
    wait_for(
        lambda: daemon.paths("kelp", mode="keyword") == ["Drafts/otters.md"],
        what="the templates folder left out",
    )
    write(root, "tmem.yaml", FAKE_CONFIG + "folders:\n  exclude: [unclosed\n")  # halfway through an edit
    time.sleep(1.0)
    assert daemon.paths("kelp", mode="keyword") == ["Drafts/otters.md"]  # the settings in use stay
    write(
        root, "tmem.yaml", FAKE_CONFIG + "daemon:\n  debounce_ms: 100\nfolders:\n  exclude: ['Drafts/**']\n"
    )
    wait_for(lambda: daemon.paths("kelp", mode="keyword") == [], what="the excluded folder left out")
    write(root, ".obsidian/templates.json", json.dumps({"folder": "Elsewhere"}))  # no such folder
    wait_for(
        lambda: daemon.paths("kelp", mode="keyword") == ["Templates/monthly.md"], what="the template back"
    )
    assert daemon.stop() == 0


def test_a_save_of_the_daemon_never_overwrites_vectors_another_process_saved(vault_path: Path) -> None:
    """The daemon saves its vectors a few seconds after an edit; a `tmem reindex` (or a sync)
    that saved in between lost its notes' vectors to the daemon's older index, while the catalog
    said they had one: they were never found by meaning again until a full reindex."""
    write(vault_path, f"{LONG}/otters.md", note("Otters", "Otters hold hands while sleeping."))
    commit(Vault(vault_path), [f"{LONG}/otters.md"], "a note")
    daemon = Daemon(vault_path, now=lambda: FIXED_NOW)
    daemon.open_memory()
    try:
        daemon.reindex()
        write(vault_path, f"{LONG}/seals.md", note("Seals", "Seals sleep in the water."))
        daemon.intake.apply_paths([f"{LONG}/seals.md"], 1)  # embedded here, saved on the schedule
        assert daemon.embedding.dirty_since is not None
        write(vault_path, f"{LONG}/kelp.md", note("Kelp", "Sea otters wrap themselves in kelp."))
        other = tmem(vault_path, "reindex")  # another process embeds kelp and saves
        assert other.returncode == 0, other.stderr
        daemon.embedding.save()
        assert daemon.memory is not None
        held = daemon.memory.indexer.vectors()
        assert held is not None
        on_disk = VectorIndex.open(vault_path / ".tmem" / "vectors", held.dim, held.model_id)
        assert {f"{LONG}/{n}.md" for n in ("otters", "seals", "kelp")} <= on_disk.paths()
    finally:
        assert daemon.memory is not None
        daemon.memory.close()
