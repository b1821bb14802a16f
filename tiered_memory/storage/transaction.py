"""A unit of work on the vault's files: every write, move and removal of one operation, then one commit.

A Transaction is created under the vault's write lock (see `locks`) and is the only way tmem changes
files a person can see. Before it touches a path it appends a line to a journal under
`.tmem/journal/` and keeps the old bytes as a hard link (free: atomic writes replace the file, so
the old inode survives untouched). If the process dies before the commit — kill -9, a power cut,
an exception — the next unit of work on the vault finds the journal and puts every path back as
it was, so an operation either happened whole (one commit) or not at all; a path someone edited
since is left as they left it. Journal lines are written without fsync: a killed process's writes
are in the page cache, and after a power cut git's own state decides.

New notes are created exclusively (`os.link` fails when the name exists), so two writers that chose
the same file name never overwrite each other: the second takes the next free suffix. An existing
file is rewritten only from what this unit of work read of it under the lock (`read_text`,
`read_note`, `read_bytes`), so two writers changing one note in turn both keep their change: a
rewrite of a file the transaction never read is refused as a programming error (`UnreadRewrite`),
and one of a file that changed since it was read (a person's editor takes no lock) as a VaultError. Deleting a
file whose latest content git has not seen first commits that content, so git can bring it back.
"""

from __future__ import annotations

__all__ = [
    "ABSENT",
    "Transaction",
    "UnreadRewrite",
    "Warn",
    "digest",
    "file_digest",
    "neutral_name",
    "recover",
    "write_file",
]

import contextlib
import errno
import functools
import hashlib
import json
import os
import re
import secrets
import shutil
import stat
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

from tiered_memory.errors import NoteParseError, VaultError
from tiered_memory.model import envelope, file_names, privacy, sealed_merge
from tiered_memory.model import note as notes
from tiered_memory.model.layout import STATE_DIR
from tiered_memory.model.local_state import private_reason, unsafe_path
from tiered_memory.model.redact import redact_value
from tiered_memory.storage import crypto, merging, safe_path, sealing
from tiered_memory.storage.vault import (
    JOURNAL_DIR,
    SCRATCH_DIR,
    Vault,
    new_file_mode,
    sweep_temp_files,
)

_SCRATCH_NAME = re.compile(r"b[0-9]+")  # the old bytes of the journal's n-th path (see `_before`)
_MARKER = re.compile(r"\[REDACTED:[a-z0-9-]+\]")
_MARKER_KIND = re.compile(r"\[REDACTED:([a-z0-9-]+)\]")
_NAME_PIECE = re.compile(r"([^0-9A-Za-z]+)")
_WORD = re.compile(r"[0-9A-Za-z]{4,}")
_NEUTRAL = re.compile(r"n-[0-9a-f]{12}")  # the names `neutral_name` gives
ABSENT = "absent"
_FLUSHERS = 8  # threads that flush a unit of work's new files at its commit
Warn = Callable[[str], None]


class UnreadRewrite(RuntimeError):
    """An operation rewrote an existing file it did not read in its unit of work: what it wrote
    was made from a read taken before the write lock (or from nothing), so a change another
    writer made in between would be lost. A bug in the operation, never a person's mistake."""


def _removed_words(before: str, after: str) -> set[str]:
    """Lowercased words of `before` that redaction took out of `after`."""
    if before == after:
        return set()
    return {w.lower() for w in _WORD.findall(before)} - {w.lower() for w in _WORD.findall(after)}


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def file_digest(path: Path) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return ABSENT
    except OSError:
        return "unreadable"
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "unreadable"  # a pipe swapped in: never waited on
        try:
            return digest(handle.read())
        except OSError:
            return "unreadable"


@dataclass
class _Entry:
    before: str  # ABSENT, or the name of the hard link keeping the old bytes
    after: str | None = None  # digest (or ABSENT) once the change is on disk


