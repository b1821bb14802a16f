"""Shared fixtures: every test gets its own HOME and no TMEM_VAULT, so nothing leaks between tests
or touches the developer's real vaults; vault fixtures are real git repositories in tmp_path."""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers import FAKE_CONFIG, FIXED_NOW

from tiered_memory.app.memory import Memory
from tiered_memory.cli.main import cli
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.storage.vault import Vault, init_vault


@pytest.fixture(scope="session")
def model_cache(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache folder for the packaged model's ONNX export, which is slow to make: pytest's own
    cache folder (.pytest_cache) where there is one, so the export is made once per checkout and
    model version rather than by the first model test of every run (a stale or broken file is
    rebuilt, tests/index/test_onnx_embedder.py checks it); a fresh folder for the run otherwise."""
    cache = getattr(request.config, "cache", None)
    if cache is not None:
        return Path(cache.mkdir("tmem-cache"))
    return tmp_path_factory.mktemp("tmem-cache")


@pytest.fixture(autouse=True)
def isolated_env(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, model_cache: Path
) -> None:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    # What tmem writes to the temporary folder (`tmem edit`'s copy of a note, the text it keeps
    # when a save fails) goes to this test's folder, in this process and in the processes it
    # starts, never the machine's /tmp.
    scratch = tmp_path_factory.mktemp("tmp")
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.delenv("TMEM_VAULT", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("TMEM_CONFIG_HOME", str(home / ".config" / "tmem"))
    monkeypatch.delenv("TMEM_RAISE_ERRORS", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TMEM_CACHE_DIR", str(model_cache))
    # A test's search must not leave a daemon running; tests of autostart turn it back on.
    monkeypatch.setenv("TMEM_AUTOSTART", "0")


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    """A test that leaves a thread running (a watcher, a server) fails instead of leaking it."""
    before = set(threading.enumerate())
    yield
    deadline = datetime.now().timestamp() + 5
    while True:
        leaked = [t for t in threading.enumerate() if t not in before and t.is_alive() and not t.daemon]
        if not leaked or datetime.now().timestamp() > deadline:
            break
        threading.Event().wait(0.05)
    assert not leaked, f"test leaked threads: {leaked}"


@pytest.fixture
def vault_path(tmp_path: Path) -> Path:
    """A fresh vault (real git repository) whose embedder is the fast deterministic fake."""
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG)
    return root


@pytest.fixture
def vault(vault_path: Path) -> Vault:
    return Vault(vault_path)


@pytest.fixture
def memory(vault: Vault) -> Iterator[Memory]:
    mem = Memory(vault, embedder_factory=lambda: FakeEmbedder(64), now=lambda: FIXED_NOW)
    yield mem
    mem.close()


@pytest.fixture
def run(vault_path: Path) -> Callable[..., Result]:
    """Invoke the CLI against the fixture vault, as a user would (exit code and output)."""
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
        return runner.invoke(
            cli, ["--vault", str(vault_path), *args], input=input, env=env, catch_exceptions=False
        )

    return invoke
