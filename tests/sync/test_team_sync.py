"""Many machines on one remote, through a real git server on localhost (`git daemon` over git://).

What scripts/bench_team.py found when ten clones synced at once, each kept fixed here, and a short
run of the bench itself (four clones, two of them with the daemon, ten rounds).
"""

from __future__ import annotations

import itertools
import json
import random
import re
import statistics
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers import FAKE_CONFIG, FIXED_NOW, git

from tiered_memory.app.filing import NewNote, add
from tiered_memory.app.memory import Memory
from tiered_memory.config import parse_config
from tiered_memory.daemon import loop as daemon_loop
from tiered_memory.daemon.jobs import Schedule
from tiered_memory.daemon.loop import Daemon, Timings
from tiered_memory.errors import SyncConflict
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.model.merge3 import Sides, merge_file
from tiered_memory.storage.vault import Vault, init_vault
from tiered_memory.sync import gitsync
from tiered_memory.sync.gitmerge import adopt_vault
from tiered_memory.sync.gitsync import sync

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
sys.path.insert(0, str(SCRIPTS))

import bench_team  # noqa: E402

pytestmark = pytest.mark.skipif(
    subprocess.run(["git", "daemon", "-h"], capture_output=True).returncode not in (0, 129),
    reason="git daemon is not installed",
)


def open_memory(root: Path) -> Memory:
    return Memory(Vault(root), embedder_factory=lambda: FakeEmbedder(64), now=lambda: FIXED_NOW)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """(url, bare repository) of a remote behind `git daemon --enable=receive-pack`."""
    base = tmp_path / "server"
    bare = base / "remote.git"
    subprocess.run(["git", "init", "--quiet", "--bare", "-b", "main", str(bare)], check=True)
    with bench_team.git_server(base) as url:
        yield f"{url}/remote.git", bare


@pytest.fixture
def pair(tmp_path: Path, served: tuple[str, Path]) -> Iterator[tuple[Memory, Memory]]:
    url, _ = served
    laptop = tmp_path / "laptop"
    init_vault(laptop, config_text=FAKE_CONFIG)
    git(laptop, "remote", "add", "origin", url)
    first = open_memory(laptop)
    assert sync(first).pushed
    desktop = tmp_path / "desktop"
    subprocess.run(["git", "clone", "--quiet", url, str(desktop)], check=True)
    adopt_vault(desktop)
    second = open_memory(desktop)
    yield first, second
    first.close()
    second.close()


def test_a_push_that_loses_the_race_for_the_servers_branch_is_merged_and_retried(
    pair: tuple[Memory, Memory], served: tuple[str, Path]
) -> None:
    """Two pushes to one branch at once: the server takes the branch's lock for the first, and
    answers the second "[remote rejected] (failed to update ref)", not "[rejected]". That is the
    same race as a non-fast-forward push: fetch, merge, push again, not give up."""
    laptop, desktop = pair
    _, bare = served
    lock = bare / "refs" / "heads" / "main.lock"
    add(laptop, NewNote(text="Laptop: the release train leaves on Tuesdays."))
    add(desktop, NewNote(text="Desktop: the staging database moved to eu-west."))
    attempts: list[int] = []

    def another_push_holds_the_branch(attempt: int) -> None:
        attempts.append(attempt)
        if attempt == 1:  # the desktop's push is under way on the server as ours arrives
            lock.write_text("")
        elif attempt == 2:  # it landed: ours is now behind, so rejected (fetch first)
            lock.unlink()
            assert sync(desktop).pushed

    report = sync(laptop, before_push=another_push_holds_the_branch)
    assert attempts == [1, 2, 3]
    assert report.pushed and report.push_attempts == 3
    remote_log = subprocess.run(
        ["git", "--git-dir", str(bare), "log", "--format=%s", "main"], capture_output=True, text=True
    ).stdout
    assert "remember: Laptop: the release train" in remote_log
    assert "remember: Desktop: the staging database" in remote_log


