"""Commands that share and protect a vault: sync, the git merge driver, resolve, log, restore, backup.

Only click at the top: the merge driver runs once per merged file and `tmem --help` must stay fast.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from tiered_memory.cli.options import emit, json_option, open_memory, warn


@click.command("sync")
@click.option("--remote", help="Git remote to sync with (default: git.remote in tmem.yaml, i.e. origin).")
@json_option
@click.pass_context
def sync_command(ctx: click.Context, remote: str | None, as_json: bool) -> None:
    """Commit pending edits, merge others' commits note by note, push. Never rebases or force-pushes.

    Uses standard git config: add a remote with `git remote add origin URL` (any git host, or a bare
    repository over ssh). A push rejected because someone pushed meanwhile is merged and retried.
    """
    from tiered_memory.sync.gitsync import sync

    memory = open_memory(ctx)
    report = sync(memory, remote)
    emit(report.to_dict(), as_json, report.render)


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
    from tiered_memory.model.merge3 import run_driver

    try:
        result = run_driver(base, ours, theirs, path or ours)
    except (OSError, UnicodeDecodeError) as exc:
        click.echo(f"tmem merge-driver: {path or ours}: cannot merge as text ({exc}); left for git", err=True)
        sys.exit(1)
    if as_json:
        from tiered_memory.present import dumps

        click.echo(dumps({"path": path, "conflict": result.conflict, "notes": result.notes}))
    if result.conflict:
        click.echo(
            f"tmem: {path}: both sides changed the same lines; kept both, marked conflict: true "
            "(`tmem resolve` it)",
            err=True,
        )


@click.command("resolve")
@click.argument("ref")
@click.option("--no-edit", is_flag=True, help="Do not open $EDITOR: the note was already fixed by hand.")
@click.option("--force", is_flag=True, help="Clear the mark even if conflict markers are still in the note.")
@json_option
@click.pass_context
def resolve_command(ctx: click.Context, ref: str, no_edit: bool, force: bool, as_json: bool) -> None:
    """Open a conflicted note (by id or path) in $EDITOR, then clear `conflict: true` and commit."""
    from tiered_memory.app.conflicts import resolve_conflict

    memory = open_memory(ctx)
    rel = memory.resolve(ref)
    if not no_edit:
        click.edit(filename=str(memory.vault.abspath(rel)))
    sha = resolve_conflict(memory, rel, force=force)
    data = {"path": rel, "commit": sha}
    emit(data, as_json, f"resolved {rel}" + (f" ({sha[:8]})" if sha else " (nothing to commit)"))


@click.command("log")
@click.argument("ref", required=False)
@click.option("--limit", "-n", type=click.IntRange(min=1), default=None, help="At most this many entries.")
@json_option
@click.pass_context
def log_command(ctx: click.Context, ref: str | None, limit: int | None, as_json: bool) -> None:
    """A note's history (by id or path) across moves between tiers, even after it was forgotten.

    Without ID: the vault's recent commits and the notes each one changed.
    """
    from tiered_memory.sync import history

    memory = open_memory(ctx)
    if ref is None:
        entries = history.vault_log(memory.vault, limit or 20)
        emit([e.to_dict() for e in entries], as_json, lambda: history.render_vault_log(entries))
        return
    found = history.note_history(memory, ref, limit)
    emit(found.to_dict(), as_json, found.render)


@click.command("restore")
@click.argument("ref")
@click.option("--at", "rev", help="A commit (see `tmem log ID`): bring the note back as it was there.")
@json_option
@click.pass_context
def restore_command(ctx: click.Context, ref: str, rev: str | None, as_json: bool) -> None:
    """Bring back a forgotten note, or an older version of one, as a new commit (history is kept)."""
    from tiered_memory.sync import history

    memory = open_memory(ctx)
    restored = history.restore(memory, ref, rev)
    emit(restored.to_dict(), as_json, restored.render)


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
    from tiered_memory.sync import backup

    if restore_from:
        target = backup.restore_backup(Path(restore_from[0]), Path(restore_from[1]))
        emit({"vault": str(target)}, as_json, f"restored vault at {target} (add a remote to sync it)")
        return
    from tiered_memory.cli.options import _vault_root
    from tiered_memory.storage.vault import Vault

    vault = Vault(_vault_root(ctx))
    bundle = backup.backup(vault, Path(dest) if dest else None, keep)
    pending = backup.uncommitted(vault)
    if pending and not as_json:
        warn(f"{pending} uncommitted change(s) are not in the backup (`tmem sync` commits them)")
    kept = backup.list_backups(bundle.parent, vault)
    data = {"bundle": str(bundle), "kept": [str(p) for p in kept], "uncommitted": pending}
    emit(data, as_json, f"backed up to {bundle} ({len(kept)} kept)")


@click.command("post-merge", hidden=True)
@json_option
@click.pass_context
def post_merge_command(ctx: click.Context, as_json: bool) -> None:
    """Git post-merge hook: update the indexes from what `git pull` / `git merge` changed."""
    from tiered_memory.sync.gitsync import reindex_range

    memory = open_memory(ctx)
    count = reindex_range(memory, "ORIG_HEAD", "HEAD")
    if as_json:
        emit({"reindexed": count}, True, "")
    elif count:
        click.echo(f"tmem: indexes updated for {count} changed note(s)", err=True)


COMMANDS: list[click.Command] = [
    sync_command,
    merge_driver_command,
    resolve_command,
    log_command,
    restore_command,
    backup_command,
    post_merge_command,
]
