"""Shared fixtures of the browser tests: one headless Chromium and one `streamlit run` server.

Both are session-scoped: every browser test of a run shares one Chromium process and one
server (each test opens its own browser context, so pages share no tabs or cookies).
When Chromium is missing, the tests that ask for it are skipped — unless REQUIRE_BROWSER is
set (as .ci/run does), in which case they fail: CI must never pass by skipping them.

Under pytest-xdist (`-n 2 --dist loadgroup`, the README's test command) every test that
drives the browser joins one group, so they all run on one worker with one server and one
Chromium, while the other worker takes the AppTest and compute tests; each worker keeps
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


def pytest_collection_modifyitems(config, items):
    """Every browser test in one xdist group (one server, one Chromium, one worker)."""
    for item in items:
        if item.get_closest_marker("browser") or "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("browser"))


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
