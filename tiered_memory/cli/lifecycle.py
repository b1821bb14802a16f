"""Lifecycle commands: promote / archive / restore-from-archive, `maintain` and short-term keys
(`st`). Each parses its input, runs one operation through the backend and renders the
result with `present`."""

from __future__ import annotations

__all__ = [
    "archive",
    "maintain",
    "promote",
    "restore_from_archive",
    "st",
    "st_clear",
    "st_expire",
    "st_get",
    "st_list",
    "st_set",
]

from datetime import datetime

import click

from tiered_memory.app.api import Empty
from tiered_memory.app.api.lifecycle import (
    ARCHIVE,
    MAINTAIN,
    PROMOTE,
    RESTORE_FROM_ARCHIVE,
    ST_CLEAR,
    ST_EXPIRE,
    ST_GET,
    ST_LIST,
    ST_SET,
    ArchiveRequest,
    MaintainRequest,
    PromoteRequest,
    StClearRequest,
    StKeyRequest,
    StSetRequest,
)
from tiered_memory.app.api.notes import NoteRequest
from tiered_memory.cli.options import backend, emit, json_option, vault_root, warn
from tiered_memory.cli.progress import progress_bar
from tiered_memory.config import load_config
from tiered_memory.daemon import schedule as sched
from tiered_memory.errors import TmemError
from tiered_memory.model.dates import to_datetime
from tiered_memory.present import lifecycle as show
from tiered_memory.present import schedule as show_schedule

# ---- promote / archive / restore --------------------------------------------------------------


@click.command()
@click.argument("ref")
@click.option("--to", "to", metavar="TIER", help="mid or long (default: the next tier up).")
@json_option
@click.pass_context
def promote(ctx: click.Context, ref: str, to: str | None, as_json: bool) -> None:
    """Move a note up a tier (short -> mid -> long), keeping its id, in one commit."""
    done = backend(ctx).run(PROMOTE, PromoteRequest(ref, to))
    emit(done.to_dict(), as_json, show.moved_text(done, "promoted"))


@click.command()
@click.argument("ref")
@click.option("--reason", help="Why (recorded in the note and the commit message).")
@click.option("--superseded-by", "superseded_by", metavar="ID", help="Mark it superseded by this note.")
@json_option
@click.pass_context
def archive(
    ctx: click.Context, ref: str, reason: str | None, superseded_by: str | None, as_json: bool
) -> None:
    """Move a note to the archive (kept and searchable last; never deleted)."""
    done = backend(ctx).run(ARCHIVE, ArchiveRequest(ref, reason, superseded_by))
    emit(done.to_dict(), as_json, show.moved_text(done, "archived"))


@click.command("restore-from-archive")
@click.argument("ref")
@json_option
@click.pass_context
def restore_from_archive(ctx: click.Context, ref: str, as_json: bool) -> None:
    """Bring an archived note back to where it came from (refuses to replace a file)."""
    done = backend(ctx).run(RESTORE_FROM_ARCHIVE, NoteRequest(ref))
    emit(done.to_dict(), as_json, show.moved_text(done, "restored"))


# ---- maintain ---------------------------------------------------------------------------------


@click.command()
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@click.option("--now", "now_text", hidden=True, help="Pretend it is this ISO time (tests).")
@json_option
@click.pass_context
def maintain(ctx: click.Context, dry_run: bool, now_text: str | None, as_json: bool) -> None:
    """Daily maintenance in one commit: expire, fold recalls, merge duplicates, apply the tier rules,
    decay confidence, apply retention; the report goes to .tmem-reports/YYYY-MM-DD.md."""
    now = None
    if now_text:
        now = to_datetime(now_text)
        if now is None:
            raise click.BadParameter(f"'{now_text}' is not an ISO time", param_hint="--now")
    root = vault_root(ctx)
    if not dry_run and sched.started_by_old_timer(root):
        # The timer an older `tmem schedule install` wrote runs this at a fixed time: it is made
        # the tick (the person's other crontab lines untouched), and this run counts as one, so
        # the daemon's maintenance of the day and this one are not both run.
        try:
            replaced = sched.migrate(root)
        except TmemError as exc:
            warn(str(exc))
        else:
            if replaced:  # the timer's log gets it, beside the maintenance's report
                click.echo(show_schedule.migrated_text(replaced))
        ticked = now or datetime.now().astimezone()
        if not sched.old_timer_due(root, load_config(root).lifecycle.maintenance_time, ticked):
            return
    # Merging compares notes by their embeddings: a model loaded for that is shown, not waited on in silence.
    with progress_bar(enabled=not as_json) as progress:
        report = backend(ctx, progress=progress).run(MAINTAIN, MaintainRequest(dry_run=dry_run, now=now))
    emit(report.to_dict(), as_json, lambda: show.maintain_text(report))


# ---- st: short-term keys ------------------------------------------------------------------------


@click.group()
def st() -> None:
    """Short-term memory: key/value context with a time-to-live (short-term/context_stack.json)."""


@st.command("set")
@click.argument("key")
@click.argument("value")
@click.option(
    "--ttl", help="Time to live: 90s, 30m, 2h, 1d, 1w or never (default: lifecycle.short_term_ttl_hours)."
)
@json_option
@click.pass_context
def st_set(ctx: click.Context, key: str, value: str, ttl: str | None, as_json: bool) -> None:
    """Set KEY to VALUE in short-term/context_stack.json."""
    entry = backend(ctx).run(ST_SET, StSetRequest(key, value, ttl))
    emit(entry.to_dict(), as_json, show.st_set_text(entry))


@st.command("get")
@click.argument("key")
@json_option
@click.pass_context
def st_get(ctx: click.Context, key: str, as_json: bool) -> None:
    """Print the value of KEY (exit 1 if it is missing or expired)."""
    entry = backend(ctx).run(ST_GET, StKeyRequest(key))
    emit(show.st_value_json(entry), as_json, show.st_value_text(entry))


@st.command("list")
@json_option
@click.pass_context
def st_list(ctx: click.Context, as_json: bool) -> None:
    """List the keys that have not expired."""
    listing = backend(ctx).run(ST_LIST, Empty())
    emit(show.st_list_json(listing), as_json, lambda: show.st_list_text(listing))


@st.command("clear")
@click.argument("key", required=False)
@json_option
@click.pass_context
def st_clear(ctx: click.Context, key: str | None, as_json: bool) -> None:
    """Remove KEY, or every key."""
    done = backend(ctx).run(ST_CLEAR, StClearRequest(key))
    emit(done.to_dict(), as_json, show.st_cleared_text(done))


@st.command("expire")
@json_option
@click.pass_context
def st_expire(ctx: click.Context, as_json: bool) -> None:
    """Remove expired keys and archive expired temp files now (the daemon does this every daemon.expiry_check_minutes, 60 by default)."""
    done = backend(ctx).run(ST_EXPIRE, Empty())
    emit(done.to_dict(), as_json, show.st_expired_text(done))
