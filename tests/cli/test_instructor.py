"""cli.instructor: grade and edition read their arguments and stop with one line before anything runs. (`grade` end
to end: tests/cli/test_learner.py; forged hand-ins: tests/security/test_gradebook.py; the edition:
tests/grading/test_edition.py.)"""

from __future__ import annotations

import pytest

from workshop.cli.main import main
from workshop.foundations import worker_container


def test_grade_in_docker_where_there_is_none_stops_with_how_to_build_it(monkeypatch, tmp_path):
    monkeypatch.setattr(worker_container.shutil, "which", lambda name: None)
    with pytest.raises(
        SystemExit, match="--sandbox docker: docker is not installed; build it with"
    ):
        main(["grade", str(tmp_path), "--sandbox", "docker", "--device", "cpu", "--lang", "en"])
    assert not (tmp_path / "grades").exists()


def test_grade_with_an_unreadable_roster_stops_before_grading(tmp_path):
    with pytest.raises(SystemExit, match="error: "):
        main(["grade", str(tmp_path), "--roster", str(tmp_path / "missing.csv"), "--lang", "en"])
