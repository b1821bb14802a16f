"""An update of part of a note's body: append to, prepend to or replace the section under a heading,
or find and replace a literal text a known number of times (`model.sections`).

`app.notes.update` calls these on the body it read through its unit of work, so the edit is made
from the note as the last writer left it and lands in the same one commit as the update's fields.
The text an edit brings is redacted like any other body text.
"""

from __future__ import annotations

__all__ = ["asked", "edited", "wanted"]

from typing import TYPE_CHECKING

from tiered_memory.app.api.notes import UpdateRequest
from tiered_memory.errors import BadInput
from tiered_memory.model import sections

if TYPE_CHECKING:
    from tiered_memory.app.memory import Memory


def wanted(request: UpdateRequest) -> bool:
    """Whether the request asks for a section edit or a find and replace."""
    return any(
        v is not None
        for v in (request.section, request.operation, request.text, request.find, request.replace)
    )


def asked(request: UpdateRequest) -> bool:
    """Whether the request asks for a section edit or a find and replace; BadInput (one line) when
    its changes of the body do not go together."""
    if not wanted(request):
        return False
    if request.body is not None or request.append is not None:
        if request.section is not None:
            raise BadInput(
                "with section, give its text as text and operation append, prepend or replace "
                "(body and append change the whole body)"
            )
        raise BadInput("give one change of the body: body, append, a section edit or find/replace")
    if request.section is not None and request.find is not None:
        raise BadInput("give either a section edit or find/replace, not both")
    if request.find is not None:
        if request.replace is None:
            raise BadInput("find needs replace (the text to put in its place; empty to delete it)")
        if request.operation is not None or request.text is not None:
            raise BadInput("operation and text go with section, not with find/replace")
        if request.count < 1:
            raise BadInput(f"count must be 1 or more (got {request.count})")
        return True
    if request.replace is not None:
        raise BadInput("replace needs find (the text to replace)")
    if request.section is None:
        raise BadInput("operation and text need section: the heading whose text they change")
    operation = request.operation or "append"
    if operation not in sections.OPERATIONS:
        raise BadInput(f"unknown section operation '{operation}' (one of: {', '.join(sections.OPERATIONS)})")
    if request.text is None or (operation != "replace" and not request.text.strip()):
        raise BadInput(f"nothing to {operation}: give the text")
    return True


def edited(memory: Memory, request: UpdateRequest, body: str, rel: str) -> str:
    """`body` (the note `rel`'s) with the request's section edit or find and replace made."""
    try:
        if request.find is not None:
            return sections.replace_text(
                body, request.find, memory.redact(request.replace or ""), request.count
            )
        text = memory.redact(request.text or "")
        return sections.edit_section(body, request.section or "", request.operation or "append", text)
    except BadInput as exc:
        raise BadInput(f"{rel}: {exc}") from None
