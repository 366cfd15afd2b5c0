"""Deploy rehearsal for Streamlit Community Cloud (issue 21), run on this machine.

`python bench/cloud_rehearsal.py [--keep] [--reuse DIR] [--python PY]`

1. Builds a fresh venv in a temporary folder (`python -m venv`) and pip-installs
   cloud/requirements.txt into it, minus its `--extra-index-url` line for PyTorch's CPU
   index (unreachable from here) and with torch's `+cpu` label dropped (`torch==2.13.0`, a
   plain pin, matches the local CPU wheel as well: PEP 440 ignores a candidate's local
   label when the pin has none). It checks that no CUDA stack came along (no nvidia-* or
   triton package, torch.version.cuda is None) and measures the venv (du, MB).
2. Starts the app the way Community Cloud does: `streamlit run cloud/streamlit_app.py`
   from the repository root, with the venv's `streamlit` script (not `python -m
   streamlit`, which would put the working directory on sys.path and hide a broken
   entrypoint), no PYTHONPATH, headless on 127.0.0.1 and a free port, with the settings
   Community Cloud forces on every app (its docs' "Status and limitations" page). It times
   start -> `/_stcore/health` answering `ok`.
3. Opens the lesson (ui.lesson.available(), in order) in Debian's Chromium through
   Playwright, run from *this* interpreter (the system python), as one session: it loads
   the home page, then follows each page's "Next lesson:" link (in-app navigation keeps
   the same websocket session). On every page it waits until the script is idle and the page has
   stopped changing, then checks: the page's title, no `stException`, at least one plotly
   chart drawn (where a page holds its first chart back until a prediction, as /positions,
   /cost and /alternatives rightly do, it answers and reveals first, and the note says so),
   no JavaScript error.
4. Reads the server's VmRSS (now) and VmHWM (peak) from /proc/<pid>/status once idle after
   start and again after the last page.

It prints a table (venv MB, install seconds, seconds to healthy, each page's result and
chart count, RSS after all pages, peak) and exits non-zero on any failure. `--fail-over-mb
N` also fails when RSS after all pages is above N MB (e.g. 690, Community Cloud's smallest
memory figure). Nothing here is run by the test suite: it installs a venv (minutes, ~1 GB).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.browser import (  # noqa: E402
    chromium,
    free_port,
    plotly_count,
    reveal_held_back,
    settle,
)
from tests.support.browser import stop as stop_server  # noqa: E402
from ui.lesson import Lesson, available  # noqa: E402

CLOUD_REQS = ROOT / "cloud" / "requirements.txt"
ENTRYPOINT = "cloud/streamlit_app.py"  # relative to the repository root, as on Cloud
EXCEPTION = '[data-testid="stException"]'
CHART = '[data-testid="stPlotlyChart"] .main-svg'
# What Community Cloud sets on every app, overriding .streamlit/config.toml (docs: "Status
# and limitations"). gatherUsageStats stays off here: there is no network to send it to.
CLOUD_FLAGS = (
    "--client.showErrorDetails=false",
    "--runner.fastReruns=true",
    "--server.runOnSave=true",
    "--server.enableXsrfProtection=true",
)
H1_IS = """(t) => [...document.querySelectorAll('[data-testid="stMain"] h1')]
  .some(h => h.innerText.trim() === t)"""


def local_requirements(text: str) -> str:
    """The Cloud file as this machine can install it: no PyTorch index line, torch's +cpu
    label dropped. Everything else stays exactly as written."""
    out = []
    for line in text.splitlines():
        bare = line.split("#", 1)[0].strip()
        if re.match(r"^(--extra-index-url|--index-url|-i)\b", bare) and (
            "download.pytorch.org" in bare
        ):
            out.append(f"# (rehearsal) dropped: {bare}")
            continue
        out.append(re.sub(r"^(torch\s*==\s*[^+\s;#]+)\+cpu\b", r"\1", line))
    return "\n".join(out) + "\n"


def run(cmd: list[str], log: Path, **kw) -> float:
    """Run cmd, its output into log; return seconds; raise with the log's tail on failure."""
    t = time.monotonic()
    with log.open("ab") as f:
        f.write(f"\n$ {' '.join(map(str, cmd))}\n".encode())
        f.flush()
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, **kw).returncode
    if rc:
        tail = log.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{cmd[0]} … exited {rc}; the end of {log}:\n{tail}")
    return time.monotonic() - t


