"""The yardstick: a bare one-slider page. Every page's rerun is compared with this one's."""

import streamlit as st

x = st.slider("x", 0, 100, 50, key="x", bind="query-params")
st.write(f"x = {x}")
