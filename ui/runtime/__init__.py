"""The one room for Streamlit's private runtime: what the app needs that has no public API.

`install()` (app.py) puts the server's pieces in place once per process; importing this
package patches nothing. Pieces so far:

- `gate`: every browser message comes through one door: a rerun budget per session (a
  flooding session is coalesced and slowed, and told so), a student's own rerun ends a
  pending wake, and `clear_cache` from a browser is refused.
"""

from __future__ import annotations

import threading

from . import gate, logs

_LOCK = threading.Lock()
_DONE: dict[str, bool] = {}


def install() -> dict[str, bool]:
    """Put the runtime's pieces in place (once per process); which of them are in."""
    with _LOCK:
        if not _DONE:
            _DONE["gate"] = gate.install()
        return dict(_DONE)


def slowed() -> tuple[int, float] | None:
    """(requests held back, seconds between runs) once, when this script run is one the
    gate held back (ui.chrome says so on the page); None otherwise."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return gate.slowed(ctx.session_id) if ctx is not None else None


__all__ = ["gate", "install", "logs", "slowed"]
