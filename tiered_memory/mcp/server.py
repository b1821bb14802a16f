"""`tmem mcp`: the vault as an MCP server over stdio, built on the official `mcp` SDK (v2 MCPServer).

Tools: remember, recall, context, forget, promote, archive, session_append, session_end, each
with a JSON schema, a description written for the model, and read-only / destructive /
idempotent hints. Resources: the user profile and the active projects. One `Memory` serves every
call, one call at a time (the SDK runs sync tools in worker threads). A failure is a tool error
with one line of text (`tmem: ...` style, no traceback), never a crash of the server.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import ToolAnnotations
from pydantic import Field, ValidationError

from tiered_memory import __version__
from tiered_memory.app import lifecycle
from tiered_memory.app import notes as note_ops
from tiered_memory.app.api.lifecycle import ArchiveRequest, PromoteRequest
from tiered_memory.app.api.notes import ForgetRequest, RememberRequest
from tiered_memory.app.memory import Memory
from tiered_memory.errors import TmemError

F = TypeVar("F", bound=Callable[..., Any])

INSTRUCTIONS = """\
tmem is the user's long-term memory: Markdown notes in a git repository, in tiers (short-term =
this session, mid-term = projects, long-term = durable knowledge, archive = history).
At the start of a task call `context` (optionally with a query) and read the block it returns.
Call `recall` to look something up, `remember` for facts, decisions, preferences, lessons and
fixes worth keeping (one memory per call, in plain sentences; never secrets), `session_append`
to log what happens in this session and `session_end` with a short summary when done.
Memories may be outdated: verify before relying on them."""

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
ADDITIVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
DESTRUCTIVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)

Text = Annotated[str, Field(description="The memory in plain sentences, self-contained.")]
Ref = Annotated[str, Field(description="A note id (as returned by remember/recall) or its path.")]
Category = Literal[
    "discovery", "decision", "pattern", "preference", "error", "fact", "profile", "project", "note"
]
Tier = Literal["short", "mid", "long", "archive"]


class _Session:
    """The shared Memory, a lock, and the warnings the current call produced."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self.lock = threading.Lock()
        self.warnings: list[str] = []
        memory.warn = self.warnings.append
        memory.indexer.warn = self.warnings.append


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _guarded(state: _Session) -> Callable[[F], F]:
    """Run a tool under the lock; TmemError and anything else become a one-line ToolError."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with state.lock:
                state.warnings.clear()
                try:
                    return fn(*args, **kwargs)
                except ToolError:
                    raise
                except TmemError as exc:
                    raise ToolError(_one_line(str(exc))) from None
                except Exception as exc:  # noqa: BLE001 - a tool call must never take the server down
                    raise ToolError(_one_line(f"{type(exc).__name__}: {exc}")) from None

        return wrapper  # type: ignore[return-value]

    return decorate


def _result(value: Any) -> Any:
    """Whatever a lifecycle or session function returned, as JSON-friendly data."""
    from tiered_memory.model import note as notes
    from tiered_memory.present import jsonable

    if isinstance(value, notes.Note):
        return {
            "id": value.id,
            "title": value.title,
            "path": value.path,
            "tier": value.tier,
            "status": value.status,
        }
    for method in ("to_dict", "as_dict"):
        if callable(getattr(value, method, None)):
            return jsonable(getattr(value, method)())
    if hasattr(value, "__dataclass_fields__"):
        import dataclasses

        return _result(
            {k: _result(v) for k, v in ((f.name, getattr(value, f.name)) for f in dataclasses.fields(value))}
        )
    if isinstance(value, dict):
        return {str(k): _result(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_result(v) for v in value]
    return jsonable(value)


class _Server(MCPServer[Any]):
    """MCPServer whose argument-validation errors are one line, like every other tool error."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
                    for err in cause.errors()
                )
                raise ToolError(_one_line(f"invalid arguments for {name}: {problems}")) from cause
            raise


