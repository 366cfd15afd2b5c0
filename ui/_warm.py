"""Import the heavy libraries once per server process, then freeze them out of the GC.

Measured in a real browser on a 2-core machine: merely importing torch adds
about 80 ms to every rerun, because each full garbage collection re-scans the
millions of objects torch and plotly create at import. `gc.freeze()` moves
those long-lived objects to a permanent generation that collections skip
(the standard fix for large, long-lived servers); garbage made later is still
collected as usual.
"""

import gc

import numpy  # noqa: F401
import plotly.graph_objects  # noqa: F401
import torch  # noqa: F401

import attn_core  # noqa: F401
import figures  # noqa: F401

gc.collect()
gc.freeze()
