"""Extraction as an operation: find memories in a transcript, a compaction summary or a stored
session, and file them through dedup (one commit), or say what filing them would do (a dry run).

The configured extractor is the LLM one (`extract.llm: true`) with the rules as its fallback when
the endpoint fails, else the rules. Text is redacted before any extractor sees it: the LLM one may
send it to a remote endpoint.
"""

from __future__ import annotations

__all__ = ["extract_memories", "outcome_view"]

from tiered_memory.app import dedup, input_size, session_store
from tiered_memory.app.api.sessions import CandidateView, ExtractRequest, ExtractResult, MemoryOutcome
from tiered_memory.app.dedup import RememberOutcome
from tiered_memory.app.extract_llm import run
from tiered_memory.app.memory import Memory
from tiered_memory.app.session_memories import new_notes
from tiered_memory.app.session_store import Redactor
from tiered_memory.errors import BadInput
from tiered_memory.model import session_format, transcripts
from tiered_memory.model.transcripts import Message


def outcome_view(outcome: RememberOutcome) -> MemoryOutcome:
    return MemoryOutcome(
        action=outcome.action,
        id=outcome.note.id,
        title=outcome.note.title,
        path=outcome.note.path,
        category=outcome.note.category,
        confidence=outcome.note.confidence,
        other=outcome.other.id if outcome.other is not None else None,
        superseded=[n.id for n in outcome.superseded],
        reason=outcome.reason,
        message=outcome.message,
    )


def _material(memory: Memory, request: ExtractRequest) -> tuple[str | list[Message], str, str | None]:
    """(messages or text, name, session id) to extract from."""
    if request.session:
        if request.text is not None:
            raise BadInput("give a FILE or --session, not both")
        session = session_store.show(memory, request.session)
        return session.messages, session.id, session.id
    if request.lines is not None:
        source: transcripts.Source = request.lines
    elif request.text is not None:
        source = request.text
    else:
        raise BadInput("nothing to extract from: give the text or a session")
    name = request.name
    forced = transcripts.normalize_format(request.fmt)
    # Each message measured as it is read, as a session note would hold it (a heading each): a
    # transcript of millions of tiny messages is refused at the first past the limit rather than
    # held whole, as `tmem ingest` refuses it.
    meter = input_size.Meter(memory, f"{name}: the messages")

    def measure(message: Message) -> None:
        meter.add(
            message.content if len(message.content) > meter.most else session_format.message_block(message)
        )

    if isinstance(source, str) and "\x00" in source:
        raise BadInput(f"{name} is binary data, not a transcript")
    if isinstance(source, str) and forced is None and transcripts.detect(source) == "markdown":
        found = transcripts.markdown_messages(source, on_message=measure)
        return (found or source), name, None
    return transcripts.parse(source, forced, name, measure).messages, name, None


_WOULD = {"added": "add", "merged": "merge", "superseded": "supersede"}


def extract_memories(memory: Memory, request: ExtractRequest) -> ExtractResult:
    material, name, sid = _material(memory, request)
    input_size.check(memory, [material] if isinstance(material, str) else (m.content for m in material))
    redact = Redactor(memory)
    if isinstance(material, str):
        material = redact(material)
    else:
        material = [Message(m.role, redact(m.content), m.timestamp) for m in material]
    redact.report(memory)
    found, extractor = run(memory.config.extract, material, sid, memory.warn)
    items = new_notes(found, extractor, sid, request.project, f"extract:{name}")
    if request.dry_run:
        rows: list[CandidateView] = []
        for candidate, item in zip(found, items, strict=True):
            verdict = dedup.judge(memory, item)
            other = verdict.other.note if verdict.other else None
            rows.append(
                CandidateView(
                    category=candidate.category,
                    confidence=candidate.confidence,
                    text=candidate.text,
                    cue=candidate.cue,
                    would=_WOULD.get(verdict.action, verdict.action),
                    other=other.id if other else None,
                    reason=verdict.other.reason if verdict.other else "",
                )
            )
        return ExtractResult(extractor, dry_run=True, candidates=rows)
    outcomes, sha = dedup.remember_many(memory, items, f"extract: memories from {name}")
    return ExtractResult(extractor, memories=[outcome_view(o) for o in outcomes], commit=sha)
