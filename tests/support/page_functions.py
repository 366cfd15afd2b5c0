"""A page's functions without running the page: its source executed as a module, all but
the closing `run()`, so a test can call the functions that word its sentences on data the
page itself never shows (another table, a tie, a near thing)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def page_functions(file: str) -> types.ModuleType:
    """pages/<name>.py as the module `page_<name>_functions`, its `run()` left out."""
    path = ROOT / file
    source = path.read_text()
    body = source.rstrip()
    if not body.endswith("\nrun()"):
        raise ValueError(f"{file} does not end with run()")
    name = f"page_{path.stem.replace('-', '_')}_functions"
    if name in sys.modules:
        return sys.modules[name]
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    exec(compile(body.removesuffix("run()"), str(path), "exec"), module.__dict__)
    return module
