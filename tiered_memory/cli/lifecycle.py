"""Lifecycle commands: short-term keys (`st`), promote / archive / restore-from-archive,
`maintain`, and `schedule`. Only click is imported here; the core is imported inside commands."""

from __future__ import annotations

from typing import Any

import click

from tiered_memory.cli.options import emit, json_option, open_memory


def _moved(data: dict[str, Any], verb: str) -> str:
    return f"{verb} {data['id']}: {data['from']} -> {data['to']}"


# ---- promote / archive / restore --------------------------------------------------------------


@click.command()
@click.argument("ref")
@click.option("--to", "to", metavar="TIER", help="mid or long (default: the next tier up).")
@json_option
@click.pass_context
def promote(ctx: click.Context, ref: str, to: str | None, as_json: bool) -> None:
    """Move a note up a tier (short -> mid -> long), keeping its id, in one commit."""
    from tiered_memory.app.lifecycle import promote as run

    data = run(open_memory(ctx), ref, to).as_dict()
    emit(data, as_json, _moved(data, "promoted"))


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
    from tiered_memory.app.lifecycle import archive as run

    data = run(open_memory(ctx), ref, reason, superseded_by).as_dict()
    emit(data, as_json, _moved(data, "archived"))


@click.command("restore-from-archive")
@click.argument("ref")
@json_option
@click.pass_context
def restore_from_archive(ctx: click.Context, ref: str, as_json: bool) -> None:
    """Bring an archived note back to where it came from (refuses to replace a file)."""
    from tiered_memory.app.lifecycle import restore_from_archive as run

    data = run(open_memory(ctx), ref).as_dict()
    emit(data, as_json, _moved(data, "restored"))


# ---- maintain ---------------------------------------------------------------------------------


@click.command()
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@click.option("--now", "now_text", hidden=True, help="Pretend it is this ISO time (tests).")
@json_option
@click.pass_context
def maintain(ctx: click.Context, dry_run: bool, now_text: str | None, as_json: bool) -> None:
    """Daily maintenance in one commit: expire, fold recalls, merge duplicates, apply the tier rules,
    decay confidence, apply retention, and write archive/daily/YYYY-MM-DD.md."""
    from tiered_memory.app.maintain import run_maintenance
    from tiered_memory.model.dates import to_datetime

    now = None
    if now_text:
        now = to_datetime(now_text)
        if now is None:
            raise click.BadParameter(f"'{now_text}' is not an ISO time", param_hint="--now")
    report = run_maintenance(open_memory(ctx), now=now, dry_run=dry_run)
    emit(report.as_dict(), as_json, lambda: _maintain_text(report))


def _maintain_text(report: Any) -> str:
    from tiered_memory.app.maintain_report import render_run

    if not report.changed:
        return "nothing to do"
    head = (
        "plan (dry run, nothing changed):" if report.dry_run else f"maintenance done ({report.report_path})"
    )
    return f"{head}\n{render_run(report).rstrip()}"


# ---- st: short-term keys and the current session ------------------------------------------------


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
    from tiered_memory.app import shortterm

    keep = False
    delta = None
    if ttl is not None:
        delta = shortterm.parse_ttl(ttl)
        keep = delta is None
    entry = shortterm.set_key(open_memory(ctx), key, value, delta, keep=keep)
    until = f" (expires {entry.expires_at:%Y-%m-%d %H:%M %Z})" if entry.expires_at else " (no expiry)"
    emit({"key": key, **entry.as_dict()}, as_json, f"set {key}{until}")


@st.command("get")
@click.argument("key")
@json_option
@click.pass_context
def st_get(ctx: click.Context, key: str, as_json: bool) -> None:
    """Print the value of KEY (exit 1 if it is missing or expired)."""
    import json

    from tiered_memory.app import shortterm

    value = shortterm.get_key(open_memory(ctx), key)
    emit({"key": key, "value": value}, as_json, value if isinstance(value, str) else json.dumps(value))


