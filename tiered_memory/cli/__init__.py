"""The `tmem` command line (entry point `tiered_memory.cli:cli`)."""

import os

# numpy's OpenBLAS starts a thread per core when imported, ~0.15 s of CPU before a keyword search
# can answer, for matrix products tmem never makes large enough to need them. One thread, unless
# the person chose otherwise; the daemon and every command started from here inherit it.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from tiered_memory.cli.main import cli

__all__ = ["cli"]
