"""Where a chart's time goes: `python bench/charts.py [--rounds 8] [--app]`. Tables, no asserts.

(a) presses: each variant of bench/chart_app.py (one chart kind per page) in a fresh browser
    context; key presses on its slider alternate with presses on the bare one-slider page
    (bench/bare_app.py), both served with Streamlit's stock runner settings. Per variant: the
    figure's JSON size (what st.plotly_chart sends), key press -> rerun finished p50 beside the
    bare page's, and the renderer's main-thread time per press from the browser's own counters
    (CDP Performance.getMetrics before and after each press: all tasks, of which script,
    layout and style recalculation). A press's window includes 400 ms of quiet and the
    harness's polling; variant `none` (no chart) is that floor.
(b) cold loads: navigation -> the first run finished in a fresh context (bench/run.py's
    `_load_s`), the server's first visit and a second one, split with the browser's network
    events: DOMContentLoaded, the first websocket message (the page's own JS has loaded and
    connected; the run has started), the last one (the run finished on the server), drawn.
    `--app` adds app pages.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FLAGS = ("--runner.postScriptGC=true",)  # stock Streamlit, as bench/run.py's yardstick
METRICS = ("TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration")
CHART = '[data-testid="stPlotlyChart"] .main-svg'
SLIDER = '[data-testid="stSlider"]'
APP_PAGES = ("", "scaling", "heads", "model")
# The last DOM change: plotly draws after the rerun's last message, so "drawn" is key press ->
# the last mutation (its observer runs right after the script that made it).
_MUTATIONS = """() => { window.__lastMut = 0;
  new MutationObserver(() => { window.__lastMut = performance.now(); }).observe(document.body,
    {subtree: true, childList: true, attributes: true, characterData: true}); }"""


def chart_app():
    """bench/chart_app.py as a module (its Streamlit part runs only under `streamlit run`)."""
    spec = importlib.util.spec_from_file_location("chart_app", ROOT / "bench" / "chart_app.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _metrics(cdp) -> dict[str, float]:
    got = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    return {k: got[k] * 1000 for k in METRICS}  # seconds -> ms


def _js_split(page, cdp, presses: int = 4) -> dict[str, float]:
    """JS ms per press from a CPU profile (CDP Profiler), plotly's chunk against the rest."""
    from tests.support.browser import rerun_latency_ms

    cdp.send("Profiler.enable")
    cdp.send("Profiler.start")
    for i in range(presses):
        rerun_latency_ms(page, key="ArrowRight" if i % 2 == 0 else "ArrowLeft")
    prof = cdp.send("Profiler.stop")["profile"]
    url = {n["id"]: n["callFrame"]["url"] for n in prof["nodes"]}
    ms = collections.Counter()
    for node, dt in zip(prof["samples"], prof["timeDeltas"], strict=True):
        ms["plotly" if "PlotlyChart" in url[node] else "js" if url[node] else "-"] += dt / 1e3
    return dict(plotly=ms["plotly"] / presses, js=ms["js"] / presses)


def _presses(page, bare, cdp, rounds: int) -> dict[str, float]:
    """Alternate presses on the bare page and the variant; p50s and main-thread ms/press."""
    from tests.support.browser import rerun_latency_ms

    for key in ("ArrowRight", "ArrowLeft"):  # warm-up, not counted (JIT, plotly's first react)
        rerun_latency_ms(bare, key=key)
        rerun_latency_ms(page, key=key)
    p, q, drawn, cpu = [], [], [], {k: [] for k in METRICS}
    for i in range(rounds):
        key = "ArrowRight" if i % 2 == 0 else "ArrowLeft"  # two values, back and forth
        q.append(rerun_latency_ms(bare, key=key))
        before = _metrics(cdp)
        p.append(rerun_latency_ms(page, key=key))
        after = _metrics(cdp)
        drawn.append(page.evaluate("() => window.__lastMut - window.__t0"))
        for k in METRICS:
            cpu[k].append(after[k] - before[k])
    med = statistics.median
    cpu = {k: med(v) for k, v in cpu.items()}
    return dict(page=med(p), bare=med(q), drawn=med(drawn), **cpu, **_js_split(page, cdp))


def _variant(b, bare, url: str, n_charts: int, rounds: int) -> dict[str, float]:
    from tests.support.browser import open_page, wait_charts

    page, errors = open_page(b, url, ready=None)
    if n_charts:
        wait_charts(page, n_charts)
    page.evaluate(_MUTATIONS)
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable")
    result = _presses(page, bare, cdp, rounds)
    page.context.close()
    if errors:
        print(f"  page errors: {errors[:3]}")
    return result


