"""The vault config (`tmem.yaml`): load, default and validate. Only entry points call `load_config`.

Every setting has a default, so an empty or missing file is a valid config. A bad value gets one
line that names the key and what is allowed, e.g.
`tmem.yaml: search.vector_weight must be <= 1 (got 3)`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tiered_memory.errors import ConfigError
from tiered_memory.model.layout import CONFIG_NAME


class _Section(BaseModel):
    # Unknown keys are an error: a typo in the config should be said, not silently ignored.
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    @model_validator(mode="before")
    @classmethod
    def _empty_sections(cls, data: Any) -> Any:
        # `search:` with every key commented out is YAML null: it means "all defaults".
        if isinstance(data, dict):
            for name, info in cls.model_fields.items():
                kind = info.annotation
                is_section = isinstance(kind, type) and issubclass(kind, _Section)
                if is_section and name in data and data[name] is None:
                    data = {**data, name: {}}
        return data


class TierWeights(_Section):
    short: float = Field(1.0, ge=0, le=2)
    mid: float = Field(0.97, ge=0, le=2)
    long: float = Field(0.94, ge=0, le=2)
    archive: float = Field(0.6, ge=0, le=2)


class SearchConfig(_Section):
    fusion: Literal["linear", "rrf"] = "linear"
    vector_weight: float = Field(0.3, ge=0, le=1)
    keyword_weight: float = Field(0.7, ge=0, le=1)
    rrf_k: int = Field(60, ge=1, le=1000)
    candidates: int = Field(100, ge=10, le=2000)
    decay_lambda: float = Field(0.0002, ge=0, le=1)
    min_score: float = Field(0.0, ge=0, le=1)
    limit: int = Field(10, ge=1, le=1000)
    prior_weight: float = Field(0.1, ge=0, le=1)
    neighbor_weight: float = Field(0.7, ge=0, le=1)
    session_weight: float = Field(0.0, ge=0, le=1)
    # Share of the best linking note's score a note linked from the strongest candidates gains.
    link_weight: float = Field(0.0, ge=0, le=1)
    # Vector weight for queries mostly in Chinese/Japanese/Korean (the default model is English-only).
    cjk_vector_weight: float = Field(0.0, ge=0, le=1)
    tier_weights: TierWeights = Field(default_factory=TierWeights)


class EmbeddingsConfig(_Section):
    provider: Literal["sentence-transformers", "openai", "fake", "none"] = "sentence-transformers"
    model: str = "default"
    base_url: str | None = None
    api_key_env: str | None = "OPENAI_API_KEY"
    dimensions: int | None = Field(None, ge=1, le=8192)
    batch_size: int = Field(32, ge=1, le=4096)
    precision: Literal["auto", "float32", "bfloat16"] = "auto"
    runtime: Literal["torch", "onnx"] = "torch"
    chunk_tokens: int = Field(180, ge=16, le=8192)
    chunk_overlap: int = Field(40, ge=0, le=4096)


class IndexConfig(_Section):
    max_file_mb: float = Field(2.0, gt=0, le=1024)


Tier = Literal["short", "mid", "long", "archive"]


class FoldersConfig(_Section):
    include: list[str] = Field(default_factory=lambda: ["**"])
    exclude: list[str] = Field(default_factory=lambda: ["**/*.excalidraw.md"])
    tiers: dict[str, Tier] = Field(default_factory=dict)
    default_tier: Tier = "long"


class GitConfig(_Section):
    commit: bool = True
    author_name: str = "tmem"
    author_email: str = "tmem@localhost"
    remote: str = "origin"
    # How long one holder of the write lock may keep a writer waiting (restarts when it changes hands).
    lock_wait_seconds: float = Field(120, ge=0, le=3600)
    # Attachments (images, PDFs) larger than this are not committed by the daemon or sync, only reported.
    attachment_max_mb: float = Field(20, gt=0, le=10_000)


class LifecycleConfig(_Section):
    short_term_ttl_hours: float = Field(24, ge=0, le=24 * 365)
    project_idle_days: int = Field(90, ge=1, le=3650)
    promote_importance: float = Field(0.8, ge=0, le=1)
    decay_after_days: int = Field(30, ge=1, le=3650)
    decay_factor: float = Field(0.9, ge=0, le=1)
    confidence_floor: float = Field(0.1, ge=0, le=1)
    access_boost: float = Field(0.05, ge=0, le=1)
    merge_similarity: float = Field(0.92, ge=0, le=1)
    archive_retention_days: int | None = Field(None, ge=1)
    maintenance_time: str = "03:30"

    @field_validator("maintenance_time")
    @classmethod
    def _hh_mm(cls, value: str) -> str:
        parts = value.split(":")
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise ValueError("must be HH:MM")
        hour, minute = int(parts[0]), int(parts[1])
        if not (0 <= hour < 24 and 0 <= minute < 60):
            raise ValueError("must be HH:MM between 00:00 and 23:59")
        return f"{hour:02d}:{minute:02d}"


class DaemonConfig(_Section):
    # Searches, contexts and `tmem mcp` start the vault's daemon when none runs (one warm model
    # for every session); false keeps them in their own process. $TMEM_AUTOSTART=0 does the same.
    autostart: bool = True
    debounce_ms: int = Field(300, ge=0, le=60_000)
    autocommit_seconds: int = Field(60, ge=0, le=86_400)
    expiry_check_minutes: int = Field(60, ge=1, le=1440)
    sync_minutes: int = Field(0, ge=0, le=10_080)
    backup_daily: bool = False


class PrivacyConfig(_Section):
    redact: bool = True
    sensitive_keywords: list[str] = Field(default_factory=list)
    excluded_paths: list[str] = Field(default_factory=list)
    # Encryption at rest (docs/encryption.md): `sensitive` stores notes marked `sensitive: true`
    # and those under `encrypted_paths` as AES-256-GCM envelopes; `none` (the default) never does.
    encrypt: Literal["none", "sensitive"] = "none"
    encrypted_paths: list[str] = Field(default_factory=lambda: ["long-term/relationships/"])


class DedupConfig(_Section):
    cosine: float = Field(0.9, ge=0, le=1)
    token_overlap: float = Field(0.8, ge=0, le=1)


class ExtractConfig(_Section):
    llm: bool = False
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = "OPENAI_API_KEY"
    min_confidence: float = Field(0.5, ge=0, le=1)


class ContextConfig(_Section):
    budget_tokens: int = Field(1500, ge=50, le=200_000)
    max_memories: int = Field(10, ge=1, le=200)


class BackupConfig(_Section):
    keep: int = Field(7, ge=1, le=365)
    directory: str = ".tmem-backups"


class ExportConfig(_Section):
    # A JSON (or, named *.jsonl, JSON Lines) file every session that ends or is ingested is
    # exported into, updated entry by entry like `tmem export` (docs/export.md); null: none.
    on_session_end: str | None = None


class Config(_Section):
    search: SearchConfig = Field(default_factory=SearchConfig)
    embeddings: EmbeddingsConfig = Field(default_factory=EmbeddingsConfig)
    index: IndexConfig = Field(default_factory=IndexConfig)
    folders: FoldersConfig = Field(default_factory=FoldersConfig)
    git: GitConfig = Field(default_factory=GitConfig)
    lifecycle: LifecycleConfig = Field(default_factory=LifecycleConfig)
    daemon: DaemonConfig = Field(default_factory=DaemonConfig)
    privacy: PrivacyConfig = Field(default_factory=PrivacyConfig)
    dedup: DedupConfig = Field(default_factory=DedupConfig)
    extract: ExtractConfig = Field(default_factory=ExtractConfig)
    context: ContextConfig = Field(default_factory=ContextConfig)
    backup: BackupConfig = Field(default_factory=BackupConfig)
    export: ExportConfig = Field(default_factory=ExportConfig)


def parse_config(data: Any, source: str = CONFIG_NAME) -> Config:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the config must be a mapping of sections (search:, embeddings:, ...)")
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {_first_problem(exc)}") from None


def load_config(vault_root: Path) -> Config:
    path = vault_root / CONFIG_NAME
    if not path.exists():
        return Config()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{CONFIG_NAME}: cannot read it ({exc.__class__.__name__})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{CONFIG_NAME}: malformed YAML{where}") from None
    return parse_config(data)


def _first_problem(exc: ValidationError) -> str:
    error = exc.errors()[0]
    key = ".".join(str(part) for part in error["loc"])
    got = error.get("input")
    message = str(error["msg"])
    if error["type"] == "extra_forbidden":
        return f"unknown setting '{key}'"
    if error["type"] == "model_type":
        return f"{key} must be a mapping of settings (got {got!r})"
    message = message.replace("Input should be", "must be").replace("Value error, ", "")
    shown = "" if isinstance(got, dict) else f" (got {got!r})"
    return f"{key} {message}{shown}"
