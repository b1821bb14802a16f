"""Regular expressions compiled the first time they are used, not when their module is imported.

A module with dozens of patterns costs milliseconds to import for each of them; commands that
import it without running it (a search imports the writing side's modules, which redact) should
not pay that. A `LazyPattern` answers the `re.Pattern` methods the code base uses.
"""

from __future__ import annotations

__all__ = ["LazyPattern"]

import re
import sys
from collections.abc import Callable, Iterator
from typing import Any, AnyStr, Generic


class LazyPattern(Generic[AnyStr]):
    __slots__ = ("_compiled", "flags", "pattern")
    pattern: AnyStr

    def __init__(self, pattern: AnyStr, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags
        self._compiled: re.Pattern[AnyStr] | None = None

    def compiled(self) -> re.Pattern[AnyStr]:
        found = self._compiled
        if found is None:
            found = self._compiled = re.compile(self.pattern, self.flags)
        return found

    def search(self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[AnyStr] | None:
        return self.compiled().search(string, pos, endpos)

    def match(self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[AnyStr] | None:
        return self.compiled().match(string, pos, endpos)

    def fullmatch(self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[AnyStr] | None:
        return self.compiled().fullmatch(string, pos, endpos)

    def finditer(self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[AnyStr]]:
        return self.compiled().finditer(string, pos, endpos)

    def findall(self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize) -> list[Any]:
        return self.compiled().findall(string, pos, endpos)

    def sub(
        self, repl: AnyStr | Callable[[re.Match[AnyStr]], AnyStr], string: AnyStr, count: int = 0
    ) -> AnyStr:
        return self.compiled().sub(repl, string, count)

    def split(self, string: AnyStr, maxsplit: int = 0) -> list[AnyStr | None]:
        return self.compiled().split(string, maxsplit)

    def __repr__(self) -> str:
        return f"LazyPattern({self.pattern!r})"
