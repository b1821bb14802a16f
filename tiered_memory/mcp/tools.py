"""The MCP tools, one function each: parse the arguments, run one operation through the backend
(the vault's daemon when it runs, so every session shares one warm model), shape the answer.

Every tool names a note the same way: `id`, which takes a note id or a vault path. Descriptions
are written for the model: when to use the tool, and what comes back.
"""

from __future__ import annotations

__all__ = [
    "Category",
    "Id",
    "MAX_ITEMS",
    "Many",
    "PASSAGE",
    "T",
    "TOOL_NAMES",
    "Text",
    "Tier",
    "Tools",
    "best_passage",
    "one_or_many",
]

import json
import re
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BeforeValidator, Field

from tiered_memory.app.api.agents import CONTEXT, ContextRequest
from tiered_memory.app.api.lifecycle import ARCHIVE, PROMOTE, ArchiveRequest, PromoteRequest
from tiered_memory.app.api.links import LINKS, LinksRequest
from tiered_memory.app.api.notes import (
    FORGET,
    LIST,
    READ,
    RELATED,
    REMEMBER,
    SHOW,
    UPDATE,
    ForgetRequest,
    ListRequest,
    NoteRequest,
    ReadRequest,
    RelatedRequest,
    RememberRequest,
    UpdateRequest,
)
from tiered_memory.app.api.projects import PROJECT_LIST, PROJECT_SHOW, ProjectListRequest, ProjectRequest
from tiered_memory.app.api.reading import MAX_CHARS, MAX_NOTES, READ_MANY, ReadManyRequest
from tiered_memory.app.api.recall import SEARCH
from tiered_memory.app.api.session_list import SessionView
from tiered_memory.app.api.sessions import SESSION_APPEND, SESSION_END, AppendRequest, EndRequest
from tiered_memory.backend import Backend, open_backend
from tiered_memory.errors import BadInput, TmemError
from tiered_memory.model.layout import PROFILE
from tiered_memory.model.search import MAX_FILTER_VALUES, SearchRequest, searched_query

T = TypeVar("T")


def one_or_many(value: Any) -> Any:
    """A single value where a list is expected is a list of one (`project: "survey-app"`)."""
    return [value] if value is not None and not isinstance(value, list | tuple) else value


# The most items of any list (or fields of a mapping) a tool takes: what a search's filter takes.
MAX_ITEMS = MAX_FILTER_VALUES

# Every list a tool takes: a single value is accepted as a one-item list; a list longer than
# MAX_ITEMS is refused in one line before anything runs (an agent's 10,000 folders took 8 s).
Many = Annotated[list[T], BeforeValidator(one_or_many), Field(max_length=MAX_ITEMS)]

Id = Annotated[
    str,
    Field(description="The note: its id (as recall, list and remember return it) or its vault path."),
]
Text = Annotated[str, Field(description="The memory in plain sentences, self-contained.")]
Category = Literal[
    "discovery", "decision", "pattern", "preference", "error", "fact", "profile", "project", "note"
]
Tier = Literal["short", "mid", "long", "archive"]
PASSAGE = 400  # characters of the best-matching passage recall returns per hit


