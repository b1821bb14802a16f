"""Short-term memory: key/value context with time-to-live in `short-term/context_stack.json` and
scratch files in `short-term/temp/`. (Sessions and `current_session.md` belong to `sessions`.)

Expired keys disappear: reads skip them at once, and `expire` (hourly from the daemon, and inside
`tmem maintain`) removes them from the file together with expired temp files, which go to the
archive (never deleted: a temp file git has not seen yet would be lost for good).
"""

from __future__ import annotations

__all__ = [
    "Entry",
    "Expiry",
    "MAX_KEY",
    "MAX_TTL",
    "STACK",
    "TEMP",
    "apply_expiry",
    "clear",
    "expire",
    "get_key",
    "list_keys",
    "parse_ttl",
    "plan_expiry",
    "set_key",
    "st_clear",
    "st_expire",
    "st_get",
    "st_list",
    "st_set",
]

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import PurePosixPath
from typing import Any

from tiered_memory.app.api import Empty
from tiered_memory.app.api.lifecycle import (
    StCleared,
    StClearRequest,
    StEntry,
    StExpired,
    StKeyRequest,
    StList,
    StSetRequest,
)
from tiered_memory.app.lifecycle import apply_moves, file_digest
from tiered_memory.app.memory import Memory
from tiered_memory.errors import BadInput, NoteNotFound, NoteParseError
from tiered_memory.model import dates, layout, tiers
from tiered_memory.model import note as notes
from tiered_memory.model.tiers import Move, NoteInfo
from tiered_memory.storage.transaction import Transaction
from tiered_memory.storage.vault import Vault
from tiered_memory.storage.walk import is_temp_name

STACK = layout.CONTEXT_STACK
TEMP = layout.SHORT_TEMP.rstrip("/")
_TTL = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "": 3600}
MAX_KEY = 200
# The longest time-to-live a key may be given: far beyond any short-term use, and an expiry date
# the calendar can still hold (a TTL of a million days is past the year 9999).
MAX_TTL = timedelta(days=36_500)


def parse_ttl(text: str) -> timedelta | None:
    """'90s', '30m', '2h', '1d', '1w' (a bare number is hours); 'never' or '0' -> None (no expiry)."""
    value = text.strip().lower()
    if value in ("never", "none", "0"):
        return None
    match = _TTL.match(value)
    if not match or float(match.group(1)) <= 0:
        raise BadInput(f"invalid ttl '{text}': use e.g. 90s, 30m, 2h, 1d, 1w, or never")
    seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if seconds > MAX_TTL.total_seconds():  # inf too: timedelta cannot hold it
        raise BadInput(f"invalid ttl '{text}': at most {MAX_TTL.days} days; 'never' keeps a key for good")
    return timedelta(seconds=seconds)


def _check_key(key: str) -> str:
    if not key.strip() or len(key) > MAX_KEY or any(ord(c) < 32 for c in key):
        raise BadInput(f"invalid key {key!r}: 1-{MAX_KEY} characters, no control characters")
    return key


# ---- the key/value store -----------------------------------------------------------------------


@dataclass
class Entry:
    value: Any
    set_at: datetime | None = None
    expires_at: datetime | None = None

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "set_at": self.set_at.isoformat() if self.set_at else None,
            "expires_at": self.expires_at.isoformat() if self.expires_at else None,
        }


def _load(source: Vault | Transaction) -> dict[str, Any]:
    """The stack's keys, read from the vault or, to change them, through the unit of work."""
    try:
        data = json.loads(source.read_bytes(STACK).decode("utf-8") or "{}")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):  # RecursionError: nested deep
        raise NoteParseError(f"{STACK}: not valid JSON; fix it by hand before tmem changes it") from None
    if not isinstance(data, dict):
        raise NoteParseError(f"{STACK}: expected a JSON object of keys; fix it by hand")
    return data


def _entry(raw: Any) -> Entry:
    """A stored entry; a value written by hand without the wrapper never expires."""
    if isinstance(raw, dict) and "value" in raw and set(raw) <= {"value", "set_at", "expires_at"}:
        return Entry(
            raw["value"], dates.to_datetime(raw.get("set_at")), dates.to_datetime(raw.get("expires_at"))
        )
    return Entry(raw)


def _save(tx: Transaction, data: dict[str, Any]) -> None:
    tx.write_json(STACK, data)


def _live(data: dict[str, Any], now: datetime) -> dict[str, Any]:
    return {k: v for k, v in data.items() if not _entry(v).expired(now)}


def set_key(
    memory: Memory, key: str, value: Any, ttl: timedelta | None = None, *, keep: bool = False
) -> Entry:
    """Set a key. `ttl` defaults to lifecycle.short_term_ttl_hours; `keep` means it never expires."""
    _check_key(key)
    now = memory.now()
    if isinstance(value, str):
        value = memory.redact(value)
    if ttl is None and not keep:
        ttl = timedelta(hours=memory.config.lifecycle.short_term_ttl_hours)
    entry = Entry(value, now, None if keep or ttl is None else now + ttl)
    until = f", expires {entry.expires_at:%Y-%m-%d %H:%M}" if entry.expires_at else ""
    with memory.change(f"st set: {key}{until}") as tx:
        data = _live(_load(tx), now)
        data[key] = entry.to_dict()
        _save(tx, data)
    return entry


def get_key(memory: Memory, key: str) -> Any:
    return st_get(memory, StKeyRequest(key)).value


