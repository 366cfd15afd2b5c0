"""One chart variant on a one-slider page, for bench/charts.py: where a chart's time goes.

`streamlit run bench/chart_app.py` then `?variant=heat8`; the slider `x` seeds the data,
so every key press redraws the chart with new numbers (except `heat8_same`). `build`
makes the figures without Streamlit running, so the bench can weigh their JSON.
"""

from __future__ import annotations

import base64
import gc
import io
import sys

import numpy as np
import plotly.graph_objects as go
import streamlit as st  # before any figure: it makes its theme plotly's default template
from plotly.colors import sequential
from plotly.subplots import make_subplots

WORDS = ["the", "tired", "cat", "sat", "on", "the", "warm", "mat"]  # the home page's sentence
HOVER = "query %{y}<br>key %{x}<br>weight %{z:.3f}<extra></extra>"


def _z(n: int, x: int) -> np.ndarray:
    return np.random.default_rng(x).random((n, n), dtype=np.float32)


def _heat(z, layout: dict | None = None, **trace) -> go.Figure:
    axes = dict(title="Attention weights", xaxis_title="key", yaxis_title="query")
    return go.Figure(go.Heatmap(z=z, colorscale="Cividis", **trace), dict(axes, **(layout or {})))


def _untemplated(fig: go.Figure) -> go.Figure:
    """Without the theme's template (~3.5 KB), as figures/parts.fast_figure builds them."""
    fig.layout.template = dict(layout={})  # assigning replaces; update_layout would merge
    return fig


def _lines(n: int, x: int) -> go.Figure:
    y = np.random.default_rng(x).standard_normal((n, 200)).cumsum(1).astype(np.float32)
    fig = go.Figure([go.Scatter(y=row, mode="lines", name=f"run {i}") for i, row in enumerate(y)])
    return fig.update_layout(title="Loss", xaxis_title="step", yaxis_title="loss")