def build_server(memory: Memory) -> MCPServer[Any]:
    state = _Session(memory)
    guarded = _guarded(state)
    server: MCPServer[Any] = _Server(
        name="tmem",
        title="tiered-memory",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
    )

    def done(data: dict[str, Any]) -> dict[str, Any]:
        if state.warnings:
            data["warnings"] = list(state.warnings)
        return data

    @server.tool(annotations=ADDITIVE)
    @guarded
    def remember(
        text: Text,
        title: Annotated[str | None, Field(description="Short title; default: the first line.")] = None,
        category: Annotated[Category, Field(description="What kind of memory this is.")] = "fact",
        tier: Annotated[Tier | None, Field(description="Default: long, or mid with a project.")] = None,
        tags: Annotated[list[str] | None, Field(description="Keywords.")] = None,
        project: Annotated[str | None, Field(description="Project id the memory belongs to.")] = None,
        entities: Annotated[list[str] | None, Field(description="People or things it is about.")] = None,
        importance: Annotated[float | None, Field(ge=0, le=1, description="0..1, default 0.5.")] = None,
        confidence: Annotated[float | None, Field(ge=0, le=1, description="0..1, default 1.")] = None,
        source: Annotated[str | None, Field(description="Where it came from (a file, URL, session).")] = None,
        session: Annotated[str | None, Field(description="The session id it came from.")] = None,
    ) -> dict[str, Any]:
        """Store one memory as a note (committed to git). Secrets are redacted before writing.

        A near-duplicate of an existing memory boosts that one instead of adding a copy; a newer
        fact contradicting an older one supersedes it. The answer says which happened."""
        result = note_ops.remember(
            memory,
            RememberRequest(
                text=text,
                title=title,
                tier=tier,
                category=category,
                tags=tags or [],
                project=project,
                entities=entities or [],
                importance=importance,
                confidence=confidence,
                source=source or "mcp",
                session=session,
            ),
        )
        note, action, message, other = result.note, result.action, result.message, result.other
        data: dict[str, Any] = {
            "action": action,
            "id": note.id,
            "title": note.title,
            "path": note.path,
            "tier": note.tier,
            "category": note.category,
            "message": message,
        }
        if other is not None:
            data["other"] = {"id": other.id, "path": other.path, "title": other.title}
        return done(data)

    @server.tool(annotations=READ_ONLY)
    @guarded
    def recall(
        query: Annotated[
            str, Field(description="What to look for, in words (hybrid keyword + semantic search).")
        ],
        limit: Annotated[int, Field(ge=1, le=50, description="Most results.")] = 5,
        tier: Annotated[list[Tier] | None, Field(description="Only these tiers.")] = None,
        category: Annotated[list[Category] | None, Field(description="Only these categories.")] = None,
        project: Annotated[str | None, Field(description="Only notes of this project.")] = None,
        entity: Annotated[str | None, Field(description="Only notes about this person or thing.")] = None,
        session: Annotated[str | None, Field(description="Only notes of this session.")] = None,
        mode: Annotated[
            Literal["hybrid", "keyword", "vector"], Field(description="Retrieval mode.")
        ] = "hybrid",
    ) -> dict[str, Any]:
        """Search memories; returns ranked notes with id, title, tier, category, date and a snippet.
        Superseded notes are left out. Use the id with `forget`, `promote` or `archive`."""
        from tiered_memory.app.entities import find_entity
        from tiered_memory.model.search import SearchRequest
        from tiered_memory.present.notes import result_dict

        names: list[str] = []
        if entity:
            found = find_entity(memory, entity)
            names = found.names if found else [entity]
        request = SearchRequest(
            query=query,
            limit=limit,
            mode=mode,
            tiers=list(tier or []),
            categories=list(category or []),
            projects=[project] if project else [],
            entities=names,
            session=session,
        )
        result = memory.search(request)
        data = result_dict(result, query)
        if not data.get("notice"):
            data.pop("notice", None)
        return done(data)

    @server.tool(annotations=READ_ONLY, structured_output=False)
    @guarded
    def context(
        query: Annotated[
            str | None, Field(description="The task at hand; without it, recent and important memories.")
        ] = None,
        project: Annotated[str | None, Field(description="Project id; default: the active project.")] = None,
        entity: Annotated[str | None, Field(description="A person or thing the task is about.")] = None,
        budget: Annotated[
            int | None, Field(ge=50, le=200_000, description="Token budget; default from the vault config.")
        ] = None,
        include_sensitive: Annotated[bool, Field(description="Also notes marked sensitive.")] = False,
    ) -> str:
        """The context block to read at the start of a task: user profile, active project status and
        open tasks, current session state and the most relevant memories, within a token budget."""
        from tiered_memory.app.context import build_context

        block = build_context(
            memory,
            query=query,
            project=project,
            entity=entity,
            budget=budget,
            include_sensitive=include_sensitive,
        )
        return block.text

    @server.tool(annotations=DESTRUCTIVE)
    @guarded
    def forget(
        ref: Ref,
        reason: Annotated[str | None, Field(description="Why (goes into the git commit message).")] = None,
    ) -> dict[str, Any]:
        """Delete a memory (a git commit: the user can bring it back with `tmem restore`).
        Use it for memories that are wrong or that the user asked to forget."""
        note = note_ops.forget(memory, ForgetRequest(ref, reason))
        return done({"forgotten": note.id, "path": note.path, "title": note.title})

    @server.tool(
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
    )
    @guarded
    def promote(
        ref: Ref,
        to: Annotated[
            Literal["mid", "long"] | None, Field(description="Target tier; default: the next one up.")
        ] = None,
    ) -> dict[str, Any]:
        """Move a memory up a tier (short -> mid -> long) when it proved durable or important."""
        return done({"promoted": lifecycle.promote(memory, PromoteRequest(ref, to)).to_dict()})

    @server.tool(
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)
    )
    @guarded
    def archive(
        ref: Ref,
        reason: Annotated[str | None, Field(description="Why it is no longer current.")] = None,
    ) -> dict[str, Any]:
        """Move a memory to the archive (kept and searchable on request, but out of normal recall)."""
        request = ArchiveRequest(ref, reason or "archived by an agent (MCP)")
        return done({"archived": lifecycle.archive(memory, request).to_dict()})

    @server.tool(annotations=ADDITIVE)
    @guarded
    def session_append(
        text: Annotated[str, Field(description="What happened: a message, a step, a finding.")],
        role: Annotated[
            Literal["user", "assistant", "system", "tool"], Field(description="Who said it.")
        ] = "assistant",
        session: Annotated[
            str | None, Field(description="Session id; default: the live session (one is started if none).")
        ] = None,
    ) -> dict[str, Any]:
        """Append an entry to the live session's log in short-term memory (secrets redacted)."""
        from tiered_memory.app import sessions

        return done({"session": _session_dict(sessions.append(memory, text, role=role, session_id=session))})

    @server.tool(annotations=ADDITIVE)
    @guarded
    def session_end(
        summary: Annotated[
            str | None, Field(description="A few sentences: goal, what was done, what is left.")
        ] = None,
        session: Annotated[str | None, Field(description="Session id; default: the live session.")] = None,
    ) -> dict[str, Any]:
        """End the session: a summary is written, its lessons are extracted as memories (without
        duplicates), and the session is archived under archive/sessions/YYYY/MM/DD/."""
        from tiered_memory.app import sessions

        ended = sessions.end(memory, session_id=session, summary=summary)
        return done({"session": _session_dict(ended)})

    @server.resource("tmem://profile", name="user-profile", title="User profile", mime_type="text/markdown")
    def profile() -> str:
        """Who the user is and how they like to work (long-term/user_profile.md)."""
        from tiered_memory.app.context_sources import PROFILE

        with state.lock:
            if not memory.vault.abspath(PROFILE).is_file():
                raise ResourceError("the vault has no long-term/user_profile.md")
            return memory.vault.read_text(PROFILE)

    @server.resource(
        "tmem://projects", name="active-projects", title="Active projects", mime_type="application/json"
    )
    def projects() -> str:
        """Active projects (mid-term/active_contexts.json) with each one's status and open tasks."""
        with state.lock:
            return json.dumps(_projects(memory), ensure_ascii=False, indent=2)

    return server


