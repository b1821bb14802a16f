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

import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

from tiered_memory.errors import NoteParseError, VaultError
from tiered_memory.model import envelope
from tiered_memory.model import note as notes
from tiered_memory.model.redact import redact_value
from tiered_memory.storage import crypto
from tiered_memory.storage.vault import Vault, fsync_dir, new_file_mode, sweep_temp_files, temp_prefix

JOURNAL_DIR = "journal"
_MARKER = re.compile(r"\[REDACTED:[a-z0-9-]+\]")
_MARKER_KIND = re.compile(r"\[REDACTED:([a-z0-9-]+)\]")
_NAME_PIECE = re.compile(r"([^0-9A-Za-z]+)")
_WORD = re.compile(r"[0-9A-Za-z]{4,}")
ABSENT = "absent"
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
        return digest(path.read_bytes())
    except FileNotFoundError:
        return ABSENT
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
    _secrets: list[str] = field(default_factory=list)
    # What this unit of work knows each path holds: the digest of the bytes it read or wrote
    # there (ABSENT: it found none). A rewrite is based on it; see `_check_base`.
    _known: dict[str, str] = field(default_factory=dict)

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
        try:
            data = self.read_bytes(rel)
        except FileNotFoundError:
            raise NoteParseError(f"{rel}: no such file") from None
        except OSError as exc:
            raise NoteParseError(
                f"{rel}: cannot read it ({exc.strerror or exc.__class__.__name__})"
            ) from None
        return self.vault.decode(rel, data, decrypt=decrypt)

    def read_note(self, rel: str) -> notes.Note:
        text = self.read_text(rel)
        try:
            mtime = self.vault.abspath(rel).stat().st_mtime
        except OSError:
            mtime = None
        return notes.parse(text, rel, mtime=mtime)

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
        self._before(rel)
        _atomic_replace(self.vault.abspath(rel), data, self.vault.writing_dir)
        self._after(rel)
        return rel

    def create_text(self, rel: str, text: str, *, seal: bool = False) -> str:
        """Create a new file, never replacing one: on a clash the next free `-2`, `-3`... name."""
        cleaned = self._clean_text(rel, text)
        return self._create(self._clean_name(rel, _removed_words(text, cleaned)), cleaned, seal=seal)

    def _create(self, rel: str, text: str, *, seal: bool = False) -> str:
        candidate = PurePosixPath(rel)
        counter = 2
        while True:
            name = candidate.as_posix()
            if not os.path.lexists(self.vault.abspath(name)):
                # Sealed for the name it gets: the path is the envelope's associated data.
                data = (
                    crypto.encrypt(self.vault.root, name, text.encode("utf-8"))
                    if seal
                    else text.encode("utf-8")
                )
                self._before(name)
                if _atomic_create(self.vault.abspath(name), data, self.vault.writing_dir):
                    self._after(name)
                    return name
                self._forget(name)  # another writer took the name between the check and the link
            candidate = candidate.with_name(f"{PurePosixPath(rel).stem}-{counter}{PurePosixPath(rel).suffix}")
            counter += 1

    def write_note(self, note: notes.Note, *, overwrite: bool = False) -> str:
        if note.parse_warning:
            raise NoteParseError(f"{note.path}: {note.parse_warning}; fix it by hand before tmem changes it")
        self._clean_note(note)
        seal = self.seals(note)
        if seal:
            self._hide(note)
        return self._replace(note.path, notes.render(note), seal=seal, overwrite=overwrite)

    def create_note(self, note: notes.Note) -> str:
        """Write a new note under its path or the next free name; returns where it went."""
        removed = self._clean_note(note)
        seal = self.seals(note)
        if seal:  # a name made from the title would tell what the note says
            note.path = neutral_name(note.path)
            self._hide(note)
        final = self._create(self._clean_name(note.path, removed), notes.render(note), seal=seal)
        note.path = final
        return final

    def _hide(self, note: notes.Note) -> None:
        """An encrypted note's title and id never appear in a commit message."""
        self._secrets += [
            w for w in (note.meta.get("title"), note.meta.get("id")) if isinstance(w, str) and len(w) > 2
        ]

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
        """Move a file to `dst` or the next free name beside it; returns the final path."""
        source = self.vault.abspath(src)
        if not os.path.lexists(source):
            raise VaultError(f"{src} is gone")
        dst = self._clean_name(dst)
        candidate = PurePosixPath(dst)
        counter = 2
        while os.path.lexists(self.vault.abspath(candidate.as_posix())):
            candidate = candidate.with_name(f"{PurePosixPath(dst).stem}-{counter}{PurePosixPath(dst).suffix}")
            counter += 1
        final = candidate.as_posix()
        resealed = None
        if not source.is_symlink() and source.is_file():
            with open(source, "rb") as handle:
                head = handle.read(len(envelope.MAGIC))
            if envelope.is_envelope(head):  # bound to its path: sealed again for the new one
                plain = crypto.decrypt(self.vault.root, src, source.read_bytes())
                resealed = crypto.encrypt(self.vault.root, final, plain)
        self._before(src)
        self._before(final)
        target = self.vault.abspath(final)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(source, target)
        if resealed is not None:
            _atomic_replace(target, resealed, self.vault.writing_dir)
        fsync_dir(target.parent)
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
        present = [r for r in dict.fromkeys(rels) if os.path.lexists(self.vault.abspath(r))]
        unseen = self.vault.git.dirty(r for r in present if r not in self._entries)
        if unseen:
            message = f"edit: save {len(unseen)} note(s) before {reason}"
            self.vault.git.commit_paths(sorted(unseen), message, self._scratch(), self.warn)
        for rel in present:
            self._before(rel)
            self.vault.abspath(rel).unlink()
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
        if envelope.is_envelope(data):
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
        if self.touched and self.vault.config.git.commit:
            # Messages are often set after the writes (from what they did): redact at the end too.
            message = self.redact(self.message) if self.redact is not None else self.message
            for secret in sorted(set(self._secrets), key=len, reverse=True):
                message = message.replace(secret, "[encrypted note]")
            if self._journal is not None:
                # The message is often set after the journal was opened: recovery must know the
                # one the commit gets, to tell a commit that happened from one that did not.
                self._write({"committing": message})
            self.sha = self.vault.git.commit_paths(self.touched, message, self._scratch(), self.warn)
        self._close(committed=True)
        return self.sha

    def rollback(self) -> list[str]:
        """Put back every path this transaction changed (used when the operation failed)."""
        if self._entries:
            self.vault.git.unstage(self._entries)
        restored = _restore(self.vault, self._entries, self._folder, self.warn)
        self._close(committed=False)
        return restored

    # ---- the journal -----------------------------------------------------------------------------
    def _scratch(self) -> Path:
        return self.vault.state_dir / "tmp"

    def _open_journal(self) -> None:
        base = self.vault.state_dir / JOURNAL_DIR
        base.mkdir(parents=True, exist_ok=True)
        self._folder = base / f"{datetime.now():%Y%m%dT%H%M%S}-{os.getpid()}-{secrets.token_hex(3)}"
        self._folder.mkdir()
        head = self.vault.git.rev("HEAD") or ""
        self._journal = open(self._folder / "journal.jsonl", "a", encoding="utf-8")  # noqa: SIM115
        self._write({"message": self.message, "head": head})

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
        if self._folder is None:
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
    the rename are removed too. Returns the paths put back, for reindexing."""
    sweep_temp_files(vault.writing_dir)
    base = vault.state_dir / JOURNAL_DIR
    if not base.is_dir():
        return []
    restored: list[str] = []
    for folder in sorted(p for p in base.iterdir() if p.is_dir()):
        message, head, committed, entries = _read_journal(folder / "journal.jsonl")
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
    return restored


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
        if entry.before == ABSENT:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        else:
            assert backup is not None
            path.parent.mkdir(parents=True, exist_ok=True)
            folder_for_tmp, prefix = temp_prefix(path, vault.writing_dir)
            tmp = folder_for_tmp / f"{prefix}{secrets.token_hex(6)}.restore.tmp"
            shutil.copy2(backup, tmp, follow_symlinks=False)
            os.replace(tmp, path)
        restored.append(rel)
    return restored


# ---- atomic file writes ---------------------------------------------------------------------------


def _temp_file(target: Path, data: bytes, scratch: Path) -> str:
    """The new bytes in a temp file, fsynced, ready to be renamed (or linked) to `target`."""
    folder, prefix = temp_prefix(target, scratch)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


def _atomic_replace(target: Path, data: bytes, scratch: Path) -> None:
    if target.is_symlink():
        # Writing through a link would change a file outside the vault.
        raise VaultError(f"{target} is a symbolic link; tmem does not write through links")
    tmp = _temp_file(target, data, scratch)
    try:
        mode = target.stat().st_mode & 0o777 if target.exists() else new_file_mode()
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(target.parent)


def _atomic_create(target: Path, data: bytes, scratch: Path) -> bool:
    """Write a new file; False (and nothing written) when the name is taken meanwhile."""
    tmp = _temp_file(target, data, scratch)
    try:
        os.chmod(tmp, new_file_mode())
        try:
            os.link(tmp, target)
        except FileExistsError:
            return False
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    fsync_dir(target.parent)
    return True