@dataclass
class Transaction:
    vault: Vault
    message: str
    warn: Warn = lambda message: None
    # Every text, note, JSON value, new file name and the commit message pass through it before
    # they reach the disk or git: the one place redaction is sure to happen, whatever the caller.
    redact: Callable[[str], str] | None = None
    touched: list[str] = field(default_factory=list)
    sha: str | None = None
    _entries: dict[str, _Entry] = field(default_factory=dict)
    _folder: Path | None = None
    _journal: Any = None
    _secrets: dict[str, str] = field(default_factory=dict)  # what a commit message must not say
    # Sealed notes this unit of work stores in plain text (`decrypt`): see `publish`.
    _published: set[str] = field(default_factory=set)
    # What this unit of work knows each path holds: the digest of the bytes it read or wrote
    # there (ABSENT: it found none). A rewrite is based on it; see `_check_base`.
    _known: dict[str, str] = field(default_factory=dict)
    # The names in each folder this unit of work created or moved a file into, by the key a
    # case-insensitive system sees them under (`file_names.fold`): read once, kept up to date.
    _names: dict[str, dict[str, str]] = field(default_factory=dict)
    # New files whose bytes and folder entries are not on the disk for sure yet: made durable
    # together, once, before the commit (`_make_durable`).
    _unsynced: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.redact is not None:
            self.message = self.redact(self.message)

    # ---- reading -------------------------------------------------------------------------------
    # The same contracts as the Vault's readers (a helper may take either), but what is read here,
    # under the write lock, is what a rewrite of the path is allowed to be made from.
    def read_bytes(self, rel: str) -> bytes:
        """A file's bytes (FileNotFoundError when there is none), as what this unit of work
        bases its changes to `rel` on."""
        try:
            data = self.vault.read_bytes(rel)
        except FileNotFoundError:
            self._known[rel] = ABSENT
            raise
        self._known[rel] = digest(data)
        return data

    def read_text(self, rel: str, *, decrypt: bool = True) -> str:
        """A file's text, as `Vault.read_text` gives it (NoteParseError when there is none)."""
        return self.vault.text_of(rel, lambda: self.read_bytes(rel), decrypt=decrypt)

    def read_note(self, rel: str) -> notes.Note:
        text = self.read_text(rel)
        try:
            mtime = self.vault.abspath(rel).stat().st_mtime
        except OSError:
            mtime = None
        return self.vault.parse(text, rel, mtime)

    def exists(self, rel: str) -> bool:
        """Whether there is a file at `rel`, noted like a read: a decision made on a file's
        absence is not followed by overwriting one that appeared meanwhile."""
        try:
            self.read_bytes(rel)
        except FileNotFoundError:
            return False
        except (OSError, NoteParseError):
            return True  # a folder or a link: a rewrite is refused anyway
        return True

    def _check_base(self, rel: str, overwrite: bool) -> None:
        """Refuse to rewrite an existing file this unit of work did not read (or write) first, or
        one that changed since: the new content was made from something else than what is there."""
        path = self.vault.abspath(rel)
        if overwrite or path.is_symlink():
            return  # a link is refused by the write itself
        known = self._known.get(rel)
        if known is None:
            if os.path.lexists(path):
                raise UnreadRewrite(
                    f"{rel} is rewritten without being read in this unit of work: read it with "
                    "tx.read_text/read_note/read_bytes inside `memory.change()` (or pass overwrite=True)"
                )
        elif file_digest(path) != known:
            raise VaultError(f"{rel} changed while tmem was changing it; nothing was written (try again)")

    # ---- writing -------------------------------------------------------------------------------
    def write_text(self, rel: str, text: str, *, seal: bool = False, overwrite: bool = False) -> str:
        """Replace (or create) a file atomically; `seal`: stored encrypted (an envelope for `rel`).
        An existing file must have been read in this unit of work first, unless `overwrite` says
        the new text does not depend on the old one."""
        return self._replace(rel, self._clean_text(rel, text), seal=seal, overwrite=overwrite)

    def _replace(self, rel: str, text: str, *, seal: bool = False, overwrite: bool = False) -> str:
        self._check_base(rel, overwrite)
        data = crypto.encrypt(self.vault.root, rel, text.encode("utf-8")) if seal else text.encode("utf-8")
        first_touch, listed = rel not in self._entries, rel in self.touched
        self._before(rel)
        # Checked again once the new bytes are on disk, just before they take the name: a person's
        # save that landed while the journal and the fsync were being made is not written over.
        last_look = None if overwrite else functools.partial(self._unchanged, rel)
        self.vault.will_write(rel, digest(data))
        try:
            _atomic_replace(self.vault.root, rel, data, self.vault.writing_dir, last_look)
        except VaultError:
            self._not_written(rel, first_touch, listed)
            raise
        self._after(rel)
        return rel

    def _unchanged(self, rel: str) -> None:
        known = self._known.get(rel, ABSENT)
        if file_digest(self.vault.abspath(rel)) != known:
            raise VaultError(f"{rel} changed while tmem was changing it; nothing was written (try again)")

    def _not_written(self, rel: str, first_touch: bool, listed: bool) -> None:
        """The journal's entry for a write that stopped before its rename: what is there is not
        this unit of work's doing, so an undo must leave it (a person's save kept in the journal's
        copy of the old bytes is not put back over the save)."""
        known = self._known.get(rel, ABSENT)
        self._write({"path": rel, "after": known})
        if first_touch:
            del self._entries[rel]
            if not listed:
                self.touched.remove(rel)
        else:
            self._entries[rel].after = known

    def write_bytes(self, rel: str, data: bytes) -> str:
        """Replace a file with bytes tmem made that are no text to redact (a record of an encrypted
        note's waiting versions: envelopes, whose base64 redaction would break). Read it first."""
        self._check_base(rel, False)
        self._before(rel)
        self.vault.will_write(rel, digest(data))
        _atomic_replace(self.vault.root, rel, data, self.vault.writing_dir)
        self._after(rel)
        return rel

    def create_text(self, rel: str, text: str, *, seal: bool = False, executable: bool = False) -> str:
        """Create a new file, never replacing one: on a clash the next free `-2`, `-3`... name.
        `executable`: with the x bits (a file git had as 100755, brought back as it was)."""
        cleaned = self._clean_text(rel, text)
        name = self._clean_name(rel, _removed_words(text, cleaned))
        return self._create(name, cleaned, seal=seal, executable=executable)

    def bring_back(self, rel: str, text: str, *, seal: bool = False, executable: bool = False) -> str:
        """`create_text` for a file brought back under the name it had (a restore, an import of an
        export): a name a person chose, kept as it is where it is free ("What?.md" stays that,
        unlike the names tmem makes)."""
        cleaned = self._clean_text(rel, text)
        name = self._clean_name(rel, _removed_words(text, cleaned))
        return self._create(name, cleaned, seal=seal, executable=executable, own_name=True)

    def _create(
        self, rel: str, text: str, *, seal: bool = False, executable: bool = False, own_name: bool = False
    ) -> str:
        """`own_name`: a name a person chose, changed only where a clone could not hold it
        (`file_names.kept`); tmem's own get `portable` names. Neither goes beside a name differing
        from it by case or Unicode form alone: it takes the next free name."""
        rel = self._portable(rel, own=own_name)
        candidate = PurePosixPath(rel)
        counter = 2
        while True:
            name = candidate.as_posix()
            if not os.path.lexists(self.vault.abspath(name)) and not self._taken(name):
                # Sealed for the name it gets: the path is the envelope's associated data.
                data = (
                    crypto.encrypt(self.vault.root, name, text.encode("utf-8"))
                    if seal
                    else text.encode("utf-8")
                )
                self._before(name)
                self.vault.will_write(name, digest(data))
                if _atomic_create(
                    self.vault.root, name, data, self.vault.writing_dir, executable, sync=False
                ):
                    self._unsynced.append(name)
                    self._after(name)
                    return name
                self._forget(name)  # another writer took the name between the check and the link
            candidate = candidate.with_name(f"{PurePosixPath(rel).stem}-{counter}{PurePosixPath(rel).suffix}")
            counter += 1

    def write_note(self, note: notes.Note, *, overwrite: bool = False, text: str | None = None) -> str:
        """Write `note` (rendered), or `text` when given: the file as the caller edited it in place
        (`edit_frontmatter`, a person's formatting kept), of which `note` is the parse."""
        if note.parse_warning:
            raise NoteParseError(f"{note.path}: {note.parse_warning}; fix it by hand before tmem changes it")
        if text is None:
            self._clean_note(note)
        seal = self.seals(note)
        if seal:
            self._hide(note)
        if text is not None:
            return self._replace(note.path, self._clean_text(note.path, text), seal=seal, overwrite=overwrite)
        return self._replace(note.path, notes.render(note), seal=seal, overwrite=overwrite)

    def create_note(self, note: notes.Note) -> str:
        """Write a new note under its path or the next free name; returns where it went."""
        removed = self._clean_note(note)
        seal = self.seals(note)
        if seal:  # a name made from the title would tell what the note says
            if not _NEUTRAL.fullmatch(PurePosixPath(note.path).stem):
                note.path = neutral_name(note.path)
            self._hide(note)
        final = self._create(self._clean_name(note.path, removed), notes.render(note), seal=seal)
        note.path = final
        return final

    def _hide(self, note: notes.Note) -> None:
        """An encrypted note's title (and an id made from it) never appear in a commit message."""
        self._secrets.update(privacy.secrets(note))

    def publish(self, *rels: str) -> None:
        """The sealed notes that were at `rels` are stored in plain text by this unit of work
        (`decrypt`): their text is in the commit itself, so its message may name them."""
        self._published.update(rels)

    def seals(self, note: notes.Note) -> bool:
        """Whether the vault's privacy rules store this note encrypted."""
        privacy = self.vault.config.privacy
        override = note.meta.get("encrypt")
        return envelope.should_encrypt(
            note.path, note.sensitive, privacy.encrypt, privacy.encrypted_paths, override
        )

    def write_json(self, rel: str, data: Any, *, overwrite: bool = False) -> str:
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        if self.redact is not None:
            cleaned = json.dumps(redact_value(data, self.redact), indent=2, ensure_ascii=False) + "\n"
            self._report(rel, text, cleaned)
            text = cleaned
        return self._replace(rel, text, overwrite=overwrite)

    # ---- redaction -------------------------------------------------------------------------------
    def _clean_text(self, rel: str, text: str) -> str:
        """`text` redacted. A note's frontmatter is redacted value by value (a marker dropped into
        YAML as text could change a value's type), and only when something is found, so a clean
        file is written byte for byte."""
        if self.redact is None:
            return text
        cleaned = self.redact(text)
        if cleaned != text and notes.is_note_path(rel) and not rel.endswith(".json"):
            note = notes.parse(text, rel)
            if note.has_frontmatter and not note.parse_warning:
                self._clean_note(note, report=False)
                cleaned = notes.render(note)
        self._report(rel, text, cleaned)
        return cleaned

    def _clean_note(self, note: notes.Note, *, report: bool = True) -> set[str]:
        """Redact a note's frontmatter (keys and values, nested) and body in place; returns the
        words that were removed, so a file name made from them can lose them too."""
        if self.redact is None:
            return set()
        meta, body = redact_value(note.meta, self.redact), self.redact(note.body)
        if meta == note.meta and body == note.body:
            return set()  # the common case: no rendering just to compare
        before = notes.render(note)
        note.meta, note.body = meta, body
        after = notes.render(note)
        if report:
            self._report(note.path, before, after)
        return _removed_words(before, after)

    def _clean_name(self, rel: str, removed: Iterable[str] = ()) -> str:
        """A new file's path without secrets: words of a redacted title that slugging left in the
        name (lowercased, maybe cut short) become `redacted`, and so does anything still
        recognisable."""
        if self.redact is None:
            return rel
        removed = tuple(removed)
        parts = []
        for part in PurePosixPath(rel).parts:
            pieces = _NAME_PIECE.split(part)
            for i, piece in enumerate(pieces):
                low = piece.lower()
                if len(low) >= 4 and any(w == low or len(low) >= 8 and w.startswith(low) for w in removed):
                    pieces[i] = "redacted"
            joined = "".join(pieces)
            parts.append(_MARKER.sub("redacted", self.redact(joined)))
        return PurePosixPath(*parts).as_posix()

    def _report(self, rel: str, before: str, after: str) -> None:
        if before == after:
            return
        added = Counter(_MARKER_KIND.findall(after)) - Counter(_MARKER_KIND.findall(before))
        if added:
            kinds = ", ".join(sorted(added))
            self.warn(f"redacted {sum(added.values())} secret(s) before writing {rel}: {kinds}")

    def move(self, src: str, dst: str) -> str:
        """Move a file to `dst` or the next free name beside it; returns the final path. Both
        folders are opened without following a link (one is refused before anything moves)."""
        root = self.vault.root
        try:
            source_folder = safe_path.open_folder(root, safe_path.parts_of(src)[:-1], create=False)
        except FileNotFoundError:
            raise VaultError(f"{src} is gone") from None
        try:
            final = self._move_from(source_folder, src, dst)
        finally:
            os.close(source_folder)
        self._move_waiting(src, final)
        return final

    def _move_waiting(self, src: str, final: str) -> None:
        """A sealed note's other versions that a sync left waiting for the key (the record beside
        it) go where the note goes: left behind, `status` would no longer list the conflict and
        `tmem resolve` would find nothing to merge in."""
        record, moved = sealed_merge.conflict_path(src), sealed_merge.conflict_path(final)
        if (
            final == src
            or not os.path.isfile(self.vault.abspath(record))
            or os.path.islink(self.vault.abspath(record))
        ):
            return
        if os.path.lexists(self.vault.abspath(moved)):
            return
        self.move(record, moved)

    def _move_from(self, source_folder: int, src: str, dst: str) -> str:
        root = self.vault.root
        source_name = PurePosixPath(src).name
        found = safe_path.lstat_at(source_folder, source_name)
        if found is None:
            raise VaultError(f"{src} is gone")
        dst = self._clean_name(dst)
        new_stem = PurePosixPath(dst).stem
        if (
            new_stem != PurePosixPath(src).stem
            and not _NEUTRAL.fullmatch(new_stem)
            and sealing.on_disk(self.vault, src)
        ):
            dst = neutral_name(dst)  # a sealed note renamed (a decision's dated name): never after its title
        dst = self._portable(dst, rename=False)  # a file moved keeps its name
        candidate = PurePosixPath(dst)
        counter = 2
        while os.path.lexists(self.vault.abspath(candidate.as_posix())) or self._taken(candidate.as_posix()):
            candidate = candidate.with_name(f"{PurePosixPath(dst).stem}-{counter}{PurePosixPath(dst).suffix}")
            counter += 1
        final = candidate.as_posix()
        with safe_path.folder_of(root, final) as (target_folder, target_name):
            resealed = None
            data = None
            if stat.S_ISREG(found.st_mode):
                data = _read_at(source_folder, source_name)
                if data is not None and envelope.is_envelope(data[: len(envelope.MAGIC)]):
                    # Bound to its path: sealed again for the new one.
                    plain = crypto.decrypt(root, src, data)
                    resealed = crypto.encrypt(root, final, plain)
            self._before(src)
            self._before(final)
            if data is not None:
                self.vault.will_write(src, ABSENT)
                self.vault.will_write(final, digest(resealed if resealed is not None else data))
            os.rename(source_name, target_name, src_dir_fd=source_folder, dst_dir_fd=target_folder)
            if src in self._unsynced:  # created by this unit of work: made durable where it is now
                self._unsynced = [final if rel == src else rel for rel in self._unsynced]
            if resealed is not None:
                _replace_at(target_folder, target_name, resealed, self.vault.writing_dir, final)
            _fsync(target_folder)
        self._after(src)
        self._after(final)
        return final

    def remove(self, rel: str, *, title: str | None = None) -> None:
        """Delete a file. Content git has not seen yet is committed first, so it can come back."""
        self.remove_all([rel], reason=f"removing {title or PurePosixPath(rel).stem}")

    def remove_all(self, rels: Iterable[str], *, reason: str) -> None:
        """Delete files. Those whose content git has not seen yet are first committed together
        ("edit: save N note(s) before <reason>"), so `tmem restore` can bring every one back."""
        if self.redact is not None:
            reason = self.redact(reason)
        root = self.vault.root
        for rel in dict.fromkeys(rels):  # a link among the folders: refused before anything is done
            safe_path.check(root, rel)
        present = [r for r in dict.fromkeys(rels) if os.path.lexists(self.vault.abspath(r))]
        # What each file holds before git looks: a person's editor takes no lock, and a save
        # landing after the commit below and before the unlink would be in no commit at all.
        seen = {r: file_digest(self.vault.abspath(r)) for r in present if r not in self._entries}
        unseen = self.vault.git.dirty(r for r in present if r not in self._entries)
        if unseen:
            self._find_secrets(unseen)
            message = _shown(
                privacy.scrub(f"edit: save {len(unseen)} note(s) before {reason}", self._secrets)
            )
            self.vault.git.commit_paths(sorted(unseen), message, self._scratch(), self.warn)
        for rel in present:
            if rel in seen and file_digest(self.vault.abspath(rel)) != seen[rel]:
                raise VaultError(f"{rel} changed while tmem was removing it; nothing was removed (try again)")
            self._before(rel)
            self.vault.will_write(rel, ABSENT)
            with safe_path.folder_of(root, rel, create=False) as (folder, name):
                os.unlink(name, dir_fd=folder)
            self._after(rel)

    def include(self, paths: Iterable[str]) -> None:
        """Paths changed by someone else (a person's edit, a merge) that this commit should carry.
        Symbolic links are left out: tmem never commits a link a person made in the vault."""
        for rel in paths:
            if rel in self.touched:
                continue
            if os.path.islink(self.vault.abspath(rel)):
                self.warn(f"{rel} is a symbolic link; not committed (tmem never follows or commits links)")
                continue
            if not self._sealed_before_commit(rel):
                continue
            if rel not in self.touched:  # sealing it touched it already
                self.touched.append(rel)

    def _sealed_before_commit(self, rel: str) -> bool:
        """A note written in plain text by hand that the privacy rules encrypt is sealed before it
        is committed; while the vault is locked it is left uncommitted (False)."""
        if self.vault.config.privacy.encrypt == "none" or not rel.endswith(".md"):
            return True
        try:
            data = self.read_bytes(rel)
        except (OSError, NoteParseError):
            return True  # deleted: the removal is committed
        if envelope.is_envelope(data) or not sealing.might_seal(self.vault, rel, data):
            return True
        try:
            note = notes.parse(data.decode("utf-8"), rel)
        except UnicodeDecodeError:
            return True
        if note.parse_warning or not self.seals(note):
            return True
        if crypto.key_for(self.vault.root) is None:
            self.warn(f"{rel} must be stored encrypted but the vault is locked: not committed (tmem unlock)")
            return False
        self._hide(note)
        self.write_text(rel, data.decode("utf-8"), seal=True)
        return True

    # ---- finishing -------------------------------------------------------------------------------
    def commit(self) -> str | None:
        """One commit of every touched path (nothing when none changed), then the journal goes."""
        self._seal_touched()
        self._make_durable()
        if self.touched and self.vault.config.git.commit:
            # Messages are often set after the writes (from what they did): redact at the end too.
            message = self.redact(self.message) if self.redact is not None else self.message
            # A sealed note is named by its id alone, whoever built the message and from what.
            self._find_secrets(self.touched)
            message = self.message = _shown(privacy.scrub(message, self._secrets))
            if self._journal is not None:
                # The message is often set after the journal was opened: recovery must know the
                # one the commit gets, to tell a commit that happened from one that did not.
                self._write({"committing": message})
            self.sha = self.vault.git.commit_paths(self.touched, message, self._scratch(), self.warn)
        self._close(committed=True)
        return self.sha

    def _make_durable(self) -> None:
        """The files this unit of work created, flushed to the disk, then their folders, each
        once: an import of thousands of notes pays one fsync a file and one a folder, not two a
        file as it writes. Safe to defer: a new file replaced nothing (a power cut before this
        point can leave it short, never a person's older bytes lost, and the commit that names it
        comes after), and a kill -9 loses nothing the kernel holds. A rewrite of an existing file
        is still made durable before its rename (`_replace_at`): the old bytes are at stake."""
        created, self._unsynced = self._unsynced, []
        by_folder: dict[str, list[str]] = {}
        for rel in dict.fromkeys(created):
            folder, _, name = rel.rpartition("/")
            by_folder.setdefault(folder, []).append(name)
        folders: dict[str, int] = {}
        try:
            for folder in by_folder:
                try:
                    names = folder.split("/") if folder else []
                    folders[folder] = safe_path.open_folder(self.vault.root, names, create=False)
                except (OSError, VaultError):
                    continue  # moved or removed since (a rollback, a person): nothing of ours to flush
            files = [(fd, name) for folder, fd in folders.items() for name in by_folder[folder]]
            if len(files) > 1:
                # fsync waits on the disk, outside the GIL: a few at once share the file system's
                # journal commits (one each, one after another, is most of a large import's time).
                with ThreadPoolExecutor(max_workers=min(_FLUSHERS, len(files))) as pool:
                    list(pool.map(lambda pair: _fsync_file(*pair), files))
            else:
                for fd, name in files:
                    _fsync_file(fd, name)
            for fd in folders.values():
                _fsync(fd)
        finally:
            for fd in folders.values():
                os.close(fd)

    def _seal_touched(self) -> None:
        """A note this unit of work wrote as text that the rules store encrypted (an operation that
        rewrote a decrypted note) is sealed before the commit, as a hand-written one is; while
        locked it is left out of the commit."""
        if self.vault.config.privacy.encrypt == "none":
            return
        for rel in list(self.touched):
            if not self._sealed_before_commit(rel):
                self.touched.remove(rel)

    def scrub(self, text: str) -> str:
        """`text` naming the sealed notes this unit of work touched by their ids alone (for what
        an operation writes about them: a report, a ledger)."""
        self._find_secrets(self.touched)
        return privacy.scrub(text, self._secrets)

    def _find_secrets(self, rels: Iterable[str]) -> None:
        """Learn what the sealed notes among `rels` must never have outside their envelope, from
        their bytes now and before this unit of work (a removed or rewritten note was sealed)."""
        if not sealing.may_seal(self.vault):
            return
        for rel in rels:
            if rel in self._published:
                continue
            entry = self._entries.get(rel)
            sources = [self.vault.abspath(rel)]
            if entry is not None and entry.before != ABSENT and self._folder is not None:
                sources.append(self._folder / entry.before)
            for source in sources:
                if source.is_symlink():
                    continue
                try:
                    data = source.read_bytes()
                except OSError:
                    continue
                self._secrets.update(sealing.secrets_of(self.vault, rel, data))

    def rollback(self) -> list[str]:
        """Put back every path this transaction changed (used when the operation failed)."""
        if self._entries:
            self.vault.git.unstage(self._entries)
        restored = _restore(self.vault, self._entries, self._folder, self.warn)
        self._close(committed=False)
        return restored

    # ---- the journal -----------------------------------------------------------------------------
    def _scratch(self) -> Path:
        return self.vault.state_dir / SCRATCH_DIR

    def _open_journal(self) -> None:
        base = self.vault.state_dir / JOURNAL_DIR
        base.mkdir(parents=True, exist_ok=True)
        self._folder = base / f"{datetime.now():%Y%m%dT%H%M%S}-{os.getpid()}-{secrets.token_hex(3)}"
        self._folder.mkdir()
        head = self.vault.git.rev("HEAD") or ""
        # surrogateescape: a path whose name is not UTF-8 is journaled as its bytes (read back so).
        self._journal = open(self._folder / "journal.jsonl", "a", encoding="utf-8", errors="surrogateescape")  # noqa: SIM115
        self._write({"message": privacy.scrub(self.message, self._secrets), "head": head})

    def _write(self, record: dict[str, Any]) -> None:
        self._journal.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._journal.flush()

    def _before(self, rel: str) -> None:
        if rel not in self.touched:
            self.touched.append(rel)
        if rel in self._entries:
            entry = self._entries[rel]
            if entry.after is not None:
                # Written again (moved, then rewritten): until the new `after` line, what is on
                # disk is this transaction's doing too, not a person's edit to leave alone.
                entry.after = None
                self._write({"path": rel, "pending": True})
            return
        # A path through a linked folder is refused before it is journaled: undoing the change
        # would otherwise put back (or delete) a file outside the vault.
        safe_path.check(self.vault.root, rel)
        if self._folder is None:
            self._find_secrets([rel])  # the journal's message names a sealed note by its id too
            self._open_journal()
        assert self._folder is not None
        path = self.vault.abspath(rel)
        before = ABSENT
        if os.path.lexists(path):
            before = f"b{len(self._entries)}"
            try:
                os.link(path, self._folder / before, follow_symlinks=False)
            except OSError:
                shutil.copy2(path, self._folder / before, follow_symlinks=False)
        self._entries[rel] = _Entry(before)
        self._write({"path": rel, "before": before})

    def _after(self, rel: str) -> None:
        after = file_digest(self.vault.abspath(rel))
        self._entries[rel].after = after
        self._known[rel] = after
        self._write({"path": rel, "after": after})
        self._listed(rel, os.path.lexists(self.vault.abspath(rel)))

    # ---- names every clone can check out ---------------------------------------------------------
    # A vault is cloned on Windows and macOS too: a new file's name must be one they can create
    # (model.file_names), and one that no name of its folder differs from by case alone there.
    def _portable(self, rel: str, *, rename: bool = True, own: bool = False) -> str:
        """Where a new file meant for `rel` goes: a folder on the way that exists spelled in
        another case (`Work/meetings` beside `Work/Meetings`) is that folder, one still to make
        gets a portable name, and so does the file (unless `rename` is off: a moved file keeps its
        own). `own`: names a person chose, changed only as far as `file_names.kept` must, the path
        cut to Windows' length. Deterministic, so the next file meant for the same folder goes to
        the same one."""
        name_for = file_names.kept if own else file_names.portable
        parts = PurePosixPath(rel).parts
        out: list[str] = []
        for depth, part in enumerate(parts):
            last = depth == len(parts) - 1
            if not last:
                if not os.path.lexists(self.vault.abspath("/".join([*out, part]))):
                    made = name_for(part)
                    part = self._folder_names("/".join(out)).get(file_names.fold(made), made)
            elif rename:
                part = name_for(part)
            out.append(part)
        return file_names.fit_path("/".join(out)) if own else "/".join(out)

    def _taken(self, rel: str) -> bool:
        """Whether a file or folder beside `rel` differs from its name by case alone (on macOS
        and Windows, the same name)."""
        folder, _, name = rel.rpartition("/")
        return file_names.fold(name) in self._folder_names(folder)

    def _folder_names(self, folder: str) -> dict[str, str]:
        names = self._names.get(folder)
        if names is None:
            try:
                listed = os.listdir(self.vault.abspath(folder) if folder else self.vault.root)
            except OSError:  # not made yet (or no folder): nothing in it to clash with
                listed = []
            names = self._names[folder] = {file_names.fold(n): n for n in listed}
        return names

    def _listed(self, rel: str, exists: bool) -> None:
        """Keep the listings read by `_folder_names` up to date with what this unit of work did."""
        parts = PurePosixPath(rel).parts
        for depth, part in enumerate(parts):
            names = self._names.get("/".join(parts[:depth]))
            if names is None:
                continue
            key = file_names.fold(part)
            if depth < len(parts) - 1 or exists:
                names.setdefault(key, part)
            elif names.get(key) == part:
                del names[key]

    def _forget(self, rel: str) -> None:
        self._entries.pop(rel, None)
        if rel in self.touched:
            self.touched.remove(rel)
        self._write({"path": rel, "forget": True})

    def _close(self, committed: bool) -> None:
        if self._journal is not None:
            if committed:
                self._write({"committed": self.sha or ""})
            self._journal.close()
            self._journal = None
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


