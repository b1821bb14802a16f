"""The freshness scan's look at the disk run ahead in a forked child: the same digest and stats as
looking here, the stats loaded only when the digest is not enough; a failed or unwanted child is a
None or a cancel, never an error or a leftover process.

The forks happen in fresh interpreters (subprocesses), as in a CLI command: the test process itself
may hold other threads (a model's pool), where `start` declines to fork."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest
from helpers import write

from tiered_memory.index import scan_ahead, scan_mark
from tiered_memory.index.indexer import Indexer
from tiered_memory.storage.vault import Vault

pytestmark = pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")


def run_python(code: str) -> Any:
    """Run `code` in a fresh interpreter; what it printed last, as JSON."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def logging_walks(log: Path) -> str:
    """Code for a fresh interpreter that makes every stat walk, in it and in its forked children,
    append a line `<pid> <part>` to `log`."""
    return textwrap.dedent(f"""
        import os
        from tiered_memory.storage import walk
        real = walk.stat_walk
        def logged(root, rules, part=None):
            with open({str(log)!r}, "a") as f:
                f.write(f"{{os.getpid()}} {{part}}\\n")
            return real(root, rules, part)
        walk.stat_walk = logged
        """)


def test_the_look_ahead_equals_the_look_here(vault_path: Path) -> None:
    write(vault_path, "memory/long-term/zebra.md", "# Zebra\n\nStripes.\n")
    write(vault_path, "memory/mid-term/lion.md", "# Lion\n\nMane.\n")
    (vault_path / "memory" / "long-term" / "map.png").write_bytes(b"\x89PNG\r\n")
    out = run_python(
        f"""
        import json, os
        from pathlib import Path
        from tiered_memory.index import scan_ahead, scan_mark
        from tiered_memory.storage.vault import Vault
        vault = Vault(Path({str(vault_path)!r}))
        text = scan_mark.folder_rules(vault.config.folders)
        pids = []
        def look():
            pids.append(os.getpid())  # in the child: the parent's list never sees it
            return scan_mark.look(vault.root, vault.folders, text)
        here = scan_mark.look(vault.root, vault.folders, text)
        ahead = scan_ahead.start(look)
        digest = ahead.digest()
        seen = ahead.seen()
        print(json.dumps([digest == here.digest, seen == here, ahead.seen() is None, pids,
                          sorted(seen.notes), sorted(seen.attachments)]))
        """
    )
    same_digest, same_seen, second_is_none, parent_looks, notes, attachments = out
    assert same_digest and same_seen and second_is_none
    assert parent_looks == []  # the look ran in the child only
    assert "memory/long-term/zebra.md" in notes and "memory/mid-term/lion.md" in notes
    assert attachments == ["memory/long-term/map.png"]


def test_a_child_that_fails_or_dies_is_a_none() -> None:
    out = run_python(
        """
        import json, os
        from tiered_memory.index import scan_ahead
        from tiered_memory.index.scan_mark import Seen
        def fails():
            raise RuntimeError("disk gone")
        def dies():
            os._exit(3)
        def wrong():
            return "not stats"
        def bad_stats():
            return Seen("not a dict", {}, "0" * 32)
        out = [[a.digest(), a.seen()] for a in map(scan_ahead.start, (fails, dies, wrong))]
        bad = scan_ahead.start(bad_stats)
        out.append([bad.digest(), bad.seen()])  # the digest came, the stats did not
        print(json.dumps(out))
        """
    )
    assert out == [[None, None], [None, None], [None, None], ["0" * 32, None]]


def test_cancel_stops_a_running_child_and_leaves_no_process() -> None:
    out = run_python(
        """
        import json, os, time
        from tiered_memory.index import scan_ahead
        def slow():
            time.sleep(60)
        ahead = scan_ahead.start(slow)
        pid = ahead._children[0].pid
        started = time.monotonic()
        ahead.cancel()
        took = time.monotonic() - started
        try:
            os.waitpid(pid, os.WNOHANG)
            reaped = False
        except ChildProcessError:
            reaped = True
        print(json.dumps([took < 10, reaped, ahead.digest(), ahead.seen()]))
        """
    )
    assert out == [True, True, None, None]