def du_mb(path: Path) -> float:
    out = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0]) / 1024


def proc_mem_mb(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM of a process, in MB."""
    mem = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            mem[key] = int(value.split()[0]) / 1024
    return mem


def build_venv(venv: Path, python: str, log: Path) -> dict:
    """A fresh venv with the Cloud file (as local_requirements rewrites it) installed."""
    reqs = venv.parent / "requirements-cloud-local.txt"
    reqs.write_text(local_requirements(CLOUD_REQS.read_text()))
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1")
    t_venv = run([python, "-m", "venv", str(venv)], log)
    t_pip = run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-r", str(reqs)], log, env=env
    )
    return {"venv_s": t_venv, "pip_s": t_pip, **inspect_venv(venv)}


def inspect_venv(venv: Path) -> dict:
    """Its size, its torch build, and any CUDA package that came along."""
    py = str(venv / "bin" / "python")
    listed = subprocess.run(
        [py, "-m", "pip", "list", "--format=json"], capture_output=True, text=True, check=True
    )
    names = sorted(p["name"].lower() for p in json.loads(listed.stdout))
    code = "import json, torch; print(json.dumps([torch.__version__, torch.version.cuda]))"
    probe = subprocess.run([py, "-c", code], capture_output=True, text=True, check=True)
    torch_version, cuda = json.loads(probe.stdout)
    return {
        "mb": du_mb(venv),
        "torch": torch_version,
        "cuda": cuda,
        "cuda_packages": [n for n in names if n.startswith("nvidia-") or n == "triton"],
        "packages": len(names),
    }


def start_server(venv: Path, port: int, log: Path) -> tuple[subprocess.Popen, float]:
    """`streamlit run cloud/streamlit_app.py` from the root; wait for health == ok."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    cmd = [
        str(venv / "bin" / "streamlit"), "run", ENTRYPOINT,
        "--server.address=127.0.0.1", f"--server.port={port}", "--server.headless=true",
        "--browser.gatherUsageStats=false", *CLOUD_FLAGS,
    ]  # fmt: skip
    t = time.monotonic()
    out = log.open("ab")
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    out.close()  # the child holds its own copy
    url = f"http://127.0.0.1:{port}/_stcore/health"
    deadline = t + 180
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200 and r.read().decode().strip() == "ok":
                    return proc, time.monotonic() - t
        except OSError:
            pass
        if time.monotonic() > deadline:
            stop_server(proc)
            raise TimeoutError(f"not healthy in 180 s:\n{log.read_text()[-3000:]}")
        time.sleep(0.25)


