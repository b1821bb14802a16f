"""`tmem install AGENT`: register tmem's MCP server and hooks in an agent's own settings files.

The change itself is planned in `model.agent_setup` (pure: old text in, new text out); this module
finds the files, the vault and the program to run, and writes: a backup of every file it changes,
then an atomic replace. With `--daemon` it also has the vault's daemon started at login (a systemd
user service or a launchd agent, rendered by `daemon.schedule`), so an agent never starts it cold.
"""

from __future__ import annotations

__all__ = ["install", "tmem_program"]

import difflib
import os
import shlex
import shutil
import stat
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from tiered_memory.app.api.setup import CONFIG, ConfigRequest
from tiered_memory.backend import find_vault, run_without_vault
from tiered_memory.cli.options import emit, json_option
from tiered_memory.daemon import client, schedule
from tiered_memory.errors import BadInput, TmemError
from tiered_memory.model import agent_setup
from tiered_memory.model.agent_setup import AGENTS, Launch, Plan, SetupError
from tiered_memory.present import install as show


def tmem_program() -> tuple[str, ...]:
    """An absolute command that starts this very installation of tmem: the `tmem` on PATH when it
    belongs to this Python's environment, else this Python with `-m tiered_memory`."""
    found = shutil.which("tmem")
    here = Path(sys.executable).absolute().parent
    if found and Path(found).resolve().parent in (here, here.resolve()):
        return (str(Path(found).absolute()),)
    beside = here / "tmem"
    if beside.is_file() and os.access(beside, os.X_OK):
        return (str(beside),)
    return (str(Path(sys.executable).absolute()), "-m", "tiered_memory")


def _vault_for_agents(explicit: str | None, notes: list[str], dry_run: bool) -> tuple[str | None, Path]:
    """The vault to name in the agent's commands: the one given, else none (the user's default
    vault is found from any folder). Without a default, the vault found from here becomes it.
    Second, the vault's root either way (the daemon started at login names it)."""
    if explicit:
        root = find_vault(explicit)
        return str(root), root
    settings = run_without_vault(CONFIG, ConfigRequest()).settings
    if settings.get("default_vault"):
        return None, find_vault(settings["default_vault"])  # still a vault?
    try:
        found = find_vault(None)
    except TmemError:
        raise BadInput(
            "no vault to connect the agent to: pass --vault PATH, or `tmem config set default-vault PATH`"
        ) from None
    if not dry_run:
        run_without_vault(CONFIG, ConfigRequest("default-vault", str(found)))
    notes.append(show.default_vault_note(str(found)))
    return None, found


def _vault_root(explicit: str | None) -> Path:
    """The vault whose daemon `--uninstall --daemon` stops starting at login."""
    default = run_without_vault(CONFIG, ConfigRequest()).settings.get("default_vault")
    return find_vault(explicit or default or None)


def _plan_daemon(root: Path, uninstall: bool) -> tuple[schedule.Plan | None, list[str], str | None]:
    """What starting the daemon at login takes here: a plan to install (None when this machine
    has no systemd user session nor launchd, or when removing), the service files found (when
    removing), and the command that starts the daemon by hand (when there is no plan to install)."""
    runner, which, platform = schedule.system()
    if uninstall:
        found = schedule.installed(root, runner, which)
        name = schedule.daemon_unit_name(root)
        return None, [p for p in found["systemd"] if Path(p).name == name] + found["launchd"], None
    method = schedule.detect_daemon(runner, which, platform)
    if method is None:
        return None, [], shlex.join([*tmem_program(), "--vault", str(root), "daemon", "start"])
    return schedule.render_daemon(root, method), [], None


MAX_SETTINGS_MB = 64  # far above any agent's settings file (~/.claude.json keeps every project's history)


def _read(path: Path) -> str | None:
    """A settings file's text (None when there is none), read only when it is a regular file:
    opened without waiting (a pipe in its place would hold the install), held to
    MAX_SETTINGS_MB, and refused in one line when it is not UTF-8, never overwritten."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BadInput(f"cannot read {path} ({exc.strerror or type(exc).__name__})") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise BadInput(f"{path} is not a regular file; tmem changes only a file there")
        data = handle.read(MAX_SETTINGS_MB * 1024 * 1024 + 1)
    if len(data) > MAX_SETTINGS_MB * 1024 * 1024:
        raise BadInput(f"{path} is larger than {MAX_SETTINGS_MB} MB; not read")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"{path} is not UTF-8 text; fix or move it, then run this again") from None


def _named_in_text(launch: Launch) -> None:
    """Refuse a program or vault path an agent's settings (UTF-8 JSON, TOML, JavaScript) cannot
    hold: one whose bytes are not UTF-8 reached Python as lone surrogates."""
    for part in launch.argv():
        try:
            part.encode("utf-8")
        except UnicodeEncodeError:
            shown = part.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            raise BadInput(
                f"{shown}: the path is not UTF-8, and an agent's settings can name only UTF-8 text; "
                "rename or move it"
            ) from None


def _write(path: Path, text: str, stamp: str) -> str | None:
    """Replace the file atomically, keeping the old one beside it; the backup's path (None if new)."""
    backup: str | None = None
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        backup = str(_claim_backup(path, stamp))
        shutil.copy2(path, backup)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        if backup:
            shutil.copymode(backup, tmp)  # ~/.claude.json and friends may be private (0600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return backup


def _remove(path: Path, stamp: str) -> str:
    """Move the file aside as its backup; the backup's path."""
    backup = _claim_backup(path, stamp)
    os.replace(path, backup)
    return str(backup)


_MOST_BACKUPS_A_SECOND = 1000


