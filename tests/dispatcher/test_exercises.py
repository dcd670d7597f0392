"""The dispatcher lab's exercises graded in-process on one CPU trace, as the lab grades them (lab.grade_exercises,
the one engine): the reference passes each one, and a learner's typical wrong solutions, planted in the
reference's place, fail it with a message that points at the mistake. One end-to-end run grades fresh stubs
through the runner: every exercise check fails, every other check passes."""

from __future__ import annotations

import pytest

from workshop import labs
from workshop.foundations.run_options import RunOptions
from workshop.lab_api import LabContext
from workshop.labs.dispatcher import lab, reimpl
from workshop.labs.dispatcher.grading import reference_answers
from workshop.labs.dispatcher.grading.exercises import EXERCISES
from workshop.labs.dispatcher.keys import TableEntry, split_runtime_key
from workshop.labs.dispatcher.reimpl import functionality, rank
from workshop.labs.dispatcher.scenario_list import all_scenarios
from workshop.labs.dispatcher.tracing import lm_head_input, run_scenario
from workshop.minigpt import checkpoint


@pytest.fixture(scope="module")
def results():
    model = checkpoint.load(device="cpu")
    x = lm_head_input(model, 0, "cpu")
    return [run_scenario(sc, model.lm_head, x)[0] for sc in all_scenarios(["cpu"])]


def failed(ctx: LabContext) -> list:
    return [c for c in ctx.checks if not c.passed]


@pytest.fixture
def grade(tmp_path, results):
    """grade(name): the lab's grading of that exercise alone (`check dispatcher NAME`) on the trace, with what
    is in the reference's place; its context, checks and all."""

    def graded(name: str) -> LabContext:
        ctx = LabContext(
            "dispatcher", tmp_path, RunOptions("cpu", 1, 0, only=(f"dispatcher.{name}",))
        )
        lab.grade_exercises(ctx, results)
        return ctx

    return graded


# the reference's functions, which the wrong ones below call after they replace them
REFERENCE_TABLE_ENTRY, REFERENCE_WALK = reimpl.table_entry, reimpl.walk


# ---- table_entry: the reference, and six wrong precedences ----
def implicit_before_backend_kernel(regs, fallbacks, key):
    """The decomposition at every autograd key, even where the backend has a kernel of its own."""
    if functionality(key) in reimpl.AUTOGRAD and key not in regs and reimpl.IMPLICIT in regs:
        return TableEntry(regs[reimpl.IMPLICIT].source, "math kernel", False)
    return REFERENCE_TABLE_ENTRY(regs, fallbacks, key)


def fallback_first(regs, fallbacks, key):
    """The key's fallback before anything the op registered."""
    return fallbacks.get(key) or REFERENCE_TABLE_ENTRY(regs, {}, key)


def explicit_everywhere(regs, fallbacks, key):
    """CompositeExplicitAutograd at every key that has no direct kernel, autograd keys included."""
    if key not in regs and "CompositeExplicitAutograd[alias]" in regs:
        entry = regs["CompositeExplicitAutograd[alias]"]
        return TableEntry(entry.source, "default backend kernel", False)
    return REFERENCE_TABLE_ENTRY(regs, fallbacks, key)


def aliases_before_direct(regs, fallbacks, key):
    """An alias key's kernel wins over a kernel registered for exactly this key."""
    if functionality(key) == "Dense":
        for alias in reimpl.EXPLICIT:
            if alias in regs:
                return TableEntry(regs[alias].source, "default backend kernel", False)
    return REFERENCE_TABLE_ENTRY(regs, fallbacks, key)


def fallthrough_dropped(regs, fallbacks, key):
    """The right kernel, but the fallthrough flag lost on the way."""
    entry = REFERENCE_TABLE_ENTRY(regs, fallbacks, key)
    return entry and TableEntry(entry.source, entry.tag, False)


