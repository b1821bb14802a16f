"""The YAML of frontmatter: how tmem reads it (safe, libyaml when built in) and writes it (block
style a person can edit, lists indented the way Obsidian writes them).

PyYAML is imported when a note is first read or written, not when this module is: a command that
only imports the note model (a keyword search over an unchanged vault reads no note) never pays
for it. `yaml` and the two classes are built on first use and kept.
"""

from __future__ import annotations

import functools
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import yaml


class YamlError(ValueError):
    """Frontmatter that is not valid YAML; `line` is the 0-based line of the YAML text, if known."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


@functools.cache
def loader() -> type[yaml.SafeLoader]:
    """SafeLoader (frontmatter is data, never code), libyaml's when PyYAML was built with it: the
    pure-Python scanner was ~40 % of the time spent indexing a note (profiled). Same safe
    constructors and resolvers, so the same values."""
    import yaml

    base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return type("Loader", (base,), {"__doc__": "SafeLoader: frontmatter is data, never code."})


# YAML readers turn these into plain line breaks inside plain, single-quoted and block scalars,
# but PyYAML writes them raw there with allow_unicode: only a double-quoted escape keeps them.
_YAML_BREAKS = ("\x85", "\u2028", "\u2029")


@functools.cache
def dumper() -> type[yaml.SafeDumper]:
    """Block-style YAML a person can edit, lists indented the way Obsidian writes them."""
    import yaml

    class Dumper(yaml.SafeDumper):
        def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
            super().increase_indent(flow, False)

        def ignore_aliases(self, data: object) -> bool:
            # `created` and `updated` often hold the same datetime object; a person should read
            # two timestamps, not `&id001` / `*id001`. Containers keep aliases: a recursive
            # structure someone wrote by hand must stay writable.
            return isinstance(data, (date, datetime)) or bool(super().ignore_aliases(data))

    def represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
        if any(ch in value for ch in _YAML_BREAKS):
            return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, represent_str)
    return Dumper


def load(text: str) -> Any:
    """The value of a YAML text; YamlError when it is not YAML."""
    import yaml

    try:
        return yaml.load(text, Loader=loader())  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise YamlError(str(exc), mark.line if mark is not None else None) from None


def dump(value: Any, *, flow: bool = False) -> str:
    """Block style (`flow`: lists of scalars inline), keys in their order, Unicode as written,
    lines up to 100 characters."""
    import yaml

    return str(
        yaml.dump(
            value,
            Dumper=dumper(),
            sort_keys=False,
            allow_unicode=True,
            default_flow_style=None if flow else False,
            width=100,
        )
    )
