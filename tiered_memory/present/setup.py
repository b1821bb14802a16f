"""`tmem init` and `tmem config`, as text."""

from __future__ import annotations

__all__ = ["approve_text", "config_removed_text", "config_set_text", "config_text", "init_text"]

import json

from tiered_memory.app.api.setup import ApproveResult, ConfigResult, InitResult


def init_text(result: InitResult) -> str:
    if result.adopted:
        text = f"adopted vault at {result.vault}: git merges notes with tmem's driver"
    else:
        text = f"created vault at {result.vault}"
    lines = [text, *([result.notes_go] if result.notes_go else [])]
    lines += [f"not committed (over git.attachment_max_mb): {p}" for p in result.too_large]
    return "\n".join(lines)


def config_text(result: ConfigResult, key: str | None = None) -> str:
    """The settings (or the one `key` names), as `key = value` lines, then where they are kept."""
    shown = {k.replace("_", "-"): v for k, v in result.settings.items()}
    if key:
        shown = {key: shown.get(key, "")}
    lines = [f"{k} = {v}" for k, v in shown.items()] or ["(no settings)"]
    return "\n".join([*lines, f"# {result.path}"])


def config_set_text(result: ConfigResult, key: str) -> str:
    return f"{key} = {result.settings[key.replace('-', '_')]}  ({result.path})"


def config_removed_text(result: ConfigResult, key: str) -> str:
    return f"{key} removed ({result.path})"


def approve_text(result: ApproveResult) -> str:
    lines = [f"approved: {k} = {json.dumps(v, ensure_ascii=False)}" for k, v in result.approved.items()]
    lines += [f"waiting: {k} = {json.dumps(v, ensure_ascii=False)}" for k, v in result.waiting.items()]
    if result.waiting:
        lines.append("(`tmem config approve KEY` uses a value on this machine)")
    return "\n".join(lines or ["nothing waits for approval"])
