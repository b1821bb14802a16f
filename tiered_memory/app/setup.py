"""Creating a vault, or adopting a cloned one (`tmem init [--adopt]`)."""

from __future__ import annotations

__all__ = ["approve", "config", "init"]

from pathlib import Path

from tiered_memory import config as vault_config
from tiered_memory.app.api.setup import (
    MIN_TOKEN_CHARS,
    TOKEN_TOO_SHORT,
    ApproveRequest,
    ApproveResult,
    ConfigRequest,
    ConfigResult,
    InitRequest,
    InitResult,
)
from tiered_memory.errors import BadInput
from tiered_memory.model import authors, layout
from tiered_memory.storage.locate import (
    SETTINGS,
    change_user_settings,
    looks_like_vault,
    settings_path,
    user_settings,
)
from tiered_memory.storage.vault import init_vault, merge_driver_command
from tiered_memory.sync.gitmerge import adopt_vault


def init(request: InitRequest) -> InitResult:
    target = Path(request.path)
    if request.adopt:
        root, too_big = adopt_vault(target)
        return InitResult(
            str(root),
            adopted=True,
            merge_driver=merge_driver_command(),
            notes_go=_where(root, adopted=True),
            too_large=too_big,
        )
    vault = init_vault(target)
    return InitResult(str(vault.root), merge_driver=merge_driver_command(), notes_go=_where(vault.root))


def _where(root: Path, adopted: bool = False) -> str:
    """One sentence a new user needs: where tmem files what it remembers, and what it reads."""
    memory = root / layout.MEMORY_DIR
    if adopted:
        return (
            f"your Markdown notes stay where they are and are indexed (folders: in tmem.yaml sets "
            f"which, and their tier; long-term by default); what tmem remembers goes in {memory}/<tier>/"
        )
    return (
        f"what tmem remembers goes in {memory}/<tier>/ (short-term, mid-term, long-term, archive); "
        f"Markdown you write anywhere in {root} is indexed too"
    )


def config(request: ConfigRequest) -> ConfigResult:
    """Read or change a user setting (`tmem config get|set|unset`)."""
    settings = user_settings()
    if request.key:
        key = request.key.replace("-", "_")
        if key not in SETTINGS:
            known = ", ".join(k.replace("_", "-") for k in SETTINGS)
            raise BadInput(f"unknown setting '{request.key}' (known: {known})")
        if request.value == "":
            change_user_settings(lambda values: values.pop(key, None))
            settings = user_settings()
        elif request.value is not None:
            value = _checked_setting(key, request.value)
            change_user_settings(lambda values: values.update({key: value}))
            settings = user_settings()
    return ConfigResult(str(settings_path()), settings)


def _checked_setting(key: str, given: str) -> str:
    """The value a user setting is stored as, or BadInput saying why it cannot be."""
    if key == "default_vault":
        path = Path(given).expanduser().resolve()
        if not looks_like_vault(path):
            raise BadInput(f"{path} is not a tmem vault (create one with `tmem init {path}`)")
        return str(path)
    value = given.strip()
    if key == "mcp_token" and len(value) < MIN_TOKEN_CHARS:
        raise BadInput(TOKEN_TOO_SHORT)
    if key == "author":
        try:
            authors.parse(value, "localhost")
        except ValueError as exc:
            raise BadInput(str(exc)) from None
    return value


def approve(request: ApproveRequest) -> ApproveResult:
    """`tmem config approve [KEY...|--all]`: this machine's user accepts the exact values tmem.yaml
    now gives the named outward or protective settings (config.APPROVABLE); without keys, only
    lists them."""
    root = Path(request.vault)
    if not looks_like_vault(root):
        raise BadInput(f"{root} is not a tmem vault")
    waiting = {item.key: item.value for item in vault_config.unapproved_fresh(root)}
    for key in request.keys:
        if key not in vault_config.APPROVABLE:
            known = ", ".join(vault_config.APPROVABLE)
            raise BadInput(f"'{key}' is not a setting that needs approval (those are: {known})")
        if key not in waiting:
            raise BadInput(f"{key}: tmem.yaml gives it no value waiting for approval")
    chosen = {k: v for k, v in waiting.items() if request.all or k in request.keys}
    path = vault_config.user_dir() / vault_config.TRUST_NAME
    if chosen:
        path = vault_config.approve(root, chosen)
    left = {k: v for k, v in waiting.items() if k not in chosen}
    return ApproveResult(str(path), chosen, left)
