"""A mark left by the last freshness scan that found the indexes up to date, so that the next scan
can tell the same without loading and comparing every row of the catalog (a third of a keyword
search's time on 10,000 notes, in a process that has just started).

The mark (`.tmem/scan-mark`) holds a digest of what that scan saw (every note's and attachment's
path, mtime and size, in the order the walk met them, and the folder rules), the catalog's
generation (a counter its triggers raise on every change to a note's or an attachment's row) and
the catalog's row count. A scan whose digest and generation both match needs no comparison:
nothing on disk moved, and nothing in the catalog changed, since a scan found the two equal. Any
other case, a missing or damaged mark included, takes the full comparison.

It is written without any lock, by a rename (`storage.side_file`): a mark that is stale can only
fail to match.
"""

from __future__ import annotations

import hashlib
import json
import marshal
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from tiered_memory.config import as_dict
from tiered_memory.storage import side_file, walk
from tiered_memory.storage.walk import Stats

if TYPE_CHECKING:
    from tiered_memory.config import FoldersConfig
    from tiered_memory.model.folders import FolderRules

DIGEST_CHARS = 32  # hex digits of a digest


class Mark(NamedTuple):
    digest: str
    generation: int
    rows: int


class Seen(NamedTuple):
    """What a scan saw on disk: every note's and every attachment's (path -> (mtime, size)), and
    the digest of both with the folder rules."""

    notes: Stats
    attachments: Stats
    digest: str


def look(root: Path, rules: FolderRules, rules_text: str) -> Seen:
    """One stat walk of the vault at `root` (resolved) under the folder rules (`rules_text`:
    the same rules as text, see `folder_rules`)."""
    notes, found = walk.stat_walk(root, rules)
    attachments = {p: st for p, st in found.items() if rules.is_attachment(p)}
    return Seen(notes, attachments, digest(notes, attachments, rules_text))


def folder_rules(folders: FoldersConfig) -> str:
    """The `folders:` settings as text: part of the digest (new rules make a new look), and kept
    in the catalog to tell when notes the new rules leave out must go."""
    return json.dumps(as_dict(folders), sort_keys=True, default=str)


def digest(notes: Stats, attachments: Stats, rules: str) -> str:
    # marshal is C-fast and exact for these dicts of str -> (float, int); ~4 ms at 10,000 notes.
    data = marshal.dumps((notes, attachments, rules))
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
