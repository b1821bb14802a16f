"""Schedule the daily `tmem maintain` (a user crontab line or a systemd user timer), or install the
daemon to start at login (a systemd user service, or a launchd agent on macOS). Templates live in
`scripts/schedule/`.

The timer carries no time of day: it runs `tmem schedule tick` every `TICK_MINUTES`, and the tick
runs the maintenance once a day, at the first tick at or after `lifecycle.maintenance_time` as
tmem.yaml says it then (`maintenance_due`). So a time the person changes is followed at once,
without installing again, and nothing outside the vault (the crontab, the unit files) is ever
rewritten by a value that came in a pull: a pulled time moves when the vault's maintenance runs,
as it does for the daemon's own schedule, never what this machine's scheduler holds.

Everything that runs a program goes through an injectable `runner`, and unit files go to an
injectable folder, so tests never touch the real crontab or systemd. Paths are quoted for the
consumer: POSIX shell quoting (and `\\%`) for cron, systemd's own quoting (and `%%`, `$$`) for units,
XML escaping for launchd's property lists (one argument per element, no shell), so vault paths with
spaces, quotes, ampersands or percent signs work.
"""

from __future__ import annotations

__all__ = [
    "DAEMON_METHODS",
    "METHODS",
    "Plan",
    "Runner",
    "SCRIPTS",
    "RAN_NAME",
    "TICK_MINUTES",
    "Which",
    "cron_command",
    "daemon_unit_name",
    "detect",
    "detect_daemon",
    "install",
    "installed",
    "launch_agents_dir",
    "launchd_label",
    "maintenance_due",
    "old_timer_due",
    "migrate",
    "outdated",
    "plist_string",
    "remove",
    "render",
    "render_daemon",
    "run_command",
    "started_by_old_timer",
    "system",
    "systemd_command",
    "systemd_quote",
    "template",
    "tmem_argv",
    "unit_dir",
    "vault_key",
]

import contextlib
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from xml.sax.saxutils import escape

from tiered_memory.daemon import daily
from tiered_memory.errors import BadInput, VaultError
from tiered_memory.model.layout import STATE_DIR

# (argv, stdin text or None) -> (exit code, stdout, stderr)
Runner = Callable[[list[str], str | None], tuple[int, str, str]]
Which = Callable[[str], str | None]
METHODS = ("cron", "systemd")
DAEMON_METHODS = ("systemd", "launchd")
# Installed from a wheel the templates are package data; in a source checkout, scripts/schedule/.
_PACKAGE = Path(__file__).resolve().parent.parent
_PACKAGED = _PACKAGE / "schedule_templates"
SCRIPTS = _PACKAGED if _PACKAGED.is_dir() else _PACKAGE.parent / "scripts" / "schedule"
# How often the installed timer looks whether the maintenance is due: a maintenance time on the
# quarter hour runs at it, any other within this many minutes after it. A tick that finds nothing
# due costs one short process (no index, no model).
TICK_MINUTES = 15
# When the maintenance last ran, by the tick or the daemon, in the vault's .tmem/.
RAN_NAME = daily.RECORD


def run_command(argv: list[str], stdin: str | None = None) -> tuple[int, str, str]:
    try:
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 127, "", str(exc)
    return done.returncode, done.stdout, done.stderr


def template(name: str) -> str:
    path = SCRIPTS / name
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        raise VaultError(
            f"schedule template missing at {path} (reinstall tiered-memory from its source)"
        ) from None


def vault_key(root: Path) -> str:
    """A short stable name per vault, so several vaults can each have their own schedule."""
    return hashlib.blake2b(str(root).encode("utf-8"), digest_size=4).hexdigest()


def unit_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "systemd" / "user"


def launch_agents_dir() -> Path:
    return Path.home() / "Library" / "LaunchAgents"


def launchd_label(root: Path) -> str:
    return f"org.tiered-memory.daemon.{vault_key(root)}"


def daemon_unit_name(root: Path) -> str:
    return f"tmem-daemon-{vault_key(root)}.service"


