"""The context block an agent puts in its system prompt at session start (`tmem context`).

In priority order: essentials of the user profile, the person asked about (`--entity`), the active
project's status and open tasks, the current session's state, then the most relevant memories
(hybrid search on the query, or recent and important ones without one) with category, date and
source. Packed within a token budget counted by a real tokenizer: each fixed section may take at
most its share of the budget, memories get the rest, best first. A memory too long for the room
left is trimmed at a sentence or word bound rather than skipped, and once one no longer fits at
all, none ranked below it is shown: a lower-ranked memory is never kept while a higher-ranked one
is dropped. The whole block is counted once more at the end, so the budget is never exceeded.
Sensitive notes are left out unless asked for; superseded ones always are. Encrypted notes take
part only when asked for too (`--include-sensitive`) or when the person's
`privacy.sealed_in_prompts` lets them in, while the vault is unlocked (from memory: `app.sealed`);
while it is locked they are left out and a notice says how many.
"""

from __future__ import annotations

__all__ = [
    "FORMATS",
    "MAX_KEYS",
    "MAX_MEMORY_CHARS",
    "MAX_TITLE_CHARS",
    "MEMORY_SHARE",
    "MIN_CUT",
    "OUTDATED",
    "SHARES",
    "build_context",
    "context",
]

import json
import math
import re
from datetime import UTC
from typing import Any

from tiered_memory.app import sealed
from tiered_memory.app.api.agents import (
    CONTEXT_FORMATS,
    ContextBlock,
    ContextMemory,
    ContextRequest,
    ContextSection,
)
from tiered_memory.app.context_sources import (
    ACTIVE_CONTEXTS,
    CONTEXT_STACK,
    CURRENT_SESSION,
    PREFERENCES,
    PROFILE,
    PROJECTS,
    active_project,
    describe,
    essentials,
    flatten,
    live_keys,
    one_line,
    open_tasks,
    summary_only,
    valid_project_id,
)
from tiered_memory.app.entities import find_entity
from tiered_memory.app.memory import Memory
from tiered_memory.errors import BadInput, Locked, NoteParseError
from tiered_memory.index.attachments import CATEGORY as ATTACHMENT
from tiered_memory.index.catalog import NoteRow
from tiered_memory.index.tokens import TokenCounter, default_counter
from tiered_memory.model import note as notes
from tiered_memory.model.agent_text import inert
from tiered_memory.model.obsidian import link_text
from tiered_memory.model.privacy import withheld
from tiered_memory.model.search import Filters, SearchRequest
from tiered_memory.storage import access

FORMATS = CONTEXT_FORMATS
# Most of the budget a fixed section may take; what it leaves flows on to the next ones.
SHARES = {"profile": 0.25, "entity": 0.2, "project": 0.3, "session": 0.2}
MEMORY_SHARE = 0.25  # one memory takes at most this share of the budget
MAX_MEMORY_CHARS = 4000
MAX_KEYS = 8  # short-term keys shown
MAX_TITLE_CHARS = 120  # a person's note may have a title of any length; one must not fill the block
MIN_CUT = 12  # a line is cut to fit only when at least this many tokens are left for it
OUTDATED = "they may be outdated, so verify before relying on them."


def context(memory: Memory, request: ContextRequest) -> ContextBlock:
    """The operation: the context block for an agent's system prompt."""
    if request.budget is not None and request.budget < 1:
        raise BadInput("the budget must be a positive number of tokens")
    return build_context(
        memory,
        query=request.query,
        project=request.project,
        entity=request.entity,
        budget=request.budget,
        include_sensitive=request.include_sensitive,
        fmt=request.fmt,
    )


