"""Apply the moves the rules plan (or a person asks for) through the vault, and the manual moves.

A moved note keeps its id (a note that had none gets its old default id written down, so
references keep working) and gains `promoted_from`, `moved_at` and `move_reason`, written
format-preserving (model.frontmatter). A hand-written note the rules move on their own keeps its
exact bytes (the catalog follows it to its new path, index.identity). Moves never
overwrite: a name clash gets a suffix. `promote`, `archive` and `restore_from_archive` are one git
commit each whose message says what moved where and why.
"""

from __future__ import annotations

__all__ = [
    "Applied",
    "ApplyResult",
    "TARGETED",
    "apply_moves",
    "archive",
    "digest",
    "file_digest",
    "load_notes",
    "planned",
    "promote",
    "restore_from_archive",
    "tier_name",
]

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tiered_memory.app import sealed
from tiered_memory.app.api.lifecycle import ArchiveRequest, Moved, MoveDone, PromoteRequest
from tiered_memory.app.api.notes import NoteRequest
from tiered_memory.app.memory import Memory
from tiered_memory.app.project_files import sync_registry
from tiered_memory.errors import BadInput, NoteParseError
from tiered_memory.model import layout, tiers
from tiered_memory.model import note as notes
from tiered_memory.model.frontmatter import edit_frontmatter
from tiered_memory.model.tiers import Move, NoteInfo
from tiered_memory.storage.transaction import Transaction
from tiered_memory.storage.vault import Vault

# Moves a person asked for by naming the note; every other kind is the rules' own.
TARGETED = ("promote", "archive", "restore")


@dataclass
class Applied:
    move: Move
    final: str | None  # where the file ended up (a suffix on a clash); None when deleted

    def moved(self) -> Moved:
        return Moved(self.move.note_id, self.move.src, self.final, self.move.kind, self.move.reason)


def planned(move: Move) -> Moved:
    """A move as planned (a dry run): where the rules send the file."""
    return Moved(move.note_id, move.src, move.dst, move.kind, move.reason)


@dataclass
class ApplyResult:
    applied: list[Applied] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    touched: list[str] = field(default_factory=list)  # every path to stage and reindex


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def file_digest(vault: Vault, rel: str) -> str | None:
    try:
        return digest(vault.abspath(rel).read_bytes())
    except OSError:
        return None


def load_notes(vault: Vault) -> tuple[list[notes.Note], dict[str, str]]:
    """Every readable note and the hash of its bytes as read (to notice edits made meanwhile)."""
    found: list[notes.Note] = []
    hashes: dict[str, str] = {}
    for info in vault.iter_files():
        try:
            data = vault.read_bytes(info.path)
        except (OSError, NoteParseError):
            continue
        if b"\x00" in data[:8192]:
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        found.append(vault.parse(text, info.path, info.mtime))
        hashes[info.path] = digest(data)
    return found, hashes


def apply_moves(
    tx: Transaction,
    moves: Iterable[Move],
    now: datetime,
    *,
    expected: Mapping[str, str] | None = None,
    edits: Mapping[str, Mapping[str, Any]] | None = None,
) -> ApplyResult:
    """Move (or, with dst None, delete) each file, inside the caller's unit of work.

    With `expected` (path -> hash when planned), a file that changed since is left alone and
    reported in `skipped`, and so is every other move of its group (one project moves whole).
    `edits` are more frontmatter changes for a moved note (maintenance's merge and decay fields).
    """
    vault = tx.vault
    result = ApplyResult()
    moves = list(moves)
    groups: dict[str, list[Move]] = {}
    for move in moves:
        groups.setdefault(move.group or f"\0{move.src}", []).append(move)
    tracked = _tracked(vault, [m.src for m in moves if m.dst is None])
    for group in groups.values():
        problems = [(m.src, why) for m in group if (why := _changed(vault, m.src, expected))]
        if problems:
            result.skipped.extend(problems)
            if len(group) > 1:
                bad = {p for p, _ in problems}
                result.skipped.extend((m.src, "moves with its project") for m in group if m.src not in bad)
            continue
        for move in group:
            if move.dst is None and move.src not in tracked:
                # Deleting a file git never saw would lose it for good.
                result.skipped.append((move.src, "not committed to git yet, so not deleted"))
                continue
            extra = dict(edits.get(move.src, {})) if edits else {}
            result.applied.append(_apply_one(tx, move, now, extra, result.touched))
    if any(p.startswith(layout.PROJECTS + "/") for p in result.touched):
        changed = sync_registry(tx)
        if changed:
            result.touched.append(changed)
    return result


