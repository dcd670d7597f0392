"""The distributed lab's exercises, graded in this process against a committed run's figures (no processes):
the reference passes, fresh templates are not started, and each plausible wrong solution fails with a message
that points at the mistake. A fresh workspace graded end to end, through `check`: grading/test_every_lab.py."""

from __future__ import annotations

import copy
import dataclasses
import re

import pytest

from tests.support.planted_answers import grade_planted
from workshop import engine, i18n
from workshop.declarations import checks
from workshop.declarations.diagnosis import Diagnosis
from workshop.foundations.run_options import RunOptions
from workshop.i18n import templates
from workshop.lab_api import Check, LabContext
from workshop.labs.distributed import figure_rows, lab
from workshop.labs.distributed.grading import (
    derived_answers,
    survey,
    survey_text,
)
from workshop.labs.distributed.grading.exercises import EXERCISES
from workshop.learner import workspace

RUN = figure_rows.read(survey.COMMITTED_RUNS[0])  # CPU, N=2


def tables(figures: list, lang: str) -> str:
    """A run's two tables in `lang`, as the summary and the starter show them (the model answer quotes them so)."""
    return "\n".join(
        templates.render(survey.TEMPLATES, lang, {"figures": figures}, part)
        for part in ("figures_table.md.j2", "communication_table.md.j2")
    )


N = RUN[0]["n"]


@pytest.fixture
def ctx(tmp_path):
    return LabContext("distributed", tmp_path, RunOptions("cpu", N, 0))


def failed(ctx: LabContext) -> dict[str, str]:
    """Failed check name -> its message."""
    return {c.name: c.message for c in ctx.checks if not c.passed}


def grade_predictions(ctx, value):
    """`value` graded as the engine grades PREDICTIONS against RUN, read by the exercise's diagnoses."""
    truths, ran = figure_rows.prediction_truths(RUN, N)
    grade_planted(ctx, "predictions", value, truths, facts=ran)
    return failed(ctx)


def grade_answers(ctx, value):
    """`value` graded as the engine grades ANSWERS against FACTS, read by the exercise's diagnoses."""
    facts = {"n": N, "interleaved_idle_theory": 1 / 9}  # (N-1) / (2 * 2N + N-1) at N=2
    grade_planted(ctx, "answers", value, FACTS, facts=facts)


def test_the_reference_predictions_pass(ctx, tmp_path):
    # through the engine and the reference's worker, as the lab grades them
    lab.grade_exercises(ctx, RUN, {}, tmp_path, ("predictions",))
    assert failed(ctx) == {}
    assert len(ctx.checks) == 2 + 4 * 3  # the keys, "n", and each strategy's three figures


def edited(**changes) -> dict:
    """The reference predictions at N with changes: {"ddp.held_bytes": value} or {"n": value}."""
    value = copy.deepcopy(derived_answers.predictions(N))
    for key, v in changes.items():
        strategy, _, field = key.partition("__")
        if field:
            value[strategy][field] = v
        else:
            value[strategy] = v
    return value


