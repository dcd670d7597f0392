"""The distributed lab's folder holds what its handout names (issue 23): every file and folder at its top level is
linked in the handout's "Read in this order" list, in English and in Spanish, and everything that list links
there exists; grading, templates and benchmarks live in folders of their own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workshop.labs.distributed import lab

FOLDER = Path(lab.__file__).parent
HEADINGS = {"README.md": "Read in this order:", "README.es.md": "Lee en este orden:"}
# the handouts themselves, the package's marker and Python's cache: not part of what a learner reads
UNLISTED = {"README.md", "README.es.md", "__init__.py", "__pycache__"}


def listed(handout: str) -> set[str]:
    """The top-level names the handout's reading list links: [x](x), [y/](y/)."""
    text = (FOLDER / handout).read_text(encoding="utf-8")
    section = text.split(HEADINGS[handout], 1)[1].split("\n\n", 1)[0]
    targets = (t.removesuffix("/") for t in re.findall(r"\]\(([^)#]+)\)", section))
    return {t for t in targets if "/" not in t}


def edition(name: str) -> str:
    """A text and its translation count as one entry: each handout links its own language's."""
    return name.replace(".es.md", ".md")


def differences(folder: Path, names: set[str]) -> tuple[set[str], set[str]]:
    """(at the top level but not listed, listed but not there)."""
    present = {edition(p.name) for p in folder.iterdir()} - UNLISTED
    names = {edition(n) for n in names}
    return present - names, names - present


@pytest.mark.parametrize("handout", list(HEADINGS))
def test_the_top_level_holds_what_the_handout_lists(handout):
    assert differences(FOLDER, listed(handout)) == (set(), set())


def test_a_file_the_list_does_not_name_is_caught(tmp_path):
    for name in listed("README.md"):
        (tmp_path / name).touch()
    (tmp_path / "helpers.py").touch()
    (tmp_path / "lab.py").unlink()
    assert differences(tmp_path, listed("README.md")) == ({"helpers.py"}, {"lab.py"})


def test_grading_templates_and_benchmarks_have_folders_of_their_own():
    assert (FOLDER / "grading" / "exercises.py").is_file()
    assert not list(FOLDER.glob("*.j2")) and list((FOLDER / "templates").glob("*.j2"))
    assert (FOLDER / "bench" / "check_loop.py").is_file()