def check_page(page, lesson: Lesson, errors: list[str], via: str, t0: float) -> dict:
    row = {"page": f"/{lesson.url_path}", "via": via, "ok": False, "charts": 0, "note": ""}
    try:
        page.wait_for_function(H1_IS, arg=lesson.h1, timeout=60_000)
        settle(page)
        if page.locator(EXCEPTION).count():
            row["note"] = "exception: " + page.locator(EXCEPTION).first.inner_text()[:200]
            return row
        if revealed := reveal_held_back(page):  # its chart waits for a first prediction
            settle(page)
            row["note"] = f"{revealed} prediction(s) made to see the chart; "
        page.wait_for_selector(CHART, timeout=30_000)
        row["charts"] = plotly_count(page)
        if errors:
            row["note"] += "js error: " + "; ".join(errors)[:200]
            return row
        row["ok"] = row["charts"] >= 1
        if not row["ok"]:
            row["note"] += "no chart drawn"
    except Exception as e:  # a timeout is this page's failure, not the run's end
        row["note"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    finally:
        row["s"] = time.monotonic() - t0
        errors.clear()
    return row


def visit_lesson(base: str) -> list[dict]:
    """Every page in one browser session: home, then each page's Next link."""
    lessons = available()
    rows = []
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        t0 = time.monotonic()
        page.goto(f"{base}/{lessons[0].url_path}", wait_until="domcontentloaded")
        page.wait_for_selector('[data-testid="stApp"]', timeout=60_000)
        rows.append(check_page(page, lessons[0], errors, "url", t0))
        for lesson in lessons[1:]:
            t0 = time.monotonic()
            link = page.locator("a", has_text=f"Next lesson: {lesson.title}").first
            if link.count():
                link.click()
                via = "Next link"
            else:  # a new session: say so in the table
                page.goto(f"{base}/{lesson.url_path}", wait_until="domcontentloaded")
                via = "url (no Next link)"
            rows.append(check_page(page, lesson, errors, via, t0))
        context.close()
    return rows


def rehearse() -> int:
    # Not named main(): bench/run.py's page tables call main() of every bench/*.py.
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", default=sys.executable, help="interpreter for the venv")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("--reuse", type=Path, help="a venv from an earlier --keep run: no install")
    ap.add_argument("--fail-over-mb", type=float, default=0, help="fail if RSS after pages > N")
    a = ap.parse_args()

    failures: list[str] = []
    tmp = Path(tempfile.mkdtemp(prefix="cloud-rehearsal-"))
    log = tmp / "rehearsal.log"
    print(f"working in {tmp} (log: {log})", flush=True)
    proc = None
    try:
        if a.reuse:
            venv = a.reuse.resolve()
            print(f"reusing {venv} (no install)", flush=True)
            inst = {"venv_s": 0.0, "pip_s": 0.0, **inspect_venv(venv)}
        else:
            venv = tmp / "venv"
            print("building the venv from cloud/requirements.txt …", flush=True)
            inst = build_venv(venv, a.python, log)
        if inst["cuda_packages"] or inst["cuda"]:
            failures.append(
                f"a CUDA stack was installed: cuda={inst['cuda']}, {inst['cuda_packages']}"
            )
        port = free_port()
        proc, healthy_s = start_server(venv, port, log)
        time.sleep(1)
        idle = proc_mem_mb(proc.pid)
        rows = visit_lesson(f"http://127.0.0.1:{port}")
        time.sleep(1)
        after = proc_mem_mb(proc.pid)
        if proc.poll() is not None:
            failures.append(f"the server exited ({proc.returncode}) during the visit")
        failures += [f"{r['page']}: {r['note'] or 'failed'}" for r in rows if not r["ok"]]
        if a.fail_over_mb and after["VmRSS"] > a.fail_over_mb:
            failures.append(
                f"RSS after all pages {after['VmRSS']:.0f} MB > {a.fail_over_mb:.0f} MB"
            )
    except Exception as e:
        failures.append(f"{type(e).__name__}: {e}")
        print(f"\nFAILED: {e}\n(log kept: {log})", file=sys.stderr)
        return 1
    finally:
        if proc is not None:
            stop_server(proc)
        if a.keep:
            print(f"kept {tmp}")
        elif failures:  # keep the log for a look, drop the venv (~1 GB)
            shutil.rmtree(tmp / "venv", ignore_errors=True)
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    print("\nCommunity Cloud rehearsal")
    print(f"  entrypoint            {ENTRYPOINT} (from {ROOT})")
    print(f"  torch                 {inst['torch']} (cuda: {inst['cuda']}), "
          f"{inst['packages']} packages")  # fmt: skip
    print(f"  venv size             {inst['mb']:8.0f} MB")
    print(f"  install               {inst['venv_s'] + inst['pip_s']:8.1f} s "
          f"(venv {inst['venv_s']:.1f} s + pip {inst['pip_s']:.1f} s)")  # fmt: skip
    print(f"  start -> healthy      {healthy_s:8.1f} s")
    print(f"  RSS when healthy      {idle['VmRSS']:8.0f} MB (no session yet)")
    print(f"\n  {'page':<15} {'via':<19} {'ok':<4} {'charts':>6} {'s':>6}  note")
    for r in rows:
        ok = "ok" if r["ok"] else "FAIL"
        cells = f"{r['page']:<15} {r['via']:<19} {ok:<4} {r['charts']:>6} {r['s']:>6.1f}"
        print(f"  {cells}  {r['note']}")
    print(f"\n  RSS after all pages   {after['VmRSS']:8.0f} MB (one session, every page)")
    print(f"  peak RSS (VmHWM)      {after['VmHWM']:8.0f} MB")
    print(f"  under 690 MB          {'yes' if after['VmRSS'] <= 690 else 'no'}")
    if failures:
        print("\nFAILED:\n  " + "\n  ".join(failures))
        if not a.keep:
            print(f"(the server's log is kept: {log})")
        return 1
    print("\nall pages ok")
    return 0


if __name__ == "__main__":
    sys.exit(rehearse())
