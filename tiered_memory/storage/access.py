"""Search access statistics in a side file, so a search never rewrites a note or makes a commit.

Each search appends one JSON line per hit to `.tmem-access.jsonl` at the vault root (gitignored,
outside the derived `.tmem/` folder so deleting the indexes loses no statistics). `tmem maintain`
folds the counts into tmem's own notes' frontmatter (access_count, last_accessed), and into the
tracked side file `.tmem-stats.json` for hand-written notes (see model.note_stats), then empties it.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from tiered_memory.model import note_stats
from tiered_memory.model.layout import ACCESS_LOG, STATS_FILE


def record(root: Path, ids: Iterable[str], when: datetime) -> None:
    lines = "".join(json.dumps({"id": i, "at": when.isoformat()}) + "\n" for i in ids)
    if not lines:
        return
    # O_APPEND writes of one small buffer do not interleave between processes.
    fd = os.open(root / ACCESS_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, lines.encode("utf-8"))
    finally:
        os.close(fd)


def load(root: Path) -> dict[str, tuple[int, str]]:
    """id -> (accesses not yet folded into the note, last access time as ISO text)."""
    path = root / ACCESS_LOG
    counts: Counter[str] = Counter()
    last: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    for line in text.splitlines():
        try:
            item = json.loads(line)
            note_id, at = str(item["id"]), str(item["at"])
        except (ValueError, KeyError, TypeError):
            continue  # a torn last line after a crash is just skipped
        counts[note_id] += 1
        last[note_id] = max(last.get(note_id, ""), at)
    return {k: (v, last[k]) for k, v in counts.items()}


def counts(root: Path) -> dict[str, int]:
    return {k: v for k, (v, _) in load(root).items()}


def clear(root: Path) -> None:
    try:
        (root / ACCESS_LOG).unlink()
    except FileNotFoundError:
        pass


def stats(root: Path) -> note_stats.Stats:
    """The side bookkeeping of hand-written notes (id -> access_count, confidence, ...)."""
    try:
        return note_stats.loads((root / STATS_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return {}
