"""LazyPattern: the same answers as the compiled pattern, compiled on first use only."""

from __future__ import annotations

import re

import pytest

from tiered_memory.model.lazy_re import LazyPattern


def test_nothing_is_compiled_until_first_use() -> None:
    lazy = LazyPattern(r"(?P<word>[a-z]+)\d")
    assert lazy._compiled is None and lazy.pattern == r"(?P<word>[a-z]+)\d"
    assert lazy.search("--ab1--") is not None
    assert lazy._compiled is lazy.compiled()  # compiled once, then kept


@pytest.mark.parametrize("flags", [0, re.IGNORECASE | re.MULTILINE])
def test_every_method_answers_as_the_compiled_pattern(flags: int) -> None:
    source = r"^(?P<word>[a-z]+)(\d)?"
    lazy, real = LazyPattern(source, flags), re.compile(source, flags)
    text = "abc1 def\nGhi2 jkl3\nxyz"
    for pos, endpos in ((0, len(text)), (4, 12), (9, len(text))):
        for method in ("search", "match", "fullmatch"):
            got, want = getattr(lazy, method)(text, pos, endpos), getattr(real, method)(text, pos, endpos)
            assert (got and got.group(0)) == (want and want.group(0)), (method, pos, endpos)
        assert [m.span() for m in lazy.finditer(text, pos, endpos)] == [
            m.span() for m in real.finditer(text, pos, endpos)
        ]
        assert lazy.findall(text, pos, endpos) == real.findall(text, pos, endpos)
    assert lazy.sub(lambda m: m.group("word").upper(), text, 1) == real.sub(
        lambda m: m.group("word").upper(), text, 1
    )
    assert lazy.split(text) == real.split(text)


def test_bytes_patterns_work_too() -> None:
    lazy = LazyPattern(rb"bearer[ \t]+(\w{4,})")
    found = lazy.search(b"authorization: bearer abcd1234")
    assert found is not None and found.group(1) == b"abcd1234"
