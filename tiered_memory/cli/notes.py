"""The core note commands: add (remember), show, list, edit, forget, reindex, status.

Each parses its input, runs one operation through the backend (the daemon when it runs, else
this process) and renders the result with `present`.
"""

from __future__ import annotations

__all__ = ["add", "edit", "forget", "list_", "reindex", "show", "status"]

import os
import sys
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

import click

from tiered_memory.app.api import Empty
from tiered_memory.app.api.crypto import SAVE_TEXT, SaveTextRequest
from tiered_memory.app.api.notes import (
    FORGET,
    LIST,
    REINDEX,
    REMEMBER,
    SHOW,
    STATUS,
    ForgetRequest,
    ListRequest,
    NoteRequest,
    ReindexRequest,
    RememberRequest,
)
from tiered_memory.cli.agents import forget_entity_command
from tiered_memory.cli.input_text import read_input
from tiered_memory.cli.options import (
    backend,
    emit,
    filter_lists,
    filter_options,
    json_option,
    note_size_setting,
    open_editor,
    parse_when,
    split_list,
    vault_root,
    warn,
)
from tiered_memory.cli.progress import progress_bar
from tiered_memory.errors import BadInput, TmemError
from tiered_memory.model.envelope import MAGIC as ENVELOPE_MAGIC
from tiered_memory.present import notes as show_notes
from tiered_memory.present import revise as show_revise


@click.command()
@click.argument("text", nargs=-1)
@click.option(
    "--file",
    "file_",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Read the text from a file ('-' for stdin).",
)
@click.option("--title", help="Title (default: the first line of the text).")
@click.option("--tier", default=None, help="short, mid, long or archive (default: long; mid with --project).")
@click.option(
    "--folder",
    help="File it in this folder of the vault (relative to its root; made if missing), named by its "
    "title; its tier is the folder's (`folders:` in tmem.yaml).",
)
@click.option(
    "--category",
    default="note",
    show_default=True,
    help="discovery, decision, pattern, preference, error, fact, profile, project, session or note.",
)
@click.option("--tags", "tags", multiple=True, help="Comma-separated tags (repeatable).")
@click.option("--project", help="Project id the note belongs to.")
@click.option("--entity", "entities", multiple=True, help="A person or thing the note is about (repeatable).")
@click.option("--importance", type=float, help="0..1 (default 0.5).")
@click.option("--confidence", type=float, help="0..1 (default 1.0).")
@click.option("--source", help="Where this memory came from (a session, a URL...).")
@click.option(
    "--no-dedup",
    is_flag=True,
    help="File a new note even when it repeats or contradicts one already there.",
)
@json_option
@click.pass_context
def add(
    ctx: click.Context, text: tuple[str, ...], file_: str | None, no_dedup: bool, as_json: bool, **fields: Any
) -> None:
    """Remember TEXT (or stdin, or --file) as a new note, committed to git.

    A near-duplicate of a note already there raises that note's confidence instead of adding a
    copy; a fact that contradicts an older one supersedes it (the old note is kept, hidden from
    search). The output says which happened.
    """
    allowed = note_size_setting(ctx)
    if file_:
        body = read_input(file_, allowed)[0]
    elif text and text != ("-",):
        body = " ".join(text)
    elif not sys.stdin.isatty() or text == ("-",):
        body = read_input("-", allowed)[0]
    else:
        raise BadInput("nothing to remember: give TEXT, pipe it on stdin, or use --file")
    request = RememberRequest(
        text=body,
        title=fields["title"],
        tier=fields["tier"],
        category=fields["category"],
        tags=split_list(fields["tags"]),
        project=fields["project"],
        entities=split_list(fields["entities"]),
        importance=fields["importance"],
        confidence=fields["confidence"],
        source=fields["source"],
        dedup=not no_dedup,
        folder=fields["folder"],
    )
    # Its waits (a first indexing of a large vault) are shown: a few seconds of silence reads as a hang.
    with progress_bar(enabled=not as_json) as progress:
        result = backend(ctx, progress=progress).run(REMEMBER, request)
    emit(result.to_dict(), as_json, show_notes.remembered_text(result))


@click.command()
@click.argument("ref")
@json_option
@click.pass_context
def show(ctx: click.Context, ref: str, as_json: bool) -> None:
    """Print a note, by id or path."""
    view = backend(ctx).run(SHOW, NoteRequest(ref))
    if view.warning:
        warn(show_notes.note_warning(view))
    emit(view.to_dict(), as_json, show_notes.note_text(view))


