"""`tmem export`: notes and sessions as JSON (one document) or JSON Lines (one entry a line).

The document (see docs/export.md):

    {"format": "tmem-export", "version": 1, "exported": "...", "since": null,
     "notes":    [{"kind": "note", "id", "path", "tier", "title", "category", "frontmatter": {...},
                   "head": "---\\n...---\\n", "body": "...", "history": [...]}],
     "sessions": [{"kind": "session", "id", "title", "path", "status", "project", "started",
                   "ended", "summary", "frontmatter": {...}, "messages": [{"role", "content",
                   "timestamp"}]}]}

`head` is the file's text before its body (its frontmatter block as written: comments, quoting,
key order, line endings), so `head + body` is the note's file byte for byte and an import writes
the person's bytes back; `frontmatter` is the same block as JSON values, for other programs.

JSON Lines: a header line (`"kind": "header"`) then one entry a line. Exporting into a file that
holds an earlier export updates it entry by entry (same kind and id: replaced where it stands; new
ones appended; the rest kept), so a session exported again accumulates its new messages instead of
appearing twice. Sensitive notes (and notes stored encrypted) stay out unless asked for, and every
string passes through redaction on the way out.
"""

from __future__ import annotations

__all__ = [
    "Export",
    "FORMAT_NAME",
    "VERSION",
    "export",
    "history",
    "note_entry",
    "on_session_end",
    "parse_export",
    "read_export",
    "session_entry",
    "templates",
]

import io
import itertools
import json
import tempfile
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tiered_memory.app import profiles, sealed
from tiered_memory.app.api.portability import EXPORT_FORMATS, ExportRequest, ExportResult, Writer
from tiered_memory.app.export_file import FORMAT_NAME, ExportFile
from tiered_memory.app.memory import Memory
from tiered_memory.errors import BadInput, TmemError
from tiered_memory.index.indexer import EDITOR_TEMPLATE, TOO_LARGE
from tiered_memory.model import note as notes
from tiered_memory.model import session_format as sn
from tiered_memory.model.privacy import withheld
from tiered_memory.model.records import encode
from tiered_memory.model.redact import redact
from tiered_memory.model.search import Filters
from tiered_memory.storage import crypto, editor_templates, locks
from tiered_memory.storage.vault import atomic_writing

VERSION = 1


def export(memory: Memory, request: ExportRequest) -> ExportResult:
    fmt = request.format.lower()
    if fmt not in EXPORT_FORMATS:
        raise BadInput(f"unknown export format '{request.format}' (one of: {', '.join(EXPORT_FORMATS)})")
    target = None if request.output == "-" else Path(request.output).expanduser()
    earlier = _earlier(target)
    since = request.since
    if request.since_last:
        if earlier is None or not earlier.header.get("exported"):
            raise BadInput(
                f"--since last needs an earlier export at {request.output}: export there once without --since"
            )
        since = datetime.fromisoformat(str(earlier.header["exported"]).replace("Z", "+00:00"))
    rows = memory.list_notes(
        Filters(
            tiers=request.tiers,
            categories=request.categories,
            projects=request.projects,
            entities=profiles.expand_names(memory.vault, request.entities),
            since=since,
        )
    )
    result = ExportResult(output=request.output, format=fmt, since=since)
    too_large = [p for p, why in memory.indexer.catalog.skipped() if why.startswith(TOO_LARGE)]
    if too_large:
        # The index's limit, not the export's: such a note is in no index, so no filter can be
        # asked of it, and an import would refuse the export for it (a note larger than
        # index.max_file_mb). Said, never left out in silence.
        memory.warn(
            f"{len(too_large)} note(s) larger than index.max_file_mb left out ({too_large[0]}"
            f"{', ...' if len(too_large) > 1 else ''}): raise index.max_file_mb to export them"
        )
    # The editor's setting that makes those notes templates goes with them: the importing vault
    # needs it to leave them out of its index too (`importers.tmem.templates_of`).
    folders = list(editor_templates.folders(memory.root)) if _whole_vault(request, since) else []
    fresh = _entries(memory, request, since, [row.path for row in rows if not row.skipped], result)
    _merge_into(memory, target, earlier, fresh, result, templates=folders, stream=request.stream)
    return result


def _earlier(target: Path | None) -> ExportFile | None:
    """The export already at `target`, read through once (every entry's kind and id kept, in
    `known`): one that is not an export refuses the export before anything is written."""
    if target is None or not target.exists():
        return None
    earlier = ExportFile(target)
    earlier.keys()
    return earlier


