"""The `tmem` command line. Errors from the core become one line on stderr and an exit code:
0 success, 1 the thing asked for does not exist, 2 bad usage or bad input.

Imports of the core happen inside commands so `tmem --help` stays fast.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

if TYPE_CHECKING:
    from tiered_memory.service import Memory

RAISE_ENV = "TMEM_RAISE_ERRORS"


def _fail(message: str, code: int) -> NoReturn:
    click.echo(f"tmem: {message}", err=True)
    sys.exit(code)


class TmemGroup(click.Group):
    """Turns TmemError (and a few OS-level failures) into one clean line and an exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        from tiered_memory.errors import TmemError

        try:
            return super().invoke(ctx)
        except TmemError as exc:
            if os.environ.get(RAISE_ENV):
                raise
            _fail(str(exc), exc.exit_code)
        except KeyboardInterrupt:
            _fail("interrupted", 130)
        except (OSError, UnicodeError) as exc:
            if os.environ.get(RAISE_ENV):
                raise
            _fail(f"{exc.__class__.__name__}: {exc}", 2)


def warn(message: str) -> None:
    click.echo(f"warning: {message}", err=True)


def _vault_root(ctx: click.Context) -> Path:
    from tiered_memory.vault import find_vault

    return find_vault(ctx.obj.get("vault") if ctx.obj else None)


def open_memory(ctx: click.Context) -> Memory:
    from tiered_memory.service import Memory
    from tiered_memory.vault import Vault, find_vault

    root = find_vault(ctx.obj.get("vault") if ctx.obj else None)
    vault = Vault(root)
    vault.config  # noqa: B018 - validate the config before doing anything
    memory = Memory(vault, warn=warn)
    ctx.call_on_close(memory.close)
    return memory


def emit(data: Any, as_json: bool, text: str | Callable[[], str]) -> None:
    if as_json:
        from tiered_memory.present import dumps

        click.echo(dumps(data))
    else:
        click.echo(text() if callable(text) else text)


def parse_when(value: str | None, name: str) -> datetime | None:
    """YYYY-MM-DD, an ISO timestamp, or a relative age such as 7d, 12h, 2w."""
    if not value:
        return None
    value = value.strip()
    units = {"h": 3600, "d": 86400, "w": 7 * 86400}
    if value[:-1].isdigit() and value[-1:] in units:
        return datetime.now(UTC) - timedelta(seconds=int(value[:-1]) * units[value[-1]])
    from tiered_memory.note import to_datetime

    parsed = to_datetime(value)
    if parsed is None:
        raise click.BadParameter(
            f"'{value}' is not a date (YYYY-MM-DD, ISO time, or 7d / 12h / 2w)", param_hint=name
        )
    return parsed


def split_list(values: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for value in values:
        out.extend(v.strip() for v in value.split(",") if v.strip())
    return out


def filter_lists(filters: dict[str, tuple[str, ...]]) -> dict[str, list[str]]:
    """The repeatable filter options as the lists SearchRequest and list_notes take."""
    names = ("tiers", "categories", "tags", "projects", "entities", "statuses")
    return {name: split_list(filters.get(name, ())) for name in names}


json_option = click.option(
    "--json", "as_json", is_flag=True, help="Machine-readable JSON output (for agents)."
)


def filter_options(func: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("--tier", "tiers", multiple=True, help="short, mid, long or archive (repeatable)."),
        click.option(
            "--category", "categories", multiple=True, help="discovery, decision, pattern, ... (repeatable)."
        ),
        click.option("--tag", "tags", multiple=True, help="Only notes with this tag (repeatable)."),
        click.option("--project", "projects", multiple=True, help="Only notes of this project (repeatable)."),
        click.option("--entity", "entities", multiple=True, help="Only notes about this person or thing."),
        click.option("--status", "statuses", multiple=True, help="active, completed, cancelled, superseded."),
        click.option("--since", help="Updated at or after: YYYY-MM-DD, ISO time, or 7d / 12h / 2w."),
        click.option("--until", help="Updated at or before: YYYY-MM-DD or ISO time."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


@click.group(cls=TmemGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--vault",
    type=click.Path(file_okay=False),
    help="Vault folder (default: $TMEM_VAULT, then the current folder or a parent).",
)
@click.version_option(package_name="tiered-memory", prog_name="tmem")
@click.pass_context
def cli(ctx: click.Context, vault: str | None) -> None:
    """tiered-memory: Markdown memory in a git vault, with hybrid search for people and agents."""
    ctx.ensure_object(dict)
    ctx.obj["vault"] = vault


@cli.command()
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
    from tiered_memory.vault import init_vault

    target = Path(path or ctx.obj.get("vault") or ".")
    if adopt:
        from tiered_memory.gitmerge import adopt_vault

        data = adopt_vault(target)
        emit(data, as_json, f"adopted vault at {data['vault']}: git merges notes with tmem's driver")
        return
    vault = init_vault(target)
    emit({"vault": str(vault.root)}, as_json, f"created vault at {vault.root}")


@cli.command()
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
    from tiered_memory.errors import BadInput
    from tiered_memory.service import NewNote

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


cli.add_command(add, "remember")


@cli.command()
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


@cli.command("list")
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


@cli.command()
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


@cli.command()
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
        from tiered_memory.commands.agents import forget_entity_command

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


@cli.command()
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
        from tiered_memory.commands.sessions import show_recent

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
    from tiered_memory import client

    root = _vault_root(ctx)
    if fields["entities"]:  # an alias finds notes filed under the entity's name, and the other way round
        from tiered_memory.entities import expand_names

        fields["entities"] = expand_names(root, fields["entities"])
    # A running daemon sends the output rendered: this path never imports the core (~300 ms).
    served = client.rendered_search(root, fields, explain)
    if served is not None:
        if served["notice"]:
            warn(served["notice"])
        click.echo(served["json"] if as_json else served["text"])
        return
    from tiered_memory.present import format_hits, result_dict
    from tiered_memory.retrieve import SearchRequest

    memory = open_memory(ctx)
    result = memory.search(SearchRequest(**fields))
    if result.notice:
        warn(result.notice)
    emit(result_dict(result, text, explain), as_json, lambda: format_hits(result, explain))
    hint = client.fallback_hint(root)
    if hint:
        click.echo(f"hint: {hint}", err=True)


cli.add_command(search, "recall")


@cli.command()
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


@cli.command()
@json_option
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Notes per tier and category, index freshness, embedder, vault size and git state."""
    from tiered_memory.status import collect, render

    memory = open_memory(ctx)
    data = collect(memory)
    emit(data, as_json, lambda: render(data))


def main() -> None:  # pragma: no cover - console entry point alias
    cli()


def _register_command_modules() -> None:
    from tiered_memory.commands import register

    register(cli)


_register_command_modules()
