"""A lab folder a learner can read: its top level holds only what its handout names in the "Read in
this order" list; the machinery sits in grading/, bench/ and templates/ (and locale/), which the list need not
name. Both handouts, English and Spanish, name the same files, and every file they name exists."""

import re
from pathlib import Path

import pytest

from workshop.labs import all_labs

ROOT = Path(__file__).resolve().parents[2]
LABS = ROOT / "workshop" / "labs"
# the lab's machinery and Python's own files: present in every lab, named by no reading list
MACHINERY = {"grading", "bench", "templates", "locale", "__pycache__", "__init__.py"}
HEADINGS = {"README.md": "Read in this order", "README.es.md": "Lee en este orden"}
# `name` and [text](target): the names a reading list gives
NAMED = re.compile(r"`([^`\s]+)`|\]\(([^)\s]+)\)")


def reading_list(handout: Path) -> str:
    """The handout's reading list: from its "Read in this order" line to the next heading."""
    text = handout.read_text(encoding="utf-8")
    start = text.find(HEADINGS[handout.name])
    assert start >= 0, f"{handout.relative_to(ROOT)} has no '{HEADINGS[handout.name]}' list"
    end = text.find("\n#", start)
    return text[start : end if end >= 0 else len(text)]


def named_here(section: str) -> set[str]:
    """The top-level entries of the lab folder the list names: `lab.py`, `templates/`, [ddp.py](ddp.py)."""
    names = set()
    for code, link in NAMED.findall(section):
        name = (code or link).split("#")[0]
        if name and not name.startswith("workshop/"):
            names.add(name.rstrip("/").split("/")[0])
    return names


def unreadable(section: str, lab_dir: Path) -> list[str]:
    """Files the list names as code or links that do not exist (in the lab folder, or from the repository's
    root for workshop/... paths); names of run outputs (summary.md, measurements.json) are not code."""
    missing = []
    for code, link in NAMED.findall(section):
        name = (code or link).split("#")[0]
        if not (link or name.endswith((".py", "/"))):
            continue
        base = ROOT if name.startswith("workshop/") else lab_dir
        if not (base / name).exists():
            missing.append(name)
    return missing


def top_level(lab_dir: Path) -> set[str]:
    return {
        p.name
        for p in lab_dir.iterdir()
        if p.name not in MACHINERY and not p.name.startswith("README")
    }


@pytest.mark.parametrize("lab", sorted(all_labs()))
@pytest.mark.parametrize("handout", sorted(HEADINGS))
def test_the_handout_names_every_file_at_the_top_of_its_lab(lab, handout):
    lab_dir = LABS / lab
    section = reading_list(lab_dir / handout)
    assert sorted(top_level(lab_dir) - named_here(section)) == [], (
        "in the folder, not in the reading list"
    )
    assert unreadable(section, lab_dir) == [], "in the reading list, not in the repository"


def test_a_file_the_list_does_not_name_is_caught(tmp_path):
    """The planted case: a grading module left at the top level, and a list naming a file that is gone."""
    lab_dir = tmp_path / "toy"
    (lab_dir / "grading").mkdir(parents=True)
    for name in ("lab.py", "model.py", "exercise_checks.py", "README.md"):
        (lab_dir / name).write_text("")
    (lab_dir / "README.md").write_text(
        "# toy\n\nRead in this order:\n1. [model.py](model.py);\n2. `lab.py`, then `renamed.py`.\n\n## Next\n"
    )
    section = reading_list(lab_dir / "README.md")
    assert top_level(lab_dir) - named_here(section) == {"exercise_checks.py"}
    assert unreadable(section, lab_dir) == ["renamed.py"]
