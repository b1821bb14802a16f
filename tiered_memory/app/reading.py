"""`read_many`: several notes in one call, each read exactly as `read` reads it (so an encrypted
note is read while the vault is unlocked and is a one-line miss while it is locked), within a
bound on how many and how much."""

from __future__ import annotations

__all__ = ["matching", "read_many"]

from tiered_memory.app import sealed
from tiered_memory.app.api.notes import ReadRequest
from tiered_memory.app.api.reading import (
    MAX_CHARS,
    MAX_NOTES,
    TOTAL_CHARS,
    ReadManyRequest,
    ReadManyResult,
    ReadMiss,
)
from tiered_memory.app.memory import Memory
from tiered_memory.app.notes import read
from tiered_memory.errors import BadInput, TmemError
from tiered_memory.model import layout
from tiered_memory.model.folders import within


def read_many(memory: Memory, request: ReadManyRequest) -> ReadManyResult:
    refs = list(dict.fromkeys(r.strip() for r in request.ids if r and r.strip()))
    pattern = (request.glob or "").strip()
    if not refs and not pattern:
        raise BadInput("nothing to read: give ids (note ids or paths) or a glob")
    if not 1 <= request.limit <= MAX_NOTES:
        raise BadInput(f"limit must be between 1 and {MAX_NOTES}")
    if not 1 <= request.max_chars <= MAX_CHARS:
        raise BadInput(f"max_chars must be between 1 and {MAX_CHARS}")
    if pattern:
        refs += [p for p in matching(memory, pattern) if p not in refs]
    out = ReadManyResult(matched=len(refs))
    total = 0
    for ref in refs:
        if len(out.notes) >= request.limit or total >= TOTAL_CHARS:
            out.omitted += 1
            continue
        try:
            note = read(memory, ReadRequest(ref))
        except TmemError as exc:
            out.missing.append(ReadMiss(ref, " ".join(str(exc).split())))
            continue
        room = min(request.max_chars, TOTAL_CHARS - total)
        if len(note.body) > room:
            note.body = note.body[:room]
            note.end = note.start + note.body.count("\n")
            out.truncated.append(note.path)
        total += len(note.body)
        out.notes.append(note)
    return out


def matching(memory: Memory, pattern: str) -> list[str]:
    """The vault's notes (encrypted ones included) whose path matches the glob, relative to the
    vault or to memory/."""
    if pattern.startswith(("/", "\\")) or ".." in pattern.replace("\\", "/").split("/"):
        raise BadInput(f"glob '{pattern}' must be a path inside the vault (no leading / and no ..)")
    globs = [pattern.replace("\\", "/")]
    memory.fresh()
    paths = sorted({*memory.rows(), *sealed.paths(memory)})
    prefix = layout.MEMORY_DIR + "/"
    return [
        p for p in paths if within(p, globs) or (p.startswith(prefix) and within(p[len(prefix) :], globs))
    ]
