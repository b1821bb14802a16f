"""What the conflict markers of a merge call its two versions (`model.merge3.Sides`).

The merged note is committed and pushed, so a label is read on every machine, long after: it must
name its version for good. Ours is the version of the machine that ran the merge, named by its host
name; theirs is the version that machine merged in. Each also names the commit that last changed
the file on its side, with that commit's date in its author's own time zone, so the labels read
the same on every clone:

    <<<<<<< laptop's version (a1b2c3d, 2026-11-27 10:02 +0100)
    >>>>>>> version laptop merged in (e4f5g6h, 2026-11-27 09:58 +0100)

Only the merge driver's lookups live here (light: no vault, no GitPython), since git starts the
driver once per conflicted file.
"""

from __future__ import annotations

__all__ = ["driver_sides", "machine_name", "sides"]

import os
import re
import socket
from collections.abc import Mapping
from pathlib import Path

from tiered_memory.errors import TmemError
from tiered_memory.model.merge3 import UNLABELLED, Sides
from tiered_memory.storage.git import Git

# `git merge` tells the processes it starts (merge drivers, hooks) the commit it merges in by an
# environment variable named after it. A rebase or a cherry-pick sets none: there "ours" is not
# the running machine's own work, and the markers stay bare.
_MERGED_IN = re.compile(r"GITHEAD_([0-9a-f]{40}|[0-9a-f]{64})")
_DATE = ("--format=%h, %ad", "--date=format:%Y-%m-%d %H:%M %z")


def machine_name() -> str:
    """This machine's host name, without its domain, on one line."""
    name = "".join(ch for ch in socket.gethostname().split(".")[0] if ch.isprintable()).strip()
    return name or "an unnamed machine"


def sides(git: Git, path: str, theirs: str, ours: str = "HEAD", machine: str | None = None) -> Sides:
    """The labels of a merge of `theirs` into `ours` run on this machine (or `machine`)."""
    host = machine or machine_name()
    return Sides(
        f"{host}'s version{_commit(git, ours, path)}",
        f"version {host} merged in{_commit(git, theirs, path)}",
    )


def driver_sides(root: Path, path: str, environ: Mapping[str, str] = os.environ) -> Sides:
    """The labels for the merge driver git started in `root`: unnamed unless `git merge` runs it
    with exactly one commit to merge in, as every pull and every `tmem sync` does."""
    merged_in = [m.group(1) for name in environ if (m := _MERGED_IN.fullmatch(name))]
    git = Git(root)
    if len(merged_in) > 1:
        # A process started under an earlier merge (its hook) inherits that merge's variable: its
        # commit is in HEAD already, unlike the one being merged now.
        merged_in = [sha for sha in merged_in if not _in_head(git, sha)]
    if len(merged_in) != 1:
        return UNLABELLED
    return sides(git, path, merged_in[0])


def _in_head(git: Git, sha: str) -> bool:
    try:
        return git.run("merge-base", "--is-ancestor", sha, "HEAD", check=False).returncode == 0
    except TmemError:
        return False


def _commit(git: Git, rev: str, path: str) -> str:
    """` (sha, date)` of the last commit that changed `path` in `rev` (of `rev` itself when none
    did under that name, e.g. a side that moved the note); empty when git cannot tell."""
    try:
        found = git.run("log", "-1", *_DATE, rev, "--", path, check=False).stdout.strip()
        if not found:
            found = git.run("log", "-1", *_DATE, rev, check=False).stdout.strip()
    except TmemError:
        return ""
    return f" ({found})" if found else ""
