"""Which files of an adopted folder are notes, and which tier each note gets."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_memory.config import Config, ConfigError, parse_config, to_dict
from tiered_memory.model.folders import FolderRules, glob_matcher, glob_regex, within

DEFAULT = FolderRules()


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("Inbox.md", True),
        ("Projects/Survey/plan.markdown", True),
        ("memory/long-term/kafka.md", True),
        ("memory/long-term/state.json", True),  # JSON notes live in the tier folders
        ("data/export.json", False),  # elsewhere JSON is an app's data
        (".obsidian/workspace.json", False),
        (".obsidian/snippets/x.md", False),
        (".trash/old.md", False),
        ("Projects/.hidden/x.md", False),
        ("Drawings/plan.excalidraw.md", False),
        ("Attachments/map.png", False),
        ("README.txt", False),
    ],
)
def test_default_rules(path: str, expected: bool) -> None:
    assert DEFAULT.is_note(path) is expected


def test_include_and_exclude_globs() -> None:
    rules = FolderRules.of(include=["Notes", "memory/**"], exclude=["Notes/Templates", "**/draft-*.md"])
    assert rules.is_note("Notes/a.md")
    assert rules.is_note("Notes/deep/er/a.md")
    assert rules.is_note("memory/long-term/a.md")
    assert not rules.is_note("Other/a.md")
    assert not rules.is_note("Notes/Templates/daily.md")
    assert not rules.is_note("Notes/deep/draft-1.md")


@pytest.mark.parametrize(
    ("glob", "path", "matches"),
    [
        ("*.md", "a.md", True),
        ("*.md", "dir/a.md", False),
        ("**/*.md", "a.md", True),
        ("**/*.md", "x/y/a.md", True),
        ("Daily", "Daily/2026-11-20.md", True),
        ("Daily/", "Daily/x/y.md", True),
        ("Daily", "DailyNotes/x.md", False),
        ("Da?ly/*", "Daily/x.md", True),
        ("a+b (1)", "a+b (1)/x.md", True),
    ],
)
def test_glob_semantics(glob: str, path: str, matches: bool) -> None:
    assert bool(glob_regex(glob).fullmatch(path)) is matches


def test_every_note_gets_a_tier() -> None:
    rules = FolderRules.of(tiers={"Daily/**": "short", "Projects": "mid", "memory/**": "archive"})
    assert rules.tier_of("memory/short-term/x.md") == "short"  # tier folders always win
    assert rules.tier_of("memory/archive/x.md") == "archive"
    assert rules.tier_of("memory/inbox/x.md") == "archive"  # a user folder under memory/
    assert rules.tier_of("Daily/2026-11-20.md") == "short"
    assert rules.tier_of("Projects/Survey/plan.md") == "mid"
    assert rules.tier_of("Inbox.md") == "long"
    assert FolderRules.of(default_tier="mid").tier_of("Inbox.md") == "mid"


def test_unknown_tiers_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown tier"):
        FolderRules.of(tiers={"x": "forever"})
    with pytest.raises(ConfigError, match="folders.tiers.Daily"):
        parse_config({"folders": {"tiers": {"Daily": "forever"}}})


def test_rules_from_the_config() -> None:
    config = parse_config({"folders": {"include": ["Notes"], "tiers": {"Notes/Daily": "short"}}})
    rules = FolderRules.of(**to_dict(config.folders))
    assert rules.is_note("Notes/Daily/x.md") and rules.tier_of("Notes/Daily/x.md") == "short"
    assert FolderRules.of(**to_dict(Config().folders)) == DEFAULT


def _reference_regex(pattern: str) -> re.Pattern[str]:
    """The glob's meaning as a plain translation, wildcard by wildcard (no run made one)."""
    glob = pattern.strip().replace("\\", "/").strip("/")
    out, i = [], 0
    while i < len(glob):
        for token, regex in (("**/", "(?:.*/)?"), ("**", ".*"), ("*", "[^/]*"), ("?", "[^/]")):
            if glob.startswith(token, i):
                out.append(regex)
                i += len(token)
                break
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(out) + "(?:/.*)?", re.DOTALL)


@settings(max_examples=600, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "b", "/", "*", "**", "**/", "?"]), max_size=7).map("".join),
    st.lists(st.sampled_from(["a", "b", "/"]), max_size=9).map("".join),
)
def test_a_glob_means_what_its_plain_translation_means(glob: str, path: str) -> None:
    expected = bool(_reference_regex(glob).fullmatch(path))
    assert bool(glob_matcher(glob).fullmatch(path)) is expected  # a regex, or in steps past two


@pytest.mark.parametrize(
    "glob",
    ["**/" * 30 + "zzz.md", "**/a/" * 12 + "zzz.md", "*a" * 30 + "b", "**a*" * 20 + "b", "a**" * 25 + "b"],
)
def test_a_glob_of_many_wildcards_is_matched_in_bounded_time(glob: str) -> None:
    """A glob comes from tmem.yaml (a pull brings it), `--in` and an agent's `folder`: a regex of
    `**/**/**/**/**/**/**/**/zzz.md` took 2 s on a path of 30 folders, with four more over a minute."""
    rules = FolderRules(include=(glob,), exclude=(glob,), tiers={glob: "short"})
    paths = ["/".join(["a"] * 60) + "/x.md", "a" * 200 + ".md", "/".join(["a" * 20] * 20) + "/b.md"]
    started = time.monotonic()
    for path in paths:
        rules.includes(path)
        rules.tier_of(path)
        within(path, [glob, "Daily/"])
    assert time.monotonic() - started < 2


def test_a_long_tiers_mapping_costs_a_scan_seconds_not_minutes() -> None:
    """`tiers:` comes from tmem.yaml, which a pull brings: with a thousand globs each was made
    again for every file (a cache of 256 thrashed), 149 s for a thousand files."""
    rules = FolderRules(tiers={f"Area{i}/**": "short" for i in range(1000)})
    started = time.monotonic()
    tiers = {rules.tier_of(f"Notes/x{i}.md") for i in range(1000)}
    assert tiers == {"long"} and rules.tier_of("Area999/x.md") == "short"
    assert time.monotonic() - started < 20
