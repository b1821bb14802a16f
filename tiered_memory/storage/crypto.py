"""Keys for encrypted notes: derived from a passphrase with scrypt, or kept in the OS keyring, and
held in this process's memory only (the daemon's, after `tmem unlock`). See docs/encryption.md.

The vault's key settings live in `.tmem-crypto.json` (committed, not secret): the scrypt cost
parameters, the random salt and the key's fingerprint, which tells a wrong passphrase from a right
one before any note is touched. The key itself is never written to disk by tmem.
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_N",
    "DEFAULT_P",
    "DEFAULT_R",
    "KEYRING_SERVICE",
    "KeySettings",
    "LOCKED_NAME",
    "MAX_P",
    "PASSPHRASE_ENV",
    "SCRYPT_MAXMEM",
    "SETTINGS",
    "cached",
    "decrypt",
    "encrypt",
    "forget",
    "is_locked",
    "key_for",
    "keyring_available",
    "keyring_get",
    "keyring_store",
    "load_settings",
    "lock",
    "new_settings",
    "remember",
    "require_key",
    "settings_text",
    "unlock",
    "unlocked",
]

import base64
import hashlib
import json
import os
import threading
from dataclasses import asdict, dataclass
from pathlib import Path

from tiered_memory.errors import BadInput, Locked, Tampered
from tiered_memory.model import envelope
from tiered_memory.model.layout import STATE_DIR

SETTINGS = ".tmem-crypto.json"
PASSPHRASE_ENV = "TMEM_PASSPHRASE"
KEYRING_SERVICE = "tiered-memory"
LOCKED_NAME = "tmem-locked"  # `tmem lock`'s mark (see `_marker`)
# scrypt cost: 2**15 x 8 x 1 takes 32 MB and a noticeable pause per guess, once per unlock (never
# per note).
DEFAULT_N, DEFAULT_R, DEFAULT_P = 2**15, 8, 1
# What scrypt may be asked for: `.tmem-crypto.json` travels with the vault, and settings another
# clone wrote (p = 2**20, say) would keep every unlock, and every process deriving the key,
# computing for hours, or fail inside hashlib. The default is well within these bounds.
SCRYPT_MAXMEM = 256 * 1024 * 1024
MAX_P = 16

_keys: dict[str, bytes] = {}
_lock = threading.Lock()


@dataclass
class KeySettings:
    kdf: str
    n: int
    r: int
    p: int
    salt: str  # base64
    key_id: str  # envelope.key_id of the derived key: detects a wrong passphrase

    def derive(self, passphrase: str) -> bytes:
        if self.kdf != "scrypt":
            raise BadInput(f"{SETTINGS}: unknown kdf '{self.kdf}'")
        return hashlib.scrypt(
            passphrase.encode("utf-8"),
            salt=base64.b64decode(self.salt),
            n=self.n,
            r=self.r,
            p=self.p,
            maxmem=SCRYPT_MAXMEM,
            dklen=envelope.KEY_BYTES,
        )


def new_settings(
    passphrase: str, n: int = DEFAULT_N, r: int = DEFAULT_R, p: int = DEFAULT_P
) -> tuple[KeySettings, bytes]:
    if len(passphrase) < 8:
        raise BadInput("the passphrase must have at least 8 characters")
    settings = KeySettings("scrypt", n, r, p, base64.b64encode(os.urandom(16)).decode("ascii"), "")
    key = settings.derive(passphrase)
    settings.key_id = envelope.key_id(key)
    return settings, key


def settings_text(settings: KeySettings) -> str:
    return json.dumps(asdict(settings), indent=2) + "\n"


def load_settings(root: Path) -> KeySettings | None:
    path = root / SETTINGS
    if not path.is_file():
        return None
    try:
        settings = KeySettings(**json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, TypeError, RecursionError) as exc:
        raise BadInput(f"{SETTINGS}: unreadable ({exc.__class__.__name__})") from None
    problem = _problem(settings)
    if problem is not None:
        raise BadInput(f"{SETTINGS}: {problem}; restore the file from a commit this vault trusts")
    return settings


def _problem(settings: KeySettings) -> str | None:
    """Why `settings` are not scrypt settings tmem derives a key with, else None."""
    n, r, p = settings.n, settings.r, settings.p
    if settings.kdf != "scrypt":
        return f"unknown kdf {settings.kdf!r}"
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in (n, r, p)):
        return "scrypt's n, r and p must be whole numbers of at least 1"
    if n < 2 or n & (n - 1):
        return f"scrypt's n must be a power of 2 (got {n})"
    if p > MAX_P or 128 * r * (n + p + 2) > SCRYPT_MAXMEM:
        return f"scrypt settings n={n}, r={r}, p={p} are past what tmem derives a key with"
    if not isinstance(settings.salt, str) or not isinstance(settings.key_id, str):
        return "the salt and key_id must be text"
    try:
        base64.b64decode(settings.salt, validate=True)
    except ValueError:
        return "the salt is not base64"
    return None


def unlock(root: Path, passphrase: str) -> bytes:
    """`tmem unlock`: derive the vault's key and keep it in this process, ending a `tmem lock`;
    a wrong passphrase is one clear error (and the vault stays locked)."""
    key = _derive(root, passphrase)
    unlocked(root, key)
    return key


def unlocked(root: Path, key: bytes) -> None:
    """A person unlocked the vault with `key`: every key source may serve it again."""
    _marker(root).unlink(missing_ok=True)  # before the key is held: a reader never sees both
    remember(root, key)


def lock(root: Path) -> bool:
    """`tmem lock`: forget the key here and mark the vault locked, so that no process of it (a
    daemon started with $TMEM_PASSPHRASE, an agent's server, git's textconv) holds or derives the
    key again until `unlock`. True when it was not locked already."""
    marker = _marker(root)
    was_locked = marker.is_file()
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("tmem lock: the key is not to be used until `tmem unlock`\n", encoding="utf-8")
    held = forget(root)
    return held or not was_locked


def is_locked(root: Path) -> bool:
    return _marker(root).is_file()


def _marker(root: Path) -> Path:
    """Where `tmem lock` leaves its mark: in the repository's own folder (.git/), which holds only
    this machine's state and which no pulled commit can write or delete (anything in the working
    tree, .tmem/ included, a commit can); .tmem/ for a vault without git."""
    dot_git = root / ".git"
    if dot_git.is_dir():
        return dot_git / LOCKED_NAME
    if dot_git.is_file():  # a linked worktree: `gitdir: PATH`
        try:
            first = dot_git.read_text(encoding="utf-8").splitlines()[0]
        except (OSError, UnicodeDecodeError, IndexError):
            first = ""
        if first.startswith("gitdir:"):
            return (root / first.removeprefix("gitdir:").strip()) / LOCKED_NAME
    return root / STATE_DIR / LOCKED_NAME


def _derive(root: Path, passphrase: str) -> bytes:
    settings = load_settings(root)
    if settings is None:
        raise BadInput("encryption is not set up in this vault (tmem unlock --new sets a passphrase)")
    key = settings.derive(passphrase)
    if envelope.key_id(key) != settings.key_id:
        raise BadInput("wrong passphrase")
    return key


def remember(root: Path, key: bytes) -> None:
    with _lock:
        _keys[str(root.resolve())] = key


def forget(root: Path) -> bool:
    with _lock:
        return _keys.pop(str(root.resolve()), None) is not None


def cached(root: Path) -> bytes | None:
    with _lock:
        return _keys.get(str(root.resolve()))


def key_for(root: Path) -> bytes | None:
    """The vault's key: unlocked in this process, else from $TMEM_PASSPHRASE, else the OS keyring;
    none while `tmem lock` holds (a key this process held is dropped)."""
    if is_locked(root):
        forget(root)
        return None
    key = cached(root)
    if key is not None:
        return key
    passphrase = os.environ.get(PASSPHRASE_ENV)
    if passphrase:
        key = _derive(root, passphrase)
        remember(root, key)
        return key
    settings = load_settings(root)
    if settings is not None:
        stored = keyring_get(settings.key_id)
        if stored is not None and envelope.key_id(stored) == settings.key_id:
            remember(root, stored)
            return stored
    return None


def require_key(root: Path, why: str) -> bytes:
    key = key_for(root)
    if key is None:
        if is_locked(root):
            raise Locked(f"{why}: the vault is locked (`tmem lock`); `tmem unlock` opens it")
        raise Locked(f"{why}: the vault is locked (tmem unlock, or set {PASSPHRASE_ENV})")
    return key


# ---- the OS keyring (optional) --------------------------------------------------------------------


def _keyring() -> object | None:
    try:
        import keyring  # optional: absent or without a usable backend on headless machines
        from keyring.backends import fail
    except ImportError:
        return None
    backend = keyring.get_keyring()
    return None if isinstance(backend, fail.Keyring) else keyring


def keyring_available() -> bool:
    return _keyring() is not None


def keyring_get(key_id: str) -> bytes | None:
    module = _keyring()
    if module is None:
        return None
    try:
        value = module.get_password(KEYRING_SERVICE, key_id)  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - a keyring that fails (locked, D-Bus down) is a missing one
        return None
    return base64.b64decode(value) if value else None


def keyring_store(key: bytes) -> bool:
    module = _keyring()
    if module is None:
        return False
    module.set_password(KEYRING_SERVICE, envelope.key_id(key), base64.b64encode(key).decode("ascii"))  # type: ignore[attr-defined]
    return True


# ---- reading and writing notes --------------------------------------------------------------------


def decrypt(root: Path, rel: str, data: bytes) -> bytes:
    """The plaintext of the envelope stored at `rel`; Locked without a key, Tampered when it fails
    authentication."""
    key = require_key(root, f"{rel} is encrypted")
    try:
        return envelope.open_envelope(key, rel, data)
    except envelope.Tampered as exc:
        raise Tampered(f"{exc}; not shown (tampered or corrupted)") from None
    except envelope.EnvelopeError as exc:
        raise Tampered(f"{rel}: {exc}; not shown") from None


def encrypt(root: Path, rel: str, plaintext: bytes) -> bytes:
    return envelope.seal(require_key(root, f"{rel} must be stored encrypted"), rel, plaintext)
