"""What `tmem hook user-prompt-submit` adds to a prompt. Its own module: the hook runs on every
prompt, so it loads only the search records."""

from __future__ import annotations

__all__ = ["PASSAGE", "TITLE", "prompt_memories"]

from datetime import UTC, datetime

from tiered_memory.model.agent_text import inert
from tiered_memory.model.obsidian import link_text
from tiered_memory.model.search import Hit

PASSAGE = 300  # characters of each memory's passage added to a prompt
TITLE = 120  # characters of its title (a person's note may have a title of any length)


def prompt_memories(hits: list[Hit]) -> str:
    """One line per memory (title, category, date, id, the passage that matched), in a block the
    agent can tell apart from the person's words."""
    lines = [
        "<tmem-recall>",
        "Memories (tmem) that may bear on this prompt; they may be outdated, so verify before "
        "relying on them (`read` an id for the whole note):",
    ]
    for hit in hits:
        when = datetime.fromtimestamp(hit.updated, UTC).strftime("%Y-%m-%d") if hit.updated else ""
        text, title = _cut(link_text(hit.passage or hit.snippet), PASSAGE), _cut(hit.title, TITLE)
        tags = ", ".join(t for t in (hit.category, when) if t)
        line = f"- {title} [{tags}] (id: {_cut(hit.id, TITLE)})"
        lines.append(inert(f"{line}: {text}" if text and text != title else line))
    lines.append("</tmem-recall>")
    return "\n".join(lines)


def _cut(text: str, most: int) -> str:
    """`text` on one line, cut at a word bound to `most` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= most else flat[: most - 1].rsplit(" ", 1)[0] + "…"
