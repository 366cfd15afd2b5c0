"""Sharing: a live "copy link to this view" box, presenter mode, CSV export of a chart's data."""

from __future__ import annotations

import io
import re

import numpy as np
import plotly.graph_objects as go
import streamlit as st

# The link box runs in a same-origin iframe and reads the parent page's address every
# half second, so it stays right even after a fragment-only rerun changed the URL.
_LINK_HTML = """
<style>body { margin: 0; padding: 3px; }
  input:focus-visible, button:focus-visible { outline: 3px solid #0072B2; outline-offset: 1px; }
</style>
<div style="display:flex;gap:.5rem;align-items:center;font-family:sans-serif">
  <input id="u" readonly aria-label="Link to this view"
         style="flex:1;min-width:0;font-size:14px;padding:6px 8px;border:1px solid #c8ced6;
                border-radius:6px;color:#1B1F24;background:#F2F5F8">
  <button id="b" type="button"
          style="flex:none;font-size:14px;padding:6px 12px;border:1px solid #0072B2;
                 border-radius:6px;background:#0072B2;color:white;cursor:pointer">Copy</button>
</div>
<script>
  const u = document.getElementById('u'), b = document.getElementById('b');
  const href = () => { try { return window.parent.location.href; } catch (e) { return ''; } };
  const sync = () => { const h = href(); if (u.value !== h) u.value = h; };
  sync(); setInterval(sync, 500);
  b.addEventListener('click', async () => {
    sync();
    try { await navigator.clipboard.writeText(u.value); }
    catch (e) { u.select(); document.execCommand('copy'); }
    b.textContent = 'Copied'; setTimeout(() => { b.textContent = 'Copy'; }, 1500);
  });
</script>
"""

PRESENT_CSS = """
<style>
  [data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"],
  [data-testid="stExpandSidebarButton"], [data-testid="stHeader"] { display: none !important; }
  .stMainBlockContainer, .block-container { max-width: 100% !important;
    padding: 0.6rem 1.6rem !important; }
  .stMainBlockContainer [data-testid="stVerticalBlock"] { gap: 0.7rem; }
  .stMarkdown p, .stMarkdown li,
  [data-testid="stCaptionContainer"] { font-size: 1.35rem !important; }
  h1 { font-size: 2.7rem !important; padding: 0 0 0.1rem 0 !important; }
  h2 { font-size: 1.9rem !important; padding: 0.2rem 0 0.3rem 0 !important; }
  h3 { font-size: 1.6rem !important; }
  /* The title row: the question under the title in body size, the boxes beside it. */
  [data-testid="stMarkdownContainer"] p em:only-child { font-size: 1.2rem; }
  /* A step's first chart (or its question) comes right under the step's heading; the
     step's words follow it (issue 50: the first chart within 360 px of the top at 720p). */
  [role="tabpanel"] [data-testid="stVerticalBlock"]:has(> [data-testid="stElementContainer"] h2)
    > :nth-child(1 of :has([data-testid="stPlotlyChart"], [class*="st-key-predict-"])) {
    order: -1; }
  [role="tabpanel"] [data-testid="stVerticalBlock"]:has(> [data-testid="stElementContainer"] h2)
    > :nth-child(1 of :has(h2)) { order: -2; }
  /* In a column, a chart above its own slider: the knob under the picture it moves. */
  [role="tabpanel"] [data-testid="stColumn"] > [data-testid="stVerticalBlock"]
    > :nth-child(1 of :has([data-testid="stPlotlyChart"])) { order: -1; }
  /* The title row: the title on one line beside its boxes (a long one a little smaller),
     its boxes and notes a little smaller than the body. */
  .st-key-ui_title_row h1 { font-size: 2.3rem !important; }
  .st-key-ui_title_row [data-testid="stPopover"] button p,
  .st-key-ui_title_row [data-testid="stExpander"] summary p { font-size: 1.15rem !important; }
  .st-key-ui_title_row [data-testid="stCaptionContainer"],
  .st-key-ui_title_row [data-testid="stCaptionContainer"] p { font-size: 1.15rem !important; }
  /* Projector-sized type for everything the charts are not: metrics, tables, code, the
     toolbar's SVG link. */
  .modebar-btn.attn-svg { font-size: 18px !important; }
  [data-testid="stMetricLabel"] p,
  [data-testid="stMetricLabel"] div { font-size: 1.15rem !important; }
  [data-testid="stMetricValue"] { font-size: 2.2rem !important; }
  [data-testid="stTable"] th, [data-testid="stTable"] td,
  [data-testid="stCode"] code, [data-testid="stMarkdownContainer"] code,
  [data-testid="stCaptionContainer"] code { font-size: 1.2rem !important; }
  [data-testid="stWidgetLabel"] p { font-size: 1.25rem !important; }
  /* the answer choices, the step tabs and the buttons: as large as the body text */
  [data-testid="stRadio"] [role="radiogroup"] p, button[data-baseweb="tab"] p,
  [role="tab"], [role="tab"] p, [data-testid^="stBaseButton"] p,
  [data-testid="stPageLink"] p, [data-testid="stPageLink-NavLink"] p,
  [data-testid="stExpander"] summary p, [data-testid="stPopover"] button p,
  [data-testid="stAlert"] p { font-size: 1.35rem !important; }
  /* Controls, once opened: a narrow panel at the screen's right edge, and the page beside
     it, so the room sees each move's effect on the chart (the box stays in its row). */
  .st-key-ui_controls details[open] > [data-testid="stExpanderDetails"] {
    position: fixed; top: 0.75rem; right: 0.75rem; bottom: 0.75rem; width: 21rem;
    overflow-y: auto; z-index: 999; background: #FFFFFF; border: 1px solid #C8CED6;
    border-radius: 0.5rem; box-shadow: 0 0.25rem 1.5rem rgba(0, 0, 0, 0.18);
    padding: 1rem 1.25rem; }
  .stMainBlockContainer:has(.st-key-ui_controls details[open]) {
    padding-right: 23rem !important; }
</style>
"""
CONTROLS_KEY = "ui_controls"  # presenter mode's Controls box (the class in PRESENT_CSS)


