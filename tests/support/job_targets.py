"""Module-level functions for tests of ui.jobs.call: a worker process imports them by name."""

from __future__ import annotations

import os
import threading
import time


def whoami(device=None) -> tuple[int, int, int]:
    """(process id, nice value, thread id) of whoever runs this."""
    return os.getpid(), os.nice(0), threading.get_ident()


def my_group() -> tuple[int, str]:
    """(session id, the scheduling autogroup line, or "") of whoever runs this."""
    try:
        with open("/proc/self/autogroup") as f:
            group = f.read().strip()
    except OSError:
        group = ""
    return os.getsid(0), group


def count(n: int, on_step=None, pause_s: float = 0.0) -> int:
    """Call on_step(i, n) for i = 1..n (stopping early when it says so); steps done."""
    for i in range(1, n + 1):
        if pause_s:
            time.sleep(pause_s)
        if on_step is not None and on_step(i, n):
            return i
    return n


def boom(message: str) -> None:
    raise ValueError(message)


class UnpicklableError(Exception):
    def __init__(self, message: str, handle):
        super().__init__(message)
        self.handle = handle

    def __reduce__(self):
        raise TypeError("this exception does not pickle")


def boom_unpicklable() -> None:
    raise UnpicklableError("cannot travel", threading.Lock())


def die(code: int = 3) -> None:
    os._exit(code)
