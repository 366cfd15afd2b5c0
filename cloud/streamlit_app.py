"""Community Cloud's entrypoint: runs the real app, `app.py` at the repository root.

It lives in its own folder only so that Community Cloud picks up `cloud/requirements.txt`
(CPU-only torch) instead of the root `requirements.txt`: Cloud looks for the dependency
file next to the entrypoint first, then at the repository root. On Cloud choose
`cloud/streamlit_app.py` as the main file path. Locally, from the repository root:

    streamlit run cloud/streamlit_app.py

How the real app still resolves as under `streamlit run app.py`:

- Imports (`ui`, `attn_core`, `figures`): Streamlit puts the *entrypoint's* folder on
  sys.path, so the repository root is added here.
- Page files: `st.Page("pages/x.py")` and `st.page_link("pages/x.py")` resolve relative to
  the entrypoint's folder. `cloud/pages` is a symlink to `../pages`, and Streamlit resolves
  both through it to the real files, so every page, link and URL is the same as at the root.
- `assets/favicon.png` (page_icon) and `.streamlit/config.toml` are read relative to the
  working directory, which on Community Cloud is always the repository root (run it from
  the root locally too).
"""

import runpy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "app.py"

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

runpy.run_path(str(APP), run_name="__main__")
