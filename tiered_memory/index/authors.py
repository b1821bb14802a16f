"""Who wrote each note, read from git's history: what `search --by` filters on.

"Wrote" is any commit that added or changed the note's file, by its author name and email and
the agent its `Agent:` trailer names; a pure move (git sees the same content under a new name,
as `tmem promote` of an unedited note) carries the writers along and adds no one. A deletion
drops the path's writers, so a later note of that name starts with none. Hand edits count once
committed (the daemon's auto-commit carries the machine's name).

Derived like the rest of the catalog (the `note_authors` table): only the commits since the last
one read are read (kept in the catalog's meta), and the whole history again when that commit is
no longer behind HEAD (a reset, a new catalog). A search with `--by` brings it up to date first;
other searches never run git for it.
"""

from __future__ import annotations

__all__ = ["HEAD_KEY", "refresh", "paths_by", "Change"]

from collections.abc import Iterator

from tiered_memory.index.catalog import Catalog
from tiered_memory.model import authors
from tiered_memory.storage import walk
from tiered_memory.storage.git import Git, name_status_entries

HEAD_KEY = "authors_head"  # the last commit whose authors the table holds
_FORMAT = f"%x01{authors.LOG_FORMAT}"


def refresh(catalog: Catalog, git: Git) -> None:
    """Read the commits made since the last look into the table (all of them the first time)."""
    head = git.rev("HEAD")
    if head is None:
        return  # no commits yet: nobody wrote anything
    last = catalog.get_meta(HEAD_KEY)
    if last == head:
        return
    db = catalog.db
    if last and git.rev(last) is not None and git.is_ancestor(last, head):
        span = f"{last}..{head}"
    else:
        db.execute("DELETE FROM note_authors")
        span = head
    for name, email, agents, changes in _commits(git, span):
        for status, path, old in changes:
            if status == "D":
                db.execute("DELETE FROM note_authors WHERE path=?", (path,))
                continue
            if old is not None:  # a move: the writers go with the note
                db.execute("UPDATE OR IGNORE note_authors SET path=? WHERE path=?", (path, old))
                db.execute("DELETE FROM note_authors WHERE path=?", (old,))
                if status == "R100":
                    continue  # same content: the mover wrote nothing
            db.executemany(
                "INSERT OR IGNORE INTO note_authors VALUES (?, ?, ?, ?)",
                [(path, name, email, agent) for agent in agents or [""]],
            )
    db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (HEAD_KEY, head))
    db.commit()


def paths_by(catalog: Catalog, wanted: str) -> set[str]:
    """The paths written by a name, an email or an agent starting with `wanted` (any case)."""
    db = catalog.db
    who = db.execute("SELECT DISTINCT name, email, agent FROM note_authors").fetchall()
    chosen = [w for w in who if authors.matches(wanted, *w)]
    found: set[str] = set()
    for name, email, agent in chosen:
        query = "SELECT path FROM note_authors WHERE name=? AND email=? AND agent=?"
        found.update(p for (p,) in db.execute(query, (name, email, agent)))
    return found


Change = tuple[str, str, str | None]  # (status, path, old path of a move or None)


def _commits(git: Git, span: str) -> Iterator[tuple[str, str, list[str], list[Change]]]:
    """(author name, email, agents, changes) of each commit in `span`, oldest first. Merges list
    no files: what they bring was written by the commits they join, which are listed."""
    out = git.run("log", "--reverse", "-z", "-M", "--name-status", f"--format={_FORMAT}", span, "--")
    for record in out.stdout.split("\x01"):
        if not record:
            continue
        fields = record.split("\0")
        if len(fields) < 3:
            continue
        name, email, trailer = fields[:3]
        agents = [a.strip() for a in trailer.split(",") if a.strip() and authors.problem(a.strip()) is None]
        rest = [f.lstrip("\n") for f in fields[3:]]
        changes: list[Change] = []
        for status, path, old in name_status_entries(rest):
            # A name that is not UTF-8 (a pulled commit may bring one) cannot be stored in the
            # catalog; the indexer leaves such a file out too. Moved from one: a new file here.
            if not walk.is_utf8(path):
                continue
            if status[0] == "R" and old is not None and walk.is_utf8(old):
                changes.append((status, path, old))
            else:
                changes.append((status if status[0] == "C" else status[0], path, None))
        yield name, email, agents, changes
