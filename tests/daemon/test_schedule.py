"""Scheduling the daily maintenance: cron lines and systemd units, quoted so that vault paths with
spaces (and quotes, percent and dollar signs) survive, installed through a fake runner so the
tests never touch the real crontab or systemd."""

from __future__ import annotations

import json
import os
import plistlib
import shlex
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from fake_system import FakeSystem, cron_to_argv, crontab_program, systemd_split, which
from helpers import run_together

from tiered_memory.cli.main import cli
from tiered_memory.config import load_config
from tiered_memory.daemon import schedule
from tiered_memory.daemon.doctor import run_doctor
from tiered_memory.daemon.jobs import Schedule
from tiered_memory.errors import BadInput
from tiered_memory.present import schedule as show_schedule
from tiered_memory.storage.vault import init_vault

ODD = "my vault's 100% $HOME"


def test_cron_line_survives_spaces_quotes_and_percent(tmp_path: Path) -> None:
    root = tmp_path / ODD
    plan = schedule.render(root, "cron", python="/opt/py thon/bin/python")
    assert plan.cron_line.startswith("*/15 * * * * ")
    assert plan.cron_line.endswith(f"# tmem-maintain {schedule.vault_key(root)}")
    assert cron_to_argv(plan.cron_line) == [
        "/opt/py thon/bin/python", "-m", "tiered_memory", "--vault", str(root), "schedule", "tick",
    ]  # fmt: skip
    assert " % " not in plan.cron_line.replace("\\%", "")


def test_cron_command_runs_through_a_real_shell(tmp_path: Path) -> None:
    root = tmp_path / ODD
    root.mkdir()  # a fresh clone: no .tmem/ for the log until the line makes it
    recorder = tmp_path / "rec order.py"
    recorder.write_text(
        "import json, sys\nopen(sys.argv[-1] + '.args', 'w').write(json.dumps(sys.argv[1:]))\n",
        encoding="utf-8",
    )
    plan = schedule.render(root, "cron", python=sys.executable)
    command = plan.cron_line.split(" ", 5)[5].replace("\\%", "%")
    # Run the recorder instead of tmem: same quoting, and the last argument names the output file.
    command = command.replace(
        shlex.quote(sys.executable), f"{shlex.quote(sys.executable)} {shlex.quote(str(recorder))}", 1
    )
    command = command.replace(" schedule tick ", f" {shlex.quote(str(tmp_path / 'out'))} ", 1)
    subprocess.run(["/bin/sh", "-c", command], check=True, timeout=60)
    args = json.loads((tmp_path / "out.args").read_text())
    assert args == ["-m", "tiered_memory", "--vault", str(root), str(tmp_path / "out")]
    assert (root / ".tmem" / "maintain.log").is_file()


def test_systemd_units_survive_spaces_quotes_percent_and_dollar(tmp_path: Path) -> None:
    root = tmp_path / ODD
    units = tmp_path / "units"
    plan = schedule.render(root, "systemd", python="/opt/py thon/python", units=units)
    key = schedule.vault_key(root)
    service = plan.files[str(units / f"tmem-maintain-{key}.service")]
    timer = plan.files[str(units / f"tmem-maintain-{key}.timer")]
    exec_start = next(ln for ln in service.splitlines() if ln.startswith("ExecStart="))
    assert systemd_split(exec_start.removeprefix("ExecStart=")) == [
        "/opt/py thon/python", "-m", "tiered_memory", "--vault", str(root), "schedule", "tick",
    ]  # fmt: skip
    assert "OnCalendar=*-*-* *:00/15:00" in timer and f"Unit=tmem-maintain-{key}.service" in timer
    assert "100%% $HOME" in service  # the description too: % is a systemd specifier
    assert plan.units == [f"tmem-maintain-{key}.timer"]