def list_keys(memory: Memory) -> dict[str, Entry]:
    now = memory.now()
    return {k: _entry(v) for k, v in sorted(_live(_load(memory.vault), now).items())}


def clear(memory: Memory, key: str | None = None) -> int:
    """Remove one key, or every key. Returns how many went."""
    with memory.change("st clear") as tx:
        data = _load(tx)
        if key is not None:
            if key not in data:
                raise NoteNotFound(f"no short-term key '{key}'")
            del data[key]
            removed, what = 1, key
        else:
            removed, what = len(data), f"all ({len(data)} keys)"
            data = {}
        if removed:
            _save(tx, data)
            tx.message = f"st clear: {what}"
    return removed


# ---- expiry -----------------------------------------------------------------------------------


@dataclass
class Expiry:
    keys: list[str] = field(default_factory=list)
    temp_moves: list[Move] = field(default_factory=list)
    expected: dict[str, str] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return len(self.keys) + len(self.temp_moves)


def plan_expiry(vault: Vault, now: datetime) -> Expiry:
    plan = Expiry()
    try:
        plan.keys = sorted(k for k, v in _load(vault).items() if _entry(v).expired(now))
    except NoteParseError:
        plan.keys = []
    ttl = timedelta(hours=vault.config.lifecycle.short_term_ttl_hours)
    root = vault.abspath(TEMP)
    taken: set[str] = set()
    for path in sorted(root.rglob("*")) if root.is_dir() else []:
        rel = vault.relpath(path)
        if not path.is_file() or path.name == ".gitkeep" or is_temp_name(path.name):
            continue
        if any(part.startswith(".") for part in PurePosixPath(rel).parts):
            continue
        info = _temp_info(vault, rel, path.stat().st_mtime)
        if info.expires is not None:
            if info.expires > now:
                continue
            reason = f"temp file expired at {info.expires:%Y-%m-%d %H:%M}"
        else:
            since = max(d for d in (info.updated, info.created, info.moved_at) if d is not None)
            if now - since < ttl:
                continue
            reason = f"temp file not updated for {vault.config.lifecycle.short_term_ttl_hours:g} h"
        dst = vault.unique_path(tiers.archive_path(info, now))
        dst = tiers.unique(dst, taken)
        taken.add(dst)
        plan.temp_moves.append(Move(rel, dst, reason, "temp-expired", info.id))
        plan.expected[rel] = file_digest(vault, rel) or ""
    return plan


def _temp_info(vault: Vault, rel: str, mtime: float) -> NoteInfo:
    when = datetime.fromtimestamp(mtime, UTC).replace(microsecond=0)
    if notes.is_note_path(rel):
        try:
            return NoteInfo.from_note(vault.read_note(rel))
        except NoteParseError:
            pass
    return NoteInfo(path=rel, id=PurePosixPath(rel).name, created=when, updated=when)


def apply_expiry(
    tx: Transaction, plan: Expiry, now: datetime
) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    """Remove the planned keys and move the planned temp files, inside the caller's unit of work.

    Returns (paths touched, keys removed, skipped (path, why)).
    """
    touched: list[str] = []
    removed: list[str] = []
    if plan.keys:
        data = _load(tx)
        # Re-checked against the file as it is now: a key set again meanwhile stays.
        removed = [k for k in plan.keys if k in data and _entry(data[k]).expired(now)]
        if removed:
            for key in removed:
                del data[key]
            _save(tx, data)
            touched.append(STACK)
    result = apply_moves(tx, plan.temp_moves, now, expected=plan.expected)
    touched.extend(result.touched)
    return touched, removed, result.skipped


def expire(memory: Memory, *, now: datetime | None = None) -> int:
    """Remove expired keys and archive expired temp files in one commit; returns how many.

    The daemon calls this hourly (daemon.expiry_check_minutes).
    """
    when = now or memory.now()
    plan = plan_expiry(memory.vault, when)
    if not plan.count:
        return 0
    with memory.change("st expire") as tx:
        _touched, removed, skipped = apply_expiry(tx, plan, when)
        moved = len(plan.temp_moves) - len(skipped)
        tx.message = f"st expire: {len(removed)} key(s), {moved} temp file(s) archived"
    return len(removed) + moved


# ---- the operations ---------------------------------------------------------------------------


def _record(key: str, entry: Entry) -> StEntry:
    return StEntry(key, entry.value, entry.set_at, entry.expires_at)


def st_set(memory: Memory, request: StSetRequest) -> StEntry:
    delta = parse_ttl(request.ttl) if request.ttl is not None else None
    keep = request.ttl is not None and delta is None  # "never"
    return _record(request.key, set_key(memory, request.key, request.value, delta, keep=keep))


def st_get(memory: Memory, request: StKeyRequest) -> StEntry:
    now = memory.now()
    raw = _load(memory.vault)
    key = request.key
    if key not in raw or _entry(raw[key]).expired(now):
        raise NoteNotFound(f"no short-term key '{key}'" + (" (it expired)" if key in raw else ""))
    return _record(key, _entry(raw[key]))


def st_list(memory: Memory, request: Empty) -> StList:
    return StList([_record(k, e) for k, e in list_keys(memory).items()])


def st_clear(memory: Memory, request: StClearRequest) -> StCleared:
    return StCleared(clear(memory, request.key))


def st_expire(memory: Memory, request: Empty) -> StExpired:
    return StExpired(expire(memory))
