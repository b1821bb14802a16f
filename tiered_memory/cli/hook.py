"""`tmem hook session-start|user-prompt-submit|pre-compact|session-end`: what an agent's hooks run.

The agent sends its hook JSON on stdin (`cwd`, `transcript_path`, `session_id`, `prompt`, ...). A
hook never blocks the agent: whatever goes wrong is one line on stderr and exit 0.

- session-start: prints the context block on stdout (Claude Code and Codex add a SessionStart
  hook's stdout to the model's context; Cursor reads `additional_context` from a JSON answer).
- user-prompt-submit: prints the few memories that bear on the prompt (Claude Code, Codex and Kimi
  add a UserPromptSubmit hook's stdout to that prompt's context), nothing when none does.
- pre-compact: stores the transcript so far, then prints the context block.
- session-end: stores the transcript (`tmem ingest`), saying what it did on stderr. Kimi CLI sends
  no `transcript_path`: its session file is found by the payload's `session_id` (`kimi_session_file`).

The project is the payload's `cwd`: its git root's folder name (else the folder's own name), used
when the vault has a project of that id ($TMEM_PROJECT overrides it). The commands run are the CLI's own `context` and `ingest`,
in this process, so a hook means exactly what those commands mean.

Hooks answer within the agent's budget on their own. The daemon answers when it is up and ready;
otherwise the hook starts it in the background (for the session's MCP server and the next hooks)
without waiting, and answers from this process with what needs no model: the context block
without a query, a keyword search for a prompt. A prompt's search with the daemon up takes a few
tens of milliseconds; the hook gives it PROMPT_BUDGET and says nothing when that is not enough.
A context block gets CONTEXT_BUDGET from the daemon, then is made in this process; storing a
transcript gets STORE_BUDGET (an agent gives its hooks about a minute), then is done here.
"""

from __future__ import annotations

__all__ = [
    "CONTEXT_BUDGET",
    "MAX_PAYLOAD_CHARS",
    "PING_TIMEOUT",
    "STORE_BUDGET",
    "STORE_NOTICE_AFTER",
    "PROJECT_ENV",
    "PROMPT_BUDGET",
    "PROMPT_TIERS",
    "daemon_ready",
    "hook",
    "in_background",
    "kimi_session_file",
    "project_for",
    "read_payload",
    "working_folder",
]

import hashlib
import io
import json
import os
import re
import stat
import sys
import threading
import time
from collections.abc import Mapping
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import click

from tiered_memory.app.api.recall import SEARCH
from tiered_memory.backend import Backend, find_vault, open_backend, start_daemon
from tiered_memory.cli.options import warn
from tiered_memory.daemon import client
from tiered_memory.model import layout
from tiered_memory.model import prompt_recall as recall
from tiered_memory.model.agent_setup import AGENTS, HOOK_EVENTS, project_slug
from tiered_memory.model.search import SearchRequest, SearchResult
from tiered_memory.present import hooks as show
from tiered_memory.present.prompt_recall import prompt_memories

PROJECT_ENV = "TMEM_PROJECT"  # a project for every session, whatever the working folder
MAX_PAYLOAD_CHARS = 16 * 1024 * 1024  # a hook's JSON: far above any prompt an agent sends
PROMPT_BUDGET = 0.3  # seconds a prompt's search may take in the daemon
CONTEXT_BUDGET = 3.0  # seconds the daemon gets for a context block before this process makes it
STORE_BUDGET = 30.0  # seconds the daemon gets to store a transcript before this process does
PING_TIMEOUT = 0.2  # seconds to learn whether the daemon is up and ready
STORE_NOTICE_AFTER = 0.5  # seconds of storing a transcript before the hook says it is at it
PROMPT_TIERS = ["short", "mid", "long"]  # the archive is history: never pushed into a prompt


def read_payload(stream: Any) -> dict[str, Any]:
    """The hook JSON on stdin; nothing (a terminal, empty, not JSON, past MAX_PAYLOAD_CHARS) reads
    as {}: a hook is handed a prompt, and a pasted one is no reason to hold gigabytes."""
    if stream is None or stream.isatty():
        return {}
    text = stream.read(MAX_PAYLOAD_CHARS + 1)
    if len(text) > MAX_PAYLOAD_CHARS:
        click.echo(show.payload_too_long_line(MAX_PAYLOAD_CHARS), err=True)
        return {}
    try:
        data = json.loads(text or "{}")
    except (ValueError, RecursionError):
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