def test_the_daemon_service(tmp_path: Path) -> None:
    root = tmp_path / "v a"
    plan = schedule.render(root, "systemd", daemon=True, python="/py", units=tmp_path)
    (content,) = plan.files.values()
    exec_start = next(ln for ln in content.splitlines() if ln.startswith("ExecStart="))
    assert systemd_split(exec_start[10:]) == [
        "/py",
        "-m",
        "tiered_memory",
        "--vault",
        str(root),
        "daemon",
        "run",
    ]
    assert "Restart=on-failure" in content
    with pytest.raises(BadInput, match="systemd"):
        schedule.render(root, "cron", daemon=True)


def test_the_launchd_agent_survives_spaces_quotes_ampersands_and_angles(tmp_path: Path) -> None:
    root = tmp_path / f"{ODD} & <co> ]]>"
    agents = tmp_path / "LaunchAgents"
    plan = schedule.render_daemon(root, "launchd", python="/opt/py thon/python", folder=agents)
    label = f"org.tiered-memory.daemon.{schedule.vault_key(root)}"
    ((path, content),) = plan.files.items()
    assert path == str(agents / f"{label}.plist") and plan.units == [label]
    agent = plistlib.loads(content.encode("utf-8"))  # what launchd reads: no shell, one string each
    assert agent["Label"] == label
    assert agent["ProgramArguments"] == [
        "/opt/py thon/python", "-m", "tiered_memory", "--vault", str(root), "daemon", "run",
    ]  # fmt: skip
    assert agent["RunAtLoad"] is True and agent["KeepAlive"] == {"SuccessfulExit": False}
    assert (
        schedule.render(root, "launchd", daemon=True, python="/opt/py thon/python", units=agents).files
        == plan.files
    )


def test_launchd_refuses_what_a_plist_cannot_carry(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="control character"):
        schedule.render_daemon(tmp_path / "v\x01a", "launchd", python="/py", folder=tmp_path)
    with pytest.raises(BadInput, match="daemon only"):
        schedule.render(tmp_path, "launchd")


def test_detect_how_the_daemon_starts_at_login() -> None:
    assert schedule.detect_daemon(FakeSystem(), which("launchctl"), "darwin") == "launchd"
    assert schedule.detect_daemon(FakeSystem(), which("systemctl"), "linux") == "systemd"
    no_bus = schedule.detect_daemon(lambda argv, stdin: (1, "", "no bus"), which("systemctl"), "linux")
    assert no_bus is None
    assert schedule.detect_daemon(FakeSystem(), which("crontab"), "linux") is None
    assert schedule.detect_daemon(FakeSystem(), which(), "darwin") is None


# ---- install / remove / show with a fake system ----------------------------------------------


def test_cron_install_replaces_only_this_vaults_line(tmp_path: Path) -> None:
    root = tmp_path / "v a"
    system = FakeSystem("MAILTO=me\n0 1 * * * backup.sh\n")
    schedule.install(schedule.render(root, "cron", python="/py"), system)
    schedule.install(schedule.render(root, "cron", python="/py3"), system)
    lines = (system.crontab or "").splitlines()
    assert lines[:2] == ["MAILTO=me", "0 1 * * * backup.sh"]
    assert len(lines) == 3 and cron_to_argv(lines[2])[0] == "/py3"
    found = schedule.installed(root, system, which("crontab"), units=tmp_path / "none")
    assert found == {"cron": [lines[2]], "systemd": [], "launchd": []}
    removed = schedule.remove(root, system, which("crontab"), units=tmp_path / "none")
    assert removed == [f"crontab: {lines[2]}"]
    assert system.crontab == "MAILTO=me\n0 1 * * * backup.sh\n"


def test_cron_install_without_a_crontab_yet(tmp_path: Path) -> None:
    system = FakeSystem(None)
    schedule.install(schedule.render(tmp_path, "cron", python="/py"), system)
    assert (system.crontab or "").count("\n") == 1


