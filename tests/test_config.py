"""The vault config: the template documents every default, and each bad value gets one line naming the key."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from tiered_memory.config import (
    CHECKED_NAME,
    CONFIG_NAME,
    MAX_KEYWORD_CHARS,
    MAX_KEYWORDS,
    Config,
    load_config,
    parse_config,
    to_dict,
)
from tiered_memory.errors import EXIT_BAD_INPUT, ConfigError
from tiered_memory.storage.vault import template_dir

TEMPLATE = template_dir() / CONFIG_NAME


def _leaf_keys(data: Any, prefix: str = "") -> set[str]:
    if isinstance(data, dict) and data:  # an empty mapping is a setting's value (folders.tiers: {})
        out: set[str] = set()
        for key, value in data.items():
            out |= _leaf_keys(value, f"{prefix}{key}.")
        return out
    return {prefix.rstrip(".")}


def _model_keys(section: Any, prefix: str = "") -> set[str]:
    out: set[str] = set()
    for info in dataclasses.fields(section):
        value = getattr(section, info.name)
        if dataclasses.is_dataclass(value):
            out |= _model_keys(value, f"{prefix}{info.name}.")
        else:
            out.add(f"{prefix}{info.name}")
    return out


def test_template_config_is_exactly_the_defaults() -> None:
    data = yaml.safe_load(TEMPLATE.read_text(encoding="utf-8"))
    assert data == to_dict(Config())
    assert parse_config(data) == Config()


def test_template_documents_every_setting() -> None:
    data = yaml.safe_load(TEMPLATE.read_text(encoding="utf-8"))
    assert _leaf_keys(data) == _model_keys(Config())


def test_every_setting_has_a_default() -> None:
    assert parse_config({}) == Config()
    for section in dataclasses.fields(Config):
        assert parse_config({section.name: {}}) == Config()


def test_missing_file_gives_defaults(tmp_path: Path) -> None:
    assert load_config(tmp_path) == Config()


@pytest.mark.parametrize(
    "text", ["", "# only comments\n", "search:\n  # vector_weight: 0.6\n", "search:\ngit:\n"]
)
def test_empty_file_or_sections_give_defaults(tmp_path: Path, text: str) -> None:
    (tmp_path / CONFIG_NAME).write_text(text, encoding="utf-8")
    assert load_config(tmp_path) == Config()


def test_values_are_read(tmp_path: Path) -> None:
    (tmp_path / CONFIG_NAME).write_text(
        "search:\n  vector_weight: 0.45\n  fusion: rrf\n  tier_weights:\n    archive: 0.1\n"
        "lifecycle:\n  maintenance_time: '4:05'\n",
        encoding="utf-8",
    )
    config = load_config(tmp_path)
    assert config.search.vector_weight == 0.45
    assert config.search.fusion == "rrf"
    assert config.search.tier_weights.archive == 0.1
    assert config.search.tier_weights.short == 1.0
    assert config.lifecycle.maintenance_time == "04:05"
    assert config.search.keyword_weight == 0.7  # the default, untouched


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("search:\n  vector_weight: 3\n", "search.vector_weight must be less than or equal to 1 (got 3)"),
        (
            "search:\n  vector_weight: -0.5\n",
            "search.vector_weight must be greater than or equal to 0 (got -0.5)",
        ),
        ("search:\n  vector_weight: lots\n", "search.vector_weight must be a valid number"),
        ("search:\n  fusion: max\n", "search.fusion must be 'linear', 'rrf' or 'peaked' (got 'max')"),
        ("search:\n  limit: 0\n", "search.limit must be greater than or equal to 1 (got 0)"),
        (
            "search:\n  tier_weights:\n    archive: 5\n",
            "search.tier_weights.archive must be less than or equal to 2",
        ),
        ("embeddings:\n  provider: magic\n", "embeddings.provider must be"),
        ("embeddings:\n  chunk_tokens: 2\n", "embeddings.chunk_tokens must be greater than or equal to 16"),
        ("index:\n  max_file_mb: 0\n", "index.max_file_mb must be greater than 0"),
        (
            "lifecycle:\n  archive_retention_days: 99999999999\n",
            "lifecycle.archive_retention_days must be less than or equal to 36500",
        ),
        ("lifecycle:\n  maintenance_time: '25:00'\n", "lifecycle.maintenance_time must be HH:MM"),
        ("lifecycle:\n  maintenance_time: noon\n", "lifecycle.maintenance_time must be HH:MM"),
        ("privacy:\n  sensitive_keywords: secret\n", "privacy.sensitive_keywords must be a valid list"),
        ("search: 3\n", "search must be a mapping"),
        ("search:\n  tier_weights: [1, 2]\n", "search.tier_weights must be a mapping"),
    ],
)
def test_bad_value_is_one_line_naming_key_and_range(tmp_path: Path, text: str, expected: str) -> None:
    (tmp_path / CONFIG_NAME).write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{CONFIG_NAME}: ")
    assert expected in message
    assert "SearchConfig" not in message and "TierWeights" not in message  # no class names
    assert info.value.exit_code == EXIT_BAD_INPUT


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("search:\n  vectorweight: 0.5\n", "search.vectorweight"),
        ("searches:\n  limit: 3\n", "searches"),
        ("search:\n  tier_weights:\n    medium: 1\n", "search.tier_weights.medium"),
    ],
)
def test_unknown_key_is_named(tmp_path: Path, text: str, key: str) -> None:
    (tmp_path / CONFIG_NAME).write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    assert str(info.value) == f"{CONFIG_NAME}: unknown setting '{key}'"


_MANY = "[" + ",".join(f"d{i}" for i in range(100_000)) + "]"  # under the 1 MB a tmem.yaml may be


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"folders:\n  exclude: {_MANY}\n", "folders.exclude lists 100,000 globs; at most 100"),
        ("search:\n  folders: [" + "x/," * 101 + "]\n", "search.folders lists 101 globs; at most 100"),
        (
            "folders:\n  include: ['" + "a" * 1_000_000 + "']\n",
            "folders.include has a glob of 1,000,000 characters",
        ),
        (
            "folders:\n  tiers:\n    '" + "a" * 513 + "': short\n",
            "folders.tiers has a glob of 513 characters",
        ),
        ("search:\n  folders: ['" + "**/" * 200 + "x']\n", "search.folders has a glob of 601 characters"),
        (
            "folders:\n  exclude: ['" + "*a" * 9 + "']\n",
            "folders.exclude has a glob of 9 wildcards (*, **); at most 8",
        ),
        (
            "folders:\n  tiers: {" + ", ".join(f"d{i}: short" for i in range(101)) + "}\n",
            "folders.tiers lists 101",
        ),
        (f"privacy:\n  excluded_paths: {_MANY}\n", "privacy.excluded_paths lists 100,000 globs; at most 100"),
        (
            "privacy:\n  encrypted_paths: ['" + "a" * 1_000_000 + "']\n",
            "privacy.encrypted_paths has a glob of 1,000,000 characters",
        ),
        (
            "privacy:\n  excluded_paths: ['" + "**/" * 200 + "x']\n",
            "privacy.excluded_paths has a glob of 601 characters",
        ),
        (
            "privacy:\n  encrypted_paths: ['" + "*a" * 9 + "']\n",
            "privacy.encrypted_paths has a glob of 9 wildcards (*, **); at most 8",
        ),
        (
            f"privacy:\n  sensitive_keywords: {_MANY}\n",
            f"privacy.sensitive_keywords lists 100,000 keywords; at most {MAX_KEYWORDS}",
        ),
        (
            "privacy:\n  sensitive_keywords: ['" + "a" * 1_000_000 + "']\n",
            f"privacy.sensitive_keywords has a keyword of 1,000,000 characters; at most {MAX_KEYWORD_CHARS}",
        ),
    ],
)
def test_a_pulled_config_of_too_many_or_too_long_globs_is_one_short_line(
    tmp_path: Path, text: str, expected: str
) -> None:
    """tmem.yaml arrives with every pull and its globs are matched against every file of every
    scan: the count, the length and the wildcards of each are bounded, in one line that names
    the setting and never repeats the value."""
    (tmp_path / CONFIG_NAME).write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    message = str(info.value)
    assert message.startswith(f"{CONFIG_NAME}: ") and expected in message
    assert "\n" not in message and len(message) < 120


def test_keywords_within_the_bounds_are_taken() -> None:
    keywords = [f"{i:03d}" + "k" * (MAX_KEYWORD_CHARS - 3) for i in range(MAX_KEYWORDS)]
    config = parse_config({"privacy": {"sensitive_keywords": keywords}})
    assert config.privacy.sensitive_keywords == keywords


def test_globs_within_the_bounds_are_taken() -> None:
    config = parse_config(
        {
            "folders": {"exclude": ["**/a/**/b/**/*.md"] * 100, "tiers": {"a" * 512: "short"}},
            "search": {"folders": ["*/" * 8]},
        }
    )
    assert len(config.folders.exclude) == 100 and config.search.folders == ["*/" * 8]


def test_malformed_yaml_names_the_line(tmp_path: Path) -> None:
    (tmp_path / CONFIG_NAME).write_text("search:\n  limit: 3\n  fusion: [linear\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    message = str(info.value)
    assert message.startswith(f"{CONFIG_NAME}: malformed YAML at line ")
    assert "\n" not in message


@pytest.mark.parametrize("text", ["- search\n- git\n", "just words\n", "42\n"])
def test_non_mapping_config(tmp_path: Path, text: str) -> None:
    (tmp_path / CONFIG_NAME).write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    assert "must be a mapping" in str(info.value)
    assert "\n" not in str(info.value)


def test_undecodable_config(tmp_path: Path) -> None:
    (tmp_path / CONFIG_NAME).write_bytes(b"search:\n  limit: \xff\xfe\n")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    assert str(info.value).startswith(f"{CONFIG_NAME}: cannot read it")


def test_yaml_code_tags_are_refused(tmp_path: Path) -> None:
    (tmp_path / CONFIG_NAME).write_text(
        "search: !!python/object/apply:os.system ['echo hi']\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError):
        load_config(tmp_path)


def test_settings_are_read_only() -> None:
    config = Config()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.search.vector_weight = 3  # type: ignore[misc]


def test_settings_checked_or_read_back_are_read_only_too(tmp_path: Path) -> None:
    """pydantic builds the sections of a new file, the checked copy in .tmem/ those of a known
    one: neither can be changed, nor given a new attribute, nor lose one."""
    (tmp_path / ".tmem").mkdir()
    (tmp_path / CONFIG_NAME).write_text("search:\n  limit: 5\n", encoding="utf-8")
    for config in (load_config(tmp_path), load_config(tmp_path)):
        assert config.search.limit == 5
        with pytest.raises(dataclasses.FrozenInstanceError):
            config.search.limit = 6  # type: ignore[misc]
        with pytest.raises(dataclasses.FrozenInstanceError):
            config.search.limt = 6  # type: ignore[attr-defined]
        with pytest.raises(dataclasses.FrozenInstanceError):
            del config.search.limit  # type: ignore[misc]
        assert dataclasses.replace(config.search, limit=7).limit == 7
    assert (tmp_path / ".tmem" / CHECKED_NAME).exists()  # the second load read the checked copy


def _state(tmp_path: Path) -> Path:
    (tmp_path / ".tmem").mkdir()
    return tmp_path / ".tmem" / CHECKED_NAME


def test_a_checked_file_is_not_checked_again(tmp_path: Path) -> None:
    checked = _state(tmp_path)
    (tmp_path / CONFIG_NAME).write_text("search:\n  limit: 7\nlifecycle:\n  maintenance_time: '4:05'\n")
    first = load_config(tmp_path)
    assert checked.is_file()
    # What the second load returns comes from the checked copy: alter it and the change shows.
    stored = checked.read_text(encoding="utf-8")
    checked.write_text(stored.replace('"limit": 7', '"limit": 8'), encoding="utf-8")
    second = load_config(tmp_path)
    assert second.search.limit == 8
    assert dataclasses.replace(second, search=first.search) == first
    assert second.lifecycle.maintenance_time == "04:05"
    assert isinstance(second.search.tier_weights, type(first.search.tier_weights))


def test_an_edited_file_is_checked_again(tmp_path: Path) -> None:
    _state(tmp_path)
    (tmp_path / CONFIG_NAME).write_text("search:\n  limit: 7\n")
    assert load_config(tmp_path).search.limit == 7
    (tmp_path / CONFIG_NAME).write_text("search:\n  limit: 0\n")
    with pytest.raises(ConfigError, match="search.limit must be greater than or equal to 1"):
        load_config(tmp_path)
    (tmp_path / CONFIG_NAME).write_text("search:\n  limit: 9\n")
    assert load_config(tmp_path).search.limit == 9


@pytest.mark.parametrize("stored", ["", "{", '{"key": 1}', "[]", '{"key": "x", "config": 3}'])
def test_a_damaged_checked_copy_is_a_miss(tmp_path: Path, stored: str) -> None:
    checked = _state(tmp_path)
    (tmp_path / CONFIG_NAME).write_text("search:\n  limit: 7\n")
    checked.write_text(stored, encoding="utf-8")
    assert load_config(tmp_path).search.limit == 7
    assert load_config(tmp_path) == parse_config({"search": {"limit": 7}})


def test_a_stale_checked_copy_of_unknown_settings_is_a_miss(tmp_path: Path) -> None:
    checked = _state(tmp_path)
    (tmp_path / CONFIG_NAME).write_text("search:\n  limit: 7\n")
    load_config(tmp_path)
    stored = checked.read_text(encoding="utf-8")
    checked.write_text(stored.replace('"limit": 7', '"limit": 7, "gone": 1'), encoding="utf-8")
    assert load_config(tmp_path).search.limit == 7


def test_no_state_dir_no_checked_copy(tmp_path: Path) -> None:
    (tmp_path / CONFIG_NAME).write_text("search:\n  limit: 7\n")
    assert load_config(tmp_path).search.limit == 7
    assert os.listdir(tmp_path) == [CONFIG_NAME]
