"""`tmem mcp`: the vault as an MCP server (the official `mcp` SDK), over stdio or streamable HTTP.

This module is the edge: it registers the tools of `mcp/tools.py` with their hints (each refusing
arguments it does not take), the prompts (`start_task`, `remember_decision`), the resources
(`tmem://note/{id}`, the profile, the projects), and turns every failure into a tool error of one
line (`tmem: ...` style, never a traceback), so a bad call never takes the server down.

Every operation runs through the backend: the vault's daemon (started when none runs, unless
`daemon.autostart: false`), so the sessions of every agent share one warm model.

On stdio the agent's handshake was answered before this module (the SDK) was loaded
(`mcp/front.py`): the server is handed the conversation as it stands.
"""

from __future__ import annotations

__all__ = [
    "ADDITIVE",
    "BearerAuth",
    "DESTRUCTIVE",
    "EDITS",
    "F",
    "HINTS",
    "INSTRUCTIONS",
    "MOVES",
    "READ_ONLY",
    "build_server",
    "error_line",
    "guarded",
    "one_line",
    "serve",
    "strict",
]

import functools
import hmac
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Any, TypeVar, cast

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.stdio import stdio_server
from mcp.types import ToolAnnotations
from pydantic import ConfigDict, Field, ValidationError

from tiered_memory import __version__
from tiered_memory.app.api.setup import MIN_TOKEN_CHARS, NO_TOKEN, TOKEN_TOO_SHORT
from tiered_memory.errors import EXIT_FAILED, BadInput, TmemError
from tiered_memory.mcp.front import Early, SdkInput, SdkOutput
from tiered_memory.mcp.tools import TOOL_NAMES, Tools
from tiered_memory.model import authors

if TYPE_CHECKING:
    from mcp.types import Tool as ListedTool

F = TypeVar("F", bound=Callable[..., Any])

INSTRUCTIONS = """\
tmem is the user's long-term memory: Markdown notes in a git repository, in tiers (short-term =
this session, mid-term = projects, long-term = durable knowledge, archive = history).
At the start of a task call `context` (with the task as query) and read the block it returns.
`recall` looks things up (each hit has an `id` and the passage that matched); `read` opens a
note by that id; `update` corrects or extends it; `remember` stores a new fact, decision,
preference, lesson or fix (one per call, plain sentences, never secrets); `forget` deletes a
wrong one. `list`, `related` and `links` browse; `read_many` reads several notes (ids or a path
glob) at once. Memories may be outdated: verify before relying on them."""

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
ADDITIVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
EDITS = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)
DESTRUCTIVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)
MOVES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)

HINTS = {
    "remember": ADDITIVE,
    "recall": READ_ONLY,
    "read": READ_ONLY,
    "update": EDITS,
    "list": READ_ONLY,
    "related": READ_ONLY,
    "links": READ_ONLY,
    "read_many": READ_ONLY,
    "context": READ_ONLY,
    "forget": DESTRUCTIVE,
    "promote": MOVES,
    "archive": ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False),
    "session_append": ADDITIVE,
    "session_end": ADDITIVE,
}


def one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def error_line(exc: TmemError) -> str:
    """The one line an agent gets for an error. A failure of tmem's own (EXIT_FAILED: a daemon
    that stopped answering, a lock held too long) says so first, as the CLI's exit code 3 does:
    the agent must not take it for a bad argument and change its call."""
    if exc.exit_code == EXIT_FAILED:
        return one_line(f"tmem failed, not the call's arguments: {exc}")
    return one_line(str(exc))