def test_systemd_install_and_remove(tmp_path: Path) -> None:
    root, units = tmp_path / "v a", tmp_path / "units"
    system = FakeSystem()
    plan = schedule.install(schedule.render(root, "systemd", python="/py", units=units), system)
    timer = plan.units[0]
    assert system.calls == [
        ["systemctl", "--user", "daemon-reload"],
        ["systemctl", "--user", "enable", "--now", timer],
    ]
    assert all(Path(p).is_file() for p in plan.files)
    found = schedule.installed(root, system, which(), units=units)
    assert sorted(Path(p).name for p in found["systemd"]) == sorted(Path(p).name for p in plan.files)
    system.calls.clear()
    removed = schedule.remove(root, system, which(), units=units)
    assert sorted(removed) == sorted(plan.files)
    assert ["systemctl", "--user", "disable", "--now", timer] in system.calls
    assert not any(units.iterdir())


def test_launchd_install_and_remove(tmp_path: Path) -> None:
    root, agents = tmp_path / "v a", tmp_path / "LaunchAgents"
    system = FakeSystem()
    plan = schedule.install(schedule.render_daemon(root, "launchd", python="/py", folder=agents), system)
    ((path, content),) = plan.files.items()
    label = plan.units[0]
    domain = f"gui/{os.getuid()}"
    assert Path(path).read_text(encoding="utf-8") == content
    assert system.calls == [
        ["launchctl", "bootout", f"{domain}/{label}"],  # an older copy of this agent, if loaded
        ["launchctl", "bootstrap", domain, path],
    ]
    found = schedule.installed(root, system, which(), units=tmp_path / "none", agents=agents)
    assert found == {"cron": [], "systemd": [], "launchd": [path]}
    system.calls.clear()
    assert schedule.remove(root, system, which(), units=tmp_path / "none", agents=agents) == [path]
    assert system.calls == [["launchctl", "bootout", f"{domain}/{label}"]]
    assert not Path(path).exists()


def test_removing_only_the_daemon_keeps_the_maintenance(tmp_path: Path) -> None:
    root, units = tmp_path / "v a", tmp_path / "units"
    system = FakeSystem()
    timer = schedule.install(schedule.render(root, "systemd", python="/py", units=units), system)
    service = schedule.install(schedule.render_daemon(root, "systemd", python="/py", folder=units), system)
    system.calls.clear()
    removed = schedule.remove(root, system, which(), units=units, agents=tmp_path / "none", daemon_only=True)
    assert removed == list(service.files)
    assert ["systemctl", "--user", "disable", "--now", service.units[0]] in system.calls
    assert all(Path(p).is_file() for p in timer.files)


def test_detect(tmp_path: Path) -> None:
    assert schedule.detect(FakeSystem(), which("systemctl", "crontab")) == "systemd"
    assert (
        schedule.detect(lambda argv, stdin: (1, "", "no user bus"), which("systemctl", "crontab")) == "cron"
    )
    with pytest.raises(BadInput, match="neither"):
        schedule.detect(FakeSystem(), which())


