"""Who did what: each clone's commits carry its name, `tmem log` shows it, `search --by` and MCP
`recall` with `by` find what one machine wrote; a name that arrives with a pull changes nothing.

Two clones of one vault sync through a bare repository, each a "machine" with its own user
settings folder ($TMEM_CONFIG_HOME): the laptop is named by git's config of its clone, the desktop
by `tmem config set author` in its own settings.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner, Result
from helpers import FAKE_CONFIG, as_json, git, ok, one_error_line
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import Implementation
from mcp_client import ROOT, call, serve

from tiered_memory.cli.main import cli
from tiered_memory.model import authors
from tiered_memory.storage.vault import init_vault

ME = f"tmem@{authors.host_label(socket.gethostname())}"  # a clone nothing names


class Machine:
    """One clone and the user settings folder of the machine it is on."""

    def __init__(self, root: Path, settings: Path) -> None:
        self.root = root
        self.env = {"TMEM_CONFIG_HOME": str(settings), "TMEM_AUTOSTART": "0"}

    def tmem(self, *args: str) -> Result:
        return CliRunner().invoke(
            cli, ["--vault", str(self.root), *args], env=self.env, catch_exceptions=False
        )

    def add(self, text: str, *args: str) -> dict[str, Any]:
        found: dict[str, Any] = as_json(self.tmem("add", "--json", *args, "--", text))["note"]
        return found

    def sync(self) -> None:
        ok(self.tmem("sync"))

    def authors(self) -> list[str]:
        """`name <email>` of each commit, newest first."""
        return git(self.root, "log", "--format=%an <%ae>").splitlines()


@pytest.fixture
def clones(tmp_path: Path) -> tuple[Machine, Machine]:
    """The laptop's vault pushed to a bare remote; the desktop a clone of it, adopted."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    laptop = Machine(tmp_path / "laptop", tmp_path / "laptop-settings")
    init_vault(laptop.root, config_text=FAKE_CONFIG)
    git(laptop.root, "config", "user.name", "laptop")
    git(laptop.root, "config", "user.email", "me@laptop.example")
    git(laptop.root, "remote", "add", "origin", str(remote))
    laptop.sync()
    desktop = Machine(tmp_path / "desktop", tmp_path / "desktop-settings")
    subprocess.run(["git", "clone", "-q", str(remote), str(desktop.root)], check=True)
    ok(desktop.tmem("init", "--adopt", str(desktop.root)))
    ok(desktop.tmem("config", "set", "author", "Desktop"))
    return laptop, desktop


def _written(laptop: Machine, desktop: Machine) -> tuple[dict[str, Any], dict[str, Any]]:
    """A note each machine wrote about the plants, both synced to both."""
    mine = laptop.add("The office plants need water on Mondays.", "--title", "Plants Monday")
    laptop.sync()
    desktop.sync()
    theirs = desktop.add("The office plants get fertiliser every spring.", "--title", "Plants spring")
    desktop.sync()
    laptop.sync()
    return mine, theirs


def _found(machine: Machine, *args: str) -> set[str]:
    hits = as_json(machine.tmem("search", "--json", "--mode", "keyword", "office plants", *args))
    return {h["path"] for h in hits["results"]}


def test_each_clones_commits_carry_its_name_and_log_shows_both(clones: tuple[Machine, Machine]) -> None:
    laptop, desktop = clones
    note = laptop.add("The release train leaves every second Thursday.", "--title", "Release train")
    laptop.sync()
    desktop.sync()
    ok(desktop.tmem("update", note["id"], "--append", "Except in August."))
    desktop.sync()
    laptop.sync()
    desktops = [a for a in laptop.authors() if a.startswith("Desktop <desktop@")]
    laptops = [a for a in laptop.authors() if a == "laptop <me@laptop.example>"]
    assert len(desktops) == 1 and len(laptops) == 1  # the desktop's update, the laptop's add
    assert set(laptop.authors()) == set(desktop.authors())  # the same history on both
    history = as_json(laptop.tmem("log", note["id"], "--json"))
    who = [(e["author"], e["email"]) for e in history["events"]]
    assert who[0][0] == "Desktop" and who[0][1].startswith("desktop@")
    assert who[-1] == ("laptop", "me@laptop.example")
    text = ok(laptop.tmem("log", note["id"])).stdout
    assert " Desktop " in text and " laptop " in text