def build_context(
    memory: Memory,
    *,
    query: str | None = None,
    project: str | None = None,
    entity: str | None = None,
    budget: int | None = None,
    include_sensitive: bool = False,
    fmt: str = "markdown",
    counter: TokenCounter | None = None,
) -> ContextBlock:
    """The context block for these options."""
    if fmt not in FORMATS:
        raise BadInput(f"unknown context format '{fmt}' (one of: {', '.join(FORMATS)})")
    query = (query or "").strip() or None
    counter = counter or default_counter()
    cfg = memory.config.context
    budget = cfg.budget_tokens if budget is None else int(budget)
    builder = _Builder(memory, counter, budget, include_sensitive)
    notices: list[str] = []

    names: list[str] = []
    sections: list[ContextSection] = []
    sections.append(builder.profile_section())
    if entity:
        builder.entity_asked = True
        profile = find_entity(memory, entity)
        if profile is None:
            names = [entity.strip()]
            notices.append(f"no profile for '{entity}' (tmem entity add); memories are filtered by that name")
        else:
            names = profile.names
            if builder.allowed(profile.note):
                builder.used.add(profile.note.path)
                sections.append(ContextSection("entity", f"About {profile.name}", profile.summary_lines()))
    project_id = valid_project_id(project) if project else active_project(memory)
    if project_id:
        section = builder.project_section(project_id)
        if section.lines:
            sections.append(section)
        elif project:
            notices.append(f"project '{project_id}' has no status.md or tasks.json")
    sections.append(builder.session_section())

    header, footer = _frame(fmt, counter.name, project_id, names[0] if names else None)
    frame_tokens = counter.count("\n".join([*header, *footer]))
    if budget < frame_tokens + MIN_CUT:
        raise BadInput(f"budget of {budget} tokens is too small: the frame alone takes {frame_tokens}")
    remaining = budget - frame_tokens
    kept: list[ContextSection] = []
    for section in sections:
        if not section.lines:
            continue
        cap = min(remaining, int(budget * SHARES.get(section.name, 0.2)))
        if builder.pack(section, cap):
            kept.append(section)
            remaining -= section.tokens

    candidates, notice = builder.candidates(query, names, project_id, cfg.max_memories)
    if notice:
        notices.append(notice)
    title = "Relevant memories" if query else "Recent and important memories"
    mem_section = ContextSection("memories", title)
    chosen = builder.pack_memories(mem_section, candidates, remaining)
    if chosen:
        kept.append(mem_section)

    lines = list(header)
    for section in kept:
        lines += ["", section.text]
    lines += footer
    text = "\n".join(lines)
    # Counts are additive over lines (both tokenizers split on whitespace), but the final word is
    # the whole block's own count: drop content lines from the end until it fits.
    while counter.count(text) > budget and len(lines) > len(header) + len(footer):
        del lines[-len(footer) - 1]
        text = "\n".join(lines)
    memory_ids = [m.id for m in chosen if m.line in text]
    private = sealed.private_paths(memory)  # an encrypted note's id tells its title: not logged
    logged = [m.id for m in chosen if m.line in text and m.path not in private]
    if logged:
        access.record(memory.root, logged, memory.now())
    shut = sealed.locked(memory)
    if shut:
        notices.append(f"{shut} encrypted note(s) left out: the vault is locked (tmem unlock)")
    return ContextBlock(
        text=text,
        tokens=counter.count(text),
        budget=budget,
        tokenizer=counter.name,
        fmt=fmt,
        query=query,
        project=project_id,
        entity=names[0] if names else None,
        sections=[s for s in kept if s.name != "memories"],
        memories=[m for m in chosen if m.line in text],
        omitted=len(candidates) - len(memory_ids),
        notices=notices,
    )


def _frame(fmt: str, tokenizer: str, project: str | None, entity: str | None) -> tuple[list[str], list[str]]:
    # Short on purpose: the frame is paid for in every prompt. The query is not echoed back.
    about = (f" for project {project}" if project else "") + (f" about {inert(entity)}" if entity else "")
    intro = f"Memories from earlier sessions{about}, recalled by tmem; {OUTDATED}"
    if fmt == "json":
        return [intro], []
    return [f'<project-memory tokenizer="{tokenizer}">', intro], ["</project-memory>"]