def presenting() -> bool:
    """?present=1 on any page: projector-sized type and figures, no sidebar."""
    return str(st.query_params.get("present", "")).lower() in {"1", "true", "yes"}


_PHONE_UA = ("Mobi", "Android", "iPhone", "iPad")


def phone() -> bool:
    """A phone's browser, by its User-Agent (the server never learns the viewport): the
    wide mosaics are drawn in fewer columns there. Desktop browsers at any width, and
    AppTest, are not phones; CSS (ui.chrome) handles narrow windows for everything else."""
    try:
        ua = st.context.headers.get("User-Agent") or ""
    except Exception:  # no request behind this run (AppTest, bare mode)
        return False
    return any(m in ua for m in _PHONE_UA)


def where(text: str) -> str:
    """Text that points at the sidebar, pointed at the Controls box in presenter mode
    (which has no sidebar: the controls sit in a box at the top of the page)."""
    if not presenting():
        return text
    return text.replace("in the sidebar", "under Controls at the top").replace(
        "the sidebar", "Controls at the top"
    )


def link_box() -> None:
    """A read-only box with the current URL (every control lives in it) and a copy button."""
    st.iframe(_LINK_HTML, height=44, alt="Link to this view, with a copy button")


def present_toggle_link(file: str) -> None:
    """A link to this very view with presenter mode switched on or off."""
    params = {k: st.query_params.get_all(k)[-1] for k in st.query_params if k != "present"}
    if presenting():
        st.page_link(file, label="Leave presenter mode", icon=":material/close_fullscreen:",
                     query_params=params)  # fmt: skip
    else:
        st.page_link(file, label="Presenter mode", icon=":material/co_present:",
                     query_params={**params, "present": "1"})  # fmt: skip


PROJECTOR_MIN_PX = 18  # the smallest text inside a chart in presenter mode