def another_file(regs, fallbacks, key):
    """The right kind of kernel, but not the registration that holds it."""
    entry = REFERENCE_TABLE_ENTRY(regs, fallbacks, key)
    return entry and TableEntry("elsewhere.cpp", entry.tag, entry.fallthrough)


def test_the_reference_table_entry_agrees_on_every_slot(grade, results):
    recorded, swept = lab.slot_cases(results)
    assert len(recorded.args[0]) >= 20 and len(swept.args[0]) >= 100
    ctx = grade("table_entry")
    assert len(ctx.checks) == 3 and not failed(ctx)  # the mistake its results show, then each case


@pytest.mark.parametrize(
    "wrong, says",
    [
        (implicit_before_backend_kernel, "AutogradNestedTensor"),
        (implicit_before_backend_kernel, "backend it wraps has no kernel of its own"),
        (fallback_first, "A backend fallback is the last resort"),
        (explicit_everywhere, "fills dense backend keys (CPU, CUDA, Meta) only"),
        (aliases_before_direct, "registered for exactly this key comes first"),
        (fallthrough_dropped, "fallthrough flag"),
        (another_file, "Right kind of kernel, wrong file"),
    ],
)
def test_a_wrong_precedence_fails_table_entry_with_the_rule_it_breaks(
    grade, monkeypatch, wrong, says
):
    monkeypatch.setattr(reimpl, "table_entry", wrong)
    ctx = grade("table_entry")
    messages = " ".join(c.message for c in failed(ctx))
    assert failed(ctx) and says in messages, messages


# ---- walk: the reference, and six wrong walks ----
def exclude_ignored(entry, tensor_keys, include, exclude):
    return REFERENCE_WALK(entry, tensor_keys, include, ())


def exclude_by_name(entry, tensor_keys, include, exclude):
    """Removes 'AutogradFunctionality' but not AutogradCPU: names compared, not functionalities."""
    return REFERENCE_WALK(entry, set(tensor_keys) - set(exclude), set(include) - set(exclude), ())


def fallthrough_kept(entry, tensor_keys, include, exclude):
    def without_fallthrough(key):
        e = entry(key)
        return e and TableEntry(e.source, e.tag, False)

    return REFERENCE_WALK(without_fallthrough, tensor_keys, include, exclude)


def no_redispatch(entry, tensor_keys, include, exclude):
    """Only the winning key: the call never goes on below it."""
    return REFERENCE_WALK(entry, tensor_keys, include, exclude)[:1]


def never_stops(entry, tensor_keys, include, exclude):
    keys = reimpl.keys_in_play(tensor_keys, include, exclude)
    live = (k for k in keys if (e := entry(k)) is not None and not e.fallthrough)
    return sorted(live, key=rank, reverse=True)


def bottom_up(entry, tensor_keys, include, exclude):
    """The backend first, up to the top: the order of the enum in DispatchKey.h, read as priority."""
    return REFERENCE_WALK(entry, tensor_keys, include, exclude)[::-1]


def test_the_reference_walk_agrees_on_every_call(grade):
    ctx = grade("walk")
    assert len(ctx.checks) == 2 and not failed(ctx)


@pytest.mark.parametrize(
    "wrong, says",
    [
        (exclude_ignored, "TLS exclude set holds"),
        (exclude_by_name, "compare functionalities"),
        (fallthrough_kept, "is a fallthrough"),
        (no_redispatch, "passes the call on"),
        (never_stops, "whose kernel does the work: stop there"),
        (bottom_up, "highest priority"),
    ],
)
def test_a_wrong_walk_fails_with_what_its_chain_shows(grade, monkeypatch, wrong, says):
    monkeypatch.setattr(reimpl, "walk", wrong)
    ctx = grade("walk")
    assert failed(ctx) and says in failed(ctx)[0].message, failed(ctx)[0].message