class _Builder:
    def __init__(self, memory: Memory, counter: TokenCounter, budget: int, include_sensitive: bool) -> None:
        self.memory = memory
        self.vault = memory.vault
        self.counter = counter
        self.budget = budget
        self.include_sensitive = include_sensitive
        self._encrypted: set[str] | None = None  # the notes stored encrypted, once asked
        self.entity_asked = False
        # Files shown in a section are not repeated among the memories.
        self.used: set[str] = {PROFILE, PREFERENCES, CURRENT_SESSION, CONTEXT_STACK, ACTIVE_CONTEXTS}

    # ---- reading ---------------------------------------------------------------------------
    def allowed(self, note: notes.Note) -> bool:
        return not self.withheld(note.path, note.sensitive) and not note.superseded_by

    def withheld(self, path: str, sensitive: bool) -> bool:
        """Left out unless asked for, by the rule an export follows: sensitive, sealed because of
        its path, or stored encrypted (held in memory only while unlocked). The person's
        `privacy.sealed_in_prompts` lets the sealed ones in, never the sensitive ones."""
        if self.include_sensitive:
            return False
        privacy = self.vault.config.privacy
        if privacy.sealed_in_prompts:
            return sensitive
        if withheld(path, sensitive, privacy.encrypt, privacy.encrypted_paths):
            return True
        if self._encrypted is None:
            self._encrypted = set(sealed.paths(self.memory))
        return path in self._encrypted

    def read(self, rel: str) -> notes.Note | None:
        if not self.vault.abspath(rel).is_file():
            return None
        try:
            note = self.vault.read_note(rel)
        except NoteParseError:
            return None
        except Locked:  # an encrypted note while no key is at hand: counted in the notices
            return None
        return note if self.allowed(note) else None

    def read_json(self, rel: str) -> Any:
        note = self.read(rel)
        if note is None:
            return None
        try:
            return json.loads(note.body)
        except (ValueError, RecursionError):
            return None

    # ---- fixed sections -----------------------------------------------------------------------
    def profile_section(self) -> ContextSection:
        section = ContextSection("profile", "User profile")
        profile = self.read(PROFILE)
        if profile is not None:
            section.lines += essentials(profile)
        prefs = self.read(PREFERENCES)
        if prefs is not None and (lines := essentials(prefs)):
            section.lines += ["How the agent should work:", *lines]
        return section

    def project_section(self, project_id: str) -> ContextSection:
        section = ContextSection("project", f"Project {project_id}")
        folder = f"{PROJECTS}/{project_id}"
        status = self.read(f"{folder}/status.md")
        if status is not None:
            self.used.add(status.path)
            state = status.meta.get("status")
            if state:
                section.lines.append(f"Status: {state}")
            section.lines += essentials(status)
        tasks = open_tasks(self.read_json(f"{folder}/tasks.json"))
        self.used.add(f"{folder}/tasks.json")
        if tasks:
            section.lines += ["Open tasks:", *tasks]
        return section

    def session_section(self) -> ContextSection:
        section = ContextSection("session", "Current session")
        current = self.read(CURRENT_SESSION)
        if current is not None:
            section.lines += essentials(current)
        stack = self.read_json(CONTEXT_STACK)
        frames = stack.get("stack", stack.get("frames")) if isinstance(stack, dict) else stack
        if isinstance(frames, list) and frames:
            section.lines.append("Context stack (innermost last):")
            section.lines += [f"- {one_line(describe(f))}" for f in frames[-5:] if describe(f)]
        elif isinstance(stack, dict) and stack:
            live = live_keys(stack, self.memory.now())
            if live:
                section.lines.append("Short-term context:")
                section.lines += [f"- {k}: {one_line(describe(v))}" for k, v in live[:MAX_KEYS]]
        return section

    # ---- memories -----------------------------------------------------------------------------
    def candidates(
        self, query: str | None, names: list[str], project: str | None, limit: int
    ) -> tuple[list[ContextMemory], str | None]:
        notice = None
        scored: list[tuple[str, float | None]]
        if query:
            request = SearchRequest(
                query=query, limit=limit * 3, entities=names, include_sensitive=self.include_sensitive
            )
            result = sealed.search(self.memory, request, record_access=False, say_locked=False)
            notice = result.notice
            scored = [(h.path, round(h.score, 4)) for h in result.hits if h.category != ATTACHMENT]
        else:
            rows = self.memory.list_notes(Filters(entities=names))
            held = sealed.prepared(self.memory, "keyword")
            if held is not None:  # encrypted notes, while unlocked: rows from memory
                wanted = {n.lower() for n in names}
                rows += [
                    r for r in held.rows().values() if not wanted or wanted & {e.lower() for e in r.entities}
                ]
            now = self.memory.now().timestamp()
            ranked = sorted(
                (r for r in rows if self._row_ok(r)),
                key=lambda r: (-_standing(r, project, now), r.path),
            )
            scored = [(r.path, None) for r in ranked]
        out: list[ContextMemory] = []
        for path, score in scored:
            if len(out) >= limit:
                break
            if path in self.used or path.endswith(".json"):
                continue
            note = self.read(path)  # None for a note withheld (see `allowed`)
            if note is None or note.status == "superseded":
                continue
            if note.category == "session" and note.tier == "short":
                continue  # a live session: the Current session section already says where it stands
            # One line per memory; a huge note is cut before tokenizing (no share of a budget holds it).
            # Links as the reader sees them (`[[a|b]]` is `b`), as search's passages show them.
            body = inert(link_text(flatten(essentials(summary_only(note))))[:MAX_MEMORY_CHARS])
            if not body:
                continue  # a template with nothing written in it yet
            updated = note.updated
            source = str(note.meta.get("source") or "")
            if not source and note.meta.get("session"):
                source = f"session:{note.meta['session']}"
            mem = ContextMemory(
                id=note.id,
                title=inert(_short_title(note.title)),
                category=inert(note.category),
                tier=note.tier or "",
                path=path,
                date=updated.astimezone(UTC).strftime("%Y-%m-%d") if updated else "",
                source=inert(source),
                score=score,
            )
            mem.line = body  # the text; pack_memories turns it into the line
            out.append(mem)
        return out, notice

    def _row_ok(self, row: NoteRow) -> bool:
        if row.skipped or row.tier == "archive" or row.status == "superseded" or row.superseded_by:
            return False
        if row.category == "profile" and not self.entity_asked:
            return False  # people's profiles come in through --entity (or a query naming them)
        return not self.withheld(row.path, row.sensitive)

    def pack_memories(
        self, section: ContextSection, items: list[ContextMemory], budget: int
    ) -> list[ContextMemory]:
        """Memories in rank order, each whole or trimmed to the room left; stops at the first one
        that cannot be shown at all, so no lower-ranked memory is kept in its place."""
        heading = self.counter.count(f"## {section.title}")
        remaining = budget - heading
        chosen: list[ContextMemory] = []
        per_memory = max(MIN_CUT * 3, int(self.budget * MEMORY_SHARE))
        for mem in items:
            room = min(remaining, per_memory)
            fitted = self._fit(mem, room)
            if fitted is None:
                break
            line, tokens = fitted
            mem.line = line
            section.lines.append(line)
            section.tokens += tokens
            remaining -= tokens
            chosen.append(mem)
        if chosen:
            section.tokens += heading
        return chosen

    def _fit(self, mem: ContextMemory, room: int) -> tuple[str, int] | None:
        """The memory's line within `room` tokens, trimmed if need be; None when even a trimmed
        line cannot fit. The date and source go before the text does; the id stays."""
        text = mem.line
        lead = _lead(mem, text)
        line = f"- [{mem.category}] {lead}{text}{_tail(mem)}"
        tokens = self.counter.count(line)
        if tokens <= room:
            return line, tokens
        for tail in dict.fromkeys((_tail(mem), f" (id: {mem.id})")):
            fixed = self.counter.count(f"- [{mem.category}] {lead}… {tail}")
            left = room - fixed
            if left < MIN_CUT // 2:
                continue
            while left > 0:
                cut = _at_bound(self.counter.truncate(text, left))
                if not cut:
                    break
                more = "" if cut == text.rstrip() else "…"
                line = f"- [{mem.category}] {lead}{cut}{more}{tail}"
                tokens = self.counter.count(line)
                if tokens <= room:
                    mem.trimmed = bool(more)
                    return line, tokens
                left -= max(1, tokens - room)
        return None

    def pack(self, section: ContextSection, cap: int) -> bool:
        """Fit the section's lines into `cap` tokens, cutting the first line that does not fit."""
        lines, section.lines = [inert(link_text(line)) for line in section.lines], []
        section.title = inert(section.title)
        used = self.counter.count(f"## {section.title}")
        for line in lines:
            tokens = self.counter.count(line)
            if used + tokens <= cap:
                section.lines.append(line)
                used += tokens
                continue
            room = cap - used
            if room >= MIN_CUT:
                cut = self.counter.truncate(line, room - 1).rstrip() + "…"
                while cut != "…" and self.counter.count(cut) > room:
                    cut = cut[:-2] + "…"
                if cut != "…":
                    section.lines.append(cut)
                    used += self.counter.count(cut)
            section.truncated = True
            break
        section.tokens = used
        return bool(section.lines)