class Tools:
    """The tools of one MCP session. One call at a time (the SDK runs sync tools in threads)."""

    def __init__(self, root: Path, open_backend: Callable[..., Backend] = open_backend) -> None:
        self.root = root
        self.lock = threading.Lock()
        self.warnings: list[str] = []
        self._open = open_backend
        self._opening = threading.Lock()
        self._backend: Backend | None = None
        # The client's name from its `initialize` (claude-code, cursor...), checked: the commits
        # of its changes end with `Agent: <name>`. "mcp" until a call tells it.
        self.agent = "mcp"

    # ---- plumbing ----------------------------------------------------------------------------------

    @property
    def backend(self) -> Backend:
        with self._opening:
            if self._backend is None:
                self._backend = self._open(self.root, warn=self.warnings.append, autostart=True)
            self._backend.agent = self.agent
            return self._backend

    def warm(self) -> None:
        """Open the backend now (starting the daemon if needed), so the first call finds it warm."""
        try:
            self.backend  # noqa: B018 - opening it is the point
        except Exception:  # noqa: BLE001 - the first tool call will say what is wrong
            pass

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()

    def done(self, data: dict[str, Any]) -> dict[str, Any]:
        if self.warnings:
            data["warnings"] = list(self.warnings)
        return data

    # ---- remembering and finding -------------------------------------------------------------------

    def remember(
        self,
        text: Text,
        title: Annotated[str | None, Field(description="Short title; default: the first line.")] = None,
        category: Annotated[Category, Field(description="What kind of memory this is.")] = "fact",
        tier: Annotated[Tier | None, Field(description="Default: long, or mid with a project.")] = None,
        tags: Annotated[Many[str] | None, Field(description="Keywords.")] = None,
        project: Annotated[str | None, Field(description="Project id the memory belongs to.")] = None,
        entities: Annotated[Many[str] | None, Field(description="People or things it is about.")] = None,
        importance: Annotated[float | None, Field(ge=0, le=1, description="0..1, default 0.5.")] = None,
        confidence: Annotated[float | None, Field(ge=0, le=1, description="0..1, default 1.")] = None,
        source: Annotated[str | None, Field(description="Where it came from (a file, URL, session).")] = None,
        session: Annotated[str | None, Field(description="The session id it came from.")] = None,
        folder: Annotated[
            str | None,
            Field(
                description="A folder of the vault to file it in (relative to its root, e.g. Recipes; made "
                "if missing), named by its title; its tier is the folder's. Default: tmem's own tree."
            ),
        ] = None,
    ) -> dict[str, Any]:
        """Store one new memory (a fact, decision, preference, lesson or fix worth keeping) as a note,
        committed to git. Use it once per memory, in plain self-contained sentences; never for
        secrets (they are redacted anyway). To change a memory you already have, use `update`.

        A near-duplicate boosts the existing note instead of adding a copy; a newer fact that
        contradicts an older one supersedes it. The answer's `action` says which happened."""
        result = self.backend.run(
            REMEMBER,
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
                folder=folder,
            ),
        )
        note = result.note
        data: dict[str, Any] = {
            "action": result.action,
            "id": note.id,
            "title": note.title,
            "path": note.path,
            "tier": note.tier,
            "category": note.category,
            "message": result.message,
        }
        if result.other is not None:
            data["other"] = result.other.to_dict()
        if result.superseded:
            data["superseded"] = [n.to_dict() for n in result.superseded]
        return self.done(data)

    def recall(
        self,
        query: Annotated[str, Field(description="What to look for, in words (keyword + semantic search).")],
        limit: Annotated[int, Field(ge=1, le=50, description="Most results.")] = 5,
        tier: Annotated[Many[Tier] | None, Field(description="Only these tiers.")] = None,
        category: Annotated[Many[Category] | None, Field(description="Only these categories.")] = None,
        project: Annotated[str | None, Field(description="Only notes of this project.")] = None,
        entity: Annotated[str | None, Field(description="Only notes about this person or thing.")] = None,
        session: Annotated[str | None, Field(description="Only notes of this session.")] = None,
        by: Annotated[
            str | None,
            Field(
                max_length=100,
                description="Only notes this machine or agent wrote: the start of a commit author's name or email, or of an agent's name (any case).",
            ),
        ] = None,
        folder: Annotated[
            Many[str] | None,
            Field(
                description="Only notes under these folders or matching these globs of vault paths (en/, Projects/**)."
            ),
        ] = None,
        mode: Annotated[
            Literal["hybrid", "keyword", "vector"], Field(description="Retrieval mode.")
        ] = "hybrid",
        min_score: Annotated[
            float | None,
            Field(
                ge=0,
                le=1,
                description="Leave out results scoring below this (default: the vault's search.min_score); "
                "0 lists the nearest notes even when nothing answers the query closely.",
            ),
        ] = None,
    ) -> dict[str, Any]:
        """Search the memories when you need something the user or an earlier session may have
        said: ranked notes, each with its id, title, tier, category, date and the passage that
        matched best. Superseded notes are left out. `read` a hit's `id` for the whole note;
        `update`, `forget`, `promote` or `archive` take the same `id`."""
        request = SearchRequest(
            query=query,
            limit=limit,
            mode=mode,
            tiers=list(tier or []),
            categories=list(category or []),
            projects=[project] if project else [],
            entities=[entity] if entity else [],
            session=session,
            by=by,
            folders=list(folder or []),
            min_score=min_score,
        )
        result = self.backend.run(SEARCH, request)
        searched = searched_query(query)  # what the search read of a huge query, not all of it
        hits = []
        for hit in result.hits:
            passage = hit.passage or self._passage(hit.path, searched) or hit.snippet
            hits.append(
                {
                    "id": hit.id,
                    "title": hit.title,
                    "path": hit.path,
                    "tier": hit.tier,
                    "category": hit.category,
                    "score": round(hit.score, 4),
                    "updated": _iso(hit.updated),
                    "passage": passage,
                }
            )
        # What was searched: a huge query is not sent back whole to the agent that sent it.
        data: dict[str, Any] = {"query": searched, "mode": result.mode, "results": hits}
        if result.notice:
            data["notice"] = result.notice
        return self.done(data)

    def _passage(self, path: str, query: str) -> str:
        try:
            body = self.backend.run(READ, ReadRequest(path)).body
        except TmemError:
            return ""
        return best_passage(body, query)

    def read(
        self,
        id: Id,
        start: Annotated[int | None, Field(ge=1, description="First line of the body (1-based).")] = None,
        end: Annotated[int | None, Field(ge=1, description="Last line of the body (inclusive).")] = None,
    ) -> dict[str, Any]:
        """Read a whole note (or lines start..end of its body) with its frontmatter, before you
        rely on it, quote it or change it with `update`. `lines` is the body's length."""
        note = self.backend.run(READ, ReadRequest(id, start, end))
        return self.done(note.to_dict())

    def update(
        self,
        id: Id,
        body: Annotated[str | None, Field(description="The new body; replaces the whole body.")] = None,
        append: Annotated[str | None, Field(description="Text to add at the end of the body.")] = None,
        fields: Annotated[
            dict[str, Any] | None,
            Field(
                max_length=MAX_ITEMS,
                description='Frontmatter fields to set, e.g. {"tags": ["db"], "importance": 0.8}; null removes '
                "one. Known keys are checked: importance and confidence 0..1, category and status one "
                "of their words, tags/entities/aliases lists, dates ISO; id, created and tier are fixed.",
            ),
        ] = None,
        reason: Annotated[str | None, Field(description="Why (goes into the git commit message).")] = None,
        section: Annotated[
            str | None,
            Field(
                description="Edit only the text under this heading ('Tasks' or '## Tasks'), up to the "
                "next heading: `operation` with `text`."
            ),
        ] = None,
        operation: Annotated[
            Literal["append", "prepend", "replace"] | None,
            Field(description="With section: add text at its end (default) or start, or replace its text."),
        ] = None,
        text: Annotated[str | None, Field(description="With section: the text to add or put in.")] = None,
        find: Annotated[
            str | None, Field(description="Exact text of the body to replace with `replace`.")
        ] = None,
        replace: Annotated[str | None, Field(description="What `find` becomes ('' deletes it).")] = None,
        count: Annotated[
            int, Field(ge=1, description="How many times `find` occurs; any other number is refused.")
        ] = 1,
    ) -> dict[str, Any]:
        """Correct or extend a memory you found with `recall` or `read`: replace its body, append
        to it, edit one section (append to, prepend to or replace the text under a heading), find
        and replace an exact text, or set frontmatter fields (title, tags, importance, status,
        project...). One git commit; secrets are redacted. Prefer this to `remember` when the note
        already exists."""
        request = UpdateRequest(
            id, body, append, dict(fields or {}), reason, section, operation, text, find, replace, count
        )
        changed = self.backend.run(UPDATE, request)
        return self.done(changed.to_dict())

    def list(
        self,
        tier: Annotated[Many[Tier] | None, Field(description="Only these tiers.")] = None,
        category: Annotated[Many[Category] | None, Field(description="Only these categories.")] = None,
        tag: Annotated[Many[str] | None, Field(description="Only notes with these tags.")] = None,
        project: Annotated[Many[str] | None, Field(description="Only notes of these projects.")] = None,
        entity: Annotated[
            Many[str] | None, Field(description="Only notes about these people or things.")
        ] = None,
        status: Annotated[
            Many[str] | None, Field(description="active, completed, cancelled, superseded.")
        ] = None,
        since: Annotated[
            str | None, Field(description="Updated at or after (YYYY-MM-DD or ISO time).")
        ] = None,
        until: Annotated[
            str | None, Field(description="Updated at or before (YYYY-MM-DD or ISO time).")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=500, description="Most notes.")] = 50,
        folder: Annotated[
            Many[str] | None,
            Field(
                description="Only notes under these folders or matching these globs of vault paths (en/, Projects/**)."
            ),
        ] = None,
    ) -> dict[str, Any]:
        """List notes by their fields (no query): everything of a project, a tag, a tier or a time
        span, newest first within each tier. Use `recall` to search by meaning instead."""
        request = ListRequest(
            tiers=list(tier or []),
            categories=list(category or []),
            tags=list(tag or []),
            projects=list(project or []),
            entities=list(entity or []),
            statuses=list(status or []),
            folders=list(folder or []),
            since=_when(since, "since"),
            until=_when(until, "until"),
            limit=limit,
        )
        found = self.backend.run(LIST, request)
        return self.done({"notes": [n.to_dict() for n in found.notes]})

    def related(
        self,
        id: Id,
        limit: Annotated[int, Field(ge=1, le=50, description="Most notes.")] = 5,
    ) -> dict[str, Any]:
        """Notes related to one: those it links to or is linked from and those sharing its tags,
        else the notes closest in meaning. Use it to explore around a note you found."""
        found = self.backend.run(RELATED, RelatedRequest(id, limit))
        return self.done(found.to_dict())

    def links(self, id: Id) -> dict[str, Any]:
        """The links of a note: `outgoing` (each link as written, with the note or attachment it
        resolves to; no `note` when nothing in the vault matches) and `backlinks` (the notes that
        link to it). Use it to follow a note's [[links]] or to see what relies on a note."""
        return self.done(self.backend.run(LINKS, LinksRequest(id)).to_dict())

    def read_many(
        self,
        ids: Annotated[
            Many[str] | None, Field(description="Note ids or vault paths, read in this order.")
        ] = None,
        glob: Annotated[
            str | None,
            Field(
                description='Paths matching a glob, relative to memory/ or the vault, e.g. "long-term/decisions/*.md" or "mid-term/projects/survey-app/**" (* stays in a folder, ** crosses folders).'
            ),
        ] = None,
        limit: Annotated[int, Field(ge=1, le=MAX_NOTES, description="Most notes returned.")] = 10,
        max_chars: Annotated[
            int, Field(ge=200, le=MAX_CHARS, description="A longer body is cut (its path is in `truncated`).")
        ] = 10_000,
    ) -> dict[str, Any]:
        """Read several notes in one call, by ids (as recall and list return them) or by a path
        glob: each with its frontmatter and body, as `read` gives it. Notes that cannot be read are
        in `missing` with the reason; `omitted` counts matches beyond `limit` (or the total size);
        a cut body's path is in `truncated` (`read` it with start/end for the rest)."""
        request = ReadManyRequest(list(ids or []), glob, limit, max_chars)
        return self.done(self.backend.run(READ_MANY, request).to_dict())

    def context(
        self,
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
        """Call at the start of a task: the context block to read first (the user's profile, the
        active project's status and open tasks, the current session and the most relevant
        memories), within a token budget."""
        request = ContextRequest(query, project, entity, budget, include_sensitive, fmt="markdown")
        return self.backend.run(CONTEXT, request).text

    # ---- changing tiers, forgetting ----------------------------------------------------------------

    def forget(
        self,
        id: Id,
        reason: Annotated[str | None, Field(description="Why (goes into the git commit message).")] = None,
    ) -> dict[str, Any]:
        """Delete a memory that is wrong or that the user asked to forget (a git commit: the user
        can bring it back with `tmem restore`). To fix a memory instead, use `update`."""
        gone = self.backend.run(FORGET, ForgetRequest(id, reason))
        return self.done(
            {"forgotten": gone.id, "path": gone.path, "title": gone.title, "commit": gone.commit}
        )

    def promote(
        self,
        id: Id,
        to: Annotated[
            Literal["mid", "long"] | None, Field(description="Target tier; default: the next one up.")
        ] = None,
    ) -> dict[str, Any]:
        """Move a memory up a tier (short -> mid -> long) when it proved durable or important."""
        return self.done({"promoted": self.backend.run(PROMOTE, PromoteRequest(id, to)).to_dict()})

    def archive(
        self,
        id: Id,
        reason: Annotated[str | None, Field(description="Why it is no longer current.")] = None,
    ) -> dict[str, Any]:
        """Move a memory that is no longer current to the archive (kept and searchable on request,
        out of normal recall)."""
        request = ArchiveRequest(id, reason or "archived by an agent (MCP)")
        return self.done({"archived": self.backend.run(ARCHIVE, request).to_dict()})

    # ---- sessions ----------------------------------------------------------------------------------

    def session_append(
        self,
        text: Annotated[str, Field(description="What happened: a message, a step, a finding.")],
        role: Annotated[
            Literal["user", "assistant", "system", "tool"], Field(description="Who said it.")
        ] = "assistant",
        session: Annotated[
            str | None, Field(description="Session id; default: the live session (one is started if none).")
        ] = None,
    ) -> dict[str, Any]:
        """Log an entry of this session (a step, a finding) in short-term memory; secrets are redacted."""
        view = self.backend.run(SESSION_APPEND, AppendRequest(text, role, session))
        return self.done({"session": _session(view)})

    def session_end(
        self,
        summary: Annotated[
            str | None, Field(description="A few sentences: goal, what was done, what is left.")
        ] = None,
        session: Annotated[str | None, Field(description="Session id; default: the live session.")] = None,
    ) -> dict[str, Any]:
        """End the session when the work is done: a summary is written, its lessons are stored as
        memories (without duplicates) and the session is archived."""
        view = self.backend.run(SESSION_END, EndRequest(session, summary))
        return self.done({"session": _session(view)})

    # ---- prompts -----------------------------------------------------------------------------------

    def start_task(self, task: str, project: str | None = None) -> str:
        """The `start_task` prompt: the task and the context block memory holds for it."""
        try:
            block = self.backend.run(CONTEXT, ContextRequest(task, project, fmt="markdown")).text
        except TmemError as exc:
            block = (
                f"(tmem could not build the context: {' '.join(str(exc).split())}; call the `context` tool)"
            )
        return (
            f"I am starting this task: {task.strip()}\n\n"
            "Here is what my memory (tmem) holds that may bear on it. Memories may be outdated: "
            "check what the task relies on before acting on it.\n\n"
            f"{block.strip()}\n\n"
            "Use `recall` for anything else you need from earlier sessions, and `remember` the "
            "decisions, fixes and lessons worth keeping as you go (one per call, never secrets)."
        )

    @staticmethod
    def remember_decision(decision: str, why: str | None = None, project: str | None = None) -> str:
        """The `remember_decision` prompt: how to store a decision without duplicating one."""
        lines = ["Store this decision in my memory (tmem).", "", f"Decision: {decision.strip()}"]
        if why and why.strip():
            lines.append(f"Why: {why.strip()}")
        if project and project.strip():
            lines.append(f"Project: {project.strip()}")
        where = f', project "{project.strip()}"' if project and project.strip() else ""
        lines += [
            "",
            "First `recall` it to see whether a note already records this decision or one it "
            "replaces. If one does, `update` that note (append what changed and why) instead of "
            'adding a copy. Otherwise call `remember` with category "decision"'
            f"{where}, a short title and the decision with its reason in plain, self-contained "
            "sentences. Never include secrets. Then tell me the note's id.",
        ]
        return "\n".join(lines)

    # ---- resources ---------------------------------------------------------------------------------

    def note_text(self, id: str) -> str:
        """A whole note file (frontmatter and body), as `tmem://note/{id}` serves it."""
        return self.backend.run(SHOW, NoteRequest(id)).text

    def profile(self) -> str:
        return self.backend.run(SHOW, NoteRequest(PROFILE)).text

    def projects(self) -> str:
        """The active project and every open project's status, summary and open tasks."""
        current = self.backend.run(CONTEXT, ContextRequest(budget=50, fmt="json")).project
        out: dict[str, Any] = {"current": current, "projects": {}}
        for summary in self.backend.run(PROJECT_LIST, ProjectListRequest()).projects:
            view = self.backend.run(PROJECT_SHOW, ProjectRequest(summary.id))
            out["projects"][view.id] = {
                "title": view.title,
                "status": view.status,
                "summary": view.description,
                "open_tasks": [f"- [ ] {t.text}" for t in view.tasks if t.status == "open"],
            }
        return json.dumps(out, ensure_ascii=False, indent=2, default=str)


TOOL_NAMES = (
    "remember",
    "recall",
    "read",
    "update",
    "list",
    "related",
    "links",
    "read_many",
    "context",
    "forget",
    "promote",
    "archive",
    "session_append",
    "session_end",
)


# ---- helpers ---------------------------------------------------------------------------------------

_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")


def best_passage(body: str, query: str, limit: int = PASSAGE) -> str:
    """The paragraph of `body` that shares the most words with `query` (the first on a tie),
    trimmed to whole sentences within `limit` characters."""
    terms = {w.lower() for w in _WORD.findall(query) if len(w) > 1}
    paragraphs = [
        p.strip() for p in re.split(r"\n\s*\n", body) if p.strip() and not p.strip().startswith("---")
    ]
    if not paragraphs:
        return ""

    def score(paragraph: str) -> int:
        return len(terms & {w.lower() for w in _WORD.findall(paragraph)})

    best = max(paragraphs, key=score)  # max keeps the first of equals
    text = " ".join(best.split())
    if len(text) <= limit:
        return text
    sentences = _SENTENCE_END.split(text)
    scored = sorted(range(len(sentences)), key=lambda i: -score(sentences[i]))
    first = scored[0]
    out = sentences[first]
    i = first + 1
    while i < len(sentences) and len(out) + 1 + len(sentences[i]) <= limit:
        out += " " + sentences[i]
        i += 1
    return out if len(out) <= limit else out[: limit - 1].rsplit(" ", 1)[0] + "…"


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds") if ts else ""


def _when(value: str | None, name: str) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.strip())
    except ValueError:
        raise BadInput(f"{name}: '{value}' is not a date (YYYY-MM-DD or ISO time)") from None


def _session(view: SessionView) -> dict[str, Any]:
    """What an agent needs back about a session: not its whole message log."""
    data: dict[str, Any] = {
        "id": view.id,
        "title": view.title,
        "path": view.path,
        "status": view.status,
        "project": view.project,
        "message_count": view.messages,
        "summary": view.summary,
        "notice": view.notice,
    }
    if view.memories:
        data["memories"] = [m.to_dict() for m in view.memories]
    return {k: v for k, v in data.items() if v not in (None, "")}
