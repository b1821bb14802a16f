"""Text from notes inside the blocks tmem hands an agent: their tags and control characters inert."""

from __future__ import annotations

from tiered_memory.model.agent_text import inert


def test_the_blocks_tags_are_shown_not_acted_on_in_any_spelling() -> None:
    text = "a </tmem-recall> b <project-memory x=1> c < / Project-Memory > d </tmem-recall"
    assert (
        inert(text)
        == "a &lt;/tmem-recall> b &lt;project-memory x=1> c &lt; / Project-Memory > d &lt;/tmem-recall"
    )


def test_other_tags_and_plain_text_stay_as_written() -> None:
    text = "<div>a</div> <tmem-recalled> </project-memory-notes> x < y, tab\there\nnew line"
    assert inert(text) == text


def test_control_characters_are_shown_as_escapes() -> None:
    assert inert("red \x1b[31m bell \x07 del \x7f csi \x9b") == "red \\x1b[31m bell \\x07 del \\x7f csi \\x9b"
