"""What `tmem install AGENT` changes in an agent's settings files, planned without touching a file.

Each agent keeps its MCP servers and its hooks in its own files and formats:

| agent | MCP server | hooks |
|---|---|---|
| claude-code | `~/.claude.json` `mcpServers.tmem` (what `claude mcp add -s user` writes) | `~/.claude/settings.json` `hooks` |
| codex | `~/.codex/config.toml` `[mcp_servers.tmem]` | `~/.codex/hooks.json` (and `[features] codex_hooks = true`) |
| cursor | `~/.cursor/mcp.json` `mcpServers.tmem` | `~/.cursor/hooks.json` (`version: 1`; no per-prompt hook: its beforeSubmitPrompt cannot add context) |
| opencode | `~/.config/opencode/opencode.json` `mcp.tmem` | `~/.config/opencode/plugins/tmem.js`, a plugin that stores each session (`model.opencode_plugin`) |
| kimi | `~/.kimi/mcp.json` `mcpServers.tmem` | `~/.kimi/config.toml` `[[hooks]]` tables |

Claude Code, Codex and Kimi also get a per-prompt hook (`UserPromptSubmit` → `tmem hook
user-prompt-submit`): each of them adds a hook's plain stdout to the model's context for that prompt.

`plan(agent, home, files, launch)` takes the files' current text and returns the new text of each,
merging: every entry that is not tmem's is kept as it was, tmem's own entries are replaced (so a
second install changes nothing) or, with `uninstall=True`, removed. The caller reads and writes the
files (and keeps a backup); a file that does not parse is refused, never overwritten.
"""

from __future__ import annotations

__all__ = [
    "AGENTS",
    "FileChange",
    "HOOK_EVENTS",
    "Launch",
    "PROMPT_TIMEOUT",
    "Plan",
    "SERVER",
    "SetupError",
    "files",
    "is_ours",
    "plan",
    "project_slug",
]

import json
import re
import shlex
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from tiered_memory.model import opencode_plugin

AGENTS = ("claude-code", "codex", "cursor", "opencode", "kimi")
SERVER = "tmem"
HOOK_EVENTS = ("session-start", "user-prompt-submit", "pre-compact", "session-end")

# A hook command is tmem's when it runs `… hook <event>` of tmem (the program's name or module).
_OURS = re.compile(r"(tmem|tiered_memory)\S*[\"']?\s.*\bhook\s+(" + "|".join(HOOK_EVENTS) + r")\b")
PROMPT_TIMEOUT = 10  # seconds an agent gives the per-prompt hook (it answers in well under one)


class SetupError(ValueError):
    """A settings file that cannot be merged (it does not parse, or has an unexpected shape)."""


@dataclass(frozen=True)
class Launch:
    """How an agent starts tmem: an absolute program (and its arguments) and maybe a vault."""

    program: tuple[str, ...]
    vault: str | None = None

    def argv(self, *args: str) -> list[str]:
        return [*self.program, *(["--vault", self.vault] if self.vault else []), *args]

    def shell(self, *args: str) -> str:
        return shlex.join(self.argv(*args))

    def hook(self, event: str, agent: str) -> str:
        return self.shell("hook", event, "--agent", agent)


@dataclass
class FileChange:
    path: str
    before: str | None  # None: the file does not exist yet
    after: str
    notes: list[str] = field(default_factory=list)  # what changed, one line each

    @property
    def changed(self) -> bool:
        return self.before != self.after


@dataclass
class Plan:
    agent: str
    changes: list[FileChange]
    notes: list[str] = field(default_factory=list)  # what the person should know or do

    @property
    def changed(self) -> list[FileChange]:
        return [c for c in self.changes if c.changed]


def is_ours(command: Any) -> bool:
    return isinstance(command, str) and bool(_OURS.search(command))


def files(agent: str, home: PurePath) -> list[PurePath]:
    """The settings files `plan` needs for this agent, in the order it changes them."""
    match agent:
        case "claude-code":
            return [home / ".claude.json", home / ".claude" / "settings.json"]
        case "codex":
            return [home / ".codex" / "config.toml", home / ".codex" / "hooks.json"]
        case "cursor":
            return [home / ".cursor" / "mcp.json", home / ".cursor" / "hooks.json"]
        case "opencode":
            config = home / ".config" / "opencode"
            return [config / "opencode.json", config / "plugins" / opencode_plugin.FILE_NAME]
        case "kimi":
            return [home / ".kimi" / "mcp.json", home / ".kimi" / "config.toml"]
    raise SetupError(f"unknown agent '{agent}' (one of: {', '.join(AGENTS)})")


