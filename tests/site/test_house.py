"""The house rules a check can enforce (CONTRIBUTING.md, "Where does X live").

- Short functions: none over 60 lines in attn_core/, figures/, ui/, pages/ unless its
  `def` line says why (`# long: …`), and at most three such.
- One name per lesson: each lesson of ui/lesson.py has its page, its compute, its
  figures (home has none) and its tests under that one name.
- The words: every lesson's content file parses, no section is empty.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from bench.house import LIMIT, long_functions
from ui import content
from ui.lesson import LESSONS

ROOT = Path(__file__).resolve().parents[2]


def test_no_function_is_longer_than_the_limit_without_a_reason():
    longs = long_functions(ROOT)
    unexplained = [f"{name} ({n} lines)" for name, n, why in longs if not why]
    assert not unexplained, f"over {LIMIT} lines without `# long: <why>`: {unexplained}"
    assert len(longs) <= 3, f"more than three long functions: {longs}"


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda x: x.name)
def test_every_layer_of_a_lesson_uses_the_lesson_s_name(lesson):
    name = lesson.name
    assert (ROOT / lesson.file).is_file()
    assert (ROOT / "tests" / name).is_dir()
    if name != "home":
        assert (ROOT / "attn_core" / "lessons" / f"{name}.py").is_file()
        assert (ROOT / "figures" / f"{name}.py").is_file()


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda x: x.name)
def test_content_files_parse_and_no_section_is_empty(lesson):
    assert (ROOT / "content" / f"{lesson.name}.md").is_file(), lesson.name
    sections = content.sections(lesson.name)
    assert sections and all(text.strip() for text in sections.values()), lesson.name


def test_figures_and_attn_core_do_not_import_the_ui_or_streamlit():
    for folder in ("attn_core", "figures"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    names = (
                        [a.name for a in node.names]
                        if isinstance(node, ast.Import)
                        else [node.module or ""]
                    )
                    bad = [n for n in names if n.split(".")[0] in ("streamlit", "ui")]
                    assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


def _ui_imports() -> dict[str, set[str]]:
    """Each module of ui/ and the modules of ui/ it imports, at the top or in a function."""
    graph: dict[str, set[str]] = {}
    for path in sorted((ROOT / "ui").glob("*.py")):
        name = "ui" if path.stem == "__init__" else f"ui.{path.stem}"
        out = graph.setdefault(name, set())
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                out.update(a.name for a in node.names if a.name.split(".")[0] == "ui")
            elif isinstance(node, ast.ImportFrom):
                base = ("ui." + (node.module or "")).rstrip(".") if node.level else node.module
                if not base or base.split(".")[0] != "ui":
                    continue
                out.add(base)
                out.update(f"{base}.{a.name}" for a in node.names)  # `from . import room`
    return {m: {d for d in deps if d in graph and d != m} for m, deps in graph.items()}


def _circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of `graph`, or None (a depth-first search for a back edge)."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                return [*path[path.index(d) :], d]
            if d not in state and (found := visit(d)):
                return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_no_import_circle_in_the_ui_kit():
    """Class mode listens through ui.events: controls and exercises never import it."""
    graph = _ui_imports()
    inner = {m: deps - {"ui"} for m, deps in graph.items() if m != "ui"}  # the package re-exports
    assert "ui.classroom" in inner["ui.chrome"]  # the graph is read (not an empty pass)
    assert _circle(inner) is None, " → ".join(_circle(inner))
    for kit in ("ui.controls", "ui.exercises"):
        assert "ui.classroom" not in inner[kit], kit


def test_the_circle_check_finds_a_circle():
    assert _circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _circle({"a": {"b"}, "b": set()}) is None


def test_pages_make_their_settings_classes_once():
    """A page's `@dataclass` is made again on every run, and equals only its own run's
    objects: pages use `@ui.frozen` (ui/cache.py), made once per definition."""
    for path in sorted((ROOT / "pages").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                names = [ast.unparse(d) for d in node.decorator_list]
                assert not any("dataclass" in n for n in names), (path.name, node.name, names)