def _short_title(title: str) -> str:
    flat = one_line(title)
    return flat if len(flat) <= MAX_TITLE_CHARS else flat[: MAX_TITLE_CHARS - 1].rsplit(" ", 1)[0] + "…"


def _lead(mem: ContextMemory, text: str) -> str:
    """The title before the text, unless the text already starts with it."""
    if not mem.title or text.lower().startswith(mem.title.lower().rstrip(".…")):
        return ""
    return f"{mem.title}: "


def _tail(mem: ContextMemory) -> str:
    parts = [
        p for p in (mem.date, f"source: {mem.source}" if mem.source else "", f"id: {inert(mem.id)}") if p
    ]
    return f" ({'; '.join(parts)})"


def _standing(row: NoteRow, project: str | None, now: float) -> float:
    """Rank without a query: importance, recency, confidence, use, and the active project."""
    days = max(0.0, (now - (row.updated or now)) / 86400.0)
    score = 0.4 * row.importance + 0.3 * math.exp(-days / 30.0) + 0.2 * row.confidence
    score += 0.1 * (1.0 - math.exp(-row.access_count / 5.0))
    if project and row.project == project:
        score += 0.3
    if row.tier == "short":
        score += 0.1
    return score


_SENTENCE_END = re.compile(r"[.!?。！？](?=\s)")


def _at_bound(cut: str) -> str:
    """A prefix cut at a token bound, taken back to the last sentence end when that keeps at least
    half of it, else to the last word bound (a whole first word is kept as it is)."""
    cut = cut.rstrip()
    ends = [m.end() for m in _SENTENCE_END.finditer(cut + " ")]
    if ends and ends[-1] >= len(cut) // 2:
        return cut[: ends[-1]]
    space = cut.rfind(" ")
    return cut[:space].rstrip(" ,;:-") if space > 0 else cut
