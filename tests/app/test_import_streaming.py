"""`tmem import` of a tmem export, and `tmem export` to stdout, hold one entry at a time: memory
stays flat whatever the export's size (762 MB for a 92 MB export, when the file, every entry and
every item were held at once). A kill -9 in the middle of an import leaves the vault as it was,
and running the import again does the whole of it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers import FAKE_CONFIG, as_json, git, git_log, ok

from tiered_memory.cli.main import cli
from tiered_memory.storage.vault import init_vault

ROOT = Path(__file__).resolve().parents[2]
FOLDER = "Proyectos/costa"


def tmem(root: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--vault", str(root), *args], catch_exceptions=False)


def _source(tmp_path: Path, count: int, note_kb: int) -> tuple[Path, dict[str, bytes]]:
    """A vault of `count` notes of a person's of about `note_kb` KB each, committed."""
    root = tmp_path / "source"
    init_vault(root, config_text=FAKE_CONFIG)
    written: dict[str, bytes] = {}
    words = "datum survey coast ellipsoid tide gauge benchmark grid revisión túnel cota nivel ".split()
    for i in range(count):
        body = " ".join(words[(i + k) % len(words)] for k in range(note_kb * 1024 // 7))
        data = f"---\nid: nota-{i}\ntags: [costa]\n---\n# Nota {i}\n\n{body}\n".encode()
        rel = f"{FOLDER}/nota {i}.md"
        (root / FOLDER).mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
        written[rel] = data
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "my notes")
    return root, written


def _tmem_process(*args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMEM_AUTOSTART": "0"}
    return subprocess.Popen(
        [sys.executable, "-m", "tiered_memory", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )


def _peak_mb(*args: str) -> float:
    """The peak resident memory of one `tmem` process (this child's own, not all children's)."""
    child = _tmem_process(*args)
    _pid, status, usage = os.wait4(child.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, child.stderr.read() if child.stderr else ""
    return usage.ru_maxrss / 1024  # KB on Linux


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KB, as Linux gives it")
def test_import_and_export_to_stdout_hold_one_entry_at_a_time(tmp_path: Path) -> None:
    """A 24 MB export: importing it, or exporting it to stdout, takes little more memory than a
    `tmem status` of the same vault (it took 8 times the export's size)."""
    source, written = _source(tmp_path, 48, 500)
    export = tmp_path / "export.jsonl"
    ok(tmem(source, "export", "-o", str(export)))
    size_mb = export.stat().st_size / 1048576
    assert size_mb > 20
    target = tmp_path / "target"
    init_vault(target, config_text=FAKE_CONFIG)
    baseline = _peak_mb("--vault", str(target), "status")
    imported = _peak_mb("--vault", str(target), "import", str(export))
    assert imported < baseline + size_mb, (baseline, imported, size_mb)
    assert all((target / rel).read_bytes() == data for rel, data in written.items())
    exported = _peak_mb("--vault", str(source), "export")
    assert exported < baseline + size_mb, (baseline, exported, size_mb)


@pytest.mark.slow
def test_a_kill_in_the_middle_of_an_import_leaves_the_vault_valid_and_a_rerun_finishes_it(
    tmp_path: Path,
) -> None:
    source, written = _source(tmp_path, 400, 8)
    export = tmp_path / "export.json"
    ok(tmem(source, "export", "-o", str(export)))
    target = tmp_path / "target"
    init_vault(target, config_text=FAKE_CONFIG)
    before = git_log(target)

    child = _tmem_process("--vault", str(target), "import", str(export))
    folder = target / FOLDER
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and child.poll() is None:
        if folder.is_dir() and len(os.listdir(folder)) > 20:  # notes are being filed
            break
        time.sleep(0.005)
    assert child.poll() is None, "the import ended before it could be killed in the middle"
    child.send_signal(signal.SIGKILL)
    child.wait()
    filed = len(os.listdir(folder))
    assert 0 < filed < len(written), filed  # killed with some notes on disk, not all
    assert git_log(target) == before  # nothing committed

    # The vault is readable as it is, and the next unit of work (the import run again) first
    # undoes what the killed one left, then files every note, in one commit.
    ok(tmem(target, "status"))
    done = as_json(tmem(target, "import", str(export), "--json"))
    assert any("an interrupted 'import: tmem' was undone" in line for line in done["warnings"])
    assert done["added"] == len(written) and done["commit"]
    assert git(target, "status", "--porcelain") == ""
    assert len(git_log(target)) == len(before) + 1
    assert all((target / rel).read_bytes() == data for rel, data in written.items())