def _tracked(vault: Vault, paths: list[str]) -> set[str]:
    if not paths:
        return set()
    return vault.git.tracked(paths)


def _changed(vault: Vault, rel: str, expected: Mapping[str, str] | None) -> str | None:
    if not vault.abspath(rel).is_file():
        return "gone before it could be moved"
    if expected is not None and rel in expected and file_digest(vault, rel) != expected[rel]:
        return "changed while maintenance ran; left as it is"
    return None


def _apply_one(
    tx: Transaction, move: Move, now: datetime, extra: dict[str, Any], touched: list[str]
) -> Applied:
    vault = tx.vault
    if move.dst is None:
        tx.remove(move.src)
        touched.append(move.src)
        return Applied(move, None)
    before = vault.abspath(move.src).read_bytes()
    final = tx.move(move.src, move.dst)
    touched.extend([move.src, final])
    _prune_project_folders(vault, move.src)
    if final.endswith((".md", ".markdown")) and notes.is_note_path(final):
        try:
            text = before.decode("utf-8")
        except UnicodeDecodeError:
            return Applied(move, final)
        old = vault.parse(text, move.src)
        if old.parse_warning:
            return Applied(move, final)  # moved as it is; tmem never rewrites what it cannot parse
        if move.kind not in TARGETED and not notes.written_by_tmem(old):
            return Applied(move, final)  # a person's note nobody asked tmem to change: bytes kept
        updates: dict[str, Any] = {
            "promoted_from": move.src,
            "moved_at": now,
            "move_reason": move.reason,
            **move.meta,
            **extra,
        }
        if "id" not in old.meta:
            updates["id"] = old.id  # the default id came from the old path
        # Re-read just before writing: an edit made in the last instant wins over our fields.
        if tx.read_bytes(final) == before:
            tx.write_text(final, edit_frontmatter(text, updates))
    return Applied(move, final)


def _prune_project_folders(vault: Vault, rel: str) -> None:
    """Remove folders a move left empty inside mid-term/projects/, so no ghost project remains."""
    parent = vault.abspath(rel).parent
    stop = vault.abspath(layout.PROJECTS)
    while parent != stop and stop in parent.parents:
        try:
            parent.rmdir()  # only succeeds when empty
        except OSError:
            return
        parent = parent.parent


# ---- moves a person asks for -------------------------------------------------------------------


def tier_name(value: str) -> str:
    name = value.strip().lower().removesuffix("-term")
    if name not in tiers.TIER_ORDER:
        raise BadInput(f"unknown tier '{value}' (one of: mid, long)")
    return name


def _read(memory: Memory, ref: str) -> tuple[str, notes.Note, NoteInfo]:
    rel = sealed.resolve(memory, ref)  # an encrypted note by its id too, while unlocked
    note = memory.read_note(rel)
    return rel, note, NoteInfo.from_note(note)


def _in_tier_folders(rel: str, verb: str) -> None:
    """A note of the person's own folders (an adopted vault's) has the tier its folder is given in
    tmem.yaml; tmem moves only the notes under memory/<tier>/ between tiers."""
    if not rel.startswith(f"{layout.MEMORY_DIR}/"):
        raise BadInput(
            f"{rel} is outside {layout.MEMORY_DIR}/: its tier comes from its folder (folders.tiers in "
            f"tmem.yaml), so it is not {verb} by tmem; move the file yourself"
        )


def _fixed(rel: str, verb: str) -> None:
    if tiers.is_fixed(rel) or _own_project_file(rel):
        raise BadInput(f"{rel} is part of the vault's fixed layout and cannot be {verb} on its own")


def _own_project_file(rel: str) -> bool:
    pid = tiers.project_of_path(rel)
    return pid is not None and rel in {f"{layout.PROJECTS}/{pid}/{n}" for n in layout.PROJECT_FILES}