@pytest.mark.parametrize(
    "name, wrong, mistake",
    [
        ("table_entry", fallback_first, "the backend fallback before the op's own kernels"),
        ("table_entry", explicit_everywhere, "CompositeExplicitAutograd beyond the dense keys"),
        ("table_entry", fallthrough_dropped, "a wrong fallthrough flag"),
        ("table_entry", another_file, "another registration of the right kind"),
        ("walk", exclude_ignored, "an excluded key walked"),
        ("walk", fallthrough_kept, "a fallthrough slot walked"),
        ("walk", no_redispatch, "a chain that stops where the kernel passes the call on"),
        ("walk", never_stops, "a chain that goes on past the kernel that does the work"),
        ("walk", bottom_up, "a key of lower priority first"),
    ],
)
def test_a_named_mistake_is_the_first_failed_check(grade, monkeypatch, name, wrong, mistake):
    """The mistake its results show is a check of its own, reported first, its message the diagnosis's."""
    monkeypatch.setattr(reimpl, name, wrong)
    first, *outputs = failed(grade(name))
    assert (first.name, first.value) == (f"{name}: the mistake its results show", mistake)
    assert outputs and first.message in [c.message for c in outputs]


# ---- predictions and answers ----
def _predictions(**changes):
    out = {name: dict(p) for name, p in reference_answers.PREDICTIONS.items()}
    for name, change in changes.items():
        out[name.replace("__", "/")].update(change)
    return out


def test_the_reference_predictions_and_answers_match_the_run(grade):
    for name in ("predictions", "answers"):
        ctx = grade(name)
        assert ctx.checks and not failed(ctx)
    assert set(reference_answers.PREDICTIONS) == {sc["name"] for sc in all_scenarios(["cpu"])}


@pytest.mark.parametrize(
    "predicted, says",
    [
        (_predictions(cpu__grad__3d={"handled_at": "Python"}), "only hands the call on"),
        (_predictions(cpu__grad__3d={"handled_at": "CPU"}), "List the keys in play"),
        (_predictions(cpu__inference_mode__3d={"handled_at": "AutogradCPU"}), "removes every"),
        (_predictions(cpu__autocast_bf16__3d={"handled_at": "AutogradCPU"}), "rank them"),
        (_predictions(cpu__grad__2d={"gemm_op": "aten::mm"}), "Where does the bias go?"),
        (_predictions(cpu__matmul__3d={"gemm_op": "aten::bmm"}), "does the product need a batch?"),
        (_predictions(cpu__matmul__2d={"gemm_op": "aten::matmul"}), "runs no GEMM itself"),
    ],
)
def test_a_wrong_prediction_fails_with_a_pointed_message(
    grade, monkeypatch, results, predicted, says
):
    """The message says what to reconsider, and never the fact the prediction missed (a
    prediction must stay one until it is right)."""
    monkeypatch.setattr(reference_answers, "PREDICTIONS", predicted)
    ctx = grade("predictions")
    assert failed(ctx) and says in failed(ctx)[0].message, failed(ctx)[0].message
    facts = lab.prediction_facts(results)
    (name, field, actual), *_ = (
        (name, field, value)
        for name, fact in facts.items()
        for field, value in fact.items()
        if predicted[name][field] != value
    )
    assert repr(actual) not in failed(ctx)[0].message  # as the message used to show it: 'CPU'


def test_a_missing_scenario_is_a_wrong_prediction(grade, monkeypatch):
    predicted = dict(reference_answers.PREDICTIONS)
    del predicted["cpu/matmul_batched/3d"]
    monkeypatch.setattr(reference_answers, "PREDICTIONS", predicted)
    ctx = grade("predictions")
    # both facts of the scenario, each a check of its own (the one grader's)
    assert [c.value for c in failed(ctx)] == ["missing", "missing"]


