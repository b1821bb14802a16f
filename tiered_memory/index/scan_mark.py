"""A mark left by the last freshness scan that found the indexes up to date, so that the next scan
can tell the same without loading and comparing every row of the catalog (a third of a keyword
search's time on 10,000 notes, in a process that has just started).

The mark (`.tmem/scan-mark`) holds a digest of what that scan saw (every note's and attachment's
path, mtime and size, in the order the walk met them, part by part (storage.walk), and the folder
rules), the catalog's generation (a counter its triggers raise on every change to a note's or an
attachment's row) and the catalog's row count. A scan whose digest and generation both match
needs no comparison: nothing on disk moved, and nothing in the catalog changed, since a scan found
the two equal. Any other case, a missing or damaged mark included, takes the full comparison.

It is written without any lock, by a rename (`storage.side_file`): a mark that is stale can only
fail to match.
"""

from __future__ import annotations

__all__ = [
    "DIGEST_CHARS",
    "FILE",
    "Mark",
    "PRIVACY_KEYS",
    "Seen",
    "folder_rules",
    "join",
    "joined_digest",
    "look",
    "part_digest",
    "read",
    "vault_rules",
    "write",
]

import hashlib
import json
import marshal
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from tiered_memory.config import to_dict
from tiered_memory.storage import editor_templates, side_file, walk
from tiered_memory.storage.walk import Stats

if TYPE_CHECKING:
    from tiered_memory.config import FoldersConfig, IndexConfig, PrivacyConfig
    from tiered_memory.model.folders import FolderRules

DIGEST_CHARS = 32  # hex digits of a digest
FILE = "scan-mark"  # under the vault's .tmem/
# The privacy settings that decide what the indexes hold (`index.indexed_privacy`).
PRIVACY_KEYS = ("encrypt", "encrypted_paths", "excluded_paths")


class Mark(NamedTuple):
    digest: str
    generation: int
    rows: int


class Seen(NamedTuple):
    """What a scan saw on disk: every note's and every attachment's (path -> (mtime, size)), and
    the digest of both with the folder rules (or, for one part of a look, of that part alone)."""

    notes: Stats
    attachments: Stats
    digest: str


def look(root: Path, rules: FolderRules, rules_text: str, part: int | None = None) -> Seen:
    """One stat walk of the vault at `root` (resolved) under the folder rules (`rules_text`:
    the same rules as text, see `folder_rules`). With `part` (storage.walk), only that part's
    files, and the digest of that part alone: `join` makes the whole look of all the parts."""
    notes, found = walk.stat_walk(root, rules, part)
    attachments = [{p: st for p, st in f.items() if rules.is_attachment(p)} for f in found]
    parts = [Seen(n, a, part_digest(n, a)) for n, a in zip(notes, attachments, strict=True)]
    return parts[part] if part is not None else join(parts, rules_text)


def join(parts: Sequence[Seen], rules_text: str) -> Seen:
    """The whole look from the looks at each part, in order."""
    notes: Stats = {}
    attachments: Stats = {}
    for seen in parts:
        notes.update(seen.notes)
        attachments.update(seen.attachments)
    return Seen(notes, attachments, joined_digest([seen.digest for seen in parts], rules_text))


def folder_rules(
    folders: FoldersConfig,
    templates: Sequence[str] = (),
    index: IndexConfig | None = None,
    privacy: PrivacyConfig | None = None,
) -> str:
    """Every setting that decides which files are indexed, as text: the `folders:` settings, the
    editor's template folders (`storage.editor_templates`), the `index:` settings (a file
    larger than `index.max_file_mb` is skipped) and the privacy settings that seal a folder or
    keep it from a remote embedder (`index.indexed_privacy`). Part of the digest (new rules make
    a new look), and kept in the catalog to tell when notes the new rules leave out must go, or
    those they let in come back (the templates, a file the size limit skipped, a folder no
    longer sealed)."""
    rules = to_dict(folders)
    # No key for a value left at its default: the text of a vault that sets none stays as it
    # was, so a new version of tmem does not read every note again.
    if templates:
        rules = {**rules, "editor_templates": list(templates)}
    if index is not None and index != type(index)():
        rules = {**rules, "index": to_dict(index)}
    if privacy is not None:
        wanted = {key: getattr(privacy, key) for key in PRIVACY_KEYS}
        if wanted != {key: getattr(type(privacy)(), key) for key in PRIVACY_KEYS}:
            rules = {**rules, "privacy": wanted}
    return json.dumps(rules, sort_keys=True, default=str)


def vault_rules(
    root: Path, folders: FoldersConfig, index: IndexConfig | None = None, privacy: PrivacyConfig | None = None
) -> str:
    """`folder_rules` of the vault at `root`: its `folders:`, its editor's template folders, its
    `index:` settings and its privacy settings."""
    return folder_rules(folders, editor_templates.folders(root), index, privacy)


def part_digest(notes: Stats, attachments: Stats) -> str:
    # marshal is C-fast and exact for these dicts of str -> (float, int).
    # Version 2: from version 3 on, marshal marks objects that have other references, so the same
    # stats would give other bytes once the dicts are shared (joined into a whole look, say).
    return _hex(marshal.dumps((notes, attachments), 2))


def joined_digest(digests: Sequence[str], rules_text: str) -> str:
    """The digest of a whole look: its parts' digests (one per part, in order) and the rules."""
    return _hex("\0".join([rules_text, *digests]).encode())


def _hex(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=DIGEST_CHARS // 2).hexdigest()


def read(path: Path) -> Mark | None:
    try:
        found, generation, rows = path.read_text(encoding="ascii").split()
        return Mark(found, int(generation), int(rows))
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def write(path: Path, mark: Mark) -> None:
    # Not written (a read-only .tmem/): the next scan takes the full comparison, nothing more.
    side_file.replace(path, f"{mark.digest} {mark.generation} {mark.rows}\n")
