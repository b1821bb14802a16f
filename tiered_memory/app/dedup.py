"""Remember without duplicates or stale contradictions.

`remember()` compares a new memory with its nearest existing notes (full-text candidates of the
same project, or of any project for preferences and profile facts; superseded, archived and
session notes are left out) and does one of three things:

- **merged**: a note says the same (same statement, or token-overlap Jaccard >= `dedup.token_overlap`,
  or embedding cosine >= `dedup.cosine` when the model is warm: see below) *and* the new memory adds
  no detail of its own (a number, date, version, name, quoted string or negation: details.py):
  its confidence goes up by 0.1 (capped at 1) and the new source joins its `sources` list; no
  copy is written.
- **superseded**: the new memory contradicts short notes about the same subject (see statements.py),
  or is a close copy that flips a negation or announces a change ("now", "switched to") while its
  details differ: it is written with `supersedes`, the old ones get `superseded_by` and
  `status: superseded`, and search stops showing them (`tmem search --all` still does).
- **added**: anything else is written as a new note. A close copy that differs only in a detail
  ("Release 2.4 shipped" beside "Release 2.3 shipped") is added and kept beside the old one, and
  the result names that note so the caller can archive it if the new one replaces it.

A contradiction is never a duplicate, however close the embeddings of "uses WGS84" and "uses
CGCS2000" are. Each call is one commit; `remember_many` makes one commit for a whole batch.

Vectors only when warm: the candidates always come from the full-text index (BM25), and their
embeddings are compared only when this process holds the model already (the daemon loads it at
start, a command after a hybrid search). `tmem add` with no daemon compares words alone instead of
waiting for a cold model load; scripts/eval_dedup.py measures what that misses, and
`tmem maintain` merges long-term near-duplicates by their embeddings later.
"""

from __future__ import annotations

__all__ = [
    "Action",
    "BOOST",
    "NEIGHBOURS",
    "Neighbour",
    "PERSONAL",
    "RememberOutcome",
    "SKIP_CATEGORIES",
    "Verdict",
    "apply_many",
    "apply_verdict",
    "counts",
    "jaccard",
    "judge",
    "merge_into",
    "model_warm",
    "neighbours",
    "paths_of",
    "plain_text",
    "remember",
    "remember_many",
    "tokens",
]

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from tiered_memory.app import filing, input_size
from tiered_memory.app.filing import NewNote
from tiered_memory.index.embeddings import is_remote_embedder
from tiered_memory.model import details, statements
from tiered_memory.model import note as notes
from tiered_memory.model.privacy import keep_local
from tiered_memory.model.redact import redact
from tiered_memory.storage.transaction import Transaction

if TYPE_CHECKING:
    from tiered_memory.app.memory import Memory

Action = Literal["added", "merged", "superseded"]
NEIGHBOURS = 30  # full-text candidates compared with each new memory
BOOST = 0.1
SKIP_CATEGORIES = {"session"}
# About the person, not the project: "I prefer tabs" learned in one project holds in every other.
PERSONAL = {"preference", "profile"}


@dataclass
class Neighbour:
    note: notes.Note
    jaccard: float
    cosine: float | None = None
    relation: str = (
        "neighbour"  # "duplicate", "contradiction", "variant" (differs in a detail) or "neighbour"
    )
    reason: str = ""

    @property
    def score(self) -> float:
        return max(self.jaccard, self.cosine or 0.0)


@dataclass
class Verdict:
    action: Action
    other: Neighbour | None = None
    superseded: list[Neighbour] = field(default_factory=list)


@dataclass
class RememberOutcome:
    action: Action
    note: notes.Note
    other: notes.Note | None
    message: str
    superseded: list[notes.Note] = field(default_factory=list)
    reason: str = ""
    paths: list[str] = field(default_factory=list)
    commit_message: str = ""
    commit: str | None = None


# ---- comparing ---------------------------------------------------------------------------------


