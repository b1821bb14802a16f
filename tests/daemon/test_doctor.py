"""`tmem doctor [--fix]` over real vaults: what it finds, what --fix repairs, and its exit codes."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import Result
from daemon_process import DaemonProc, note, wait_for
from helpers import write

from tiered_memory.daemon import client
from tiered_memory.daemon.doctor import diagnose, repair

Run = Callable[..., Result]
LONG = "memory/long-term/knowledge_base/domains"


def lines(result: Result) -> list[str]:
    return [line.strip() for line in result.stdout.splitlines()]


def problems(result: Result) -> list[str]:
    return [line for line in lines(result) if line.startswith("PROBLEM")]


@pytest.fixture
def daemon(vault_path: Path, tmp_path: Path) -> Iterator[DaemonProc]:
    proc = DaemonProc(vault_path, tmp_path / "daemon.log")
    yield proc
    if proc.proc.poll() is None:
        os.kill(proc.proc.pid, signal.SIGCONT)
    proc.stop()


def test_a_new_vault_needs_indexing_and_fix_does_it(run: Run) -> None:
    found = run("doctor")
    assert found.exit_code == 1
    assert problems(found) == ["PROBLEM  index    the vault has not been indexed yet"]
    assert "ok       daemon   not running (`tmem daemon start` keeps searches warm)" in lines(found)
    fixed = run("doctor", "--fix")
    assert fixed.exit_code == 0, fixed.output
    assert lines(fixed)[0].startswith(
        "fixed    reindexed in-process: 0 added, 0 changed, 0 deleted, 0 embedded"  # templates only
    )
    assert problems(fixed) == []
    again = run("doctor")
    assert again.exit_code == 0
    assert (
        "ok       index    0 note file(s), all indexed as they are on disk; "
        "7 template(s) not indexed until you write in them"
    ) in lines(again)


def test_stale_index_entries_and_pending_vectors(run: Run, vault_path: Path) -> None:
    write(vault_path, f"{LONG}/first.md", note("First", "A note indexed without its vector."))
    assert run("reindex", "--keyword-only").exit_code == 0
    write(vault_path, f"{LONG}/new.md", note("New", "A note written while nothing watched."))
    profile = vault_path / "memory/long-term/user_profile.md"
    profile.write_text(profile.read_text() + "\nEdited by hand.\n")
    (vault_path / "memory/long-term/relationships/contacts.md").unlink()
    found = run("doctor", "--json")
    assert found.exit_code == 1
    data = json.loads(found.stdout)
    assert not data["healthy"]
    index = next(f for f in data["findings"] if f["check"] == "index")
    assert index["message"] == "3 file(s) changed since they were indexed (1 new, 1 changed, 1 deleted)"
    assert index["examples"] == [
        f"{LONG}/new.md",
        "memory/long-term/relationships/contacts.md",
        "memory/long-term/user_profile.md",
    ]
    vectors = next(f for f in data["findings"] if f["check"] == "vectors")
    assert vectors["message"] == "1 note(s) are waiting for vectors" and vectors["action"] == "reindex"
    text = run("doctor")
    assert "`tmem doctor --fix` will reindex them" in text.stdout
    assert f"e.g. {LONG}/new.md" in text.stdout
    fixed = run("doctor", "--fix")
    assert fixed.exit_code == 0, fixed.output
    # The edited template is a note now: it gets its vector with the new note and the first one.
    assert "fixed    reindexed in-process: 1 added, 1 changed, 1 deleted, 3 embedded" in lines(fixed)
    assert "ok       vectors  every indexed note has its vectors" in lines(fixed)


def test_leftovers_of_a_killed_daemon_are_found_and_removed(run: Run, vault_path: Path) -> None:
    write(vault_path, f"{LONG}/first.md", note("First", "A note whose vector was never saved."))
    assert run("reindex").exit_code == 0
    state = vault_path / ".tmem"
    (state / "daemon.pid").write_text("999999\n")  # no process holds its lock
    (state / "daemon.heartbeat").write_text(json.dumps({"pid": 999999, "heartbeat_at": time.time() - 900}))
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(state / "daemon.sock"))
    stale.close()
    (state / "vectors.unsaved").write_text(f"{LONG}/first.md\n")
    found = run("doctor")
    assert found.exit_code == 1
    assert problems(found) == [
        "PROBLEM  daemon   the daemon (pid 999999) is gone (crashed or killed) and left "
        "daemon.heartbeat, daemon.pid, daemon.sock behind",
        "PROBLEM  vectors  1 note(s) were embedded by a daemon that stopped before saving them",
    ]
    fixed = run("doctor", "--fix")
    assert fixed.exit_code == 0, fixed.output
    assert (
        "fixed    removed what the dead daemon left behind: daemon.sock, daemon.heartbeat, the pid in daemon.pid"
        in lines(fixed)
    )
    assert "fixed    marked 1 note(s) whose vectors were lost for embedding" in lines(fixed)
    assert "fixed    reindexed in-process: 0 added, 0 changed, 0 deleted, 1 embedded" in lines(fixed)
    assert not any((state / name).exists() for name in ("daemon.sock", "daemon.heartbeat", "vectors.unsaved"))
    assert (state / "daemon.pid").read_text() == ""


@pytest.mark.slow
def test_a_healthy_daemon_passes(run: Run, daemon: DaemonProc) -> None:
    found = run("doctor")
    assert found.exit_code == 0, found.output
    assert lines(found)[0].startswith(f"ok       daemon   running (pid {daemon.proc.pid}), ready, heartbeat ")
    assert "ok       watcher  alive (0 restart(s))" in lines(found)


@pytest.mark.slow
def test_a_stopped_daemon_is_found_stuck_and_fix_stops_it(
    run: Run, daemon: DaemonProc, vault_path: Path
) -> None:
    write(vault_path, f"{LONG}/moth.md", note("Moth", "Moths fly to the lamp."))
    wait_for(lambda: daemon.paths("moths lamp", mode="keyword"), what="the note")
    os.kill(daemon.proc.pid, signal.SIGSTOP)
    found = diagnose(vault_path)
    assert [f.message for f in found if not f.ok] == [
        f"the daemon (pid {daemon.proc.pid}) holds the vault lock but does not answer on its socket"
    ]
    done = repair(vault_path, found, lambda line: None, grace=10.0)
    assert (
        done[0]
        == f"stopped the stuck daemon (pid {daemon.proc.pid}); start it again with `tmem daemon start`"
    )
    assert daemon.proc.wait(10) == 0  # it got SIGTERM once resumed: a clean stop
    assert client.lock_holder(vault_path) is None
    after = run("doctor")
    assert after.exit_code == 0, after.output


@pytest.mark.slow
def test_an_old_heartbeat_means_a_stuck_main_thread(daemon: DaemonProc, vault_path: Path) -> None:
    found = diagnose(vault_path, wall=lambda: time.time() + 3600)
    stuck = [f for f in found if not f.ok]
    assert len(stuck) == 1 and stuck[0].action == "kill"
    assert "its heartbeat is 3600 s old: its main thread is stuck" in stuck[0].message


def test_an_old_git_lock_is_reported_not_removed(run: Run, vault_path: Path) -> None:
    assert run("reindex").exit_code == 0
    lock = vault_path / ".git" / "index.lock"
    lock.write_text("")
    old = time.time() - 1800
    os.utime(lock, (old, old))
    found = run("doctor", "--fix")
    assert found.exit_code == 1
    assert problems(found) == [
        "PROBLEM  git      .git/index.lock is 30 min old: a git command crashed or hangs, and auto-commits wait for it"
    ]
    assert "to fix: if no git command is running, delete .git/index.lock" in found.stdout
    assert lock.exists()


def test_a_fragmented_full_text_index_is_found_and_compacted(run: Run, vault_path: Path) -> None:
    for i in range(12):
        write(vault_path, f"{LONG}/n{i}.md", note(f"Note {i}", f"first version {i}"))
    assert run("reindex", "--keyword-only").exit_code == 0
    for round_ in range(2):  # hand edits with no daemon running: replaced copies pile up
        for i in range(4 * round_, 4 * round_ + 4):  # a third of the notes each time
            write(vault_path, f"{LONG}/n{i}.md", note(f"Note {i}", f"version {round_} of {i}"))
            os.utime(vault_path / f"{LONG}/n{i}.md", (time.time() + round_ + 1,) * 2)
        assert run("search", "--mode", "keyword", "version").exit_code == 0  # indexes the edits
    data = json.loads(run("doctor", "--json").stdout)
    fulltext = next(f for f in data["findings"] if f["check"] == "fulltext")
    assert not fulltext["ok"] and fulltext["action"] == "compact", fulltext
    assert "fragmented" in fulltext["message"]
    fixed = run("doctor", "--fix")
    assert any(line.startswith("fixed    compacted the full-text index") for line in lines(fixed)), (
        fixed.output
    )
    again = json.loads(run("doctor", "--json").stdout)
    fulltext = next(f for f in again["findings"] if f["check"] == "fulltext")
    assert fulltext["ok"] and fulltext["message"].startswith("full-text index: 1 segment(s), 0% stale")
    hits = run("search", "--mode", "keyword", "--json", "version 1 of 7").stdout
    assert json.loads(hits)["results"][0]["title"] == "Note 7"


def test_a_setting_held_at_an_earlier_default_is_named_and_left_alone(run: Run, vault_path: Path) -> None:
    config = vault_path / "tmem.yaml"
    config.write_text(
        config.read_text(encoding="utf-8")
        + "search:\n  confidence_cosine_weight: 0.6\n"
        + "  decay_lambda: 0.0005\n",  # the person's own value, never a default: not named
        encoding="utf-8",
    )
    held = config.read_bytes()
    run("doctor", "--fix")
    found = run("doctor")
    assert found.exit_code == 0, found.output  # a working vault: no problem
    named = [line for line in lines(found) if line.startswith("ok       settings")]
    assert named == [
        "ok       settings tmem.yaml holds search.confidence_cosine_weight: 0.6, the default of an "
        "earlier tmem; today's is 0.9: set it to 0.9 or delete the line, unless you chose 0.6"
    ]
    assert config.read_bytes() == held  # the person's file, untouched by --fix


def test_a_vault_on_todays_defaults_has_no_settings_line(run: Run) -> None:
    assert not [line for line in lines(run("doctor")) if "settings" in line]