@st.command("list")
@json_option
@click.pass_context
def st_list(ctx: click.Context, as_json: bool) -> None:
    """List the keys that have not expired."""
    from tiered_memory.app import shortterm

    entries = shortterm.list_keys(open_memory(ctx))

    def text() -> str:
        if not entries:
            return "no short-term keys"
        return "\n".join(
            f"{k} = {e.value}" + (f"  (expires {e.expires_at:%Y-%m-%d %H:%M})" if e.expires_at else "")
            for k, e in entries.items()
        )

    emit({k: e.as_dict() for k, e in entries.items()}, as_json, text)


@st.command("clear")
@click.argument("key", required=False)
@json_option
@click.pass_context
def st_clear(ctx: click.Context, key: str | None, as_json: bool) -> None:
    """Remove KEY, or every key."""
    from tiered_memory.app import shortterm

    count = shortterm.clear(open_memory(ctx), key)
    emit({"cleared": count}, as_json, f"cleared {count} key(s)")


@st.command("expire")
@json_option
@click.pass_context
def st_expire(ctx: click.Context, as_json: bool) -> None:
    """Remove expired keys and archive expired temp files now (the daemon does this hourly)."""
    from tiered_memory.app import shortterm

    count = shortterm.expire(open_memory(ctx))
    emit({"expired": count}, as_json, f"expired {count} item(s)")


# ---- schedule ---------------------------------------------------------------------------------


@click.group()
def schedule() -> None:
    """Run `tmem maintain` daily from a user crontab or systemd user timer (or install the daemon)."""


_method = click.option(
    "--method",
    type=click.Choice(["auto", "cron", "systemd"]),
    default="auto",
    show_default=True,
    help="auto: a systemd user timer when systemd answers, else crontab.",
)


@schedule.command("install")
@_method
@click.option(
    "--daemon", is_flag=True, help="Install the daemon (`tmem daemon run`) as a systemd user service instead."
)
@click.option("--print", "print_only", is_flag=True, help="Only print what would be installed.")
@json_option
@click.pass_context
def schedule_install(ctx: click.Context, method: str, daemon: bool, print_only: bool, as_json: bool) -> None:
    """Install the daily maintenance for this vault (replaces this vault's earlier schedule)."""
    from tiered_memory.cli.options import _vault_root
    from tiered_memory.daemon import schedule as sched
    from tiered_memory.storage.vault import Vault

    root = _vault_root(ctx)
    chosen = sched.detect(sched.run_command) if method == "auto" else method
    plan = sched.render(root, Vault(root).config.lifecycle.maintenance_time, chosen, daemon=daemon)
    if not print_only:
        sched.install(plan)
    data = {"installed": not print_only, **plan.as_dict()}
    emit(data, as_json, plan.text() if print_only else f"installed ({chosen}):\n{plan.text().rstrip()}")


@schedule.command("remove")
@json_option
@click.pass_context
def schedule_remove(ctx: click.Context, as_json: bool) -> None:
    """Remove this vault's cron line, timer and daemon service."""
    from tiered_memory.cli.options import _vault_root
    from tiered_memory.daemon import schedule as sched

    removed = sched.remove(_vault_root(ctx))
    emit({"removed": removed}, as_json, "\n".join(f"removed {r}" for r in removed) or "nothing was installed")


@schedule.command("show")
@json_option
@click.pass_context
def schedule_show(ctx: click.Context, as_json: bool) -> None:
    """Show this vault's installed schedule."""
    from tiered_memory.cli.options import _vault_root
    from tiered_memory.daemon import schedule as sched

    found = sched.installed(_vault_root(ctx))
    lines = [f"cron: {ln}" for ln in found["cron"]] + [f"systemd: {p}" for p in found["systemd"]]
    emit(found, as_json, "\n".join(lines) or "no schedule installed")


COMMANDS: list[click.Command] = [promote, archive, restore_from_archive, maintain, st, schedule]