def _session_dict(session: Any) -> dict[str, Any]:
    """What an agent needs back about a session: not its whole message log."""
    data = {
        key: _result(getattr(session, key, None))
        for key in ("id", "title", "path", "status", "project", "message_count", "summary", "notice")
    }
    outcomes = getattr(session, "outcomes", None) or []
    if outcomes:
        data["memories"] = [
            {"action": o.action, "id": o.note.id, "title": o.note.title, "message": o.message}
            for o in outcomes
        ]
    return {k: v for k, v in data.items() if v not in (None, "")}


def _projects(memory: Memory) -> dict[str, Any]:
    from tiered_memory.app.context_sources import (
        ACTIVE_CONTEXTS,
        PROJECTS,
        active_project,
        essentials,
        open_tasks,
    )

    vault = memory.vault
    try:
        active = (
            json.loads(vault.read_text(ACTIVE_CONTEXTS)) if vault.abspath(ACTIVE_CONTEXTS).is_file() else {}
        )
    except (TmemError, ValueError):
        active = {}
    folder = vault.abspath(PROJECTS)
    out: dict[str, Any] = {"active_contexts": active, "current": active_project(memory), "projects": {}}
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        if not path.is_dir():
            continue
        info: dict[str, Any] = {}
        status = path / "status.md"
        if status.is_file():
            note = vault.read_note(f"{PROJECTS}/{path.name}/status.md")
            info["status"] = note.meta.get("status", note.status)
            info["summary"] = "\n".join(essentials(note))
        tasks = path / "tasks.json"
        if tasks.is_file():
            try:
                info["open_tasks"] = open_tasks(json.loads(tasks.read_text(encoding="utf-8")))
            except (OSError, ValueError):
                info["open_tasks"] = []
        out["projects"][path.name] = info
    return out


def serve(root: Path) -> None:
    """Run the server on stdin/stdout until the client disconnects."""
    from tiered_memory.storage.vault import Vault

    vault = Vault(root)
    vault.config  # noqa: B018 - a bad config is one line at start-up, not an error per call
    memory = Memory(vault)
    try:
        build_server(memory).run("stdio")
    finally:
        memory.close()
