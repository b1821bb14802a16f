"""Commands that share and protect a vault: sync, the git merge driver, resolve, log, restore, backup.

Each parses its input, runs one operation through the backend and renders the result with
`present`. The merge driver needs no vault: git runs it once per merged file, on three temp files.
"""

from __future__ import annotations

__all__ = [
    "backup_command",
    "log_command",
    "merge_driver_command",
    "post_merge_command",
    "resolve_command",
    "restore_command",
    "sync_command",
]

import sys
from pathlib import Path

import click

from tiered_memory.app.api.sync import (
    BACKUP,
    LOG,
    POST_MERGE,
    RESOLVE,
    RESTORE,
    RESTORE_BACKUP,
    SYNC,
    BackupRequest,
    LogRequest,
    PostMergeRequest,
    ResolveRequest,
    RestoreBackupRequest,
    RestoreRequest,
    SyncRequest,
)
from tiered_memory.backend import merge_driver, run_without_vault
from tiered_memory.cli.options import backend, emit, json_option, open_editor, vault_root, warn
from tiered_memory.model.envelope import MAGIC, EnvelopeError, Tampered
from tiered_memory.model.sealed_merge import NoKey
from tiered_memory.present import dumps
from tiered_memory.present import sync as show_sync


@click.command("sync")
@click.option("--remote", help="Git remote to sync with (default: git.remote in tmem.yaml, i.e. origin).")
@json_option
@click.pass_context
def sync_command(ctx: click.Context, remote: str | None, as_json: bool) -> None:
    """Commit pending edits, merge others' commits note by note, push. Never rebases or force-pushes.

    Uses standard git config: add a remote with `git remote add origin URL` (any git host, or a bare
    repository over ssh). A push rejected because someone pushed meanwhile is merged and retried.
    """
    report = backend(ctx).run(SYNC, SyncRequest(remote))
    emit(report.to_dict(), as_json, lambda: show_sync.sync_text(report))


@click.command("merge-driver", hidden=True)
@click.argument("base", type=click.Path(dir_okay=False))
@click.argument("ours", type=click.Path(dir_okay=False))
@click.argument("theirs", type=click.Path(dir_okay=False))
@click.argument("path", required=False, default="")
@json_option
def merge_driver_command(base: str, ours: str, theirs: str, path: str, as_json: bool) -> None:
    """Git merge driver (`tmem merge-driver %O %A %B %P`): merge a note into the %A file.

    Exits 0 even when both sides changed the same lines: both versions are kept between markers and
    the note gets `conflict: true`, so a pull never stops and the note stays searchable.
    """
    try:
        result = merge_driver(base, ours, theirs, path or ours)
    except (OSError, UnicodeDecodeError) as exc:
        click.echo(show_sync.merge_unreadable_line(path or ours, exc), err=True)
        sys.exit(1)
    except NoKey:
        click.echo(show_sync.merge_no_key_line(path or ours), err=True)
        sys.exit(1)
    except (Tampered, EnvelopeError) as exc:
        click.echo(show_sync.merge_unopened_line(path or ours, exc), err=True)
        sys.exit(1)
    if as_json:
        click.echo(dumps(show_sync.merged_json(path, result)))
    if result.conflict:
        click.echo(show_sync.merge_conflict_line(path), err=True)


@click.command("resolve")
@click.argument("ref")
@click.option("--no-edit", is_flag=True, help="Do not open $EDITOR: the note was already fixed by hand.")
@click.option("--force", is_flag=True, help="Clear the mark even if conflict markers are still in the note.")
@json_option
@click.pass_context
def resolve_command(ctx: click.Context, ref: str, no_edit: bool, force: bool, as_json: bool) -> None:
    """Open a conflicted note (by id or path) in $EDITOR, then clear `conflict: true` and commit."""
    tmem = backend(ctx)
    # Opening brings in what waits (an encrypted note's other version) and gives the plaintext.
    opened = tmem.run(RESOLVE, ResolveRequest(ref, open=True))
    rel = opened.path
    path = vault_root(ctx) / rel
    text = None
    if path.read_bytes().startswith(MAGIC):  # encrypted: edited outside the vault, saved sealed
        if not no_edit:
            edited = open_editor(text=opened.text)
            text = edited if edited is not None else opened.text
    elif not no_edit:
        open_editor(filename=str(path))
    done = tmem.run(RESOLVE, ResolveRequest(rel, force, text=text))
    emit(done.to_dict(), as_json, show_sync.resolved_text(rel, done))


@click.command("log")
@click.argument("ref", required=False)
@click.option("--limit", "-n", type=click.IntRange(min=1), default=None, help="At most this many entries.")
@json_option
@click.pass_context
def log_command(ctx: click.Context, ref: str | None, limit: int | None, as_json: bool) -> None:
    """A note's history (by id or path) across moves between tiers, even after it was forgotten.

    Without ID: the vault's recent commits and the notes each one changed.
    """
    found = backend(ctx).run(LOG, LogRequest(ref, limit))
    emit(show_sync.log_json(found), as_json, lambda: show_sync.log_text(found))


@click.command("restore")
@click.argument("ref")
@click.option("--at", "rev", help="A commit (see `tmem log ID`): bring the note back as it was there.")
@json_option
@click.pass_context
def restore_command(ctx: click.Context, ref: str, rev: str | None, as_json: bool) -> None:
    """Bring back a forgotten note, or an older version of one, as a new commit (history is kept)."""
    restored = backend(ctx).run(RESTORE, RestoreRequest(ref, rev))
    emit(restored.to_dict(), as_json, lambda: show_sync.restored_text(restored))


@click.command("backup")
@click.option(
    "--to",
    "dest",
    type=click.Path(file_okay=False),
    help="Folder for the bundle (default: backup.directory).",
)
@click.option("--keep", type=click.IntRange(min=1), help="Bundles to keep (default: backup.keep, 7).")
@click.option(
    "--restore",
    "restore_from",
    nargs=2,
    type=click.Path(),
    metavar="BUNDLE PATH",
    help="Make a working vault at PATH from BUNDLE instead of writing a backup.",
)
@json_option
@click.pass_context
def backup_command(
    ctx: click.Context,
    dest: str | None,
    keep: int | None,
    restore_from: tuple[str, str] | None,
    as_json: bool,
) -> None:
    """Write the vault's whole history as a dated git bundle, keeping the newest N.

    `tmem backup --restore BUNDLE PATH` clones a bundle into a new working vault.
    """
    if restore_from:
        bundle, target = (str(Path(p).expanduser().absolute()) for p in restore_from)
        restored = run_without_vault(RESTORE_BACKUP, RestoreBackupRequest(bundle, target))
        emit(restored.to_dict(), as_json, show_sync.restored_vault_text(restored))
        return
    # The daemon may write the bundle: a relative folder means the one this command runs in.
    folder = str(Path(dest).expanduser().absolute()) if dest else None
    made = backend(ctx).run(BACKUP, BackupRequest(folder, keep))
    if made.uncommitted and not as_json:
        warn(show_sync.uncommitted_warning(made))
    emit(made.to_dict(), as_json, show_sync.backed_up_text(made))


@click.command("post-merge", hidden=True)
@json_option
@click.pass_context
def post_merge_command(ctx: click.Context, as_json: bool) -> None:
    """Git post-merge hook: update the indexes from what `git pull` / `git merge` changed."""
    done = backend(ctx).run(POST_MERGE, PostMergeRequest())
    if as_json:
        click.echo(dumps(done.to_dict()))
    elif done.reindexed:
        click.echo(show_sync.post_merge_line(done.reindexed), err=True)
