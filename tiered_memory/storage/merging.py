"""The record that this machine's sync is between `git merge` and its merge commit.

A sync merges under the write lock, and what git cannot merge by itself is settled file by file
before the commit. A kill -9 in that window leaves git's merge in progress (MERGE_HEAD, unmerged
index entries), and then every writer's commit fails ("cannot do a partial commit during a
merge") and every sync refuses to build on it. A merge a person started and left is theirs to
finish; one tmem started and was killed in is tmem's to undo. This record tells them apart: it
names the commit being merged, is written before `git merge` and removed once the merge is
committed or aborted. Whoever next holds the write lock finds it only if that sync died (it held
the lock for the whole merge), and aborts the merge when MERGE_HEAD is still the commit it names:
the tree and the index go back to HEAD, nothing is lost (the other machine's commits stay on the
remote and are merged again by the next sync).
"""

from __future__ import annotations

__all__ = ["abort_interrupted", "ended", "started"]

import contextlib
import os
from collections.abc import Callable

from tiered_memory.errors import GitError
from tiered_memory.storage.vault import Vault

RECORD = "merging"  # .tmem/merging: the commit this machine's sync is merging


def started(vault: Vault, theirs: str) -> None:
    """Record, before `git merge`, that a sync merges `theirs` (call holding the write lock)."""
    vault.state_dir.mkdir(parents=True, exist_ok=True)
    path = vault.state_dir / RECORD
    temp = path.with_name(f"{RECORD}.{os.getpid()}.tmp")
    temp.write_text(theirs + "\n", encoding="ascii")
    os.replace(temp, path)


def ended(vault: Vault) -> None:
    """The merge was committed or aborted (or never began): nothing left to undo."""
    (vault.state_dir / RECORD).unlink(missing_ok=True)


def abort_interrupted(vault: Vault, warn: Callable[[str], None]) -> list[str]:
    """Undo the merge a killed sync left in progress (call holding the write lock); the paths it
    put back as HEAD has them, for reindexing. A merge without tmem's record is left alone."""
    path = vault.state_dir / RECORD
    try:
        theirs = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return []
    git = vault.git
    if git.rev("MERGE_HEAD") != theirs:
        ended(vault)  # the merge was committed or aborted; only the record outlived it
        return []
    touched = git.out("diff", "--name-only", "--relative", "-z", "HEAD").split("\0")
    # The kill may have taken a git command of the merge with it, and its index.lock with it
    # would make the abort fail; one a live git holds is waited for (and then the abort reports it).
    with contextlib.suppress(GitError):
        git.clear_stale_index_lock(warn)
    aborted = git.run("merge", "--abort", check=False)
    if aborted.returncode != 0:
        why = (aborted.stderr.strip().splitlines() or ["git merge --abort failed"])[-1]
        warn(
            f"a sync was killed while merging {theirs[:8]} and git cannot undo that merge ({why}): "
            "finish it (`git commit`) or abort it (`git merge --abort`)"
        )
        return []
    ended(vault)
    warn(f"a sync killed while merging {theirs[:8]} was undone; the next `tmem sync` merges again")
    return [p for p in touched if p]
