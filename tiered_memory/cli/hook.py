"""`tmem hook session-start|pre-compact|session-end`: what an agent's lifecycle hooks run.

The agent sends its hook JSON on stdin (`cwd`, `transcript_path`, `session_id`, ...). A hook never
blocks the agent: whatever goes wrong is one line on stderr and exit 0.

- session-start: prints the context block on stdout (Claude Code and Codex add a SessionStart
  hook's stdout to the model's context; Cursor reads `additional_context` from a JSON answer).
- pre-compact: stores the transcript so far, then prints the context block.
- session-end: stores the transcript (`tmem ingest`), saying what it did on stderr.

The project is the payload's `cwd`: its git root's folder name (else the folder's own name), used
when the vault has a project of that id ($TMEM_PROJECT overrides it). The commands run are the CLI's own `context` and `ingest`,
in this process, so a hook means exactly what those commands mean.
"""

from __future__ import annotations

import io
import json
import os
import sys
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import click

from tiered_memory.backend import find_vault, start_daemon
from tiered_memory.model import layout
from tiered_memory.model.agent_setup import AGENTS, HOOK_EVENTS, project_slug

DAEMON_WAIT = 20.0  # seconds session-start waits for a daemon it starts
PROJECT_ENV = "TMEM_PROJECT"  # a project for every session, whatever the working folder


def read_payload(stream: Any) -> dict[str, Any]:
    """The hook JSON on stdin; nothing (a terminal, empty, not JSON) reads as {}."""
    if stream is None or stream.isatty():
        return {}
    try:
        data = json.loads(stream.read() or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def working_folder(payload: dict[str, Any]) -> Path | None:
    """The agent's working folder: `cwd` (Claude Code, Codex, Kimi), else Cursor's first workspace root."""
    value = payload.get("cwd")
    if not value:
        roots = payload.get("workspace_roots")
        value = roots[0] if isinstance(roots, list) and roots else None
    return Path(str(value)).expanduser() if value else None


def project_for(folder: Path | None, vault: Path) -> str | None:
    """The vault's project for a working folder: its git root's name, else its own name, when the
    vault has a project of that id."""
    if folder is None:
        return None
    top = next((p for p in (folder, *folder.parents) if (p / ".git").exists()), folder)
    for name in dict.fromkeys([top.name, folder.name]):
        slug = project_slug(name)
        if slug and (vault / layout.PROJECTS / slug).is_dir():
            return slug
    return None


def _run(ctx: click.Context, args: list[str]) -> tuple[bool, str]:
    """Run a tmem command line in this process; (it succeeded, what it printed on stdout)."""
    root = ctx.find_root()
    vault = root.obj.get("vault") if isinstance(root.obj, dict) else None
    argv = (["--vault", str(vault)] if vault else []) + args
    out = io.StringIO()
    try:
        with redirect_stdout(out):
            root.command.main(argv, prog_name="tmem", standalone_mode=False)
    except SystemExit as exc:
        return exc.code in (0, None), out.getvalue()
    except click.ClickException as exc:
        click.echo(f"tmem hook: {exc.format_message()}", err=True)
        return False, out.getvalue()
    return True, out.getvalue()


@click.command("hook")
@click.argument("event", type=click.Choice(HOOK_EVENTS))
@click.option(
    "--agent",
    type=click.Choice(AGENTS),
    default="claude-code",
    show_default=True,
    help="Who calls: decides the answer's shape.",
)
@click.option(
    "--budget", type=int, help="Token budget of the context block (default: context.budget_tokens)."
)
@click.pass_context
def hook(ctx: click.Context, event: str, agent: str, budget: int | None) -> None:
    """Run an agent hook: reads the agent's hook JSON on stdin and never fails the agent
    (problems are one line on stderr, exit 0). `tmem install AGENT` sets these up."""
    try:
        _hook(ctx, event, agent, budget, read_payload(sys.stdin))
    except Exception as exc:  # noqa: BLE001 - a hook must never block the agent
        click.echo(f"tmem hook: {event}: {type(exc).__name__}: {exc}", err=True)
    sys.exit(0)


def _hook(ctx: click.Context, event: str, agent: str, budget: int | None, payload: dict[str, Any]) -> None:
    try:
        vault = find_vault(ctx.obj.get("vault") if ctx.obj else None)
    except Exception as exc:  # noqa: BLE001 - no vault: say so, let the agent go on
        click.echo(f"tmem hook: {event}: {exc}", err=True)
        return
    project = os.environ.get(PROJECT_ENV) or project_for(working_folder(payload), vault)
    if event in ("pre-compact", "session-end"):
        _store(ctx, event, payload, project)
    if event == "session-start":
        # The session's MCP server and the next hooks will want the daemon: start it now, waiting
        # a little for its first indexing (the agent's hook timeout is a minute).
        start_daemon(vault, wait=DAEMON_WAIT)
    if event in ("session-start", "pre-compact"):
        args = ["context"] + (["--project", project] if project else [])
        args += ["--budget", str(budget)] if budget else []
        done, text = _run(ctx, args)
        if not done or not text.strip():
            return
        if agent == "cursor":
            click.echo(json.dumps({"additional_context": text.rstrip("\n")}, ensure_ascii=False))
        else:
            click.echo(text.rstrip("\n"))


def _store(ctx: click.Context, event: str, payload: dict[str, Any], project: str | None) -> None:
    path = payload.get("transcript_path")
    if not path:
        click.echo(f"tmem hook: {event}: the agent sent no transcript_path; nothing stored", err=True)
        return
    file = Path(str(path)).expanduser()
    if not file.is_file():
        click.echo(f"tmem hook: {event}: transcript {file} does not exist; nothing stored", err=True)
        return
    args = ["ingest", str(file)] + (["--project", project] if project else [])
    done, text = _run(ctx, args)
    if text.strip():
        click.echo(f"tmem hook: {event}: {text.strip()}", err=True)


COMMANDS: list[click.Command] = [hook]
