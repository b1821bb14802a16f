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
def wheel_names(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
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
    (wheel,) = out.glob("tiered_memory-*.whl")
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
