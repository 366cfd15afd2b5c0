"""Community Cloud's dependency file stays in step with requirements.txt (issue 21).

`cloud/requirements.txt` (read by Cloud because the entrypoint is `cloud/streamlit_app.py`)
must list the same packages at the same pins as `requirements.txt`, with torch taken from
PyTorch's CPU index (`torch==X+cpu` counts as the same pin as `torch==X`). The root file and
`requirements-dev.txt` must name no index at all: the CPU index is unreachable from the
project's machines, and the README's fresh-machine commands and CI install those files.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
ROOT_REQS = ROOT / "requirements.txt"
DEV_REQS = ROOT / "requirements-dev.txt"
CLOUD_DIR = ROOT / "cloud"
CLOUD_REQS = CLOUD_DIR / "requirements.txt"
ENTRYPOINT = CLOUD_DIR / "streamlit_app.py"

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
INDEX_OPTIONS = ("--index-url", "--extra-index-url", "-i")  # pip's index options
# Packages whose Cloud pin may carry a build's local version label (torch==2.13.0+cpu).
LOCAL_LABEL_OK = {"torch"}


def _lines(text: str) -> list[str]:
    """Logical lines of a requirements file: comments and blanks dropped, continuations joined."""
    text = re.sub(r"\\\n", " ", text)
    out = []
    for raw in text.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if line:
            out.append(line)
    return out


def _option(line: str) -> tuple[str, str] | None:
    """('--extra-index-url', URL) for an option line, else None (a requirement)."""
    if not line.startswith("-"):
        return None
    name, _, value = line.partition("=") if "=" in line.split()[0] else line.partition(" ")
    return name.strip(), value.strip()


def indexes(text: str) -> list[tuple[str, str]]:
    """Every index option of a requirements file, and any mention of PyTorch's wheel host."""
    found = []
    for line in _lines(text):
        opt = _option(line)
        if opt and opt[0] in INDEX_OPTIONS:
            found.append(opt)
        elif "download.pytorch.org" in line:
            found.append(("(mention)", line))
    return found


def _normalised_spec(name: str, req: Requirement) -> str:
    specs = []
    for spec in req.specifier:
        version = spec.version
        if name in LOCAL_LABEL_OK and spec.operator in ("==", "==="):
            version = version.split("+", 1)[0]  # 2.13.0+cpu is the CPU build of 2.13.0
        specs.append(f"{spec.operator}{version}")
    marker = f"; {req.marker}" if req.marker else ""
    extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
    return f"{extras}{','.join(sorted(specs))}{marker}"


def requirements(text: str) -> dict[str, Requirement]:
    """Package name (normalised) -> its requirement, for the requirement lines of a file."""
    reqs: dict[str, Requirement] = {}
    for line in _lines(text):
        if _option(line):
            continue
        try:
            req = Requirement(line)
        except InvalidRequirement as e:  # a typo must fail the check, not vanish
            raise ValueError(f"not a requirement: {line!r} ({e})") from None
        name = canonicalize_name(req.name)
        if name in reqs:
            raise ValueError(f"{req.name} is listed twice")
        reqs[name] = req
    return reqs


def problems(root_text: str, cloud_text: str, dev_text: str = "") -> list[str]:
    """Why the Cloud file and the local files are out of step; [] when they agree."""
    out = []
    for label, text in (("requirements.txt", root_text), ("requirements-dev.txt", dev_text)):
        for opt, value in indexes(text):
            out.append(f"{label} names an index ({opt} {value}); only cloud/ may")
    cloud_indexes = indexes(cloud_text)
    if ("--extra-index-url", CPU_INDEX) not in cloud_indexes:
        out.append(f"cloud/requirements.txt lacks `--extra-index-url {CPU_INDEX}`")
    for opt, value in cloud_indexes:
        if opt in ("--index-url", "-i"):
            out.append(f"cloud/requirements.txt replaces PyPI ({opt} {value}); use an extra index")
    root, cloud = requirements(root_text), requirements(cloud_text)
    for name in sorted(root.keys() - cloud.keys()):
        out.append(f"{name} is in requirements.txt but not in cloud/requirements.txt")
    for name in sorted(cloud.keys() - root.keys()):
        out.append(f"{name} is in cloud/requirements.txt but not in requirements.txt")
    for name in sorted(root.keys() & cloud.keys()):
        a, b = _normalised_spec(name, root[name]), _normalised_spec(name, cloud[name])
        if a != b:
            out.append(f"{name}: requirements.txt has {root[name]}, cloud has {cloud[name]}")
    torch = cloud.get("torch")
    if torch is not None and not any(s.operator == "==" for s in torch.specifier):
        out.append(f"cloud/requirements.txt must pin torch exactly, not {torch}")
    return out


# -- the real files ----------------------------------------------------------------------


def test_cloud_file_is_in_step_with_requirements_txt():
    found = problems(ROOT_REQS.read_text(), CLOUD_REQS.read_text(), DEV_REQS.read_text())
    assert found == [], "\n".join(found)


def test_cloud_torch_is_the_cpu_build_of_the_root_pin():
    root = requirements(ROOT_REQS.read_text())["torch"]
    cloud = requirements(CLOUD_REQS.read_text())["torch"]
    (pin,) = [s.version for s in root.specifier if s.operator == "=="]
    (cloud_pin,) = [s.version for s in cloud.specifier if s.operator == "=="]
    assert cloud_pin in (pin, f"{pin}+cpu")


def test_dev_requirements_include_the_root_file():
    """CI installs requirements-dev.txt; it must bring requirements.txt (and no index) along."""
    assert "-r requirements.txt" in _lines(DEV_REQS.read_text())


