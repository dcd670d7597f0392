import json
import os

import pytest

from workshop.foundations import atomic, results
from workshop.foundations.run_options import RunOptions


def test_new_run_writes_a_manifest_and_latest_moves_only_when_it_finishes(tmp_path):
    run = results.new_run(tmp_path, ["python", "-m", "workshop", "run"], RunOptions("cpu"))
    manifest = json.loads((run / "manifest.json").read_text())
    for key in (
        "torch",
        "triton",
        "python",
        "cuda",
        "device_name",
        "git_revision",
        "seeds",
        "n_procs",
        "command",
        "start_time",
    ):
        assert key in manifest
    assert manifest["status"] == "running" and results.run_state(manifest).status == "running"
    assert not (tmp_path / "latest").exists(), (
        "latest must not point at a run that has not finished"
    )
    results.update_manifest(run, {"minigpt": {"passed": True}})
    results.end_run(run)
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["end_time"] and manifest["status"] == "finished"
    assert manifest["labs"] == {"minigpt": {"passed": True}}
    assert (tmp_path / "latest").resolve() == run.resolve()
    assert sorted(p.name for p in run.iterdir()) == ["manifest.json", "options.json"], (
        "the reserve is gone"
    )


def test_runs_never_share_a_folder(tmp_path):
    a = results.new_run(tmp_path, [], RunOptions("cpu"))
    b = results.new_run(tmp_path, [], RunOptions("cpu"))
    assert a != b and a.is_dir() and b.is_dir()


def test_an_existing_run_folder_is_never_reused(tmp_path, monkeypatch):
    a = results.new_run(tmp_path, [], RunOptions("cpu"))
    monkeypatch.setattr(results.secrets, "token_hex", lambda n: a.name.rsplit("-", 1)[1])
    monkeypatch.setattr(results.time, "strftime", lambda fmt, t=None: a.name.rsplit("-", 1)[0])
    with pytest.raises(FileExistsError):
        results.new_run(tmp_path, [], RunOptions("cpu"))
    assert json.loads((a / "manifest.json").read_text())["run_id"] == a.name


def test_a_failed_write_leaves_the_old_file_and_no_debris(tmp_path):
    target = atomic.write_json(tmp_path / "result.json", {"ok": 1})

    class Unserializable:
        def __str__(self):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        atomic.write_json(target, {"bad": Unserializable()})
    assert json.loads(target.read_text()) == {"ok": 1}
    assert os.listdir(tmp_path) == ["result.json"]


def test_interrupted_byte_write_keeps_the_old_file(tmp_path, monkeypatch):
    target = atomic.write_text(tmp_path / "summary.md", "old")

    def crash(*a):
        raise KeyboardInterrupt

    monkeypatch.setattr(atomic.os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        atomic.write_text(target, "new")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["summary.md"]


def test_resolve_run_explains_a_missing_run(tmp_path):
    with pytest.raises(FileNotFoundError, match="no run found"):
        results.resolve_run(None, tmp_path)


def test_the_given_revision_names_a_copy_whatever_its_git_says(monkeypatch):
    """A GPU host's copy of the tree carried an older commit's .git: WORKSHOP_GIT_REVISION, where set, wins."""
    monkeypatch.setenv("WORKSHOP_GIT_REVISION", "85dab05")
    assert results.git_revision() == "85dab05"
    monkeypatch.delenv("WORKSHOP_GIT_REVISION")
    own = results.git_revision()  # this checkout's, from git
    monkeypatch.setenv("WORKSHOP_GIT_REVISION", "unknown")  # compose's default: not a revision
    assert results.git_revision() == own