@click.command("list")
@filter_options
@click.option("--limit", type=int, default=None, help="At most this many notes.")
@json_option
@click.pass_context
def list_(
    ctx: click.Context, as_json: bool, limit: int | None, since: str | None, until: str | None, **filters: Any
) -> None:
    """List notes, newest first within each tier, with optional filters."""
    request = ListRequest(
        since=parse_when(since, "--since"),
        until=parse_when(until, "--until"),
        limit=limit,
        **filter_lists(filters),
    )
    listing = backend(ctx).run(LIST, request)
    emit(show_notes.note_list_json(listing), as_json, lambda: show_notes.note_list_text(listing))


def _write_private(path: Path, data: bytes) -> None:
    """A note's text outside the vault, readable by its owner alone (0600, in mkdtemp's 0700
    folder): another user of the machine must not read it there."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


@click.command()
@click.argument("ref")
@click.pass_context
def edit(ctx: click.Context, ref: str) -> None:
    """Open a note in $EDITOR, then reindex and commit it."""
    tmem = backend(ctx)
    view = tmem.run(SHOW, NoteRequest(ref))
    encrypted = (vault_root(ctx) / view.path).read_bytes().startswith(ENVELOPE_MAGIC)
    # The editor works on a copy outside the vault (an encrypted note's plaintext never lands in
    # it): what an agent writes to the note meanwhile is merged with the person's text on save,
    # where an editor saving over the file itself would put its stale buffer back.
    with tempfile.TemporaryDirectory(prefix="tmem-edit-") as folder:
        copy = Path(folder) / PurePosixPath(view.path).name
        _write_private(copy, view.text.encode("utf-8"))
        open_editor(filename=str(copy))
        data = copy.read_bytes() if copy.is_file() else view.text.encode("utf-8")
        if data == view.text.encode("utf-8"):
            click.echo(show_revise.NO_CHANGES)
            return
        try:
            try:  # a character the editor wrote in another encoding is refused, not replaced
                edited = data.decode("utf-8")
            except UnicodeDecodeError:
                raise BadInput(f"{view.path}: the editor saved text that is not UTF-8; not saved") from None
            done = tmem.run(SAVE_TEXT, SaveTextRequest(view.path, edited, base=view.text))
        except TmemError:
            if not encrypted:  # the person's text is theirs: kept beside the vault, not lost
                kept = Path(tempfile.mkdtemp(prefix="tmem-edit-")) / copy.name
                _write_private(kept, data)
                warn(show_revise.edit_kept(str(kept)))
            raise
    click.echo(show_revise.saved_text(done))


@click.command()
@click.argument("ref", required=False)
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.option("--reason", help="Why (goes into the commit message).")
@click.option("--entity", help="Instead of REF: every memory about this person or thing, in one commit.")
@click.option("--mentions", is_flag=True, help="With --entity: also notes that only mention the name.")
@json_option
@click.pass_context
def forget(
    ctx: click.Context,
    ref: str | None,
    yes: bool,
    reason: str | None,
    entity: str | None,
    mentions: bool,
    as_json: bool,
) -> None:
    """Remove a note (or --entity NAME: all about someone) in a git commit (`tmem restore` brings it back)."""
    if entity or not ref:
        forget_entity_command(ctx, ref, entity, yes, reason, mentions, as_json)
        return
    tmem = backend(ctx)
    if not yes:
        view = tmem.run(SHOW, NoteRequest(ref))
        if not sys.stdin.isatty():
            raise BadInput(show_revise.forget_refused(view))
        click.confirm(show_revise.forget_question(view), abort=True)
        ref = view.path
    done = tmem.run(FORGET, ForgetRequest(ref, reason))
    emit(show_revise.forgot_dict(done), as_json, show_revise.forgot_text(done))


@click.command()
@click.option("--full", is_flag=True, help="Rebuild every index from scratch.")
@click.option(
    "--keyword-only",
    is_flag=True,
    help="Skip the vectors (no embedding model is loaded); with --full, those on disk are kept.",
)
@json_option
@click.pass_context
def reindex(ctx: click.Context, full: bool, keyword_only: bool, as_json: bool) -> None:
    """Bring the side indexes up to date (incremental unless --full)."""
    with progress_bar(enabled=not as_json) as progress:
        report = backend(ctx, progress=progress).run(
            REINDEX, ReindexRequest(full=full, keyword_only=keyword_only)
        )
    emit(report.to_dict(), as_json, show_notes.reindex_text(report))


@click.command()
@json_option
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Notes per tier and category, index freshness, embedder, vault size and git state."""
    result = backend(ctx).run(STATUS, Empty())
    emit(result.to_dict(), as_json, lambda: show_notes.status_text(result))