def neutral_name(rel: str) -> str:
    """A random file name beside `rel` (same folder, same suffix)."""
    path = PurePosixPath(rel)
    return path.with_name(f"n-{secrets.token_hex(6)}{path.suffix}").as_posix()


# ---- recovery -------------------------------------------------------------------------------------


def recover(vault: Vault, warn: Warn) -> list[str]:
    """Finish what interrupted units of work left: put their paths back as they were (or, when the
    commit did happen, just drop the journal). Call it holding the write lock: then no journal
    belongs to a live writer. Temp files of atomic writes a kill cut short between the write and
    the rename are removed too, and the folders of commits it cut short. Returns the paths put
    back, for reindexing."""
    sweep_temp_files(vault.writing_dir)
    sweep_temp_files(vault.state_dir / SCRATCH_DIR)
    merged_back = merging.abort_interrupted(
        vault,
        warn,
        lambda rel, data: _put_back(vault, rel, None) if data is None else write_file(vault, rel, data),
    )
    base = vault.state_dir / JOURNAL_DIR
    if not base.is_dir():
        return merged_back
    folders = sorted(p for p in base.iterdir() if p.is_dir())
    if not folders:
        return merged_back
    # A journal is replayed only when this machine's tmem wrote it: then git tracks nothing under
    # .tmem/ (what git put there came from another machine), the journal's folder is no link, and
    # every entry names a plain path inside the vault, outside private state, whose old bytes are
    # a regular file in the journal's own folder. Anything else is dropped unreplayed.
    foreign = _foreign_state(vault)
    restored: list[str] = []
    for folder in folders:
        message, head, committed, entries = _read_journal(folder / "journal.jsonl")
        linked = folder.is_symlink()
        why = foreign or ("is a symbolic link" if linked else _untrusted_entry(vault, folder, entries))
        if why is not None:
            dropped = ", removed" if _drop(vault, folder) else ""
            warn(f"{folder.relative_to(vault.root).as_posix()} {why}: not replayed{dropped}")
            continue
        _sweep_beside(vault, entries)
        if not committed and message and head != (vault.git.rev("HEAD") or ""):
            last = vault.git.run("log", "-1", "--format=%B", check=False).stdout.strip()
            committed = last == message.strip()
        if not committed and entries:
            vault.git.unstage(entries)
            paths = _restore(vault, entries, folder, warn)
            restored += paths
            subject = (message or "a change").splitlines()[0]
            warn(f"an interrupted '{subject}' was undone ({len(paths)} file(s) put back as they were)")
        shutil.rmtree(folder, ignore_errors=True)
    return merged_back + restored