def test_a_branch_locked_on_the_server_for_good_gives_up_with_one_clear_error(
    pair: tuple[Memory, Memory], served: tuple[str, Path]
) -> None:
    laptop, _ = pair
    _, bare = served
    (bare / "refs" / "heads" / "main.lock").write_text("")  # a server-side git that crashed
    add(laptop, NewNote(text="Laptop: kept even when the remote stays locked."))
    with pytest.raises(SyncConflict, match="stays locked"):
        sync(laptop)
    assert "kept even when" in git(laptop.vault.root, "log", "-1", "--format=%s")


@pytest.mark.slow  # daemon processes, and about a minute
@pytest.mark.timeout(400)
def test_four_clones_two_with_the_daemon_lose_nothing_and_converge() -> None:
    """The bench's short run: every change each clone logged is in every clone, one tree, no
    command failed, no marker left (CI's version of the N = 10 x 100 run in the README)."""
    proc = subprocess.run(
        [sys.executable, str(SCRIPTS / "bench_team.py"), "--clones", "4", "--rounds", "10", "--json"],
        capture_output=True,
        text=True,
        timeout=380,
    )
    (result,) = json.loads(proc.stdout)
    assert result["lost"] == [] and result["failures"] == [], proc.stdout
    assert result["converged"] and result["changes"] == 40
    assert result["daemons"] == 2 and result["commits"] > 0
    assert proc.returncode == 0, proc.stderr


def test_daemons_started_together_do_not_sync_in_lockstep(tmp_path: Path) -> None:
    """Two daemons started in the same second with `sync_minutes: 1` synced in the same second of
    every minute, forever: every sync of one raced a push of the other."""
    cfg = parse_config({"daemon": {"sync_minutes": 1}})
    start = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)
    runs: list[list[int]] = []
    for seed in (1, 2):
        schedule = Schedule(tmp_path / f"schedule-{seed}.json", cfg)
        schedule.rng = random.Random(seed)
        schedule.start(start)
        synced = []
        for second in range(20 * 60):
            now = start + timedelta(seconds=second)
            if "sync" in schedule.due(now):
                schedule.ran("sync", now)
                synced.append(second)
        runs.append(synced)
    first, second = runs
    gaps = [min(abs(t - u) for u in second) for t in first if t > 5 * 60]
    assert statistics.median(gaps) >= 3, (first, second)
    for synced in runs:  # still about once a minute, never later than the interval
        assert all(0 < b - a <= 60 for a, b in itertools.pairwise(synced))
        assert len(synced) >= 20


def test_two_daemons_started_together_sync_seconds_apart(tmp_path: Path) -> None:
    """The daemon looks at its schedule every `job_check` seconds: counted from its start, two
    daemons started together looked, and synced, in the same second every minute whatever their
    schedules said."""
    clock = {"t": 0.0}
    start = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)
    synced: dict[str, list[float]] = {}
    daemons = []
    for seed, name in enumerate(("laptop", "agent")):
        root = tmp_path / name
        init_vault(root, config_text=FAKE_CONFIG + "daemon:\n  sync_minutes: 1\n")
        times = synced.setdefault(name, [])
        daemon = Daemon(
            root,
            timings=Timings(reconcile=10.0**9),  # no rescan: this is about the schedule alone
            jobs={"sync": lambda d, times=times: times.append(clock["t"])},
            clock=lambda: clock["t"],
            local_now=lambda: start + timedelta(seconds=clock["t"]),
            embedder_factory=lambda: FakeEmbedder(64),
        )
        daemon.schedule.rng = random.Random(seed)
        daemons.append(daemon)
    while clock["t"] < 20 * 60:
        for daemon in daemons:
            daemon._step()
        clock["t"] += 0.5
    first, second = synced["laptop"], synced["agent"]
    assert len(first) >= 15 and len(second) >= 15
    gaps = [min(abs(t - u) for u in second) for t in first if t > 5 * 60]
    assert statistics.median(gaps) >= 3, (first, second)