def plain_text(note: notes.Note) -> str:
    """The words of a note that say something: no headings, comments or frontmatter."""
    body = re.sub(r"<!--.*?-->", "", note.text, flags=re.DOTALL)
    lines = [ln for ln in body.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    return "\n".join(lines).strip() or note.title


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def tokens(text: str) -> set[str]:
    return {_stem(w) for w in statements.words(text)}


def jaccard(a: str, b: str) -> float:
    left, right = tokens(a), tokens(b)
    if not left or not right:
        return 0.0
    return len(left & right) / len(left | right)


def _quiet_redact(memory: Memory, text: str) -> str:
    privacy = memory.config.privacy
    if not privacy.redact:
        return text
    return redact(text, privacy.sensitive_keywords)[0]


def neighbours(memory: Memory, text: str, project: str | None, category: str = "note") -> list[Neighbour]:
    memory.refresh()
    hits = memory.keyword_matches(text, NEIGHBOURS)
    rows = memory.rows(p for p, _ in hits)
    out: list[Neighbour] = []
    for path, _score in hits:
        row = rows.get(path)
        if row is None or row.skipped or row.status == "superseded" or row.superseded_by:
            continue
        if row.tier == "archive" or row.category in SKIP_CATEGORIES or not path.endswith(".md"):
            continue
        personal = category in PERSONAL and row.category in PERSONAL
        if not personal and (row.project or "") != (project or ""):
            continue  # "the project uses X" in one project says nothing about another
        note = memory.read_note(path)
        if note.parse_warning:
            continue
        out.append(Neighbour(note, jaccard(text, plain_text(note))))
    return out


def model_warm(memory: Memory) -> bool:
    """Whether this process has the embedding model loaded: its vector index is open (the daemon
    opens it at start). Dedup never loads a cold model, which takes longer than everything else
    a `tmem add` does together."""
    return memory.vectors_open


def _cosines(memory: Memory, text: str, found: list[Neighbour]) -> None:
    embedder = memory.embedder()
    if embedder is None or not found:
        return
    usable = found
    if is_remote_embedder(embedder):
        excluded = memory.config.privacy.excluded_paths
        usable = [n for n in found if not keep_local(n.note, excluded)]
    if not usable:
        return
    vectors = embedder.embed([text] + [plain_text(n.note) for n in usable])
    for neighbour, row in zip(usable, vectors[1:], strict=True):
        neighbour.cosine = round(float(vectors[0] @ row), 4)


def judge(memory: Memory, new: NewNote, *, use_embedder: bool = True) -> Verdict:
    """What remembering `new` would do, without changing anything."""
    input_size.check(memory, [new.text, new.title])  # before the redaction, which is slow on a huge text
    memory.index_written()  # the memories this unit of work filed before this one are candidates too
    text = _quiet_redact(memory, new.text)
    found = neighbours(memory, text, new.project, new.category)
    cfg = memory.config.dedup
    if use_embedder and cfg.cosine < 1.0 and model_warm(memory):  # `dedup.cosine: 1` = words only
        _cosines(memory, text, found)
    mine = statements.parse(text)
    duplicates: list[Neighbour] = []
    conflicts: list[Neighbour] = []
    variants: list[Neighbour] = []
    for neighbour in found:
        theirs = statements.parse(plain_text(neighbour.note))
        if mine is not None and theirs is not None:
            reason = statements.contradiction(theirs, mine)
            if reason:
                neighbour.relation, neighbour.reason = "contradiction", reason
                conflicts.append(neighbour)
                continue
            if statements.same_fact(theirs, mine):
                neighbour.relation, neighbour.reason = "duplicate", "same statement"
                duplicates.append(neighbour)
                continue
        if neighbour.jaccard >= cfg.token_overlap:
            similar = f"word overlap {neighbour.jaccard:.2f} >= {cfg.token_overlap}"
        elif neighbour.cosine is not None and neighbour.cosine >= cfg.cosine:
            similar = f"cosine {neighbour.cosine:.2f} >= {cfg.cosine}"
        else:
            continue
        changed = details.difference(plain_text(neighbour.note), text)
        if changed is None:
            neighbour.relation, neighbour.reason = "duplicate", similar
            duplicates.append(neighbour)
        elif changed.startswith("one of them is negated") or details.says_it_changed(text):
            # "Do not deploy on Fridays" after "Deploy on Fridays": the newer word stands
            neighbour.relation, neighbour.reason = "contradiction", f"{similar}, but {changed}"
            conflicts.append(neighbour)
        else:
            # "Release 2.4 shipped" beside "Release 2.3 shipped": both may be true, so both stay
            neighbour.relation, neighbour.reason = "variant", f"{similar}, but {changed}"
            variants.append(neighbour)
    if duplicates:
        return Verdict("merged", max(duplicates, key=lambda n: n.score))
    # A note the person wrote is never marked superseded by a memory: the new one is kept beside it.
    variants += [n for n in conflicts if not filing.filed_by_tmem(memory.vault, n.note)]
    conflicts = [n for n in conflicts if filing.filed_by_tmem(memory.vault, n.note)]
    if conflicts:
        conflicts.sort(key=lambda n: -n.score)
        return Verdict("superseded", conflicts[0], conflicts)
    if variants:
        return Verdict("added", max(variants, key=lambda n: n.score))
    return Verdict("added")


# ---- changing notes ----------------------------------------------------------------------------


def _source(new: NewNote) -> str:
    if new.source:
        return new.source
    return f"session:{new.session}" if new.session else "manual"


def merge_into(memory: Memory, tx: Transaction, new: NewNote, neighbour: Neighbour) -> RememberOutcome:
    old = tx.read_note(neighbour.note.path)
    if not filing.filed_by_tmem(memory.vault, old):
        # A note the person wrote changes only when a command names it: nothing is written.
        return RememberOutcome(
            "merged",
            old,
            old,
            f'already known: "{old.title}" ({old.id}), a note of your own, left as it is ({neighbour.reason})',
            reason=neighbour.reason,
            commit_message=f'dedup: "{old.title}" seen again (a note of your own, left as it is)',
        )
    sources = [str(s) for s in old.meta.get("sources") or []]
    if not sources:  # the note's first source: the one it was written from, else a person
        sources = [str(old.meta.get("source") or "manual")]
    source = _source(new)
    repeated = source in sources and source.startswith("session:")
    before = old.confidence
    after = before if repeated else round(min(1.0, before + BOOST), 2)
    updates: dict[str, Any] = {"confidence": after, "sources": list(dict.fromkeys([*sources, source]))}
    updates["updated"] = memory.now()
    if new.tags:
        updates["tags"] = list(dict.fromkeys([*old.tags, *new.tags]))
    if new.entities:
        updates["entities"] = list(dict.fromkeys([*old.entities, *new.entities]))
    merged = old.with_meta(**updates)
    tx.write_note(merged)
    change = "same source again, confidence kept" if repeated else f"confidence {before:.2f} -> {after:.2f}"
    return RememberOutcome(
        "merged",
        merged,
        old,
        f'already known: "{old.title}" ({old.id}); {change}; source {source} recorded ({neighbour.reason})',
        reason=neighbour.reason,
        paths=[old.path],
        commit_message=f'dedup: "{old.title}" seen again ({change})',
    )


def _supersede(memory: Memory, tx: Transaction, new: NewNote, verdict: Verdict) -> RememberOutcome:
    olds = [tx.read_note(n.note.path) for n in verdict.superseded]
    ids = [o.id for o in olds]
    new.extra = {**new.extra, "supersedes": ids[0] if len(ids) == 1 else ids}
    note = filing.prepare(memory, new)
    tx.create_note(note)
    now = memory.now()
    for old in olds:
        tx.write_note(old.with_meta(superseded_by=note.id, status="superseded", updated=now))
    first = olds[0]
    more = f" and {len(olds) - 1} more" if len(olds) > 1 else ""
    reason = verdict.superseded[0].reason
    return RememberOutcome(
        "superseded",
        note,
        first,
        f'"{note.title}" ({note.id}) supersedes "{first.title}" ({first.id}){more}: {reason}. '
        "The old note is kept but hidden from search (tmem search --all shows it).",
        superseded=olds,
        reason=reason,
        paths=[note.path, *(o.path for o in olds)],
        commit_message=f'supersede: "{note.title}" replaces "{first.title}"{more}',
    )


def _add(memory: Memory, tx: Transaction, new: NewNote, near: Neighbour | None = None) -> RememberOutcome:
    note = filing.prepare(memory, new)
    tx.create_note(note)
    message = f'remembered "{note.title}" ({note.id})'
    if near is not None:
        message += (
            f'; kept beside "{near.note.title}" ({near.note.id}) ({near.reason}).'
            f" If it replaces that note: tmem archive {near.note.id} --superseded-by {note.id}"
        )
    return RememberOutcome(
        "added",
        note,
        near.note if near is not None else None,
        message,
        reason=near.reason if near is not None else "",
        paths=[note.path],
        commit_message=filing.remember_message(note),
    )


def _apply(memory: Memory, tx: Transaction, new: NewNote, use_embedder: bool) -> RememberOutcome:
    return apply_verdict(memory, tx, new, judge(memory, new, use_embedder=use_embedder))


def apply_verdict(memory: Memory, tx: Transaction, new: NewNote, verdict: Verdict) -> RememberOutcome:
    """Do what `judge` decided for `new`, inside the caller's unit of work."""
    if verdict.action == "merged" and verdict.other is not None:
        outcome = merge_into(memory, tx, new, verdict.other)
    elif verdict.action == "superseded":
        outcome = _supersede(memory, tx, new, verdict)
    else:
        outcome = _add(memory, tx, new, verdict.other)
    # Later memories of the same batch must see this one; with none, the commit indexes it.
    memory.index_later(outcome.paths)
    return outcome


def remember(memory: Memory, new: NewNote, *, use_embedder: bool = True) -> RememberOutcome:
    """Add, merge or supersede, in one commit."""
    input_size.check(memory, [new.text, new.title])  # before the lock and the unit of work
    with memory.change("remember") as tx:
        outcome = _apply(memory, tx, new, use_embedder)
        tx.message = outcome.commit_message
    outcome.commit = tx.sha
    if outcome.action != "merged":
        outcome.note = memory.read_note(outcome.note.path)
    return outcome


def apply_many(
    memory: Memory, tx: Transaction, items: list[NewNote], *, use_embedder: bool = True
) -> list[RememberOutcome]:
    """Remember each item in turn inside the caller's unit of work."""
    return [_apply(memory, tx, new, use_embedder) for new in items]


def remember_many(
    memory: Memory, items: list[NewNote], message: str, *, use_embedder: bool = True
) -> tuple[list[RememberOutcome], str | None]:
    """Remember a batch (extraction results) in one commit whose message ends with the counts."""
    with memory.change(message) as tx:
        outcomes = apply_many(memory, tx, items, use_embedder=use_embedder)
        tx.message = f"{message} ({counts(outcomes)})"
    return outcomes, tx.sha


def paths_of(outcomes: list[RememberOutcome]) -> list[str]:
    return list(dict.fromkeys(p for o in outcomes for p in o.paths))


def counts(outcomes: list[RememberOutcome]) -> str:
    if not outcomes:
        return "no memories"
    parts = [(sum(1 for o in outcomes if o.action == a), a) for a in ("added", "merged", "superseded")]
    return ", ".join(f"{n} {a}" for n, a in parts if n) or "no memories"