def _foreign_state(vault: Vault) -> str | None:
    """Why the journals under .tmem/ cannot be this machine's own, else None: git tracks something
    there, so git (a clone, a pull, a checkout) may have written any of it."""
    listed = vault.git.run("ls-files", "-z", check=False).stdout.split("\0")
    tracked = [p for p in listed if p and private_reason(p) is not None]
    if tracked:
        return f"came through git ({tracked[0]} is tracked; untrack it: git rm -r --cached .tmem)"
    return None


def _drop(vault: Vault, folder: Path) -> bool:
    """Remove a journal folder that is not replayed, never through a link: a `.tmem/journal` that
    git made a link could lead anywhere outside the vault."""
    if folder.is_symlink():
        folder.unlink()
        return True
    if os.path.realpath(folder) != str(vault.root / STATE_DIR / JOURNAL_DIR / folder.name):
        return False
    shutil.rmtree(folder, ignore_errors=True)
    return True


def _untrusted_entry(vault: Vault, folder: Path, entries: dict[str, _Entry]) -> str | None:
    """Why a journal's entries are not ones tmem writes, else None."""
    for rel, entry in entries.items():
        unsafe = unsafe_path(rel)
        if unsafe is None and not vault.abspath(rel).parent.resolve().is_relative_to(vault.root):
            unsafe = "a path through a symbolic link out of the vault"
        if unsafe is not None:
            return f"names {rel!r} ({unsafe})"
        if entry.before == ABSENT:
            continue
        if not _SCRATCH_NAME.fullmatch(entry.before):
            return f"keeps the old bytes of {rel} in {entry.before!r}, not in its own folder"
        with contextlib.suppress(FileNotFoundError):
            if not stat.S_ISREG((folder / entry.before).lstat().st_mode):
                return f"keeps the old bytes of {rel} in something that is not a file"
    return None