def _run(ctx: click.Context, args: list[str], backend: Backend | None = None) -> tuple[bool, str]:
    """Run a tmem command line in this process; (it succeeded, what it printed on stdout).
    `backend`: the one the command uses (instead of the daemon's, when one runs)."""
    root = ctx.find_root()
    vault = root.obj.get("vault") if isinstance(root.obj, dict) else None
    argv = (["--vault", str(vault)] if vault else []) + args
    out = io.StringIO()
    extra: dict[str, Any] = {"obj": {"backend": backend}} if backend is not None else {}
    try:
        with redirect_stdout(out):
            root.command.main(argv, prog_name="tmem", standalone_mode=False, **extra)
    except SystemExit as exc:
        return exc.code in (0, None), out.getvalue()
    except click.ClickException as exc:
        click.echo(show.hook_line(None, exc.format_message()), err=True)
        return False, out.getvalue()
    return True, out.getvalue()


def daemon_ready(vault: Path) -> bool:
    """Whether the vault's daemon answers and has indexed the vault (a starting one has not)."""
    info = client.ping(vault, timeout=PING_TIMEOUT)
    return bool(info and info.get("ready"))


def in_background(vault: Path) -> Backend:
    """This process's backend, with the daemon started in the background (when it may be and none
    is starting) for the session's MCP server and the next hooks: it is never waited for."""
    if client.lock_holder(vault) is None:  # one holds the lock: it is starting, or too busy to ping
        start_daemon(vault, wait=0)
    return open_backend(vault, daemon=False, scan_ahead=True)


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
        click.echo(show.crashed_line(event, exc), err=True)
    sys.exit(0)


def _hook(ctx: click.Context, event: str, agent: str, budget: int | None, payload: dict[str, Any]) -> None:
    try:
        vault = find_vault(ctx.obj.get("vault") if ctx.obj else None)
    except Exception as exc:  # noqa: BLE001 - no vault: say so, let the agent go on
        click.echo(show.hook_line(event, str(exc)), err=True)
        return
    if event == "user-prompt-submit":
        _answer(agent, _prompt_recall(vault, payload))
        return
    project = os.environ.get(PROJECT_ENV) or project_for(working_folder(payload), vault)
    if event in ("pre-compact", "session-end"):
        _store(ctx, vault, event, agent, payload, project)
    if event in ("session-start", "pre-compact"):
        # Without a ready daemon, the block comes from this process: a starting daemon would
        # keep the agent waiting for its first indexing (half a minute on a large vault). A ready
        # one that does not answer in time (hung, or busy) is given up on for this process too.
        if daemon_ready(vault):
            backend = open_backend(vault, warn=warn, read_timeout=CONTEXT_BUDGET)
        else:
            backend = in_background(vault)
        args = ["context"] + (["--project", project] if project else [])
        args += ["--budget", str(budget)] if budget else []
        try:
            done, text = _run(ctx, args, backend)
        finally:
            backend.close()
        if done:
            _answer(agent, text)


def _answer(agent: str, text: str) -> None:
    """Context for the agent on stdout, in the shape it reads; nothing at all when there is none."""
    answer = show.answer_text(agent, text)
    if answer:
        click.echo(answer)


def _prompt_recall(vault: Path, payload: dict[str, Any]) -> str:
    """The memories that bear on the prompt, rendered; "" when none does (or the budget ran out)."""
    query = recall.query_for(str(payload.get("prompt") or ""))
    if query is None:
        return ""
    # Not recalls: the person asked for nothing, and every prompt would count its best matches.
    request = SearchRequest(
        query=query,
        limit=recall.MAX_HITS * 2,
        tiers=PROMPT_TIERS,
        include_sensitive=False,
        record_access=False,
    )
    result = _search_in_daemon(vault, request) if daemon_ready(vault) else None
    if result is None:
        request.mode = "keyword"  # no model in this process: the agent must not wait for one
        backend = in_background(vault)
        try:
            result = backend.run(SEARCH, request)
        finally:
            backend.close()
    found = recall.relevant(result.hits, query)
    return prompt_memories(found) if found else ""


