"""`st.cache_data` and `st.cache_resource`, built once per function instead of once per run.

A page file is run afresh on every rerun, so each `@st.cache_data` in it decorates a
new function object each time, and Streamlit then reads the function's source again
to key its cache (`inspect.getsource`): about 1.5 ms a function, 15 ms of a /scaling
rerun's 50 ms on the server, and again for every follower of a class. Streamlit keeps
each page's compiled code between runs, so a function's code object is the same every
run (and an equal one where the file is compiled again). `cache_data` and
`cache_resource` keep the cached function made the first time, keyed by that code
object, its file and name, and the decorator's arguments, and hand it back later.

What the cache holds and when it misses is unchanged: Streamlit keys the stored values
by the function's source and arguments, the same for the first-made wrapper as for a
new one. A page whose file changes gets new code objects and so new wrappers.

`frozen` does the same for a page's settings classes: `@dataclass(frozen=True)` writes
and compiles each class's methods (`__init__`, `__eq__`, `__hash__`, …) afresh on every
run, about 0.5 ms a class, and 11 % of a class's follower reruns of /scaling went there.
`@ui.frozen` makes the dataclass the first time and hands the same class back while the
class's definition (its fields, defaults, docstring and methods' code) is unchanged. Its
methods then read the page's globals of that first run: the page's functions and
constants, which every run defines alike (a method must not read a value that a run
sets). A settings object also equals the last run's objects again, so a value kept on
the server under last run's settings is found.
"""

from __future__ import annotations

import dataclasses
import types
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

import streamlit as st

MAX_WRAPPERS = 512  # every page's cached functions, with room for edited files
_MADE: OrderedDict[tuple, Callable] = OrderedDict()


def _key(kind: str, fn: Callable, kw: dict) -> tuple | None:
    """What makes two runs' functions the same one; None: build it afresh every time."""
    if getattr(fn, "__closure__", None):  # a nested function: its cells differ per call
        return None
    try:
        # code objects compare by their bytecode, names and constants, but not by their
        # file: an identical function of another page (whose globals differ) is not it
        code = fn.__code__
        key = (kind, code, code.co_filename, fn.__module__, fn.__qualname__,
               tuple(sorted(kw.items())), fn.__defaults__,
               tuple(sorted((fn.__kwdefaults__ or {}).items())))  # fmt: skip
        hash(key)
    except (AttributeError, TypeError):  # not a plain function, or e.g. hash_funcs (a dict)
        return None
    return key


def _remember(key: tuple | None, make: Callable[[], Any]) -> Any:
    """What `make()` made the first time under `key` (None: make it afresh, keep nothing)."""
    if key is None:
        return make()
    made = _MADE.get(key)
    if made is None:
        made = _MADE[key] = make()
        while len(_MADE) > MAX_WRAPPERS:
            _MADE.popitem(last=False)
    else:
        _MADE.move_to_end(key)
    return made


def _once(kind: str, make: Callable, kw: dict) -> Callable[[Callable], Callable]:
    def decorate(fn: Callable) -> Callable:
        return _remember(_key(kind, fn, kw), lambda: make(**kw)(fn))

    return decorate


def cache_data(**kw: Any) -> Callable[[Callable], Callable]:
    """Like `st.cache_data(**kw)`; always give `max_entries`."""
    return _once("data", st.cache_data, kw)


def cache_resource(**kw: Any) -> Callable[[Callable], Callable]:
    """Like `st.cache_resource(**kw)`; always give `max_entries`."""
    return _once("resource", st.cache_resource, kw)


T = TypeVar("T", bound=type)
_PLAIN = (int, float, str, bytes, bool, type(None))


def _part(v: Any) -> Any:
    """A class attribute as a key: code for functions, values for plain constants."""
    if isinstance(v, staticmethod | classmethod):
        return (type(v).__name__, _part(v.__func__))
    if isinstance(v, property):
        return ("property", _part(v.fget), _part(v.fset), _part(v.fdel))
    if callable(v) and hasattr(v, "__code__"):
        if v.__closure__:  # a nested function's cells differ per call
            raise TypeError("closure")
        code = v.__code__
        return (code, code.co_filename, _part(v.__defaults__), _part(v.__kwdefaults__))
    if isinstance(v, tuple | list):
        return tuple(_part(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _part(x)) for k, x in v.items()))
    if isinstance(v, (*_PLAIN, type, types.GenericAlias, types.UnionType)):
        return v  # (a field's type: int, tuple[int, ...], str | None)
    raise TypeError(type(v).__name__)  # e.g. a dataclasses.field(): made afresh


def _class_key(cls: type) -> tuple | None:
    skip = ("__dict__", "__weakref__")
    try:
        body = tuple(sorted((k, _part(v)) for k, v in vars(cls).items() if k not in skip))
        bases = tuple(c.__qualname__ for c in cls.__bases__)
        key = ("frozen", cls.__module__, cls.__qualname__, bases, body)
        hash(key)
    except TypeError:
        return None
    return key


def frozen(cls: T) -> T:
    """`@dataclass(frozen=True)`, made once per definition instead of once per run."""
    return _remember(_class_key(cls), lambda: dataclasses.dataclass(frozen=True)(cls))
