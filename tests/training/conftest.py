"""Fixtures of the /training tests."""

import pytest
import streamlit as st

from ui import jobs


def _clear() -> None:
    jobs.reset()
    st.cache_data.clear()
    st.cache_resource.clear()


@pytest.fixture
def fresh_server():
    """No finished runs on the 'server' (this process) before or after the test: the lab and
    the head sweep keep finished runs in the jobs store and st.cache_resource, which outlive
    one AppTest (an earlier test in this process may have trained the sweep)."""
    _clear()
    yield
    _clear()