def _sweep_beside(vault: Vault, entries: Iterable[str]) -> None:
    """Remove the temp files an interrupted write left beside the journal's paths (written there
    only when the folder is on another file system than .tmem/, or by an older tmem)."""
    by_folder: dict[Path, set[str]] = {}
    for rel in entries:
        path = vault.abspath(rel)
        by_folder.setdefault(path.parent, set()).add(f".{path.name}.")
    for folder, prefixes in by_folder.items():
        try:
            found = [e for e in os.scandir(folder) if e.name.endswith(".tmp") and e.name.startswith(".")]
        except OSError:
            continue
        for entry in found:
            if any(entry.name.startswith(prefix) for prefix in prefixes) and entry.is_file(
                follow_symlinks=False
            ):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _read_journal(path: Path) -> tuple[str, str, bool, dict[str, _Entry]]:
    message, head, committed = "", "", False
    entries: dict[str, _Entry] = {}
    try:
        lines = path.read_text(encoding="utf-8", errors="surrogateescape").splitlines()
    except OSError:
        return message, head, committed, entries
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue  # the last line may be torn by the kill
        if not isinstance(record, dict):
            continue
        if "message" in record:
            message, head = str(record.get("message") or ""), str(record.get("head") or "")
        elif "committing" in record:
            message = str(record.get("committing") or message)
        elif "committed" in record:
            committed = True
        elif isinstance(record.get("path"), str):
            rel = record["path"]
            if record.get("forget"):
                entries.pop(rel, None)
            elif record.get("pending") and rel in entries:
                entries[rel].after = None
            elif "before" in record and rel not in entries:
                entries[rel] = _Entry(str(record["before"]))
            elif "after" in record and rel in entries:
                entries[rel].after = str(record["after"])
    return message, head, committed, entries


