"""Shared pieces of the `tmem` command line: the backend, output, common options (the error edge
is cli/edge.py)."""

from __future__ import annotations

__all__ = [
    "backend",
    "emit",
    "filter_lists",
    "filter_options",
    "json_option",
    "note_size_setting",
    "open_editor",
    "parse_when",
    "split_list",
    "vault_root",
    "warn",
]

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import click

from tiered_memory.backend import Backend, find_vault, open_backend
from tiered_memory.cli.edge import printable
from tiered_memory.errors import BadInput
from tiered_memory.model.dates import to_datetime
from tiered_memory.present import dumps
from tiered_memory.present.lines import warning_line


def warn(message: str) -> None:
    click.echo(printable(warning_line(message)), err=True)


def open_editor(filename: str | None = None, text: str | None = None) -> str | None:
    """click.edit: $VISUAL, $EDITOR, else the system's default editor. One that cannot start or
    fails (none set and no terminal, a name that is no program) is one line naming the cure,
    where click's own error said only "Editing failed", in its own format and exit code."""
    try:
        if filename is not None:
            click.edit(filename=filename)
            return None
        return click.edit(text, extension=".md")
    except click.ClickException as exc:
        raise BadInput(
            f"{exc.format_message()}: set $EDITOR (or $VISUAL) to an editor that runs here"
        ) from None


def vault_root(ctx: click.Context) -> Path:
    return find_vault(ctx.obj.get("vault") if ctx.obj else None)


def note_size_setting(ctx: click.Context) -> Callable[[], float]:
    """The vault's `index.max_file_mb`, read when asked: what `input_text` holds a text for one
    note to once it is past the setting's default (loading the settings costs a few tenths of a
    second, which a short text never pays)."""

    def setting() -> float:
        from tiered_memory.config import load_config

        return load_config(vault_root(ctx)).index.max_file_mb

    return setting


def backend(
    ctx: click.Context,
    *,
    daemon: bool = True,
    progress: Callable[[str, int, int], None] | None = None,
    autostart: bool = False,
    scan_ahead: bool = False,
) -> Backend:
    """The vault's backend for this command: the daemon when it runs, else this process.
    `autostart` starts the daemon first when none runs, `scan_ahead` the freshness scan's walk
    while the application loads (see `open_backend`)."""
    key = "backend" if daemon else "local-backend"
    found: Backend | None = ctx.obj.get(key) if ctx.obj else None
    if found is None:
        found = open_backend(
            vault_root(ctx),
            warn=warn,
            progress=progress,
            daemon=daemon,
            autostart=autostart,
            scan_ahead=scan_ahead,
        )
        ctx.ensure_object(dict)[key] = found
        ctx.call_on_close(found.close)
    return found


def emit(data: Any, as_json: bool, text: str | Callable[[], str]) -> None:
    if as_json:
        click.echo(_printable(dumps(data), as_json=True))
    else:
        click.echo(_printable(text() if callable(text) else text, as_json=False))


def _printable(out: str, *, as_json: bool) -> str:
    """A file name that is not UTF-8 (its bytes surrogate-escaped) shown as `\\xe9`, or in JSON as
    the escape `\\udce9` (which reads back as the same name): a terminal cannot print it as is.
    Text for people shows control characters as `\\x1b` too (`edge.printable`)."""
    if not out.isascii():
        try:
            out.encode("utf-8")
        except UnicodeEncodeError:
            if as_json:
                return re.sub("[\udc80-\udcff]", lambda m: f"\\u{ord(m.group()):04x}", out)
            out = out.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return out if as_json else printable(out)


def parse_when(value: str | None, name: str) -> datetime | None:
    """YYYY-MM-DD, an ISO timestamp, or a relative age such as 7d, 12h, 2w."""
    if not value:
        return None
    value = value.strip()
    units = {"h": 3600, "d": 86400, "w": 7 * 86400}
    if value[:-1].isdigit() and value[-1:] in units:
        try:
            return datetime.now(UTC) - timedelta(seconds=int(value[:-1]) * units[value[-1]])
        except OverflowError:  # further back than the calendar goes (year 1)
            raise click.BadParameter(f"'{value}' reaches back before the year 1", param_hint=name) from None
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
    names = ("tiers", "categories", "tags", "projects", "entities", "statuses", "folders")
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
        click.option(
            "--folder",
            "--in",
            "folders",
            multiple=True,
            help="Only notes under this folder or matching this glob of vault paths: en/, 'Projects/**/*.md' (repeatable).",
        ),
        click.option("--since", help="Updated at or after: YYYY-MM-DD, ISO time, or 7d / 12h / 2w."),
        click.option("--until", help="Updated at or before: YYYY-MM-DD or ISO time."),
    ]
    for option in reversed(options):
        func = option(func)
    return func