def _annotated(x: int) -> go.Figure:
    z = _z(8, x)
    notes = [
        dict(x=i % 8, y=i // 8, text=f"{z[i // 8, i % 8]:.2f}", showarrow=False) for i in range(30)
    ]
    return _heat(z, dict(annotations=notes))


def _subplots(x: int) -> go.Figure:
    fig = make_subplots(2, 2, subplot_titles=[f"head {h}" for h in range(4)])
    for h in range(4):
        fig.add_trace(go.Heatmap(z=_z(8, x + h), coloraxis="coloraxis"), h // 2 + 1, h % 2 + 1)
    return fig.update_layout(title="Four heads", coloraxis=dict(colorscale="Cividis"))


def _png(z: np.ndarray) -> str:
    """A 0–1 map as a PNG data URI in Cividis, NaN white (figures/model.py's idea)."""
    from PIL import Image

    stops = np.array([[int(c[i : i + 2], 16) for i in (1, 3, 5)] for c in sequential.Cividis])
    at, levels = np.linspace(0, 1, len(stops)), np.linspace(0, 1, 256)
    lut = np.stack([np.interp(levels, at, stops[:, i]) for i in range(3)], -1).astype(np.uint8)
    rgb = lut[(np.nan_to_num(z) * 255).astype(np.uint8)]
    rgb[np.isnan(z)] = 255
    buf = io.BytesIO()
    Image.fromarray(rgb, "RGB").save(buf, format="PNG", compress_level=1)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _mosaic(x: int, L: int = 6, H: int = 12, T: int = 10) -> go.Figure:
    """L × H tiles of T × T maps, two blank cells between tiles, as one image."""
    tiles, span = np.random.default_rng(x).random((L, H, T, T), dtype=np.float32), T + 2
    z = np.full((L * span - 2, H * span - 2), np.nan, np.float32)
    for l, h in np.ndindex(L, H):
        z[l * span : l * span + T, h * span : h * span + T] = tiles[l, h]
    fig = go.Figure(go.Image(source=_png(z), hoverinfo="skip"))
    return fig.update_layout(title="Every head", xaxis_title="head", yaxis_title="layer")


def _app(variant: str, x: int) -> go.Figure:
    """Real app figures (figures/ imports torch, so only when asked for)."""
    rng = np.random.default_rng(x)
    if variant == "app_home":  # the home page's weights heatmap (per-cell text, gaps, hover)
        from figures.common import weights_heatmap

        logits = rng.standard_normal((8, 8)) * 3
        w = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
        return weights_heatmap(w.astype(np.float32), WORDS).fig
    if variant == "app_histogram":  # /scaling's logit histogram with its two normal curves
        from figures.scaling import logit_histogram

        e = rng.standard_normal(4096) * 8
        density, edges = np.histogram(e, bins=60, density=True)
        return logit_histogram(
            edges, density, d_k=64, measured_var=float(e.var()), theory_var=64.0, n=e.size,
            label="unscaled",
        ).fig  # fmt: skip
    from figures.model import head_mosaic  # /model's every-head picture, distilgpt2's 6 × 12

    w = rng.random((6, 12, 10, 10), dtype=np.float32) ** 4
    return head_mosaic(w / w.sum(-1, keepdims=True), (x % 6, x % 12), "distilgpt2").fig


BUILDERS = {
    "none": lambda x: [],
    "heat8": lambda x: [_heat(_z(8, x))],
    "heat8_notheme": lambda x: [_heat(_z(8, x))],  # drawn with theme=None
    "heat8_notemplate": lambda x: [_untemplated(_heat(_z(8, x)))],
    "heat8_text": lambda x: [_heat(_z(8, x), texttemplate="%{z:.2f}")],
    "heat8_hover": lambda x: [_heat(_z(8, x), hovertemplate=HOVER)],
    "heat8_gaps": lambda x: [_heat(_z(8, x), xgap=1, ygap=1)],
    "heat8_same": lambda x: [_heat(_z(8, 0))],  # the data ignores the slider
    "heat32": lambda x: [_heat(_z(32, x))],
    "heat128": lambda x: [_heat(_z(128, x))],
    "heat128_list": lambda x: [_heat(_z(128, x).tolist())],
    "lines1": lambda x: [_lines(1, x)],
    "lines10": lambda x: [_lines(10, x)],
    "annot30": lambda x: [_annotated(x)],
    "subplots4": lambda x: [_subplots(x)],
    "separate4": lambda x: [_heat(_z(8, x + h)) for h in range(4)],
    "image72": lambda x: [_mosaic(x)],
    "app_home": lambda x: [_app("app_home", x)],
    "app_histogram": lambda x: [_app("app_histogram", x)],
    "app_mosaic": lambda x: [_app("app_mosaic", x)],
}


def build(variant: str, x: int) -> list[go.Figure]:
    return BUILDERS[variant](x)


def _freeze(variant: str) -> None:
    """As the app does (ui/_warm.py): the imports' objects out of every rerun's gc.collect()
    (this page runs with Streamlit's stock postScriptGC); figures/ imports torch."""
    if variant.startswith("app_") and "figures.model" not in sys.modules:
        import figures.common
        import figures.model
        import figures.scaling  # noqa: F401
    elif gc.get_freeze_count():
        return
    gc.collect()
    gc.freeze()


def page() -> None:
    variant = st.query_params.get("variant", "heat8")
    _freeze(variant)
    x = st.slider("x", 0, 100, 50, key="x")
    st.write(f"x = {x}")  # as on bench/bare_app.py: variant `none` is that page
    theme = None if variant.endswith("_notheme") else "streamlit"
    for i, fig in enumerate(build(variant, x)):
        st.plotly_chart(fig, key=f"chart{i}", theme=theme)


if __name__ == "__main__":  # `streamlit run` runs the script as __main__; an import does not
    page()