P = 1_118_048  # the model's fp32 parameter bytes
WRONG_PREDICTIONS = [  # (what the learner did, the changes, the check that fails, words its message must have)
    ("parameters only", {"ddp__held_bytes": P}, "['ddp']['held_bytes']", "parameters only"),
    (
        "the DDP broadcast forgotten",
        {"ddp__collectives": 1},
        "['ddp']['collectives']",
        "forward broadcast",
    ),
    (
        "FSDP as if replicated",
        {"fsdp__held_bytes": 3 * P},
        "['fsdp']['held_bytes']",
        "DDP's figure",
    ),
    (
        "elements, not bytes",
        {"tp__comm_bytes": 1_128_512 // 4},
        "['tp']['comm_bytes']",
        "elements, not bytes",
    ),
    (
        "wire bytes for buffers",
        {"fsdp__comm_bytes": 1_517_920},
        "['fsdp']['comm_bytes']",
        "on the wire",
    ),
    (
        "pipeline sends only",
        {"pp__collectives": 4},
        "['pp']['collectives']",
        "schedule send or schedule recv",
    ),
    (
        "FSDP's backward gathers forgotten",
        {"fsdp__comm_bytes": 2_236_096},
        "['fsdp']['comm_bytes']",
        "left out backward allgather_base",
    ),
    ("predicted for another N", {"n": 4}, "PREDICTIONS['n']", "predict for this run's N"),
]


def test_fsdp_predicted_with_ddps_figures_is_named_first(ctx):
    ddp = derived_answers.predictions(N)["ddp"]
    grade_predictions(ctx, edited(fsdp=dict(ddp)))
    first = next(c for c in ctx.checks if not c.passed)
    assert first.name.startswith("PREDICTIONS['fsdp']")
    assert first.message.startswith("fsdp: that is DDP's figure"), first.message


def written_forms(n: float) -> set[str]:
    """How a message could write a measured figure: 1118048, 1,118,048, 1 118 048, 1.118.048, 1.12 MB ..."""
    whole = round(n)
    grouped = f"{whole:,}"
    forms = {str(whole), grouped, grouped.replace(",", " "), grouped.replace(",", ".")}
    forms |= {f"{n / 1e6:.2f}", f"{n / 1e3:.0f} kB", f"{n / 1e6:.1f} MB"} if n >= 1e4 else set()
    return forms


def leaked_figures(ctx) -> tuple[int, list]:
    """Every field of every strategy off by a factor, and the planted mistakes, graded: (failed checks, those
    whose value, threshold or message writes the figure they were graded against in any of the forms a number
    is written; the learner's own number may appear: it is theirs)."""
    predicted = [copy.deepcopy(derived_answers.predictions(N)) for _ in range(6)]
    for scale, changed in zip((0.0, 0.3, 0.5, 1.3, 2.0, 7.0), predicted, strict=True):
        for strategy in figure_rows.STRATEGY_RUN:
            changed[strategy] = {k: round(v * scale) for k, v in changed[strategy].items()}
    predicted += [edited(**changes) for _mistake, changes, _check, _words in WRONG_PREDICTIONS]
    truths = {
        (s, name): v
        for f in RUN
        if (s := next((k for k, r in figure_rows.STRATEGY_RUN.items() if r == f["run"]), None))
        for name, v in figure_rows.predicted(f).items()
    }
    leaked, failed_checks = [], 0
    for value in predicted:
        ctx.checks.clear()
        grade_predictions(ctx, value)
        for check in (c for c in ctx.checks if not c.passed):
            key = re.findall(r"\['(\w+)'\]", check.name)
            if len(key) != 2 or truths[tuple(key)] < 10:  # its "n"; a digit any text has (2x)
                continue
            failed_checks += 1
            shown = f"{check.value} {check.threshold} {check.message}"
            mine = value[key[0]][key[1]]
            leaked += [
                (check.name, shown, form)
                for form in written_forms(truths[tuple(key)]) - written_forms(mine)
                if re.search(rf"(?<![\d.,]){re.escape(form)}(?![\d])", shown)
            ]
    return failed_checks, leaked


def test_no_failing_prediction_message_gives_the_measured_value(ctx):
    failed_checks, leaked = leaked_figures(ctx)
    assert failed_checks > 50 and leaked == []


def test_a_message_that_gives_the_measured_value_is_caught(ctx, monkeypatch):
    def measured(evidence):
        strategy = evidence.output.split(".")[0]
        return {"m": f"{evidence.facts[strategy]['comm_bytes']:,}"} if strategy != "n" else None

    planted = (Diagnosis(None, measured, "measured {m}"),)
    predictions = dataclasses.replace(ctx.exercise("predictions"), diagnoses=planted)
    monkeypatch.setattr(ctx, "exercise", lambda name: predictions)
    assert leaked_figures(ctx)[1]


def test_a_missed_prediction_shows_its_direction_and_size_never_the_value(ctx):
    """A secret check: DDP's held bytes predicted as the parameters alone, a third of the run's."""
    grade_predictions(ctx, edited(ddp__held_bytes=P))
    (check,) = [
        c for c in ctx.checks if c.name == "PREDICTIONS['ddp']['held_bytes'] matches this run"
    ]
    assert not check.passed and check.value == "about 3x too low"
    assert str(3 * P) not in f"{check.value} {check.threshold} {check.message}"


def test_a_check_that_is_not_kept_secret_is_caught(ctx, monkeypatch):
    shown = lambda *args, **marks: Check(*args, **{**marks, "secret": False})  # noqa: E731
    monkeypatch.setattr(engine, "Check", shown)  # judge builds each answer's check
    assert leaked_figures(ctx)[1]


@pytest.mark.parametrize(
    "mistake, changes, check, words", WRONG_PREDICTIONS, ids=[w[0] for w in WRONG_PREDICTIONS]
)
def test_wrong_predictions_fail_with_a_pointed_message(ctx, mistake, changes, check, words):
    wrong = grade_predictions(ctx, edited(**changes))
    assert len(wrong) == 1, wrong
    ((name, message),) = wrong.items()
    assert check in name and words in message, (name, message)


def graded_in_the_worker(ctx, work) -> dict[str, str]:
    """Grade the workspace's PREDICTIONS and ANSWERS as the lab does (their values from the learner's worker):
    {exercise id: status}."""
    ctx.options.work = work
    lab.grade_exercises(ctx, RUN, {}, work, ("predictions", "answers"))
    results = ctx.exercise_results()
    return {k: v["status"] for k, v in results.items() if k != "distributed.survey"}


def test_a_fresh_workspace_is_not_started_not_an_error(ctx, tmp_path):
    """The stubs' None crosses the wire: a fresh dict reads as not started, not as a failing exercise."""
    workspace.init(tmp_path / "work", ["distributed"], tmp_path / "results")
    assert graded_in_the_worker(ctx, tmp_path / "work") == {
        "distributed.predictions": checks.NOT_STARTED,
        "distributed.answers": checks.NOT_STARTED,
    }


def test_a_half_filled_prediction_is_graded_and_its_blanks_are_unanswered(ctx, tmp_path):
    work = tmp_path / "work"
    workspace.init(work, ["distributed"], tmp_path / "results")
    path = work / "distributed.py"
    source = path.read_text()
    assert source.count('"held_bytes": None') == 4
    path.write_text(source.replace('"held_bytes": None', f'"held_bytes": {3 * P}', 1))
    assert graded_in_the_worker(ctx, work)["distributed.predictions"] == checks.FAILING
    wrong = failed(ctx)
    passed = {c.name for c in ctx.checks if c.passed}
    assert "PREDICTIONS['ddp']['held_bytes'] matches this run" in passed  # DDP's is right: 3 x P
    assert "`None`" in wrong["PREDICTIONS['fsdp']['held_bytes'] matches this run"]


FACTS = {
    "fsdp_backward_allgathers": 4,
    "logits_gather_bytes": 422_400,
    "gpipe_idle_theory": 0.2,
    "interleaved_sends_rank0": 12,
    "ddp_early_allreduces": 3,  # the small-bucket run's: 4 buckets, the last issued as backward ends
}
WRONG_ANSWERS = [
    ("the root counted", "fsdp_backward_allgathers", 5, "not resharded after forward"),
    ("nothing gathered in backward", "fsdp_backward_allgathers", 0, "must gather them again"),
    ("elements, not bytes", "logits_gather_bytes", 105_600, "elements, not bytes"),
    ("the shard, not the gathered tensor", "logits_gather_bytes", 211_200, "whole vocabulary"),
    ("a percent", "gpipe_idle_theory", 20, "a fraction"),
    ("interleaving's theory", "gpipe_idle_theory", 1 / 9, "interleaved schedule's"),
    ("GPipe's sends", "interleaved_sends_rank0", 4, "GPipe's count"),
    ("every bucket counted", "ddp_early_allreduces", 4, "backward's last gradient"),
    ("the default buckets' count", "ddp_early_allreduces", 0, "default buckets' count"),
]


def test_the_reference_answers_pass_and_match_the_run(ctx, tmp_path):
    truths = figure_rows.answer_truths(RUN, None)
    assert truths["fsdp_backward_allgathers"] == FACTS["fsdp_backward_allgathers"]
    assert derived_answers.answers(N) == pytest.approx(FACTS)
    lab.grade_exercises(ctx, RUN, {}, tmp_path, ("answers",))  # through the engine and the worker
    # the keys, then each question this run measured: not the logits' bytes (they need the tensor-parallel
    # demo's shapes), nor DDP's early all-reduces (this committed run has no small-bucket run)
    assert failed(ctx) == {} and len(ctx.checks) == 1 + 3


@pytest.mark.parametrize(
    "mistake, key, value, words", WRONG_ANSWERS, ids=[w[0] for w in WRONG_ANSWERS]
)
def test_wrong_answers_fail_with_a_pointed_message(ctx, mistake, key, value, words):
    grade_answers(ctx, {**derived_answers.answers(N), key: value})
    wrong = failed(ctx)
    assert len(wrong) == 1, wrong
    ((name, message),) = wrong.items()
    assert key in name and words in message, (name, message)


SPANISH = [  # a planted mistake of each exercise, and words its Spanish message must have
    ("predictions", edited(ddp__held_bytes=P), "has contado solo los parámetros"),
    ("predictions", edited(fsdp__held_bytes=3 * P), "esa es la cifra de DDP"),
    ("predictions", edited(pp__collectives=4), "te has dejado"),
    ("answers", {**derived_answers.answers(N), "gpipe_idle_theory": 20}, "no un porcentaje"),
    ("answers", {**derived_answers.answers(N), "interleaved_sends_rank0": 4}, "la cuenta de GPipe"),
]


@pytest.mark.parametrize("exercise, value, words", SPANISH, ids=[w[2] for w in SPANISH])
def test_a_wrong_prediction_or_answer_is_explained_in_spanish(ctx, exercise, value, words):
    with i18n.using("es"):
        (grade_predictions if exercise == "predictions" else grade_answers)(ctx, value)
        (message,) = failed(ctx).values()
    assert words in message, message


# ---- the survey ----


def mb(x: float) -> str:
    return f"{x / 1e6:.2f} MB"


def by(run: str) -> figure_rows.FigureRow:
    return next(f for f in RUN if f["run"] == run)


def good_survey() -> str:
    """A survey that passes: each strategy in sentences of its own, with this run's figures."""
    ddp, fsdp, tp, gpipe = by("ddp"), by("fsdp"), by("tp"), by("gpipe")
    filler = " ".join(
        ["Measured on my own machine, each number below comes from the run's figures."] * 12
    )
    return f"""# My survey

{filler}

## DDP

DDP keeps a full replica of the model on every rank: {mb(ddp["state_bytes_per_rank"])} of parameters, gradients
and momentum. In backward it runs one all-reduce of the gradients, {mb(ddp["comm_bytes"])} of buffers per step.

## FSDP

FSDP keeps a shard of every parameter on each rank, {mb(fsdp["state_bytes_per_rank"])} here. It must all-gather
the parameters before each unit runs and reduce-scatter the gradients, {mb(fsdp["comm_bytes"])} of buffers.

## Tensor parallel

Tensor parallel splits each big matrix by columns or rows, so a rank holds {mb(tp["state_bytes_per_rank"])}.
Every block waits for an all-reduce of its activations, forward and backward.

## Pipeline parallel

Pipeline parallel gives each rank a stage of blocks. Activations travel by send and recv between
neighbours; my run idled {gpipe["bubble"]:.0%} of the step with GPipe.
"""


def grade_survey(ctx, tmp_path, text: str, run=RUN) -> dict[str, str]:
    """Grade `text` as the learner's survey.md, started from RUN's figures, in a run whose figures are `run`."""
    work = tmp_path / "my-work"
    work.mkdir(exist_ok=True)
    source = f"<!-- figures: {survey.COMMITTED_RUNS[0]} -->"
    (work / "survey.md").write_text(text + "\n" + source + "\n")
    ctx.options.work = work
    with ctx.grading("survey") as document:
        survey.grade(ctx, document, run)
    return failed(ctx)


def test_a_good_survey_passes(ctx, tmp_path):
    assert survey_text.words(good_survey()) >= survey.WORDS["en"][0]
    assert grade_survey(ctx, tmp_path, good_survey()) == {}


def test_the_model_answer_quotes_each_committed_run_as_generated():
    text = survey.MODEL_ANSWER.read_text()
    for path in survey.COMMITTED_RUNS:
        assert tables(figure_rows.read(path), "en") in text, (
            f"survey/README.md: regenerate {path}'s tables"
        )


def test_the_model_answer_passes_against_the_committed_runs(ctx):
    with ctx.grading("survey") as document:
        survey.grade(ctx, document)
    assert failed(ctx) == {}


WRONG_SURVEYS = [
    (
        "one paragraph",
        lambda t: t.split("## DDP")[0][:400],
        "words of prose in survey.md",
        "one page",
    ),
    (
        "no pipeline",
        lambda t: t.split("## Pipeline parallel")[0],
        "pipeline parallel named",
        "no sentence is about",
    ),
    (
        "DDP said to shard",
        lambda t: t.replace(
            "DDP keeps a full replica of the model on every rank", "DDP shards the parameters"
        ),
        "DDP named",
        "what each rank holds",
    ),
    (
        "FSDP said to all-reduce",
        lambda t: t.replace(
            "It must all-gather\nthe parameters before each unit runs and reduce-scatter",
            "It all-reduces the gradients\nafter each unit runs, like",
        ),
        "FSDP named",
        "all-gather",
    ),
    (
        "tensor parallel described as pipeline parallel",
        lambda t: t.replace(
            "Tensor parallel splits each big matrix by columns or rows, so a rank holds",
            "Tensor parallel splits the blocks into consecutive stages, one per rank, so a rank holds",
        ).replace(
            "Every block waits for an all-reduce of its activations, forward and backward.",
            "Each stage sends its activations to the next one, and an all-reduce averages the loss.",
        ),
        "tensor parallel named",
        "a stage of layers is pipeline parallel",
    ),
    (
        "FSDP's collectives swapped",
        lambda t: t.replace(
            "It must all-gather\nthe parameters before each unit runs and reduce-scatter the gradients",
            "It must reduce-scatter\nthe parameters before each unit runs and all-gather the gradients",
        ),
        "FSDP named",
        "says all-gather of gradients",
    ),
    (
        "DDP said to all-reduce activations",
        lambda t: t.replace("one all-reduce of the gradients", "one all-reduce of the activations"),
        "DDP named",
        "what the all-reduce carries (gradients)",
    ),
    (
        "pipeline parallel said to all-reduce",
        lambda t: t.replace(
            "Activations travel by send and recv between\nneighbours",
            "The gradients are all-reduced across the stages",
        ),
        "pipeline parallel named",
        "says all-reduce of gradients",
    ),
    (
        "a paragraph copied from the model answer",
        lambda t: (
            t
            + "\n"
            + survey.MODEL_ANSWER.read_text().split("## DDP\n\n")[1].split("\n\n")[0]
            + "\n"
        ),
        "copied from the model answer",
        "ddp keeps a full replica of the model",
    ),
    (
        "a figure from the H200 run",
        lambda t: t + "\nDDP's step took 14.0 ms on the H200s.\n",
        "traces to the run's figures",
        "14.0 ms",
    ),
]


@pytest.mark.parametrize(
    "mistake, change, check, words", WRONG_SURVEYS, ids=[w[0] for w in WRONG_SURVEYS]
)
def test_wrong_surveys_fail_with_a_pointed_message(ctx, tmp_path, mistake, change, check, words):
    wrong = grade_survey(ctx, tmp_path, change(good_survey()))
    hits = {name: message for name, message in wrong.items() if check in name}
    assert hits and any(words in m for m in hits.values()), wrong


def test_a_negated_collective_claims_nothing(ctx, tmp_path):
    text = good_survey().replace(
        "It must all-gather", "FSDP does not all-reduce the gradients. It must all-gather"
    )
    assert grade_survey(ctx, tmp_path, text) == {}


def test_figures_of_another_run_are_refused(ctx, tmp_path):
    other = [copy.deepcopy(f) for f in RUN]
    other[0]["state_bytes_per_rank"] += (
        4  # this run's code holds other bytes than the run the survey quotes
    )
    wrong = grade_survey(ctx, tmp_path, good_survey(), run=other)
    assert list(wrong) == [
        "survey: its figures share this run's N, bytes and collectives (demos that differ)"
    ]


SURVEY = next(ex for ex in EXERCISES if ex.document)


def test_the_template_waits_for_a_run_is_filled_from_it_and_never_replaces_the_learners(tmp_path):
    """Through the workspace's own hook (Exercise.template): init writes it when a run exists, check after its
    run when init could not; neither replaces a survey.md that is there."""
    from workshop.learner import workspace

    lab_dir = survey.COMMITTED_RUNS[0].parent
    assert (
        SURVEY.document_text(None, tmp_path) is None
        and SURVEY.document_text(tmp_path, tmp_path) is None
    )  # no run yet
    assert workspace.write_waiting_document(tmp_path, SURVEY, lab_dir) == tmp_path / "survey.md"
    filled = (tmp_path / "survey.md").read_text()
    assert mb(by("fsdp")["state_bytes_per_rank"]) in filled
    assert survey.source(filled).endswith("figures.json")
    # traced against the run it came from
    assert survey.readable(tmp_path / survey.source(filled)) == RUN
    assert (
        survey_text.untraced(filled, RUN) == []
        and survey_text.words(filled) < survey.WORDS["en"][0]
    )
    (tmp_path / "survey.md").write_text(filled + "\nMy words.\n")
    assert workspace.write_waiting_document(tmp_path, SURVEY, lab_dir) is None
    assert (tmp_path / "survey.md").read_text().endswith("My words.\n")
