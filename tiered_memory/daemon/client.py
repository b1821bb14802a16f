"""Talking to a running daemon over its Unix socket (`.tmem/daemon.sock`), one JSON line each way.

This module is on `tmem search`'s fast path, so it imports only the standard library and the
error classes: when the daemon answers, the CLI prints what it got without ever loading
pydantic, Whoosh, hnswlib or the embedding model. Nothing here can hang on a dead daemon: a
stale socket refuses the connection at once, and every read has a timeout.
"""

from __future__ import annotations

__all__ = [
    "AUTOSTART_ENV",
    "CALL_TIMEOUT",
    "CONNECT_TIMEOUT",
    "DaemonUnavailable",
    "HEARTBEAT_NAME",
    "HINT_NAME",
    "MAX_REQUEST",
    "PID_NAME",
    "SEARCH_TIMEOUT",
    "SOCKET_NAME",
    "STATE_DIR",
    "autostart_wanted",
    "call",
    "fallback_hint",
    "heartbeat_path",
    "lock_holder",
    "pid_alive",
    "pid_path",
    "ping",
    "read_heartbeat",
    "read_pid",
    "request",
    "socket_path",
    "spawn",
    "unix_address",
    "wait_ready",
]

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tiered_memory.errors import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_NOT_FOUND,
    BadInput,
    NoteNotFound,
    TmemError,
)
from tiered_memory.model import yaml_dialect
from tiered_memory.model.layout import CONFIG_NAME, STATE_DIR
from tiered_memory.storage import locks, safe_path

if TYPE_CHECKING:
    import socket
    import subprocess

SOCKET_NAME = "daemon.sock"
PID_NAME = "daemon.pid"
HEARTBEAT_NAME = "daemon.heartbeat"
HINT_NAME = "daemon-hint-shown"
CONNECT_TIMEOUT = 0.5
SEARCH_TIMEOUT = 30.0
# An operation may run for minutes on a large vault (maintenance, a first embedding); progress
# lines keep the connection busy meanwhile, so this bounds only a daemon that went silent.
CALL_TIMEOUT = 600.0
# The largest request line the daemon reads; a larger one (a long transcript to ingest) is not
# sent: the caller runs the operation in its own process instead.
MAX_REQUEST = 1 << 20
_MAX_SUN_PATH = 100  # sockaddr_un holds ~108 bytes; longer paths go through /proc/self/fd


class DaemonUnavailable(TmemError):
    """No daemon answers on this vault's socket (none running, a stale socket, or a timeout).
    `sent` is True when the request had already gone out: it may have run."""

    exit_code = EXIT_FAILED

    def __init__(self, message: str, *, sent: bool = False) -> None:
        super().__init__(message)
        self.sent = sent


def socket_path(root: Path) -> Path:
    return root / STATE_DIR / SOCKET_NAME


def pid_path(root: Path) -> Path:
    return root / STATE_DIR / PID_NAME


def heartbeat_path(root: Path) -> Path:
    return root / STATE_DIR / HEARTBEAT_NAME


@contextlib.contextmanager
def unix_address(path: Path) -> Iterator[str]:
    """An address for bind/connect: the path itself, or via an open folder fd when it is too long."""
    if len(os.fsencode(str(path))) < _MAX_SUN_PATH:
        yield str(path)
        return
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