def test_search_by_finds_only_what_one_machine_wrote(clones: tuple[Machine, Machine]) -> None:
    laptop, desktop = clones
    mine, theirs = _written(laptop, desktop)
    both = {mine["path"], theirs["path"]}
    for machine in (laptop, desktop):
        assert _found(machine) == both
        assert _found(machine, "--by", "laptop") == {mine["path"]}
        assert _found(machine, "--by", "DESK") == {theirs["path"]}  # any case, from its start
        assert _found(machine, "--by", "me@laptop") == {mine["path"]}  # the email too
        assert _found(machine, "--by", "mallory") == set()
    # A note the laptop writes later is found by its name on the next search (the log is read
    # from where the last look stopped).
    later = laptop.add("The office plants moved to the window.", "--title", "Plants window")
    assert _found(laptop, "--by", "laptop") == {mine["path"], later["path"]}
    line = one_error_line(laptop.tmem("search", "plants", "--by", "a\x1b[31mb"), 2)
    assert "--by" in line and "control character" in line


def test_a_pulled_file_whose_name_is_not_utf8_does_not_stop_search_by(
    clones: tuple[Machine, Machine],
) -> None:
    laptop, desktop = clones
    mine, _theirs = _written(laptop, desktop)
    # Another clone commits a file whose name is not UTF-8, renamed once, and pushes it.
    folder = os.fsencode(desktop.root / "memory" / "long-term")
    with open(folder + b"/caf\xe9.md", "w", encoding="utf-8") as handle:
        handle.write("The office plants like the caf\u00e9 window.\n")
    git(desktop.root, "config", "user.name", "desktop")
    git(desktop.root, "config", "user.email", "me@desktop.example")
    git(desktop.root, "add", "-A")
    git(desktop.root, "commit", "-q", "-m", "a file named in Latin-1")
    git(desktop.root, "mv", os.fsdecode(folder + b"/caf\xe9.md"), os.fsdecode(folder + b"/caf\xe9-2.md"))
    git(desktop.root, "commit", "-q", "-m", "renamed")
    desktop.sync()
    laptop.sync()
    assert _found(laptop, "--by", "laptop") == {mine["path"]}


def test_mcp_recall_by(clones: tuple[Machine, Machine]) -> None:
    laptop, desktop = clones
    mine, theirs = _written(laptop, desktop)

    async def scenario(session: Any) -> None:
        found = await call(session, "recall", query="office plants", mode="keyword", by="laptop")
        assert [r["path"] for r in found["results"]] == [mine["path"]]
        found = await call(session, "recall", query="office plants", mode="keyword", by="desktop")
        assert [r["path"] for r in found["results"]] == [theirs["path"]]

    serve(desktop.root, scenario, TMEM_CONFIG_HOME=desktop.env["TMEM_CONFIG_HOME"])


@pytest.mark.parametrize("daemon", [False, True], ids=["in-process", "daemon"])
def test_an_agents_changes_name_it(clones: tuple[Machine, Machine], daemon: bool) -> None:
    """An MCP client's changes carry its name (from its `initialize`) in an `Agent:` trailer,
    whether the daemon or the server's own process makes the commit; log and --by find it."""
    _, desktop = clones
    env = {
        **{k: os.environ[k] for k in ("GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL") if k in os.environ},
        **desktop.env,
        "PYTHONPATH": str(ROOT),
        "TMEM_AUTOSTART": "1" if daemon else "0",
    }
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "tiered_memory", "--vault", str(desktop.root), "mcp"], env=env
    )
    added: dict[str, Any] = {}

    async def main() -> None:
        with open(os.devnull, "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(
                    read, write, client_info=Implementation(name="claude-code", version="1")
                ) as session,
            ):
                await session.initialize()
                added.update(await call(session, "remember", text="The office plants like the east window."))

    try:
        anyio.run(main)
    finally:
        if daemon:
            desktop.tmem("daemon", "stop")
    message = git(desktop.root, "log", "-1", "--format=%an%n%B").strip().splitlines()
    assert message[0] == "Desktop" and message[-1] == "Agent: claude-code"
    events = as_json(desktop.tmem("log", added["id"], "--json"))["events"]
    assert [(e["author"], e["agent"]) for e in events] == [("Desktop", "claude-code")]
    assert "Desktop (claude-code)" in ok(desktop.tmem("log", added["id"])).stdout
    desktop.add("The office plants were repotted by hand.")  # the person, on the same machine
    assert _found(desktop, "--by", "Claude") == {added["path"]}
    assert added["path"] in _found(desktop, "--by", "desktop")


