"""The tests show the code's layout: a package's tests sit in the folder of the same name
(tests/index/ for tiered_memory/index/), scenarios that cross every layer in tests/e2e/, tests of
the scripts in tests/scripts/, and only tests of the whole repository at the top."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
PACKAGE = TESTS.parent / "tiered_memory"
CROSSING = {"e2e", "scripts"}  # folders that mirror no package, on purpose
WHOLE_REPOSITORY = {
    "test_architecture.py",
    "test_docs.py",
    "test_feature_table.py",
    "test_layout.py",
    "test_packaging.py",
    "test_public_names.py",
    "test_quick_loop.py",
    # The settings modules at the package's top (config.py, storage/locate's user settings).
    "test_config.py",
    "test_trust.py",
    "test_user_config.py",
}


def test_every_test_folder_mirrors_a_package() -> None:
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and any(p.glob("test_*.py"))}
    assert folders - packages - CROSSING == set()


def test_only_whole_repository_tests_sit_at_the_top() -> None:
    assert {p.name for p in TESTS.glob("test_*.py")} - WHOLE_REPOSITORY == set()


def test_test_file_names_are_unique() -> None:
    """Test folders hold no __init__.py, so pytest imports each test file by its bare name."""
    names = [p.name for p in TESTS.rglob("test_*.py")]
    assert len(names) == len(set(names))
