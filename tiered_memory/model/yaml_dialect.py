"""The YAML of frontmatter: how tmem reads it (safe, libyaml when built in) and writes it (block
style a person can edit, lists indented the way Obsidian writes them).

PyYAML is imported when a note is first read or written, not when this module is: a command that
only imports the note model (a keyword search over an unchanged vault reads no note) never pays
for it. `yaml` and the two classes are built on first use and kept.
"""

from __future__ import annotations

__all__ = [
    "MAX_CHARS",
    "MAX_CONFIG_CHARS",
    "MAX_VALUES",
    "YamlError",
    "YamlTooLarge",
    "dump",
    "dumper",
    "load",
    "loader",
]

import functools
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import yaml


# What one YAML text may hold. Aliases let a few hundred bytes stand for billions of values (nine
# nested levels of `&a [*a, *a, ...]`): PyYAML builds each shared value once, but anything that
# walks the result (rendering, JSON, indexing) expands them. The bounds are on the text's length
# and on the number of values it stands for with every alias expanded; a text without aliases
# under MAX_CHARS is far below MAX_VALUES.
MAX_CHARS = 64 * 1024
MAX_VALUES = 100_000
MAX_CONFIG_CHARS = 1024 * 1024  # tmem.yaml


class YamlError(ValueError):
    """Frontmatter that is not valid YAML; `line` is the 0-based line of the YAML text, if known."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


class YamlTooLarge(YamlError):
    """YAML over the bounds (its length, or what its aliases expand to): never built."""

    def __init__(self, message: str) -> None:
        super().__init__(message, None)


@functools.cache
def loader() -> type[yaml.SafeLoader]:
    """SafeLoader (frontmatter is data, never code), libyaml's when PyYAML was built with it: the
    pure-Python scanner was ~40 % of the time spent indexing a note (profiled). Same safe
    constructors and resolvers, so the same values."""
    import yaml

    base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    built: type[yaml.SafeLoader] = type(
        "Loader", (base,), {"__doc__": "SafeLoader: frontmatter is data, never code."}
    )

    def timestamp(self: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
        # A date the calendar has not (`2024-02-30`, `2024-13-45`) matches YAML's pattern, and
        # PyYAML raises on it: one typed by hand stopped every read of the vault. It is text, as
        # Obsidian shows it.
        try:
            return base.construct_yaml_timestamp(self, node)
        except ValueError:
            return self.construct_scalar(node)

    built.add_constructor("tag:yaml.org,2002:timestamp", timestamp)
    return built


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


def load(text: str, *, max_chars: int = MAX_CHARS, max_values: int = MAX_VALUES) -> Any:
    """The value of a YAML text; YamlError when it is not YAML, YamlTooLarge when it is longer
    than `max_chars` or its aliases expand to more than `max_values` values (then nothing of it
    is built)."""
    if len(text) > max_chars:
        raise YamlTooLarge(f"YAML longer than {max_chars // 1024} KiB")
    import yaml

    parser = loader()(text)
    try:
        node = parser.get_single_node()
        if node is None:
            return None
        # Without a `*` there is no alias, and a text under max_chars holds fewer values than that.
        if "*" in text and _expanded_size(node, max_values) > max_values:
            # A long plain list is no alias bomb: said as what it is, with the key that holds it.
            if _size(node) <= max_values:
                raise YamlTooLarge(f"YAML aliases expand to over {max_values:,} values")
            where = _crowded_key(node)
            raise YamlTooLarge(
                f"YAML holds over {max_values:,} values" + (f", most in {where}" if where else "")
            )
        return parser.construct_document(node)
    except YamlError:
        raise
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise YamlError(str(exc), mark.line if mark is not None else None) from None
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        # An explicit tag on a value it cannot build (`!!int abc`, `!!bool maybe`, `!!timestamp x`):
        # PyYAML's constructors raise these rather than a YAMLError.
        raise YamlError(f"a value YAML cannot build ({type(exc).__name__}: {exc})", None) from None
    except RecursionError:  # the pure-Python parser on deep nesting (libyaml stops at 1,000 levels)
        raise YamlError("YAML nested too deeply", None) from None
    finally:
        parser.dispose()


def _size(root: yaml.Node) -> int:
    """How many values the tree holds as written: each node once, aliases not expanded."""
    import yaml

    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            stack.extend(part for pair in node.value for part in pair)
    return len(seen)


def _crowded_key(root: yaml.Node) -> str | None:
    """The key (`privacy.sensitive_keywords`: two levels at most) whose value holds the most
    values: where a text over the bounds is to be trimmed. None when the text is no mapping."""
    import yaml

    path: list[str] = []
    node = root
    for _level in range(2):
        if not isinstance(node, yaml.MappingNode) or not node.value:
            break
        key, node = max(node.value, key=lambda pair: _size(pair[1]))
        if not isinstance(key, yaml.ScalarNode):
            break
        path.append(str(key.value)[:60])
        if not isinstance(node, yaml.MappingNode):
            break
    return ".".join(path) or None


def _expanded_size(root: yaml.Node, limit: int) -> int:
    """How many values the tree stands for with every alias expanded, counted over the shared
    nodes once each (so the count itself stays cheap); stops early once past `limit`. A node
    reached again inside itself (a recursive structure) counts once."""
    import yaml

    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in sizes:
            continue
        if isinstance(node, yaml.SequenceNode):
            children: list[yaml.Node] = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        else:
            sizes[key] = 1
            continue
        if children_done:
            open_nodes.discard(key)
            total = 1 + sum(sizes.get(id(child), 1) for child in children)
            if total > limit:
                return total
            sizes[key] = total
            continue
        if key in open_nodes:  # reached inside itself: the recursion is not expanded
            continue
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in sizes)
    return sizes.get(id(root), 1)


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