# ---- quoting ----------------------------------------------------------------------------------


def cron_command(argv: list[str]) -> str:
    """Shell-quoted for /bin/sh, with `%` escaped: cron turns a bare `%` into a newline."""
    return " ".join(shlex.quote(a) for a in argv).replace("%", "\\%")


def systemd_quote(arg: str) -> str:
    """One argument of an ExecStart= line; `%` and `$` are doubled so systemd takes them literally."""
    escaped = arg.replace("%", "%%").replace("$", "$$")
    if escaped and not any(c in escaped for c in " \t\"'\\;") and escaped.isprintable():
        return escaped
    inner = escaped.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{inner}"'


def systemd_command(argv: list[str]) -> str:
    return " ".join(systemd_quote(a) for a in argv)


def plist_string(arg: str) -> str:
    """One <string> of a property list. XML 1.0 cannot carry most control characters at all, so a
    path holding one is refused rather than written into a file launchd would not load."""
    if any(ord(c) < 32 and c not in "\t\n\r" for c in arg):
        raise BadInput(f"{arg!r} holds a control character a launchd property list cannot carry")
    return f"<string>{escape(arg)}</string>"


def _describe(root: Path) -> str:
    return str(root).replace("%", "%%").replace("\n", " ")


# ---- rendering --------------------------------------------------------------------------------


@dataclass
class Plan:
    method: str
    key: str
    files: dict[str, str] = field(default_factory=dict)  # absolute path -> content (systemd units)
    cron_line: str = ""
    units: list[str] = field(default_factory=list)  # what to enable

    def to_dict(self) -> dict[str, object]:
        return {
            "method": self.method,
            "files": self.files,
            "cron_line": self.cron_line or None,
            "units": self.units,
        }

    def text(self) -> str:
        if self.method == "cron":
            return self.cron_line
        return "\n".join(f"# {path}\n{content.rstrip()}\n" for path, content in self.files.items())


def tmem_argv(
    root: Path, *command: str, python: str | None = None, program: list[str] | None = None
) -> list[str]:
    """The tmem installed beside the running Python (a venv's or pipx's console script), else
    `python -m tiered_memory`: cron and systemd run with a minimal PATH. `program`: the words that
    start tmem, as a timer installed before names them."""
    if not program:
        script = Path(sys.executable).parent / "tmem"
        if python is None and script.is_file() and os.access(script, os.X_OK):
            program = [str(script)]
        else:
            program = [python or sys.executable, "-m", "tiered_memory"]
    return [*program, "--vault", str(root), *command]


