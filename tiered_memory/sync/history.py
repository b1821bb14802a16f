"""`tmem log` and `tmem restore`: a note's history across moves between tiers, read from git.

A note keeps its `id` in frontmatter when it moves (promote, archive) or is forgotten, so its
history is found by id: `git log -G '^id: <id>$'` finds the commits that created, moved or deleted
it (the id line is added or removed there), `git log --follow` adds renames of notes without an id,
and one `git log -M` over every path the note ever had lists all its edits. Restoring writes the
old text as a NEW commit: history is never rewritten.
"""

from __future__ import annotations

__all__ = ["Event", "NoteHistory", "Restored", "note_history", "restore", "vault_log"]

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tiered_memory.errors import BadInput, GitError, Locked, NoteNotFound, TmemError, VaultError
from tiered_memory.model import authors, envelope, file_names, layout, note_ids
from tiered_memory.model import note as notes
from tiered_memory.storage import crypto, sealing
from tiered_memory.storage.git import Git, name_status_entries
from tiered_memory.storage.vault import Vault
from tiered_memory.sync.workspace import Workspace

_FORMAT = f"%x01%H%x00%cI%x00{authors.LOG_FORMAT}%x00%s"
_CHANGES = {"A": "added", "D": "deleted", "M": "changed", "R": "moved", "C": "added", "T": "changed"}
_SEALED_NAME = re.compile(r"n-[0-9a-f]{12}\.md")  # an encrypted note's name (transaction.neutral_name)


@dataclass
class Event:
    commit: str
    date: str
    author: str  # the machine or person (the commit's author name)
    subject: str
    changes: list[dict[str, str]] = field(default_factory=list)  # {"change", "path", "old_path"?}
    email: str = ""
    agent: str = ""  # the agent whose call made the change (the `Agent:` trailer), "" for none

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class NoteHistory:
    id: str
    path: str | None  # where the note is now; None when it was forgotten
    paths: list[str]  # every path it had
    events: list[Event]  # newest first

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": self.path,
            "paths": self.paths,
            "events": [e.to_dict() for e in self.events],
        }


@dataclass
class Restored:
    id: str
    path: str
    commit: str | None
    source: str  # the commit whose text was brought back
    was_forgotten: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---- reading git log ----------------------------------------------------------------------------


def _log(git: Git, *args: str) -> list[Event]:
    # Never git's textconv (`tmem textconv`, set up with encryption): `-G` would start a tmem per
    # version of every note, each asking the daemon, which may be the one running this log; and a
    # version sealed under an earlier key makes it fail, so git would stop. Sealed notes are
    # opened by tmem itself below.
    out = git.run("log", "-z", f"--format={_FORMAT}", "--name-status", "--no-textconv", *args, check=False)
    if out.returncode != 0:
        return []  # an empty repository, or a path git never saw
    events = []
    for record in out.stdout.split("\x01"):
        if not record:
            continue
        fields = record.split("\0")
        sha, date, author, email, agent, subject = fields[:6]
        rest = [f.lstrip("\n") for f in fields[6:]]
        event = Event(sha, date, author, subject, email=email, agent=agent.strip())
        for status, path, old in name_status_entries(rest):
            change = {"change": _CHANGES.get(status[0], "changed"), "path": path}
            if old is not None and status[0] == "R":
                change["old_path"] = old
            event.changes.append(change)
        events.append(event)
    return events


def _id_pattern(note_id: str) -> str:
    """An extended regex (what `git log -G` takes) for the line `id: <id>`, optionally quoted."""
    escaped = re.sub(r"([\\.^$*+?()\[\]{}|])", r"\\\1", note_id)
    return f"^id:[[:space:]]*['\"]?{escaped}['\"]?[[:space:]]*$"


def _text_at(git: Git, rev: str, path: str) -> tuple[str, bool] | None:
    """A file's text at `rev`, and whether it was stored encrypted: an envelope is opened with the
    key while one is at hand (None without it, or when it does not open), so an encrypted note's
    id and versions are found like any other's."""
    try:
        data = git.blob(f"{rev}:{path}")
    except GitError:
        return None
    sealed = envelope.is_envelope(data)
    if sealed:
        try:
            data = crypto.decrypt(git.root, path, data)
        except TmemError:
            return None
    return data.decode("utf-8", errors="replace"), sealed


def _id_at(git: Git, rev: str, path: str) -> str | None:
    found = _text_at(git, rev, path)
    if found is None:
        return None
    value = notes.parse(found[0], path).meta.get("id")
    return str(value) if value not in (None, "") else None


