"""The yardstick of issue 52: a hand-written page with one slider and one 12×12 plotly
heatmap. Every lesson page's rerun is compared with this one's (bench/run.py, bench/split.py).

The slider seeds the numbers, so each key press sends a new chart, as a lesson's does.
"""

import numpy as np
import plotly.graph_objects as go
import streamlit as st

x = st.slider("x", 0, 100, 50, key="x", bind="query-params")
z = np.random.default_rng(x).random((12, 12))
fig = go.Figure(go.Heatmap(z=z, colorscale="Cividis"))
fig.update_layout(title="One heatmap", xaxis_title="key", yaxis_title="query")
st.plotly_chart(fig)
