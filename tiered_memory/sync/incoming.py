"""What another machine's commits may change here: notes and shared files, never this machine's own.

git overwrites ignored files when it checks a commit out, so a commit anyone with access to the
remote pushes could plant or replace tmem's private state (`.tmem/`: journal, catalog, indexes,
locks, the checked config) on every machine that pulls it. Before a merge touches the working
tree, `refuse_private` lists the paths the incoming side changed (against every merge base, with
renames and copies split into their two names) whose version there differs from ours, and refuses
the whole merge when one of them is private (`model.local_state`), is a gitlink (a submodule: a
vault has none, and git may fetch its URL), or is a symbolic link that points outside the vault,
into private state or at the vault's root, or whose target passes through another link (where it
leads then is not what its text says). Nothing is merged or checked out then; the remote-tracking
ref alone moved.
"""

from __future__ import annotations

__all__ = [
    "ABSENT_MODE",
    "GITLINK",
    "RawChange",
    "SYMLINK",
    "first_offender",
    "raw_diff",
    "refuse_private",
    "shown",
    "tracked_private",
]

import posixpath
from dataclasses import dataclass

from tiered_memory.errors import GitError, SyncConflict
from tiered_memory.model.local_state import link_escapes, private_reason
from tiered_memory.storage.git import Git

GITLINK = "160000"
SYMLINK = "120000"
ABSENT_MODE = "000000"


@dataclass(frozen=True)
class RawChange:
    old_mode: str
    new_mode: str
    new_sha: str
    status: str
    path: str


def refuse_private(git: Git, theirs: str, label: str) -> None:
    """Raise SyncConflict (one line: the first offending path, the remote commit that brought it)
    when merging `theirs` into HEAD would write a path only this machine may write."""
    found = first_offender(git, theirs)
    if found is None:
        return
    change, why = found
    verb = (
        "removes"
        if change.new_mode == ABSENT_MODE
        else "adds"
        if change.old_mode == ABSENT_MODE
        else "changes"
    )
    raise SyncConflict(
        f"refused to merge {label}: commit {_culprit(git, theirs, change.path)} {verb} "
        f"{shown(change.path)} ({why}); nothing was merged, "
        "take it out on the remote and sync again"
    )


def first_offender(git: Git, theirs: str) -> tuple[RawChange, str] | None:
    """The first path (in git's order) the merge of `theirs` would write that must not come from
    another machine, with why; None when every incoming path is data."""
    bases = git.run("merge-base", "--all", "HEAD", theirs, check=False).stdout.split()
    if not bases:  # unrelated histories: everything of theirs is incoming
        bases = [_empty_tree(git)]
    changed_there: set[str] = set()
    for base in bases:
        changed_there.update(c.path for c in raw_diff(git, base, theirs))
    links: set[str] | None = None  # every link of either side, listed once a link comes in
    for change in raw_diff(git, "HEAD", theirs):
        if change.path not in changed_there:
            continue  # theirs has what we have: the merge leaves it as it is
        if change.new_mode == SYMLINK and links is None:
            links = _links(git, "HEAD") | _links(git, theirs)
        why = _why(git, change, links or set())
        if why is not None:
            return change, why
    return None


def _links(git: Git, commit: str) -> set[str]:
    """The paths of the symbolic links a commit holds."""
    out = git.run("ls-tree", "-r", "-z", commit, "--", check=False).stdout
    return {entry.split("\t", 1)[1] for entry in out.split("\0") if entry.startswith(SYMLINK + " ")}


def _through_link(path: str, target: str, links: set[str]) -> str | None:
    """Why a link at `path` whose target passes through another link (or itself) cannot be judged
    by its text, else None: `memory/up -> ..` makes `memory/esc -> up/../x` point outside the
    vault although its target reads as `memory/x`."""
    walked: list[str] = []
    for part in posixpath.join(posixpath.dirname(path), target).split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if walked:
                walked.pop()
            continue
        walked.append(part)
        if "/".join(walked) in links:
            return f"a symbolic link through another link ({shown('/'.join(walked))})"
    return None


def _empty_tree(git: Git) -> str:
    return git.run("hash-object", "-t", "tree", "--stdin", input="").stdout.strip()


def _why(git: Git, change: RawChange, links: set[str]) -> str | None:
    private = private_reason(change.path)
    if private is not None:
        return f"{private}, which only this machine may write"
    if change.new_mode == GITLINK:
        return "a gitlink: a vault has no submodules"
    if change.new_mode == SYMLINK:
        try:
            target = git.blob(change.new_sha).decode("utf-8", errors="surrogateescape")
        except GitError:
            return "a symbolic link that cannot be read"
        return link_escapes(change.path, target) or _through_link(change.path, target, links)
    return None


def raw_diff(git: Git, old: str, new: str) -> list[RawChange]:
    """Every path that differs between two commits (or trees): modes, new blob, status. Renames
    and copies come as a removal and an addition, so both names are seen; submodules are never
    hidden, whatever the user's diff settings say."""
    out = git.out("diff-tree", "-r", "-z", "--no-renames", "--ignore-submodules=none", old, new, "--")
    parts = out.split("\0")
    changes: list[RawChange] = []
    for meta, path in zip(parts[0::2], parts[1::2], strict=False):
        fields = meta.lstrip(":").split()
        if len(fields) < 5:
            continue
        changes.append(RawChange(fields[0], fields[1], fields[3], fields[4], path))
    return changes


def tracked_private(git: Git) -> list[str]:
    """Files git tracks that only this machine may write (a repository that carries another
    machine's `.tmem/`): sync neither merges nor commits them, and `recover` trusts no journal then."""
    return [p for p in git.out("ls-files", "-z").split("\0") if p and private_reason(p) is not None]


def _culprit(git: Git, theirs: str, path: str) -> str:
    """The newest incoming commit that touched `path` (short sha), else the remote tip."""
    proc = git.run("log", "-1", "--format=%h", theirs, "--not", "HEAD", "--", path, check=False)
    return proc.stdout.strip() or theirs[:12]


def shown(path: str) -> str:
    """A path on one line: control characters and bytes that are not UTF-8 escaped."""
    out = []
    for ch in path:
        code = ord(ch)
        if code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
            out.append(f"\\x{code - 0xDC00:02x}")
        else:
            out.append(ch)
    return "".join(out)
