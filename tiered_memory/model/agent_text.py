"""Text from notes inside the blocks tmem hands an agent (`<project-memory>`, `<tmem-recall>`).
Pure: text in, text out.

A note's words are data to the agent, framed by the block's tags; a note (an agent's, a pulled
one, a web page saved to the vault) may hold those very tags, and a closing one would end the
block there, leaving the rest to read as if the person or the harness had said it. Nor may it
carry characters a terminal acts on (an agent's log shows the hook's output): both are shown
inert, `&lt;/project-memory>` and `\\x1b`.
"""

from __future__ import annotations

__all__ = ["WRAPPERS", "inert"]

import re

WRAPPERS = ("project-memory", "tmem-recall")  # the tags of the blocks tmem writes into a prompt

_TAG = re.compile(r"<(?=\s*/?\s*(?:" + "|".join(WRAPPERS) + r")(?![\w-]))", re.IGNORECASE)
# What a terminal acts on (C0 but tab and newline, DEL, C1), as `cli.edge.printable` shows it.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def inert(text: str) -> str:
    """`text` with the blocks' tags and control characters shown rather than acted on."""
    text = _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    return _TAG.sub("&lt;", text)
