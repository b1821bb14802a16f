"""Two machines appended to one note: both additions kept in the order they were written.

The commonest edit two machines make at once is an agent on each adding lines to the end of one
running note. Where that is all that happened (each side's body is the base's body with text added
at its end, and the frontmatter merges by the usual rules without a choice), the merged note is the
base's text, then the addition made first, then the other: what one machine appending after the
other would have written, with no markers. "First" is the earlier author date of the commits that
made each addition (the side's earliest commit since the merge base that changed the note), ties
broken by the smaller commit name, so every machine that makes this merge orders it the same way,
whichever side it runs on. Anything else two sides did to a note (an edit in the middle, a body
replaced, an encrypted note, a frontmatter both changed with no later side) keeps the usual merge.

The merge (`git merge-tree`, with the merge driver) has already written a tree; the notes settled
here have their blob in it replaced before the tree is checked out, through an index file of our
own, so the work tree and the real index are never touched twice.
"""

from __future__ import annotations

__all__ = ["Append", "appended_both", "merge_appends", "with_appends"]

import contextlib
from dataclasses import dataclass

from tiered_memory.errors import TmemError
from tiered_memory.model import layout, sealed_merge
from tiered_memory.model import note as notes
from tiered_memory.model.merge3 import merge_note
from tiered_memory.storage.git import Git

_EOLS = ("\r\n", "\n")
_MOST_NOTES = 200  # notes looked at per merge: a merge that changed more on both sides is no race
# The modes of a file git checks out as a plain file (a link or a submodule is never merged here).
_FILE_MODES = ("100644", "100755")


@dataclass(frozen=True)
class Append:
    """One note settled here: its path, the blob of the merged text, and whether both sides only
    appended to it (else both moved it to one path and the merge with its base needs no choice)."""

    path: str
    blob: str
    appended: bool = True


def merge_appends(base: str, ours: str, theirs: str, path: str, ours_first: bool) -> str | None:
    """The note with both sides' additions after the base's body, the first side's first; None
    unless each side only added text at the end of the body (at a line's end) and the frontmatter
    merges without a choice, or when the two additions share a line (text both got elsewhere)."""
    parsed = [notes.parse(text, path) for text in (base, ours, theirs)]
    if any(n.parse_warning or n.is_json for n in parsed):
        return None
    body = parsed[0].body
    added = []
    for note in parsed[1:]:
        if not note.body.startswith(body) or len(note.body) == len(body):
            return None
        addition = note.body[len(body) :]
        if body and not body.endswith("\n") and not addition.startswith(_EOLS):
            return None  # text added to the base's last line: an edit of that line
        added.append(addition)
    if _shared_line(*added):
        return None  # both got lines from a third machine: the usual merge keeps them once
    # The frontmatter as the usual rules merge it, the body left as the base's.
    heads = [
        text[: len(text) - len(note.body)] for text, note in zip((ours, theirs), parsed[1:], strict=True)
    ]
    fronts = merge_note(base, heads[0] + body, heads[1] + body, path)
    if fronts.conflict or not fronts.text.endswith(body):
        return None
    first, second = added if ours_first else added[::-1]
    if body and not body.endswith("\n") and first.endswith(_EOLS):
        # Both ended the base's last line; the first addition already has, so that line ending is
        # said once (then the text reads as one machine appending after the other).
        second = second[len("\r\n") :] if second.startswith("\r\n") else second[1:]
    elif not first.endswith(_EOLS) and not second.startswith(_EOLS):
        second = _eol(base, first, second) + second  # the first side left its last line open
    return fronts.text[: len(fronts.text) - len(body)] + body + first + second


def _shared_line(first: str, second: str) -> bool:
    lines = {line.strip() for line in first.splitlines() if line.strip()}
    return any(line.strip() in lines for line in second.splitlines() if line.strip())


def _eol(*texts: str) -> str:
    for text in texts:
        if "\n" in text:
            return "\r\n" if "\r\n" in text else "\n"
    return "\n"


def appended_both(git: Git, ours: str, theirs: str) -> list[Append]:
    """The notes both `ours` and `theirs` only appended to since their merge base, merged in order
    (their blobs written to the object store): changed in place on both sides, or moved on both to
    one new path (same `id`), which git, its rename missed (a short note whose frontmatter the move
    grew), takes for a note added twice. None when the two have no single merge base."""
    bases = git.run("merge-base", "--all", ours, theirs, check=False).stdout.split()
    if len(bases) != 1:
        return []
    base = bases[0]
    mine, other = _changes(git, base, ours), _changes(git, base, theirs)
    both = sorted(p for p in mine.keys() & other.keys() if _mergeable(p) and mine[p][0] == other[p][0])
    gone = {p: mine[p][1] for p in both if mine[p][0] == "D"}
    found: list[Append] = []
    for path in both[:_MOST_NOTES]:
        status, was, now = mine[path]
        theirs_blob = other[path][2]
        if status == "D" or now == theirs_blob:
            continue
        versions = _versions(git, was, now, theirs_blob)
        old_path = path
        if versions is not None and status == "A":
            moved = _moved_from(git, gone, versions[1], path)
            versions = None if moved is None else (moved[1], versions[1], versions[2])
            old_path = "" if moved is None else moved[0]
        if versions is None:
            continue
        b, o, t = versions
        paths = (path, old_path)
        appended = True
        try:
            merged = merge_appends(b, o, t, path, _wrote_first(git, base, ours, theirs, paths))
            if merged is None and status == "A":
                # Not two appends, but with its base found the usual merge may need no choice,
                # where git's, with none, kept both versions of the whole note.
                result = merge_note(b, o, t, path)
                merged, appended = (None if result.conflict else result.text), False
        except (TmemError, ValueError):
            continue
        if merged is not None:
            blob = git.run("hash-object", "-w", "--stdin", input=merged).stdout.strip()
            found.append(Append(path, blob, appended))
    return found


