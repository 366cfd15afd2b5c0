"""The child side of a heavy job run in its own process (the parent side is ui/jobs.py).

Torch only, like the rest of attn_core, and small on purpose: the worker process
unpickles `run` by its module, so importing this module must not import streamlit
(that alone took 0.5 s per job when the function lived in ui/jobs.py).

`run` calls a compute function with a progress callback that forwards its calls to the
parent over a pipe, at most every `every_s` seconds and always the last one, and returns
the parent's stop answer, which is how the training loops here are told to stop.
"""

from __future__ import annotations

import contextlib
import multiprocessing.spawn as _spawn
import os
import pickle
import time

# Imported once by the forkserver (ui/jobs.py preloads it). Every job forked from it then
# runs multiprocessing's "prepare" step, which re-executes the parent's main script, as
# that script was at the job's start: for `streamlit run` that re-imported all of
# streamlit in each job (0.6 s), and where the parent's __main__ had become another
# script (Streamlit and AppTest swap it for each run's page, AppTest.from_function for a
# temporary file that only runs with its arguments) the job died before it began. The
# jobs run functions pickled by module name and need nothing from the main script, so
# every child forked from here skips that step.
_spawn._fixup_main_from_path = lambda main_path: None
_spawn._fixup_main_from_name = lambda mod_name: None


def send(conn, message: tuple) -> None:
    """Plain pickle, not the connection's own: that one (torch's reductions) would pass a
    tensor as a shared-memory handle that dies with the worker, before the page reads it."""
    conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))


def own_group(nice: int) -> None:
    """Put this worker in a session of its own, whose scheduling group gets its nice.

    Where Linux groups processes by session for scheduling (sched_autogroup, on by default
    in most distributions), CPU time is shared between the groups first, and a nice value
    only counts against processes of the same group. A job at nice +10 in the server's
    group still took that group's full share from a browser running on the same laptop
    (another group): a teacher's own browser, or a benchmark's. In a group of its own,
    with the group's nice set as well, the job runs on what the others leave."""
    if nice <= 0 or not hasattr(os, "setsid"):
        return
    with contextlib.suppress(OSError):
        os.setsid()  # a new session: a new autogroup (a no-op for the scheduler without it)
        with open("/proc/self/autogroup", "w") as f:  # raising it needs no privilege
            f.write(str(nice))


def run(conn, stop, fn, args, kwargs, hook, every_s, nice) -> None:
    """The worker process: run fn, forward its progress calls (throttled), send the result."""
    import gc

    import torch

    gc.freeze()  # torch's import-time objects out of every collection (as ui/_warm.py)
    with contextlib.suppress(AttributeError, OSError):  # `nice` is absolute; only ever lower
        if nice > os.getpriority(os.PRIO_PROCESS, 0):
            os.setpriority(os.PRIO_PROCESS, 0, nice)
    own_group(nice)
    torch.set_num_threads(1)  # as the server (ui/_warm.py): tiny tensors, one core each
    due, pending, parent = 0.0, None, os.getppid()

    def relay(*a):
        nonlocal due, pending
        if os.getppid() != parent:  # the forkserver, and so the server, is gone: stop
            raise SystemExit(1)
        if (now := time.monotonic()) >= due:
            send(conn, ("step", a))
            due, pending = now + every_s, None
        else:
            pending = a  # forwarded later, or at the end, so the last step is always seen
        return stop.is_set()

    try:
        send(conn, ("started", None))  # the parent starts the job's time budget now
        if hook is not None:
            kwargs = {**kwargs, hook: relay}
        out = fn(*args, **kwargs)
        if pending is not None:
            send(conn, ("step", pending))
        send(conn, ("done", out))
    except BaseException as e:  # every failure goes back to the page
        try:
            send(conn, ("error", e))
        except Exception:  # an exception that does not pickle: its words do
            send(conn, ("error", RuntimeError(f"{type(e).__name__}: {e}")))
    finally:
        conn.close()
