"""Finding the vault a command is about: `--vault`, then $TMEM_VAULT, then the current folder or a
parent (as git finds its repository), then the user's default vault. Standard library only: every
command starts here.

The default vault lives in the user's settings file, `$XDG_CONFIG_HOME/tmem/config.toml`
(`~/.config/tmem/config.toml`; `$TMEM_CONFIG_HOME` relocates the folder), so agent hooks and MCP
servers started from any folder find the vault.
"""

from __future__ import annotations

__all__ = [
    "ENV_VAULT",
    "SETTINGS",
    "change_user_settings",
    "find_vault",
    "looks_like_vault",
    "refuse_linked_state",
    "save_user_settings",
    "settings_path",
    "user_settings",
]

import json
import os
from collections.abc import Callable
from pathlib import Path

from tiered_memory.config import held_exclusively, user_dir, write_private
from tiered_memory.errors import VaultError, VaultNotFound
from tiered_memory.model.layout import ACCESS_LOG, CONFIG_NAME, MEMORY_DIR, STATE_DIR

ENV_VAULT = "TMEM_VAULT"
# `author`: the name this machine's commits carry in every vault (`tmem config set author NAME`),
# where git's config names no one: kept here, it never travels with a vault.
SETTINGS = ("default_vault", "mcp_token", "author")


def looks_like_vault(path: Path) -> bool:
    return (path / CONFIG_NAME).is_file() or (path / MEMORY_DIR / "long-term").is_dir()


def refuse_linked_state(root: Path) -> Path:
    """`root`, unless its private state (`.tmem/`, the recall log) is a symbolic link: tmem writes
    its indexes, checked settings, socket and recalls there, and a link, which a cloned repository
    can carry, would have them written wherever it leads (`.tmem` -> ~/.docker: its config.json
    replaced). VaultError then, before anything is read or written."""
    for name in (STATE_DIR, ACCESS_LOG):
        if (root / name).is_symlink():
            raise VaultError(
                f"{root / name} is a symbolic link (a cloned repository can carry one, leading "
                "anywhere); tmem keeps that state inside the vault: remove the link (and `git rm "
                "--cached` it if git tracks it), then run this again"
            )
    return root


def find_vault(explicit: str | os.PathLike[str] | None = None, cwd: Path | None = None) -> Path:
    """`--vault`, then $TMEM_VAULT, then walk up from the current directory as git does."""
    for given, origin in ((explicit, "--vault"), (os.environ.get(ENV_VAULT), ENV_VAULT)):
        if given:
            path = Path(given).expanduser().resolve()
            if not looks_like_vault(path):
                raise VaultNotFound(
                    f"{origin} points at {path}, which is not a tmem vault (run `tmem init {path}`)"
                )
            return refuse_linked_state(path)
    start = (cwd or Path.cwd()).resolve()
    for candidate in (start, *start.parents):
        if looks_like_vault(candidate):
            return refuse_linked_state(candidate)
    default = user_settings().get("default_vault")
    if default:
        path = Path(default).expanduser().resolve()
        if not looks_like_vault(path):
            raise VaultNotFound(
                f"the default vault {path} (in {settings_path()}) is not a tmem vault; "
                "run `tmem config set default-vault PATH`"
            )
        return refuse_linked_state(path)
    raise VaultNotFound(
        "no tmem vault here or in any parent folder (run `tmem init PATH`, pass --vault, "
        "or `tmem config set default-vault PATH`)"
    )


def settings_path() -> Path:
    return user_dir() / "config.toml"


def user_settings() -> dict[str, str]:
    """The user's settings (an unreadable file reads as none: a vault is still found by the others)."""
    try:
        text = settings_path().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    import tomllib  # only when there is a settings file to read

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}
    return {k: v for k, v in data.items() if k in SETTINGS and isinstance(v, str)}


def change_user_settings(change: Callable[[dict[str, str]], object]) -> Path:
    """Apply `change` (in place) to the user's settings as they are now, exclusively: two `tmem
    config set` at once each keep their value (each would otherwise write back what it read)."""
    path = settings_path()
    with held_exclusively(path):
        values = user_settings()
        change(values)
        save_user_settings(values)
    return path


def save_user_settings(values: dict[str, str]) -> Path:
    """Write the settings file (every value a string; JSON's string escapes are TOML's), 0600:
    it holds the MCP bearer token."""
    path = settings_path()
    lines = ["# tmem's user settings (`tmem config`)"]
    lines += [f"{key} = {json.dumps(value, ensure_ascii=False)}" for key, value in sorted(values.items())]
    write_private(path, "\n".join(lines) + "\n")
    return path