def _restore(vault: Vault, entries: dict[str, _Entry], folder: Path | None, warn: Warn) -> list[str]:
    restored: list[str] = []
    for rel, entry in reversed(list(entries.items())):
        path = vault.abspath(rel)
        now = file_digest(path)
        backup = folder / entry.before if folder is not None and entry.before != ABSENT else None
        if entry.before == ABSENT:
            original = ABSENT
        elif backup is not None and os.path.lexists(backup):
            original = file_digest(backup)
        else:
            continue  # the old bytes are gone; leave the path as it is
        if now == original:
            continue
        if entry.after is not None and now != entry.after:
            warn(f"{rel} changed after the interrupted operation; left as it is")
            continue
        try:
            _put_back(vault, rel, backup)
        except VaultError as exc:  # a folder on the way became a link: nothing outside is touched
            warn(f"{exc}; {rel} left as it is")
            continue
        restored.append(rel)
    return restored


def _put_back(vault: Vault, rel: str, backup: Path | None) -> None:
    """`rel` as the journal's `backup` keeps it (None: it did not exist), by name in its folder."""
    try:
        with safe_path.folder_of(vault.root, rel, create=backup is not None) as (folder, name):
            if backup is None:
                try:
                    os.unlink(name, dir_fd=folder)
                except FileNotFoundError:
                    pass
                except OSError as exc:
                    # A name the file system refuses (over 255 bytes) was never made: there is
                    # nothing to put back, and the journal must not stay behind for ever.
                    if exc.errno != errno.ENAMETOOLONG:
                        raise
                return
            kept = backup.lstat()
            if stat.S_ISLNK(kept.st_mode):
                where, prefix, owned = _temp_folder(folder, name, vault.writing_dir)
                tmp = f"{prefix}{secrets.token_hex(6)}.tmp"
                try:
                    os.symlink(os.readlink(backup), tmp, dir_fd=where)
                except BaseException:
                    if owned:
                        os.close(where)
                    raise
            else:
                data, mode = backup.read_bytes(), kept.st_mode & 0o777
                where, tmp, owned = _temp_file(folder, name, data, vault.writing_dir, mode)
            _rename_into(folder, name, where, tmp, owned, times=(kept.st_atime_ns, kept.st_mtime_ns))
    except FileNotFoundError:
        return  # its folder is gone (a removal), and the file with it


