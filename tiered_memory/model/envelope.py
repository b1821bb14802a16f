"""Encrypted notes on disk: which notes are encrypted, and the envelope they are stored in. Pure:
bytes in, bytes out; the key comes from storage.crypto.

An envelope is text (git diffs, merges and greps treat it as a text file), see docs/encryption.md:

    tmem-encrypted: 1
    cipher: AES-256-GCM
    key: 3f9a1c07d2b4e6f8
    nonce: 9k3hX0b1cQ2mZ8aR
    path: memory/long-term/relationships/alice.md
    <blank line>
    <base64 of ciphertext + 16-byte tag, 76 characters a line>

The associated data is `tmem-encrypted:1:` followed by the note's vault path, so an envelope copied
to another path (or a header edited) fails authentication instead of decrypting as another note.
The `path:` header only names the path it was sealed for, for readers that see the bytes without
their place (git's textconv gets a temporary file); tmem's own reads authenticate against the
path the file really has.
"""

from __future__ import annotations

__all__ = [
    "CIPHER",
    "Envelope",
    "EnvelopeError",
    "KEY_BYTES",
    "LINE",
    "MAGIC",
    "NONCE_BYTES",
    "Tampered",
    "associated_data",
    "decode",
    "encode",
    "is_envelope",
    "is_private",
    "key_id",
    "open_envelope",
    "seal",
    "should_encrypt",
]

import base64
import binascii
import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass

from tiered_memory.model.privacy import path_excluded, withheld

MAGIC = b"tmem-encrypted: 1\n"
CIPHER = "AES-256-GCM"
NONCE_BYTES = 12
KEY_BYTES = 32
LINE = 76


class EnvelopeError(ValueError):
    """Bytes that claim to be an envelope but are not a well-formed one."""


class Tampered(ValueError):
    """An envelope that fails authentication: changed, truncated, moved or under another key."""


@dataclass(frozen=True)
class Envelope:
    key_id: str
    nonce: bytes
    ciphertext: bytes  # with the GCM tag at the end
    path: str = ""


def is_envelope(data: bytes) -> bool:
    return data.startswith(MAGIC)


def associated_data(path: str) -> bytes:
    return b"tmem-encrypted:1:" + path.encode("utf-8")


def key_id(key: bytes) -> str:
    """A short fingerprint naming the key an envelope was sealed with (not secret: a hash of a hash)."""
    return hashlib.blake2b(key, digest_size=8, person=b"tmem-key-id").hexdigest()


def encode(envelope: Envelope) -> bytes:
    body = base64.b64encode(envelope.ciphertext).decode("ascii")
    lines = [body[i : i + LINE] for i in range(0, len(body), LINE)] or [""]
    header = (
        f"cipher: {CIPHER}\nkey: {envelope.key_id}\n"
        f"nonce: {base64.b64encode(envelope.nonce).decode('ascii')}\n"
        f"path: {envelope.path}\n\n"
    )
    return MAGIC + header.encode("utf-8") + ("\n".join(lines) + "\n").encode("ascii")


def decode(data: bytes) -> Envelope:
    if not is_envelope(data):
        raise EnvelopeError("not an encrypted note")
    try:
        head, _, body = data[len(MAGIC) :].partition(b"\n\n")
        fields = dict(line.split(": ", 1) for line in head.decode("utf-8").splitlines())
        if fields.get("cipher") != CIPHER:
            raise EnvelopeError(f"unknown cipher {fields.get('cipher')!r}")
        nonce = base64.b64decode(fields["nonce"], validate=True)
        ciphertext = base64.b64decode(b"".join(body.split()), validate=True)
    except (KeyError, ValueError, UnicodeDecodeError, binascii.Error) as exc:
        if isinstance(exc, EnvelopeError):
            raise
        raise EnvelopeError(f"malformed envelope ({exc.__class__.__name__})") from None
    if len(nonce) != NONCE_BYTES or len(ciphertext) < 16:
        raise EnvelopeError("malformed envelope (nonce or ciphertext too short)")
    return Envelope(fields.get("key", ""), nonce, ciphertext, fields.get("path", ""))


def seal(key: bytes, path: str, plaintext: bytes, nonce: bytes | None = None) -> bytes:
    """Encrypt `plaintext` for `path` with a fresh random nonce (never reused with one key)."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    nonce = nonce if nonce is not None else os.urandom(NONCE_BYTES)
    sealed = AESGCM(key).encrypt(nonce, plaintext, associated_data(path))
    return encode(Envelope(key_id(key), nonce, sealed, path))


def open_envelope(key: bytes, path: str | None, data: bytes) -> bytes:
    """The plaintext of an envelope stored at `path` (None: the path its header names); Tampered
    when it does not authenticate."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    envelope = decode(data)
    path = envelope.path if path is None else path
    try:
        return AESGCM(key).decrypt(envelope.nonce, envelope.ciphertext, associated_data(path))
    except InvalidTag:
        if envelope.key_id and envelope.key_id != key_id(key):
            raise Tampered(f"{path}: sealed with another key ({envelope.key_id})") from None
        raise Tampered(f"{path}: failed authentication (changed, moved or corrupted)") from None


def should_encrypt(
    path: str, sensitive: bool, mode: str, paths: Sequence[str], override: object = None
) -> bool:
    """Whether a note at `path` is stored encrypted under the vault's `privacy.encrypt` mode. A
    note's own `encrypt: true|false` (set by `tmem encrypt` / `tmem decrypt`) overrides the rules."""
    if mode != "sensitive" or path.endswith(".json"):
        return False
    if isinstance(override, bool):
        return override
    return sensitive or path_excluded(path, paths)


def is_private(path: str, sensitive: bool, mode: str, paths: Sequence[str]) -> bool:
    """Notes an export leaves out unless asked: the one rule, `privacy.withheld`."""
    return withheld(path, sensitive, mode, paths)
