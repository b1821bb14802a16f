"""Which notes may leave the machine, and what a sealed note is called outside its envelope.
Pure: no I/O.

Embedding a note with a remote API (provider `openai`) sends its text to a third party. Notes
under `privacy.excluded_paths` (globs) or marked `sensitive: true` never are: they get no vector
and stay keyword-searchable. Local embedders see everything; nothing leaves the machine there.
Which embedders are remote is `index.embeddings.is_remote_embedder`.

A sealed (encrypted) note is known outside its envelope only by its id: commit messages, logs,
the daemon's heartbeat, maintenance reports and errors name it by `sealed_name`, never by its
title. Which notes are sealed is decided in storage (`storage.sealing`), from the rules and the
bytes on disk.
"""

from __future__ import annotations

__all__ = [
    "SEALED",
    "keep_local",
    "path_excluded",
    "public_name",
    "scrub",
    "sealed_name",
    "secrets",
    "tells",
    "withheld",
]

import fnmatch
import functools
import re
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath

from tiered_memory.model import layout
from tiered_memory.model import note as notes


def path_excluded(rel: str, globs: Sequence[str]) -> bool:
    """`rel` (vault-relative) matches one of the globs, given from the vault root or from memory/.

    `*` matches across folders (fnmatch), so `memory/long-term/relationships/**` and
    `long-term/relationships/*` both cover every note in that folder; a plain folder name covers
    what is inside it.
    """
    union, folders = _matcher(tuple(globs))
    if union is None:
        return False
    inner = rel.removeprefix(layout.MEMORY_DIR + "/")
    return any(union.match(c) is not None or c.startswith(folders) for c in (rel, inner))


@functools.lru_cache(maxsize=64)
def _matcher(globs: tuple[str, ...]) -> tuple[re.Pattern[str] | None, tuple[str, ...]]:
    """One regex for a list of globs (fnmatch's, joined), and the folders they name: asked of
    every note a scan, a seal or an embedding pass meets, a list of a hundred globs matched one
    `fnmatch` at a time cost a quarter of a millisecond a note."""
    patterns = list(dict.fromkeys(p.strip().lstrip("/") for p in globs if p.strip().lstrip("/")))
    if not patterns:
        return None, ()
    union = re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))
    return union, tuple(p.rstrip("/") + "/" for p in patterns)


def keep_local(note: notes.Note, globs: Sequence[str]) -> bool:
    """True for notes whose text must not be sent to a remote API."""
    return note.sensitive or path_excluded(note.path, globs)


# A sealed note whose id and file name both tell its title (an older note whose id was made from
# it, a file a person named) is called this.
SEALED = "[encrypted note]"
_MIN_SECRET = 3  # shorter titles would replace pieces of unrelated words


def _words(text: str) -> set[str]:
    return {w for w in notes.slugify(text, 10_000).split("-") if len(w) >= _MIN_SECRET or not w.isascii()}


def tells(name: str, title: str) -> bool:
    """Whether `name` (an id, a file name) carries a word of `title`."""
    flat = notes.slugify(name, 10_000)
    return any(word in flat for word in _words(title))


def _hidden(note: notes.Note) -> list[str]:
    """What of a sealed note's naming only its envelope may show: its title (unless the title is
    just the file's name, which git's tree shows anyway) and its first heading."""
    stem = PurePosixPath(note.path).stem
    return [t for t in (note.title.strip(), note.heading.strip()) if t and t != stem]


def sealed_name(note: notes.Note) -> str:
    """What a sealed note (decrypted) is called outside its envelope: its id, or else its file's
    name when the id was made from the title, or else SEALED."""
    hidden = " ".join(_hidden(note))
    for name in (note.id, PurePosixPath(note.path).stem):
        if name and not tells(name, hidden):
            return name
    return SEALED


def public_name(note: notes.Note, sealed: bool) -> str:
    """The note's title, or for a sealed note the name it goes by (`sealed_name`)."""
    return sealed_name(note) if sealed else note.title


def secrets(note: notes.Note) -> dict[str, str]:
    """What must not appear outside a sealed note's envelope, each with the name to say instead:
    its title, and its id when the id tells the title."""
    name = sealed_name(note)
    hidden = _hidden(note)
    out = {text: name for text in hidden if len(text) >= _MIN_SECRET and text != name}
    if note.id != name and tells(note.id, " ".join(hidden)):
        out[note.id] = name
    return out


def scrub(text: str, names: Mapping[str, str]) -> str:
    """`text` with every secret of `names` (see `secrets`) replaced by the name to say instead:
    whole words only, case-insensitively, the longest first."""
    wanted = {k.casefold(): v for k, v in names.items() if len(k) >= _MIN_SECRET}
    if not wanted or not text:
        return text
    pattern = "|".join(re.escape(k) for k in sorted(wanted, key=len, reverse=True))
    found = re.compile(rf"(?<!\w)(?:{pattern})(?!\w)", re.IGNORECASE)
    return found.sub(lambda m: wanted.get(m.group(0).casefold(), SEALED), text)


def withheld(path: str, sensitive: bool, encrypt: str, encrypted_paths: Sequence[str]) -> bool:
    """Whether a note stays out of what tmem hands over (an export, an agent's context block)
    unless `--include-sensitive` asks for it: a note marked sensitive, or one the vault seals
    because of where it is (`privacy.encrypt: sensitive` and `privacy.encrypted_paths`), whether
    or not it is stored encrypted yet. One rule for every door that hands notes over."""
    if sensitive:
        return True
    return encrypt == "sensitive" and not path.endswith(".json") and path_excluded(path, encrypted_paths)