def test_no_fork_while_another_thread_runs() -> None:
    out = run_python(
        """
        import json, threading
        from tiered_memory.index import scan_ahead
        before = scan_ahead.can_fork()
        stop = threading.Event()
        worker = threading.Thread(target=stop.wait)
        worker.start()
        during = scan_ahead.start(lambda: None)
        stop.set()
        worker.join()
        print(json.dumps([before, during is None]))
        """
    )
    assert out == [True, True]


def test_a_keyword_search_walks_once_in_a_child_and_sees_a_note_written_just_before(vault_path: Path) -> None:
    """The CLI's search starts the look before loading the application; the scan takes it, and
    a note written just before the command is found."""
    write(vault_path, "memory/long-term/zebra.md", "# Zebra\n\nThe zebra crossing was repainted.\n")
    code = logging_walks(vault_path / "walks.log") + textwrap.dedent(f"""
        import json, os, sys
        from tiered_memory.cli.main import cli
        try:
            cli(['--vault', {str(vault_path)!r}, 'search', '--mode', 'keyword', '--json', sys.argv[1]])
        except SystemExit as exit:
            assert not exit.code, exit.code
        print(json.dumps(os.getpid()))
        """)
    rounds = [("zebra", "zebra.md", 2), ("zebra", "zebra.md", 1), ("okapi", "okapi.md", 2)]
    for query, note, walks_wanted in rounds:
        if query == "okapi":  # written after the searches before indexed the vault
            write(vault_path, "memory/long-term/okapi.md", "# Okapi\n\nThe okapi was seen at dawn.\n")
        (vault_path / "walks.log").unlink(missing_ok=True)
        proc = subprocess.run(
            [sys.executable, "-c", code, query], capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr
        parent = json.loads(proc.stdout.strip().splitlines()[-1])
        hits = json.loads("\n".join(proc.stdout.strip().splitlines()[:-1]))["results"]
        assert [h["path"] for h in hits] == [f"memory/long-term/{note}"]
        walks = [line.split()[0] for line in (vault_path / "walks.log").read_text().splitlines()]
        # The first walk is the child's. When it shows a change, the scan under the write lock walks
        # again, here; when nothing changed, the child's walk was the only one.
        assert walks[0] != str(parent)
        assert walks[1:] == [str(parent)] * (walks_wanted - 1)


class Taken:
    """Stands for a look under way (no fork in the test process): what it hands over."""

    def __init__(self, seen: scan_mark.Seen | None) -> None:
        self.result = seen
        self.asked: list[str] = []

    def digest(self) -> str | None:
        self.asked.append("digest")
        return self.result.digest if self.result is not None else None

    def seen(self) -> scan_mark.Seen | None:
        self.asked.append("seen")
        return self.result

    def cancel(self) -> None:
        self.asked.append("cancel")


def look_here(vault: Vault) -> scan_mark.Seen:
    """What a look at the vault finds now."""
    return scan_mark.look(vault.root, vault.folders, scan_mark.folder_rules(vault.config.folders))


def test_the_first_scan_without_the_lock_takes_the_look_and_loads_the_stats_only_when_needed(
    vault_path: Path,
) -> None:
    vault = Vault(vault_path)
    first = Indexer(vault)
    first.refresh()
    first.close()
    stale = Taken(look_here(vault))
    write(vault_path, "memory/long-term/zebra.md", "# Zebra\n\nStripes.\n")

    # A look from before the note was written: the scan believes it, and indexes nothing.
    indexer = Indexer(vault, ahead=stale)  # type: ignore[arg-type]
    assert indexer.refresh().touched == 0
    assert stale.asked == ["digest", "seen", "cancel"]  # no mark yet: the digest was not enough
    assert indexer.refresh().touched == 1  # the next scan looks itself, and finds the note
    assert indexer.refresh().touched == 0  # finds all indexed, and leaves its mark
    indexer.close()
    assert stale.asked == ["digest", "seen", "cancel"]  # taken once, nothing more asked of it

    # Nothing changed since the last scan left its mark: the digest is all the scan takes.
    same = Taken(look_here(vault))
    indexer = Indexer(vault, ahead=same)  # type: ignore[arg-type]
    assert indexer.refresh().touched == 0
    assert same.asked == ["digest", "cancel"]  # the stats were never loaded
    indexer.close()

    write(vault_path, "memory/long-term/zebra.md", "# Zebra\n\nStripes and more stripes.\n")
    failed = Taken(None)
    indexer = Indexer(vault, ahead=failed)  # type: ignore[arg-type]
    assert indexer.refresh().touched == 1  # the child failed: looked here
    indexer.close()

    unused = Taken(None)
    Indexer(vault, ahead=unused).close()  # type: ignore[arg-type]
    assert unused.asked == ["cancel"]


def test_a_look_serves_the_first_refresh_only(vault_path: Path) -> None:
    """The look shows the files as of the process's start: a refresh that rebuilds looks again under
    the lock, and a later refresh must not take the old look (it would miss what changed since)."""
    vault = Vault(vault_path)
    write(vault_path, "memory/long-term/zebra.md", "# Zebra\n\nStripes.\n")
    early = Taken(look_here(vault))
    indexer = Indexer(vault, ahead=early)  # type: ignore[arg-type]
    assert indexer.refresh().rebuilt == ["full text"]  # nothing indexed yet: a rebuild
    assert early.asked == ["cancel"]
    write(vault_path, "memory/long-term/okapi.md", "# Okapi\n\nStripes on the legs.\n")
    assert indexer.refresh().touched == 1  # looked itself, and found the new note
    assert early.asked == ["cancel"]
    indexer.close()

    edited = Taken(look_here(vault))
    indexer = Indexer(vault, ahead=edited)  # type: ignore[arg-type]
    write(vault_path, "memory/long-term/okapi.md", "# Okapi\n\nStripes on the legs only.\n")
    assert indexer.update_paths(["memory/long-term/okapi.md"], vectors=False).touched == 1
    assert edited.asked == ["cancel"]  # an update came first: the look was stopped, not taken
    indexer.close()


def test_start_declines_in_a_process_with_threads() -> None:
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        assert not scan_ahead.can_fork()
        assert scan_ahead.start(lambda: scan_mark.Seen({}, {}, "")) is None
    finally:
        stop.set()
        worker.join()


def test_a_look_split_between_children_equals_the_look_here(vault_path: Path) -> None:
    for i in range(12):
        write(vault_path, f"memory/long-term/note-{i}.md", f"# Note {i}\n\nBody {i}.\n")
    (vault_path / "memory" / "long-term" / "map.png").write_bytes(b"\x89PNG\r\n")
    out = run_python(
        f"""
        import json
        from pathlib import Path
        from tiered_memory.index import scan_ahead, scan_mark
        from tiered_memory.storage.vault import Vault
        vault = Vault(Path({str(vault_path)!r}))
        text = scan_mark.folder_rules(vault.config.folders)
        here = scan_mark.look(vault.root, vault.folders, text)
        small = scan_ahead.begin(vault.root, vault.folders, text, rows=scan_ahead.SPLIT_ROWS - 1)
        large = scan_ahead.begin(vault.root, vault.folders, text, rows=scan_ahead.SPLIT_ROWS)
        counts = [len(small._children), len(large._children)]
        small.cancel()
        digest = large.digest()
        seen = large.seen()
        print(json.dumps([counts, digest == here.digest, seen == here, large.seen() is None]))
        """
    )
    assert out == [[1, 2], True, True, True]


def test_a_split_look_with_one_failed_child_is_a_none() -> None:
    out = run_python(
        """
        import json, os
        from pathlib import Path
        from tiered_memory.index import scan_ahead, scan_mark
        from tiered_memory.model.folders import FolderRules
        real = scan_mark.look
        def second_dies(root, rules, text, part=None):
            if part == 1:
                os._exit(3)
            return real(root, rules, text, part)
        scan_mark.look = second_dies
        ahead = scan_ahead.start_parts(Path(".").resolve(), FolderRules(), "rules")
        children = [c.pid for c in ahead._children]
        print(json.dumps([len(children), ahead.digest(), ahead.seen(), ahead._children]))
        """
    )
    assert out == [2, None, None, []]


def test_a_scan_of_a_large_vault_without_a_look_under_way_splits_its_own(vault_path: Path) -> None:
    """Scans in a process that may fork, on a vault past the split (lowered here): the parts are
    stat'ed in two children, and a note written since the last scan is found."""
    write(vault_path, "memory/long-term/zebra.md", "# Zebra\n\nStripes.\n")
    log = vault_path / "walks.log"
    code = logging_walks(log) + textwrap.dedent(f"""
        import json, os
        from pathlib import Path
        from tiered_memory.index import scan_ahead
        from tiered_memory.index.indexer import Indexer
        from tiered_memory.storage.vault import Vault
        log = {str(log)!r}
        scan_ahead.SPLIT_ROWS = 1
        vault = Vault(Path({str(vault_path)!r}))
        indexer = Indexer(vault)
        indexer.refresh()  # no mark yet: looked here
        indexer.refresh()  # leaves the mark
        open(log, "w").close()
        with open(vault.root / "memory/long-term/okapi.md", "w") as f:
            f.write("# Okapi\\n\\nStripes on the legs.\\n")
        touched = indexer.refresh().touched
        indexer.close()
        print(json.dumps([os.getpid(), touched, open(log).read().split("\\n")]))
        """)
    parent, touched, lines = run_python(code)
    assert touched == 1
    walks = [line.split() for line in lines if line]
    children = sorted(part for pid, part in walks if pid != str(parent))
    # The scan without the lock: both parts, each in a child. The scan under the lock, whose
    # findings are applied, walks once here (a rename between two listings would mislead it).
    assert children == ["0", "1"]
    assert len({pid for pid, _part in walks}) == 3
    assert [part for pid, part in walks if pid == str(parent)] == ["None"]


def test_a_child_dies_of_an_interrupt_and_holds_nothing_of_the_parent(tmp_path: Path) -> None:
    """In the child, Ctrl-C and SIGTERM have their default action (no KeyboardInterrupt running the
    parent's cleanup), and the parent's descriptors (an index lock, a sibling's pipe) are closed."""
    out = run_python(
        f"""
        import json, os, signal
        from tiered_memory.index import scan_ahead
        from tiered_memory.index.scan_mark import Seen
        lock = os.open({str(tmp_path / "index.lock")!r}, os.O_CREAT | os.O_RDWR)
        def report():
            default = signal.getsignal(signal.SIGINT) is signal.SIG_DFL
            try:
                os.fstat(lock)
                held = True
            except OSError:
                held = False
            return Seen({{}}, {{}}, f"{{int(default)}}{{int(held)}}".ljust(32, "0"))
        # Compared with the handler before, not Python's default one: a run started in the
        # background (`pytest &`) inherits Ctrl-C ignored, and Python keeps it ignored.
        before = signal.getsignal(signal.SIGINT)
        first, second = scan_ahead.start(report), scan_ahead.start(report)
        print(json.dumps([first.digest()[:2], second.digest()[:2], first.seen() is not None,
                          signal.getsignal(signal.SIGINT) is before]))
        second.cancel()
        """
    )
    assert out == ["10", "10", True, True]  # default action, lock closed; the parent's handler kept


def test_cancel_stops_every_child_of_a_split_look(tmp_path: Path) -> None:
    out = run_python(
        """
        import json, os, time
        from pathlib import Path
        from tiered_memory.index import scan_ahead, scan_mark
        from tiered_memory.model.folders import FolderRules
        scan_mark.look = lambda *args: time.sleep(60)
        ahead = scan_ahead.start_parts(Path(".").resolve(), FolderRules(), "rules")
        pids = [c.pid for c in ahead._children]
        started = time.monotonic()
        ahead.cancel()
        took = time.monotonic() - started
        gone = []
        for pid in pids:
            try:
                os.waitpid(pid, os.WNOHANG)
                gone.append(False)
            except ChildProcessError:
                gone.append(True)
        print(json.dumps([len(pids), took < 10, gone, ahead.digest()]))
        """
    )
    assert out == [2, True, [True, True], None]
