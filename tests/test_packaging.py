"""A plain `pip install` (a wheel, not this checkout) must carry what tmem reads at run time: the
vault template that `tmem init` copies and the scheduler templates `tmem schedule` fills in."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    build = tmp_path_factory.mktemp("build")
    # No build isolation and no dependencies: offline, and only this project's files are packed.
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "TMPDIR": str(build), "PIP_NO_INDEX": "1"},
        timeout=300,
        check=False,
    )
    if done.returncode != 0 and "No module named" in done.stderr and "setuptools" in done.stderr:
        pytest.skip("setuptools is not installed in this environment")
    assert done.returncode == 0, done.stderr[-2000:]
    (built,) = out.glob("tiered_memory_vault-*.whl")
    (out / "build.log").write_text(done.stdout + done.stderr, encoding="utf-8")
    return built


def test_the_wheel_builds_without_setuptools_warnings(wheel: Path) -> None:
    log = (wheel.parent / "build.log").read_text(encoding="utf-8")
    assert "Warning" not in log, log[-3000:]


@pytest.fixture(scope="module")
def wheel_names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def test_wheel_ships_the_whole_vault_template(wheel_names: set[str]) -> None:
    template = ROOT / "vault_template"
    expected = {
        "tiered_memory/vault_template/" + path.relative_to(template).as_posix()
        for path in template.rglob("*")
        if path.is_file()
    }
    assert "tiered_memory/vault_template/.gitignore" in expected  # dotfiles count
    assert expected <= wheel_names, sorted(expected - wheel_names)


def test_wheel_ships_scheduler_templates_but_not_benchmarks(wheel_names: set[str]) -> None:
    for path in (ROOT / "scripts" / "schedule").iterdir():
        assert f"tiered_memory/schedule_templates/{path.name}" in wheel_names
    assert not [name for name in wheel_names if "bench_" in name or name.endswith("demo.sh")]
    assert "tiered_memory/cli/__init__.py" in wheel_names and "tiered_memory/mcp/server.py" in wheel_names


def test_wheel_ships_every_module_of_the_package(wheel_names: set[str]) -> None:
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "tiered_memory").rglob("*.py")}
    assert modules - wheel_names == set()


def test_the_wheel_installs_and_runs_in_a_fresh_virtualenv(wheel: Path, tmp_path: Path) -> None:
    """The wheel alone, in a new virtualenv: `tmem init`, `add` and `search` work from there.

    The dependencies (torch and the rest, gigabytes) are not installed again: the new environment
    borrows this one's site-packages as a plain path entry, so the only tiered_memory it can import
    is the wheel's (this checkout's editable install is never activated there)."""
    env_dir = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
    python = env_dir / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    deps = next(p for p in sys.path if p.endswith("site-packages"))
    Path(purelib, "borrowed-dependencies.pth").write_text(deps + "\n")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(purelib)  # what pip does for a pure-Python wheel, minus the scripts
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1", "HF_HUB_OFFLINE": "1"}

    def tmem(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(python), "-m", "tiered_memory", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=300,
        )

    where = subprocess.run(
        [str(python), "-c", "import tiered_memory; print(tiered_memory.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    ).stdout
    assert where.startswith(purelib), where
    vault = tmp_path / "vault"
    assert tmem("init", str(vault)).returncode == 0
    added = tmem("--vault", str(vault), "add", "Use CGCS2000 for control points")
    assert added.returncode == 0, added.stderr
    found = tmem("--vault", str(vault), "search", "--mode", "keyword", "--json", "control points")
    assert found.returncode == 0, found.stderr
    assert "Use CGCS2000 for control points" in found.stdout
