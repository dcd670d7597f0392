"""The compile lab's exercises graded in-process on saved generated code (no compile): the right answers pass,
a learner's typical mistakes fail with a message that names the mistake, fresh stubs are "not started"."""

import re
from pathlib import Path

import pytest

from tests.support.planted_answers import grade_planted
from workshop import engine, labs
from workshop.declarations import checks
from workshop.foundations.run_options import RunOptions
from workshop.lab_api import LabContext
from workshop.labs.compile.generated_kernels import parse_kernels
from workshop.labs.compile.grading import run_grading
from workshop.labs.compile.grading.exercises import ANSWER_QUESTIONS, ANSWERS, KERNEL
from workshop.labs.compile.kernel_explanation import pick_kernel

FIXTURES = Path(__file__).with_name("fixtures")
SOFTMAX = "cpp_fused__softmax_bitwise_not_masked_fill_mul_slice_view_3"
# Read by hand from cpp_train_forward.txt: the call is (buf17, primals_12, buf14, buf16) on
# (in_out_ptr0, in_ptr0, out_ptr0, out_ptr1); buf17 = buf15 = buf13 viewed (8, 4, 22, 22) float32 (61,952 B),
# primals_12 (32, 32) bool (1,024 B), buf14 and buf16 (8, 4, 22, 1) float32 (2,816 B each).
SOFTMAX_ANSWER = {
    "kernel": SOFTMAX,
    "fused_ops": ["mul", "bitwise_not", "masked_fill", "_softmax"],
    "bytes_read": 61952 + 1024,
    "bytes_written": 61952 + 2816 + 2816,
    "reduction": "looped",
    "grid": [32, 704],  # `x0 < 32` (max pass), `x0 < 704` (sum pass), each under `#pragma omp for`
}
GELU_ANSWER = {  # (buf27, buf28): (176, 256) in, (8, 22, 256) out, float32
    "kernel": "cpp_fused_gelu_view_6",
    "fused_ops": ["gelu", "view"],
    "bytes_read": 180224,
    "bytes_written": 180224,
    "reduction": "none",
    "grid": [45056],
}
FACTS = {  # run_grading.count_facts of a CPU run
    "softmax_calls": 4,
    "extern_matmuls": 33,
    "addmm_calls": 25,
    "optimizer_kernels": 2,
    "parameter_tensors": 62,
    "default_compiles": 2,
    "static_compiles": 4,
    "item_graph_breaks": 1,
}


@pytest.fixture(scope="module")
def cpp_kernels():
    return parse_kernels((FIXTURES / "cpp_train_forward.txt").read_text(), "train/forward")


@pytest.fixture(scope="module")
def triton_kernels():
    return parse_kernels((FIXTURES / "triton_softmax.txt").read_text(), "train/forward")


@pytest.fixture
def ctx(tmp_path):
    (tmp_path / "out").mkdir()
    ctx = LabContext("compile", tmp_path / "out", RunOptions("cpu", 1, 0))
    yield ctx
    ctx.stop_worker()  # the learner's worker, where a test graded a workspace


def grade_kernel(ctx, answer, kernels) -> dict[str, str | None]:
    """Field -> None when its check passed, else the check's message."""
    with ctx.grading("kernel"):
        grade_kernel_answer(ctx, answer, kernels)
    return {c.name.split("'")[1]: None if c.passed else c.message for c in ctx.checks}


def grade_kernel_answer(ctx, answer, kernels) -> None:
    """What the lab does with the learner's KERNEL_EXPLAINED: the one grader, against the kernel they picked."""
    truths, facts = run_grading.kernel_truth(answer, kernels, [])
    engine.grade_answers(ctx, KERNEL, answer, truths, facts)


def failing(results: dict) -> dict:
    return {field: message for field, message in results.items() if message is not None}


@pytest.mark.parametrize("answer", [SOFTMAX_ANSWER, GELU_ANSWER], ids=["softmax", "gelu"])
def test_a_right_kernel_answer_passes(ctx, cpp_kernels, answer):
    assert failing(grade_kernel(ctx, answer, cpp_kernels)) == {}


