"""`tmem install AGENT` and `tmem hook …`: an agent connected in one command, from a temp HOME.

The end-to-end test is the user's path: a vault, `tmem install claude-code`, then the very
commands written into Claude Code's settings run with a realistic hook payload: the session
starts with the context block on stdout and ends with its transcript stored in the vault.
"""

from __future__ import annotations

import fcntl
import json
import os
import plistlib
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fake_system import FakeSystem, systemd_split, which
from helpers import FAKE_CONFIG, ok, write

from tiered_memory.cli import cli
from tiered_memory.daemon import schedule
from tiered_memory.model import agent_setup, opencode_plugin
from tiered_memory.model.agent_setup import Launch
from tiered_memory.storage.vault import init_vault

DATA = Path(__file__).parents[1] / "data"
LAUNCH = Launch(("/opt/tmem/bin/tmem",), "/home/ana/memory")


def tmem(*args: str, input: str | None = None) -> object:
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def _hook_argv(command: str) -> list[str]:
    """The arguments after the program in a hook command the installer wrote."""
    argv = shlex.split(command)
    start = argv.index("-m") + 2 if "-m" in argv else 1
    return argv[start:]


@pytest.fixture
def project_vault(tmp_path: Path) -> tuple[Path, Path]:
    vault = tmp_path / "memory-vault"
    init_vault(vault, config_text=FAKE_CONFIG)
    write(
        vault,
        "memory/mid-term/projects/tile-server/status.md",
        "---\ntitle: Tile server\nstatus: active\n---\n# Tile server\nServes map tiles.\n",
    )
    repo = tmp_path / "work" / "tile-server"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    ok(
        tmem(
            "--vault",
            str(vault),
            "add",
            "--project",
            "tile-server",
            "The tile server caches tiles in Redis for 10 minutes.",
        )
    )
    return vault, repo


