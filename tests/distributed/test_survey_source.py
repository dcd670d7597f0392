"""The figures file a survey names (`<!-- figures: ... -->`, written by its template): relative to the workspace,
and when it is missing, not this lab's, another workspace's run or unlike its own run's measurements, one failed
check whose message names the file and the fix, instead of a page of untraced figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.distributed.test_exercises import failed, good_survey
from workshop.foundations.run_options import RunOptions
from workshop.lab_api import LabContext
from workshop.labs.distributed import figure_rows, measurements
from workshop.labs.distributed.grading import survey
from workshop.learner import workspace

FILE_CHECK = "survey: the figures file it names is there and one of this workspace's runs"


@pytest.fixture
def ctx(tmp_path):
    work = tmp_path / "my-work"
    work.mkdir()
    (work / workspace.RECORD).write_text(json.dumps({"id": "mine"}))
    out = tmp_path / "results" / "this-run" / "distributed"
    out.mkdir(parents=True)
    ctx = LabContext("distributed", out, RunOptions("cpu", 2, 0))
    ctx.options.work = work
    return ctx


def a_run(lab_dir: Path, workspace_id: str | None = None) -> Path:
    """A lab run folder with one demo's measurements, the figures.json they give, and the result.json of the
    workspace it graded (none: a run of the reference)."""
    rank = {
        "rank": 0,
        "losses": [2.0, 1.9],
        "step_time_s": 0.0123,
        "collectives": [{"phase": "backward", "op": "allreduce", "count": 1, "bytes": 4096}],
        "held": {"params": 4096, "grads": 4096, "optimizer": 4096},
        "collective_seconds": {},
        "backward_ops": 0,
        "issued_in_backward": [],
        "cuda_peak_bytes": 0,
    }
    run = {"per_rank": [rank], "max_loss_error": 0.0, "max_param_error": 0.0}
    data = {"strategy": "ddp", "world_size": 2, "device": "cpu", "runs": {"ddp": run}}
    measurements.write(lab_dir / "ddp", data)
    path = lab_dir / "figures.json"
    path.write_text(
        json.dumps(
            [figure_rows.as_json(f) for f in figure_rows.rows(figure_rows.measurements_in(lab_dir))]
        )
    )
    implementation = {"kind": "workspace", "workspace_id": workspace_id} if workspace_id else {}
    (lab_dir / "result.json").write_text(json.dumps({"implementation": implementation}))
    return path


def grade(ctx: LabContext, source: str) -> dict[str, str]:
    """Grade the good survey as survey.md naming `source` as its figures (relative to the workspace)."""
    document = ctx.options.work / "survey.md"
    document.write_text(good_survey() + f"\n<!-- figures: {source} -->\n")
    with ctx.grading("survey"):
        survey.grade(ctx, document, figure_rows.read(a_run(ctx.out_dir)))
    return failed(ctx)


def test_the_template_names_the_run_relative_to_the_workspace(ctx, tmp_path):
    lab_dir = tmp_path / "results" / "earlier" / "distributed"
    lab_dir.mkdir(parents=True)
    a_run(lab_dir)
    text = survey.template(lab_dir, ctx.options.work)
    assert survey.source(text) == "../results/earlier/distributed/figures.json"
    (ctx.options.work / "survey.md").write_text(text)
    assert (ctx.options.work / survey.source(text)).resolve() == lab_dir / "figures.json"
    rows = figure_rows.read(lab_dir / "figures.json")
    assert survey.figures_quoted(ctx, ctx.options.work / "survey.md", text, [], ctx.out_dir) == (
        rows,
        None,
    )


def test_a_missing_figures_file_is_one_line_naming_it_and_the_fix(ctx):
    wrong = grade(ctx, "../results/cleaned-up/distributed/figures.json")
    assert list(wrong) == [FILE_CHECK]  # no untraced figures, no mismatched demos
    message = wrong[FILE_CHECK]
    assert (
        "../results/cleaned-up/distributed/figures.json" in message and "does not exist" in message
    )
    assert "<!-- figures: ../results/this-run/distributed/figures.json -->" in message
    assert "\n" not in message


@pytest.mark.parametrize("content", ["not json", '{"rows": 3}', '[{"strategy": "ddp"}]'])
def test_a_file_that_is_not_this_labs_figures_is_named(ctx, content):
    (ctx.options.work / "notes.json").write_text(content)
    wrong = grade(ctx, "notes.json")
    assert list(wrong) == [FILE_CHECK] and "is not a figures.json of this lab" in wrong[FILE_CHECK]


def test_another_workspaces_run_is_detected(ctx, tmp_path):
    theirs = tmp_path / "results" / "their-run" / "distributed"
    theirs.mkdir(parents=True)
    a_run(theirs, workspace_id="someone-else")
    wrong = grade(ctx, "../results/their-run/distributed/figures.json")
    assert list(wrong) == [FILE_CHECK] and "another workspace's run" in wrong[FILE_CHECK]


def test_figures_copied_over_a_run_of_ones_own_are_detected(ctx, tmp_path):
    """The run is this workspace's, but its figures.json is not what its measurements give: another run's
    times copied in (or edited)."""
    mine = tmp_path / "results" / "my-run" / "distributed"
    mine.mkdir(parents=True)
    path = a_run(mine, workspace_id="mine")
    assert survey.unlike_its_run(path) is False
    rows = json.loads(path.read_text())
    rows[0]["step_ms"] = 14.0
    path.write_text(json.dumps(rows))
    assert survey.unlike_its_run(path) is True
    wrong = grade(ctx, "../results/my-run/distributed/figures.json")
    assert "differs from its own run's measurements" in wrong[FILE_CHECK]


def test_a_file_of_older_code_is_compared_in_the_fields_it_has(ctx, tmp_path):
    mine = tmp_path / "results" / "old-run" / "distributed"
    mine.mkdir(parents=True)
    path = a_run(mine, workspace_id="mine")
    rows = json.loads(path.read_text())
    for row in rows:
        del row["backward_ops"], row["issued_in_backward"]
    path.write_text(json.dumps(rows))
    assert survey.unlike_its_run(path) is False


def test_a_survey_too_big_to_be_a_page_is_not_read(ctx):
    document = ctx.options.work / "survey.md"
    document.write_text("word " * (survey.SURVEY_BYTES // 4))
    with ctx.grading("survey"):
        survey.grade(ctx, document, [], [])
    assert list(failed(ctx)) == ["survey: bytes of survey.md (a page of prose is a few kB)"]


@pytest.mark.parametrize("named", ["/dev/zero", "/proc/self/fd/0", "."])
def test_a_device_a_pipe_or_a_folder_named_as_figures_is_not_read(ctx, named):
    wrong = grade(ctx, named)
    assert list(wrong) == [FILE_CHECK] and named in wrong[FILE_CHECK]
