"""Which notes are sealed (stored encrypted), and the names they go by outside their envelope.

One place for everything that names a note where its text must not go (commit messages, the
daemon's log and heartbeat, the maintenance report, errors): `label` is a plain note's title and
a sealed note's id (`model.privacy.sealed_name`). `secrets_of` tells, from a file's bytes, what a
sealed note must never have outside its envelope; the unit of work takes a last look at every
commit message with it (`Transaction.commit`), since messages are often built before the writes.

A note is sealed when the privacy rules say so (`model.envelope.should_encrypt`) or when it is an
envelope on disk (the rules may have changed since it was sealed).
"""

from __future__ import annotations

__all__ = ["by_rules", "key_set_up", "label", "may_seal", "might_seal", "on_disk", "sealed", "secrets_of"]

from tiered_memory.errors import TmemError
from tiered_memory.model import envelope, privacy
from tiered_memory.model import note as notes
from tiered_memory.storage import crypto
from tiered_memory.storage.vault import Vault

# Words that can make a plain note sealed by its frontmatter (`sensitive: true`, `encrypt: true`).
_FLAGS = (b"sensitive", b"encrypt")


def may_seal(vault: Vault) -> bool:
    """Whether this vault can hold sealed notes at all (a cheap check: no file is read)."""
    return vault.config.privacy.encrypt != "none" or (vault.root / crypto.SETTINGS).is_file()


def key_set_up(vault: Vault) -> bool:
    """Whether a key was ever set up for this vault (`tmem unlock --new`): only then can a note
    be stored encrypted."""
    return (vault.root / crypto.SETTINGS).is_file()


def by_rules(vault: Vault, note: notes.Note) -> bool:
    """Whether the privacy rules store `note` encrypted."""
    rules = vault.config.privacy
    return envelope.should_encrypt(
        note.path, note.sensitive, rules.encrypt, rules.encrypted_paths, note.meta.get("encrypt")
    )


def on_disk(vault: Vault, rel: str) -> bool:
    """Whether the file at `rel` is an envelope (never following a link)."""
    try:
        if vault.is_link(rel):
            return False
        with open(vault.abspath(rel), "rb") as handle:
            return envelope.is_envelope(handle.read(len(envelope.MAGIC)))
    except (OSError, TmemError):
        return False


def sealed(vault: Vault, note: notes.Note) -> bool:
    """Whether `note` (as read, decrypted) is sealed: by the rules, or stored as an envelope."""
    if not may_seal(vault):
        return False
    return by_rules(vault, note) or on_disk(vault, note.path)


def label(vault: Vault, note: notes.Note) -> str:
    """What to call `note` outside its file: its title, or a sealed note's id."""
    return privacy.public_name(note, sealed(vault, note))


def might_seal(vault: Vault, rel: str, data: bytes) -> bool:
    """Whether the rules could seal the plain note whose bytes are `data`: its folder, or a flag
    in its text (`sensitive`, `encrypt`). False spares parsing its YAML."""
    rules = vault.config.privacy
    if rules.encrypt == "none" or not rel.endswith(".md"):
        return False
    return privacy.path_excluded(rel, rules.encrypted_paths) or any(f in data for f in _FLAGS)


def secrets_of(vault: Vault, rel: str, data: bytes) -> dict[str, str]:
    """What the note whose bytes at `rel` are `data` must never have outside its envelope (its
    title, an id that tells it), each with the name to say instead; empty for a plain note, and
    for an envelope while no key is at hand (nothing of it could have been read then)."""
    if not notes.is_note_path(rel) or rel.endswith(".json"):
        return {}
    if envelope.is_envelope(data):
        try:
            if crypto.key_for(vault.root) is None:
                return {}
            text = crypto.decrypt(vault.root, rel, data).decode("utf-8")
        except (TmemError, UnicodeDecodeError):
            return {}
        note = notes.parse(text, rel)
        return privacy.secrets(note) if not note.parse_warning else {}
    if not might_seal(vault, rel, data):
        return {}
    try:
        note = notes.parse(data.decode("utf-8"), rel)
    except UnicodeDecodeError:
        return {}
    return privacy.secrets(note) if by_rules(vault, note) else {}
