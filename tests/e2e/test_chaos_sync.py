"""scripts/chaos_sync.py: two clones of one vault, agents and a person writing on both, syncs in a
loop, the daemon on one side and SIGKILLs at random; afterwards nothing is lost, both sides agree
and the next command works. A short run with a fixed seed, and the checks themselves shown to
catch each kind of breakage (a net with a hole in it would let every run pass)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import chaos_sync
import pytest
from helpers import ROOT

SECONDS = 8
TIMEOUT = 300  # the whole run on a loaded two-core machine: setup, chaos, final syncs, checks


@pytest.mark.slow
@pytest.mark.timeout(TIMEOUT + 60)
def test_two_machines_many_writers_and_kills_lose_nothing(tmp_path: Path) -> None:
    argv = [sys.executable, str(ROOT / "scripts" / "chaos_sync.py"), "--seconds", str(SECONDS), "--seed", "1"]
    out = subprocess.run(
        [*argv, "--json", "--keep", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert out.stdout, out.stderr
    report = json.loads(out.stdout)
    assert report["failures"] == [], "\n".join(report["failures"])
    assert report["ops"].get("add", 0) > 0 and report["ops"].get("sync", 0) > 0
    assert report["ops"].get("hand-write", 0) > 0
    assert sum(report["kills"].values()) > 0
    assert len(report["settle"]) == 4 and all(s < 60 for s in report["settle"])
    assert out.returncode == 0


@pytest.fixture
def synced(tmp_path: Path) -> chaos_sync.Chaos:
    """Two synced clones and their remote, with one note added on A and synced to B."""
    chaos = chaos_sync.Chaos(tmp_path, seed=1, writers=1, timeout=120)
    chaos.setup()
    chaos.add("A", chaos_sync.random.Random(1), tmp_path / "scratch")
    for side in ("A", "B"):
        chaos.must(chaos.tmem(side, "sync", "sync"), f"sync {side}")
    return chaos


def test_the_checks_pass_on_two_clones_in_step(synced: chaos_sync.Chaos) -> None:
    synced.check(since=0)
    assert synced.report.failures == []
    assert len(synced.notes) == 1


def test_the_checks_catch_a_lost_note_a_changed_hand_file_markers_and_a_force_push(
    synced: chaos_sync.Chaos,
) -> None:
    a, b = synced.vault["A"], synced.vault["B"]
    synced.notes["never-written"] = chaos_sync.Note("never-written", "A", ["some text"])
    (note,) = [n for n in synced.notes.values() if n.id != "never-written"]
    note.lines.append("- a line nobody kept")
    (a / "memory/long-term/mine.md").write_text("mine\n")
    synced.hand[("A", "memory/long-term/mine.md")] = b"mine, as the person wrote it\n"
    (b / "memory/long-term/merged.md").write_text("<<<<<<< ours\nx\n=======\ny\n>>>>>>> theirs\n")
    synced.git(a, "commit", "-q", "--allow-empty", "--amend", "-m", "history rewritten")
    synced.git(a, "push", "-q", "--force", "origin", "main")
    synced.check(since=0)
    failures = "\n".join(synced.report.failures)
    assert "note never-written (added on A) is missing on A" in failures
    assert f"note {note.id} on B lost '- a line nobody kept'" in failures
    assert "hand-written memory/long-term/mine.md differs on A" in failures
    assert "hand-written memory/long-term/mine.md is missing on B" in failures
    assert "conflict markers in B:memory/long-term/merged.md" in failures
    assert "B is not clean after the final syncs" in failures
    assert "not a descendant (force-push)" in failures


def test_a_line_kept_in_the_second_file_a_sync_made_of_one_id_is_not_lost(synced: chaos_sync.Chaos) -> None:
    """Sync keeps a twin of different text under `<id>-2` (or `-archived`): its lines are there."""
    (note,) = synced.notes.values()
    note.lines.append("- a line only the twin holds")
    for side in ("A", "B"):
        vault = synced.vault[side]
        twin = vault / "memory/long-term/twin.md"
        twin.write_text(f"---\nid: {note.id}-2\ntitle: twin\n---\n- a line only the twin holds\n")
        synced.git(vault, "add", "-A")
        synced.git(vault, "commit", "-q", "-m", "twin")
    synced.check(since=0)
    assert not any("lost" in failure for failure in synced.report.failures)
    assert any(note.id in twin for twin in synced.report.twins)
    assert chaos_sync.twin_of(f"{note.id}-archived", note.id)
    assert not chaos_sync.twin_of(f"{note.id}-2x", note.id) and not chaos_sync.twin_of(note.id, note.id)
