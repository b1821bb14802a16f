"""Clearing the mark of a note a merge kept both versions of (`conflict: true`), once resolved.

Finding such notes is `sync/conflicts.py`: sync marks them while merging. An encrypted note whose
merge had no key has the other machine's version waiting beside it (`<note>.tmem-conflict`); once
unlocked, resolving it first merges that version in (as plaintext, sealed again), so a person sees
an ordinary note conflict and never its ciphertext.
"""

from __future__ import annotations

__all__ = ["HIDDEN_TITLE", "open_conflict", "resolve", "resolve_conflict"]

from tiered_memory.app import sealed
from tiered_memory.app.api.sync import Resolved, ResolveRequest
from tiered_memory.app.memory import Memory
from tiered_memory.errors import BadInput, Tampered
from tiered_memory.model import envelope, sealed_merge
from tiered_memory.model import note as notes
from tiered_memory.model.frontmatter import edit_frontmatter
from tiered_memory.model.merge3 import OURS_MARKER, THEIRS_MARKER, has_markers
from tiered_memory.storage import crypto
from tiered_memory.storage.transaction import Transaction
from tiered_memory.sync.conflicts import line_merged_sides, waiting

HIDDEN_TITLE = "[encrypted note]"


def resolve(memory: Memory, request: ResolveRequest) -> Resolved:
    rel = sealed.resolve(memory, request.ref)
    if request.open:
        return open_conflict(memory, rel)
    return Resolved(rel, resolve_conflict(memory, rel, force=request.force, text=request.text))


def open_conflict(memory: Memory, rel: str) -> Resolved:
    """The note's text to resolve by hand, in plain text so a door can edit it outside the vault.
    An encrypted note's waiting version is merged in first (committed; `conflict: true` and
    markers where both sides changed the same lines)."""
    with memory.change(f"resolve: merged the other machine's version of {rel}") as tx:
        _bring_in(memory, tx, rel)
    return Resolved(rel, tx.sha, memory.read_text(rel))


def resolve_conflict(memory: Memory, rel: str, *, force: bool = False, text: str | None = None) -> str | None:
    """Clear a note's `conflict: true` after a person merged the two versions (in the file, or as
    `text`: an encrypted note edited outside the vault); commit. Returns the sha."""
    with memory.change(f"resolve: {rel}") as tx:
        _bring_in(memory, tx, rel)
        stored_sealed = _is_sealed(memory, rel)
        current = tx.read_text(rel)
        wanted = current if text is None else text
        note = notes.parse(wanted, rel)
        if note.parse_warning:
            raise BadInput(f"{rel}: {note.parse_warning}; not saved")
        if not force and has_markers(note.body):  # whatever their labels say, an older tmem's too
            raise BadInput(
                f"{rel} still has conflict markers ({OURS_MARKER} ... {THEIRS_MARKER}): "
                "keep what you want and delete the markers, or pass --force"
            )
        if note.meta.get("conflict") is not None:
            # Only the mark goes; a note that had no other frontmatter is left with none.
            wanted = edit_frontmatter(wanted, {"conflict": None})
        if wanted != current:
            tx.write_text(rel, wanted, seal=stored_sealed)
        tx.include([rel])
        tx.message = f"resolve: {HIDDEN_TITLE if stored_sealed else note.title}"
    return tx.sha


def _is_sealed(memory: Memory, rel: str) -> bool:
    head = memory.vault.read_bytes(rel)[: len(envelope.MAGIC)]
    return envelope.is_envelope(head)


def _bring_in(memory: Memory, tx: Transaction, rel: str) -> bool:
    """Merge the other machine's version(s) of an encrypted note into it, as plaintext sealed
    again: those waiting in its record (dropped then), or, for an envelope an older tmem merged by
    lines, the two it was made from. False when there is nothing to bring in."""
    vault = memory.vault
    record = sealed_merge.conflict_path(rel)
    if waiting(vault, rel):
        try:
            pending = sealed_merge.unpack(vault.read_bytes(record))
        except sealed_merge.BadRecord as exc:
            raise BadInput(f"{record}: {exc}; fix or delete it by hand") from None
        ours = tx.read_bytes(rel)
    elif (sides := line_merged_sides(vault, rel)) is not None:
        tx.read_bytes(rel)  # the damaged envelope this replaces, read under the lock like any rewrite
        base, ours, theirs = sides
        pending = [sealed_merge.Pending(base, theirs)]
        record = ""
    else:
        return False
    key = crypto.require_key(vault.root, f"{rel} has another machine's encrypted version to merge")
    try:
        merged = sealed_merge.merge_pending(ours, pending, rel, key)
    except (envelope.Tampered, envelope.EnvelopeError) as exc:
        raise Tampered(f"{record or rel}: {exc}; not merged") from None
    data = merged.text.encode("utf-8")
    seal = envelope.is_envelope(data)  # not when the merged note says `encrypt: false`
    plain = envelope.open_envelope(key, rel, data).decode("utf-8") if seal else merged.text
    tx.write_text(rel, plain, seal=seal)
    if record:
        tx.remove(record)
    return True
