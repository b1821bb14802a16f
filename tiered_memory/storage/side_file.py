"""Derived side files under `.tmem/` (a freshness scan's mark, cached recall counts): written whole
through a rename, with no lock and no fsync. A reader sees the old file or the new one, never half
of one; a file lost in a power cut, or a `.tmem/` tmem may not write to, costs only the work the
file would have saved."""

from __future__ import annotations

__all__ = ["replace"]

import contextlib
import os
import threading
from pathlib import Path


def replace(path: Path, text: str) -> bool:
    """Write `text` as `path`; False when it could not be written (nothing is left behind)."""
    part = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.part")  # one per writer
    try:
        part.write_text(text, encoding="utf-8")
        os.replace(part, path)
        return True
    except OSError:
        with contextlib.suppress(OSError):
            part.unlink()
        return False
