"""How the house is kept: string-literal lines per folder and the functions over 60 lines.

    python bench/house.py            # the table for this checkout
    python bench/house.py --repo DIR # another checkout, e.g. an older snapshot

"String-literal lines" counts the source lines that a non-docstring str constant
covers (f-strings included): lesson prose shows up here, docstrings do not.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

FOLDERS = ("attn_core", "figures", "ui", "pages", "content")
LIMIT = 60  # a function longer than this needs a `# long: <why>` comment on its def line


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def string_lines(path: Path) -> tuple[int, int]:
    """(lines covered by string literals that are not docstrings, all lines)."""
    src = path.read_text()
    tree = ast.parse(src)
    skip = _docstrings(tree)
    lines: set[int] = set()
    for node in ast.walk(tree):
        s = isinstance(node, ast.Constant) and isinstance(node.value, str)
        if (s and id(node) not in skip) or isinstance(node, ast.JoinedStr):
            lines.update(range(node.lineno, node.end_lineno + 1))
    return len(lines), len(src.splitlines())


def long_functions(root: Path, limit: int = LIMIT) -> list[tuple[str, int, str]]:
    """(file:function, lines, reason) for every function longer than `limit` lines."""
    out = []
    for path in sorted(_py(root)):
        src = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(src))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = node.end_lineno - node.lineno + 1
                if n > limit:
                    line = src[node.lineno - 1]
                    reason = line.split("# long:", 1)[1].strip() if "# long:" in line else ""
                    out.append((f"{path.relative_to(root)}:{node.name}", n, reason))
    return out


def _py(root: Path):
    for folder in ("attn_core", "figures", "ui", "pages"):
        yield from (root / folder).rglob("*.py")
    yield root / "app.py"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", default=Path(__file__).resolve().parent.parent, type=Path)
    root = ap.parse_args().repo.resolve()
    print("| folder | files | lines | string-literal lines | share |\n|---|---|---|---|---|")
    for folder in FOLDERS:
        files = sorted((root / folder).rglob("*.py"))
        if not files:
            continue
        s = t = 0
        for f in files:
            a, b = string_lines(f)
            s, t = s + a, t + b
        print(f"| {folder}/ | {len(files)} | {t} | {s} | {s / t:.0%} |")
    md = sorted((root / "content").glob("*.md")) if (root / "content").is_dir() else []
    if md:
        n = sum(len(p.read_text().splitlines()) for p in md)
        print(f"| content/*.md | {len(md)} | {n} | (all prose) | |")
    longs = long_functions(root)
    print(f"\n{len(longs)} functions over {LIMIT} lines")
    for name, n, why in sorted(longs, key=lambda r: -r[1]):
        print(f"- {name}: {n}" + (f" — {why}" if why else ""))


if __name__ == "__main__":
    main()
