"""The compile lab's folder holds, at its top level, only what its handout's "Read in this order" list names
(issue 23 item 1): the modules a learner reads, then grading/, templates/ and bench/; every path on the list is in
the folder; both languages list the same paths in the same order."""

import re
from pathlib import Path

import pytest

LAB = Path(__file__).resolve().parents[1] / "workshop/labs/compile"
# what a lab folder has besides what a learner reads: its package marker, handouts, catalog and Python's cache
FURNITURE = {"__init__.py", "__pycache__/", "README.md", "README.es.md", "locale/"}
LIST_STARTS = ("Read in this order", "Lee en este orden")


def reading_list(handout: str) -> list[str]:
    """The paths in code spans of the handout's reading list (the paragraph that starts it), in order."""
    start = next(handout.index(s) for s in LIST_STARTS if s in handout)
    block = handout[start : handout.index("\n\n", start)]
    return list(dict.fromkeys(re.findall(r"`([\w./]+)`", block)))


def layout_problems(folder: Path, listed: list[str]) -> list[str]:
    """Top-level entries the list does not name, and paths on the list the folder does not hold."""
    top = {p.name + "/" if p.is_dir() else p.name for p in folder.iterdir()} - FURNITURE
    unnamed = sorted(top - set(listed))
    missing = [n for n in listed if not (folder / n).exists()]
    return [f"not on the list: {n}" for n in unnamed] + [f"not in the folder: {n}" for n in missing]


@pytest.mark.parametrize("handout", ["README.md", "README.es.md"])
def test_the_top_level_holds_only_what_the_reading_list_names(handout):
    assert layout_problems(LAB, reading_list((LAB / handout).read_text(encoding="utf-8"))) == []


def test_both_languages_list_the_same_names_in_the_same_order():
    lists = [
        reading_list((LAB / h).read_text(encoding="utf-8")) for h in ("README.md", "README.es.md")
    ]
    assert lists[0] == lists[1]


def test_a_layout_the_list_does_not_describe_is_found(tmp_path):
    """Planted: a grading module left at the top level, and a listed module that is gone."""
    for name in ("lab.py", "extra_grading.py"):
        (tmp_path / name).write_text("")
    (tmp_path / "grading").mkdir()
    listed = ["lab.py", "grading/", "gone.py", "grading/gone.py"]
    assert layout_problems(tmp_path, listed) == [
        "not on the list: extra_grading.py",
        "not in the folder: gone.py",
        "not in the folder: grading/gone.py",
    ]