def test_cli_print_works_where_no_scheduler_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without systemd or crontab, `schedule install` says to use --print and install by hand, so
    --print itself prints the crontab line instead of refusing the same way."""
    root = tmp_path / "vault"
    init_vault(root, config_text="embeddings:\n  provider: fake\n")
    monkeypatch.setenv("PATH", str(tmp_path / "no-programs-here"))
    runner = CliRunner()
    refused = runner.invoke(cli, ["--vault", str(root), "schedule", "install"])
    assert refused.exit_code == 2 and "--print" in refused.output
    printed = runner.invoke(cli, ["--vault", str(root), "schedule", "install", "--print"])
    assert printed.exit_code == 0, printed.output
    assert cron_to_argv(printed.stdout.strip())[-4:] == ["--vault", str(root.resolve()), "schedule", "tick"]


def test_templates_ship_in_scripts() -> None:
    names = ("tmem-maintain.cron", "tmem-maintain.service", "tmem-maintain.timer", "tmem-daemon.service")
    for name in (*names, "tmem-daemon.plist"):
        assert (schedule.SCRIPTS / name).is_file()


# ---- CLI: --print only prints ------------------------------------------------------------------


def test_cli_print_with_a_vault_path_with_spaces(tmp_path: Path) -> None:
    root = tmp_path / "my vault"
    init_vault(root, config_text="embeddings:\n  provider: fake\nlifecycle:\n  maintenance_time: '06:15'\n")
    runner = CliRunner()
    result = runner.invoke(cli, ["--vault", str(root), "schedule", "install", "--method", "cron", "--print"])
    assert result.exit_code == 0, result.output
    line = result.stdout.strip()
    assert line.startswith("*/15 * * * * ")  # the time is read at each tick, not written here
    assert cron_to_argv(line)[-4:] == ["--vault", str(root.resolve()), "schedule", "tick"]
    data = json.loads(
        runner.invoke(
            cli,
            [
                "--vault",
                str(root),
                "schedule",
                "install",
                "--method",
                "systemd",
                "--daemon",
                "--print",
                "--json",
            ],
        ).stdout
    )
    assert data["installed"] is False and data["method"] == "systemd"
    (content,) = data["files"].values()
    assert f'--vault "{root.resolve()}" daemon run' in content
    home_units = Path.home() / ".config/systemd/user"
    assert not home_units.exists()  # --print wrote nothing
    printed = runner.invoke(
        cli, ["--vault", str(root), "schedule", "install", "--method", "launchd", "--daemon", "--print"]
    )
    assert printed.exit_code == 0, printed.output
    plist = printed.stdout.split("\n", 1)[1]  # after the "# path" line
    assert plistlib.loads(plist.encode())["ProgramArguments"][-4:] == [
        "--vault",
        str(root.resolve()),
        "daemon",
        "run",
    ]
    assert not (Path.home() / "Library").exists()


# ---- the tick: the time is read from tmem.yaml each time --------------------------------------


def _tick(root: Path, now: str) -> bool:
    """What the installed timer runs (its argv, with the hidden clock of tests), in a process of its
    own; whether it ran the maintenance."""
    argv = [*schedule.tmem_argv(root, "schedule", "tick", python=sys.executable), "--now", now, "--json"]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=120, env={**os.environ, "TMEM_AUTOSTART": "0"}
    )
    assert done.returncode == 0, done.stderr
    return bool(json.loads(done.stdout)["ran"])


def _maintenance_at(hh_mm: str) -> str:
    return f"embeddings:\n  provider: fake\nlifecycle:\n  maintenance_time: '{hh_mm}'\n"


@pytest.mark.slow
def test_a_maintenance_time_changed_in_tmem_yaml_is_followed_without_installing_again(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    init_vault(root, config_text=_maintenance_at("03:30"))
    plan = schedule.render(root, "systemd", python=sys.executable, units=tmp_path / "units")
    assert not _tick(root, "2026-11-22T10:00:00+00:00")  # installed today: from tomorrow at 03:30
    assert not _tick(root, "2026-11-23T03:15:00+00:00")
    assert _tick(root, "2026-11-23T03:30:00+00:00")
    assert not _tick(root, "2026-11-23T03:45:00+00:00")  # once a day
    (root / "tmem.yaml").write_text(_maintenance_at("14:05"), encoding="utf-8")  # the person's edit
    assert not _tick(root, "2026-11-24T03:30:00+00:00")
    assert _tick(root, "2026-11-24T14:15:00+00:00")  # the first tick after the new time
    assert not _tick(root, "2026-11-24T14:30:00+00:00")
    # Moved earlier, to a time already past today, before today's run: the next tick runs it.
    assert not _tick(root, "2026-11-25T08:00:00+00:00")
    (root / "tmem.yaml").write_text(_maintenance_at("07:00"), encoding="utf-8")
    assert _tick(root, "2026-11-25T08:15:00+00:00")
    # Nothing outside the vault followed the file: the timer is what it was at the install.
    assert (
        schedule.render(root, "systemd", python=sys.executable, units=tmp_path / "units").files == plan.files
    )


def test_a_day_missed_runs_at_the_next_tick_once(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    assert not schedule.maintenance_due(root, "03:30", datetime.fromisoformat("2026-11-22T02:00:00+00:00"))
    assert schedule.maintenance_due(root, "03:30", datetime.fromisoformat("2026-11-22T03:31:00+00:00"))
    # The computer was off for two days: one run at the first tick, not one per day missed.
    assert schedule.maintenance_due(root, "03:30", datetime.fromisoformat("2026-11-25T08:00:00+00:00"))
    assert not schedule.maintenance_due(root, "03:30", datetime.fromisoformat("2026-11-25T08:15:00+00:00"))
    # A record the tick cannot read is a tick never run: it notes the day, it does not run.
    (root / ".tmem" / schedule.RAN_NAME).write_text("{not json", encoding="utf-8")
    assert not schedule.maintenance_due(root, "03:30", datetime.fromisoformat("2026-11-26T08:00:00+00:00"))
    assert schedule.maintenance_due(root, "03:30", datetime.fromisoformat("2026-11-27T03:30:00+00:00"))


# ---- one record of the day's maintenance, shared with the daemon ------------------------------

# One starter of the daily maintenance in a process of its own: `tick` as the installed timer runs
# it, `daemon` as the daemon's schedule runs its due jobs. Each that runs the maintenance appends
# its name to <vault>/ran.
_STARTER = """
import contextlib, os, sys, time
from datetime import datetime
from pathlib import Path

