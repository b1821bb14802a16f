"""A crontab, systemctl and launchctl that only record what they were asked, and the splitting
rules of cron and systemd: for the tests of the schedule and of `tmem install --daemon`."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path


class FakeSystem:
    """A crontab and a systemctl that only record what they were asked."""

    def __init__(self, crontab: str | None = None) -> None:
        self.crontab = crontab
        self.calls: list[list[str]] = []

    def __call__(self, argv: list[str], stdin: str | None) -> tuple[int, str, str]:
        self.calls.append(argv)
        if argv == ["crontab", "-l"]:
            if self.crontab is None:
                return 1, "", "no crontab for tester\n"
            return 0, self.crontab, ""
        if argv == ["crontab", "-"]:
            self.crontab = stdin or ""
            return 0, "", ""
        if argv[:2] == ["systemctl", "--user"] or argv[0] == "launchctl" or argv[-2:] == ["daemon", "stop"]:
            return 0, "", ""
        return 127, "", "unexpected command"


def which(*present: str) -> Callable[[str], str | None]:
    return lambda name: f"/usr/bin/{name}" if name in present else None


# ---- quoting ------------------------------------------------------------------------------------


def cron_to_argv(line: str) -> list[str]:
    """What cron hands /bin/sh for a line (\\% -> %), split as sh would, minus the redirections."""
    command = line.split(" ", 5)[5].rsplit(" # tmem-maintain ", 1)[0].replace("\\%", "%")
    words = shlex.split(command)
    return words[words.index("&&") + 1 : words.index(">>")]  # after the log folder's mkdir


def systemd_split(line: str) -> list[str]:
    """ExecStart= splitting as systemd does it: quotes, backslash escapes, %% and $$."""
    out: list[str] = []
    i = 0
    while i < len(line):
        if line[i] == " ":
            i += 1
            continue
        word = ""
        if line[i] == '"':
            i += 1
            while line[i] != '"':
                if line[i] == "\\":
                    i += 1
                    word += {"n": "\n", "t": "\t"}.get(line[i], line[i])
                else:
                    word += line[i]
                i += 1
            i += 1
        else:
            while i < len(line) and line[i] != " ":
                word += line[i]
                i += 1
        out.append(word.replace("%%", "%").replace("$$", "$"))
    return out


def crontab_program(folder: Path) -> Path:
    """A `crontab` program in `folder` (put it first on PATH) that keeps the table in
    `folder/crontab.txt`, for tests that run tmem in processes of its own: `-l` prints it (or says
    there is none), `-` replaces it with stdin."""
    import sys

    folder.mkdir(parents=True, exist_ok=True)
    program = folder / "crontab"
    program.write_text(
        f"#!{sys.executable}\n"
        "import pathlib, sys\n"
        f"table = pathlib.Path({str(folder / 'crontab.txt')!r})\n"
        "if sys.argv[1:] == ['-l']:\n"
        "    if not table.exists():\n"
        "        sys.exit('no crontab for tester')\n"
        "    sys.stdout.write(table.read_text())\n"
        "elif sys.argv[1:] == ['-']:\n"
        "    table.write_text(sys.stdin.read())\n"
        "else:\n"
        "    sys.exit(2)\n",
        encoding="utf-8",
    )
    program.chmod(0o755)
    return program
