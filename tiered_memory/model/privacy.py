"""Which notes may leave the machine. Pure: no I/O.

Embedding a note with a remote API (provider `openai`) sends its text to a third party. Notes
under `privacy.excluded_paths` (globs) or marked `sensitive: true` never are: they get no vector
and stay keyword-searchable. Local embedders see everything; nothing leaves the machine there.
Which embedders are remote is `index.embeddings.is_remote_embedder`.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

from tiered_memory.model import layout
from tiered_memory.model import note as notes


def path_excluded(rel: str, globs: Sequence[str]) -> bool:
    """`rel` (vault-relative) matches one of the globs, given from the vault root or from memory/.

    `*` matches across folders (fnmatch), so `memory/long-term/relationships/**` and
    `long-term/relationships/*` both cover every note in that folder; a plain folder name covers
    what is inside it.
    """
    inner = rel.removeprefix(layout.MEMORY_DIR + "/")
    for pattern in globs:
        pattern = pattern.strip().lstrip("/")
        if not pattern:
            continue
        folder = pattern.rstrip("/") + "/"
        for candidate in (rel, inner):
            if fnmatch.fnmatchcase(candidate, pattern) or candidate.startswith(folder):
                return True
    return False


def keep_local(note: notes.Note, globs: Sequence[str]) -> bool:
    """True for notes whose text must not be sent to a remote API."""
    return note.sensitive or path_excluded(note.path, globs)


def withheld(path: str, sensitive: bool, encrypt: str, encrypted_paths: Sequence[str]) -> bool:
    """Whether a note stays out of what tmem hands over (an export, an agent's context block)
    unless `--include-sensitive` asks for it: a note marked sensitive, or one the vault seals
    because of where it is (`privacy.encrypt: sensitive` and `privacy.encrypted_paths`), whether
    or not it is stored encrypted yet. One rule for every door that hands notes over."""
    if sensitive:
        return True
    return encrypt == "sensitive" and not path.endswith(".json") and path_excluded(path, encrypted_paths)