def _move_one(memory: Memory, move: Move, message: str) -> MoveDone:
    """One move a person asked for, as one unit of work; the message gets the final path."""
    with memory.change(message) as tx:
        result = apply_moves(tx, [move], memory.now())
        if result.skipped:
            path, why = result.skipped[0]
            raise BadInput(f"{path}: {why}")
        done = result.applied[0]
        tx.message = f"{message}\n\n{move.src} -> {done.final}"
    return MoveDone(move.note_id, move.src, done.final, move.kind, move.reason, commit=tx.sha)


def promote(memory: Memory, request: PromoteRequest) -> MoveDone:
    """Move a note up one tier (short -> mid -> long), or straight to `request.to`."""
    to = request.to
    rel, note, info = _read(memory, request.ref)
    _in_tier_folders(rel, "promoted")
    tier = info.tier or ""
    if tier == "archive":
        raise BadInput(f"{rel} is archived; bring it back with `tmem restore-from-archive {info.id}`")
    if tier == "long":
        raise BadInput(f"{rel} is already long-term: there is no tier above it to promote it to")
    target = tier_name(to) if to else ("mid" if tier == "short" else "long")
    if target == "archive":
        raise BadInput("to archive a note use `tmem archive`")
    if tiers.TIER_ORDER[target] <= tiers.TIER_ORDER[tier]:
        raise BadInput(
            f"{rel} is {tier}-term; promote only moves up (short -> mid -> long), not to {target}-term"
        )
    _fixed(rel, "promoted")
    if target == "mid":
        has_project = bool(info.project) and memory.abspath(f"{layout.PROJECTS}/{info.project}").is_dir()
        projects = {info.project: _placeholder(info.project)} if has_project else {}
        dst = tiers.mid_term_path(info, projects)
    else:
        dst = tiers.long_term_path(info)
    move = Move(rel, dst, f"promoted by hand to {target}-term", "promote", info.id)
    return _move_one(memory, move, f"promote: {note.title} ({_dir(tier)} -> {_dir(target)})")


def archive(memory: Memory, request: ArchiveRequest) -> MoveDone:
    """Move a note into the archive (searched last, never deleted); optionally mark it superseded."""
    reason, superseded_by = request.reason, request.superseded_by
    rel, note, info = _read(memory, request.ref)
    _in_tier_folders(rel, "archived")
    if info.tier == "archive":
        raise BadInput(f"{rel} is already archived")
    _fixed(rel, "archived")
    meta: dict[str, Any] = {}
    why = reason.strip() if reason and reason.strip() else "archived by hand"
    if superseded_by:
        successor_rel, successor, _ = _read(memory, superseded_by)
        if successor_rel == rel:
            raise BadInput("a note cannot be superseded by itself")
        meta = {"status": "superseded", "superseded_by": successor.id}
        if not reason:
            why = f"superseded by {successor.id}"
    now = memory.now()
    move = Move(rel, tiers.archive_path(info, now), why, "archive", info.id, meta=meta)
    return _move_one(memory, move, f"archive: {note.title} ({_dir(info.tier or '')} -> archive): {why}")


def restore_from_archive(memory: Memory, request: NoteRequest) -> MoveDone:
    """Bring an archived note back to where it was archived from. Refuses to replace a file."""
    rel, note, info = _read(memory, request.ref)
    if info.tier != "archive":
        raise BadInput(f"{rel} is not archived ({info.tier}-term); nothing to restore")
    origin = note.meta.get("promoted_from")
    dst = tiers.restore_path(info, str(origin) if isinstance(origin, str) else None)
    if memory.abspath(dst).exists():
        raise BadInput(f"cannot restore {rel}: {dst} already exists (rename or archive that file first)")
    meta: dict[str, Any] = {}
    if info.status == "superseded" or info.superseded_by:
        meta = {"status": "active", "superseded_by": None}
    move = Move(rel, dst, "restored from the archive by hand", "restore", info.id, meta=meta)
    tier = notes.tier_of_path(dst) or ""
    return _move_one(memory, move, f"restore-from-archive: {note.title} (archive -> {_dir(tier)})")


def _placeholder(pid: str) -> tiers.ProjectInfo:
    return tiers.ProjectInfo(pid, pid, "active", (), None)


def _dir(tier: str) -> str:
    return layout.TIER_DIRS.get(tier, tier)
