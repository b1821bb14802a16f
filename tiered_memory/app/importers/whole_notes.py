"""A tmem export's notes filed whole: each at its own path, with its own bytes and id.

Where a note goes, decided once per note with no search and no reindex (an import of 2,000 notes
is 2,000 file creations, one commit and one index pass):

- a note whose `id:` the vault (or this import) has already is that note: skipped, `exists,
  unchanged` or `exists with other content (left as it is)`;
- a file at its path holding the same note is skipped as `exists, unchanged`; one holding the
  same note changed since (a version of it this vault's history had at that path, or the note an
  earlier import of the same source wrote there) is left as it is;
  one holding another note keeps it, and the import takes the next free name (`x-2.md`), said in
  a line. tmem's JSON state at its place is never doubled: another content there is left as is.
- a file every new vault has (the vault template's: the profile, contacts, tmem's JSON state...)
  is one file in both vaults, grown from the template's text: still the template's bytes here, the
  export's replaces it; changed on both sides, the two merge as a sync merges them, the template
  their common version, unless something was changed both ways (then the vault's is left as is).
"""

from __future__ import annotations

__all__ = ["WholeNotes", "blob_id"]

import hashlib
import os
from collections.abc import Iterable

from tiered_memory.app import sealed
from tiered_memory.app.api.portability import ImportedItem
from tiered_memory.app.export import note_entry
from tiered_memory.app.importers import tmem
from tiered_memory.app.importers.items import Item
from tiered_memory.app.memory import Memory
from tiered_memory.errors import TmemError
from tiered_memory.model import file_names
from tiered_memory.model import note as notes
from tiered_memory.model.merge3 import merge_note, merge_plain
from tiered_memory.storage.transaction import Transaction
from tiered_memory.storage.vault import template_text

UNCHANGED = "exists, unchanged"
OTHER_CONTENT = "exists with other content (left as it is)"
TEMPLATE_REPLACED = "replaced the new vault's untouched template file"
MERGED = "changed here too: merged with the vault's own, as a sync would"
_PATHS_PER_LOG = 200  # paths named on one `git log` command line


def blob_id(data: bytes, length: int) -> str:
    """The id git gives a blob of `data`, in the repository's hash (`length`: 40 or 64 hex)."""
    algorithm = hashlib.sha256 if length == 64 else hashlib.sha1
    return algorithm(b"blob %d\0" % len(data) + data).hexdigest()