def test_a_session_an_agents_hook_stores_names_the_agent(run: Any, vault_path: Path, tmp_path: Path) -> None:
    source = (Path(__file__).parents[1] / "data" / "claude-code-session.jsonl").read_text(encoding="utf-8")
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(source.splitlines(keepends=True)[:6]), encoding="utf-8")
    payload = json.dumps({"transcript_path": str(transcript)})
    ok(run("hook", "session-end", "--agent", "cursor", input=payload))
    assert git(vault_path, "log", "-1", "--format=%B").strip().splitlines()[-1] == "Agent: cursor"
    transcript.write_text(source, encoding="utf-8")  # the session went on: stored again, grown
    again = ok(run("ingest", str(transcript), "--agent", "codex", "--json"))
    assert git(vault_path, "log", "-1", "--format=%B").strip().splitlines()[-1] == "Agent: codex", (
        again.stdout
    )
    line = one_error_line(run("ingest", str(transcript), "--agent", "a\nAgent: b"), 2)
    assert "--agent" in line and "control character" in line


def test_a_name_in_a_pulled_tmem_yaml_does_not_change_this_clones_author(
    clones: tuple[Machine, Machine],
) -> None:
    laptop, desktop = clones
    ok(desktop.tmem("config", "unset", "author"))  # the desktop now goes by its default
    desktop.add("Before the pull.")
    assert desktop.authors()[0] == f"{ME} <{ME}>"
    config = laptop.root / "tmem.yaml"
    impostor = "git:\n  author_name: Mallory\n  author_email: mallory@example.org\n"
    config.write_text(config.read_text() + impostor + "sync:\n  author: laptop\n")
    git(laptop.root, "commit", "-qam", "name this clone")
    laptop.sync()
    laptop.add("Named by tmem.yaml? git's config comes first.")
    assert laptop.authors()[0] == "laptop <me@laptop.example>"
    desktop.sync()
    desktop.add("After the pull.")
    assert desktop.authors()[0] == f"{ME} <{ME}>"  # not the laptop's name
    # Approved on this machine, a name in tmem.yaml is used; a name that would forge a trailer never.
    ok(desktop.tmem("config", "approve", "sync.author"))
    desktop.add("Approved here.")
    assert desktop.authors()[0].startswith("laptop <laptop@")
    config = desktop.root / "tmem.yaml"
    config.write_text(config.read_text().replace("author: laptop", 'author: "x\\nAgent: forged"'))
    ok(desktop.tmem("config", "approve", "sync.author"))
    desktop.add("Forged?")
    assert desktop.authors()[0] == f"{ME} <{ME}>"
    assert "forged" not in git(desktop.root, "log", "-1", "--format=%B")


def test_a_bad_author_setting_is_one_line(clones: tuple[Machine, Machine]) -> None:
    _, desktop = clones
    line = one_error_line(desktop.tmem("config", "set", "author", "two\nlines"), 2)
    assert "control character" in line
    line = one_error_line(desktop.tmem("config", "set", "author", "x" * 101), 2)
    assert "longer than 100" in line


def test_parse_and_match() -> None:
    assert authors.parse("Laptop", "host") == authors.Author("Laptop", "laptop@host")
    assert authors.parse("Ada <ada@example.org>", "host") == authors.Author("Ada", "ada@example.org")
    assert authors.parse("ci@build.example", "host") == authors.Author("ci@build.example", "ci@build.example")
    for bad in ("", "a\nAgent: b", "a\u2028b", "a <b", "x" * 101, "Ada <not an email>"):
        with pytest.raises(ValueError):
            authors.parse(bad, "host")
    assert authors.matches("LAP", "laptop", "me@x") and authors.matches("me@", "laptop", "me@x")
    assert authors.matches("claude", "laptop", "me@x", "claude-code")
    assert not authors.matches("top", "laptop", "me@x") and not authors.matches(" ", "a", "b")
    assert authors.host_label("My_Box.local") == "my-box" and authors.host_label("...") == "localhost"
