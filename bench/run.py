"""Benchmarks. `python bench/run.py` prints tables; nothing here asserts on time.

(a) kernels: `attention` beside the plain three-op composition
    softmax(q @ kᵀ · s) @ v, and `fused_attention` beside F.scaled_dot_product_attention,
    at T ∈ {64, 256, 1024}, 8 heads, d_k = 64, on the current device. Timings are
    interleaved (A, B, A, B, …) so machine noise hits both sides alike; ratios are
    medians of per-round ratios.
(b) latency: for every slider of every page (the sidebar's in the default step,
    each step's own sliders in that step, and the heavy views the issues name),
    the median key press → rerun finished time in headless Chromium, next to a
    bare one-slider page served at the same time and measured alternately.
    The bare page is stock Streamlit: served with Streamlit's default runner
    settings, so it runs the full gc.collect() after every rerun that this app's
    .streamlit/config.toml turns off (postScriptGC = false, for a class's load).
    That collection is ~25 ms of the bare page's ~45 ms. `--yardstick app` serves
    the bare page with the app's settings instead (a like-for-like floor, ~18 ms).
(c) page-specific benchmarks in bench/<page>.py, when present (main() prints a table).

Options: --only kernels|latency|pages, --rounds N, --pages scaling cost … and
--yardstick stock|app (latency only).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import quote_plus, unquote_plus

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from attn_core import attention, device_label, fused_attention, pick_device  # noqa: E402

# Extra views per page (query strings) that the issues ask to be measured.
HEAVY_VIEWS = {
    "scaling": ["d_k=1024&tokens=64"],
    "multi-head": ["d_model=1024&heads=16&tokens=64"],
    "model": ["step=Contribution", "step=Knobs&scaled=false"],
}


def _time(fn, sync) -> float:
    sync()
    t = time.perf_counter()
    fn()
    sync()
    return time.perf_counter() - t


def _candidates(q, k, v) -> dict:
    s = q.shape[-1] ** -0.5
    return {
        "attention": lambda: attention(q, k, v),
        "3-op": lambda: torch.softmax(q @ k.transpose(-2, -1) * s, -1) @ v,
        "fused": lambda: fused_attention(q, k, v),
        "SDPA": lambda: F.scaled_dot_product_attention(q, k, v),
    }


def _repeat(fn, n: int):
    def run():
        for _ in range(n):
            fn()

    return run


def bench_kernels(rounds: int) -> None:
    dev = pick_device()
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    print(f"\n(a) kernels on {device_label(dev)}, torch {torch.__version__}, B=1, h=8, d_k=64")
    head = f"{'attention':>10} {'3-op':>10} {'ratio':>6} | {'fused':>10} {'SDPA':>10} {'ratio':>6}"
    print(f"{'T':>6} | {head}")
    print("-" * 72)
    for T in (64, 256, 1024):
        g = torch.Generator().manual_seed(0)
        q, k, v = (torch.randn(1, 8, T, 64, generator=g).to(dev) for _ in range(3))
        inner = max(1, int(2e8 // (T * T * 64 * 8)))  # keep each sample ~ms long
        fns = {name: _repeat(fn, inner) for name, fn in _candidates(q, k, v).items()}
        times = {name: [] for name in fns}
        with torch.no_grad():
            for fn in fns.values():  # warm up
                fn()
            for _ in range(rounds):
                for name, fn in fns.items():
                    times[name].append(_time(fn, sync) / inner)
        med = {n: statistics.median(t) for n, t in times.items()}
        r1 = statistics.median(
            a / b for a, b in zip(times["attention"], times["3-op"], strict=True)
        )
        r2 = statistics.median(a / b for a, b in zip(times["fused"], times["SDPA"], strict=True))
        print(
            f"{T:>6} | {med['attention'] * 1e3:>8.3f}ms {med['3-op'] * 1e3:>8.3f}ms {r1:>6.2f} |"
            f" {med['fused'] * 1e3:>8.3f}ms {med['SDPA'] * 1e3:>8.3f}ms {r2:>6.2f}"
        )


def _views() -> list[tuple[str, str]]:
    from ui.lesson import available

    views = []
    for lesson in available():
        views.append((lesson.url_path, ""))
        views += [(lesson.url_path, qs) for qs in HEAVY_VIEWS.get(lesson.url_path, [])]
    return views


def _load_s(browser, url: str) -> float:
    """Seconds from navigation to the first run finished (the title drawn, the script
    idle), in a fresh browser context."""
    from tests.support.browser import IDLE

    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    t = time.perf_counter()
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_selector('[data-testid="stMain"] h1', state="attached", timeout=120_000)
    page.wait_for_selector(IDLE, state="attached", timeout=120_000)
    took = time.perf_counter() - t
    context.close()
    return took


def _press_pairs(page, bare, rounds: int, index: int, within: str) -> tuple[float, float]:
    """Alternate presses on the bare page and on one slider of `page`; return both p50s."""
    from tests.support.browser import rerun_latency_ms

    p, q = [], []
    for i in range(rounds):
        key = "ArrowRight" if i % 2 == 0 else "ArrowLeft"  # two values, back and forth
        q.append(rerun_latency_ms(bare, key=key))
        p.append(rerun_latency_ms(page, index, key=key, within=within))
    return statistics.median(p), statistics.median(q)


# Streamlit's defaults for the settings .streamlit/config.toml changes for speed.
STOCK = ("--runner.postScriptGC=true",)


def bench_latency(rounds: int, pages: list[str] | None = None, yardstick: str = "stock") -> None:
    """Every slider of every step: the sidebar's in the default step (where a link lands),
    each step's own sliders in that step."""
    from tests.support.browser import (
        MAIN_SLIDERS,
        SIDEBAR_SLIDERS,
        chromium,
        open_page,
        step_labels,
        streamlit_server,
    )

    print(
        "\n(b) rerun latency, key press -> rerun finished, headless Chromium,"
        f" {rounds} presses per slider, alternating with the bare one-slider page"
        f" ({'stock Streamlit settings' if yardstick == 'stock' else 'the app settings'})"
    )
    print(f"{'view':<44} {'slider':<34} {'page':>6} {'bare':>6} {'ratio':>6}")
    print("-" * 100)
    summary = []
    flags = STOCK if yardstick == "stock" else ()
    with (
        streamlit_server() as app_url,
        streamlit_server("bench/bare_app.py", flags=flags) as bare_url,
        chromium() as b,
    ):
        bare, _ = open_page(b, bare_url, ready=None)
        for path, qs in _views():
            if pages is not None and path not in pages:
                continue
            base = f"{app_url}/{path}"
            url = base + (f"?{qs}" if qs else "")
            loads = (_load_s(b, url), _load_s(b, url))  # this server's first visit, then again
            page, _ = open_page(b, url)
            steps = step_labels(page)
            targets = [(qs, SIDEBAR_SLIDERS), (qs, MAIN_SLIDERS)]
            targets += [
                ("&".join(x for x in (qs, f"step={quote_plus(s)}") if x), MAIN_SLIDERS)
                for s in steps[1:]
            ]
            page.context.close()
            ratios = []
            for view_qs, within in targets:
                page, _ = open_page(b, base + (f"?{view_qs}" if view_qs else ""))
                sliders = page.locator(within)
                name = f"/{path}" + (f"?{unquote_plus(view_qs)}" if view_qs else "")
                for i in range(sliders.count()):
                    label = page.locator(within.replace(' input[type="range"]', "")).nth(i)
                    label = label.inner_text().split("\n")[0][:33]
                    pm, qm = _press_pairs(page, bare, rounds, i, within)
                    ratios.append(pm / qm)
                    print(f"{name[:44]:<44} {label:<34} {pm:>4.0f}ms {qm:>4.0f}ms {pm / qm:>6.2f}")
                page.context.close()
            if ratios:
                summary.append((f"/{path}" + (f"?{qs}" if qs else ""), ratios, loads))
    print(
        f"\n{'view':<44} {'sliders':>7} {'first':>6} {'median':>7} {'worst':>6}"
        f" {'cold load':>10} {'load':>6}"
    )
    for name, ratios, (cold, warm) in summary:
        med = statistics.median(ratios)
        print(
            f"{name[:44]:<44} {len(ratios):>7} {ratios[0]:>6.2f} {med:>7.2f} {max(ratios):>6.2f}"
            f" {cold:>9.2f}s {warm:>5.2f}s"
        )
    print(
        "ratios: key press -> rerun finished against the bare page (first slider, median and "
        "worst over all sliders); cold load: navigation -> first run finished, the server's "
        "first visit to the view; load: the same in a second fresh browser context"
    )


def bench_pages() -> None:
    for script in sorted((ROOT / "bench").glob("*.py")):
        skip = {"run.py", "bare_app.py", "load.py", "jobs.py", "cloud_rehearsal.py", "classroom.py"}
        if script.name in skip | {"chart_app.py", "charts.py"}:  # their own long runs
            continue
        spec = importlib.util.spec_from_file_location(f"bench_{script.stem}", script)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        if hasattr(mod, "main"):
            print(f"\n(c) bench/{script.name}")
            mod.main()


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--only", choices=["kernels", "latency", "pages"])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--pages", nargs="*", help="url paths for the latency table (default: all)")
    ap.add_argument(
        "--yardstick", choices=["stock", "app"], default="stock", help="the bare page's settings"
    )
    a = ap.parse_args()
    if a.only in (None, "kernels"):
        bench_kernels(a.rounds)
    if a.only in (None, "latency"):
        bench_latency(a.rounds, a.pages, a.yardstick)
    if a.only in (None, "pages"):
        bench_pages()


if __name__ == "__main__":
    main()