def _paths_of(git: Git, note_id: str, start: str | None) -> list[str]:
    """Every path the note with this id had, from the commits that added or removed its id line."""
    found: dict[str, None] = {}
    if start:
        found[start] = None
        for event in _log(git, "--follow", "-M", "--", start):
            for change in event.changes:
                found[change["path"]] = None
                if change.get("old_path"):
                    found[change["old_path"]] = None
    for event in _log(git, "--no-renames", "-G", _id_pattern(note_id), "--", layout.MEMORY_DIR):
        for change in event.changes:
            path = change["path"]
            if path in found:
                continue
            # -G matches a line anywhere in the file: keep the path only if the note's id is this one
            rev = f"{event.commit}^" if change["change"] == "deleted" else event.commit
            if _id_at(git, rev, path) == note_id:
                found[path] = None
    if crypto.key_for(git.root) is not None:
        # An encrypted note's id line is inside its envelope, out of -G's sight (unless git's
        # textconv opens it, set up on the clone that set the key up): each encrypted note's
        # file the history ever added is opened once, as it was added.
        for event in _log(git, "--no-renames", "--diff-filter=A", "--", layout.MEMORY_DIR):
            for change in event.changes:
                path = change["path"]
                if path in found or not _SEALED_NAME.fullmatch(path.rpartition("/")[2]):
                    continue
                if _id_at(git, event.commit, path) == note_id:
                    found[path] = None
    return list(found)


def _locate(memory: Workspace, ref: str) -> tuple[str, str | None, str | None]:
    """(id, current path or None, a path to follow) for an id or path, current or forgotten."""
    try:
        rel = memory.resolve(ref)
    except NoteNotFound:
        ref = ref.strip()
        if "/" in ref or ref.endswith(layout.NOTE_SUFFIXES):
            rel = _gone_rel(memory.vault, ref)
            git = memory.vault.git
            last = _log(git, "-n", "1", "--", rel)
            note_id = None
            if last:
                rev = last[0].commit
                note_id = _id_at(git, rev, rel) or _id_at(git, f"{rev}^", rel)
            return note_id or notes.default_id(rel), None, rel
        return ref, None, None
    note = memory.vault.read_note(rel)
    return note.id, rel, rel


def _gone_rel(vault: Vault, ref: str) -> str:
    """The vault path of a note that is no longer on disk. `safe_rel` takes a path that does not
    exist as one under memory/; a note of the person's own folders (an adopted vault's) that git
    knew at the path as given is that one instead."""
    rel = vault.safe_rel(ref)
    prefix = f"{layout.MEMORY_DIR}/"
    if not rel.startswith(prefix) or ref.startswith(prefix) or Path(ref).is_absolute():
        return rel
    direct = (vault.root / ref).resolve()
    if vault.root not in direct.parents:
        return rel
    literal = direct.relative_to(vault.root).as_posix()
    git = vault.git
    if vault.is_note(literal) and _log(git, "-n", "1", "--", literal) and not _log(git, "-n", "1", "--", rel):
        return literal
    return rel


def note_history(memory: Workspace, ref: str, limit: int | None = None) -> NoteHistory:
    note_id, current, start = _locate(memory, ref)
    git = memory.vault.git
    paths = _paths_of(git, note_id, start)
    if not paths:
        raise NoteNotFound(f"no note with id '{note_id}' now or in the vault's history")
    args = ["-M", *(["-n", str(limit)] if limit else []), "--", *paths]
    events = _log(git, *args)
    for event in events:
        event.changes = [c for c in event.changes if c["path"] in paths]
    if not events:
        raise NoteNotFound(f"'{ref}' has no committed history yet")
    return NoteHistory(note_id, current, paths, events)


def vault_log(vault: Vault, limit: int = 20) -> list[Event]:
    """The vault's recent commits with the notes each changed (merges listed without files)."""
    return _log(vault.git, "-M", "-n", str(limit), "--", layout.MEMORY_DIR)


# ---- restore ------------------------------------------------------------------------------------


