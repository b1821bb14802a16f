"""The `tmem` command line (entry point `tiered_memory.cli:cli`)."""

import gc
import os

# numpy's OpenBLAS starts a thread per core when imported, CPU a keyword search would spend before
# it can answer, for matrix products tmem never makes large enough to need them. One thread, unless
# the person chose otherwise; the daemon and every command started from here inherit it.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# click and the command table are a fifth of a keyword search's start-up, and everything they
# create lives until exit: collector passes over it meanwhile free nothing (backend.py pauses the
# collector the same way while the application loads).
_collecting = gc.isenabled()
gc.disable()
try:
    from tiered_memory.cli.main import cli
finally:
    if _collecting:
        gc.enable()

__all__ = ["cli"]