go, root, kind, me, now = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
now = datetime.fromisoformat(now)
from tiered_memory.config import load_config
from tiered_memory.daemon import jobs, schedule

cfg = load_config(root)


def ran(_host=None):
    fd = os.open(root / "ran", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, f"{kind} {me}\\n".encode())
    os.close(fd)


class Host:
    schedule = jobs.Schedule(root / ".tmem" / f"daemon-{me}.schedule.json", cfg)
    jobs = {"maintenance": ran}
    lock = contextlib.nullcontext()

    def local_now(self):
        return now

    def set_phase(self, phase):
        pass

    def record_error(self, what):
        raise SystemExit(what)


while not go.exists():
    time.sleep(0.001)
if kind == "tick":
    if schedule.maintenance_due(root, cfg.lifecycle.maintenance_time, now):
        ran()
else:
    jobs.run_due_jobs(Host())
"""


def test_the_daemon_and_the_timer_started_together_run_the_days_maintenance_once(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    init_vault(root, config_text=_maintenance_at("03:30"))
    yesterday = {"maintenance": "2026-11-22T03:30:00+00:00"}
    (root / ".tmem").mkdir(exist_ok=True)
    (root / ".tmem" / schedule.RAN_NAME).write_text(json.dumps(yesterday), encoding="utf-8")
    starters = [("tick", str(n)) for n in range(3)] + [("daemon", str(n)) for n in range(3)]
    for kind, me in starters:  # each daemon ran it yesterday too, by its own record
        if kind == "daemon":
            (root / ".tmem" / f"daemon-{me}.schedule.json").write_text(
                json.dumps(yesterday), encoding="utf-8"
            )
    now = "2026-11-23T03:31:00+00:00"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    run_together(_STARTER, [[str(root), kind, me, now] for kind, me in starters], env, tmp_path / "go")
    assert len((root / "ran").read_text(encoding="utf-8").splitlines()) == 1


def test_a_day_the_daemon_maintained_is_not_maintained_again_by_the_tick(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    init_vault(root, config_text=_maintenance_at("03:30"))
    cfg = load_config(root)
    monday, tuesday = (
        datetime.fromisoformat("2026-11-23T02:00:00+00:00"),
        datetime.fromisoformat("2026-11-24T03:40:00+00:00"),
    )
    daemon = Schedule(root / ".tmem" / "daemon.schedule.json", cfg)
    daemon.start(monday)
    assert not schedule.maintenance_due(root, "03:30", monday)
    at = monday.replace(hour=3, minute=31)
    assert "maintenance" in daemon.due(at) and daemon.claim("maintenance", at)
    assert not schedule.maintenance_due(root, "03:30", at.replace(minute=45))  # the daemon ran it
    # The next day the tick comes first: the daemon, looking a minute later, leaves it.
    assert schedule.maintenance_due(root, "03:30", tuesday)
    assert "maintenance" not in daemon.due(tuesday.replace(minute=41))
    assert not daemon.claim("maintenance", tuesday.replace(minute=41))


def test_an_older_daemons_own_record_still_counts(tmp_path: Path) -> None:
    """A daemon that kept the day in its own file before the shared record existed: its last run
    stands for the missing record, so the day after an upgrade is maintained as usual."""
    root = tmp_path / "vault"
    init_vault(root, config_text=_maintenance_at("03:30"))
    own = root / ".tmem" / "daemon.schedule.json"
    own.parent.mkdir(exist_ok=True)
    own.write_text(json.dumps({"maintenance": "2026-11-22T03:30:00+00:00"}), encoding="utf-8")
    daemon = Schedule(own, load_config(root))
    now = datetime.fromisoformat("2026-11-23T09:00:00+00:00")
    daemon.start(now)
    assert "maintenance" in daemon.due(now) and daemon.claim("maintenance", now)
    assert not schedule.maintenance_due(root, "03:30", now.replace(hour=10))


# ---- timers an older install wrote -------------------------------------------------------------


def _old_cron_line(root: Path, hh_mm: str) -> str:
    """The line `tmem schedule install` wrote before the tick: `tmem maintain` at a fixed time."""
    hour, minute = (int(part) for part in hh_mm.split(":"))
    log_dir = schedule.cron_command([str(root / ".tmem")])
    log = schedule.cron_command([str(root / ".tmem" / "maintain.log")])
    command = schedule.cron_command(schedule.tmem_argv(root, "maintain", python=sys.executable))
    return f"{minute} {hour} * * * mkdir -p {log_dir} && {command} >> {log} 2>&1 # tmem-maintain {schedule.vault_key(root)}"


def _old_units(root: Path, units: Path, hh_mm: str) -> None:
    key = schedule.vault_key(root)
    units.mkdir(parents=True, exist_ok=True)
    argv = schedule.systemd_command(schedule.tmem_argv(root, "maintain", python="/py"))
    (units / f"tmem-maintain-{key}.service").write_text(
        f"[Service]\nType=oneshot\nExecStart={argv}\n", encoding="utf-8"
    )
    (units / f"tmem-maintain-{key}.timer").write_text(
        f"[Timer]\nOnCalendar=*-*-* {hh_mm}:00\nUnit=tmem-maintain-{key}.service\n", encoding="utf-8"
    )


def test_an_older_installs_crontab_line_is_replaced_where_it_stands(tmp_path: Path) -> None:
    root = tmp_path / ODD
    other = tmp_path / "another vault"
    theirs = ["MAILTO=me", "0 1 * * * backup.sh # tmem-maintain 1234abcd", _old_cron_line(other, "05:00")]
    system = FakeSystem("\n".join([theirs[0], _old_cron_line(root, "03:30"), *theirs[1:]]) + "\n")
    crontab = which("crontab")
    assert schedule.outdated(root, system, crontab, units=tmp_path / "none") == [
        f"crontab: {_old_cron_line(root, '03:30')}"
    ]
    assert schedule.migrate(root, system, crontab, units=tmp_path / "none", python="/py")
    lines = (system.crontab or "").splitlines()
    assert [lines[0], *lines[2:]] == theirs  # another vault's old line is that vault's to replace
    assert lines[1] == schedule.render(root, "cron", python="/py").cron_line  # as asked
    assert schedule.outdated(root, system, crontab, units=tmp_path / "none") == []
    assert schedule.migrate(root, system, crontab, units=tmp_path / "none") == []


def test_an_older_installs_systemd_timer_is_named_and_replaced(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    units = tmp_path / "units"
    _old_units(root, units, "03:30")
    service = units / f"tmem-maintain-{schedule.vault_key(root)}.service"
    system = FakeSystem()
    under_systemd = {"INVOCATION_ID": "0123"}
    with open(os.devnull, "w") as devnull:
        assert schedule.started_by_old_timer(root, devnull.fileno(), under_systemd, units)
        assert not schedule.started_by_old_timer(root, devnull.fileno(), {}, units)
        assert schedule.outdated(root, system, which("systemctl"), units) == [str(service)]
        schedule.migrate(root, system, which("systemctl"), units, python="/py")
        assert not schedule.started_by_old_timer(root, devnull.fileno(), under_systemd, units)
    assert schedule.outdated(root, system, which("systemctl"), units) == []
    plan = schedule.render(root, "systemd", python="/py", units=units)
    assert {path: Path(path).read_text(encoding="utf-8") for path in plan.files} == plan.files
    assert ["systemctl", "--user", "daemon-reload"] in system.calls


@pytest.mark.slow
def test_an_older_installs_crontab_line_is_told_and_its_own_run_replaces_it(tmp_path: Path) -> None:
    """The line an older install left runs `tmem maintain` at a fixed time: `schedule show` and
    `doctor` say so in one line with the command to run; the line's own next run replaces it with
    the tick (the person's lines untouched) and counts as the day's tick."""
    root = tmp_path / "vault"
    init_vault(root, config_text=_maintenance_at("00:00"))
    bin_dir = tmp_path / "bin"
    crontab_program(bin_dir)
    old = _old_cron_line(root, "00:00")
    (bin_dir / "crontab.txt").write_text(f"MAILTO=me\n{old}\n0 1 * * * backup.sh\n", encoding="utf-8")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "TMEM_AUTOSTART": "0"}

    def tmem(*args: str) -> subprocess.CompletedProcess[str]:
        argv = schedule.tmem_argv(root, *args, python=sys.executable)
        return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)

    shown = tmem("schedule", "show")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[-1] == show_schedule.OUTDATED
    assert "`tmem schedule install`" in show_schedule.OUTDATED
    assert json.loads(tmem("schedule", "show", "--json").stdout)["outdated"] == [f"crontab: {old}"]
    doctor = json.loads(tmem("doctor", "--json").stdout)
    (finding,) = [f for f in doctor["findings"] if f["check"] == "schedule"]
    assert (
        not finding["ok"] and "runs `tmem maintain` at the time it was installed with" in finding["message"]
    )
    assert finding["fix"] == "replace it, as `tmem schedule install` does"

    command = old.split(" ", 5)[5].replace("\\%", "%")  # what cron hands /bin/sh
    subprocess.run(["/bin/sh", "-c", command], check=True, timeout=300, env=env)
    lines = (bin_dir / "crontab.txt").read_text(encoding="utf-8").splitlines()
    tick = schedule.render(root, "cron", python=sys.executable).cron_line
    assert lines == ["MAILTO=me", tick, "0 1 * * * backup.sh"]
    log = root / ".tmem" / "maintain.log"
    said = log.read_text(encoding="utf-8").splitlines()
    assert said[0].startswith("replaced this vault's older maintenance timer (crontab: ")
    assert said[1:] == ["nothing to do"]  # and the day's maintenance ran
    # Run again the same day (a cron that had read the table before): the day is taken.
    subprocess.run(["/bin/sh", "-c", command], check=True, timeout=300, env=env)
    assert log.read_text(encoding="utf-8").splitlines() == said
    assert not schedule.maintenance_due(root, "00:00", datetime.now().astimezone())
    assert json.loads(tmem("schedule", "show", "--json").stdout)["outdated"] == []


def test_doctor_fix_replaces_an_older_installs_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "vault"
    init_vault(root, config_text=_maintenance_at("03:30"))
    bin_dir = tmp_path / "bin"
    crontab_program(bin_dir)
    (bin_dir / "crontab.txt").write_text(
        f"{_old_cron_line(root, '03:30')}\n0 1 * * * backup.sh\n", encoding="utf-8"
    )
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    report = run_doctor(root, fix=True)
    assert [line for line in report.fixed if "older maintenance timer" in line]
    assert not [f for f in report.findings if f.check == "schedule"]
    tick = schedule.render(root, "cron", python=sys.executable).cron_line
    assert (bin_dir / "crontab.txt").read_text(encoding="utf-8") == f"{tick}\n0 1 * * * backup.sh\n"
