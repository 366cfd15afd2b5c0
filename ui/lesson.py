"""The lesson's path: one entry per page, in teaching order.

`app.py` builds the navigation from this list; a page joins it only when its
file exists (no stub pages). Previous/Next links follow the same order.
"""

from __future__ import annotations

import base64
import copy
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Lesson:
    url_path: str  # "" for home
    title: str
    icon: str
    file: str  # relative to the repository root
    question: str  # what the page answers, shown on the home page
    heading: str = ""  # the page's h1 when it differs from its navigation title
    steps: tuple[str, ...] = ()  # the page's step tabs, in order: its `?step=` values

    @property
    def name(self) -> str:
        """The lesson's one name in every layer: attn_core/lessons/<name>.py,
        figures/<name>.py, content/<name>.md, tests/<name>/ (`multi-head` → `multi_head`)."""
        return self.url_path.replace("-", "_") or "home"

    @property
    def h1(self) -> str:
        return self.heading or self.title


LESSONS: list[Lesson] = [
    Lesson(
        "",
        "Home",
        ":material/home:",
        "pages/home.py",
        "What does attention compute?",
        heading="Attention Explorer",
    ),
    Lesson(
        "scaling",
        "Why √d_k",
        ":material/straighten:",
        "pages/scaling.py",
        "Why divide by √d_k — and what breaks, at initialisation, if you forget?",
        steps=(
            "Scores to weights",
            "Spread",
            "Saturation",
            "Jacobian",
            "Two keys",
            "Check yourself",
        ),
    ),
    Lesson(
        "softmax",
        "Softmax and values",
        ":material/functions:",
        "pages/softmax.py",
        "Why softmax, how are values mixed, and where does the arithmetic overflow?",
        steps=("Example", "Shift", "Stability", "Temperature", "Dropout", "Check yourself"),
    ),
    Lesson(
        "multi-head",
        "Multi-head",
        ":material/view_column:",
        "pages/multi-head.py",
        "Why run attention eight times in parallel instead of once?",
        steps=("Heads", "Outputs", "Reshape", "Cost", "Tired cat", "Diversity"),
    ),
    Lesson(
        "masks",
        "Masks",
        ":material/grid_on:",
        "pages/masks.py",
        "How do masks work, and what does a mask of the wrong shape do?",
        steps=("Mask", "Weights", "Fill", "Cross attention", "Broadcasting bug", "Cost"),
    ),
    # After /masks: its first step builds on the causal mask (a mask alone already breaks
    # the symmetry), and RoPE and ALiBi are one more thing done to the scores before softmax.
    Lesson(
        "positions",
        "Where is position?",
        ":material/format_list_numbered:",
        "pages/positions.py",
        "Can attention see word order? And where does position enter the scores?",
        steps=("Order", "Added", "RoPE", "ALiBi", "Longer", "In a model"),
    ),
    Lesson(
        "training",
        "Training lab",
        ":material/model_training:",
        "pages/training.py",
        "Does a model really stop learning without √d_k?",
        steps=("Train", "Predict", "Rows", "Heads"),
    ),
    Lesson(
        "cost",
        "Cost and FlashAttention",
        ":material/memory:",
        "pages/cost.py",
        "Where do time and memory go, and how does FlashAttention avoid the T×T matrix?",
        steps=("Compute", "Parallel", "Memory", "KV cache", "Sweep", "Walkthrough"),
    ),
    Lesson(
        "alternatives",
        "Beyond the dot product",
        ":material/alt_route:",
        "pages/alternatives.py",
        "Why the dot product won, and why attention weights are not explanations.",
        steps=("Scoring", "Cosine", "Speed", "Smoother", "Linear attention", "Contribution"),
    ),
    Lesson(
        "heads",
        "Trained heads",
        ":material/psychology:",
        "pages/heads.py",
        "What do the heads of a real trained model do?",
        steps=("Maps", "Scores", "Loss", "Switch off", "Contribution", "Train"),
    ),
    Lesson(
        "model",
        "A real model",
        ":material/hub:",
        "pages/model.py",
        "What does attention look like inside a real pretrained model — and what do the "
        "lesson's knobs do to it?",
        steps=("Every head", "Roles", "Contribution", "Knobs", "Pruning"),
    ),
]


def available() -> list[Lesson]:
    """The lessons whose page file exists, in order."""
    return [lesson for lesson in LESSONS if (ROOT / lesson.file).is_file()]


@functools.cache
def _pages(lessons: tuple[Lesson, ...]) -> tuple[Any, ...]:
    import streamlit as st

    return tuple(
        st.Page(
            one.file,
            title=one.title,
            icon=one.icon,
            url_path=one.url_path or None,
            default=one.url_path == "",
        )
        for one in lessons
    )


def pages() -> list[Any]:
    """st.Page for every available lesson, for app.py's navigation.

    Made once per set of lessons and copied for each run: st.Page checks its file, title
    and icon when made (0.4 ms a run, paid again by every follower a teacher's move
    wakes), and each run needs its own, since st.navigation marks the one it opens."""
    return [copy.copy(page) for page in _pages(tuple(available()))]


@functools.cache
def favicon() -> str:
    """The app's icon as a data: URL, read once: a file path made Streamlit open the
    image and register it again on every run."""
    data = (ROOT / "assets" / "favicon.png").read_bytes()
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def lesson(name: str) -> Lesson:
    """The lesson by its name (`masks`, `multi_head`) or URL path (`multi-head`)."""
    for one in LESSONS:
        if name in (one.name, one.url_path):
            return one
    raise KeyError(name)


def by_file(file: str) -> Lesson:
    for lesson in LESSONS:
        if lesson.file == file:
            return lesson
    raise KeyError(file)