def request(
    root: Path,
    payload: dict[str, Any],
    timeout: float = 5.0,
    on_event: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Send one request, return the daemon's reply. Lines the daemon sends before its reply
    (progress, warnings) go to `on_event`. Raises DaemonUnavailable when none answers (its
    `sent` says whether the request had gone out), and the reply's error (with its exit code)
    when the daemon refuses the request."""
    path = socket_path(root)
    if not os.path.exists(path):
        raise DaemonUnavailable("no tmem daemon is running for this vault")
    line = json.dumps(payload, ensure_ascii=False).encode("utf-8") + b"\n"
    if len(line) > MAX_REQUEST:
        raise DaemonUnavailable("the request is larger than the daemon accepts")
    sock = _connected(path)
    sent = False
    try:
        sock.settimeout(timeout)
        try:
            sock.sendall(line)
            sent = True
            with sock.makefile("rb") as reader:
                while True:
                    line = reader.readline()
                    reply = _parse(line, sent)
                    if "ok" in reply or on_event is None:
                        break
                    on_event(reply)
        except OSError as exc:
            raise DaemonUnavailable(f"the daemon did not answer ({_why(exc)})", sent=sent) from None
    finally:
        sock.close()
    if not reply.get("ok"):
        raise _error_from(reply)
    return reply


def _connected(path: Path) -> socket.socket:
    """A socket connected to the daemon within CONNECT_TIMEOUT. A connection to a Unix socket
    whose queue of connections not yet accepted is full fails at once (EAGAIN) rather than
    waiting: when many agents' hooks and servers connect in the same instant, that is a daemon
    about to accept them, tried again until the timeout, not a daemon that is not there."""
    import socket  # only with a daemon's socket on disk: a search without one never loads it

    deadline = time.monotonic() + CONNECT_TIMEOUT
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(CONNECT_TIMEOUT)
        try:
            with unix_address(path) as address:
                sock.connect(address)
            return sock
        except BlockingIOError as exc:
            sock.close()
            if time.monotonic() >= deadline:
                raise DaemonUnavailable(f"the daemon socket does not answer ({_why(exc)})") from None
            time.sleep(0.01)
        except OSError as exc:
            sock.close()
            raise DaemonUnavailable(f"the daemon socket does not answer ({_why(exc)})") from None


def _parse(line: bytes, sent: bool) -> dict[str, Any]:
    if not line:
        raise DaemonUnavailable("the daemon closed the connection without answering", sent=sent)
    try:
        reply = json.loads(line)
    except ValueError:
        raise DaemonUnavailable("the daemon sent something that is not JSON", sent=sent) from None
    if not isinstance(reply, dict):
        raise DaemonUnavailable("the daemon sent something that is not a JSON object", sent=sent)
    return reply


def call(
    root: Path,
    name: str,
    fields: dict[str, Any],
    *,
    timeout: float = CALL_TIMEOUT,
    on_event: Callable[[dict[str, Any]], None] | None = None,
    agent: str | None = None,
) -> dict[str, Any]:
    """Run an operation in the daemon: its result as a dict (the operation's result record).
    `agent`: the agent it runs for, whose name its commits carry."""
    payload: dict[str, Any] = {"op": "call", "name": name, "request": fields}
    if agent:
        payload["agent"] = agent
    reply = request(root, payload, timeout=timeout, on_event=on_event)
    result = reply.get("result")
    if not isinstance(result, dict):
        raise DaemonUnavailable("the daemon's reply has no result", sent=True)
    return result


def _why(exc: OSError) -> str:
    if isinstance(exc, TimeoutError):  # socket.timeout is TimeoutError
        return "timed out"
    return os.strerror(exc.errno) if exc.errno else exc.__class__.__name__


def _error_from(reply: dict[str, Any]) -> TmemError:
    message = str(reply.get("error") or "the daemon refused the request")
    code = reply.get("code")
    if code == EXIT_NOT_FOUND:
        return NoteNotFound(message)
    if code in (None, EXIT_BAD_INPUT):
        return BadInput(message)
    error = TmemError(message)  # the daemon failed, not the input: its code, as it gave it
    if isinstance(code, int):
        error.exit_code = code
    return error


def ping(root: Path, timeout: float = 1.0) -> dict[str, Any] | None:
    """The daemon's ping reply (pid, ready), or None when no daemon answers, or one answers its
    ping with an error (broken: it serves nothing, and its callers go on without it)."""
    try:
        return request(root, {"op": "ping"}, timeout=timeout)
    except TmemError:  # no daemon, or one that answers with an error of any kind
        return None


def fallback_hint(root: Path) -> str | None:
    """The one-line hint shown the first time a search runs without a daemon, then never again."""
    marker = root / STATE_DIR / HINT_NAME
    if marker.exists():
        return None
    with contextlib.suppress(OSError):
        marker.parent.mkdir(exist_ok=True)
        marker.touch()
    if os.path.exists(socket_path(root)):
        return "the tmem daemon does not answer, so this search ran in-process (`tmem doctor` looks into it)"
    return "searched in-process; `tmem daemon start` keeps the indexes and model warm for faster searches"


# ---- is one running? ---------------------------------------------------------------------------


def lock_holder(root: Path) -> int | None:
    """The pid of the daemon serving this vault, or None when none runs (see locks.daemon_holder)."""
    return locks.daemon_holder(root / STATE_DIR)


def read_pid(root: Path) -> int | None:
    try:
        text = pid_path(root).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def pid_alive(pid: int) -> bool:
    """Whether a process exists and has not exited (a zombie waiting for its parent counts as gone)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[:1] != ["Z"]


def read_heartbeat(root: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(heartbeat_path(root).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# ---- starting a daemon ---------------------------------------------------------------------------

AUTOSTART_ENV = "TMEM_AUTOSTART"  # "0" keeps every command from starting a daemon


def autostart_wanted(root: Path) -> bool:
    """Whether a command may start this vault's daemon: `daemon.autostart` in tmem.yaml (default
    true) and $TMEM_AUTOSTART (0 turns it off everywhere). A config that does not read: no."""
    if os.environ.get(AUTOSTART_ENV, "").strip().lower() in ("0", "false", "no", "off"):
        return False
    # The fast path (a daemon already up) never gets here, so never loads PyYAML. Bounded as every
    # YAML from the vault is, since tmem.yaml comes through git: a link, a pipe or a file larger
    # than settings can be is not read (the command then says what is wrong with it, in one line).
    try:
        raw = safe_path.read_regular(root / CONFIG_NAME, 4 * yaml_dialect.MAX_CONFIG_CHARS)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    if raw is None or len(raw) > 4 * yaml_dialect.MAX_CONFIG_CHARS:
        return False
    try:
        data = yaml_dialect.load(raw.decode("utf-8"), max_chars=yaml_dialect.MAX_CONFIG_CHARS) or {}
    except ValueError:  # YamlError and UnicodeDecodeError are ValueErrors
        return False
    section = data.get("daemon") if isinstance(data, dict) else None
    return not (isinstance(section, dict) and section.get("autostart") is False)


def spawn(root: Path) -> subprocess.Popen[bytes]:
    """Start `tmem daemon run` for this vault in the background, in its own session (closing the
    terminal or the agent that started it does not stop it); its output goes to .tmem/daemon.out."""
    import subprocess

    state = root / STATE_DIR
    state.mkdir(exist_ok=True)
    with open(state / "daemon.out", "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "tiered_memory", "--vault", str(root), "daemon", "run", "--detached"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=root,
            start_new_session=True,
            close_fds=True,
        )


def wait_ready(
    root: Path,
    proc: subprocess.Popen[bytes] | None,
    timeout: float,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any] | None:
    """Wait until the daemon has indexed the vault, reporting its progress; its last status (None
    when it stopped: `proc.returncode` says how). Gives up waiting (not on the daemon) at `timeout`."""
    deadline = time.monotonic() + timeout
    info: dict[str, Any] | None = None
    while True:
        if proc is not None and proc.poll() is not None:
            return None
        info = ping(root, timeout=0.5) or info
        if info and info.get("ready"):
            return info
        if info and progress is not None:
            phase, done, total = info.get("progress") or (f"daemon: {info.get('phase', 'starting')}", 0, 0)
            progress(str(phase), int(done), int(total))
        elif progress is not None:
            progress("starting the daemon", 0, 0)
        if time.monotonic() > deadline:
            return info
        time.sleep(0.1)
