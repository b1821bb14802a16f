"""The `tmem` command line (entry point `tiered_memory.cli:cli`)."""

from tiered_memory.cli.main import cli

__all__ = ["cli"]
