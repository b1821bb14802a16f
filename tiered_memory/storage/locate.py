"""Finding the vault a command is about: `--vault`, then $TMEM_VAULT, then the current folder or a
parent, as git finds its repository. Standard library only: every command starts here."""

from __future__ import annotations

import os
from pathlib import Path

from tiered_memory.errors import VaultNotFound
from tiered_memory.model.layout import CONFIG_NAME, MEMORY_DIR

ENV_VAULT = "TMEM_VAULT"


def looks_like_vault(path: Path) -> bool:
    return (path / CONFIG_NAME).is_file() or (path / MEMORY_DIR / "long-term").is_dir()


def find_vault(explicit: str | os.PathLike[str] | None = None, cwd: Path | None = None) -> Path:
    """`--vault`, then $TMEM_VAULT, then walk up from the current directory as git does."""
    for given, origin in ((explicit, "--vault"), (os.environ.get(ENV_VAULT), ENV_VAULT)):
        if given:
            path = Path(given).expanduser().resolve()
            if not looks_like_vault(path):
                raise VaultNotFound(
                    f"{origin} points at {path}, which is not a tmem vault (run `tmem init {path}`)"
                )
            return path
    start = (cwd or Path.cwd()).resolve()
    for candidate in (start, *start.parents):
        if looks_like_vault(candidate):
            return candidate
    raise VaultNotFound("no tmem vault here or in any parent folder (run `tmem init PATH`, or pass --vault)")
