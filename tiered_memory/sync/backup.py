"""`tmem backup`: the vault's whole git history as one dated bundle file, the newest N kept.

A bundle is git's own single-file repository format: `git clone` reads it, so a backup needs no
tmem to be restored, and it holds every commit (forgotten notes and old versions too). Only our
own dated bundles of this vault are ever rotated away.
"""

from __future__ import annotations

__all__ = ["backup", "backup_dir", "list_backups", "restore_backup", "uncommitted"]

import os
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

from tiered_memory.errors import BadInput, GitError, VaultError
from tiered_memory.model import note as notes
from tiered_memory.storage.git import Git, last_line
from tiered_memory.storage.locate import looks_like_vault
from tiered_memory.storage.vault import Vault
from tiered_memory.sync.gitmerge import ensure_merge_driver

_STAMP = "%Y-%m-%d-%H%M%S"
_STAMP_RE = r"\d{4}-\d{2}-\d{2}-\d{6}(?:-\d+)?"


def backup_dir(vault: Vault) -> Path:
    """backup.directory: absolute, or relative to the vault (default .tmem-backups, gitignored)."""
    folder = Path(vault.config.backup.directory).expanduser()
    return folder if folder.is_absolute() else vault.root / folder


def _prefix(vault: Vault) -> str:
    return f"tmem-{notes.settled_slug(vault.root.name, 40)}-"


def list_backups(folder: Path, vault: Vault) -> list[Path]:
    """This vault's bundles in `folder`, oldest first (names sort by their UTC time stamp)."""
    pattern = re.compile(re.escape(_prefix(vault)) + _STAMP_RE + r"\.bundle$")
    try:
        names = [entry.name for entry in os.scandir(folder) if pattern.match(entry.name)]
    except FileNotFoundError:
        return []
    return [folder / name for name in sorted(names, key=_age_key)]


def _age_key(name: str) -> tuple[str, int]:
    """`…-063211.bundle` before `…-063211-2.bundle`: a plain sort puts '-' before '.'."""
    stem = name.removesuffix(".bundle")
    head, _, tail = stem.rpartition("-")
    if len(tail) < 6 and tail.isdigit():
        return head, int(tail)
    return stem, 1


def backup(
    vault: Vault, dest: Path | None = None, keep: int | None = None, now: datetime | None = None
) -> Path:
    """Write `tmem-<vault>-<UTC time>.bundle` with every ref, then keep only the newest `keep`."""
    keep = vault.config.backup.keep if keep is None else keep
    if keep < 1:
        raise BadInput(f"keep must be at least 1 (got {keep})")
    folder = (dest.expanduser() if dest else backup_dir(vault)).resolve()
    if folder.exists() and not folder.is_dir():
        raise BadInput(f"{folder} is not a folder")
    folder.mkdir(parents=True, exist_ok=True)
    when = (now or datetime.now(UTC)).astimezone(UTC)
    stem = f"{_prefix(vault)}{when:{_STAMP}}"
    target = folder / f"{stem}.bundle"
    counter = 2
    while target.exists():  # two backups in one second never overwrite each other
        target = folder / f"{stem}-{counter}.bundle"
        counter += 1
    git = vault.git
    git.head()  # a repository without commits has nothing to back up: say so clearly
    tmp = folder / f".{target.name}.tmp"
    proc = git.run("bundle", "create", "--quiet", str(tmp), "--all", check=False)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise GitError(f"git bundle failed: {last_line(proc)}")
    os.replace(tmp, target)
    for old in list_backups(folder, vault)[:-keep]:
        old.unlink(missing_ok=True)
    return target


def uncommitted(vault: Vault) -> int:
    """Changes a bundle cannot hold because they are not committed yet."""
    out = vault.git.run("status", "--porcelain", "--untracked-files=all", check=False).stdout
    return sum(1 for line in out.splitlines() if line.strip())


def restore_backup(bundle: Path, target: Path) -> Path:
    """Clone `bundle` into a new working vault at `target` and register the merge driver there."""
    bundle = bundle.expanduser().resolve()
    target = target.expanduser().resolve()
    if not bundle.is_file():
        raise BadInput(f"{bundle}: no such bundle file")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise VaultError(f"{target} exists and is not empty; choose a new folder")
    outside = Git(bundle.parent)  # no repository yet: git runs beside the bundle, on absolute paths
    check = outside.run("bundle", "list-heads", str(bundle), check=False)
    if check.returncode != 0 or not check.stdout.strip():
        raise BadInput(f"{bundle} is not a git bundle (`tmem backup` writes *.bundle files)")
    created = not target.exists()
    clone = outside.run("clone", "--quiet", str(bundle), str(target), check=False)
    if clone.returncode != 0:
        raise GitError(f"git clone failed: {last_line(clone)}")
    if not looks_like_vault(target):
        if created:
            shutil.rmtree(target)
        else:
            _empty(target)
        raise VaultError(f"{bundle} does not hold a tmem vault (no tmem.yaml or memory/long-term/)")
    vault = Vault(target)
    git = vault.git
    # The bundle file is no place to sync to: keep it as `backup`, untracked, and let the person
    # add the real remote (`git remote add origin URL`).
    git.run("remote", "rename", "origin", "backup", check=False)
    git.run("branch", "--unset-upstream", check=False)
    ensure_merge_driver(vault)
    return target


def _empty(folder: Path) -> None:
    for child in folder.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
