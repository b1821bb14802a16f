"""The privacy settings that decide what the indexes hold, and which notes a change of them moves.

A note the rules seal because of its folder (`privacy.encrypt: sensitive` and
`privacy.encrypted_paths`) is in no index once a key is set up: its plain text never reaches
`.tmem/`. A note under `privacy.excluded_paths` has no vector while the embedder is a remote API,
and stays keyword-searchable. Both lists are part of the rules text the catalog keeps
(`scan_mark.folder_rules`, `scan_mark.PRIVACY_KEYS`), so a change of either is seen at the next scan, as a new size limit
is; `moves` then names the notes on either side of the change, and only those are read or
embedded again. Pure: no I/O.
"""

from __future__ import annotations

__all__ = ["Moves", "moves", "recorded"]

import json
from collections.abc import Iterable
from typing import Any, NamedTuple

from tiered_memory.config import MAX_GLOBS, PrivacyConfig
from tiered_memory.index.scan_mark import PRIVACY_KEYS as _KEYS
from tiered_memory.model.privacy import path_excluded, withheld


def recorded(rules_text: str | None) -> dict[str, Any]:
    """The privacy settings a rules text (the catalog's) was made with: the defaults when it has
    none, or when it cannot be read."""
    settings = {key: getattr(PrivacyConfig(), key) for key in _KEYS}
    try:
        found = json.loads(rules_text).get("privacy") if rules_text else None
    except (ValueError, AttributeError):
        found = None
    if isinstance(found, dict):
        for key, value in found.items():
            fits = isinstance(value, str) if key == "encrypt" else _globs(value)
            if key in _KEYS and fits:
                settings[key] = value
    return settings


def _globs(value: object) -> bool:
    return isinstance(value, list) and len(value) <= MAX_GLOBS and all(isinstance(g, str) for g in value)


class Moves(NamedTuple):
    """Notes a change of the privacy settings moves: sealed now by their folder (out of the
    indexes) or no longer; kept from a remote embedder now (their vectors go) or no longer."""

    sealed: list[str]
    unsealed: list[str]
    kept_local: list[str]
    sent: list[str]

    def lines(self, sealing: bool, remote: bool) -> list[str]:
        """One line for each kind of move there is: `sealing` when a key is set up (else nothing
        is sealed), `remote` when the embedder sends notes to an API (else no vector moves)."""
        said = []
        if sealing and self.sealed:
            said.append(f"{_notes(self.sealed)} under privacy.encrypted_paths now: out of the indexes")
        if sealing and self.unsealed:
            said.append(f"{_notes(self.unsealed)} no longer under privacy.encrypted_paths: indexed again")
        if remote and self.kept_local:
            said.append(
                f"{_notes(self.kept_local)} under privacy.excluded_paths now: their vectors dropped, "
                "never sent to the embeddings API again"
            )
        if remote and self.sent:
            said.append(
                f"{_notes(self.sent)} no longer under privacy.excluded_paths: embedded by the embeddings API"
            )
        return said


def moves(before: dict[str, Any], after: PrivacyConfig, paths: Iterable[str]) -> Moves:
    """The notes among `paths` on either side of the change from `before` (`recorded`) to
    `after`."""
    sealed: list[str] = []
    unsealed: list[str] = []
    kept_local: list[str] = []
    sent: list[str] = []
    old_sealed, old_excluded = before["encrypted_paths"], before["excluded_paths"]
    for rel in paths:
        was = withheld(rel, False, before["encrypt"], old_sealed)
        now = withheld(rel, False, after.encrypt, after.encrypted_paths)
        if was != now:
            (sealed if now else unsealed).append(rel)
        was = path_excluded(rel, old_excluded)
        now = path_excluded(rel, after.excluded_paths)
        if was != now:
            (kept_local if now else sent).append(rel)
    return Moves(sealed, unsealed, kept_local, sent)


def _notes(paths: list[str]) -> str:
    return "1 note" if len(paths) == 1 else f"{len(paths):,} notes"
