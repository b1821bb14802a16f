"""Text from notes inside the blocks tmem hands an agent (`<project-memory>`, `<tmem-recall>`).
Pure: text in, text out.

A note's words are data to the agent, framed by the block's tags; a note (an agent's, a pulled
one, a web page saved to the vault) may hold those very tags, and a closing one would end the
block there, leaving the rest to read as if the person or the harness had said it. Nor may it
carry characters a terminal acts on (an agent's log shows the hook's output): both are shown
inert, `&lt;/project-memory>` and `\\x1b`. A tag with invisible characters in it (a zero-width
space, a soft hyphen) reads as the tag all the same, so they do not hide one; and the controls
that reorder how a line is shown (bidirectional overrides and isolates, "Trojan Source") are
shown as escapes too, as the terminal would act on them.
"""

from __future__ import annotations

__all__ = ["WRAPPERS", "inert"]

import re

WRAPPERS = ("project-memory", "tmem-recall")  # the tags of the blocks tmem writes into a prompt

# Characters that show nothing: soft hyphen, Arabic letter mark, Mongolian vowel separator, zero-
# width space/joiners and direction marks, word joiner and invisible operators, BOM.
_UNSEEN = "[\u00ad\u061c\u180e\u200b-\u200f\u2060-\u2064\ufeff]"
_INVISIBLE = _UNSEEN + "*"
_GAP = r"(?:\s|" + _UNSEEN + ")*"


def _spelled(tag: str) -> str:
    """`tag` as a pattern that lets invisible characters sit between its letters."""
    return _INVISIBLE.join(re.escape(c) for c in tag)


_TAG = re.compile(
    r"<(?=" + _GAP + "/?" + _GAP + "(?:" + "|".join(map(_spelled, WRAPPERS)) + r")(?![\w-]))",
    re.IGNORECASE,
)
# What a terminal acts on (C0 but tab and newline, DEL, C1), as `cli.edge.printable` shows it, and
# the bidirectional embeddings, overrides and isolates, which reorder the rest of the line.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]|[\u202a-\u202e\u2066-\u2069]")


def inert(text: str) -> str:
    """`text` with the blocks' tags and control characters shown rather than acted on."""
    text = _CONTROLS.sub(lambda m: _escape(m.group()), text)
    return _TAG.sub("&lt;", text)


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
