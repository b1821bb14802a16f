"""A tmem.yaml replaced under a long-lived process (the daemon reads it again when it changes): a
link, a pipe, a file of gigabytes, a YAML alias bomb, half an edit. Each is one clear line, read
without waiting and without reading more than a settings file may hold; the settings in use stay."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import FAKE_CONFIG

from tiered_memory.storage.vault import Vault, init_vault

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
    for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)


def _link_to_zero(path: Path, tmp: Path) -> None:
    os.symlink("/dev/zero", path)


def _link_outside(path: Path, tmp: Path) -> None:
    (tmp / "elsewhere.yaml").write_text(FAKE_CONFIG + "search:\n  limit: 2\n", encoding="utf-8")
    os.symlink(tmp / "elsewhere.yaml", path)


def _fifo(path: Path, tmp: Path) -> None:
    os.mkfifo(path)


def _huge(path: Path, tmp: Path) -> None:
    with open(path, "wb") as handle:  # sparse: 2 GB that take no disk
        handle.truncate(2 * 1024**3)


def _bomb(path: Path, tmp: Path) -> None:
    path.write_text(FAKE_CONFIG + BOMB, encoding="utf-8")


def _half_an_edit(path: Path, tmp: Path) -> None:
    path.write_text(FAKE_CONFIG + "search:\n  limit: [2\n", encoding="utf-8")


HOSTILE: dict[str, Callable[[Path, Path], None]] = {
    "link to /dev/zero": _link_to_zero,
    "link out of the vault": _link_outside,
    "fifo": _fifo,
    "2 GB": _huge,
    "alias bomb": _bomb,
    "half an edit": _half_an_edit,
}


# Run in a child with a bound on its memory and time: read in this process, a link to /dev/zero
# would take every byte of the machine's memory, and a pipe would hold the test forever.
_CHILD = """
import resource, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from tiered_memory.config import load_config
from tiered_memory.errors import ConfigError
from tiered_memory.storage.vault import Vault
root = Path(sys.argv[1])
if sys.argv[2] == "load":
    try:
        load_config(root)
    except ConfigError as exc:
        print("error:", exc)
else:
    vault = Vault(root)
    print("before:", vault.config.search.limit, flush=True)
    (root / "tmem.yaml").unlink()
    Path(sys.argv[3]).rename(root / "tmem.yaml")
    vault.config_changed()
    print("after:", vault.config.search.limit)
"""


def _child(*args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *args],
        capture_output=True,
        text=True,
        timeout=20,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    return done.stdout.splitlines()


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_a_hostile_tmem_yaml_is_one_line_quickly(tmp_path: Path, kind: str) -> None:
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG)
    path = root / "tmem.yaml"
    path.unlink()
    HOSTILE[kind](path, tmp_path)
    started = time.monotonic()
    [line] = _child(str(root), "load")
    assert line.startswith("error: tmem.yaml"), line
    assert time.monotonic() - started < 10.0


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_a_long_lived_process_keeps_its_settings_when_tmem_yaml_turns_hostile(
    tmp_path: Path, kind: str
) -> None:
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG + "search:\n  limit: 7\n")
    staged = tmp_path / "staged.yaml"  # made beside the vault, then renamed over tmem.yaml
    HOSTILE[kind](staged, tmp_path)
    assert _child(str(root), "keep", str(staged)) == ["before: 7", "after: 7"]
    vault = Vault(root)
    (root / "tmem.yaml").unlink()
    (root / "tmem.yaml").write_text(FAKE_CONFIG + "search:\n  limit: 3\n", encoding="utf-8")
    assert vault.config.search.limit == 3  # a file that loads again is taken