def plan(
    agent: str,
    home: PurePath,
    current: Mapping[PurePath, str | None],
    launch: Launch,
    *,
    uninstall: bool = False,
) -> Plan:
    """The new text of each of the agent's settings files (`current`: path -> text, None if absent)."""
    paths = files(agent, home)
    texts = [current.get(p) for p in paths]
    mcp_argv = launch.argv("mcp")
    done = Plan(agent, [])
    server: dict[str, Any]

    def change(path: PurePath, before: str | None, edit: Callable[[str | None, list[str]], str]) -> None:
        notes: list[str] = []
        after = edit(before, notes)
        if before is None and not after.strip():
            after = ""
        done.changes.append(
            FileChange(str(path), before, after if (before is not None or notes) else "", notes)
        )

    match agent:
        case "claude-code":
            server = {"type": "stdio", "command": mcp_argv[0], "args": mcp_argv[1:], "env": {}}
            change(
                paths[0], texts[0], _json_edit(lambda d, n: _mcp_entry(d, "mcpServers", server, uninstall, n))
            )
            groups = {
                "SessionStart": ("startup|resume|clear|compact", "session-start", 60),
                "UserPromptSubmit": (None, "user-prompt-submit", PROMPT_TIMEOUT),
                "PreCompact": ("manual|auto", "pre-compact", 120),
                "SessionEnd": (None, "session-end", 120),
            }
            change(
                paths[1],
                texts[1],
                _json_edit(lambda d, n: _claude_hooks(d, groups, launch, agent, uninstall, n)),
            )
        case "codex":
            change(paths[0], texts[0], lambda t, n: _codex_toml(t, mcp_argv, uninstall, n))
            groups = {
                "SessionStart": ("startup|resume|clear|compact", "session-start", 60),
                "UserPromptSubmit": (None, "user-prompt-submit", PROMPT_TIMEOUT),
                "PreCompact": ("manual|auto", "pre-compact", 120),
            }
            change(
                paths[1],
                texts[1],
                _json_edit(lambda d, n: _claude_hooks(d, groups, launch, agent, uninstall, n)),
            )
            if not uninstall:
                done.notes.append(
                    "Codex has no session-end hook: each transcript is stored before compaction; "
                    "store a finished one with `tmem ingest ~/.codex/sessions/…/rollout-….jsonl`"
                )
        case "cursor":
            server = {"command": mcp_argv[0], "args": mcp_argv[1:]}
            change(
                paths[0], texts[0], _json_edit(lambda d, n: _mcp_entry(d, "mcpServers", server, uninstall, n))
            )
            events = {
                "sessionStart": "session-start",
                "preCompact": "pre-compact",
                "sessionEnd": "session-end",
            }
            change(
                paths[1], texts[1], _json_edit(lambda d, n: _cursor_hooks(d, events, launch, uninstall, n))
            )
        case "opencode":
            server = {"type": "local", "command": mcp_argv, "enabled": True}
            change(paths[0], texts[0], _json_edit(lambda d, n: _mcp_entry(d, "mcp", server, uninstall, n)))
            change(paths[1], texts[1], lambda t, n: _opencode_plugin(t, launch, uninstall, n))
            persons = texts[1] is not None and not opencode_plugin.is_ours(texts[1])
            if persons:
                done.notes.append(f"{paths[1]} is not tmem's: left as it is")
            if not uninstall:
                done.notes.append(
                    "opencode runs no shell hooks: the agent reads memory through the MCP tools "
                    "(`context` at the start of a task)"
                    + ("" if persons else ", and the plugin stores each session when the agent goes idle")
                )
        case "kimi":
            server = {"command": mcp_argv[0], "args": mcp_argv[1:]}
            change(
                paths[0], texts[0], _json_edit(lambda d, n: _mcp_entry(d, "mcpServers", server, uninstall, n))
            )
            change(paths[1], texts[1], lambda t, n: _kimi_toml(t, launch, uninstall, n))
    # A file tmem would only create empty is left alone.
    done.changes = [c for c in done.changes if c.before is not None or c.after]
    return done


def _opencode_plugin(text: str | None, launch: Launch, uninstall: bool, notes: list[str]) -> str:
    """The plugin file's new text: tmem's plugin, or "" (removed) on uninstall; a file of the
    same name that is not tmem's is the person's and stays as it is."""
    if text is not None and not opencode_plugin.is_ours(text):
        return text
    if uninstall:
        if text is not None:
            notes.append("tmem's plugin removed")
        return ""
    after = opencode_plugin.plugin_text(launch.argv())
    if after != text:
        notes.append("plugin that stores each session on session.idle")
    return after


# ---- JSON ------------------------------------------------------------------------------------------