# -- the checker catches what it should -----------------------------------------------------

ROOT_OK = "torch==2.13.0\nstreamlit==1.67.0\nnumpy>=2.0  # any 2.x\n"
CLOUD_OK = f"--extra-index-url {CPU_INDEX}\ntorch==2.13.0+cpu\nstreamlit==1.67.0\nnumpy>=2.0\n"


def test_checker_accepts_matching_files():
    assert problems(ROOT_OK, CLOUD_OK) == []
    assert problems(ROOT_OK, CLOUD_OK.replace("+cpu", "")) == []  # the plain pin is fine too
    assert problems(ROOT_OK, CLOUD_OK.replace("--extra-index-url ", "--extra-index-url=")) == []


@pytest.mark.parametrize(
    ("root", "cloud", "expected"),
    [
        (ROOT_OK, CLOUD_OK.replace("torch==2.13.0+cpu", "torch==2.12.0+cpu"), "torch:"),
        (ROOT_OK, CLOUD_OK.replace("streamlit==1.67.0", "streamlit==1.66.0"), "streamlit:"),
        (ROOT_OK, CLOUD_OK.replace("numpy>=2.0", "numpy"), "numpy:"),
        (ROOT_OK, CLOUD_OK.replace("torch==2.13.0+cpu", "torch>=2.13"), "torch:"),
        (ROOT_OK, CLOUD_OK.replace("streamlit==1.67.0\n", ""), "not in cloud/requirements.txt"),
        (ROOT_OK, CLOUD_OK + "scipy==1.15.0\n", "scipy is in cloud/requirements.txt but not"),
        (ROOT_OK, CLOUD_OK.replace(f"--extra-index-url {CPU_INDEX}\n", ""), "lacks"),
        (ROOT_OK, CLOUD_OK.replace("/whl/cpu", "/whl/cu128"), "lacks"),
        (ROOT_OK, CLOUD_OK.replace("--extra-index-url", "--index-url"), "lacks"),
        (f"--extra-index-url {CPU_INDEX}\n" + ROOT_OK, CLOUD_OK, "requirements.txt names"),
        ("-i https://example.invalid/simple\n" + ROOT_OK, CLOUD_OK, "requirements.txt names"),
        (ROOT_OK.replace("2.13.0", "2.13.0+cpu"), CLOUD_OK, ""),  # +cpu on both: same pin
    ],
)
def test_checker_rejects(root, cloud, expected):
    found = problems(root, cloud)
    if not expected:
        assert found == []
    else:
        assert any(expected in p for p in found), found


def test_checker_rejects_an_index_in_requirements_dev():
    found = problems(ROOT_OK, CLOUD_OK, f"-r requirements.txt\n--extra-index-url {CPU_INDEX}\n")
    assert any(p.startswith("requirements-dev.txt names an index") for p in found), found


def test_checker_rejects_garbage_and_duplicates():
    with pytest.raises(ValueError, match="not a requirement"):
        problems(ROOT_OK + "torch = 2\n", CLOUD_OK)
    with pytest.raises(ValueError, match="twice"):
        problems(ROOT_OK + "Torch==2.13.0\n", CLOUD_OK)


# -- the thin entrypoint ------------------------------------------------------------------


def test_entrypoint_runs_the_real_app():
    """A cheap static check: cloud/streamlit_app.py executes the root app.py, nothing else."""
    tree = ast.parse(ENTRYPOINT.read_text())
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "run_path"
    ]
    assert calls, "cloud/streamlit_app.py must runpy.run_path the root app.py"
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)}
    assert "app.py" in strings and "__main__" in strings
    assert not any(isinstance(n, ast.FunctionDef) for n in tree.body)  # no app of its own


def test_entrypoint_folder_resolves_the_page_files():
    """st.Page / st.page_link resolve page paths relative to the entrypoint's folder, so
    cloud/pages must lead to the real pages/ (a symlink, which Streamlit resolves)."""
    from ui.lesson import LESSONS

    assert (CLOUD_DIR / "pages").is_symlink()
    assert (CLOUD_DIR / "pages").resolve() == (ROOT / "pages").resolve()
    for lesson in LESSONS:
        real = ROOT / lesson.file
        if real.is_file():
            assert (CLOUD_DIR / lesson.file).resolve() == real.resolve()


def test_no_second_config_next_to_the_entrypoint():
    """Community Cloud reads only the root .streamlit/config.toml; a cloud/.streamlit would
    apply locally (Streamlit also reads the entrypoint folder's) but not there."""
    assert (ROOT / ".streamlit" / "config.toml").is_file()
    assert not (CLOUD_DIR / ".streamlit").exists()


def test_entrypoint_serves_the_app_in_apptest():
    """The Cloud entrypoint runs the home page and a lesson page (with its Previous/Next
    links, which resolve through cloud/pages) without an exception."""
    from streamlit.testing.v1 import AppTest

    from ui.lesson import by_file

    at = AppTest.from_file(str(ENTRYPOINT), default_timeout=60)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert by_file("pages/home.py").h1 in [t.value for t in at.title]
    registered = {Path(p["script_path"]) for p in at._registered_pages.values()}
    assert (ROOT / "pages" / "home.py").resolve() in registered

    page = AppTest.from_file(str(ENTRYPOINT), default_timeout=60)
    page._registered_pages = at._registered_pages
    page.switch_page("pages/softmax.py")
    page.run()
    assert not page.exception, [e.value for e in page.exception]
    assert by_file("pages/softmax.py").h1 in [t.value for t in page.title]
    assert page.get("page_link"), "Previous/Next links are missing"