def _entries(
    memory: Memory, request: ExportRequest, since: datetime | None, paths: list[str], result: ExportResult
) -> Iterator[dict[str, Any]]:
    """The export's entries, one note read at a time (a whole vault is never held at once)."""
    privacy = memory.config.privacy
    redact = _redactor(memory)
    wanted = list(paths)
    if _whole_vault(request, since):
        wanted += templates(memory)
    found: Iterable[tuple[notes.Note, str | None]] = (_read(memory, rel) for rel in wanted)
    if request.include_sensitive:
        # Encrypted notes are read from memory while the vault is unlocked: few, and small.
        held = [(n, None) for n in sealed.read_all(memory) if _wanted(n, request, since)]
        locked = len(sealed.paths(memory)) if crypto.key_for(memory.root) is None else 0
        if locked:
            memory.warn(f"{locked} encrypted note(s) left out: the vault is locked (tmem unlock)")
        result.left_out += locked
        found = itertools.chain(found, held)
    else:
        result.left_out += len(sealed.paths(memory))
    for note, head in found:
        if (
            withheld(note.path, note.sensitive, privacy.encrypt, privacy.encrypted_paths)
            and not request.include_sensitive
        ):
            result.left_out += 1
            continue
        if note.category == "session" and sn.is_session_path(note.path):
            entry = session_entry(note, redact)
            result.sessions += 1
            result.messages += len(entry["messages"])
        else:
            entry = note_entry(note, redact, head=head)
            if request.history:
                entry["history"] = history(memory, note.path)
            result.notes += 1
        yield entry


def _merge_into(
    memory: Memory,
    target: Path | None,
    earlier: ExportFile | None,
    fresh: Iterable[dict[str, Any]],
    result: ExportResult,
    *,
    templates: list[str] | None = None,
    stream: Writer | None = None,
) -> None:
    """The earlier export updated with the fresh entries, written to `target`, else to `stream`
    (the door's stdout), else into the result's text. `templates`: the editor's templates
    folders, named in the header when the export carries their notes. Entries are written one at
    a time (`_write`), so memory stays flat whatever the vault's size, but for the result's text."""
    header = {
        "kind": "header",
        "format": FORMAT_NAME,
        "version": VERSION,
        "exported": memory.now().astimezone(UTC).isoformat().replace("+00:00", "Z"),
        "vault": memory.root.name,
        "since": result.since.isoformat() if result.since else None,
    }
    if templates:
        header["templates"] = templates
    if target is not None:
        with atomic_writing(target) as out:
            _write(out, result, header, earlier, fresh)
    elif stream is not None:
        _write(stream, result, header, earlier, fresh)
    else:
        text = io.StringIO()
        _write(text, result, header, earlier, fresh)
        result.text = text.getvalue()


def _write(
    out: Writer,
    result: ExportResult,
    header: dict[str, Any],
    earlier: ExportFile | None,
    fresh: Iterable[dict[str, Any]],
) -> None:
    """`Export.update` then `Export.render`, a piece at a time: each fresh entry is spooled to an
    unnamed temporary file as it is made (memory holds its kind, id and place there), then the
    export is written with the earlier entries, read from their file one at a time (each replaced
    in place by the fresh one of its kind and id), and the new ones after them. The text is the
    one `Export.render` gives, byte for byte. No size limit: what an export may hold is the
    person's vault, and memory holds one entry at a time."""
    spool = tempfile.TemporaryFile()  # gone with the process, whatever kills it
    with spool:
        where: dict[tuple[Any, Any], tuple[int, int]] = {}
        order: list[tuple[Any, Any]] = []
        for entry in fresh:
            data = json.dumps(entry, ensure_ascii=False).encode("utf-8")
            key = (entry["kind"], entry["id"])
            if key not in where:
                order.append(key)
            where[key] = (spool.tell(), len(data))
            spool.write(data)

        def fetch(key: tuple[Any, Any]) -> dict[str, Any]:
            offset, size = where[key]
            spool.seek(offset)
            found: dict[str, Any] = json.loads(spool.read(size).decode("utf-8"))
            return found

        known = earlier.known if earlier is not None else set()
        result.replaced = sum(1 for key in order if key in known)
        result.appended = len(order) - result.replaced
        result.kept = (earlier.count if earlier is not None else 0) - result.replaced

        def merged(kind: str | None) -> Iterator[dict[str, Any]]:
            for entry in earlier.entries() if earlier is not None else ():
                if kind is None or entry.get("kind") == kind:
                    key = (entry.get("kind"), entry.get("id"))
                    yield fetch(key) if key in where else entry
            for key in order:
                if key not in known and (kind is None or key[0] == kind):
                    yield fetch(key)

        if result.format == "jsonl":
            for entry in itertools.chain([header], merged(None)):
                out.write(json.dumps(entry, ensure_ascii=False) + "\n")
            return
        doc = {k: v for k, v in header.items() if k != "kind"}
        out.write("{")
        for name, value in doc.items():
            out.write(f"\n  {json.dumps(name, ensure_ascii=False)}: {_indented(value, 1)},")
        for i, kind in enumerate(("note", "session")):
            out.write(f'\n  "{kind}s": ')
            opened = False
            for entry in merged(kind):
                out.write(",\n    " if opened else "[\n    ")
                out.write(_indented(entry, 2))
                opened = True
            out.write(("\n  ]" if opened else "[]") + ("," if i == 0 else ""))
        out.write("\n}\n")