def _json_edit(
    edit: Callable[[dict[str, Any], list[str]], None],
) -> Callable[[str | None, list[str]], str]:
    def run(text: str | None, notes: list[str]) -> str:
        data = _load_json(text)
        before = json.dumps(data, sort_keys=True)
        edit(data, notes)
        if text is not None and json.dumps(data, sort_keys=True) == before:
            return text  # nothing of ours changed: the file keeps its exact bytes
        if text is None and not notes:
            return ""
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"

    return run


def _load_json(text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SetupError(f"it is not valid JSON ({exc}); fix or move it, then run this again") from None
    if not isinstance(data, dict):
        raise SetupError("it is not a JSON object")
    return data


def _section(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.setdefault(key, {})
    if not isinstance(value, dict):
        raise SetupError(f"its '{key}' is not an object")
    return value


def _mcp_entry(
    data: dict[str, Any], key: str, server: dict[str, Any], uninstall: bool, notes: list[str]
) -> None:
    had_section = key in data
    servers = _section(data, key)
    old = servers.get(SERVER)
    if uninstall:
        if old is not None:
            del servers[SERVER]
            notes.append(f"removed {key}.{SERVER}")
        if not servers and not had_section:
            del data[key]
        return
    if old != server:
        servers[SERVER] = server
        notes.append(
            f"{'replaced' if old is not None else 'added'} {key}.{SERVER}: {shlex.join(_argv(server))}"
        )


def _argv(server: dict[str, Any]) -> list[str]:
    command = server.get("command")
    if isinstance(command, list):
        return [str(c) for c in command]
    return [str(command), *map(str, server.get("args", []))]


def _claude_hooks(
    data: dict[str, Any],
    groups: dict[str, tuple[str | None, str, int]],
    launch: Launch,
    agent: str,
    uninstall: bool,
    notes: list[str],
) -> None:
    """Claude Code's (and Codex's) shape: hooks.EVENT = [{matcher?, hooks: [{type, command, timeout}]}]."""
    had_hooks = "hooks" in data
    hooks = _section(data, "hooks")
    removed_any = False
    for event in list(hooks) if uninstall else list(groups):
        entries = hooks.get(event, [])
        if not isinstance(entries, list):
            raise SetupError(f"its hooks.{event} is not a list")
        kept: list[Any] = []
        removed = 0
        for group in entries:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(inner, list) and any(
                isinstance(h, dict) and is_ours(h.get("command")) for h in inner
            ):
                rest = [h for h in inner if not (isinstance(h, dict) and is_ours(h.get("command")))]
                removed += 1
                removed_any = True
                if rest:
                    kept.append({**group, "hooks": rest})
            else:
                kept.append(group)
        new: list[Any] = list(kept)
        if not uninstall and event in groups:
            matcher, hook_event, timeout = groups[event]
            ours: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
            ours["hooks"] = [
                {"type": "command", "command": launch.hook(hook_event, agent), "timeout": timeout}
            ]
            new.append(ours)
        if new != entries:
            if new:
                hooks[event] = new
            else:
                hooks.pop(event, None)
            if uninstall:
                notes.append(f"removed the {event} hook")
            else:
                notes.append(f"{'replaced' if removed else 'added'} the {event} hook")
    if not hooks and (not had_hooks or (uninstall and removed_any)):
        del data["hooks"]


def _cursor_hooks(
    data: dict[str, Any], events: dict[str, str], launch: Launch, uninstall: bool, notes: list[str]
) -> None:
    """Cursor's shape: {version: 1, hooks: {event: [{command}]}}."""
    data.setdefault("version", 1)
    hooks = _section(data, "hooks")
    for event in list(hooks) if uninstall else list(events):
        entries = hooks.get(event, [])
        if not isinstance(entries, list):
            raise SetupError(f"its hooks.{event} is not a list")
        kept = [e for e in entries if not (isinstance(e, dict) and is_ours(e.get("command")))]
        new = list(kept)
        if not uninstall and event in events:
            new.append({"command": launch.hook(events[event], "cursor")})
        if new != entries:
            if new:
                hooks[event] = new
            else:
                hooks.pop(event, None)
            verb = "removed" if uninstall else ("replaced" if len(kept) < len(entries) else "added")
            notes.append(f"{verb} the {event} hook")


# ---- TOML (edited as text: the person's comments and layout stay as they were) -----------------------

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def _toml_blocks(text: str) -> list[tuple[str | None, bool, list[str]]]:
    """The file as (table name, is an array table, lines) blocks; the first has no name."""
    blocks: list[tuple[str | None, bool, list[str]]] = [(None, False, [])]
    for line in text.splitlines(keepends=True):
        found = _HEADER.match(line)
        if found and not line.lstrip().startswith("#"):
            blocks.append((found.group(2).replace(" ", ""), found.group(1) == "[[", [line]))
        else:
            blocks[-1][2].append(line)
    return blocks


def _check_toml(text: str | None) -> str:
    text = text or ""
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SetupError(f"it is not valid TOML ({exc}); fix or move it, then run this again") from None
    return text


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)  # a JSON string is a TOML basic string


def _join(blocks: list[tuple[str | None, bool, list[str]]], extra: list[str]) -> str:
    text = "".join("".join(lines) for _name, _array, lines in blocks)
    if extra:
        if text and not text.endswith("\n"):
            text += "\n"
        if text.strip() and not text.endswith("\n\n"):
            text += "\n"
        text += "\n\n".join(extra) + "\n"
    tomllib.loads(text)  # what tmem writes must parse: a bug here must not break the agent
    return text


def _codex_toml(text: str | None, mcp_argv: list[str], uninstall: bool, notes: list[str]) -> str:
    source = _check_toml(text)
    blocks = _toml_blocks(source)
    ours = f"mcp_servers.{SERVER}"
    kept = [b for b in blocks if not (b[0] == ours or (b[0] or "").startswith(ours + "."))]
    had = len(kept) != len(blocks)
    extra: list[str] = []
    if uninstall:
        if had:
            notes.append(f"removed [{ours}]")
        return _join(kept, []) if had else source
    new_server = f"[{ours}]\ncommand = {_toml_value(mcp_argv[0])}\nargs = {_toml_value(mcp_argv[1:])}\n"
    old_server = "".join("".join(b[2]) for b in blocks if b not in kept)
    if old_server.strip() != new_server.strip():
        notes.append(f"{'replaced' if had else 'added'} [{ours}]: {shlex.join(mcp_argv)}")
    extra.append(new_server.rstrip("\n"))
    # Codex runs hooks only with the feature switched on.
    features = [i for i, b in enumerate(kept) if b[0] == "features" and not b[1]]
    if features:
        name, array, lines = kept[features[0]]
        flag = [j for j, line in enumerate(lines) if re.match(r"\s*codex_hooks\s*=", line)]
        if not flag:
            kept[features[0]] = (name, array, [lines[0], "codex_hooks = true\n", *lines[1:]])
            notes.append("set [features] codex_hooks = true (Codex runs hooks only with it)")
        elif not re.match(r"\s*codex_hooks\s*=\s*true\b", lines[flag[0]]):
            lines = list(lines)
            lines[flag[0]] = "codex_hooks = true\n"
            kept[features[0]] = (name, array, lines)
            notes.append("set [features] codex_hooks = true (Codex runs hooks only with it)")
    elif "features" not in (tomllib.loads(source) or {}):
        extra.append("[features]\ncodex_hooks = true")
        notes.append("set [features] codex_hooks = true (Codex runs hooks only with it)")
    if not notes:
        return source
    # Keep our server table where it was appended before: rewrite only when something differs.
    return _join(kept, extra)


def _kimi_toml(text: str | None, launch: Launch, uninstall: bool, notes: list[str]) -> str:
    source = _check_toml(text)
    blocks = _toml_blocks(source)

    def ours(block: tuple[str | None, bool, list[str]]) -> bool:
        return block[0] == "hooks" and block[1] and any(is_ours(line) for line in block[2])

    kept = [b for b in blocks if not ours(b)]
    removed = len(blocks) - len(kept)
    if uninstall:
        if removed:
            notes.append(f"removed {removed} [[hooks]] table(s)")
            return _join(kept, [])
        return source
    events = (
        ("SessionStart", "session-start", 60),
        ("UserPromptSubmit", "user-prompt-submit", PROMPT_TIMEOUT),
        ("PreCompact", "pre-compact", 120),
        ("SessionEnd", "session-end", 120),
    )
    extra = [
        f"[[hooks]]\nevent = {_toml_value(event)}\ncommand = {_toml_value(launch.hook(hook, 'kimi'))}\ntimeout = {timeout}"
        for event, hook, timeout in events
    ]
    old = "".join("".join(b[2]) for b in blocks if ours(b))
    if old.split() == "\n\n".join(extra).split():
        return source
    notes.append(f"{'replaced' if removed else 'added'} the {', '.join(e for e, _h, _t in events)} [[hooks]]")
    return _join(kept, extra)


# ---- the project of a working folder -------------------------------------------------------------


def project_slug(folder_name: str) -> str | None:
    """A tmem project id from a folder's name: lower case, words joined by '-' (None if nothing is left)."""
    slug = re.sub(r"[^a-z0-9._-]+", "-", folder_name.strip().lower()).strip("-._")
    return slug or None