def _versions(git: Git, *shas: str) -> tuple[str, str, str] | None:
    """The texts of three blobs (the first may be absent: a note added); None when one is
    missing, encrypted, or not UTF-8."""
    wanted = [sha for sha in shas if sha]
    blobs = git.blobs(wanted)
    data = [blobs.get(sha, b"") if sha else b"" for sha in shas]
    if any(sha and sha not in blobs for sha in shas) or sealed_merge.any_sealed(*data):
        return None
    try:
        b, o, t = (d.decode("utf-8") for d in data)
    except UnicodeDecodeError:
        return None
    return b, o, t


def _moved_from(git: Git, gone: dict[str, str], text: str, path: str) -> tuple[str, str] | None:
    """(old path, base text) of the note with `text`'s id that both sides removed, if one."""
    try:
        note_id = notes.parse(text, path).meta.get("id")
    except (TmemError, ValueError):
        return None
    if not isinstance(note_id, str) or not note_id:
        return None
    for old, sha in gone.items():
        found = _versions(git, sha, sha, sha)
        if found is None:
            continue
        with contextlib.suppress(TmemError, ValueError):
            if notes.parse(found[0], old).meta.get("id") == note_id:
                return old, found[0]
    return None


def _mergeable(path: str) -> bool:
    return notes.is_note_path(path) and path.endswith(".md") and path != layout.PROFILE


def _changes(git: Git, base: str, side: str) -> dict[str, tuple[str, str, str]]:
    """path -> (status M, A or D, base blob, side blob) of the plain files `side` changed since
    `base` (no renames: a move is a removal and an addition); a blob absent is ''."""
    out = git.out("diff-tree", "-r", "-z", "--no-renames", base, side, "--")
    parts = out.split("\0")
    found: dict[str, tuple[str, str, str]] = {}
    for meta, path in zip(parts[0::2], parts[1::2], strict=False):
        fields = meta.lstrip(":").split()
        if len(fields) != 5 or fields[4] not in ("M", "A", "D"):
            continue
        status = fields[4]
        modes = [m for m in fields[:2] if m != "000000"]
        if not modes or any(m not in _FILE_MODES for m in modes):
            continue
        was = fields[2] if status != "A" else ""
        now = fields[3] if status != "D" else ""
        found[path] = (status, was, now)
    return found


def _wrote_first(git: Git, base: str, ours: str, theirs: str, paths: tuple[str, str]) -> bool:
    """Whether our addition to the note (at `paths`: now, and before a move) was made first: by
    the author date of each side's earliest commit since `base` that changed it, then by that
    commit's name (the same answer on every machine, whichever side it is on)."""
    return _first_change(git, base, ours, paths) <= _first_change(git, base, theirs, paths)


def _first_change(git: Git, base: str, side: str, paths: tuple[str, str]) -> tuple[int, str]:
    named = list(dict.fromkeys(p for p in paths if p))
    out = git.out("log", "--no-merges", "--format=%at %H", f"{base}..{side}", "--", *named)
    found = []
    for line in out.splitlines():
        stamp, _, sha = line.partition(" ")
        with contextlib.suppress(ValueError):
            found.append((int(stamp), sha))
    if found:
        return min(found)
    stamp, _, sha = git.out("log", "-1", "--format=%at %H", side).strip().partition(" ")
    return (int(stamp) if stamp.isdigit() else 0, sha)


def with_appends(git: Git, tree: str, appends: list[Append], scratch: str) -> str:
    """`tree` with each note's blob replaced by its merged one, built in the index file `scratch`
    (the caller's to remove), so that the real index and the work tree are not touched."""
    env = {"GIT_INDEX_FILE": scratch}
    git.run("read-tree", tree, env=env)
    lines = [f"{_mode(git, tree, a.path)} {a.blob}\t{a.path}" for a in appends]
    git.run("update-index", "--index-info", input="\n".join(lines) + "\n", env=env)
    return git.run("write-tree", env=env).stdout.strip()


def _mode(git: Git, tree: str, path: str) -> str:
    mode = git.mode(tree, path)
    return mode if mode in _FILE_MODES else "100644"