def _raise_fonts(node, low: int) -> None:
    """Every explicit font size in a figure's dict (ticks, axis and colour-bar titles,
    annotations such as subplot titles, legends, trace text) to at least `low` px."""
    if isinstance(node, dict):
        for k, v in node.items():
            size = v.get("size") if k.endswith("font") and isinstance(v, dict) else None
            if isinstance(size, int | float):
                v["size"] = max(size, low)
            _raise_fonts(v, low)
    elif isinstance(node, list | tuple):
        for v in node:
            _raise_fonts(v, low)


def for_projector(fig: go.Figure) -> go.Figure:
    """Bigger type and a taller plot for the back row: the base font at 20 px, titles at
    24 px, and no text smaller than PROJECTOR_MIN_PX wherever a builder set a size."""
    height = fig.layout.height or 380
    spec = fig.to_plotly_json()
    _raise_fonts(spec.get("layout", {}), PROJECTOR_MIN_PX)
    _raise_fonts(spec.get("data", []), PROJECTOR_MIN_PX)
    fig = go.Figure(spec)
    fig.update_layout(font_size=20, title_font_size=24, height=int(height * 1.3))
    # Streamlit's chart theme sizes ticks, legends and colour bars itself (12.75 px) unless
    # the figure names a size: name one everywhere.
    big, title = {"size": 20}, {"font": {"size": 22}}
    fig.update_xaxes(tickfont=big, title=title)
    fig.update_yaxes(tickfont=big, title=title)
    # a log axis labels the ticks between decades (2, 5) at three quarters of the size
    fig.update_xaxes(tickfont_size=24, selector={"type": "log"})
    fig.update_yaxes(tickfont_size=24, selector={"type": "log"})
    fig.update_layout(legend_font=big, legend_title_font=big, hoverlabel_font=big)
    # A legend across the top, in projector type, runs into a long title: below the plot,
    # where the margin grows to hold it.
    legend = fig.layout.legend
    if legend.orientation == "h" and (legend.y is None or legend.y > 0.5):
        fig.update_layout(legend=dict(y=-0.2, yanchor="top", x=0, xanchor="left"))
        bottom = (fig.layout.margin.b or 10) + 60
        fig.update_layout(height=int(fig.layout.height + 60), margin_b=bottom)
    for name in fig.layout:
        if name.startswith("coloraxis"):
            fig.layout[name].colorbar.update(tickfont=big, title=title)
    for trace in fig.data:
        if "colorbar" in trace:
            trace.colorbar.update(tickfont=big, title=title)
        if "textfont" in trace and (trace.textfont.size or 0) < PROJECTOR_MIN_PX:
            trace.textfont.size = 20
    for note in fig.layout.annotations:
        if (note.font.size or 0) < PROJECTOR_MIN_PX:
            note.font.size = 20
    return fig


def figure_csv(fig: go.Figure) -> str:
    """The numbers behind a chart, one block per trace, as CSV text."""
    out = io.StringIO()
    for i, tr in enumerate(fig.data):
        name = tr.name or f"trace {i}"
        out.write(f"# {tr.type}: {name}\n")
        z = getattr(tr, "z", None)
        if z is not None:
            z = np.asarray(z, dtype=float)
            if z.ndim == 1:
                z = z[None, :]
            cols = [str(c) for c in (tr.x if tr.x is not None else range(z.shape[1]))]
            rows = [str(r) for r in (tr.y if tr.y is not None else range(z.shape[0]))]
            out.write("row," + ",".join(cols) + "\n")
            for r, line in zip(rows, z, strict=False):
                out.write(r + "," + ",".join(f"{x:.6g}" for x in line) + "\n")
            continue
        cols = {a: getattr(tr, a, None) for a in ("x", "y")}
        cols = {a: np.asarray(c).ravel() for a, c in cols.items() if c is not None}
        if not cols:
            continue
        n = max(len(c) for c in cols.values())
        out.write(",".join(cols) + "\n")
        for j in range(n):
            out.write(",".join(str(c[j]) if j < len(c) else "" for c in cols.values()) + "\n")
    return out.getvalue()


def csv_name(title: str) -> str:
    """A file name from a chart title: 'Who attends — d_k = 64' -> who-attends-d_k-64.csv"""
    slug = re.sub(r"[^A-Za-z0-9_]+", "-", title).strip("-").lower()[:60]
    return f"{slug or 'chart'}.csv"
