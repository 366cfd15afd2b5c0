"""Attention Explorer: the entry point. `streamlit run app.py`.

Builds the navigation from the lesson path (ui/lesson.py): a page appears once
its file exists in pages/.
"""

import streamlit as st

from ui import replay, runtime
from ui.lesson import favicon, pages

runtime.install()  # once per process: Streamlit's private pieces the app needs (ui/runtime)
replay.arm()  # a woken follower's run is recorded whole, for the next ones (ui.replay)
st.set_page_config(
    page_title="Attention Explorer",
    page_icon=favicon(),  # assets/favicon.png, inline: a material icon would be fetched online
    layout="wide",
    initial_sidebar_state="auto",  # open on a desk, closed on a phone (it would cover it)
)

st.navigation(pages(), position="sidebar", expanded=True).run()
