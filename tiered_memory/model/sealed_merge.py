"""Merging encrypted notes: never their ciphertext, line by line.

With the key, the three versions are opened, their plaintext merges as any note does (field by
field, body by lines, `conflict: true` and markers where both sides changed the same lines) and
the result is sealed again, so markers and the mark exist only inside the envelope.

Without the key nothing can be merged: ours stays in place, untouched and readable, and the other
side's envelope (with the common ancestor's) is kept in a record beside it,
`<note>.md.tmem-conflict`, which `tmem resolve` merges once the vault is unlocked. The record holds
only what git already holds (envelopes, or a version that was committed in plain text).

Pure: bytes and a key in, bytes out.
"""

from __future__ import annotations

__all__ = [
    "BadRecord",
    "CONFLICT_SUFFIX",
    "NoKey",
    "Pending",
    "RECORD_MARK",
    "any_sealed",
    "conflict_path",
    "line_merged",
    "merge_pending",
    "merge_sealed",
    "note_of",
    "pack",
    "unpack",
]

import json
from dataclasses import dataclass
from typing import Any

from tiered_memory.model import envelope
from tiered_memory.model.merge3 import UNLABELLED, MergeResult, Sides, merge_note
from tiered_memory.model.note import parse

CONFLICT_SUFFIX = ".tmem-conflict"
RECORD_MARK = "tmem-sealed-conflict"  # the record's first key: how `status` finds records


class NoKey(Exception):
    """An encrypted note must be merged and this process has no key for it."""


class BadRecord(ValueError):
    """A `.tmem-conflict` record that is not one tmem wrote (changed by hand, or truncated)."""


def any_sealed(*versions: bytes | None) -> bool:
    return any(v is not None and envelope.is_envelope(v) for v in versions)


def _open(key: bytes, data: bytes | None) -> str | None:
    """A version's plaintext: an envelope is opened for the path it was sealed for (authenticated
    with the key), a version stored in plain text is taken as it is."""
    if data is None:
        return None
    if envelope.is_envelope(data):
        data = envelope.open_envelope(key, None, data)
    return data.decode("utf-8")


def merge_sealed(
    base: bytes | None, ours: bytes, theirs: bytes, path: str, key: bytes, sides: Sides = UNLABELLED
) -> MergeResult:
    """Decrypt, merge as a note, seal again for `path` (`text` is the envelope). The result stays
    in plain text only when the merged note itself says `encrypt: false` (a `tmem decrypt` on one
    side). Raises envelope.Tampered / EnvelopeError when a version does not open."""
    plain_base = _open(key, base)
    plain_ours, plain_theirs = _open(key, ours) or "", _open(key, theirs) or ""
    result = merge_note(plain_base, plain_ours, plain_theirs, path, sides)
    if parse(result.text, path).meta.get("encrypt") is False:
        return result
    sealed = envelope.seal(key, path, result.text.encode("utf-8")).decode("ascii")
    return MergeResult(sealed, result.conflict, result.notes)


def line_merged(data: bytes) -> bool:
    """An envelope whose text was merged by lines (by a tmem before this module): git-style
    markers inside it, so it opens no more. Its two sides are still in the merge's parents."""
    return envelope.is_envelope(data) and b"\n<<<<<<< " in data and b"\n>>>>>>> " in data


# ---- the record of a merge that waits for the key -----------------------------------------------


def conflict_path(rel: str) -> str:
    return rel + CONFLICT_SUFFIX


def note_of(record_path: str) -> str:
    return record_path.removesuffix(CONFLICT_SUFFIX)


@dataclass(frozen=True)
class Pending:
    """One other version waiting to be merged into the note: `theirs` and the common ancestor."""

    base: bytes | None
    theirs: bytes


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8")


def pack(path: str, pending: list[Pending]) -> bytes:
    versions = [{"base": _text(p.base), "theirs": _text(p.theirs)} for p in pending]
    record = {RECORD_MARK: 1, "path": path, "versions": versions}
    return (json.dumps(record, indent=2) + "\n").encode("utf-8")


def unpack(data: bytes) -> list[Pending]:
    """The versions a record keeps, oldest first; BadRecord for anything tmem did not write."""
    try:
        record: Any = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise BadRecord("not a tmem conflict record (unreadable JSON)") from None
    if not isinstance(record, dict) or record.get(RECORD_MARK) != 1:
        raise BadRecord("not a tmem conflict record")
    versions = record.get("versions")
    if not isinstance(versions, list) or not versions:
        raise BadRecord("a tmem conflict record without versions")
    out: list[Pending] = []
    for version in versions:
        if not isinstance(version, dict):
            raise BadRecord("a tmem conflict record with a malformed version")
        base, theirs = version.get("base"), version.get("theirs")
        if not isinstance(theirs, str) or not (base is None or isinstance(base, str)):
            raise BadRecord("a tmem conflict record with a malformed version")
        out.append(Pending(None if base is None else base.encode("utf-8"), theirs.encode("utf-8")))
    return out


def merge_pending(ours: bytes, pending: list[Pending], path: str, key: bytes) -> MergeResult:
    """Merge every version a record keeps into ours, oldest first (plaintext in, envelope out)."""
    current = ours
    conflict = False
    remarks: list[str] = []
    for version in pending:
        result = merge_sealed(version.base, current, version.theirs, path, key)
        current = result.text.encode("utf-8")
        conflict = conflict or result.conflict
        remarks += result.notes
    return MergeResult(current.decode("utf-8"), conflict, remarks)
