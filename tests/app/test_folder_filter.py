"""Searching and listing within folders: a vault with a folder per language (or per project) asks
one folder at a time, by `--folder`, a glob, or a default in tmem.yaml."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from helpers import as_json, ok, write

from tiered_memory.model.folders import fixed_prefix, within

Run = Callable[..., Result]

EN = "en/Callouts.md"
ZH = "zh/标注.md"
EN_SYNC = "en/Sync/Sync your notes.md"


@pytest.fixture
def languages(vault_path: Path) -> Path:
    write(vault_path, EN, "# Callouts\nCallout types: note, tip and warning callouts.\n")
    write(vault_path, ZH, "# 标注\n标注的类型 callout types：note、tip。\n")
    write(vault_path, EN_SYNC, "# Sync\nSync notes between devices; callout types stay as written.\n")
    return vault_path


def paths(run: Run, *args: str) -> list[str]:
    return [hit["path"] for hit in as_json(run("search", "--json", "--mode", "keyword", *args))["results"]]


def listed(run: Run, *args: str) -> list[str]:
    return [note["path"] for note in as_json(run("list", "--json", *args))]


def test_everywhere_by_default_then_one_folder(run: Run, languages: Path) -> None:
    assert ZH in paths(run, "callout types")  # the Chinese note answers an English question
    assert paths(run, "callout types", "--folder", "en/") == [EN, EN_SYNC]
    assert paths(run, "callout types", "--folder", "en") == [EN, EN_SYNC]  # the slash is optional
    assert paths(run, "callout types", "--in", "zh/**") == [ZH]
    hybrid = [h["path"] for h in as_json(run("search", "--json", "callout types", "--in", "en/"))["results"]]
    assert hybrid and all(p.startswith("en/") for p in hybrid)  # the vector side keeps to it too
    assert set(paths(run, "callout types", "--folder", "zh", "--folder", "en/Sync")) == {ZH, EN_SYNC}


def test_a_glob_is_matched_exactly_beyond_the_folder_it_starts_with(run: Run, languages: Path) -> None:
    # `*` stays inside one folder: en/Sync/... is not matched by en/*.md.
    assert paths(run, "callout types", "--in", "en/*.md") == [EN]
    assert paths(run, "callout types", "--in", "**/Sync*/*.md") == [EN_SYNC]
    assert paths(run, "callout types", "--in", "fr/") == []


def test_list_takes_the_same_folders(run: Run, languages: Path) -> None:
    assert set(listed(run, "--folder", "en")) == {EN, EN_SYNC}
    assert listed(run, "--in", "zh/*.md") == [ZH]


def test_a_default_in_tmem_yaml_applies_until_a_command_names_folders(run: Run, languages: Path) -> None:
    config = languages / "tmem.yaml"
    config.write_text(config.read_text(encoding="utf-8") + "\nsearch:\n  folders: [en/]\n", encoding="utf-8")
    assert ZH not in paths(run, "callout types")
    assert set(listed(run)) == {EN, EN_SYNC}
    assert paths(run, "callout types", "--folder", "zh") == [ZH]
    assert ZH in paths(run, "callout types", "--in", "**")  # everywhere again
    ok(run("status"))


def test_fixed_prefix_and_within() -> None:
    assert fixed_prefix("en/**/*.md") == "en/"
    assert fixed_prefix("/Projects/") == "Projects"
    assert fixed_prefix("**/Sync/*.md") == ""
    assert within("en/a.md", ["en"]) and within("en/x/a.md", ["en/"])
    assert not within("english/a.md", ["en"])
    assert not within("en/x/a.md", ["en/*.md"])
