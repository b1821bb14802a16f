"""The core note commands: init, add, show, list, edit, forget, search, reindex, status."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from tiered_memory.cli.options import (
    _fail,
    _vault_root,
    emit,
    filter_lists,
    filter_options,
    json_option,
    open_memory,
    parse_when,
    split_list,
    warn,
)


@click.command()
@click.argument("path", required=False, type=click.Path(file_okay=False))
@click.option(
    "--adopt",
    is_flag=True,
    help="PATH is an existing vault (e.g. a fresh `git clone`): register tmem's merge driver there.",
)
@json_option
@click.pass_context
def init(ctx: click.Context, path: str | None, adopt: bool, as_json: bool) -> None:
    """Create a vault at PATH (default: the current folder) from the template, as a git repository."""
    from tiered_memory.storage.vault import init_vault

    target = Path(path or ctx.obj.get("vault") or ".")
    if adopt:
        from tiered_memory.sync.gitmerge import adopt_vault

        data = adopt_vault(target)
        emit(data, as_json, f"adopted vault at {data['vault']}: git merges notes with tmem's driver")
        return
    vault = init_vault(target)
    emit({"vault": str(vault.root)}, as_json, f"created vault at {vault.root}")


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
@json_option
@click.pass_context
def add(ctx: click.Context, text: tuple[str, ...], file_: str | None, as_json: bool, **fields: Any) -> None:
    """Remember TEXT (or stdin, or --file) as a new note, committed to git."""
    from tiered_memory.app.memory import NewNote
    from tiered_memory.errors import BadInput

    if file_:
        body = sys.stdin.read() if file_ == "-" else _read_input_file(file_)
    elif text and text != ("-",):
        body = " ".join(text)
    elif not sys.stdin.isatty() or text == ("-",):
        body = sys.stdin.read()
    else:
        raise BadInput("nothing to remember: give TEXT, pipe it on stdin, or use --file")
    memory = open_memory(ctx)
    note = memory.add(
        NewNote(
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
        )
    )
    from tiered_memory.present import note_dict

    emit(note_dict(note), as_json, f"remembered {note.id}  ({note.path})")


def _read_input_file(name: str) -> str:
    from tiered_memory.errors import BadInput

    data = Path(name).read_bytes()
    if b"\x00" in data[:8192]:
        raise BadInput(f"{name} is a binary file, not text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"{name} is not UTF-8 text") from None


@click.command()
@click.argument("ref")
@json_option
@click.pass_context
def show(ctx: click.Context, ref: str, as_json: bool) -> None:
    """Print a note, by id or path."""
    from tiered_memory.present import note_dict

    memory = open_memory(ctx)
    note = memory.get(ref)
    if note.parse_warning:
        warn(f"{note.path}: {note.parse_warning}")
    text = memory.vault.read_text(note.path)
    emit(note_dict(note), as_json, f"# {note.path}  (id: {note.id})\n{text.rstrip()}")


@click.command("list")
@filter_options
@click.option("--limit", type=int, default=None, help="At most this many notes.")
@json_option
@click.pass_context
def list_(
    ctx: click.Context, as_json: bool, limit: int | None, since: str | None, until: str | None, **filters: Any
) -> None:
    """List notes, newest first within each tier, with optional filters."""
    from tiered_memory.present import format_rows, row_dict

    memory = open_memory(ctx)
    rows = memory.list_notes(
        since=parse_when(since, "--since"),
        until=parse_when(until, "--until"),
        **filter_lists(filters),
    )
    if limit is not None:
        rows = rows[:limit]
    emit([row_dict(r) for r in rows], as_json, lambda: format_rows(rows))


@click.command()
@click.argument("ref")
@click.pass_context
def edit(ctx: click.Context, ref: str) -> None:
    """Open a note in $EDITOR, then reindex and commit it."""
    memory = open_memory(ctx)
    rel = memory.resolve(ref)
    before = memory.vault.read_text(rel)
    click.edit(filename=str(memory.vault.abspath(rel)))
    if memory.vault.abspath(rel).exists() and memory.vault.read_text(rel) == before:
        click.echo("no changes")
        return
    sha = memory.after_edit(rel)
    click.echo(f"saved {rel}" + (f" ({sha[:8]})" if sha else ""))


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
        from tiered_memory.cli.agents import forget_entity_command

        forget_entity_command(ctx, ref, entity, yes, reason, mentions, as_json)
        return
    memory = open_memory(ctx)
    rel = memory.resolve(ref)
    if not yes:
        title = memory.vault.read_note(rel).title
        if not sys.stdin.isatty():
            _fail(f"refusing to forget '{title}' without confirmation: pass --yes", 2)
        click.confirm(f"Forget '{title}' ({rel})?", abort=True)
    note = memory.forget(rel, reason)
    emit({"forgotten": note.id, "path": rel}, as_json, f"forgot {note.id} ({rel})")


@click.command()
@click.argument("query", nargs=-1)
@filter_options
@click.option("--limit", "-k", type=int, default=None, help="Number of results (default: search.limit).")
@click.option(
    "--mode",
    type=click.Choice(["hybrid", "keyword", "vector"]),
    default="hybrid",
    show_default=True,
    help="Retrieval mode: hybrid, keyword only, or vector only.",
)
@click.option("--session", help="Only notes of this session.")
@click.option(
    "--recent",
    type=int,
    is_flag=False,
    flag_value=5,
    default=None,
    help="List the N most recent sessions with their summaries instead of searching (default N: 5).",
)
@click.option("--all", "include_all", is_flag=True, help="Include superseded notes.")
@click.option("--explain", is_flag=True, help="Show every component of every score.")
@json_option
@click.pass_context
def search(
    ctx: click.Context,
    query: tuple[str, ...],
    limit: int | None,
    mode: str,
    session: str | None,
    include_all: bool,
    explain: bool,
    as_json: bool,
    since: str | None,
    until: str | None,
    **filters: Any,
) -> None:
    """Hybrid search (keyword + vector) over the vault."""
    recent = filters.pop("recent", None)
    if recent is not None:
        from tiered_memory.cli.sessions import show_recent

        return show_recent(ctx, recent, as_json, " ".join(query))
    text = " ".join(query)
    if limit is not None and limit < 1:
        raise click.BadParameter("must be at least 1", param_hint="--limit")
    fields: dict[str, Any] = {
        "query": text,
        "limit": limit,
        "mode": mode,
        "session": session,
        "since": parse_when(since, "--since"),
        "until": parse_when(until, "--until"),
        "include_superseded": include_all,
        **filter_lists(filters),
    }
    from tiered_memory.daemon import client

    root = _vault_root(ctx)
    if fields["entities"]:  # an alias finds notes filed under the entity's name, and the other way round
        from tiered_memory.app.entities import expand_names

        fields["entities"] = expand_names(root, fields["entities"])
    # A running daemon sends the output rendered: this path never imports the core (~300 ms).
    served = client.rendered_search(root, fields, explain)
    if served is not None:
        if served["notice"]:
            warn(served["notice"])
        click.echo(served["json"] if as_json else served["text"])
        return
    from tiered_memory.index.retrieve import SearchRequest
    from tiered_memory.present import format_hits, result_dict

    memory = open_memory(ctx)
    result = memory.search(SearchRequest(**fields))
    if result.notice:
        warn(result.notice)
    emit(result_dict(result, text, explain), as_json, lambda: format_hits(result, explain))
    hint = client.fallback_hint(root)
    if hint:
        click.echo(f"hint: {hint}", err=True)


@click.command()
@click.option("--full", is_flag=True, help="Rebuild every index from scratch.")
@click.option("--keyword-only", is_flag=True, help="Skip the vectors (no embedding model is loaded).")
@json_option
@click.pass_context
def reindex(ctx: click.Context, full: bool, keyword_only: bool, as_json: bool) -> None:
    """Bring the side indexes up to date (incremental unless --full)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    memory = open_memory(ctx)
    if full:
        memory.indexer.wipe()
        memory = open_memory(ctx)
    with Progress(
        TextColumn("{task.description:<10}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=None,
        transient=True,
        disable=as_json or not sys.stderr.isatty(),
    ) as bar:
        tasks: dict[str, Any] = {}

        def progress(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                tasks[phase] = bar.add_task(phase, total=total)
            bar.update(tasks[phase], completed=done, total=total)

        report = memory.refresh(vectors=not keyword_only, progress=progress)
    compacted = memory.indexer.compact_fulltext()  # purge notes that edits left behind, if many
    data = {
        "added": report.added,
        "changed": report.changed,
        "deleted": report.deleted,
        "unchanged": report.unchanged,
        "embedded": report.embedded,
        "vectors": report.vectors,
        "rebuilt": report.rebuilt,
        "warnings": report.warnings,
        "compacted": compacted,
    }
    vectors = "" if report.vectors == "ok" else f"; vectors: {report.vectors}"
    emit(
        data,
        as_json,
        f"indexed: {report.added} added, {report.changed} changed, {report.deleted} deleted, "
        f"{report.unchanged} unchanged, {report.embedded} embedded{vectors}",
    )


@click.command()
@json_option
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Notes per tier and category, index freshness, embedder, vault size and git state."""
    from tiered_memory.app.status import collect, render

    memory = open_memory(ctx)
    data = collect(memory)
    emit(data, as_json, lambda: render(data))


COMMANDS = [init, add, show, list_, edit, forget, search, reindex, status]
# Second names for the same commands: `remember` is `add`, `recall` is `search`.
ALIASES = {"remember": add, "recall": search}
