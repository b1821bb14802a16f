"""Which notes an unknown reference comes close to."""

from __future__ import annotations

from tiered_memory.model.near_names import near

NOTES = [
    ("recipes-pasta", "recipes/pasta.md", "pasta"),
    ("kafka", "memory/long-term/kafka.md", "Kafka retention"),
    ("menu-pasta", "menu/pasta.md", "Pasta"),
    ("pastafari", "memory/long-term/pastafari.md", "pastafari"),
    ("old-pasta-notes", "memory/long-term/old-pasta-notes.md", "old pasta notes"),
]


def test_an_id_tail_a_file_name_or_a_title() -> None:
    assert near("pasta", NOTES) == ["menu-pasta", "recipes-pasta"]
    assert near("Kafka Retention", NOTES) == ["kafka"]  # the title's words, any case
    assert near("kafka-retention", NOTES) == ["kafka"]
    assert near("KAFKA", NOTES) == ["kafka"]  # the id itself but for case


def test_nothing_close_and_at_most_the_limit() -> None:
    assert near("zanzibar", NOTES) == []
    assert near("  ", NOTES) == []
    many = [(f"m{i}-pasta", f"m{i}/x.md", "x") for i in range(9)]
    assert near("pasta", many) == ["m0-pasta", "m1-pasta", "m2-pasta"]
    assert len(near("pasta", many, limit=5)) == 5


def test_a_name_comes_before_an_id_tail() -> None:
    notes = [("a-pasta", "a/b.md", "b"), ("zz", "z/pasta.md", "zz")]
    assert near("pasta", notes) == ["zz", "a-pasta"]
