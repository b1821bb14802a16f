"""`tmem unlock`, `lock`, `encrypt`, `decrypt` and `rekey`, as text."""

from __future__ import annotations

__all__ = ["KEY_NOT_KEPT", "crypt_text", "locked_text", "rekeyed_text", "unlocked_text"]

from tiered_memory.app.api.crypto import CryptResult, Locked_, RekeyResult, UnlockResult

KEY_NOT_KEPT = (
    "no daemon is running: the key is forgotten when this command ends (tmem daemon start, then unlock)"
)


def unlocked_text(result: UnlockResult, *, in_daemon: bool) -> str:
    """What unlocking did; `in_daemon`: the daemon holds the key (else this command alone)."""
    held = "the daemon's memory" if in_daemon else "this command's memory only"
    text = f"unlocked (key {result.key_id}, held in {held}); {result.encrypted} encrypted note(s) readable"
    if result.created:
        text = f"encryption set up (key {result.key_id})\n" + text
    return text


def locked_text(done: Locked_) -> str:
    return "locked" if done.forgotten else "was not unlocked"


def crypt_text(verb: str, result: CryptResult) -> str:
    """`encrypt` or `decrypt` (the verb): each note it changed, else that there was nothing to do;
    then each note it left as it was, and why."""
    lines = [f"{verb}ed {p}" for p in result.changed] or [f"nothing to {verb}"]
    lines += [f"not {verb}ed {p}: {why}" for p, why in result.skipped.items()]
    return "\n".join(lines)


def rekeyed_text(result: RekeyResult) -> str:
    return f"new key {result.key_id}: {result.resealed} note(s) sealed again"
