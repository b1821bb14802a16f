"""Sizing an embedding runtime's thread pool to the cores other programs leave free."""

from __future__ import annotations

__all__ = ["MAX_THREADS", "ThreadTuner", "free_cores", "running_tasks"]

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

MAX_THREADS = 4  # small BERTs stop scaling there


def running_tasks() -> int:
    """Tasks (threads) running on the machine this instant, from /proc/loadavg; 0 where unknown."""
    with contextlib.suppress(OSError, ValueError, IndexError), open("/proc/loadavg", encoding="ascii") as f:
        return int(f.read().split()[3].split("/")[0])
    return 0


def free_cores(
    cores: int | None = None,
    loadavg: Callable[[], tuple[float, float, float]] = os.getloadavg,
    own: float = 0.0,
    running: Callable[[], int] = running_tasks,
) -> int:
    """Cores no other program is using now: the cores this process may run on minus the busier of
    the 1-minute load average and the tasks running this instant (from /proc/loadavg), each less
    this process's own part: `own` is how many cores it kept busy lately, which the load average
    counts too (left in, a build's own threads would shrink its pool to one thread on an idle
    machine), and the running tasks (`running`) less this one. At least 1."""
    if cores is None:
        try:
            cores = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cores = os.cpu_count() or 1
    busy = 0.0
    with contextlib.suppress(OSError):
        busy = max(0.0, loadavg()[0] - own)
    busy = max(busy, running() - 1)
    return max(1, min(cores, round(cores - busy)))


class ThreadTuner:
    """Sizes torch's intra-op pool to the free cores, again every `every` seconds of a long build: a
    pool larger than the free cores on a busy machine waits on its slowest thread at every step."""

    def __init__(
        self,
        torch: Any,
        every: float = 10.0,
        free: Callable[..., int] = free_cores,
        cpu_time: Callable[[], float] = time.process_time,
    ) -> None:
        self.torch = torch
        self.every = every
        self.free = free
        self.cpu_time = cpu_time
        self.fixed = bool(os.environ.get("OMP_NUM_THREADS"))  # the user chose
        self.checked = -every
        self.threads = 0
        self._since: tuple[float, float] | None = None  # (monotonic, this process's CPU seconds)
        try:
            torch.set_num_interop_threads(1)  # one pool per process: we never run independent ops in parallel
        except RuntimeError:
            pass  # can only be set once per process, before any parallel work
        self.retune()

    def retune(self) -> None:
        if self.fixed:
            return
        now = time.monotonic()
        if now - self.checked < self.every:
            return
        self.checked = now
        wanted = max(1, min(MAX_THREADS, self.free(own=self._own_cores(now))))
        if wanted != self.threads:
            self.torch.set_num_threads(wanted)
            self.threads = wanted

    @contextlib.contextmanager
    def sparing(self, cores: int) -> Iterator[None]:
        """The pool `cores` smaller for the duration (never below one thread, and never against
        the person's OMP_NUM_THREADS): for work that runs while this process does something else
        at the same time."""
        if self.fixed or cores <= 0 or self.threads <= 1:
            yield
            return
        tuned = self.threads
        self.torch.set_num_threads(max(1, tuned - cores))
        try:
            yield
        finally:
            self.torch.set_num_threads(tuned)

    def _own_cores(self, now: float) -> float:
        """How many cores this process kept busy since the last check (all its threads)."""
        cpu = self.cpu_time()
        since, self._since = self._since, (now, cpu)
        if since is None or now - since[0] < 1.0:
            return 0.0
        return max(0.0, (cpu - since[1]) / (now - since[0]))
