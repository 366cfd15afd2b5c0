"""The browser helpers' reading of Streamlit's protocol, on the pinned Streamlit.

tests/support/browser.py's websocket spy finds a run's end by reading ForwardMsg's
`script_finished` (field 6, a varint enum) out of each binary message, because the
page's script-state attribute misses runs that a busy renderer batches away. If a
Streamlit upgrade moves the field or the statuses, these fail loudly instead of every
browser test waiting 60 s for a finish that never comes.
"""

import pytest
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from tests.support.browser import click_and_wait_run, open_page


def test_script_finished_is_field_6_a_varint_with_the_statuses_the_spy_reads():
    field = ForwardMsg.DESCRIPTOR.fields_by_name["script_finished"]
    assert (field.number, field.type) == (6, field.TYPE_ENUM)
    assert ForwardMsg.FINISHED_SUCCESSFULLY == 0
    assert ForwardMsg.FINISHED_EARLY_FOR_RERUN == 2
    assert ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY == 3


@pytest.mark.browser
def test_the_spy_sees_each_run_end(server_url, browser):
    """Every tab switch's run reports its end through the spy. (Under an 8x throttled
    renderer the script-state attribute missed most of them on /model and /multi-head,
    while the spy saw every one; the throttled run is too slow for a loaded CI to keep.)"""
    page, errors = open_page(browser, f"{server_url}/multi-head")
    try:
        assert 0 in [s for _, s in page.evaluate("window.__finished")]  # the first run
        for step in ("Outputs", "Heads"):
            before = page.evaluate("window.__finished.length")
            click_and_wait_run(page, page.get_by_role("tab", name=step, exact=True))
            assert page.evaluate("window.__finished.length") > before
            assert page.get_by_role("tab", name=step, exact=True).get_attribute(
                "aria-selected"
            ) == "true"  # fmt: skip
        assert not errors, errors
    finally:
        page.context.close()
