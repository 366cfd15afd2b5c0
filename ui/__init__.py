"""The UI kit: the only layer that knows about URLs and widgets.

Pages import from here; no page parses the URL itself.
"""

from . import (
    _warm,  # noqa: F401  (first: heavy imports, then gc.freeze)
    delivery,  # noqa: F401  (a run's messages reach the event loop in batches)
    jobs,
)
from .cache import cache_data, cache_resource, frozen
from .chrome import (
    controls_area,
    device,
    device_badge,
    escape,
    explain,
    page_header,
    prev_next,
    show,
    tokens,
    try_this,
)
from .classroom import join_box
from .content import Words
from .controls import (
    log_slider,
    multiselect,
    note,
    noting,
    number,
    pow2_slider,
    radio,
    safe_text,
    select_slider,
    selectbox,
    show_notes,
    slider,
    steps,
    tabs,
    text,
    toggle,
    used_by,
)
from .editors import EditorCut, bound_editor, editor, editor_note
from .events import following, moved, publish
from .exercises import predict_choice, predict_number, revealed, until_reveal
from .lesson import LESSONS, Lesson, available, lesson
from .share import phone, presenting, where

__all__ = [
    "LESSONS",
    "EditorCut",
    "Lesson",
    "Words",
    "available",
    "bound_editor",
    "cache_data",
    "cache_resource",
    "controls_area",
    "device",
    "device_badge",
    "editor",
    "editor_note",
    "escape",
    "explain",
    "following",
    "frozen",
    "jobs",
    "join_box",
    "lesson",
    "log_slider",
    "moved",
    "multiselect",
    "note",
    "noting",
    "number",
    "page_header",
    "phone",
    "pow2_slider",
    "predict_choice",
    "predict_number",
    "presenting",
    "prev_next",
    "publish",
    "radio",
    "revealed",
    "safe_text",
    "select_slider",
    "selectbox",
    "show",
    "show_notes",
    "slider",
    "steps",
    "tabs",
    "text",
    "toggle",
    "tokens",
    "try_this",
    "until_reveal",
    "used_by",
    "where",
]
