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
# Issue 19 is splitting these; the list may only shrink (a new long function fails).
STILL_LONG = {
    "figures/alternatives.py:scoring_grids",
    "figures/cost.py:sweep_chart",
    "figures/cost.py:walkthrough_chart",
    "figures/heads.py:ablation_bars",
    "figures/heads.py:contribution_scatter",
    "figures/heads.py:head_maps",
    "figures/heads.py:head_score_bars",
    "figures/heads.py:position_loss",
    "figures/heads.py:training_curves",
    "figures/masks.py:fill_grid",
    "figures/masks.py:mask_chart",
    "figures/multi_head.py:heads_grid",
    "figures/scaling.py:jacobian_norms_chart",
    "figures/scaling.py:logit_histogram",
    "figures/scaling.py:two_key_curve",
    "figures/scaling.py:variance_vs_dk",
    "figures/softmax.py:hull_plot",
    "figures/training.py:probe_rows",
    "pages/cost.py:sweep_section",
    "pages/heads.py:live_section",
    "pages/heads.py:run",
    "pages/scaling.py:run",
    "pages/training.py:exercises",
    "pages/training.py:heads",
    "pages/training.py:honest_text",
}


def test_no_function_is_longer_than_the_limit_without_a_reason():
    longs = [row for row in long_functions(ROOT) if row[0] not in STILL_LONG]
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
    if not (ROOT / "content" / f"{lesson.name}.md").is_file():
        pytest.skip("issue 19: this lesson's words are not in content/ yet")
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
