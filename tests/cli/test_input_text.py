"""What a command line names as its input (`add --file`, `ingest`, `extract`, `session append`,
stdin) is read within bounds: a pipe, a device or an endless stream never hangs the command nor
fills the memory, and a transcript cut mid-character by a killed writer is still read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers import FAKE_CONFIG, ROOT, git

from tiered_memory.cli import cli, input_text
from tiered_memory.storage.vault import init_vault


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG)
    return root


def tmem(vault: Path, *args: str, stdin: int | None = None) -> subprocess.CompletedProcess[str]:
    """A real `tmem` process (a pipe or a device is read by the process itself), given 60 s:
    the old reading blocked on a FIFO for ever, and read /dev/zero until memory ran out."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "tiered_memory", "--vault", str(vault), *args],
        capture_output=True,
        text=True,
        env=env,
        stdin=stdin if stdin is not None else subprocess.DEVNULL,
        timeout=60,
    )


def refused(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tmem: ") and done.stdout == "", done.stderr
    return lines[0]


def test_a_fifo_a_device_or_a_folder_is_refused_without_waiting_or_reading(
    vault: Path, tmp_path: Path
) -> None:
    fifo = tmp_path / "transcript.jsonl"
    os.mkfifo(fifo)  # no writer: opening it to read would wait for one
    link = tmp_path / "zero.jsonl"
    link.symlink_to("/dev/zero")
    for args in (["ingest", str(fifo)], ["add", "--file", "/dev/zero"], ["extract", str(link)]):
        assert "not a regular file" in refused(tmem(vault, *args))
    assert git(vault, "status", "--porcelain") == ""


def test_an_endless_stdin_is_refused_past_the_bound(vault: Path) -> None:
    with open("/dev/zero", "rb") as zero:
        assert "larger than" in refused(tmem(vault, "add", "-", stdin=zero.fileno()))
        assert "binary" in refused(tmem(vault, "ingest", "-", stdin=zero.fileno()))  # seen at once
    # An endless transcript, read a record at a time: refused once what it keeps passes the bound.
    line = json.dumps({"role": "user", "content": "x" * 1000})
    endless = subprocess.Popen(["yes", line], stdout=subprocess.PIPE)
    try:
        assert endless.stdout is not None
        assert "larger than" in refused(tmem(vault, "ingest", "-", stdin=endless.stdout.fileno()))
    finally:
        endless.kill()
        endless.wait()


def test_a_file_past_the_bound_is_refused_in_one_line(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(input_text, "MAX_INPUT_MB", 1)
    big = tmp_path / "big.md"
    big.write_text("word " * 300_000, encoding="utf-8")
    done: Result = CliRunner().invoke(cli, ["--vault", str(vault), "add", "--file", str(big)])
    assert done.exit_code == 2 and done.stderr.strip() == f"tmem: {big} is larger than 1 MB; nothing read"


# A `tmem` process that writes its peak resident memory (VmHWM, in kB) to the file named first.
_MEASURED = """
import atexit, runpy, sys
out = sys.argv.pop(1)
def peak():
    with open("/proc/self/status") as status, open(out, "w") as kept:
        kept.write(next(line.split()[1] for line in status if line.startswith("VmHWM:")))
atexit.register(peak)
sys.argv = ["tmem", *sys.argv[1:]]
runpy.run_module("tiered_memory", run_name="__main__")
"""


def _peak_mb(
    vault: Path, *args: str, stdin: int, output: Path
) -> tuple[subprocess.CompletedProcess[str], float]:
    """A real `tmem` process and its peak resident memory (MB)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _MEASURED, str(output), "--vault", str(vault), *args],
        capture_output=True,
        text=True,
        env=env,
        stdin=stdin,
        timeout=120,
    )
    return done, int(output.read_text()) / 1024


def test_a_text_past_index_max_file_mb_is_refused_by_its_size_and_read_no_further(
    vault: Path, tmp_path: Path
) -> None:
    """A file is refused by its size before a byte of it is read, and stdin as soon as it is past
    the setting: `add` read 128 MB (held whole) before the operation refused it for the 2 MB a
    note may hold."""
    sparse = tmp_path / "huge.md"
    with sparse.open("wb") as out:
        out.truncate(100 << 20)  # zeros, read: "a binary file"; refused by its size: never read
    line = refused(tmem(vault, "add", "--file", str(sparse)))
    assert (
        line
        == f"tmem: {sparse} is larger than index.max_file_mb (2 MB), the most one note may hold; nothing read"
    )
    endless = subprocess.Popen(["yes", "word " * 200], stdout=subprocess.PIPE)
    try:
        assert endless.stdout is not None
        done, peak = _peak_mb(vault, "add", "-", stdin=endless.stdout.fileno(), output=tmp_path / "add")
    finally:
        endless.kill()
        endless.wait()
    assert "stdin is larger than index.max_file_mb (2 MB)" in refused(done)
    assert peak < 100, f"{peak:.0f} MB held to refuse an endless stdin"
    assert git(vault, "status", "--porcelain") == ""


def test_a_text_within_a_raised_index_max_file_mb_is_read(vault: Path, tmp_path: Path) -> None:
    (vault / "tmem.yaml").write_text(FAKE_CONFIG + "index:\n  max_file_mb: 4\n", encoding="utf-8")
    text = tmp_path / "long.md"
    text.write_text("Deploys freeze on Fridays. " * 120_000, encoding="utf-8")  # 3.2 MB
    done = tmem(vault, "add", "--file", str(text), "--no-dedup", "--json")
    assert done.returncode == 0, done.stderr
    text.write_text("Deploys freeze on Fridays. " * 180_000, encoding="utf-8")  # 4.9 MB
    line = refused(tmem(vault, "add", "--file", str(text)))
    assert line.endswith("is larger than index.max_file_mb (4 MB), the most one note may hold; nothing read")


def test_a_markdown_transcript_read_whole_follows_a_raised_index_max_file_mb(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Markdown is read whole, up to MAX_WHOLE_MB; a person who raised index.max_file_mb past it
    (so that a long chat log's session fits in a note) gets it read up to the setting, and the
    refusal names the setting."""
    monkeypatch.setattr(input_text, "MAX_WHOLE_MB", 1)  # 32 MB, made small: the default setting is 2 MB
    (vault / "tmem.yaml").write_text(FAKE_CONFIG + "index:\n  max_file_mb: 0.5\n", encoding="utf-8")
    chat = tmp_path / "chat.md"
    chat.write_text(
        "**User:** where do deploys run?\n\n**Assistant:** " + "on the staging cluster. " * 70_000
    )
    runner = CliRunner()
    done: Result = runner.invoke(cli, ["--vault", str(vault), "ingest", str(chat)])
    assert done.exit_code == 2
    assert done.stderr.strip() == (
        "tmem: chat.md is larger than 1 MB, the most a transcript read whole (Markdown, or a JSON array or "
        "object rather than JSON Lines) may hold; nothing read (raise index.max_file_mb, up to 128 MB, to read it)"
    )
    (vault / "tmem.yaml").write_text(FAKE_CONFIG + "index:\n  max_file_mb: 3\n", encoding="utf-8")
    done = runner.invoke(cli, ["--vault", str(vault), "ingest", str(chat), "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["messages"] == 2


def test_a_transcript_cut_inside_a_character_is_ingested_without_its_last_line(
    vault: Path, tmp_path: Path
) -> None:
    """An agent killed while writing its transcript can leave half of a multi-byte character at
    the end: the complete lines are stored, as when the cut falls between two ASCII bytes."""
    lines = [
        {"role": "user", "content": "我们决定用 PostgreSQL 做账单服务。"},
        {"role": "assistant", "content": "好的，记下了。"},
        {"role": "user", "content": "还有缓存用 Redis。"},
    ]
    data = "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in lines).encode("utf-8")
    cut = data.rindex(b"Redis") - 2  # inside the three bytes of "用"
    transcript = tmp_path / "chat.jsonl"
    transcript.write_bytes(data[:cut])
    done = tmem(vault, "ingest", str(transcript), "--json")
    assert done.returncode == 0, done.stderr
    assert "incomplete last line" in done.stderr
    assert json.loads(done.stdout)["messages"] == 2


def test_a_pipe_a_person_names_is_read_to_its_end() -> None:
    # `tmem add --file <(pbpaste)`: the shell hands over /dev/fd/N, a pipe with its writer.
    read, write = os.pipe()
    os.write(write, b"Deploys freeze on Fridays.\n")
    os.close(write)
    try:
        assert input_text.read_input(f"/dev/fd/{read}")[0] == "Deploys freeze on Fridays.\n"
    finally:
        os.close(read)


def _session_lines(count: int, tool_kb: int) -> bytes:
    """A Claude Code session of `count` exchanges, each with `tool_kb` KB of tool output (twice:
    Claude Code keeps its own copy of each result beside the message)."""
    out = []
    for n in range(count):
        base = {"sessionId": "s-long", "cwd": "/work/app", "timestamp": f"2026-03-01T10:{n % 60:02d}:00Z"}
        output = f"output {n}: " + "z" * (tool_kb * 1024)
        out.append(
            {**base, "type": "user", "message": {"role": "user", "content": f"Question {n} about otters?"}}
        )
        out.append(
            {
                **base,
                "type": "user",
                "toolUseResult": {"stdout": output},
                "message": {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t", "content": output}],
                },
            }
        )
        out.append({**base, "type": "assistant", "message": {"role": "assistant", "content": f"Answer {n}."}})
    return "".join(json.dumps(r) + "\n" for r in out).encode("utf-8")


def test_a_transcript_past_the_bound_is_read_a_record_at_a_time(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long agent session's log passes MAX_INPUT_MB with tool output the session never keeps:
    it is ingested whole, not refused for its size."""
    monkeypatch.setattr(input_text, "MAX_INPUT_MB", 1)
    transcript = tmp_path / "session.jsonl"
    transcript.write_bytes(_session_lines(40, 30))  # ~2.4 MB
    assert transcript.stat().st_size > 2 * 1024 * 1024
    done: Result = CliRunner().invoke(cli, ["--vault", str(vault), "ingest", str(transcript), "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["messages"] == 120
    assert git(vault, "status", "--porcelain") == ""


def test_a_record_past_its_bound_is_left_out_and_said(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(input_text, "MAX_RECORD_MB", 1)
    lines = _session_lines(3, 2).splitlines(keepends=True)
    giant = json.dumps({"role": "user", "content": "g" * (2 * 1024 * 1024)}) + "\n"
    transcript = tmp_path / "session.jsonl"
    transcript.write_bytes(b"".join(lines[:4]) + giant.encode() + b"".join(lines[4:]))
    done: Result = CliRunner().invoke(cli, ["--vault", str(vault), "ingest", str(transcript), "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["messages"] == 9
    assert "session.jsonl: left out line 5 (2 MB, over the 1 MB a record may hold)" in done.stderr


_OK_LINE = json.dumps({"role": "user", "content": "The harbour survey starts on Monday."}) + "\n"


@pytest.mark.parametrize(
    ("record", "said"),
    [
        ("[" * (input_text.MAX_RECORD_MB * 1024 * 1024 - 16), "line 2 is not valid JSON (nested too deeply)"),
        (
            '{"a": ' + "[" * (input_text.MAX_RECORD_MB * 1024 * 1024 - 16),
            "line 2 is not valid JSON (nested too deeply)",
        ),
        ("{}" * 10**6, "line 2 is not valid JSON (Extra data)"),
        ('{"role": "user", "content": "\udcff"}', "is not UTF-8 text"),
    ],
)
def test_a_hostile_record_in_a_transcript_is_one_line(
    vault: Path, tmp_path: Path, record: str, said: str
) -> None:
    """A record of 16 MB of `[`, a line of a million tiny objects, bytes that are no UTF-8: each
    one line and exit 2 from a real process, within seconds, with nothing stored."""
    transcript = tmp_path / "session.jsonl"
    transcript.write_bytes((_OK_LINE + record + "\n" + _OK_LINE).encode("utf-8", "surrogateescape"))
    assert said in refused(tmem(vault, "ingest", str(transcript)))
    assert git(vault, "status", "--porcelain") == ""


def test_a_line_of_a_million_tiny_blocks_is_read_in_bounded_time(vault: Path, tmp_path: Path) -> None:
    blocks = json.dumps({"role": "user", "content": [{}] * 10**6}, separators=(",", ":"))
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(_OK_LINE + blocks + "\n" + _OK_LINE, encoding="utf-8")
    done = tmem(vault, "ingest", str(transcript), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["messages"] == 2


# ~40 MB of transcript whose every record is kept: one-word messages, or records of many tiny
# blocks, in each shape a transcript may take. A session note may hold 2 MB of them.
_TINY = {
    "claude-code": json.dumps(
        {
            "type": "user",
            "sessionId": "s-tiny",
            "cwd": "/work/app",
            "message": {"role": "user", "content": "ok"},
            "timestamp": "2026-03-01T10:00:00Z",
        }
    )
    + "\n",
    "claude-code blocks": json.dumps(
        {
            "type": "assistant",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}] * 300},
        }
    )
    + "\n",
    "codex": json.dumps(
        {
            "timestamp": "2026-03-01T10:00:00Z",
            "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "ok"}]},
        }
    )
    + "\n",
    "openai (kimi)": json.dumps({"role": "user", "content": "ok"}) + "\n",
    "markdown": "**User:** ok\n**Assistant:** ok\n",
}
_BOUNDED_MB = 40


def _tiny_transcript(kind: str, mb: int = _BOUNDED_MB) -> str:
    most = mb * 1024 * 1024
    if kind in ("markdown", "json array", "json object", "markdown, one message"):
        most = min(most, (input_text.MAX_WHOLE_MB - 1) * 1024 * 1024)  # read whole: held to less
    if kind == "json array":
        item = json.dumps({"role": "user", "content": "ok"})
        return "[" + ",".join([item] * (most // (len(item) + 1))) + "]"
    if kind == "json object":  # pretty-printed {"messages": [...]}: a short line each
        item = '  {"role": "user", "content": "ok"}'
        return '{"messages": [\n' + ",\n".join([item] * (most // (len(item) + 2))) + "\n]}\n"
    if kind == "markdown, one message":
        return "**User:** hello\n" + "x\n" * (most // 2)
    return _TINY[kind] * (most // len(_TINY[kind]))


# A process with 300 MB of address space: tmem itself needs far less than half of that; the
# records of a 40 MB transcript, all parsed into objects before the session's size was checked,
# took well over it.
_LIMITED = """
import resource, runpy, sys
resource.setrlimit(resource.RLIMIT_AS, (300 << 20, 300 << 20))
sys.argv = ["tmem", *sys.argv[1:]]
runpy.run_module("tiered_memory", run_name="__main__")
"""


@pytest.mark.slow
@pytest.mark.parametrize("kind", [*_TINY, "json array", "json object", "markdown, one message"])
def test_a_transcript_of_millions_of_tiny_kept_records_is_refused_in_bounded_memory(
    vault: Path, tmp_path: Path, kind: str
) -> None:
    """Every record is kept, each is tiny, and together they are twenty times what a session note
    may hold: the session is refused as its messages pass that, before the rest are read, by a
    process whose memory is bounded; one line, exit 2, nothing written."""
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(_tiny_transcript(kind), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", _LIMITED, "--vault", str(vault), "ingest", str(transcript)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert "session.jsonl: the messages is larger than index.max_file_mb (2.0 MB)" in refused(done)
    assert git(vault, "status", "--porcelain") == ""


# Started from a fresh small interpreter, so the peak counts tmem's own pages alone.
_PEAK = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
sys.stderr.write(done.stderr.decode())
"""
_PEAK_MB = 127


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "kind"),
    [
        ("ingest", "claude-code"),
        ("extract", "claude-code"),
        ("extract", "codex"),
        ("ingest", "markdown"),
        ("ingest", "json array"),
    ],
)
def test_a_transcript_of_127_mb_is_refused_at_a_small_peak_of_memory(
    vault: Path, tmp_path: Path, command: str, kind: str
) -> None:
    """127 MB of one-word messages: JSON Lines are parsed as they are read, so the session is
    refused as its messages pass what a note may hold, the rest unread, and a transcript read
    whole is refused for its size before it is read. Held whole, either took 280 to 450 MB (and
    `extract` took them all, in 75 s)."""
    transcript = tmp_path / "session.jsonl"
    text = (
        _TINY[kind] * (_PEAK_MB * 1024 * 1024 // len(_TINY[kind]))
        if kind in _TINY
        else "[" + ",".join([_TINY["openai (kimi)"].strip()] * (_PEAK_MB * 1024 * 1024 // 34)) + "]"
    )
    transcript.write_text(text, encoding="utf-8")
    del text
    done = subprocess.run(
        [sys.executable, "-c", _PEAK, sys.executable, "-m", "tiered_memory", "--vault", str(vault), command,
         str(transcript)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.DEVNULL,
        timeout=120,
    )  # fmt: skip
    status, peak = (int(word) for word in done.stdout.split())
    assert status == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "larger than" in done.stderr
    assert peak < 150, f"peak RSS {peak} MB"
    assert git(vault, "status", "--porcelain") == ""


_DEEP = '{"a": ' * 10_000 + "1" + "}" * 10_000
# Odd input in each shape, and the line that refuses it.
_ODD: dict[str, tuple[bytes, str]] = {
    "utf-16 JSON Lines": ((_OK_LINE * 3).encode("utf-16"), "is UTF-16 text, not UTF-8 (iconv -f UTF-16"),
    "utf-16 Markdown": ("**User:** hello\n".encode("utf-16"), "is UTF-16 text, not UTF-8"),
    "utf-32 JSON Lines": ((_OK_LINE * 3).encode("utf-32"), "is UTF-32 text, not UTF-8"),
    "latin-1 Markdown": ("**User:** café\n".encode("latin-1"), "is not UTF-8 text"),
    "NUL late in Markdown": (("**User:** hello\n" * 1000 + "x\x00y\n").encode(), "is binary data"),
    "NUL late in JSON Lines": (
        (_OK_LINE * 300).encode() + b'{"role": "user", "content": "a\x00b"}\n',
        "binary",
    ),
    "nested 10,000 deep, JSON Lines": (
        (_OK_LINE + '{"role": "user", "content": ' + _DEEP + "}\n").encode(),
        "line 2 is not valid JSON (nested too deeply)",
    ),
    "nested 10,000 deep, JSON array": (
        ('[{"role": "user", "content": ' + _DEEP + "}]").encode(),
        "is not valid JSON (nested too deeply)",
    ),
    "a 50 MB line of JSON": (
        ('{"role": "user", "content": "' + "x" * (50 << 20) + '"}\n').encode(),
        "no chat messages found",
    ),
    "a 50 MB line of Markdown": (("# " + "a " * (25 << 20) + "\n").encode(), "larger than 32 MB"),
}


@pytest.mark.slow
@pytest.mark.parametrize("command", ["ingest", "extract"])
@pytest.mark.parametrize("kind", list(_ODD))
def test_odd_input_in_every_shape_is_one_line(vault: Path, tmp_path: Path, kind: str, command: str) -> None:
    """UTF-16 was called "a binary file", and `tmem extract` read a Markdown log with a NUL in it
    as text (exit 0); each odd input is one line naming what is wrong, exit 2, nothing stored."""
    data, said = _ODD[kind]
    transcript = tmp_path / "session.jsonl"
    transcript.write_bytes(data)
    assert said in refused(tmem(vault, command, str(transcript)))
    assert git(vault, "status", "--porcelain") == ""


@pytest.mark.parametrize("command", ["ingest", "extract"])
def test_a_link_that_leads_nowhere_is_one_line(vault: Path, tmp_path: Path, command: str) -> None:
    dangling, looping = tmp_path / "gone.jsonl", tmp_path / "loop.jsonl"
    dangling.symlink_to(tmp_path / "nowhere" / "t.jsonl")
    looping.symlink_to(looping)
    assert "no such file" in refused(tmem(vault, command, str(dangling)))
    assert "cannot read it (Too many levels of symbolic links)" in refused(tmem(vault, command, str(looping)))


_HOSTILE_TEXT = {
    # A heading-like line with a long run of spaces: the speaker patterns took seconds for 1,000
    # spaces and minutes for 4,000 (a time growing with the cube of the run).
    "markdown heading": "### ai" + " " * 20_000 + "x\n**User:** The survey starts on Monday.\n",
    "markdown title": "# a" + " " * (4 << 20) + "b\n**User:** The survey starts on Monday.\n",
    # Tags the harness wraps around text, never closed: each was looked for to the end of the
    # message, from each opening (seconds for 64 KB, hours for megabytes).
    "unclosed tags": json.dumps({"role": "user", "content": "<bash-stdout>" * 100_000 + "The survey starts."})
    + "\n",
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(_HOSTILE_TEXT))
def test_text_made_to_be_slow_to_read_is_read_in_seconds(vault: Path, tmp_path: Path, kind: str) -> None:
    transcript = tmp_path / "session.txt"
    transcript.write_text(_HOSTILE_TEXT[kind], encoding="utf-8")
    started = time.monotonic()
    done = tmem(vault, "ingest", str(transcript), "--json")
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 30
