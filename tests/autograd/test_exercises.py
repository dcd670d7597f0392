"""The autograd lab's exercises: the reference passes, and a learner's typical wrong solutions fail each
exercise's checks with a message that points at the mistake. Graded on the lab's real batch; the hand-gradient
exercises as a learner's code is (the worker protocol): the wrong solutions' file loaded in a worker process."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.autograd import wrong_solutions as w
from tests.support.autograd_hand_solutions import LEARNER_ENGINE_ORDER, LEARNER_HAND
from tests.support.planted_answers import grade_planted
from workshop import labs
from workshop.declarations import checks
from workshop.foundations import worker_process
from workshop.foundations.run_options import RunOptions
from workshop.foundations.worker_process import NativeWorker
from workshop.i18n import using
from workshop.lab_api import LabContext
from workshop.labs.autograd import lab
from workshop.labs.autograd.batch import load_batch
from workshop.labs.autograd.grading import replay_grading
from workshop.labs.autograd.grading.exercises import EXERCISES
from workshop.labs.autograd.grading.hand_cases import cross_entropy_cases, linear_cases
from workshop.labs.autograd.grading.no_autograd import FORBIDDEN, HAND_RULES
from workshop.labs.autograd.grading.replay_grading import graph_cases
from workshop.labs.autograd.lab import grade_backpropagate, grade_by_hand, grade_hand, grade_order
from workshop.learner.learner_code import (
    LearnerCodeFailed,
    LearnerFile,
    LocalWorker,
    Solution,
    Worker,
    solution_for,
)


@pytest.fixture(scope="module")
def batch():
    return load_batch("cpu")


@pytest.fixture(scope="module")
def cases(batch):
    return {
        "cross_entropy_grad": cross_entropy_cases(batch),
        "linear_grads": linear_cases(batch),
        "graphs": graph_cases(batch),
    }


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """A worker that holds autograd/wrong_solutions.py as a learner's file (its imports its header), each cheat
    of CHEATS bound to a name of its own (ce_cheating_<rule>)."""
    source = Path(w.__file__).read_text(encoding="utf-8")
    source += "".join(f"\nce_cheating_{rule} = ce_cheating({rule!r})\n" for rule in w.CHEATS)
    learner = LearnerFile(source, "tests/autograd/wrong_solutions.py", source)
    worker = Worker(NativeWorker("cpu", tmp_path_factory.mktemp("worker") / "log"), "cpu", learner)
    yield worker
    worker.stop()


def as_learners(worker: Worker, function: str, wrong) -> Solution:
    """The Solution the lab's grading block yields when the learner's `function` is `wrong` (a function of
    autograd_wrong_solutions, or the name of one in the planted file)."""
    ex = next(ex for ex in EXERCISES if ex.name == function)
    name = wrong if isinstance(wrong, str) else wrong.__name__
    return solution_for(worker, [dataclasses.replace(ex, attribute=name)], True)


def grade(ctx: LabContext, function: str, wrong: Solution, cases) -> None:
    """The lab's grading of a hand exercise (through the exercise engine), the learner's function `wrong`."""
    ctx.solution = lambda ex: wrong
    grade_by_hand(ctx, function, cases)


def graded_by(ctx: LabContext, grade_exercise, impl: Solution, cases):
    """The lab's grading of an engine exercise (grade_order, grade_backpropagate: through the exercise engine),
    its function `impl`."""
    ctx.solution = lambda ex: impl
    return grade_exercise(ctx, cases)


def reference(function: str) -> Solution:
    ex = next(ex for ex in EXERCISES if ex.name == function)
    return solution_for(LocalWorker("cpu"), [ex], False)


@pytest.fixture
def ctx(tmp_path):
    return LabContext("autograd", tmp_path, RunOptions("cpu", 1, 0))


def failures(ctx: LabContext) -> list:
    return [c for c in ctx.checks if not c.passed]


def messages(ctx: LabContext) -> str:
    return "\n".join(f"{c.name}: {c.message}" for c in failures(ctx))


CE, LIN = "cross_entropy_grad", "linear_grads"


@pytest.mark.parametrize(
    "function, wrong, expected",
    [
        (CE, w.ce_sum_not_mean, "a sum over the 82 real targets where the loss is their mean"),
        (CE, w.ce_mask_dropped, "the <pad> mask was dropped"),
        (CE, w.ce_mask_on_the_class_column, "the mask applies to the positions"),
        (CE, w.ce_mask_misaligned, "the mask is misaligned"),
        (CE, w.ce_no_max_shift, "subtract each row's max before exp()"),
        (CE, w.ce_sign_flipped, "the sign is flipped"),
        (CE, w.ce_float32_always, "is torch.float32, the inputs are torch.float64"),
        (CE, w.ce_by_autograd, "cross_entropy_grad used autograd's engine"),
        (CE, w.ce_by_torch_func, "cross_entropy_grad used autograd's engine"),
        (CE, w.ce_on_another_thread, "cross_entropy_grad used autograd's engine"),
        (CE, w.ce_by_derivative_op, "aten::nll_loss_backward, aten::_log_softmax_backward_data"),
        (CE, w.ce_float32_softmax, "that is float32's precision (about 7 digits)"),
        (LIN, w.lin_transposed_dW, "dW has shape (64, 600), expected (600, 64): transposed"),
        (LIN, w.lin_db_over_classes, "db has one entry per class"),
        (LIN, w.lin_db_over_batch_only, "db has shape (22, 600), expected (600,)"),
        (LIN, w.lin_dx_not_reshaped, "dx has shape (176, 64), expected (8, 22, 64): the right"),
        (LIN, w.lin_mean_again, "divided by N twice"),
        (LIN, w.lin_by_vjp, "linear_grads used autograd's engine"),
        (LIN, w.lin_float64_off_by_5e7, "every entry is off by the same factor, 1.0000005"),
    ],
    ids=lambda v: v.__name__ if callable(v) else "",
)
def test_hand_wrong_solutions_fail_with_a_pointed_message(
    ctx, cases, planted, function, wrong, expected
):
    grade(ctx, function, as_learners(planted, function, wrong), cases[function])
    assert failures(ctx), "the wrong solution passed"
    assert expected in messages(ctx), messages(ctx)


@pytest.mark.parametrize(
    "wrong, mistake, why",
    [
        (w.ce_mask_dropped, "<pad> positions counted", "the mean over all 176 positions"),
        (w.ce_no_max_shift, "no max shift before exp()", "subtract each row's max"),
        (w.ce_float32_step, "a float32 step in a float64 computation", "1/N = 1/82 rounded"),
        (w.ce_epsilon_in_the_mean, "an epsilon in a denominator", "were N + 1e-06"),
        (w.ce_sign_flipped, "the sign flipped", "P - Y"),
    ],
    ids=lambda v: v.__name__ if callable(v) else "",
)
def test_the_first_failure_names_the_mistake(ctx, cases, planted, wrong, mistake, why):
    """The first failed check the learner reads is the diagnosis, not a raw comparison (a loss
    averaged over <pad> used to lead with "2.42 times autograd's: the wrong scale", a 1e-6 epsilon and a
    float32 step with "0.99999999 times autograd's: the wrong scale")."""
    grade(ctx, CE, as_learners(planted, CE, wrong), cases[CE])
    # what check, summary.md and result.json show for the exercise
    first = checks.reported(ctx.checks)
    assert first.name == "cross_entropy_grad: the mistake its results show" and first.diagnosis
    assert first.value == mistake and why in first.message, (first.value, first.message)
    assert "the wrong scale" not in messages(ctx)


@pytest.mark.parametrize(
    "function, wrong, why, por_que",
    [
        (CE, w.ce_sign_flipped, "dL/dz = P - Y (softmax minus one-hot)", "dL/dz = P - Y"),
        (LIN, w.lin_dW_sign_flipped, "the sign of dW is flipped: dW = G^T X", "el signo de dW"),
        (
            LIN,
            w.lin_db_sign_flipped,
            "the sign of db is flipped: db = the sum of G",
            "el signo de db",
        ),
        (LIN, w.lin_dx_sign_flipped, "the sign of dx is flipped: dx = G W", "el signo de dx"),
    ],
    ids=lambda v: v.__name__ if callable(v) else "",
)
def test_a_flipped_sign_is_named_in_the_gradient_that_has_it(
    ctx, cases, planted, function, wrong, why, por_que
):
    """The issue's case: linear_grads with db's sign alone flipped was told "dL/dz = P - Y ... not Y - P", but
    linear_grads is given dL/dz. The diagnosis names the output whose sign flipped, with its own formula."""
    grade(ctx, function, as_learners(planted, function, wrong), cases[function])
    first = checks.reported(ctx.checks)
    assert first.value == "the sign flipped" and why in first.message, first.message
    assert function == CE or "P - Y" not in messages(ctx)
    with using("es"):
        spanish = LabContext("autograd", ctx.out_dir, RunOptions("cpu", 1, 0, lang="es"))
        grade(spanish, function, as_learners(planted, function, wrong), cases[function])
        assert por_que in checks.reported(spanish.checks).message


NAMED = "cross_entropy_grad, no autograd: named in its code (the grader's reading of your file)"


@pytest.mark.parametrize("rule", HAND_RULES)
def test_each_thing_no_autograd_forbids_fails_its_own_check(ctx, cases, planted, rule):
    """Seen where it ran, on whichever thread or process; and named in the source, read by the lab (the cheats
    share one table of lambdas, so each one's source names them all)."""
    grade(ctx, CE, as_learners(planted, CE, f"ce_cheating_{rule}"), cases[CE])
    assert [c.name for c in failures(ctx)] == [
        f"cross_entropy_grad, no autograd: {FORBIDDEN[rule]}",
        NAMED,
    ]


def test_autograd_named_in_the_source_fails_even_when_the_watch_sees_none(ctx, cases, planted):
    """A learner who switches the watch off in the worker is still read here: ce_by_autograd's source."""
    grade(ctx, CE, as_learners(planted, CE, w.ce_by_autograd), cases[CE])
    named = next(c for c in failures(ctx) if c.name == NAMED)
    assert "requires_grad_ (line" in named.message and "autograd (line" in named.message


def test_float64_off_by_5e7_fails_at_float64_only(ctx, cases, planted):
    """The issue's row: 1e-7 absolute let it through; float64 is now judged at its own scale."""
    wrong = as_learners(planted, "linear_grads", w.lin_float64_off_by_5e7)
    grade(ctx, "linear_grads", wrong, cases["linear_grads"])
    assert [c.name for c in failures(ctx)] == [
        "linear_grads: dL/dW = autograd's (float64): max abs error"
    ]


# ---- engine_order ----
@pytest.mark.parametrize(
    "wrong, expected",
    [
        (w.order_bfs, "step 7: .backward() ran TBackward0"),
        (w.order_bfs, "which sends it a gradient"),
        (w.order_fifo, "the engine picks the highest sequence_nr"),
        (w.order_by_sequence_nr, "AccumulateGrad(b) ran before AddmmBackward0"),
        (w.order_without_leaves, "your order misses 3 of the graph's 10 nodes (AccumulateGrad("),
    ],
    ids=["bfs-order", "bfs-not-topological", "fifo", "sequence-nr-only", "no-leaves"],
)
def test_engine_order_wrong_solutions(ctx, cases, planted, wrong, expected):
    graded_by(
        ctx,
        grade_order,
        as_learners(planted, "engine_order", wrong),
        cases["graphs"],
    )
    assert failures(ctx) and expected in messages(ctx), messages(ctx)


# ---- backpropagate ----
@pytest.mark.parametrize(
    "wrong, expected",
    [
        (w.bp_overwrite, "yours equals only the LM head's (through TBackward0): add a gradient"),
        (
            w.bp_no_fit,
            "b's gradient has shape (176, 600), the leaf has (600,): pass every gradient",
        ),
        (w.bp_keyed_by_id, "no gradient reached x"),
    ],
    ids=["overwrite-at-fan-in", "no-fit-to-input", "keyed-by-id"],
)
def test_backpropagate_wrong_solutions(ctx, cases, planted, wrong, expected):
    graded_by(
        ctx,
        grade_backpropagate,
        as_learners(planted, "backpropagate", wrong),
        cases["graphs"],
    )
    assert failures(ctx) and expected in messages(ctx), messages(ctx)


def test_a_backward_pass_that_returns_no_dict_is_told_what_to_return(ctx, cases, planted):
    """Said where the learner's code runs (replay_grading.leaf_grads), as the failure of their function."""
    with pytest.raises(
        LearnerCodeFailed, match="returned list; return a dict leaf tensor -> gradient"
    ):
        graded_by(
            ctx,
            grade_backpropagate,
            as_learners(planted, "backpropagate", w.bp_returns_a_list),
            cases["graphs"],
        )


def test_overwrite_at_fan_in_is_the_first_failure(ctx, cases, planted):
    graded_by(
        ctx,
        grade_backpropagate,
        as_learners(planted, "backpropagate", w.bp_overwrite),
        cases["graphs"],
    )
    first = checks.reported(ctx.checks)
    assert (first.name, first.value) == (
        "backpropagate: the mistake its results show",
        "overwrite at fan-in",
    )
    assert "do not overwrite it" in first.message


def test_overwriting_passes_the_graph_without_fan_in(ctx, cases, planted):
    """Why the weight-decay graph is in the grading: on the LM head alone, overwriting is not wrong."""
    graded_by(
        ctx,
        grade_backpropagate,
        as_learners(planted, "backpropagate", w.bp_overwrite),
        cases["graphs"],
    )
    compared = [c for c in failures(ctx) if "max abs difference" in c.name]
    assert compared and all("(LM head + weight decay, " in c.name for c in compared)


# ---- answers ----
@pytest.mark.parametrize(
    "change, expected, message",
    [
        ({"graph_nodes": 9}, "ANSWERS['graph_nodes']", "is not what this run shows: "),
        (
            {"addmm_bias_grad_shape": "(176, 600)"},
            "ANSWERS['addmm_bias_grad_shape']",
            "give a list",
        ),
        ({"first_leaf": "x"}, "ANSWERS['first_leaf']", "is not what this run shows: "),
        ({"db_sum": 1e-3}, "ANSWERS['db_sum']", "is not what this run shows: "),
    ],
)
def test_wrong_answers_fail_and_say_where_to_look(ctx, cases, change, expected, message):
    facts = replay_grading.measure_facts(cases["graphs"])
    grade_planted(ctx, "answers", replay_grading.ANSWERS | change, facts)
    assert [c.name for c in failures(ctx)] == [f"{expected} matches this run"]
    # wording unified by the one grader: a wrong kind of value says what kind to give
    assert message in failures(ctx)[0].message


def test_unanswered_is_not_started(ctx, cases):
    facts = replay_grading.measure_facts(cases["graphs"])
    unanswered = dict.fromkeys(replay_grading.ANSWERS)  # every answer the stub's None
    with (
        pytest.raises(NotImplementedError, match="autograd.answers: Answer"),
    ):
        grade_planted(ctx, "answers", unanswered, facts)


# ---- the references pass; a learner's own correct code passes through the workspace ----
def test_the_references_pass_every_exercise(ctx, cases):
    grade(ctx, "cross_entropy_grad", reference("cross_entropy_grad"), cases["cross_entropy_grad"])
    grade(ctx, "linear_grads", reference("linear_grads"), cases["linear_grads"])
    graded_by(ctx, grade_order, reference("engine_order"), cases["graphs"])
    graded_by(ctx, grade_backpropagate, reference("backpropagate"), cases["graphs"])
    facts = replay_grading.measure_facts(cases["graphs"])
    grade_planted(ctx, "answers", replay_grading.ANSWERS, facts)  # the reference's answers
    assert ctx.checks and not failures(ctx), messages(ctx)


def test_a_learners_correct_hand_gradients_pass_and_the_rest_is_not_started(ctx, batch, tmp_path):
    stubs = [
        ex.stub_code() for ex in EXERCISES if ex.name not in ("cross_entropy_grad", "linear_grads")
    ]
    header = labs.workspace_header("autograd")
    (tmp_path / "autograd.py").write_text(header + LEARNER_HAND + "\n\n".join(stubs))
    ctx.options.work = tmp_path
    grade_hand(ctx, batch)
    results = ctx.exercise_results()
    assert results["autograd.cross_entropy_grad"]["status"] == checks.PASSING, messages(ctx)
    assert results["autograd.linear_grads"]["status"] == checks.PASSING, messages(ctx)


def test_a_probe_over_several_pieces_gets_the_learners_or_the_references(ctx, tmp_path):
    """LabContext.probe (the worker protocol, several pieces at once): the references on a reference run, the learner's
    functions in the worker when a workspace is graded, every missing one named."""
    names = ("cross_entropy_grad", "linear_grads")
    assert ctx.probe(sorted, attributes=names) == list(names)
    (tmp_path / "autograd.py").write_text(
        labs.workspace_header("autograd") + LEARNER_HAND.split("def linear_grads")[0]
    )
    ctx.options = dataclasses.replace(ctx.options, work=tmp_path)
    ctx._worker = None
    try:
        with pytest.raises(LearnerCodeFailed) as e:
            ctx.probe(sorted, attributes=(*names, "engine_order"))
        assert (e.value.kind, e.value.error) == ("missing", "linear_grads, engine_order")
        assert ctx.probe(len, attributes=names[:1]) == 1
    finally:
        ctx._worker.stop()


def test_kahn_with_a_heap_is_what_the_hint_describes(tmp_path, cases):
    """The hints' recipe, written as a learner would, passes in a worker: the grader asks for nothing more."""
    stubs = [ex.stub_code() for ex in EXERCISES if ex.name != "engine_order"]
    header = labs.workspace_header("autograd")
    (tmp_path / "autograd.py").write_text(header + LEARNER_ENGINE_ORDER + "\n\n".join(stubs))
    options = RunOptions("cpu", 1, 0, work=tmp_path, only=("autograd.engine_order",))
    (tmp_path / "out").mkdir()
    ctx = LabContext("autograd", tmp_path / "out", options)
    try:
        lab.grade_order(ctx, cases["graphs"])
    finally:
        ctx.stop_worker()
    assert ctx.checks and not failures(ctx), messages(ctx)


@pytest.mark.parametrize("lab_name", ["autograd", "dispatcher"])
def test_every_code_exercise_has_three_hint_levels_in_both_languages(lab_name):
    """A direction, then the formula, then a skeleton without the key lines, each translated."""
    code = [ex for ex in labs.exercises(lab_name) if callable(ex.load_reference())]
    assert code
    for ex in code:
        assert len(ex.hints) == 3, ex.id
        with using("es"):
            spanish = ex.localized().hints
        assert all(es != en for es, en in zip(spanish, ex.hints, strict=True)), ex.id


@pytest.mark.parametrize("name", [ex.name for ex in EXERCISES])
def test_a_check_of_one_exercise_runs_only_what_it_needs(tmp_path, name):
    """`check autograd EXERCISE`: that exercise's checks, none of the lab's own, no figure."""
    ctx = LabContext("autograd", tmp_path, RunOptions("cpu", 1, 0, only=(f"autograd.{name}",)))
    lab.run(ctx)
    assert ctx.checks and {c.exercise for c in ctx.checks} == {f"autograd.{name}"}
    assert not (tmp_path / "graph.png").exists() and "Graded only" in ctx.summary


# ---- the watch in a worker of a CUDA build of torch ----
@pytest.mark.gpu
@pytest.mark.parametrize(
    "device, address_space_limited",
    [("cpu", False), ("cuda", False), ("cpu", True)],
    ids=["cpu", "cuda", "planted-RLIMIT_AS-cpu"],
)
def test_the_watched_worker_lives_on_a_cuda_build(
    tmp_path, monkeypatch, device, address_space_limited
):
    """On the H200 host every hand exercise's worker died of SIGSEGV ("libgomp: Thread creation failed") while
    its limit was on the address space, which a CUDA build of torch reserves by the tens of GiB; the worker's
    limit is now on the memory it writes. Planted: the old 16 GiB address-space limit of a CPU worker (a CUDA
    worker never had one), which must still kill it (else this test proves nothing on this machine). The worker
    keeps its own thread count, as under `check`: with tests/conftest.py's share of 2 threads the planted limit
    left room enough and the worker lived."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    if address_space_limited:
        monkeypatch.setitem(worker_process.RLIMITS, "RLIMIT_AS", (16 * 2**30, 16 * 2**30))
    source = Path(w.__file__).read_text(encoding="utf-8")
    learner = LearnerFile(source, "tests/autograd/wrong_solutions.py", source)
    worker = Worker(NativeWorker(device, tmp_path / "log"), device, learner)
    ctx = LabContext("autograd", tmp_path / "run", RunOptions(device, 1, 0))
    try:
        if address_space_limited:
            with pytest.raises(LearnerCodeFailed, match="SIGSEGV|SIGABRT|died"):
                grade(
                    ctx,
                    LIN,
                    as_learners(worker, LIN, w.lin_transposed_dW),
                    linear_cases(load_batch(device)),
                )
            return
        grade(
            ctx,
            LIN,
            as_learners(worker, LIN, w.lin_transposed_dW),
            linear_cases(load_batch(device)),
        )
    finally:
        worker.stop()
    assert "dL/dW = autograd's (float32)" in messages(ctx) and "transposed" in messages(ctx)
