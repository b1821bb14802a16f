"""One note in two files after a merge, settled: the later action wins, nothing is lost.

A note archived (or promoted) on one machine and forgotten then restored on another comes back
twice: the move brought it to its new folder, the restore to its old one, and git, seeing two
paths, keeps both. Commands by id then refuse it. After each merge, every note id the merge
brought in or moved is looked for in the merged tree; where two files carry it, the one touched
last (by its last commit: a descendant is later, else the later commit date, else the one outside
the archive) stays. The other goes when its text (frontmatter aside) is the same, since the move
or the restore is then all that differs; otherwise both stay, the older one under a new id
(`<id>-archived` in the archive, else `<id>-2`, `-3`...), so no edit is lost. One line each.
"""

from __future__ import annotations

__all__ = ["settle_twins"]

import contextlib

from tiered_memory.errors import TmemError
from tiered_memory.model import layout
from tiered_memory.model import note as notes
from tiered_memory.model.frontmatter import edit_frontmatter
from tiered_memory.storage.git import Git
from tiered_memory.sync.workspace import Workspace

_MOST_IDS = 200  # ids looked for per merge: a merge that moved more is a reorganisation, not a race


def settle_twins(memory: Workspace, before: str, after: str) -> list[str]:
    """Settle notes the merge from `before` to `after` left in two files; a line for each."""
    git = memory.vault.git
    arrived = git.out(
        "diff", "--name-only", "--diff-filter=AR", "-M", "-z", before, after, "--", layout.MEMORY_DIR
    )
    ids = dict.fromkeys(
        i for p in arrived.split("\0") if notes.is_note_path(p) and (i := _id_at(git, after, p))
    )
    wanted = list(ids)[:_MOST_IDS]
    files: dict[str, list[str]] = {}
    for path in _files_naming(git, after, *wanted):  # one search of the tree for them all
        files.setdefault(_id_at(git, after, path), []).append(path)
    lines: list[str] = []
    for note_id in wanted:
        paths = files.get(note_id, [])
        if len(paths) != 2:
            continue
        kept, other = _later_first(git, after, *paths)
        with contextlib.suppress(TmemError), memory.change(f"sync: one note in two files ({note_id})") as tx:
            kept_text, other_text = tx.read_text(kept), tx.read_text(other)
            if notes.parse(kept_text, kept).body.strip() == notes.parse(other_text, other).body.strip():
                tx.remove(other, title=note_id)
                what = f"removed {other}, the same text"
            else:
                new_id = _free_id(git, after, note_id, other)
                tx.write_text(other, edit_frontmatter(other_text, {"id": new_id}))
                what = f"kept {other} too, now as {new_id} (its text differs)"
            tx.message = f"sync: {note_id} was in two files: kept {kept}, {what}"
            lines.append(f"{note_id}: in two files after the merge; kept {kept} (changed last), {what}")
    return lines


def _id_at(git: Git, rev: str, path: str) -> str:
    proc = git.run("show", f"{rev}:{path}", check=False)
    if proc.returncode != 0:
        return ""
    with contextlib.suppress(TmemError, ValueError):
        value = notes.parse(proc.stdout, path).meta.get("id")
        return value if isinstance(value, str) else ""
    return ""


def _files_naming(git: Git, rev: str, *note_ids: str) -> list[str]:
    """Note files at `rev` whose text has `id: <one of note_ids>` (quoted or not), to be parsed."""
    if not note_ids:
        return []
    patterns = [f"id: {q}{i}{q}" for i in note_ids for q in ("", "'", '"')]
    args = [arg for pattern in patterns for arg in ("-e", pattern)]
    proc = git.run("grep", "-l", "-z", "-F", *args, rev, "--", layout.MEMORY_DIR, check=False)
    prefix = f"{rev}:"
    found = (p.removeprefix(prefix) for p in proc.stdout.split("\0") if p)
    return [p for p in found if notes.is_note_path(p)]


def _later_first(git: Git, rev: str, first: str, second: str) -> tuple[str, str]:
    """The two files of one note, the one touched last first: the last commit of one descending
    from the other's is later; else the later commit date; else the one outside the archive (a
    tie keeps the note where it is found)."""
    a, b = _last_commit(git, rev, first), _last_commit(git, rev, second)
    if a[0] and b[0] and a[0] != b[0]:
        if git.is_ancestor(a[0], b[0]):
            return second, first
        if git.is_ancestor(b[0], a[0]):
            return first, second
    rank_a = (a[1], layout.tier_of_path(first) != "archive")
    rank_b = (b[1], layout.tier_of_path(second) != "archive")
    return (second, first) if rank_b > rank_a else (first, second)


def _last_commit(git: Git, rev: str, path: str) -> tuple[str, int]:
    last = git.run("log", "-1", "--format=%H %ct", rev, "--", path, check=False).stdout.split()
    return (last[0], int(last[1])) if len(last) == 2 and last[1].isdigit() else ("", 0)


def _free_id(git: Git, rev: str, note_id: str, path: str) -> str:
    if layout.tier_of_path(path) == "archive" and not _files_naming(git, rev, f"{note_id}-archived"):
        return f"{note_id}-archived"
    n = 2
    while _files_naming(git, rev, f"{note_id}-{n}"):
        n += 1
    return f"{note_id}-{n}"
