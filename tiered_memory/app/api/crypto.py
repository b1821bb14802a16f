"""Encryption at rest: unlock (the key, held in the daemon's memory), lock, encrypt and decrypt a
note, rekey, and git's textconv for `git diff` of encrypted notes. See docs/encryption.md."""

from __future__ import annotations

__all__ = [
    "CryptRequest",
    "CryptResult",
    "DECRYPT",
    "ENCRYPT",
    "LOCK",
    "Locked_",
    "REKEY",
    "RekeyRequest",
    "RekeyResult",
    "SAVE_TEXT",
    "SaveTextRequest",
    "SavedText",
    "TEXTCONV",
    "TextconvRequest",
    "TextconvResult",
    "UNLOCK",
    "UnlockRequest",
    "UnlockResult",
]

from dataclasses import dataclass, field

from tiered_memory.app.api import Empty, Op
from tiered_memory.model.records import Record


@dataclass
class UnlockRequest(Record):
    passphrase: str
    new: bool = False  # set up encryption with this passphrase (first time)
    keyring: bool = False  # also keep the derived key in the OS keyring


@dataclass
class UnlockResult(Record):
    key_id: str
    created: bool = False
    keyring: bool = False
    encrypted: int = 0  # encrypted notes now readable and searchable
    commit: str | None = None


@dataclass
class Locked_(Record):  # noqa: N801 - `Locked` is the error
    forgotten: bool


@dataclass
class CryptRequest(Record):
    """`tmem encrypt` / `tmem decrypt`: one note by id or path, or (`all`) every note the privacy
    rules name."""

    ref: str = ""
    all: bool = False


@dataclass
class CryptResult(Record):
    changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    commit: str | None = None
    # `encrypt --all`: notes the rules encrypt that were left plain, with why (others link to
    # them by name, and the encrypted note's new name would break those links).
    skipped: dict[str, str] = field(default_factory=dict)


@dataclass
class RekeyRequest(Record):
    passphrase: str


@dataclass
class RekeyResult(Record):
    key_id: str
    resealed: int
    commit: str | None = None


@dataclass
class TextconvRequest(Record):
    text: str


@dataclass
class TextconvResult(Record):
    text: str
    decrypted: bool


@dataclass
class SaveTextRequest(Record):
    """A note's new text, edited outside the vault (`tmem edit`). `base`: the text the edit started
    from, so a change made meanwhile (an agent's update) is merged in, not lost."""

    path: str
    text: str
    base: str | None = None


@dataclass
class SavedText(Record):
    path: str
    commit: str | None = None
    conflict: bool = False  # changed meanwhile on the same lines: both kept, `conflict: true`
    encrypted: bool = False  # stored encrypted


UNLOCK = Op("unlock", UnlockRequest, UnlockResult, runs="tiered_memory.app.encryption:unlock", writes=True)
LOCK = Op("lock", Empty, Locked_, runs="tiered_memory.app.encryption:lock")
ENCRYPT = Op("encrypt", CryptRequest, CryptResult, runs="tiered_memory.app.encryption:encrypt", writes=True)
DECRYPT = Op("decrypt", CryptRequest, CryptResult, runs="tiered_memory.app.encryption:decrypt", writes=True)
REKEY = Op("rekey", RekeyRequest, RekeyResult, runs="tiered_memory.app.encryption:rekey", writes=True)
# A file's own text as a person wrote it (git's textconv of any note, the save of a note edited by
# hand, and the text that edit started from) is never refused for its size.
TEXTCONV = Op(
    "textconv",
    TextconvRequest,
    TextconvResult,
    runs="tiered_memory.app.encryption:textconv",
    unbounded=("text",),
)
SAVE_TEXT = Op(
    "save_text",
    SaveTextRequest,
    SavedText,
    runs="tiered_memory.app.encryption:save_text",
    writes=True,
    unbounded=("text", "base"),
)