# ---- atomic file writes ---------------------------------------------------------------------------
# By name in folders opened without following a link (storage.safe_path): a folder that is a link
# is refused before a byte is written, and one swapped for a link meanwhile by the open itself.

_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _temp_folder(folder: int, name: str, scratch: Path) -> tuple[int, str, bool]:
    """(descriptor, name prefix, whether the caller closes the descriptor) of where the temp file
    of an atomic write of `name` in `folder` goes: `scratch` (a vault's `writing_dir`) when it is
    on the same file system (a rename cannot cross file systems), named after this process so
    recovery can tell a dead writer's leftovers from a live one's; otherwise beside the target
    as `.<name>.<random>.tmp`, which the scanner skips and recovery sweeps."""
    with contextlib.suppress(OSError):
        where = os.open(scratch, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
        if os.fstat(where).st_dev == os.fstat(folder).st_dev:
            return where, f"{os.getpid()}-", True
        os.close(where)
    return folder, f".{name}.", False


def _temp_file(
    folder: int, name: str, data: bytes, scratch: Path, mode: int, *, sync: bool = True
) -> tuple[int, str, bool]:
    """The new bytes in a temp file with `mode`, fsynced (unless `sync` is off: the caller makes
    them durable later), ready to be renamed (or linked) to `name` in `folder`: (its folder's
    descriptor, its name, whether to close that descriptor)."""
    where, prefix, owned = _temp_folder(folder, name, scratch)
    tmp = f"{prefix}{secrets.token_hex(6)}.tmp"
    try:
        fd = os.open(tmp, _NEW, 0o600, dir_fd=where)
        try:
            with os.fdopen(fd, "wb") as handle:
                os.fchmod(handle.fileno(), mode)
                handle.write(data)
                handle.flush()
                if sync:
                    os.fsync(handle.fileno())
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=where)
            raise
    except BaseException:
        if owned:
            os.close(where)
        raise
    return where, tmp, owned


