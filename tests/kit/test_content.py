"""ui.content: the words of a lesson read from content/<lesson>.md, fields checked."""

from __future__ import annotations

import pytest

from ui import content


@pytest.fixture
def lesson(tmp_path, monkeypatch):
    (tmp_path / "demo.md").write_text(
        "# The demo lesson\n\nAnything before the first section is a note for editors.\n\n"
        "## intro\nT is {{T}} and the size is {{mib:.3g}} MiB.\n\n"
        "## try.one\n- Set T to 4\n  → the map has {{n}} cells\n- Set T to 1\n  → one cell\n\n"
        "## choices\n- nan: NaN in every entry\n- zeros: all zeros,\n  the row reads nothing\n"
    )
    monkeypatch.setattr(content, "ROOT", tmp_path)
    return "demo"


def test_fields_are_filled_with_their_format(lesson):
    assert content.words(lesson, "intro", T=8, mib=1 / 3) == "T is 8 and the size is 0.333 MiB."


def test_a_missing_or_unused_field_is_an_error(lesson):
    with pytest.raises(content.ContentError, match="missing"):
        content.words(lesson, "intro", T=8)
    with pytest.raises(content.ContentError, match="unused"):
        content.words(lesson, "intro", T=8, mib=1, extra=2)


def test_a_missing_section_names_the_file_and_key(lesson):
    with pytest.raises(content.ContentError, match=r"demo\.md has no section `## nope`"):
        content.words(lesson, "nope")


def test_pairs_and_choices(lesson):
    assert content.pairs(lesson, "try.one", n=16) == [
        ("Set T to 4", "the map has 16 cells"),
        ("Set T to 1", "one cell"),
    ]
    assert content.choices(lesson, "choices") == {
        "nan": "NaN in every entry",
        "zeros": "all zeros, the row reads nothing",
    }


def test_a_repeated_section_is_refused(tmp_path, monkeypatch):
    (tmp_path / "twice.md").write_text("## a\none\n## a\ntwo\n")
    monkeypatch.setattr(content, "ROOT", tmp_path)
    with pytest.raises(content.ContentError, match="twice"):
        content.sections("twice")