def test_a_note_saved_in_an_editor_while_sync_fetches_is_committed_and_merged(
    pair: tuple[Memory, Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A daemon's sync fetches without the write lock; a person saving the note the pull changes
    in that moment made git refuse the merge (its local changes would be overwritten): no sync."""
    laptop, desktop = pair
    note = add(laptop, NewNote(text="Handbook\n\n## On call\n\n- Ana\n\n## Releases\n\n- Tuesdays\n"))
    assert sync(laptop).pushed
    sync(desktop)
    theirs, ours = desktop.vault.root / note.path, laptop.vault.root / note.path
    theirs.write_text(theirs.read_text().replace("- Ana\n", "- Ana\n- Bo\n"))
    assert sync(desktop).pushed
    real = gitsync._network
    saved: list[str] = []

    def fetch_while_a_person_saves(git: Any, name: str, url: str, *args: str) -> Any:
        proc = real(git, name, url, *args)
        if args[0] == "fetch" and not saved:
            ours.write_text(ours.read_text().replace("- Tuesdays\n", "- Tuesdays\n- Fridays too\n"))
            saved.append(note.path)
        return proc

    monkeypatch.setattr(gitsync, "_network", fetch_while_a_person_saves)
    report = sync(laptop)
    assert saved and report.pushed and not report.conflicts
    text = ours.read_text()
    assert "- Bo\n" in text and "- Fridays too\n" in text
    assert git(laptop.vault.root, "status", "--porcelain", "--", "memory") == ""


def test_two_clones_conflicts_merged_into_each_other_are_resolved_without_dropping_a_line() -> None:
    """Two clones each merged the same third edit against their own owner line, pushed the note
    with its markers, and a third merge joined the two: both sides' separators were one line
    added at one spot, kept once, so an opening marker was left that nothing closes. The bench's
    resolver dropped every line of such a block, and its resolution was committed: owner lines
    of three clones lost (tmem's merge had kept them all)."""
    handbook = "# Team handbook\n\n## Area 12\n\n{}\n"
    base = handbook.format("- owner: nobody yet")
    third = handbook.format("- owner: zqc05x4 (c05)\n- zqc07x3 hand-written by c07")
    one = merge_file(
        base, handbook.format("- owner: zqc02x18 (c02)"), third, bench_team.HANDBOOK, Sides("c02")
    )
    two = merge_file(
        base, handbook.format("- owner: zqc01x21 (c01)"), third, bench_team.HANDBOOK, Sides("c01")
    )
    assert one.conflict and two.conflict
    joined = merge_file(third, one.text, two.text, bench_team.HANDBOOK).text
    owners = ["zqc02x18", "zqc01x21", "zqc05x4", "zqc07x3"]
    assert all(marker in joined for marker in owners)  # the merge lost nothing
    kept = "\n".join(bench_team.keep_both(joined.split("\n")))
    assert [marker for marker in owners if marker not in kept] == []
    assert not re.search(r"^(<{7}|={7}|>{7})", kept, re.M)
    assert bench_team.dropped(joined, kept) == []
    assert bench_team.dropped(joined, kept.replace("- owner: zqc01x21 (c01)\n", "")) == [
        "- owner: zqc01x21 (c01)"
    ]


def test_daemons_started_together_make_their_first_sync_seconds_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A daemon's first sync is due at once; its first look at the schedule came `job_check`
    seconds after its start, so daemons started together (the bench's five) all made that sync
    in the same second, whatever spread their later ones."""
    seeds = iter((0, 1))
    monkeypatch.setattr(
        daemon_loop, "Schedule", lambda path, cfg: Schedule(path, cfg, random.Random(next(seeds)))
    )
    clock = {"t": 0.0}
    start = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)
    daemons = []
    for name in ("laptop", "agent"):
        root = tmp_path / name
        init_vault(root, config_text=FAKE_CONFIG + "daemon:\n  sync_minutes: 1\n")
        times: list[float] = []
        daemon = Daemon(
            root,
            timings=Timings(reconcile=10.0**9),
            jobs={"sync": lambda d, times=times: times.append(clock["t"])},
            clock=lambda: clock["t"],
            local_now=lambda: start + timedelta(seconds=clock["t"]),
            embedder_factory=lambda: FakeEmbedder(64),
        )
        daemons.append((daemon, times))
    while clock["t"] < 45:
        for daemon, _ in daemons:
            daemon._step()
        clock["t"] += 0.5
    firsts = [times[0] for _, times in daemons]
    assert abs(firsts[0] - firsts[1]) >= 3, firsts
    assert all(t <= 30 for t in firsts)  # still within one look of the start
