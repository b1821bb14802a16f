"""Operations that run before (or outside) a vault: creating or adopting one."""

from __future__ import annotations

__all__ = [
    "ApproveRequest",
    "ApproveResult",
    "CONFIG",
    "CONFIG_APPROVE",
    "ConfigRequest",
    "ConfigResult",
    "INIT",
    "InitRequest",
    "InitResult",
    "MIN_TOKEN_CHARS",
    "NO_TOKEN",
    "TOKEN_TOO_SHORT",
]

from dataclasses import dataclass, field
from typing import Any

from tiered_memory.app.api import Op
from tiered_memory.model.records import Record


@dataclass
class InitRequest(Record):
    path: str
    adopt: bool = False  # an existing vault (a fresh `git clone`): register the merge driver there


@dataclass
class InitResult(Record):
    vault: str
    adopted: bool = False
    merge_driver: str = ""
    notes_go: str = ""  # where new notes are filed, and which existing files are indexed
    too_large: list[str] = field(default_factory=list)  # files over git.attachment_max_mb, not committed


INIT = Op(
    "init",
    InitRequest,
    InitResult,
    runs="tiered_memory.app.setup:init",
    writes=True,
    where="local",
    needs_vault=False,
)


@dataclass
class ConfigRequest(Record):
    """A user setting: `default-vault`. `value` None reads it; "" removes it."""

    key: str = ""
    value: str | None = None


@dataclass
class ConfigResult(Record):
    path: str  # the settings file
    settings: dict[str, str]


# The MCP server's bearer token (`tmem mcp --http`): anything shorter can be guessed.
MIN_TOKEN_CHARS = 32
TOKEN_TOO_SHORT = (
    f"the MCP token must have at least {MIN_TOKEN_CHARS} characters "
    "(e.g. `python3 -c 'import secrets; print(secrets.token_urlsafe(32))'`)"
)
NO_TOKEN = (
    "--http needs a bearer token: `tmem config set mcp-token VALUE` "
    "(or $TMEM_MCP_TOKEN); clients send `Authorization: Bearer VALUE`"
)

CONFIG = Op(
    "config",
    ConfigRequest,
    ConfigResult,
    runs="tiered_memory.app.setup:config",
    writes=True,
    where="local",
    needs_vault=False,
)


@dataclass
class ApproveRequest(Record):
    """Accept, on this machine, the values tmem.yaml gives settings that reach outside the vault.
    No keys and not `all`: only list what waits for approval."""

    vault: str
    keys: list[str] = field(default_factory=list)
    all: bool = False


@dataclass
class ApproveResult(Record):
    path: str  # where this machine's approvals are kept
    approved: dict[str, Any] = field(default_factory=dict)  # key -> the value now in use
    waiting: dict[str, Any] = field(default_factory=dict)  # key -> the value still left out


CONFIG_APPROVE = Op(
    "config_approve",
    ApproveRequest,
    ApproveResult,
    runs="tiered_memory.app.setup:approve",
    writes=True,
    where="local",
    needs_vault=False,
)