def bench_presses(b, bare_url: str, chart_url: str, rounds: int, variants) -> None:
    from tests.support.browser import open_page

    app = chart_app()
    print(f"\n(a) key press -> rerun finished, {rounds} presses per variant, alternating with")
    print("the bare page; main-thread ms per press on the variant's renderer (CDP)")
    head = f"{'variant':<17} {'JSON KB':>7} {'p50':>6} {'bare':>6} {'ratio':>5} {'extra':>6}"
    head += f" {'-none':>6} {'drawn':>6} {'task':>6} {'script':>6} {'layout':>6} {'style':>5}"
    print(f"{head} {'plotly':>6} {'others':>6}")
    print("-" * 111)
    bare, _ = open_page(b, bare_url, ready=None)
    floor = None
    for name in variants:
        figs = app.build(name, 50)
        kb = sum(len(f.to_json()) for f in figs) / 1024
        r = _variant(b, bare, f"{chart_url}/?variant={name}", len(figs), rounds)
        extra = r["page"] - r["bare"]
        floor = extra if name == "none" else floor
        over = f"{extra - floor:>6.0f}" if floor is not None else f"{'':>6}"
        print(
            f"{name:<17} {kb:>7.1f} {r['page']:>4.0f}ms {r['bare']:>4.0f}ms"
            f" {r['page'] / r['bare']:>5.2f} {extra:>6.0f} {over} {r['drawn']:>6.0f}"
            + "".join(f" {r[k]:>6.0f}" for k in METRICS[:3])
            + f" {r['RecalcStyleDuration']:>5.0f} {r['plotly']:>6.0f} {r['js']:>6.0f}",
            flush=True,
        )
    bare.context.close()
    print(
        "p50/bare: ms, key press -> last message of the rerun; extra: p50 - bare; -none: extra"
        " minus variant none's (the chart's own cost); drawn: key press -> last DOM change;"
        " task/script/layout/style: renderer main-thread ms per press (p50, CDP metrics), each"
        " press's window includes 400 ms of quiet; plotly/others: JS ms per press in a CPU"
        " profile of 4 more presses, in plotly's chunk / in Streamlit's other scripts"
    )


def _load(b, url: str, ready: str) -> dict[str, float]:
    """One cold load in a fresh context: seconds, and its split in ms from navigation."""
    from tests.support.browser import IDLE

    context = b.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    net = context.new_cdp_session(page)
    net.send("Network.enable")
    frames, doc = [], []
    net.on("Network.webSocketFrameReceived", lambda e: frames.append(e["timestamp"]))
    net.on(
        "Network.requestWillBeSent",
        lambda e: doc.append((e["timestamp"], e["wallTime"])) if e.get("type") == "Document" else 0,
    )
    t = time.perf_counter()
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_selector(ready, state="attached", timeout=120_000)
    page.wait_for_selector(IDLE, state="attached", timeout=120_000)
    took = time.perf_counter() - t
    js = "() => [performance.timeOrigin + performance.now(), performance.getEntriesByType("
    drawn, dcl = page.evaluate(js + "'navigation')[0].domContentLoadedEventEnd]")
    context.close()
    (t0, wall0), last = doc[0], max(f for f in frames if f >= doc[0][0])
    first = min(f for f in frames if f >= t0)
    return dict(
        s=took, dcl=dcl, first=(first - t0) * 1e3, run=(last - first) * 1e3,
        drawn=drawn - wall0 * 1e3 - (last - t0) * 1e3,
    )  # fmt: skip


def _print_load(name: str, visit: str, r: dict[str, float]) -> None:
    print(
        f"{name:<26} {visit:<6} {r['s']:>6.2f}s {r['dcl']:>6.0f} {r['first']:>8.0f}"
        f" {r['run']:>8.0f} {r['drawn']:>8.0f}",
        flush=True,
    )


def bench_loads(b, pages: list[tuple[str, str, str]]) -> None:
    """`pages`: (name, url, selector drawn by the first run), each loaded twice."""
    for name, url, ready in pages:
        _print_load(name, "first", _load(b, url, ready))
        _print_load(name, "again", _load(b, url, ready))


def _load_head() -> None:
    print("\n(b) cold load, navigation -> first run finished, fresh browser context")
    print(
        f"{'page':<26} {'visit':<6} {'load':>7} {'DCL':>6} {'1st msg':>8} {'run':>8} {'drawn':>8}"
    )
    print("-" * 76)


def cli() -> None:  # not `main`: bench/run.py's pages part runs every bench/*.py main()
    from tests.support.browser import chromium, streamlit_server

    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--app", action="store_true", help="also load app pages (/, /scaling …)")
    ap.add_argument("--variants", nargs="*", help="bench/chart_app.py variants (default: all)")
    a = ap.parse_args()
    variants = a.variants or list(chart_app().BUILDERS)
    start = time.perf_counter()
    with chromium() as b:
        bare = streamlit_server("bench/bare_app.py", flags=FLAGS)
        charts = streamlit_server("bench/chart_app.py", flags=FLAGS)
        with bare as bare_url, charts as chart_url:
            _load_head()
            bench_loads(b, [
                ("bare page", bare_url, SLIDER),
                ("chart app, no chart", f"{chart_url}/?variant=none", SLIDER),
                ("chart app, heat8", f"{chart_url}/?variant=heat8", CHART),
            ])  # fmt: skip
            if a.app:
                with streamlit_server() as app_url:
                    bench_loads(b, [(f"/{p}", f"{app_url}/{p}", "[data-testid='stMain'] h1")
                                    for p in APP_PAGES])  # fmt: skip
            print(
                "load: s; DCL, 1st msg: ms from navigation; run: 1st -> last websocket message"
                " (the server's run); drawn: last message -> done (ms)"
            )
            bench_presses(b, bare_url, chart_url, a.rounds, variants)
    print(f"\nwall time {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    cli()