class WholeNotes:
    """Files the note items of one import (see the module docstring)."""

    def __init__(self, memory: Memory, taken: Iterable[str]) -> None:
        """`taken`: the note paths of the import already in the vault before it (the only ones a
        version in git's history can be at)."""
        self.memory = memory
        self.written: dict[str, str] = {}  # id -> path, for the notes this import wrote
        self._sealed: dict[str, str] | None = None
        self._history: dict[str, set[str]] | None = None
        self._taken = list(taken)
        memory.fresh()  # the catalog answers `by_id` for the notes already in the vault

    def file(self, tx: Transaction, key: str, item: Item, before: str | None = None) -> ImportedItem:
        """File one note; `before`: where an earlier import of the same source put it (the
        ledger's word), so a note changed since on either side is that note, left as it is."""
        note = item.note
        assert note is not None
        text = item.text if item.text is not None else notes.render(note)
        explicit = note.meta.get("id") not in (None, "")
        template = template_text(note.path)
        if template is not None and os.path.lexists(self.memory.abspath(note.path)):
            onto = self._onto_template(tx, key, note, text, template, before)
            if onto is not None:
                return onto
        if explicit:
            where = self._path_of(note.id)
            if where is not None:
                why = UNCHANGED if self._holds(tx, self._current(tx, where), note, text) else OTHER_CONTENT
                return ImportedItem(key, "skipped", note.title, where, why)
        path = note.path
        taken = os.path.lexists(self.memory.abspath(path))
        if taken:
            current = self._current(tx, path)
            if self._holds(tx, current, note, text):
                return ImportedItem(key, "skipped", note.title, path, UNCHANGED)
            # The same note, changed since: tmem's JSON state at its place, a note with the same
            # `id:`, the one an earlier import of this source wrote there, a version of it git had there.
            same_id = explicit and current is not None and notes.parse(current, path).id == note.id
            if note.is_json or same_id or path == before or self._had(path, text):
                return ImportedItem(key, "skipped", note.title, path, OTHER_CONTENT)
        written = notes.parse(text, path) if item.text is not None else note
        # A note the vault's rules encrypt is sealed under a name made from its id, never its own.
        seal = tx.seals(written)
        final = tx.create_note(written) if seal else tx.bring_back(path, text)
        if explicit:
            self.written[note.id] = final
        why = ""
        if final != path and not seal:
            why = file_names.why_renamed(path, taken=taken)
            self.memory.warn(f"{why}; imported as {final}")
            why = why.split(": ", 1)[1]
        return ImportedItem(key, "added", written.title, final, why)

    def _onto_template(
        self, tx: Transaction, key: str, note: notes.Note, text: str, template: str, before: str | None
    ) -> ImportedItem | None:
        """A file every new vault has (the profile, tmem's JSON state...) both here and in the
        export: both grew from the template's text. Untouched here, the export's takes its place;
        changed on both sides, they merge as a sync would, with the template as their common
        version, when nothing was changed both ways; else the vault's is left as it is. None: the
        export's file is another note than the template's (another `id:`), filed as any note."""
        path = note.path
        current = self._current(tx, path)
        if current is None:
            return None
        if not note.is_json:
            ids = {notes.parse(t, path).meta.get("id") for t in (template, current)}
            if ids != {note.meta.get("id")}:
                return None
        if self._holds(tx, current, note, text):
            return ImportedItem(key, "skipped", note.title, path, UNCHANGED)
        if current == template:
            self._write(tx, path, text)
            return ImportedItem(key, "updated", note.title, path, TEMPLATE_REPLACED)
        if path == before or self._had(path, text):
            # An earlier version of this very file (this vault's own export, an earlier import):
            # merging it would bring back what was removed since.
            return ImportedItem(key, "skipped", note.title, path, OTHER_CONTENT)
        if note.is_json:
            data = merge_plain(template.encode("utf-8"), current.encode("utf-8"), text.encode("utf-8"), path)
            merged = data.decode("utf-8") if data is not None else None
        else:
            result = merge_note(template, current, text, path)
            merged = None if result.conflict else result.text
        if merged is None:
            return ImportedItem(key, "skipped", note.title, path, OTHER_CONTENT)
        if merged == current:
            return ImportedItem(key, "skipped", note.title, path, UNCHANGED)
        self._write(tx, path, merged)
        return ImportedItem(key, "merged", note.title, path, MERGED)

    @staticmethod
    def _write(tx: Transaction, path: str, text: str) -> None:
        """Replace a file read in this unit of work: a note through its rules (redacted, sealed
        when the vault encrypts it), tmem's JSON state as text."""
        written = notes.parse(text, path)
        if written.is_json:
            tx.write_text(path, text)
        else:
            tx.write_note(written, text=text)

    def _path_of(self, note_id: str) -> str | None:
        """Where the note with this id is: written by this import, in the catalog, or encrypted
        (known to the catalog by path only, its id found while unlocked: an export made before it
        was encrypted must not bring it back beside itself in plain text)."""
        if note_id in self.written:
            return self.written[note_id]
        rows = self.memory.by_id(note_id)
        if rows:
            return rows[0].path
        if self._sealed is None:
            self._sealed = {n.id: n.path for n in sealed.read_all(self.memory)}
        return self._sealed.get(note_id)

    @staticmethod
    def _current(tx: Transaction, rel: str) -> str | None:
        """The text of the file at `rel`; None for a folder, a link, a file tmem cannot read."""
        try:
            return tx.read_text(rel)
        except (TmemError, OSError, UnicodeDecodeError):
            return None

    @staticmethod
    def _holds(tx: Transaction, current_text: str | None, note: notes.Note, text: str) -> bool:
        """Whether a file's text holds this note: the same text, or what an export of it would
        carry: redacted (a secret in the vault's note is a marker in its export), and, for an
        older export without `head`, its values turned into JSON (a date into text)."""
        if current_text is None:
            return False
        if current_text == text:
            return True
        redact = tx.redact or _unchanged
        current = notes.parse(current_text, note.path)
        head = current_text[: len(current_text) - len(current.body)]
        if tmem.text_of(note_entry(current, redact, head=head)) == text:
            return True
        wanted = notes.render(note)
        if notes.render(current) == wanted:
            return True
        return notes.render(tmem.note_of(note_entry(current, redact))) == wanted

    def _had(self, rel: str, text: str) -> bool:
        """Whether this vault's history had `text` at `rel`: an earlier (or other) version of the
        note there, not another note that happens to have its name."""
        if self._history is None:
            self._history = self._versions(self._taken)
        found = self._history.get(rel)
        if not found:
            return False
        data = text.encode("utf-8")
        return any(blob_id(data, length) in found for length in {len(b) for b in found})

    def _versions(self, paths: list[str]) -> dict[str, set[str]]:
        """The blob ids each of `paths` has had in the current branch's history."""
        versions: dict[str, set[str]] = {}
        git = self.memory.vault.git
        for start in range(0, len(paths), _PATHS_PER_LOG):
            chunk = paths[start : start + _PATHS_PER_LOG]
            out = git.run(
                "log", "-z", "--format=", "--raw", "--no-abbrev", "--no-renames", "--", *chunk, check=False
            )
            # -z: each change is ":<modes> <old blob> <new blob> <status>" NUL path NUL.
            fields = out.stdout.split("\0")
            for meta, rel in zip(fields, fields[1:], strict=False):
                parts = meta.strip().split()
                if len(parts) >= 4 and parts[0].startswith(":"):
                    versions.setdefault(rel, set()).update(b for b in parts[2:4] if b.strip("0"))
        return versions


def _unchanged(text: str) -> str:
    return text
