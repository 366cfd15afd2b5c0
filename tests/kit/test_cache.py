"""ui.cache: Streamlit's cached functions made once per function body, not once per run."""

from __future__ import annotations

import ui.cache as C

SOURCE = """
@cache(max_entries=4, show_spinner=False)
def square(x):
    calls.append(x)
    return x * x
"""


def run_page(code, calls: list, cache=C.cache_data):
    """One 'run' of a page: its code executed in a fresh namespace, as Streamlit does."""
    ns = {"cache": cache, "calls": calls}
    exec(code, ns)
    return ns["square"]


def test_the_same_code_gets_the_same_cached_function_and_values():
    code = compile(SOURCE, "page_a.py", "exec")  # Streamlit keeps a page's compiled code
    calls: list = []
    first, second = run_page(code, calls), run_page(code, calls)
    assert first is second
    assert first(3) == 9 and second(3) == 9
    assert calls == [3]  # the second run's call came from the cache
    first.clear()


def test_edited_code_or_other_settings_make_a_new_wrapper():
    calls: list = []
    a = run_page(compile(SOURCE, "page_b.py", "exec"), calls)
    again = run_page(compile(SOURCE, "page_b.py", "exec"), calls)  # compiled afresh, same code
    edited = run_page(compile(SOURCE.replace("x * x", "x * x + 0"), "page_b.py", "exec"), calls)
    other = run_page(compile(SOURCE, "page_c.py", "exec"), calls)  # another page's function
    resource = run_page(compile(SOURCE, "page_b.py", "exec"), calls, C.cache_resource)
    assert a is again
    assert len({id(f) for f in (a, edited, other, resource)}) == 4
    for f in (a, edited, other, resource):
        f.clear()


def test_closures_and_unhashable_settings_are_never_shared():
    def make(k):
        @C.cache_data(max_entries=2)
        def times(x):
            return k * x

        return times

    assert make(2) is not make(3)  # each closure is its own function
    h1 = C.cache_data(max_entries=2, hash_funcs={int: str})
    h2 = C.cache_data(max_entries=2, hash_funcs={int: str})

    def f(x):
        return x

    assert h1(f) is not h2(f)


def test_the_store_is_bounded(monkeypatch):
    monkeypatch.setattr(C, "MAX_WRAPPERS", 3)
    monkeypatch.setattr(C, "_MADE", type(C._MADE)())
    for i in range(6):
        run_page(compile(SOURCE, f"page_{i}.py", "exec"), [], C.cache_resource)
    assert len(C._MADE) == 3
