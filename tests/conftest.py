"""Shared fixtures of the browser tests: one headless Chromium and one `streamlit run` server.

Both are session-scoped: every browser test of a run shares one Chromium process and one
server (each test opens its own browser context, so pages share no tabs or cookies).
When Chromium is missing, the tests that ask for it are skipped — unless REQUIRE_BROWSER is
set (as .ci/run does), in which case they fail: CI must never pass by skipping them.

Under pytest-xdist (`-n 2 --dist loadgroup`, the README's test command) the browser tests
of one file form one group: a file's tests run in order on one worker, which starts its own
server and Chromium the first time it needs them (at most one of each per worker). The
groups and the slowest files are queued first, so the short AppTest and compute tests fill
the gaps at the end instead of one long browser file finishing alone. Each worker keeps
torch to one thread, so two workers fill two cores instead of four threads fighting.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.browser import CHROMIUM, chromium, streamlit_server

if os.environ.get("PYTEST_XDIST_WORKER"):
    import torch

    torch.set_num_threads(1)


# Files whose tests take longest (seconds of a 2-worker CI run); queued right after the
# browser groups so that they do not start last.
SLOW_FILES = ("test_fuzz_urls.py", "test_claims.py", "test_answer.py", "test_bounded_inputs.py")


# Files whose module-scoped fixture costs a minute (fresh training runs): their tests stay
# on one worker, so the fixture is computed once, not once per worker.
ONE_WORKER_FILES = ("tests/training/test_answer.py", "tests/positions/test_extrapolation.py")


def _uses_browser(item) -> bool:
    return bool(item.get_closest_marker("browser")) or "browser" in getattr(
        item, "fixturenames", ()
    )


def pytest_collection_modifyitems(config, items):
    """Each file's browser tests in one xdist group; the long work queued first.

    xdist hands out work units in collection order, so a long group collected last
    would run alone at the end; sorting is stable, so a file keeps its own order."""
    for item in items:
        where = item.path.relative_to(config.rootpath).as_posix()
        if where in ONE_WORKER_FILES:
            item.add_marker(pytest.mark.xdist_group(f"module-{where}"))
        if _uses_browser(item):
            item.add_marker(
                pytest.mark.xdist_group(f"browser-{item.path.parent.name}-{item.path.name}")
            )

    def rank(item) -> int:
        if _uses_browser(item):
            return 0
        return 1 if item.path.name in SLOW_FILES else 2

    items.sort(key=rank)


def require_chromium() -> None:
    """Skip the calling test when Chromium is missing; raise instead under REQUIRE_BROWSER."""
    if Path(CHROMIUM).exists():
        return
    if os.environ.get("REQUIRE_BROWSER"):
        raise RuntimeError(f"REQUIRE_BROWSER is set but {CHROMIUM} is missing")
    pytest.skip(f"{CHROMIUM} not installed")


@pytest.fixture(scope="session")
def browser():
    """A headless Chromium (Playwright) for the whole test session."""
    require_chromium()
    with chromium() as b:
        yield b


@pytest.fixture(scope="session")
def server_url(browser):
    """The base URL of one `streamlit run app.py` on 127.0.0.1, stopped by its pid at the end.

    It depends on `browser` so that a run without Chromium skips (or fails) before it starts
    a server nobody would visit."""
    with streamlit_server() as url:
        yield url