def _indented(value: Any, depth: int) -> str:
    """`value` as `json.dumps(..., indent=2)` writes it `depth` levels down in a document."""
    return json.dumps(value, ensure_ascii=False, indent=2).replace("\n", "\n" + "  " * depth)


def on_session_end(memory: Memory, rel: str) -> ExportResult | None:
    """The automatic export when a session ends or is ingested: that session, added to (or updated
    in) the file `export.on_session_end` names, so it accumulates like `tmem export` into the same
    file. Off (None) unless configured; a private session (sensitive or encrypted) is never written.
    A failure is a warning: the session itself is stored already."""
    setting = memory.config.export.on_session_end
    if not setting:
        return None
    target = Path(setting).expanduser()
    target = target if target.is_absolute() else memory.root / target
    fmt = "jsonl" if target.suffix.lower() == ".jsonl" else "json"
    result = ExportResult(output=str(target), format=fmt)
    try:
        # The write lock orders two sessions ending at once: neither loses the other's entry.
        with locks.hold(memory.vault.state_dir, "write", wait=memory.config.git.lock_wait_seconds):
            note = memory.read_note(rel)
            privacy = memory.config.privacy
            if withheld(note.path, note.sensitive, privacy.encrypt, privacy.encrypted_paths):
                result.left_out = 1
                return result
            entry = session_entry(note, _redactor(memory))
            result.sessions, result.messages = 1, len(entry["messages"])
            _merge_into(memory, target, _earlier(target), [entry], result)
    except (TmemError, OSError) as exc:
        memory.warn(f"automatic export to {target} failed: {exc}")
        return None
    return result


def _read(memory: Memory, rel: str) -> tuple[notes.Note, str]:
    """The note at `rel`, and the text its file holds before the body."""
    text = memory.read_text(rel)
    note = memory.vault.parse(text, rel)
    return note, text[: len(text) - len(note.body)]


def templates(memory: Memory) -> list[str]:
    """The notes of the editor's templates folder, which the index leaves out: no memories, but
    the person's files, which a whole-vault export carries so that an import puts them back. Read
    from disk, never indexed. (tmem's own untouched templates stay out: `tmem init` writes them
    in every vault.)"""
    return sorted(p for p, why in memory.indexer.catalog.skipped() if why == EDITOR_TEMPLATE)


def _whole_vault(request: ExportRequest, since: datetime | None) -> bool:
    """Whether the export asks for the whole vault: no filter that a template could not match."""
    return not (request.tiers or request.categories or request.projects or request.entities or since)


def _redactor(memory: Memory) -> Any:
    privacy = memory.config.privacy
    if not privacy.redact:
        return lambda text: text
    return lambda text: redact(text, privacy.sensitive_keywords)[0] if text else text


def _wanted(note: notes.Note, request: ExportRequest, since: datetime | None) -> bool:
    """The export's filters, for encrypted notes (which the catalog does not describe)."""
    if request.tiers and note.tier not in request.tiers:
        return False
    if request.projects and note.project not in request.projects:
        return False
    if request.categories and note.category not in request.categories:
        return False
    if request.entities and not {e.lower() for e in request.entities} & {e.lower() for e in note.entities}:
        return False
    return not (since and note.updated and note.updated < since)


# ---- entries --------------------------------------------------------------------------------------