def write_file(vault: Vault, rel: str, data: bytes) -> None:
    """Replace (or create) a file of the vault atomically outside a unit of work (what a merge
    in progress settles for git), its folders opened without following a link."""
    _atomic_replace(vault.root, rel, data, vault.writing_dir)


def _atomic_replace(
    root: Path, rel: str, data: bytes, scratch: Path, last_look: Callable[[], None] | None = None
) -> None:
    with safe_path.folder_of(root, rel) as (folder, name):
        _replace_at(folder, name, data, scratch, rel, last_look)


def _replace_at(
    folder: int, name: str, data: bytes, scratch: Path, rel: str, last_look: Callable[[], None] | None = None
) -> None:
    """`data` written to a temp file, fsynced, and renamed to `name`; `last_look` (which raises to
    stop the write) is called between the two, when only the rename is left."""
    current = safe_path.lstat_at(folder, name)
    if current is not None and stat.S_ISLNK(current.st_mode):
        # Writing through a link would change a file outside the vault.
        raise safe_path.link_refused(rel)
    mode = current.st_mode & 0o777 if current is not None else new_file_mode()
    where, tmp, owned = _temp_file(folder, name, data, scratch, mode)
    if last_look is not None:
        try:
            last_look()
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=where)
            if owned:
                os.close(where)
            raise
    _rename_into(folder, name, where, tmp, owned)
    _fsync(folder)


def _rename_into(
    folder: int, name: str, where: int, tmp: str, owned: bool, *, times: tuple[int, int] | None = None
) -> None:
    """The temp file `tmp` (in the folder `where`) renamed to `name` in `folder`, with the file
    times `times` (ns) when given; the temp file removed if that fails, `where` closed if owned."""
    try:
        if times is not None:
            os.utime(tmp, ns=times, dir_fd=where, follow_symlinks=False)
        os.replace(tmp, name, src_dir_fd=where, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=where)
        raise
    finally:
        if owned:
            os.close(where)


def _atomic_create(
    root: Path, rel: str, data: bytes, scratch: Path, executable: bool = False, *, sync: bool = True
) -> bool:
    """Write a new file; False (and nothing written) when the name is taken meanwhile. `sync`
    off: neither the file nor its folder is fsynced here (see `Transaction._make_durable`)."""
    with safe_path.folder_of(root, rel) as (folder, name):
        mode = new_file_mode(executable=executable)
        where, tmp, owned = _temp_file(folder, name, data, scratch, mode, sync=sync)
        try:
            try:
                os.link(tmp, name, src_dir_fd=where, dst_dir_fd=folder)
            except FileExistsError:
                return False
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=where)
            if owned:
                os.close(where)
        if sync:
            _fsync(folder)
    return True


def _read_at(folder: int, name: str) -> bytes | None:
    """The bytes of the regular file `name` in `folder`; None for anything else (a link, a pipe:
    never followed, never waited on)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(name, flags | getattr(os, "O_CLOEXEC", 0), dir_fd=folder)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return handle.read()


def _fsync(folder: int) -> None:
    with contextlib.suppress(OSError):
        os.fsync(folder)


def _fsync_file(folder: int, name: str) -> None:
    """Flush the regular file `name` in `folder` (a link or a pipe put there since: left alone)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(name, flags | getattr(os, "O_CLOEXEC", 0), dir_fd=folder)
    except OSError:
        return
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# A commit message is made from what agents and notes say (a title, a transcript's first line);
# `git log` prints it to a terminal as it is, so what a terminal acts on is shown, not sent.
# The bidirectional embeddings, overrides and isolates are shown too: they reorder how the rest
# of the line reads wherever the log is shown ("Trojan Source"), a terminal or a web page.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]|[\u202a-\u202e\u2066-\u2069]")


def _shown(message: str) -> str:
    return _CONTROLS.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if m.group() <= "\xff" else f"\\u{ord(m.group()):04x}", message
    )