def guarded(tools: Tools, fn: F) -> F:
    """Run a tool under the session's lock; TmemError and anything else become a one-line ToolError."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with tools.lock:
            tools.warnings.clear()
            try:
                return fn(*args, **kwargs)
            except ToolError:
                raise
            except TmemError as exc:
                raise ToolError(error_line(exc)) from None
            except Exception as exc:  # noqa: BLE001 - a tool call must never take the server down
                raise ToolError(one_line(f"{type(exc).__name__}: {exc}")) from None

    return wrapper  # type: ignore[return-value]


def strict(tool: Tool) -> Tool:
    """The tool with an argument model that refuses names it does not take. pydantic drops unknown
    keys by default, so `read {start_line, end_line}` read the whole note and `update {set: ...}`
    had "nothing to change"; refused, the caller learns the right names at once. The published
    schema says so too (`additionalProperties: false`)."""
    loose = tool.fn_metadata.arg_model
    model = cast(type[Any], type(loose.__name__, (loose,), {"model_config": ConfigDict(extra="forbid")}))
    tool.fn_metadata.arg_model = model
    tool.parameters = model.model_json_schema(by_alias=True)
    return tool


class _Server(MCPServer[Any]):
    """MCPServer whose argument-validation errors are one line, like every other tool error, and
    name the arguments a tool takes when the call gave one it does not."""

    def __init__(
        self,
        *,
        tools: list[Tool],
        after_listing: Callable[[], None] | None = None,
        ours: Tools | None = None,
        **settings: Any,
    ) -> None:
        super().__init__(tools=tools, **settings)
        self.tools = ours
        self.accepted = {tool.name: list(tool.parameters.get("properties", {})) for tool in tools}
        self._after_listing = after_listing

    async def list_tools(self) -> list[ListedTool]:
        listed = await super().list_tools()
        # The agent lists the tools right after `initialize` and calls one only later: warm up
        # then, so that nothing (loading the application, starting the daemon) competes with
        # the answers it is waiting for.
        if self._after_listing is not None:
            after, self._after_listing = self._after_listing, None
            after()
        return listed

    async def run_lines(self, reader: Any, writer: Any) -> None:
        """`run("stdio")` over given text lines: what `front.SdkInput` reads (the replayed
        handshake, then the agent's pipe) and `SdkOutput` writes."""
        stdin = anyio.wrap_file(cast(IO[str], reader))
        stdout = anyio.wrap_file(cast(IO[str], writer))
        async with stdio_server(stdin, stdout) as (read, write):
            lowlevel = self._lowlevel_server
            await lowlevel.run(read, write, lowlevel.create_initialization_options())

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if self.tools is not None and (agent := _client_name(context)) is not None:
            self.tools.agent = agent
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                errors = cause.errors()
                unknown = [str(e["loc"][0]) for e in errors if e["type"] == "extra_forbidden" and e["loc"]]
                problems = [
                    f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
                    for err in errors
                    if err["type"] != "extra_forbidden"
                ]
                if unknown:
                    takes = ", ".join(self.accepted.get(name, [])) or "no arguments"
                    problems.insert(0, f"unknown argument(s) {', '.join(unknown)} (it takes: {takes})")
                raise ToolError(one_line(f"invalid arguments for {name}: {'; '.join(problems)}")) from cause
            raise


def _client_name(context: Any) -> str | None:
    """The name the client gave in its `initialize` (an agent's: claude-code, cursor...), when
    it is one a commit may carry (`authors.problem`); None otherwise."""
    try:
        info = context.session.client_params.client_info
        name = str(info.name).strip()
    except Exception:  # noqa: BLE001 - no request context, no initialize params: no name
        return None
    return name if authors.problem(name) is None else None


def build_server(tools: Tools, after_listing: Callable[[], None] | None = None) -> _Server:
    registered: list[Tool] = []
    for name in TOOL_NAMES:
        fn = guarded(tools, getattr(tools, name))
        structured = name != "context"  # the context block is text to read, not data
        tool = Tool.from_function(fn, name=name, annotations=HINTS[name], structured_output=structured)
        registered.append(strict(tool))
    server = _Server(
        tools=registered,
        after_listing=after_listing,
        ours=tools,
        name="tmem",
        title="tiered-memory",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
    )

    def resource(fn: Callable[..., str]) -> Callable[..., str]:
        @functools.wraps(fn)
        def read(*args: Any, **kwargs: Any) -> str:
            with tools.lock:
                try:
                    return fn(*args, **kwargs)
                except TmemError as exc:
                    raise ResourceError(error_line(exc)) from None

        return read

    @server.resource("tmem://note/{id}", name="note", title="A note", mime_type="text/markdown")
    @resource
    def note(id: str) -> str:
        """A whole note by its id: frontmatter and body, as in the vault."""
        return tools.note_text(id)

    @server.resource("tmem://profile", name="user-profile", title="User profile", mime_type="text/markdown")
    @resource
    def profile() -> str:
        """Who the user is and how they like to work (long-term/user_profile.md)."""
        return tools.profile()

    @server.resource("tmem://projects", name="projects", title="Projects", mime_type="application/json")
    @resource
    def projects() -> str:
        """The vault's projects with their status and open tasks."""
        return tools.projects()

    @server.prompt(name="start_task", title="Start a task with what memory holds")
    def start_task(
        task: Annotated[str, Field(description="The task, in a sentence or two.")],
        project: Annotated[str | None, Field(description="Project id; default: the active project.")] = None,
    ) -> str:
        """Begin a task with the context memory holds for it (profile, project, relevant memories)."""
        with tools.lock:
            return tools.start_task(task, project)

    @server.prompt(name="remember_decision", title="Remember a decision")
    def remember_decision(
        decision: Annotated[str, Field(description="What was decided.")],
        why: Annotated[str | None, Field(description="The reason, and the options set aside.")] = None,
        project: Annotated[str | None, Field(description="The project it belongs to.")] = None,
    ) -> str:
        """Store a decision as a memory, updating the note that already records it if there is one."""
        return tools.remember_decision(decision, why, project)

    return server


def serve(
    root: Path, *, http: bool = False, port: int = 8765, token: str | None = None, early: Early | None = None
) -> None:
    """Serve until the client disconnects (stdio) or the process is stopped (HTTP). `early`: the
    stdio handshake the front answered (None: the SDK takes the process's stdio itself)."""
    if http:  # checked before anything starts (the daemon included)
        if not token:
            raise BadInput(NO_TOKEN)
        if len(token) < MIN_TOKEN_CHARS:
            raise BadInput(TOKEN_TOO_SHORT)
    tools = Tools(root) if early is None else Tools(root, open_backend=early.backend)

    def warm() -> None:
        # The daemon starts (and indexes) while the agent starts up, not at its first call.
        threading.Thread(target=tools.warm, name="tmem-warm", daemon=True).start()

    listed = early is not None and early.handshake.listed  # the front warmed it up then
    server = build_server(tools, after_listing=None if listed else warm)
    try:
        if early is not None:
            reader = SdkInput(early.wire, early.handshake.replay)
            anyio.run(server.run_lines, reader, SdkOutput(early.wire))
            return
        if not http or token is None:
            server.run("stdio")
            return
        import uvicorn  # only for --http

        app = BearerAuth(server.streamable_http_app(host="127.0.0.1"), token)
        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
    finally:
        tools.close()
        if early is not None:
            early.backend.close()


class BearerAuth:
    """ASGI middleware: every HTTP request must carry `Authorization: Bearer <token>`."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")],
                    }
                )
                await send(
                    {"type": "http.response.body", "body": b"tmem: a valid bearer token is required\n"}
                )
                return
        await self.app(scope, receive, send)
