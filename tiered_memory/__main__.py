from tiered_memory.cli import cli

cli()
