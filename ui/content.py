"""The words of each lesson, read from content/<lesson>.md.

A content file is plain markdown cut into sections by level-2 headings; each
heading is the section's key, written as `## key` (keys are short names such as
`intro`, `try.mask`, `exercise.empty.why`). A teacher fixes a sentence there
without reading Python, and tests import the same words instead of copying them.

    ## intro
    A mask decides which keys each query may read…

Live numbers are named fields, `{{T}}` or `{{mib:.3g}}` (a format spec after the
colon), filled by the page from the computation. A field the page does not give,
or a field it gives that the text does not use, is an error: a sentence cannot
silently lose its number.

Lists come in two shapes:
- `pairs(lesson, key)`: "Try this" items, the action on the item's first line and
  what you should see on a following line that starts with `→`;
- `choices(lesson, key)`: `- name: text` items, a named answer per line.

The lookup is keyed by (lesson, key) and reads `content/<lesson>.md`; a translation
would add a language folder in front (`content/<lang>/<lesson>.md`) and nothing else.
Plain python, no streamlit: tests read it without a running app.
"""

from __future__ import annotations

import re
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent / "content"
_HEADING = re.compile(r"^## +(\S+) *$")
_FIELD = re.compile(r"\{\{ *(\w+) *(?::([^}]*))?\}\}")
_ITEM = re.compile(r"^- +")
_CHOICE = re.compile(r"^([\w.+-]+): +(.*)$", re.S)


class ContentError(KeyError):
    """A missing section or a field that does not match its text."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


@lru_cache(maxsize=32)
def _sections(lesson: str, mtime: float) -> dict[str, str]:
    out: dict[str, str] = {}
    key, lines = None, []
    for line in (ROOT / f"{lesson}.md").read_text(encoding="utf-8").splitlines():
        m = _HEADING.match(line)
        if m:
            if key is not None:
                out[key] = "\n".join(lines).strip()
            key, lines = m.group(1), []
            if key in out:
                raise ContentError(f"content/{lesson}.md: section `{key}` appears twice")
        elif key is not None:
            lines.append(line)
    if key is not None:
        out[key] = "\n".join(lines).strip()
    return out


# A page run asks for a hundred sections; each used to stat its file. An edited file is
# read again within this many seconds (and at once when the file's path changes).
RECHECK_S = 0.5
_CHECKED: dict[Path, tuple[float, float]] = {}  # path: (when checked, its mtime then)


def sections(lesson: str) -> dict[str, str]:
    """Every section of a lesson's file, raw (fields not filled), by key."""
    path = ROOT / f"{lesson}.md"
    now = time.monotonic()
    seen = _CHECKED.get(path)
    if seen is None or now - seen[0] > RECHECK_S:
        seen = _CHECKED[path] = (now, path.stat().st_mtime)
    return _sections(lesson, seen[1])


def fields(template: str) -> set[str]:
    """The names of the fields a text asks for."""
    return {m.group(1) for m in _FIELD.finditer(template)}


def fill(template: str, values: dict[str, Any], where: str = "text") -> str:
    """`template` with its fields replaced; every field given, every value used."""
    asked = fields(template)
    missing, unused = asked - values.keys(), values.keys() - asked
    if missing or unused:
        raise ContentError(
            f"{where}: fields missing {sorted(missing)}, given but unused {sorted(unused)}"
        )

    def one(m: re.Match) -> str:
        value, spec = values[m.group(1)], m.group(2)
        return format(value, spec) if spec else str(value)

    return _FIELD.sub(one, template)


def raw(lesson: str, key: str) -> str:
    try:
        return sections(lesson)[key]
    except KeyError:
        raise ContentError(f"content/{lesson}.md has no section `## {key}`") from None


def words(lesson: str, key: str, /, **values: Any) -> str:
    """The section `key` of the lesson, its fields filled from `values`."""
    return fill(raw(lesson, key), values, f"content/{lesson}.md `{key}`")


def items(lesson: str, key: str, /, **values: Any) -> list[str]:
    """A section's top-level list items (continuation lines kept, joined by newlines)."""
    out: list[str] = []
    for line in words(lesson, key, **values).splitlines():
        if _ITEM.match(line):
            out.append(_ITEM.sub("", line))
        elif out and line.strip():
            out[-1] += "\n" + line.strip()
    return out


def pairs(lesson: str, key: str, /, **values: Any) -> list[tuple[str, str]]:
    """ "Try this" items: (what to do, what you should see), split at the `→` line."""
    out = []
    for item in items(lesson, key, **values):
        do, sep, see = item.partition("\n→")
        if not sep:
            raise ContentError(f"content/{lesson}.md `{key}`: an item has no `→` line: {do!r}")
        out.append((" ".join(do.split()), " ".join(see.split())))
    return out


def choices(lesson: str, key: str, /, **values: Any) -> dict[str, str]:
    """`- name: text` items as {name: text}, in order."""
    out = {}
    for item in items(lesson, key, **values):
        m = _CHOICE.match(item)
        if not m:
            raise ContentError(f"content/{lesson}.md `{key}`: not `- name: text`: {item!r}")
        out[m.group(1)] = " ".join(m.group(2).split())
    return out


class Words:
    """One lesson's words, so a page writes `W("intro")` instead of repeating its name."""

    def __init__(self, lesson: str):
        self.lesson = lesson

    def __call__(self, key: str, /, **values: Any) -> str:
        return words(self.lesson, key, **values)

    def pairs(self, key: str, /, **values: Any) -> list[tuple[str, str]]:
        return pairs(self.lesson, key, **values)

    def choices(self, key: str, /, **values: Any) -> dict[str, str]:
        return choices(self.lesson, key, **values)

    def items(self, key: str, /, **values: Any) -> list[str]:
        return items(self.lesson, key, **values)

    def raw(self, key: str) -> str:
        return raw(self.lesson, key)
