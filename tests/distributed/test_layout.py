"""The distributed lab's machinery has folders of their own: grading and templates live in grading/ and
templates/, and its benchmark, a developer's timing of `check distributed`, is tools/distributed_loop.py (not in
the learner edition); that the handouts' reading lists name every top-level file is
tests/layout/test_lab_layout.py's."""

from __future__ import annotations

from pathlib import Path

from workshop.labs.distributed import lab

FOLDER = Path(lab.__file__).parent
ROOT = FOLDER.parents[2]


def test_grading_templates_and_benchmarks_have_folders_of_their_own():
    assert (FOLDER / "grading" / "exercises.py").is_file()
    assert list((FOLDER / "grading").glob("model_answers*.md"))
    assert not list(FOLDER.glob("*.j2")) and list((FOLDER / "templates").glob("*.j2"))
    assert (ROOT / "tools" / "distributed_loop.py").is_file() and not (FOLDER / "bench").exists()