def _search_in_daemon(vault: Path, request: SearchRequest) -> SearchResult | None:
    """The daemon's answer within PROMPT_BUDGET; None when no daemon took the request (this
    process searches instead). A daemon that took it and did not answer in time is an empty result."""
    started = time.monotonic()
    try:
        data = client.call(vault, SEARCH.name, request.to_dict(), timeout=PROMPT_BUDGET)
    except client.DaemonUnavailable as exc:
        if not exc.sent:
            return None
        click.echo(show.slow_daemon_line(time.monotonic() - started, exc), err=True)
        return SearchResult([], request.mode)
    return SEARCH.result.from_dict(data)


# A session id Kimi CLI makes (a uuid); anything else in a payload is not looked up as a folder.
_KIMI_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")


def kimi_session_file(payload: dict[str, Any], environ: Mapping[str, str]) -> Path | None:
    """Kimi CLI's session file for the payload's session: its hooks send `session_id` and `cwd`,
    no `transcript_path`. Kimi keeps it at <$KIMI_SHARE_DIR or ~/.kimi>/sessions/<md5 of the
    working folder>/<session id>/context.jsonl; when the working folder's md5 names no such file
    (a folder reached through a link), the session's folder under any working folder is taken."""
    session = payload.get("session_id")
    if not isinstance(session, str) or not _KIMI_SESSION_ID.fullmatch(session):
        return None
    share = Path(environ.get("KIMI_SHARE_DIR") or Path.home() / ".kimi").expanduser()
    sessions = share / "sessions"
    cwd = payload.get("cwd")
    if isinstance(cwd, str) and cwd:
        file = (
            sessions
            / hashlib.md5(cwd.encode("utf-8"), usedforsecurity=False).hexdigest()
            / session
            / "context.jsonl"
        )
        if file.is_file():
            return file
    try:
        folders = sorted(p for p in sessions.iterdir() if p.is_dir())
    except OSError:
        return None
    return next(
        (f / session / "context.jsonl" for f in folders if (f / session / "context.jsonl").is_file()), None
    )


def _not_a_transcript(file: Path) -> str | None:
    """Why the file a payload names is not read as its transcript, else None. The agent names one
    file outside the vault to read, its own log, and it is read only as that: a regular file
    where it is named, not a link (the name may lead anywhere, ~/.ssh/id_rsa), a pipe or a device."""
    try:
        mode = file.lstat().st_mode
    except (OSError, ValueError):  # ValueError: a NUL in the name
        return "missing"
    if stat.S_ISLNK(mode):
        return "link"
    return None if stat.S_ISREG(mode) else "irregular"


def _store(
    ctx: click.Context, vault: Path, event: str, agent: str, payload: dict[str, Any], project: str | None
) -> None:
    path = payload.get("transcript_path")
    if not path and agent == "kimi":
        path = kimi_session_file(payload, os.environ)
    if not path:
        click.echo(show.no_transcript_line(event), err=True)
        return
    try:
        file = Path(str(path)).expanduser()
    except RuntimeError:  # ~user of no user here
        file = Path(str(path))
    unread = _not_a_transcript(file)
    if unread is not None:
        click.echo(show.unread_transcript_line(event, str(file), unread), err=True)
        return
    args = ["ingest", str(file), "--agent", agent] + (["--project", project] if project else [])
    # Storing is quick once the vault's index is current; when it is not (notes added since), the
    # agent's log says at once what the hook is doing rather than staying silent for a second.
    notice = threading.Timer(STORE_NOTICE_AFTER, lambda: click.echo(show.storing_line(event), err=True))
    notice.daemon = True
    notice.start()
    backend = open_backend(vault, warn=warn, write_timeout=STORE_BUDGET)
    try:
        done, text = _run(ctx, args, backend)
    finally:
        notice.cancel()
        backend.close()
    if text.strip():
        click.echo(show.hook_line(event, text.strip()), err=True)
