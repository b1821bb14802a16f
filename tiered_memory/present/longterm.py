"""The profile and notes filed in long-term memory, as text."""

from __future__ import annotations

__all__ = ["fact_text", "filed_text", "profile_text"]

from tiered_memory.app.api.longterm import Profile
from tiered_memory.app.api.notes import NoteView


def filed_text(view: NoteView) -> str:
    return f"remembered {view.id}  ({view.path})"


def profile_text(profile: Profile) -> str:
    return profile.body.strip() or "the profile is empty"


def fact_text(profile: Profile, key: str, value: str) -> str:
    """The fact as the profile now holds it (its key's spelling may differ in case)."""
    return f"{key}: {profile.facts.get(key, value)}"