def test_the_reference_answer_is_the_softmax_read_by_hand(cpp_kernels):
    reference = run_grading.fields_of(pick_kernel(cpp_kernels))
    assert {**reference, "fused_ops": sorted(reference["fused_ops"])} == {
        **SOFTMAX_ANSWER,
        "fused_ops": ["_softmax", "bitwise_not", "masked_fill", "mul", "slice", "view"],
    }


def test_optional_spellings_pass(ctx, cpp_kernels):
    answer = {
        **SOFTMAX_ANSWER,
        "fused_ops": ["aten.mul", "bitwise_not", "masked_fill", "softmax", "view"],
    }
    answer["grid"] = (32, 704)
    assert failing(grade_kernel(ctx, answer, cpp_kernels)) == {}


# A learner's typical mistakes, each with the words its message must contain.
KERNEL_MISTAKES = [
    (
        "name from a GPU run",
        {"kernel": "triton_per_fused__softmax_bitwise_not_masked_fill_mul_3"},
        "kernel",
        "names depend on the device",
    ),
    (
        "name not in this run",
        {"kernel": "cpp_fused__softmax_bitwise_not_masked_fill_mul_slice_view_4"},
        "kernel",
        "no kernel",
    ),
    (
        "fused ops miss the reduction",
        {"fused_ops": ["mul", "bitwise_not", "masked_fill"]},
        "fused_ops",
        "misses the reduction this kernel fuses",
    ),
    (
        "fused ops miss a pointwise op",
        {"fused_ops": ["mul", "masked_fill", "_softmax"]},
        "fused_ops",
        "misses 1 op: read every op in the kernel's name",
    ),
    (
        "fused ops from another kernel",
        {"fused_ops": ["mul", "bitwise_not", "masked_fill", "_softmax", "gelu"]},
        "fused_ops",
        "`gelu` is not fused in this kernel (it is fused in `cpp_fused_gelu_view_6`)",
    ),
    (
        "counted the aliased input twice",
        {"bytes_read": 61952 * 2 + 1024},
        "bytes_read",
        "you counted `buf17` twice",
    ),
    (
        "element count instead of bytes",
        {"bytes_read": 8 * 4 * 22 * 22 + 32 * 32},
        "bytes_read",
        "number of elements, not bytes",
    ),
    ("forgot the stores", {"bytes_written": 0}, "bytes_written", "0 bytes written"),
    (
        "in_out_ptr not counted as written",
        {"bytes_written": 2816 * 2},
        "bytes_written",
        "you left out `buf17`: an in_out_ptr is read and written",
    ),
    (
        "read and written swapped",
        {"bytes_read": 67584},
        "bytes_read",
        "swap bytes_read and bytes_written",
    ),
    (
        "persistent on the CPU",
        {"reduction": "persistent"},
        "reduction",
        "C++ kernels keep no row in registers",
    ),
    ("no reduction", {"reduction": "none"}, "reduction", "this kernel reduces (max, sum)"),
    ("grid of another kernel", {"grid": [45056]}, "grid", "the grid of `cpp_fused_gelu_view_6`"),
    ("one loop only", {"grid": [704]}, "grid", "this kernel has 2 `#pragma omp for` loops"),
    (
        "extents in the other order",
        {"grid": [704, 32]},
        "grid",
        "the extents are right but their order is not",
    ),
    ("grid of unknown extents", {"grid": [31, 704]}, "grid", "in the order the loops appear"),
    (
        "half the bytes read",
        {"bytes_read": (61952 + 1024) // 2},
        "bytes_read",
        "too low by a whole factor",
    ),
]


@pytest.mark.parametrize(
    "change, field, words", [m[1:] for m in KERNEL_MISTAKES], ids=[m[0] for m in KERNEL_MISTAKES]
)
def test_a_kernel_mistake_fails_its_field_with_a_pointed_message(
    ctx, cpp_kernels, change, field, words
):
    results = grade_kernel(ctx, {**SOFTMAX_ANSWER, **change}, cpp_kernels)
    assert list(failing(results)) == [field]
    assert words in results[field]
    assert not answer_in(results[field].replace(str(change[field]), "")), results[field]


def answer_in(message: str) -> list[str]:
    """The figures and ops of SOFTMAX_ANSWER that a message names besides the learner's own value (a message
    names the mistake, never the answer)."""
    numbers = [
        SOFTMAX_ANSWER["bytes_read"],
        SOFTMAX_ANSWER["bytes_written"],
        *SOFTMAX_ANSWER["grid"],
    ]
    plain = re.sub(r"(?<=\d),(?=\d{3})", "", message)  # 62,976 -> 62976
    named = [str(n) for n in numbers if re.search(rf"(?<![\w.]){n}(?![\w])", plain)]
    return named + [op for op in ("softmax", "bitwise_not") if op in message]


def test_a_planted_leak_is_seen_by_answer_in():
    """answer_in catches the messages this lab used to give: the missing op named, the factor that gives the
    bytes."""
    assert answer_in("your list misses `_softmax`: the reduction is fused into this kernel too")
    assert answer_in("read every op: you miss `bitwise_not`")
    assert answer_in("that is not 62,976")


def test_a_wrong_grid_of_a_pointwise_kernel_names_the_owner(ctx, cpp_kernels):
    results = grade_kernel(ctx, {**GELU_ANSWER, "grid": [8]}, cpp_kernels)
    assert failing(results) == {
        "grid": "that is the grid of `cpp_fused_clone_transpose_view_2`, not of this kernel"
    }


TRITON_ANSWER = {
    "kernel": "triton_per_fused__softmax_bitwise_not_masked_fill_mul_3",
    "fused_ops": ["mul", "bitwise_not", "masked_fill", "_softmax"],
    "bytes_read": 61952 + 1024,
    "bytes_written": 61952,
    "reduction": "persistent",
    "grid": [704],
}


@pytest.mark.parametrize(
    "change, field, words",
    [
        ({}, None, None),
        ({"reduction": "looped"}, "reduction", "no `for r0_offset` loop"),
        ({"grid": [704 // 8]}, "grid", "not a count of programs"),
        ({"kernel": SOFTMAX}, "kernel", "names depend on the device"),
    ],
    ids=["right", "looped", "programs", "cpu name"],
)
def test_triton_answers(tmp_path, triton_kernels, change, field, words):
    (tmp_path / "out").mkdir()
    ctx = LabContext("compile", tmp_path / "out", RunOptions("cuda", 1, 0))
    results = failing(grade_kernel(ctx, {**TRITON_ANSWER, **change}, triton_kernels))
    assert list(results) == ([field] if field else [])
    assert field is None or words in results[field]


def learner_file(tmp_path, body: str) -> Path:
    work = tmp_path / "my-work"
    work.mkdir()
    (work / "compile.py").write_text(labs.workspace_header("compile") + "\n" + body)
    return work


def test_fresh_stubs_are_not_started_and_a_half_filled_answer_says_what_is_missing(
    ctx, tmp_path, cpp_kernels
):
    ctx.options.work = learner_file(tmp_path, KERNEL.stub_code() + "\n" + ANSWERS.stub_code())
    with ctx.grading("kernel") as impl:
        grade_kernel_answer(ctx, impl.value, cpp_kernels)
    engine.grade(ctx, "answers", FACTS, facts=FACTS)
    statuses = {ex_id: r["status"] for ex_id, r in ctx.exercise_results().items()}
    assert statuses == {
        "compile.kernel": checks.NOT_STARTED,
        "compile.answers": checks.NOT_STARTED,
    }
    ctx.checks.clear()
    half = {
        **{k: None for k in (q.key for q in KERNEL.questions)},
        "kernel": SOFTMAX,
        "bytes_read": 62976,
    }
    results = grade_kernel(ctx, half, cpp_kernels)
    assert "replace the `None`" in failing(results)["reduction"] and results["bytes_read"] is None
    ctx.checks.clear()
    without_grid = {k: v for k, v in SOFTMAX_ANSWER.items() if k != "grid"}
    assert "add its key" in failing(grade_kernel(ctx, without_grid, cpp_kernels))["grid"]


def test_a_kernel_answer_that_is_not_a_dict_is_one_clear_line(ctx, tmp_path, cpp_kernels):
    ctx.options.work = learner_file(tmp_path, 'KERNEL_EXPLAINED = "cpp_fused_gelu_view_6"\n')
    with ctx.grading("kernel") as impl:
        grade_kernel_answer(ctx, impl.value, cpp_kernels)
    failed = ctx.exercise_results()["compile.kernel"]["failed_check"]
    assert "compile.py" in failed["value"] and "must be a dict" in failed["value"]


def grade_answers(ctx, answers) -> dict[str, str | None]:
    """What the lab does with the learner's ANSWERS: the one engine, with the exercise's diagnoses."""
    grade_planted(ctx, "answers", answers, FACTS, facts=FACTS)
    return {c.name.split("'")[1]: None if c.passed else c.message for c in ctx.checks}


RIGHT_ANSWERS = {q.key: FACTS[q.key] for q in ANSWER_QUESTIONS}


def test_the_reference_answers_pass(ctx):
    assert failing(grade_answers(ctx, RIGHT_ANSWERS)) == {}


ANSWER_MISTAKES = [
    ("softmax defined once", "softmax_calls", 1, "called once per transformer block"),
    ("addmm only", "extern_matmuls", 25, "the attention's two bmm"),
    ("bmm only", "extern_matmuls", 8, "every nn.Linear"),
    ("one kernel per parameter", "optimizer_kernels", 62, "Inductor fuses the updates"),
    (
        "'one or two' from the old text, on a GPU's 5",
        "optimizer_kernels",
        1,
        "their number depends on the device",
    ),
    ("default taken as dynamic", "default_compiles", 1, "the default does not start dynamic"),
    ("default taken as static", "default_compiles", 4, "that is what dynamic=False does"),
    ("graphs instead of breaks", "item_graph_breaks", 2, "that counts graphs, not breaks"),
    ("a string", "softmax_calls", "4", "give a whole number"),
]


@pytest.mark.parametrize(
    "key, value, words", [m[1:] for m in ANSWER_MISTAKES], ids=[m[0] for m in ANSWER_MISTAKES]
)
def test_a_wrong_answer_fails_its_key_with_a_pointed_message(ctx, key, value, words):
    results = grade_answers(ctx, {**RIGHT_ANSWERS, key: value})
    assert list(failing(results)) == [key] and words in results[key]
    own = results[key].replace(repr(value), "")  # the learner's own value may be quoted back
    assert not states(own, FACTS[key]), results[key]


def states(message: str, truth: int) -> bool:
    """Whether a message says the count it grades: as a number, or in words (once, twice, ...)."""
    words = {1: r"one|once|a single", 2: r"two|twice|once more|recompiles once", 4: r"four"}
    words = words.get(truth, r"(?!)")
    return bool(re.search(rf"(?<![\w.]){truth}(?![\w.])|\b(?:{words})\b", message))


def test_states_catches_the_messages_that_gave_the_count():
    """The two messages this exercise used to give that said how often the default compiles, or how many
    breaks there are."""
    assert states("the default recompiles once, then the length is symbolic", 2)
    assert states("that is the number of graphs: a break splits one graph into two", 1)


def test_the_reported_mistake_is_the_one_a_message_names(ctx, cpp_kernels):
    """bytes_read off by no known mistake (where to look) and the grid in the other order (a diagnosis): the
    exercise reports the grid, whose message names what went wrong, though bytes_read comes first."""
    answer = {**SOFTMAX_ANSWER, "bytes_read": 12345, "grid": [704, 32]}
    failed = failing(grade_kernel(ctx, answer, cpp_kernels))
    assert list(failed) == ["bytes_read", "grid"]
    reported = ctx.exercise_results()["compile.kernel"]["failed_check"]
    assert "'grid'" in reported["name"] and "order" in reported["message"]
