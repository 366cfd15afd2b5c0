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


SETTINGS = '''
@frozen
class Settings:
    """The page's controls."""

    d_k: int
    tokens: int = 8
    name: str | None = None

    @property
    def seq(self) -> "Seq":
        return Seq(self.tokens)


@frozen
class Seq:
    tokens: int
'''


def run_settings(code):
    ns = {"frozen": C.frozen}
    exec(code, ns)
    return ns["Settings"], ns["Seq"]


def test_a_settings_class_is_made_once_and_its_objects_equal_across_runs():
    code = compile(SETTINGS, "page_s.py", "exec")
    (a, seq_a), (b, seq_b) = run_settings(code), run_settings(code)
    assert a is b and seq_a is seq_b
    assert a(64) == b(64) and hash(a(64)) == hash(b(64))  # last run's key finds this run's
    assert b(64).seq == seq_a(8)  # its method reads the page's (first run's) Seq
    try:
        a(64).d_k = 3
    except AttributeError:
        pass
    else:
        raise AssertionError("a frozen dataclass took an assignment")


def test_an_edited_settings_class_is_a_new_class():
    a, _ = run_settings(compile(SETTINGS, "page_t.py", "exec"))
    for edit in (
        SETTINGS.replace("tokens: int = 8", "tokens: int = 9"),  # a default
        SETTINGS.replace("name: str | None", "name: bytes | None"),  # a field's type
        SETTINGS.replace("Seq(self.tokens)", "Seq(self.tokens + 1)"),  # a method
        SETTINGS.replace("The page's controls.", "The controls."),  # its docstring
    ):
        b, _ = run_settings(compile(edit, "page_t.py", "exec"))
        assert b is not a


def test_a_class_with_a_field_factory_is_made_every_time():
    code = compile(
        "import dataclasses\n@frozen\nclass S:\n    xs: list = dataclasses.field("
        "default_factory=list)\n",
        "page_u.py",
        "exec",
    )
    made = []
    for _ in range(2):
        ns = {"frozen": C.frozen}
        exec(code, ns)
        made.append(ns["S"])
    assert made[0] is not made[1] and made[0]().xs == []
