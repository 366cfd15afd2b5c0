"""The kit's hooks: controls and exercises announce, class mode listens.

ui.controls and ui.exercises know nothing of class mode; they announce what happens
(a value set, a control moved, a question drawn, answered or revealed) through the
functions here. ui.classroom subscribes when it is imported (ui.chrome imports it), and
ui.chrome gives the way a chart is drawn. With nobody subscribed each announcement does
nothing and each question gets its default: the page on its own. So no module of ui/
imports another in a circle (tests/site/test_house.py checks the import graph).

One handler an event: subscribing again replaces it (a module reloaded in a test).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

VALUE_SET = "value_set"  # (key, value): a ui control's value this run
MOVED = "moved"  # (key,): a ui control's on_change, a user's move
FOLLOWING = "following"  # () -> bool: this session follows a class's teacher
ASKED = "asked"  # (key,) -> room or None: this question is put to the class
HOLD = "hold"  # (box, key): the teacher's question while the class answers
ASK_BUTTON = "ask_button"  # (box, key, choices): offer to put the question to the class
ANSWERED = "answered"  # (box, room, sent, answer): a student's answer while the class answers
REVEALED = "revealed"  # (box, room, **truth): after the class's reveal, what it answered
CHART = "chart"  # (chart, key=...): draw a figures.Chart (ui.chrome.show)
OPENED = "opened"  # (key,): this session's page shows exercise `key`'s answer
TEACHER_OPENED = "teacher_opened"  # (key,) -> bool: the teacher's page showed it, unasked

_HOOKS: dict[str, Callable[..., Any]] = {}


def subscribe(event: str, handler: Callable[..., Any]) -> None:
    """Handle `event` with `handler` from now on."""
    _HOOKS[event] = handler


def announce(event: str, *args: Any, default: Any = None, **kwargs: Any) -> Any:
    """Call the event's handler; `default` when none is subscribed."""
    handler = _HOOKS.get(event)
    return default if handler is None else handler(*args, **kwargs)


def value_set(key: str, value: Any) -> None:
    announce(VALUE_SET, key, value)


def publish(key: str, value: Any) -> None:
    """A value of the page's own that a class shares like a control's (a table's
    example): a teacher's session publishes it, a following student's page takes it into
    session state under `key` before anything of its run is drawn."""
    announce(VALUE_SET, key, value)


def moved(key: str) -> None:
    """Every ui control's on_change."""
    announce(MOVED, key)


def following() -> bool:
    return bool(announce(FOLLOWING, default=False))