@pytest.mark.parametrize(
    "key, wrong",
    [
        ("addmm_chain_without_recorder", ["PythonTLSSnapshot", "AutogradCPU", "Python", "CPU"]),
        ("addmm_chain_without_recorder", ["CPU", "AutogradCPU"]),  # a chain is in order
        # the weight's keys: what a tensor made outside inference_mode carries
        ("inference_result_keys", ["ADInplaceOrView", "AutocastCPU", "AutogradCPU", "CPU"]),
        ("addmm_ADInplaceOrView_fallthrough", False),
        ("matmul_3d_last_op", "aten::view"),
    ],
)
def test_a_wrong_answer_names_its_question_without_giving_the_answer(
    grade, monkeypatch, key, wrong
):
    right = reference_answers.ANSWERS[key]
    monkeypatch.setitem(reference_answers.ANSWERS, key, wrong)
    ctx = grade("answers")
    [wrong_check] = failed(ctx)
    # the one grader names the key in the check, the handout's question in the stub's comment
    assert wrong_check.name == f"ANSWERS[{key!r}] matches this run"
    assert "that question's section of the handout" in wrong_check.message
    assert repr(right) not in wrong_check.message


def test_a_set_of_keys_may_be_given_as_one_name_or_a_collection(grade, monkeypatch):
    monkeypatch.setitem(reference_answers.ANSWERS, "inference_result_keys", {"CPU", "AutocastCPU"})
    ctx = grade("answers")
    assert not failed(ctx)


# ---- the workspace file, end to end ----
def stub_source() -> str:
    return "\n\n".join([labs.workspace_header("dispatcher"), *(ex.stub_code() for ex in EXERCISES)])


def test_the_stubs_name_every_answer_and_scenario_and_compile(results):
    namespace = {}
    exec(compile(stub_source(), "dispatcher.py", "exec"), namespace)
    assert set(namespace["ANSWERS"]) == set(lab.answer_facts(results))
    assert set(namespace["PREDICTIONS"]) == set(lab.prediction_facts(results))
    assert split_runtime_key("AutogradCPU") == ("AutogradFunctionality", "CPU")  # a header import
    with pytest.raises(NotImplementedError, match="^dispatcher.walk$"):
        namespace["walk"](None, set(), set(), set())


@pytest.mark.parametrize("name", ["table_entry", "walk", "predictions", "answers"])
def test_a_check_of_one_exercise_runs_only_what_it_needs(tmp_path, name):
    """`check dispatcher EXERCISE`: that exercise's checks, none of the lab's own, no outputs."""
    ctx = LabContext("dispatcher", tmp_path, RunOptions("cpu", 1, 0, only=(f"dispatcher.{name}",)))
    lab.run(ctx)
    assert ctx.checks and {c.exercise for c in ctx.checks} == {f"dispatcher.{name}"}
    assert not (tmp_path / "trace.md").exists() and "Graded only" in ctx.summary


WRONG_WALK = """
def walk(entry, tensor_keys, include, exclude):
    in_play = {k for k in set(tensor_keys) | set(include) if not ((e := entry(k)) and e.fallthrough)}
    return [max(in_play, key=rank)]  # the winning key alone: no redispatch
"""


def test_a_wrong_walk_in_the_worker_fails_with_what_its_chain_shows(tmp_path):
    """The learner's walk runs in the worker (the worker protocol): the probe gives it the real tables there, and the
    verdict is made here, from the chains it sent back."""
    stubs = [ex.stub_code() for ex in EXERCISES if ex.name != "walk" and ex.attribute != "ANSWERS"]
    (tmp_path / "dispatcher.py").write_text(
        labs.workspace_header("dispatcher") + WRONG_WALK + "\n\n".join(stubs)
    )
    (tmp_path / "out").mkdir()
    options = RunOptions("cpu", 1, 0, work=tmp_path, only=("dispatcher.walk",))
    ctx = LabContext("dispatcher", tmp_path / "out", options)
    try:
        lab.run(ctx)
    finally:
        ctx.stop_worker()
    mistake, chains = failed(ctx)
    assert (mistake.name, mistake.value) == (
        "walk: the mistake its results show",
        "a chain that stops where the kernel passes the call on",
    )
    assert chains.name == (
        "walk: recorded calls whose chain differs from the real dispatcher's (whole chains)"
    )
    assert "passes the call on" in mistake.message and chains.message == mistake.message
