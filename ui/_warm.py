"""Import the heavy libraries once per server process, then freeze them out of the GC.

Measured in a real browser on a 2-core machine: merely importing torch adds
about 80 ms to every rerun, because each full garbage collection re-scans the
millions of objects torch and plotly create at import. `gc.freeze()` moves
those long-lived objects to a permanent generation that collections skip
(the standard fix for large, long-lived servers); garbage made later is still
collected as usual.

It also gives torch one intra-op thread. A server runs many sessions' reruns at once
and the app's tensors are small; with two OpenMP threads per op, concurrent reruns
spin-wait on each other. Measured with bench/load.py (30 browser sessions): server CPU
per rerun 36–47 ms -> 24 ms and script-run p95 960 -> 310 ms. One session alone trains
/training's pair 25% slower (1.14 -> 1.43 s).
"""

import gc
import sys

import numpy  # noqa: F401
import plotly.graph_objects  # noqa: F401
import torch

import attn_core  # noqa: F401
import figures  # noqa: F401

torch.set_num_threads(1)

# The interpreter lock changes hands every 5 ms by default. The server's event loop sends
# each message of every session's run, and at each of its turns it waits for the lock
# while other sessions' scripts run: with a class of 150 following (bench/classroom.py),
# runs that had ended at 1.6 s (p50) reached their followers at 3.05 s. At 0.5 ms: 2.06 s.
SWITCH_S = 0.0005
sys.setswitchinterval(SWITCH_S)

gc.collect()
gc.freeze()