def _claim_backup(path: Path, stamp: str) -> Path:
    """A new, empty file beside `path` for its backup, created exclusively: the name carries the
    second (`stamp`), and a number after it when that name is taken, since two installs within a
    second (a script, an install then an uninstall) must never write over a backup."""
    for n in range(_MOST_BACKUPS_A_SECOND):
        backup = path.with_name(f"{path.name}.tmem-backup-{stamp}" + (f"-{n}" if n else ""))
        try:
            fd = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except FileExistsError:
            continue
        os.close(fd)
        return backup
    raise BadInput(f"{path}: {_MOST_BACKUPS_A_SECOND} backups of it from this second already; try again")


def _diff(before: str | None, after: str, path: str) -> str:
    lines = difflib.unified_diff(
        (before or "").splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=path if before is not None else "/dev/null",
        tofile=path,
    )
    return "".join(lines)


@click.command("install")
@click.argument("agent", type=click.Choice(AGENTS))
@click.option(
    "--vault",
    "vault_opt",
    type=click.Path(file_okay=False),
    help="The vault the agent uses (default: your default vault).",
)
@click.option(
    "--print", "dry_run", is_flag=True, help="Show the changes (as diffs) without writing anything."
)
@click.option(
    "--uninstall", is_flag=True, help="Remove tmem's entries (and nothing else) from the agent's settings."
)
@click.option(
    "--daemon",
    is_flag=True,
    help="Also start the vault's daemon at login (systemd user service or launchd agent); "
    "with --uninstall, stop doing so.",
)
@json_option
@click.pass_context
def install(
    ctx: click.Context,
    agent: str,
    vault_opt: str | None,
    dry_run: bool,
    uninstall: bool,
    daemon: bool,
    as_json: bool,
) -> None:
    """Connect AGENT to tmem: its MCP server and its session hooks (context at the start, the
    transcript stored at the end), with absolute paths, merged into the agent's settings files.

    AGENT is claude-code, codex, cursor, opencode or kimi. Every file changed is backed up beside
    itself first; entries that are not tmem's are never touched. With --daemon the vault's daemon
    starts at login, so the agent's first search or hook finds it warm."""
    notes: list[str] = []
    explicit = vault_opt or ctx.obj.get("vault")
    vault, root = None, None
    if not uninstall:
        vault, root = _vault_for_agents(explicit, notes, dry_run)
    elif daemon:
        root = _vault_root(explicit)
    home = Path.home()
    launch = Launch(tmem_program(), vault)
    _named_in_text(launch)
    current = {p: _read(Path(p)) for p in agent_setup.files(agent, home)}
    try:
        planned: Plan = agent_setup.plan(agent, home, current, launch, uninstall=uninstall)
    except SetupError as exc:
        raise BadInput(f"cannot change {agent}'s settings: {exc}") from None
    service: schedule.Plan | None = None
    service_files: list[str] = []
    by_hand: str | None = None
    if daemon and root is not None:
        service, service_files, by_hand = _plan_daemon(root, uninstall)  # before writing: it may refuse
    stamp = datetime.now().strftime("%Y%m%dT%H%M%S")
    files: list[show.InstalledFile] = []
    for change in planned.changes:
        backup = None
        if change.changed and not dry_run:
            # A whole file of tmem's own (opencode's plugin) is removed on uninstall, kept as a backup.
            removed = change.before is not None and not change.after
            backup = (
                _remove(Path(change.path), stamp)
                if removed
                else _write(Path(change.path), change.after, stamp)
            )
        diff = _diff(change.before, change.after, change.path) if dry_run and change.changed else None
        files.append(show.InstalledFile(change.path, change.changed, change.notes, backup, diff))
    notes += planned.notes
    at_login: show.AtLogin | None = None
    service_data: dict[str, Any] | None = None
    if daemon:
        service_data, at_login = _daemon_at_login(service, service_files, by_hand, root, uninstall, dry_run)
    report = show.InstallReport(agent, dry_run, uninstall, files, notes, service_data)
    emit(report.to_dict(), as_json, lambda: show.install_text(report, at_login))


def _daemon_at_login(
    service: schedule.Plan | None,
    found: list[str],
    by_hand: str | None,
    root: Path | None,
    uninstall: bool,
    dry_run: bool,
) -> tuple[dict[str, Any], show.AtLogin]:
    """Install (or remove) what starts the daemon at login: what was done, for `--json` and for
    the text."""
    runner, which, _platform = schedule.system()
    if uninstall:
        assert root is not None
        removed = found if dry_run else schedule.remove(root, runner, which, daemon_only=True)
        return show.at_login_json(None, removed), show.AtLogin(removed=removed)
    if service is None:  # no service manager here: say how to start it by hand
        return show.at_login_json(None, []), show.AtLogin(by_hand=by_hand)
    done = show.AtLogin(written=list(service.files), method=service.method, units=service.units)
    if dry_run:
        done.plan = service.text()
        return show.at_login_json(service.to_dict(), []), done
    assert root is not None
    done.stopped = _hand_over(root, runner)
    schedule.install(service, runner)
    return show.at_login_json(service.to_dict(), []), done


def _hand_over(root: Path, runner: schedule.Runner) -> int | None:
    """Stop a daemon already serving the vault (one a hook or a search started), so the service
    starts the vault's only daemon now instead of failing on its lock and retrying every few
    seconds; its pid (None when none ran)."""
    pid = client.lock_holder(root)
    if pid is None:
        return None
    code, out, err = runner(schedule.tmem_argv(root, "daemon", "stop"), None)
    if code != 0:
        why = (err or out).strip().splitlines()[-1:] or [f"exit {code}"]
        raise BadInput(f"the daemon already running for this vault (pid {pid}) did not stop: {why[0]}")
    return pid
