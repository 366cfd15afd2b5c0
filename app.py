"""Attention Explorer: the entry point. `streamlit run app.py`.

Builds the navigation from the lesson path (ui/lesson.py): a page appears once
its file exists in pages/.
"""

import streamlit as st

from ui.lesson import available

st.set_page_config(
    page_title="Attention Explorer",
    page_icon="assets/favicon.png",  # a local file: a material icon would be fetched online
    layout="wide",
    initial_sidebar_state="auto",  # open on a desk, closed on a phone (it would cover it)
)

pages = [
    st.Page(
        lesson.file,
        title=lesson.title,
        icon=lesson.icon,
        url_path=lesson.url_path or None,
        default=lesson.url_path == "",
    )
    for lesson in available()
]
st.navigation(pages, position="sidebar", expanded=True).run()
