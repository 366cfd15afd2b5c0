#!/usr/bin/env bash
# The GPU path in one short run (issue 21): on a machine with an NVIDIA GPU, from the
# repository root,
#
#     bash bench/gpu_check.sh            # logs in $OUT if set, else ./gpu_out
#
# 1. env      nvidia-smi, python, torch and its CUDA build
# 2. deps     the requirements, keeping an installed CUDA torch: when torch already sees a
#             GPU, torch is left out of the install (its pin is the CPU wheel's version; the
#             summary says when the CUDA build is another version). Browser and lint tools
#             (playwright, ruff) are left out: no step here uses them. With no network, put
#             wheels in ./.whl and they are installed from there (--no-index).
# 3. core     the core tests (tests/core/, tests/*/test_core.py) with ATTN_DEVICE=cuda
# 4. apptest  every lesson page through AppTest (app.py's navigation) on cuda: no
#             exception, and the page's device badge names the GPU
# 5. kernels  python bench/run.py --only kernels (attention vs 3-op, fused vs SDPA, on cuda)
#
# Each step runs under `timeout`; the worst case is about 8 minutes (override T_* below).
# Ends with one PASS/FAIL line per step, and exits non-zero if any step failed.
set -u
cd "$(dirname "$0")/.."

LOG_DIR="${OUT:-./gpu_out}"
mkdir -p "$LOG_DIR"
PY="${PYTHON:-$(command -v python3 || command -v python)}"
T_ENV="${T_ENV:-60}" T_DEPS="${T_DEPS:-120}" T_CORE="${T_CORE:-120}"
T_APPTEST="${T_APPTEST:-150}" T_KERNELS="${T_KERNELS:-60}"
export PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1
declare -a SUMMARY=()
FAILED=0

step() {  # step NAME SECONDS COMMAND...: run it with a timeout, log it, record PASS/FAIL
  local name=$1 limit=$2
  shift 2
  local log="$LOG_DIR/$name.log" start rc
  start=$(date +%s)
  echo "=== $name (limit ${limit}s)"
  # a child bash, so that the step can be one of the (exported) functions below
  timeout --kill-after=10 "$limit" bash -c '"$@"' step "$@" >"$log" 2>&1
  rc=$?
  local took=$(( $(date +%s) - start ))
  tail -n 25 "$log"
  if [ "$rc" -eq 0 ]; then
    SUMMARY+=("PASS  $name  (${took}s)")
  else
    [ "$rc" -eq 124 ] && rc="timeout after ${limit}s"
    SUMMARY+=("FAIL  $name  (${took}s, exit $rc; see $log)")
    FAILED=1
  fi
}

env_info() {
  nvidia-smi || echo "nvidia-smi: not available"
  "$PY" - <<'EOF'
import sys
import torch
print("python", sys.version.split()[0], sys.executable)
print("torch", torch.__version__, "| CUDA build", torch.version.cuda,
      "| cuda available", torch.cuda.is_available())
if torch.cuda.is_available():
    print("device", torch.cuda.get_device_name(0), "| capability", torch.cuda.get_device_capability(0))
assert torch.cuda.is_available(), "torch sees no GPU: the rest would run on the CPU"
EOF
}

install_deps() {
  local reqs
  reqs=$(mktemp)
  if "$PY" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    echo "torch $("$PY" -c 'import torch; print(torch.__version__)') sees the GPU: kept"
    grep -viE '^[[:space:]]*torch[[:space:]]*([=<>!~;[]|$)' requirements.txt >"$reqs"
  else
    echo "no CUDA torch here: installing requirements.txt as it is (CPU torch)"
    cat requirements.txt >"$reqs"
  fi
  # requirements-dev.txt without its -r line (included above) and without browser/lint tools
  grep -vE '^[[:space:]]*(-r|playwright|ruff)' requirements-dev.txt >>"$reqs"
  echo "--- installing:"
  grep -vE '^[[:space:]]*(#|$)' "$reqs"
  local src=()
  [ -d .whl ] && src=(--no-index --find-links .whl)
  "$PY" -m pip install -q "${src[@]}" -r "$reqs"
  local rc=$?
  rm -f "$reqs"
  "$PY" -c "import streamlit, plotly, pytest, hypothesis, torch; \
print('streamlit', streamlit.__version__, '| plotly', plotly.__version__, '| torch', torch.__version__)"
  return $rc
}

core_tests() {
  # shellcheck disable=SC2046
  ATTN_DEVICE=cuda "$PY" -m pytest -q -p no:cacheprovider tests/core $(ls tests/*/test_core.py)
}

apptest_smoke() {
  ATTN_DEVICE=cuda "$PY" - <<'EOF'
import time

from tests.support.apptest import run_page
from ui.lesson import available

bad = 0
for lesson in available():
    t = time.monotonic()
    try:
        at = run_page(lesson.file, timeout=120)
        problems = [str(e.value)[:300] for e in at.exception]
        badge = [c.value for c in at.caption if "Computed live by PyTorch" in c.value]
        if not any("GPU" in b for b in badge):
            problems.append(f"device badge does not name the GPU: {badge}")
        warnings = [w.value for w in at.warning if "ATTN_DEVICE" in w.value]
        problems += warnings
    except Exception as e:  # a page that cannot even run
        problems = [f"{type(e).__name__}: {e}"[:300]]
    ok = not problems
    bad += not ok
    print(f"{'PASS' if ok else 'FAIL'}  {lesson.file:<24} {time.monotonic() - t:6.1f}s  {problems}")
raise SystemExit(1 if bad else 0)
EOF
}

export PY LOG_DIR
export -f env_info install_deps core_tests apptest_smoke

step env "$T_ENV" env_info
step deps "$T_DEPS" install_deps
step core "$T_CORE" core_tests
step apptest "$T_APPTEST" apptest_smoke
step kernels "$T_KERNELS" env ATTN_DEVICE=cuda "$PY" bench/run.py --only kernels

{
  echo "=== summary ($(date -u +%FT%TZ), $("$PY" -c 'import torch; print("torch", torch.__version__)' 2>&1))"
  pin=$(grep -iE '^torch==' requirements.txt | head -n1)
  have=$("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null)
  [ -n "$pin" ] && [ "${have%%+*}" != "${pin#*==}" ] &&
    echo "note  requirements.txt pins $pin; this machine's torch is $have"
  printf '%s\n' "${SUMMARY[@]}"
} | tee "$LOG_DIR/summary.txt"
exit "$FAILED"
