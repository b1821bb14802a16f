"""`tmem export` and `tmem import`: memories out to JSON, and in from tmem or other memory tools."""

from __future__ import annotations

__all__ = ["export_command", "import_command"]

from typing import Any

import click

from tiered_memory.app.api.portability import (
    EXPORT,
    EXPORT_FORMATS,
    IMPORT,
    IMPORT_FORMATS,
    ExportRequest,
    ImportRequest,
)
from tiered_memory.cli.options import backend, emit, json_option, parse_when, split_list, warn
from tiered_memory.present import portability as show


@click.command("export")
@click.option(
    "--output", "-o", default="-", show_default=True, help="File to write (or update); '-' for stdout."
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(EXPORT_FORMATS),
    default=None,
    help="json or jsonl (default: from the file name, else json).",
)
@click.option(
    "--since",
    help="Only what changed since: YYYY-MM-DD, ISO time, 7d / 12h / 2w, or 'last' (the previous export at --output).",
)
@click.option("--tier", "tiers", multiple=True, help="short, mid, long or archive (repeatable).")
@click.option("--project", "projects", multiple=True, help="Only this project (repeatable).")
@click.option(
    "--entity", "entities", multiple=True, help="Only notes about this person or thing (repeatable)."
)
@click.option(
    "--category",
    "categories",
    multiple=True,
    help="Only this category; 'session' for sessions only (repeatable).",
)
@click.option(
    "--include-sensitive",
    is_flag=True,
    help="Also export sensitive and encrypted notes (redaction still applies).",
)
@click.option("--history", is_flag=True, help="Add each note's commits (hash, time, message).")
@json_option
@click.pass_context
def export_command(
    ctx: click.Context, output: str, fmt: str | None, since: str | None, as_json: bool, **rest: Any
) -> None:
    """Export notes and sessions (messages nested under each session) as JSON or JSON Lines.

    Exporting into an earlier export updates it entry by entry: a session exported again is
    replaced where it stands, with its new messages, never duplicated.
    """
    if fmt is None:
        fmt = "jsonl" if output.endswith((".jsonl", ".ndjson")) else "json"
    request = ExportRequest(
        output=output,
        format=fmt,
        since=None if since == "last" else parse_when(since, "--since"),
        since_last=since == "last",
        tiers=split_list(rest["tiers"]),
        projects=split_list(rest["projects"]),
        entities=split_list(rest["entities"]),
        categories=split_list(rest["categories"]),
        include_sensitive=rest["include_sensitive"],
        history=rest["history"],
        # To stdout an entry at a time: a whole vault's text is never held (with --json it is,
        # inside the result).
        stream=_Stdout() if output == "-" and not as_json else None,
    )
    result = backend(ctx).run(EXPORT, request)
    if output == "-" and not as_json:
        return
    emit(result.to_dict(), as_json, show.exported_text(result))


class _Stdout:
    """stdout as an export writes it, a piece at a time, through `click.echo` as every line."""

    def write(self, text: str) -> None:
        click.echo(text, nl=False)


@click.command("import")
@click.argument("path", type=click.Path(exists=True))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(IMPORT_FORMATS),
    default=None,
    help="What wrote PATH (default: a tmem export is told from the file; other tools' files need it).",
)
@click.option("--project", help="File every imported memory under this project.")
@click.option("--dry-run", is_flag=True, help="Say what would be imported; change nothing.")
@json_option
@click.pass_context
def import_command(
    ctx: click.Context, path: str, fmt: str | None, project: str | None, dry_run: bool, as_json: bool
) -> None:
    """Import memories from PATH in one commit, through redaction and dedup (like `tmem add`).

    Formats: tmem (a `tmem export`, told from the file without --format), claude / chatgpt
    (conversations.json, its folder or the export .zip), mcp-memory (memory.json), basic-memory
    (a project folder), claude-code
    (CLAUDE.md, a project or an auto-memory folder), mem0 (get_all JSON), claude-mem
    (export-memories JSON). Importing the same file again changes nothing.
    """
    result = backend(ctx).run(
        IMPORT, ImportRequest(format=fmt or "", path=path, project=project, dry_run=dry_run)
    )
    if not as_json:
        for line in result.warnings:
            warn(line)
    emit(result.to_dict(), as_json, show.imported_text(result))
