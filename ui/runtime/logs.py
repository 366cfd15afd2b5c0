"""Log lines that say a thing each time it matters, without flooding the log.

A missing Streamlit piece used to be logged once per process: the first time, say, a
session that had closed mid-run looked like a missing piece, and a real one later went
unsaid (issue 49). `say(logger, topic, message)` logs each topic at most once every
EVERY_S seconds, with the number of times it happened in between, so a problem that
keeps happening keeps showing, and one that happened once shows once.
"""

from __future__ import annotations

import logging
import threading
import time

EVERY_S = 60.0
_LOCK = threading.Lock()
_LAST: dict[str, tuple[float, int]] = {}  # topic: (when last logged, times since)


def say(logger: logging.Logger, topic: str, message: str, *args: object,
        level: int = logging.WARNING) -> bool:  # fmt: skip
    """Log `message` (%-style `args`) under `topic` unless that topic was logged within
    EVERY_S seconds (then count it). Returns whether it was logged."""
    now = time.monotonic()
    with _LOCK:
        last, since = _LAST.get(topic, (-EVERY_S, 0))
        if now - last < EVERY_S:
            _LAST[topic] = (last, since + 1)
            return False
        _LAST[topic] = (now, 0)
    s = "s" if since != 1 else ""
    more = f" ({since} more time{s} since the last such line)" if since else ""
    logger.log(level, message + more, *args)
    return True


def forget() -> None:
    """Every topic may be logged again at once (tests)."""
    with _LOCK:
        _LAST.clear()
