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


def test_invisible_characters_inside_a_tag_do_not_hide_it() -> None:
    # A zero-width space, word joiner or soft hyphen shows nothing: the agent reads the tag.
    text = (
        "a <\u200b/tmem-recall> b <\u2060/PROJECT-MEMORY> c </tmem\u00ad-recall> d <\ufeff/\u200dtmem-recall>"
    )
    assert inert(text) == (
        "a &lt;\u200b/tmem-recall> b &lt;\u2060/PROJECT-MEMORY> c &lt;/tmem\u00ad-recall>"
        " d &lt;\ufeff/\u200dtmem-recall>"
    )


def test_bidirectional_overrides_are_shown_as_escapes_and_other_scripts_stay() -> None:
    # An override makes a terminal show the rest of the line reversed ("Trojan Source"); the
    # joiners and marks that Persian, Arabic and emoji sequences need are left as written.
    assert inert("ok \u202egnp.exe\u202c and \u2066x\u2069") == "ok \\u202egnp.exe\\u202c and \\u2066x\\u2069"
    written = "می\u200cخواهم \u200fעברית\u200e 👩\u200d💻"
    assert inert(written) == written