def _clean(value: Any, redact: Any) -> Any:
    """Frontmatter as JSON values (dates as ISO text), every string redacted."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {str(k): _clean(v, redact) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v, redact) for v in value]
    encoded = encode(value)
    return encoded if isinstance(encoded, bool | int | float | str) or encoded is None else str(encoded)


def note_entry(note: notes.Note, redact: Any, *, head: str | None = None) -> dict[str, Any]:
    """An export's entry for a note; `head`: the text its file holds before the body, as read."""
    entry = {
        "kind": "note",
        "id": note.id,
        "path": note.path,
        "tier": note.tier,
        "title": redact(note.title),
        "category": note.category,
        "frontmatter": _clean(note.meta, redact),
    }
    if head is not None and not note.is_json and redact(head) == head:
        # A secret in the block is left to `frontmatter`, redacted value by value: a marker put
        # into YAML as text could change what the block says.
        entry["head"] = head
    entry["body"] = redact(note.body)
    return entry


def session_entry(note: notes.Note, redact: Any) -> dict[str, Any]:
    session = sn.from_note(note)
    return {
        "kind": "session",
        "id": session.id,
        "title": redact(session.title),
        "path": session.path,
        "status": session.status,
        "project": session.project,
        "started": sn.stamp(session.started) or None,
        "ended": sn.stamp(session.ended) or None,
        "summary": redact(session.summary),
        "frontmatter": _clean(note.meta, redact),
        "messages": [
            {"role": m.role, "content": redact(m.content), "timestamp": sn.stamp(m.timestamp) or None}
            for m in session.messages
        ],
    }


def history(memory: Memory, rel: str) -> list[dict[str, str]]:
    """The note's commits, newest first (following renames)."""
    out = memory.vault.git.run("log", "--follow", "--format=%H%x1f%aI%x1f%s", "--", rel, check=False).stdout
    found = []
    for line in out.splitlines():
        parts = line.split("\x1f")
        if len(parts) == 3:
            found.append({"commit": parts[0], "time": parts[1], "message": parts[2]})
    return found


# ---- the file -------------------------------------------------------------------------------------


class Export:
    """An export file's header and entries, in order."""

    def __init__(self, header: dict[str, Any], entries: list[dict[str, Any]]) -> None:
        self.header = header
        self.entries = entries

    def update(self, fresh: list[dict[str, Any]]) -> tuple[int, int]:
        """Replace entries with the same kind and id where they stand; append the others."""
        where = {(e.get("kind"), e.get("id")): i for i, e in enumerate(self.entries)}
        replaced = appended = 0
        for entry in fresh:
            key = (entry["kind"], entry["id"])
            if key in where:
                self.entries[where[key]] = entry
                replaced += 1
            else:
                where[key] = len(self.entries)
                self.entries.append(entry)
                appended += 1
        return replaced, appended

    def render(self, fmt: str) -> str:
        if fmt == "jsonl":
            lines = [self.header, *self.entries]
            return "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in lines)
        doc = {k: v for k, v in self.header.items() if k != "kind"}
        doc["notes"] = [e for e in self.entries if e.get("kind") == "note"]
        doc["sessions"] = [e for e in self.entries if e.get("kind") == "session"]
        return json.dumps(doc, ensure_ascii=False, indent=2) + "\n"


def parse_export(text: str, name: str = "export") -> Export:
    """A tmem export in either format."""
    stripped = text.lstrip()
    if not stripped:
        raise BadInput(f"{name}: empty file")
    try:
        if stripped.startswith("{") and "\n{" not in stripped.rstrip():
            doc = json.loads(stripped)
            if doc.get("format") == FORMAT_NAME and "notes" in doc:
                header = {
                    "kind": "header",
                    **{k: v for k, v in doc.items() if k not in ("notes", "sessions")},
                }
                entries = [{"kind": "note", **e} | {"kind": "note"} for e in doc.get("notes") or []]
                entries += [{"kind": "session", **e} | {"kind": "session"} for e in doc.get("sessions") or []]
                return Export(header, entries)
        # JSON Lines end at "\n" alone: a note's U+2028 or U+0085, which JSON keeps unescaped,
        # is inside its line (str.splitlines would cut it there).
        lines = [json.loads(line) for line in text.split("\n") if line.strip()]
    except (ValueError, AttributeError, TypeError, RecursionError) as exc:
        raise BadInput(f"{name}: not a tmem export ({exc.__class__.__name__})") from None
    if not lines or not isinstance(lines[0], dict) or lines[0].get("format") != FORMAT_NAME:
        raise BadInput(f"{name}: not a tmem export (no '{FORMAT_NAME}' header)")
    return Export(
        lines[0], [e for e in lines[1:] if isinstance(e, dict) and e.get("kind") in ("note", "session")]
    )


def read_export(path: Path) -> Export:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path}: cannot read it ({exc.__class__.__name__})") from None
    if not text.strip():
        return Export({}, [])
    return parse_export(text, str(path))