def restore(memory: Workspace, ref: str, at: str | None = None) -> Restored:
    """Bring back a forgotten note (its last version) or a note as it was at commit `at`."""
    vault = memory.vault
    git = vault.git
    note_id, current, start = _locate(memory, ref)
    paths = _paths_of(git, note_id, start)
    if not paths:
        raise NoteNotFound(f"no note with id '{note_id}' now or in the vault's history")
    if at is None:
        if current is not None:
            raise BadInput(f"{note_id} exists at {current}; give --at REV (see `tmem log {note_id}`)")
        source, path = _last_version(git, paths, note_id)
        if (
            crypto.key_for(vault.root) is None
            and sealing.key_set_up(vault)
            and _sealed_since(git, source, path)
        ):
            raise Locked(
                f"{note_id} was stored encrypted after {source[:8]}: its later versions open only with "
                "the key (tmem unlock), so nothing was brought back"
            )
    else:
        source = git.rev(at) or ""
        if not source:
            raise BadInput(f"'{at}' is not a commit of this vault (see `tmem log {note_id}`)")
        present = [p for p in paths if _exists(git, source, p)]
        path = next((p for p in present if _is_note(git, source, p, note_id)), present[0] if present else "")
        if not path:
            raise NoteNotFound(f"{note_id} did not exist at {at}")
    data = git.blob(f"{source}:{path}")
    sealed = envelope.is_envelope(data)
    if sealed:  # brought back encrypted, opened here only to be sealed again for where it goes
        data = crypto.decrypt(vault.root, path, data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise VaultError(f"{path} at {source[:8]} is not UTF-8 text") from None
    title = notes.parse(text, path).title
    how = f"as of {source[:8]}" if current else f"forgotten, from {source[:8]}"
    with memory.change(f"restore: {title} ({how})") as tx:
        if current is not None:
            target = current
            if tx.read_text(current) != text:
                tx.write_text(current, text, seal=sealed or sealing.on_disk(vault, current))
        else:
            # Looked for before the lock: a sync merging another machine's edit of the note may
            # have brought it back since, and a second file with its id would be a duplicate.
            now = _present(memory, note_id, path, str(notes.parse(text, path).meta.get("id")) == note_id)
            if now is not None:
                raise BadInput(f"{note_id} exists at {now}; give --at REV (see `tmem log {note_id}`)")
            # With the mode git had: a person's note committed as 100755 comes back executable.
            executable = git.mode(source, path) == "100755"
            target = tx.bring_back(path, text, seal=sealed, executable=executable)
            if target != path and not sealed:
                tx.warn(f"{file_names.why_renamed(path, taken=vault.exists(path))}; restored as {target}")
    return Restored(note_id, target, tx.sha, source, current is None)


def _present(memory: Workspace, note_id: str, path: str, own_id: bool) -> str | None:
    """Where the note `note_id` is now (read under the write lock), or None: at its old path, or,
    for a note whose frontmatter names its id (`own_id`), wherever that id is. An id made from a
    file name says nothing: another note's name can make the same one."""
    vault = memory.vault
    if vault.exists(path) and _note_id(vault, path) == note_id:
        return path
    if not own_id:
        return None
    try:
        return memory.resolve(note_id)
    except NoteNotFound:
        return None


def _note_id(vault: Vault, path: str) -> str | None:
    try:
        return vault.read_note(path).id
    except TmemError:  # not a note tmem can read: not the one being restored
        return None


def _sealed_since(git: Git, source: str, path: str) -> bool:
    """Whether the commit that removed `path` after `source` added an encrypted note's file (a
    `tmem encrypt`: the note lives on under a neutral name, as an envelope)."""
    gone = _log(git, "--no-renames", "--diff-filter=D", f"{source}..HEAD", "--", path)
    if not gone:
        return False
    added = git.out(
        "show",
        "--no-renames",
        "--name-only",
        "--diff-filter=A",
        "--format=",
        gone[-1].commit,
        "--",
        layout.MEMORY_DIR,
    )
    return any(_SEALED_NAME.fullmatch(line.rpartition("/")[2]) for line in added.splitlines())


def _exists(git: Git, rev: str, path: str) -> bool:
    return git.run("cat-file", "-e", f"{rev}:{path}", check=False).returncode == 0


def _is_note(git: Git, rev: str, path: str, note_id: str) -> bool:
    """Whether `path` at `rev` holds this note (another note may have taken the path since)."""
    own = _id_at(git, rev, path)
    if own is not None:
        return own == note_id
    # Without an `id:` key: its default id, or that id settled against another note's (model.note_ids).
    base = notes.default_id(path)
    return note_id in (base, note_ids.suffixed(path, base), note_ids.suffixed(path, base, 32))


def _last_version(git: Git, paths: list[str], note_id: str) -> tuple[str, str]:
    """(commit, path) of the newest committed version of a note that is gone now."""
    for event in _log(git, "--no-renames", "--", *paths):
        for change in event.changes:
            path = change["path"]
            if path not in paths:
                continue
            rev = (git.rev(f"{event.commit}^") or "") if change["change"] == "deleted" else event.commit
            if rev and _exists(git, rev, path) and _is_note(git, rev, path, note_id):
                return rev, path
    raise NoteNotFound("no committed version of this note to bring back")