def render(
    root: Path,
    method: str,
    *,
    daemon: bool = False,
    python: str | None = None,
    units: Path | None = None,
    program: list[str] | None = None,
) -> Plan:
    if daemon:
        return render_daemon(root, method, python=python, folder=units)
    if method == "launchd":
        raise BadInput("launchd is used for the daemon only; schedule the maintenance with cron")
    key = vault_key(root)
    tick = tmem_argv(root, "schedule", "tick", python=python, program=program)
    if method == "cron":
        text = template("tmem-maintain.cron").format(
            minute=f"*/{TICK_MINUTES}",
            hour="*",
            command=cron_command(tick),
            log=cron_command([str(root / ".tmem" / "maintain.log")]),
            log_dir=cron_command([str(root / ".tmem")]),
            marker=f"# tmem-maintain {key}",
        )
        line = next(ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#"))
        return Plan("cron", key, cron_line=line)
    folder = units or unit_dir()
    description = _describe(root)
    service = f"tmem-maintain-{key}.service"
    timer = f"tmem-maintain-{key}.timer"
    files = {
        str(folder / service): template("tmem-maintain.service").format(
            description=description, exec_start=systemd_command(tick)
        ),
        str(folder / timer): template("tmem-maintain.timer").format(
            description=description, service=service, calendar=f"*-*-* *:00/{TICK_MINUTES}:00"
        ),
    }
    return Plan("systemd", key, files=files, units=[timer])


# ---- the tick ---------------------------------------------------------------------------------


def maintenance_due(root: Path, maintenance_time: str, now: datetime) -> bool:
    """Whether the tick at `now` (local time) runs the maintenance: `maintenance_time` (HH:MM) has
    come today and neither this tick nor the daemon has run it today (one record, `daemon.daily`).
    The first tick after an install only notes where the day stands, as a daemon does for a daily
    job: the maintenance runs at its next time, not at the install. A tick that says yes records
    the run first, so a maintenance that fails is tried again the next day, not every tick."""
    return daily.claim(root / STATE_DIR, maintenance_time, now)


def old_timer_due(root: Path, maintenance_time: str, now: datetime) -> bool:
    """`maintenance_due` for a `tmem maintain` an older install's timer started (at the time it
    was installed with): it counts as a tick, except that with no record yet it runs (that timer
    ran every day) rather than only noting the day. A time since moved later waits for it."""
    return daily.claim(root / STATE_DIR, maintenance_time, now, known=now - timedelta(days=1))


def render_daemon(root: Path, method: str, *, python: str | None = None, folder: Path | None = None) -> Plan:
    """The daemon started at login: a systemd user service, or a launchd agent (`folder` defaults to
    the user's unit folder or ~/Library/LaunchAgents)."""
    key = vault_key(root)
    argv = tmem_argv(root, "daemon", "run", python=python)
    if method == "systemd":
        name = daemon_unit_name(root)
        content = template("tmem-daemon.service").format(
            description=_describe(root), exec_start=systemd_command(argv)
        )
        return Plan("systemd", key, files={str((folder or unit_dir()) / name): content}, units=[name])
    if method == "launchd":
        label = launchd_label(root)
        content = template("tmem-daemon.plist").format(
            label=escape(label), arguments="\n".join(f"\t\t{plist_string(a)}" for a in argv)
        )
        path = (folder or launch_agents_dir()) / f"{label}.plist"
        return Plan("launchd", key, files={str(path): content}, units=[label])
    raise BadInput(
        "--daemon needs systemd user services or launchd; without them start `tmem daemon run` from your session"
    )


def system() -> tuple[Runner, Which, str]:
    """The real machine: how to run a program, find one, and which platform this is (tests swap it)."""
    return run_command, shutil.which, sys.platform


def detect_daemon(runner: Runner, which: Which = shutil.which, platform: str = sys.platform) -> str | None:
    """How this machine starts a program at login: launchd on macOS, a systemd user manager when one
    answers; None when neither (the caller says how to start the daemon by hand)."""
    if platform == "darwin":
        return "launchd" if which("launchctl") else None
    if which("systemctl") and runner(["systemctl", "--user", "show-environment"], None)[0] == 0:
        return "systemd"
    return None


# ---- detection, install, remove, show ---------------------------------------------------------


def detect(runner: Runner, which: Which = shutil.which, *, fallback: str | None = None) -> str:
    """systemd when a user manager answers, else cron when `crontab` exists, else `fallback` (a
    plan only printed needs no scheduler here)."""
    if which("systemctl") and runner(["systemctl", "--user", "show-environment"], None)[0] == 0:
        return "systemd"
    if which("crontab"):
        return "cron"
    if fallback is not None:
        return fallback
    raise BadInput("neither a systemd user session nor crontab was found; use --print and install it by hand")


def _crontab(runner: Runner) -> list[str]:
    code, out, err = runner(["crontab", "-l"], None)
    if code != 0:
        if "no crontab" in (err + out).lower():
            return []
        raise BadInput(f"crontab -l failed: {(err or out).strip() or f'exit {code}'}")
    return out.splitlines()


def _write_crontab(runner: Runner, lines: list[str]) -> None:
    text = "\n".join(lines) + "\n" if lines else ""
    code, out, err = runner(["crontab", "-"], text)
    if code != 0:
        raise BadInput(f"crontab could not be written: {(err or out).strip() or f'exit {code}'}")


def _systemctl(runner: Runner, *args: str) -> None:
    code, out, err = runner(["systemctl", "--user", *args], None)
    if code != 0:
        raise BadInput(f"systemctl --user {' '.join(args)} failed: {(err or out).strip() or f'exit {code}'}")


def _launchctl_domain() -> str:
    return f"gui/{os.getuid()}"


def install(plan: Plan, runner: Runner = run_command) -> Plan:
    """Install a rendered plan: replaces this vault's previous line or units, never anyone else's."""
    if plan.method == "cron":
        marker = f"# tmem-maintain {plan.key}"
        kept = [ln for ln in _crontab(runner) if not ln.rstrip().endswith(marker)]
        _write_crontab(runner, [*kept, plan.cron_line])
        return plan
    for path, content in plan.files.items():
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    if plan.method == "launchd":
        for label, path in zip(plan.units, plan.files, strict=True):
            # An agent loaded from an earlier install keeps its old arguments until booted out.
            runner(["launchctl", "bootout", f"{_launchctl_domain()}/{label}"], None)
            code, out, err = runner(["launchctl", "bootstrap", _launchctl_domain(), path], None)
            if code != 0:
                raise BadInput(f"launchctl bootstrap failed: {(err or out).strip() or f'exit {code}'}")
        return plan
    _systemctl(runner, "daemon-reload")
    for unit in plan.units:
        _systemctl(runner, "enable", "--now", unit)
    return plan


def installed(
    root: Path,
    runner: Runner = run_command,
    which: Which = shutil.which,
    units: Path | None = None,
    agents: Path | None = None,
) -> dict[str, list[str]]:
    """This vault's schedules: {"cron": [lines], "systemd": [unit files], "launchd": [plists]}."""
    key = vault_key(root)
    found: dict[str, list[str]] = {"cron": [], "systemd": [], "launchd": []}
    if which("crontab"):
        found["cron"] = [ln for ln in _crontab(runner) if ln.rstrip().endswith(f"# tmem-maintain {key}")]
    folder = units or unit_dir()
    if folder.is_dir():
        names = (f"tmem-maintain-{key}.service", f"tmem-maintain-{key}.timer", f"tmem-daemon-{key}.service")
        found["systemd"] = [str(folder / n) for n in names if (folder / n).is_file()]
    plist = (agents or launch_agents_dir()) / f"{launchd_label(root)}.plist"
    if plist.is_file():
        found["launchd"] = [str(plist)]
    return found


def remove(
    root: Path,
    runner: Runner = run_command,
    which: Which = shutil.which,
    units: Path | None = None,
    agents: Path | None = None,
    *,
    daemon_only: bool = False,
) -> list[str]:
    """Remove this vault's cron line and units (with `daemon_only`, only what starts the daemon at
    login). Returns what was removed."""
    key = vault_key(root)
    found = installed(root, runner, which, units, agents)
    if daemon_only:
        found["cron"] = []
        found["systemd"] = [p for p in found["systemd"] if Path(p).name == daemon_unit_name(root)]
    removed: list[str] = []
    for path in found["launchd"]:
        runner(["launchctl", "bootout", f"{_launchctl_domain()}/{launchd_label(root)}"], None)
        Path(path).unlink(missing_ok=True)
        removed.append(path)
    if found["cron"]:
        marker = f"# tmem-maintain {key}"
        _write_crontab(runner, [ln for ln in _crontab(runner) if not ln.rstrip().endswith(marker)])
        removed += [f"crontab: {ln}" for ln in found["cron"]]
    if found["systemd"]:
        for path in found["systemd"]:
            name = Path(path).name
            if name.endswith(".timer") or name.startswith("tmem-daemon-"):
                runner(["systemctl", "--user", "disable", "--now", name], None)
        for path in found["systemd"]:
            Path(path).unlink(missing_ok=True)
            removed.append(path)
        runner(["systemctl", "--user", "daemon-reload"], None)
    return removed


# ---- timers an older install wrote ------------------------------------------------------------
#
# Before the tick, `tmem schedule install` wrote the time of day into the timer, which ran
# `tmem maintain` itself: `M H * * * mkdir -p … && tmem --vault V maintain >> V/.tmem/maintain.log`
# (the same `# tmem-maintain KEY` marker), or a service whose ExecStart ended in `maintain` and a
# timer `OnCalendar=*-*-* HH:MM:00`. Such a timer keeps running at the old time, whatever tmem.yaml
# says, until it is installed again; `outdated` finds it, `migrate` replaces it with what
# `install` writes today.


def _ticks(command: str) -> bool:
    """Whether a crontab line's command or an ExecStart= runs the tick (not `maintain` itself)."""
    return " schedule tick >> " in command or command.rstrip().endswith(" schedule tick")


def outdated(
    root: Path, runner: Runner = run_command, which: Which = shutil.which, units: Path | None = None
) -> list[str]:
    """This vault's maintenance timers an older install wrote, as `installed` names them (a
    crontab line as `crontab: LINE`, a unit by its file). Reading the crontab failing is no timer."""
    try:
        found = installed(root, runner, which, units, agents=Path(os.devnull))
    except BadInput:
        found = {"cron": [], "systemd": [], "launchd": []}
    old = [f"crontab: {line}" for line in found["cron"] if not _ticks(line)]
    service = (units or unit_dir()) / f"tmem-maintain-{vault_key(root)}.service"
    if str(service) in found["systemd"] and not _service_ticks(service):
        old.append(str(service))
    return old


def _service_ticks(service: Path) -> bool:
    try:
        text = service.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return True  # nothing to say of a file that cannot be read: left alone
    return any(
        _ticks(ln.removeprefix("ExecStart=")) for ln in text.splitlines() if ln.startswith("ExecStart=")
    )


def migrate(
    root: Path,
    runner: Runner = run_command,
    which: Which = shutil.which,
    units: Path | None = None,
    *,
    python: str | None = None,
) -> list[str]:
    """Replace this vault's timers an older install wrote with today's (the tick every quarter
    hour), each of the same kind; returns what was replaced. The crontab's other lines, a
    person's or another vault's, are written back as they were read; a line of this vault's is
    replaced where it stands, and only once."""
    old = outdated(root, runner, which, units)
    if any(entry.startswith("crontab: ") for entry in old):
        marker = f"# tmem-maintain {vault_key(root)}"
        lines: list[str] = []
        replaced = False
        for current in _crontab(runner):
            if not current.rstrip().endswith(marker):
                lines.append(current)
            elif not replaced:  # the same program as the line it replaces starts tmem
                program = None if python else _program(current)
                lines.append(render(root, "cron", python=python, program=program).cron_line)
                replaced = True
        _write_crontab(runner, lines)
    if any(not entry.startswith("crontab: ") for entry in old):
        install(render(root, "systemd", python=python, units=units), runner)
    return old


def _program(line: str) -> list[str] | None:
    """The words that start tmem in a crontab line `render` wrote (between the log folder's
    `mkdir … &&` and `--vault`); None when the line is not of that shape."""
    command = line.split(" ", 5)[-1].rsplit(" # tmem-maintain ", 1)[0].replace("\\%", "%")
    try:
        words = shlex.split(command)
        start = words.index("&&") + 1
        return words[start : words.index("--vault", start)] or None
    except ValueError:
        return None


def started_by_old_timer(
    root: Path, stdout: int = 1, environ: dict[str, str] | None = None, units: Path | None = None
) -> bool:
    """Whether this process is a `tmem maintain` that an older install's timer started: the
    crontab line sent its output to the vault's `.tmem/maintain.log` (what stdout is here), or
    systemd runs it (INVOCATION_ID) while this vault's service still runs `maintain`."""
    with contextlib.suppress(OSError, ValueError):
        out, log = os.fstat(stdout), (root / STATE_DIR / "maintain.log").stat()
        if (out.st_dev, out.st_ino) == (log.st_dev, log.st_ino):
            return True
    if (environ if environ is not None else os.environ).get("INVOCATION_ID"):
        service = (units or unit_dir()) / f"tmem-maintain-{vault_key(root)}.service"
        return service.is_file() and not _service_ticks(service)
    return False
