"""Figure builders: numpy/tensors in, plotly figures out. No streamlit here.

Each builder returns a `Chart`: the figure and the caption that says what to
notice, so the words and the picture travel together.
"""

from .style import OKABE_ITO, Chart, heatmap, line_layout, to_numpy

__all__ = ["OKABE_ITO", "Chart", "heatmap", "line_layout", "to_numpy"]