def test_claude_code_end_to_end(project_vault: tuple[Path, Path], tmp_path: Path) -> None:
    vault, repo = project_vault
    home = Path.home()
    settings = home / ".claude" / "settings.json"
    write(
        home,
        ".claude/settings.json",
        json.dumps(
            {
                "model": "opus",
                "hooks": {
                    "PreToolUse": [
                        {"matcher": "Bash", "hooks": [{"type": "command", "command": "audit.sh"}]}
                    ],
                    "SessionStart": [{"hooks": [{"type": "command", "command": "echo hello"}]}],
                },
            }
        ),
    )
    write(
        home,
        ".claude.json",
        json.dumps(
            {"numStartups": 12, "mcpServers": {"github": {"type": "stdio", "command": "gh-mcp", "args": []}}}
        ),
    )
    ok(tmem("config", "set", "default-vault", str(vault)))

    done = ok(tmem("install", "claude-code"))
    assert "added the SessionStart hook" in done.stdout and "mcpServers.tmem" in done.stdout
    assert list(home.glob(".claude.json.tmem-backup-*")) and list(
        (home / ".claude").glob("settings.json.tmem-backup-*")
    )
    data = json.loads(settings.read_text())
    assert data["model"] == "opus" and data["hooks"]["PreToolUse"][0]["hooks"][0]["command"] == "audit.sh"
    starts = [h["command"] for g in data["hooks"]["SessionStart"] for h in g["hooks"]]
    assert starts[0] == "echo hello" and len(starts) == 2
    for event in ("SessionStart", "UserPromptSubmit", "PreCompact", "SessionEnd"):
        command = data["hooks"][event][-1]["hooks"][0]["command"]
        assert Path(shlex.split(command)[0]).is_absolute() and agent_setup.is_ours(command)
    claude = json.loads((home / ".claude.json").read_text())
    assert claude["numStartups"] == 12 and "github" in claude["mcpServers"]
    server = claude["mcpServers"]["tmem"]
    assert Path(server["command"]).is_absolute() and server["args"][-1] == "mcp"
    # A second install changes nothing.
    assert "already up to date" in ok(tmem("install", "claude-code")).stdout

    # SessionStart, as Claude Code runs it: the JSON on stdin, from the project's subfolder.
    payload = {
        "session_id": "5f0c2a7e",
        "transcript_path": str(DATA / "claude-code-session.jsonl"),
        "cwd": str(repo / "src"),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    start_cmd = data["hooks"]["SessionStart"][-1]["hooks"][0]["command"]
    started = ok(tmem(*_hook_argv(start_cmd), input=json.dumps(payload)))
    assert started.stdout.startswith("<project-memory") and "for project tile-server" in started.stdout
    assert "Redis" in started.stdout

    # UserPromptSubmit adds the memories that bear on the prompt, and nothing to one they do not.
    prompt_cmd = data["hooks"]["UserPromptSubmit"][-1]["hooks"][0]["command"]
    assert "matcher" not in data["hooks"]["UserPromptSubmit"][-1]
    asked = {
        **payload,
        "hook_event_name": "UserPromptSubmit",
        "prompt": "How long are tiles cached in Redis?",
    }
    recalled = ok(tmem(*_hook_argv(prompt_cmd), input=json.dumps(asked)))
    assert recalled.stdout.startswith("<tmem-recall>") and "Redis for 10 minutes" in recalled.stdout
    thanks = ok(tmem(*_hook_argv(prompt_cmd), input=json.dumps({**asked, "prompt": "thanks!"})))
    assert thanks.stdout == ""

    # SessionEnd stores the transcript, in the project.
    end_cmd = data["hooks"]["SessionEnd"][-1]["hooks"][0]["command"]
    ended = ok(
        tmem(
            *_hook_argv(end_cmd),
            input=json.dumps({**payload, "hook_event_name": "SessionEnd", "reason": "exit"}),
        )
    )
    assert ended.stdout == "" and "ingested" in ended.stderr
    stored = list((vault / "memory" / "archive" / "sessions").rglob("*.md"))
    assert len(stored) == 1
    text = stored[0].read_text()
    assert "project: tile-server" in text and "port 8082" in text and "system-reminder" not in text

    # Uninstall removes tmem's entries and nothing else.
    ok(tmem("install", "claude-code", "--uninstall"))
    data = json.loads(settings.read_text())
    assert [h["command"] for g in data["hooks"]["SessionStart"] for h in g["hooks"]] == ["echo hello"]
    assert "PreCompact" not in data["hooks"] and data["hooks"]["PreToolUse"]
    assert set(json.loads((home / ".claude.json").read_text())["mcpServers"]) == {"github"}


def test_the_installed_command_runs_as_a_process(project_vault: tuple[Path, Path]) -> None:
    """The exact command line Claude Code would run, in a real process."""
    vault, repo = project_vault
    ok(tmem("install", "claude-code", "--vault", str(vault)))
    data = json.loads((Path.home() / ".claude" / "settings.json").read_text())
    command = data["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    assert f"--vault {vault}" in command
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    payload = json.dumps({"cwd": str(repo), "hook_event_name": "SessionStart", "source": "startup"})
    done = subprocess.run(
        command, shell=True, input=payload, capture_output=True, text=True, env=env, cwd=repo, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("<project-memory") and "Redis" in done.stdout


def test_hooks_fail_open(tmp_path: Path) -> None:
    os.chdir(tmp_path)
    done = tmem("hook", "session-start", input='{"cwd": "/nowhere"}')
    assert done.exit_code == 0 and done.stdout == "" and "no tmem vault" in done.stderr
    vault = tmp_path / "v"
    init_vault(vault, config_text=FAKE_CONFIG)
    for stdin in ("not json", "", '{"transcript_path": "/no/such/file.jsonl"}'):
        done = tmem("--vault", str(vault), "hook", "session-end", input=stdin)
        assert done.exit_code == 0 and done.stdout == "" and "nothing stored" in done.stderr


def test_install_refuses_a_settings_file_it_cannot_read(project_vault: tuple[Path, Path]) -> None:
    vault, _repo = project_vault
    write(Path.home(), ".claude/settings.json", "{ not json")
    done = tmem("install", "claude-code", "--vault", str(vault))
    assert done.exit_code == 2 and "not valid JSON" in done.stderr
    assert (Path.home() / ".claude" / "settings.json").read_text() == "{ not json"


def test_print_writes_nothing(project_vault: tuple[Path, Path]) -> None:
    vault, _repo = project_vault
    done = ok(tmem("install", "cursor", "--vault", str(vault), "--print"))
    assert "+++ " in done.stdout and "sessionStart" in done.stdout
    assert not (Path.home() / ".cursor").exists()


def test_install_without_a_default_vault_makes_the_found_one_the_default(
    project_vault: tuple[Path, Path],
) -> None:
    vault, _repo = project_vault
    os.chdir(vault)
    done = ok(tmem("install", "opencode"))
    assert f"default-vault = {vault}" in done.stdout
    config = json.loads((Path.home() / ".config" / "opencode" / "opencode.json").read_text())
    assert config["mcp"]["tmem"]["type"] == "local" and config["mcp"]["tmem"]["command"][-1] == "mcp"
    # opencode's hooks are JavaScript plugins: tmem writes its own, which runs this very tmem (on
    # the default vault, as the MCP entry does), and nothing into the vault.
    plugin = Path.home() / ".config" / "opencode" / "plugins" / "tmem.js"
    text = plugin.read_text(encoding="utf-8")
    assert text.startswith("// tmem for opencode") and "session.idle" in text
    argv = json.loads(text.split("const TMEM = ", 1)[1].splitlines()[0])
    assert argv == config["mcp"]["tmem"]["command"][:-1] and Path(argv[0]).is_absolute()
    assert not (vault / "agents").exists()
    again = ok(tmem("install", "opencode"))
    assert plugin.read_text(encoding="utf-8") == text and "backup" not in again.stdout.lower()


def test_opencode_plugin_of_the_persons_own_is_never_touched(project_vault: tuple[Path, Path]) -> None:
    vault, _repo = project_vault
    own = write(Path.home(), ".config/opencode/plugins/tmem.js", "export const Mine = async () => ({})\n")
    done = ok(tmem("install", "opencode", "--vault", str(vault)))
    assert "not tmem's: left as it is" in done.stdout
    ok(tmem("install", "opencode", "--uninstall"))
    assert own.read_text() == "export const Mine = async () => ({})\n"
    assert not list(own.parent.glob("tmem.js.tmem-backup-*"))


def test_opencode_uninstall_removes_the_plugin_and_keeps_a_backup(project_vault: tuple[Path, Path]) -> None:
    vault, _repo = project_vault
    ok(tmem("install", "opencode", "--vault", str(vault)))
    plugin = Path.home() / ".config" / "opencode" / "plugins" / "tmem.js"
    written = plugin.read_text(encoding="utf-8")
    assert json.loads(written.split("const TMEM = ", 1)[1].splitlines()[0])[-2:] == ["--vault", str(vault)]
    ok(tmem("install", "opencode", "--uninstall"))
    assert not plugin.exists()
    [backup] = plugin.parent.glob("tmem.js.tmem-backup-*")
    assert backup.read_text(encoding="utf-8") == written
    config = json.loads((plugin.parent.parent / "opencode.json").read_text())
    assert "tmem" not in config.get("mcp", {})


@pytest.mark.parametrize("kind", ["not UTF-8", "pipe"])
def test_a_plugin_file_that_is_no_text_is_refused_in_one_line(
    project_vault: tuple[Path, Path], kind: str
) -> None:
    """What is at the plugin's path is the person's unless it carries tmem's mark: a file of other
    bytes, or a pipe (which would hold the install for ever), is named and left as it is."""
    vault, _repo = project_vault
    plugin = Path.home() / ".config" / "opencode" / "plugins" / "tmem.js"
    plugin.parent.mkdir(parents=True)
    if kind == "pipe":
        os.mkfifo(plugin)
    else:
        plugin.write_bytes(b"// \xff\xfe a person's plugin\n")
    done = subprocess.run(
        [sys.executable, "-m", "tiered_memory", "install", "opencode", "--vault", str(vault)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    why = "is not a regular file" if kind == "pipe" else "is not UTF-8 text"
    assert done.returncode == 2 and done.stderr == f"tmem: {plugin} {why}; " + (
        "tmem changes only a file there\n" if kind == "pipe" else "fix or move it, then run this again\n"
    )
    assert sorted(p.name for p in plugin.parent.iterdir()) == ["tmem.js"]
    assert not (plugin.parent.parent / "opencode.json").exists()  # nothing written before it


def test_a_vault_path_that_is_not_utf8_is_refused_before_any_file_is_written(tmp_path: Path) -> None:
    vault = Path(os.fsdecode(bytes(tmp_path) + b"/vault-\xff"))
    init_vault(vault, config_text=FAKE_CONFIG)
    done = tmem("install", "opencode", "--vault", str(vault))
    assert done.exit_code == 2 and done.stderr.startswith("tmem: ") and len(done.stderr.splitlines()) == 1
    assert "is not UTF-8" in done.stderr and "Traceback" not in done.stderr
    assert not (Path.home() / ".config" / "opencode").exists()


@pytest.mark.skipif(shutil.which("node") is None, reason="node parses the plugin as opencode's Bun does")
def test_the_plugin_names_a_hostile_vault_path_as_one_string(tmp_path: Path) -> None:
    """Quotes, backticks, `${...}`, backslashes, a newline and U+2028 in the vault's path reach the
    plugin's command as that one argument, never as JavaScript."""
    odd = str(tmp_path / 'v"`${process.exit(7)}`\\\n\u2028</script>')
    text = opencode_plugin.plugin_text(["/opt/tmem/bin/tmem", "--vault", odd])
    module = tmp_path / "tmem.mjs"
    module.write_text(text + "\nconsole.log(JSON.stringify(TMEM))\n", encoding="utf-8")
    done = subprocess.run(["node", str(module)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["/opt/tmem/bin/tmem", "--vault", odd]


# ---- --daemon: started at login, through a recording systemctl / launchctl ------------------------

ODD_VAULT = "my vault's 100% $5 & <co>"  # (GitPython expands $NAME in a path)


@pytest.fixture
def odd_vault(tmp_path: Path) -> Path:
    vault = tmp_path / ODD_VAULT
    init_vault(vault, config_text=FAKE_CONFIG)
    return vault


def _machine(monkeypatch: pytest.MonkeyPatch, platform: str, *programs: str) -> FakeSystem:
    system = FakeSystem()
    monkeypatch.setattr(schedule, "system", lambda: (system, which(*programs), platform))
    return system


def test_install_daemon_writes_and_enables_a_systemd_user_unit(
    odd_vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    system = _machine(monkeypatch, "linux", "systemctl")
    done = ok(tmem("install", "claude-code", "--vault", str(odd_vault), "--daemon"))
    name = f"tmem-daemon-{schedule.vault_key(odd_vault)}.service"
    unit = Path.home() / ".config" / "systemd" / "user" / name
    exec_start = next(ln for ln in unit.read_text().splitlines() if ln.startswith("ExecStart="))
    assert systemd_split(exec_start.removeprefix("ExecStart="))[-4:] == [
        "--vault",
        str(odd_vault),
        "daemon",
        "run",
    ]
    assert system.calls == [
        ["systemctl", "--user", "show-environment"],
        ["systemctl", "--user", "daemon-reload"],
        ["systemctl", "--user", "enable", "--now", name],
    ]
    assert f"daemon: wrote {unit}" in done.stdout and "starts at login" in done.stdout
    assert (Path.home() / ".claude" / "settings.json").is_file()  # the agent is connected too

    # Uninstalling the agent leaves the daemon other agents may use; --daemon removes it too.
    ok(tmem("install", "claude-code", "--vault", str(odd_vault), "--uninstall"))
    assert unit.is_file()
    system.calls.clear()
    done = ok(tmem("install", "claude-code", "--vault", str(odd_vault), "--uninstall", "--daemon"))
    assert not unit.exists() and f"daemon: removed {unit}" in done.stdout
    assert ["systemctl", "--user", "disable", "--now", name] in system.calls


def test_install_daemon_hands_over_from_a_daemon_already_running(
    odd_vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    system = _machine(monkeypatch, "linux", "systemctl")
    pid_file = odd_vault / ".tmem" / "daemon.pid"
    pid_file.parent.mkdir(exist_ok=True)
    pid_file.write_text("4242\n")
    with open(pid_file) as held:  # a daemon a hook started holds this lock
        fcntl.flock(held, fcntl.LOCK_EX)
        done = ok(tmem("install", "claude-code", "--vault", str(odd_vault), "--daemon"))
    stop = next(argv for argv in system.calls if argv[-2:] == ["daemon", "stop"])
    assert stop[-4:-2] == ["--vault", str(odd_vault)]
    name = f"tmem-daemon-{schedule.vault_key(odd_vault)}.service"
    assert system.calls.index(stop) < system.calls.index(["systemctl", "--user", "enable", "--now", name])
    assert "stopped the one already running (pid 4242)" in done.stdout


def test_install_daemon_print_writes_and_starts_nothing(
    odd_vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    system = _machine(monkeypatch, "linux", "systemctl")
    done = ok(tmem("install", "codex", "--vault", str(odd_vault), "--daemon", "--print", "--json"))
    data = json.loads(done.stdout)["daemon"]
    assert data["method"] == "systemd" and data["units"] == [
        f"tmem-daemon-{schedule.vault_key(odd_vault)}.service"
    ]
    (content,) = data["files"].values()
    assert "ExecStart=" in content and "100%% $$5" in content
    assert system.calls == [["systemctl", "--user", "show-environment"]]
    assert not (Path.home() / ".config" / "systemd").exists() and not (Path.home() / ".codex").exists()


def test_install_daemon_on_macos_loads_a_launch_agent(
    odd_vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    system = _machine(monkeypatch, "darwin", "launchctl")
    ok(tmem("install", "cursor", "--vault", str(odd_vault), "--daemon"))
    label = f"org.tiered-memory.daemon.{schedule.vault_key(odd_vault)}"
    plist = Path.home() / "Library" / "LaunchAgents" / f"{label}.plist"
    agent = plistlib.loads(plist.read_bytes())
    assert agent["Label"] == label and agent["RunAtLoad"] is True
    assert agent["ProgramArguments"][-4:] == ["--vault", str(odd_vault), "daemon", "run"]
    assert ["launchctl", "bootstrap", f"gui/{os.getuid()}", str(plist)] in system.calls
    ok(tmem("install", "cursor", "--vault", str(odd_vault), "--uninstall", "--daemon"))
    assert not plist.exists() and ["launchctl", "bootout", f"gui/{os.getuid()}/{label}"] in system.calls


def test_install_daemon_without_a_service_manager_says_how_to_start_it(
    odd_vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    system = _machine(monkeypatch, "linux")
    done = ok(tmem("install", "opencode", "--vault", str(odd_vault), "--daemon"))
    (line,) = [ln for ln in done.stdout.splitlines() if ln.startswith("daemon:")]
    start = shlex.split(line.split("`")[1])
    assert start[-4:] == ["--vault", str(odd_vault), "daemon", "start"] and Path(start[0]).is_absolute()
    assert system.calls == [] and not (Path.home() / ".config" / "systemd").exists()


def test_install_daemon_refuses_before_writing_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = tmp_path / "v\x01a"
    init_vault(vault, config_text=FAKE_CONFIG)
    system = _machine(monkeypatch, "darwin", "launchctl")
    done = tmem("install", "claude-code", "--vault", str(vault), "--daemon")
    assert done.exit_code == 2 and "control character" in done.stderr and len(done.stderr.splitlines()) == 1
    assert system.calls == [] and not (Path.home() / ".claude").exists()


# ---- the plans, agent by agent ------------------------------------------------------------------


def _plan(agent: str, current: dict[str, str], uninstall: bool = False) -> dict[str, str]:
    home = Path("/home/ana")
    texts = {home / rel: text for rel, text in current.items()}
    planned = agent_setup.plan(agent, home, texts, LAUNCH, uninstall=uninstall)
    return {str(Path(c.path).relative_to(home)): c.after for c in planned.changes}


def test_codex_plan_merges_toml_and_keeps_comments() -> None:
    before = '# my codex\nmodel = "gpt-5-codex"\n\n[mcp_servers.github]\ncommand = "gh-mcp"\n\n[features]\nweb_search = true\n'
    after = _plan("codex", {".codex/config.toml": before})
    toml = after[".codex/config.toml"]
    data = tomllib.loads(toml)
    assert toml.startswith("# my codex\n") and data["mcp_servers"]["github"]["command"] == "gh-mcp"
    assert data["mcp_servers"]["tmem"] == {
        "command": "/opt/tmem/bin/tmem",
        "args": ["--vault", "/home/ana/memory", "mcp"],
    }
    assert data["features"] == {"web_search": True, "codex_hooks": True}
    hooks = json.loads(after[".codex/hooks.json"])["hooks"]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "PreCompact"}
    assert "user-prompt-submit --agent codex" in hooks["UserPromptSubmit"][0]["hooks"][0]["command"]
    again = _plan("codex", {".codex/config.toml": toml, ".codex/hooks.json": after[".codex/hooks.json"]})
    assert again == {".codex/config.toml": toml, ".codex/hooks.json": after[".codex/hooks.json"]}
    removed = _plan(
        "codex", {".codex/config.toml": toml, ".codex/hooks.json": after[".codex/hooks.json"]}, uninstall=True
    )
    assert "tmem" not in tomllib.loads(removed[".codex/config.toml"])["mcp_servers"]
    assert json.loads(removed[".codex/hooks.json"]) == {}


def test_cursor_plan() -> None:
    before = json.dumps({"version": 1, "hooks": {"afterFileEdit": [{"command": "./format.sh"}]}})
    after = _plan("cursor", {".cursor/hooks.json": before})
    hooks = json.loads(after[".cursor/hooks.json"])["hooks"]
    assert hooks["afterFileEdit"] == [{"command": "./format.sh"}]
    assert "--agent cursor" in hooks["sessionStart"][0]["command"] and "sessionEnd" in hooks
    # Cursor's beforeSubmitPrompt can only let a prompt through or stop it: no context to add.
    assert "user-prompt-submit" not in json.dumps(hooks)
    assert json.loads(after[".cursor/mcp.json"])["mcpServers"]["tmem"]["command"] == "/opt/tmem/bin/tmem"
    removed = _plan("cursor", after, uninstall=True)
    assert json.loads(removed[".cursor/hooks.json"])["hooks"] == {
        "afterFileEdit": [{"command": "./format.sh"}]
    }


def test_kimi_plan_adds_hook_tables() -> None:
    before = 'default_model = "kimi-for-coding"\n\n[[hooks]]\nevent = "PreToolUse"\nmatcher = "Shell"\ncommand = "check.sh"\n'
    after = _plan("kimi", {".kimi/config.toml": before})
    data = tomllib.loads(after[".kimi/config.toml"])
    assert [h["event"] for h in data["hooks"]] == [
        "PreToolUse",
        "SessionStart",
        "UserPromptSubmit",
        "PreCompact",
        "SessionEnd",
    ]
    assert data["hooks"][2]["command"].endswith("hook user-prompt-submit --agent kimi")
    assert json.loads(after[".kimi/mcp.json"])["mcpServers"]["tmem"]["args"][-1] == "mcp"
    assert _plan("kimi", after)[".kimi/config.toml"] == after[".kimi/config.toml"]
    removed = tomllib.loads(_plan("kimi", after, uninstall=True)[".kimi/config.toml"])
    assert [h["event"] for h in removed["hooks"]] == ["PreToolUse"]


def test_the_program_is_this_installation() -> None:
    from tiered_memory.cli.install import tmem_program

    program = tmem_program()
    assert Path(program[0]).is_absolute()
    assert program[1:] in ((), ("-m", "tiered_memory")) and (
        program[1:] or Path(program[0]).parent == Path(sys.executable).parent
    )


def test_update_and_related_from_the_command_line(vault_path: Path) -> None:
    def run(*args: str) -> Any:
        return ok(tmem("--vault", str(vault_path), *args))

    first = json.loads(run("add", "--json", "--tags", "tiles", "Tiles are cached for ten minutes.").stdout)
    second = json.loads(
        run("add", "--json", "--tags", "tiles", "Map styles live in the styles repository.").stdout
    )
    done = json.loads(
        run(
            "update",
            first["note"]["id"],
            "--append",
            "Measured on the dev server.",
            "--set",
            "importance=0.9",
            "--set",
            'tags=["tiles", "cache"]',
            "--json",
        ).stdout
    )
    assert set(done["changed"]) == {"body", "fields.importance", "fields.tags"}
    text = (vault_path / first["note"]["path"]).read_text()
    assert "Measured on the dev server." in text and "importance: 0.9" in text and "cache" in text
    assert "nothing changed" in run("update", first["note"]["id"], "--set", "importance=0.9").stdout
    related = json.loads(run("related", first["note"]["id"], "--json").stdout)
    assert related["by"] == "links" and second["note"]["id"] in [n["id"] for n in related["notes"]]


def test_installs_within_one_second_never_write_over_a_backup(
    project_vault: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An install, an uninstall and an install again, all within the same second (a script): each
    keeps its own backup, and the first still holds the person's file as it was before tmem."""
    import datetime as dt

    from tiered_memory.cli import install as install_module

    class SameSecond(dt.datetime):
        @classmethod
        def now(cls, tz: dt.tzinfo | None = None) -> SameSecond:
            return cls(2026, 11, 28, 12, 0, 0)

    monkeypatch.setattr(install_module, "datetime", SameSecond)
    vault, _repo = project_vault
    home = Path.home()
    original = json.dumps({"model": "opus"})
    write(home, ".claude/settings.json", original)
    ok(tmem("config", "set", "default-vault", str(vault)))

    ok(tmem("install", "claude-code"))
    ok(tmem("install", "claude-code", "--uninstall"))
    ok(tmem("install", "claude-code"))

    backups = sorted((home / ".claude").glob("settings.json.tmem-backup-*"))
    assert [b.name for b in backups] == [
        "settings.json.tmem-backup-20261128T120000",
        "settings.json.tmem-backup-20261128T120000-1",
        "settings.json.tmem-backup-20261128T120000-2",
    ]
    assert backups[0].read_text() == original
