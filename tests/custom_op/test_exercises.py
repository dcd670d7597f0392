"""The custom_op lab's exercises, each piece graded as a learner's code is, in a worker process (the worker protocol): a
learner's correct pieces pass, each typical mistake fails its exercise with a message that names it, out-of-bounds
accesses are stopped at the learner's line, and a learner's workspace is graded through the runner (correct
pieces pass, stubs are "not started", the lab's other checks pass). On a GPU the same grading runs on CUDA."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
from types import SimpleNamespace

import numpy as np
import pytest

from tests.custom_op import planted as custom_op_planted
from tests.custom_op import wrong_solutions as w
from tests.support import lab_process
from tests.support.planted_answers import grade_planted
from workshop import labs
from workshop.declarations import checks
from workshop.foundations.run_options import RunOptions
from workshop.foundations.worker_process import NativeWorker
from workshop.lab_api import LabContext
from workshop.labs.custom_op.grading import kernel_grading, kernel_watch, op_probes, own_op
from workshop.labs.custom_op.grading.exercises import EXERCISES
from workshop.labs.custom_op.grading.launch_facts import ANSWERS
from workshop.learner.learner_code import LearnerFile, Worker
from workshop.ops import softmax_launch

DEVICE = custom_op_planted.DEVICE
# the planted file in a worker, and grade(name, piece) with it (fixtures)
planted, grade = custom_op_planted.planted, custom_op_planted.grade
PIECES = ("forward_kernel", "backward_kernel", "fake", "setup_context", "backward")


def first_failure(ctx: LabContext):
    return next((c for c in ctx.checks if not c.passed), None)


@pytest.mark.parametrize("name, impl", list(zip(PIECES, w.CORRECT, strict=True)), ids=PIECES)
def test_a_learners_correct_piece_passes_gradcheck_opcheck_and_compile(grade, name, impl):
    ctx = grade(name, impl)
    assert first_failure(ctx) is None, first_failure(ctx)
    names = " ".join(c.name for c in ctx.checks)
    assert "gradcheck" in names and "opcheck" in names and "torch.compile(fullgraph=True)" in names
    # A kernel's twin shows the kernel in the compiled step: inlined in a triton_op (a GPU's), launched by a
    # custom_op (the CPU's). The other pieces' twins launch no Triton kernel (their implementation is PyTorch's).
    if name.endswith("_kernel"):
        inlined = DEVICE == "cuda"
        evidence = "inlined into Inductor's code" if inlined else "ran inside the compiled step"
        assert evidence in names


def test_the_compiled_step_ran_the_learners_kernel_not_the_reference(grade):
    """The launch record names the very function: a learner's kernel is told from the reference's."""
    ctx = grade("forward_kernel", w.softmax_fwd_kernel)
    check = next(c for c in ctx.checks if "launched once a call" in c.name)
    assert check.passed and check.value == 4
    if DEVICE == "cpu":
        compiled = next(c for c in ctx.checks if "ran inside the compiled step" in c.name)
        assert compiled.value == ["softmax_fwd_kernel"]  # the twin's backward is PyTorch's


FWD, BWD = "forward_kernel", "backward_kernel"
WRONG = [
    (FWD, w.fwd_calls_torch_softmax, "only triton.language runs: `tl.store(y_ptr + rows"),
    (FWD, w.fwd_python_fallback, "is a function, not a Triton kernel"),
    (FWD, w.fwd_mask_drops_last_column, "never wrote column 599, the last"),
    (FWD, w.fwd_no_max_subtracted, "exp(1000) overflows"),
    (FWD, w.fwd_masked_lanes_load_zero, "masked lanes load 0, not -inf"),
    (FWD, w.fwd_one_row_per_program, "wrote only the first row of each program's"),
    (FWD, w.fwd_float32_always, "float32's accuracy: compute in float64"),
    (FWD, w.fwd_rows_without_constexpr, "ROWS must be annotated `: tl.constexpr`"),
    (FWD, w.fwd_ignores_row_stride, "it takes n_cols for the distance between rows"),
    (
        FWD,
        w.fwd_sums_in_output_dtype,
        "computes in bfloat16 when its input is bfloat16 (in the bfloat16",
    ),
    (BWD, w.bwd_no_sum_term, "returns y * dy: the sum term is missing"),
    (BWD, w.bwd_sign_flipped, "has the sign flipped"),
    (BWD, w.bwd_mask_drops_last_column, "never wrote column 599, the last"),
    (BWD, w.bwd_reads_dy_with_y_stride, "addresses one tensor with another's row stride"),
    (BWD, w.bwd_masked_lanes_load_inf, "masked lanes must load 0 for y and dy"),
    (BWD, w.bwd_writes_into_dy, "wrote nothing into its output"),
    (BWD, w.bwd_skips_accumulation_dtype, "its arithmetic in bfloat16: add, multiply"),
    ("fake", w.fake_empty_like, "all have x's strides, as torch.empty_like(x) gives"),
    ("fake", w.fake_empty_shape, "all row-major (the last dim innermost), as torch.empty(x.shape)"),
    ("fake", w.fake_rows_shape, "your fake says shape (6, 4); the op returns (4, 6)"),
    ("fake", w.fake_default_dtype, "dtype torch.float32; the op returns torch.float64"),
    ("fake", w.fake_reads_data, "A fake implementation gets fake tensors"),
    ("fake", w.fake_returns_x, "returned x itself"),
    ("setup_context", w.setup_saves_x, "setup_context saved x, the input"),
    ("setup_context", w.setup_keeps_y_as_attribute, "saved no tensor with ctx.save_for_backward"),
    ("setup_context", w.setup_forgets_dim, "the backward reads ctx.dim"),
    ("setup_context", w.setup_saves_x_and_y, "saved x and y"),
    (
        "backward",
        w.backward_dx_only,
        "returned a single Tensor: autograd needs one entry per input",
    ),
    ("backward", w.backward_three_gradients, "returned a tuple of 3"),
    ("backward", w.backward_none_first, "a pair whose dx is NoneType"),
    ("backward", w.backward_gradient_for_dim, "the gradient for dim (an int), is a Tensor"),
    ("backward", w.backward_arguments_swapped, "passed y and dy the wrong way round"),
    ("backward", w.backward_without_sum_term, "the sum term is missing"),
]


@pytest.mark.parametrize(
    "name, wrong, expected", WRONG, ids=[f"{n}-{f.__name__}" for n, f, _e in WRONG]
)
def test_a_typical_mistake_fails_with_a_pointed_message(grade, name, wrong, expected):
    failed = first_failure(grade(name, wrong))
    assert failed is not None, "the wrong solution passed"
    assert expected in failed.message, failed


def test_a_python_call_refused_before_a_gpu_compile_is_found_at_its_line():
    """On a GPU, Triton refuses a kernel that calls torch.softmax while hashing what it references, before any
    line is compiled: its error names the function only (this is what compiling fwd_calls_torch_softmax for an
    sm_90 target raises). The grader finds the line that calls it."""
    refused = RuntimeError(
        "Unsupported function referenced: <built-in method softmax of type object at 0x7f22c82cea40>"
    )
    where, text = op_probes.kernel_line(refused, w.fwd_calls_torch_softmax)
    line = w.line_of(w.fwd_calls_torch_softmax, "torch.softmax")
    assert where == f"tests/custom_op/wrong_solutions.py:{line}" and "torch.softmax(x, 1)" in text


@pytest.mark.skipif(DEVICE == "cuda", reason="the interpreter's bounds check: CPU only")
@pytest.mark.parametrize(
    "wrong, place",
    [
        (w.fwd_mask_one_column_past, "x[0, 600] (x is 37 x 600: past the end of row 0"),
        (w.fwd_no_row_mask, "x[37, 0] (x is 37 x 600: past the last row, 36)"),
    ],
    ids=["one column past", "no row mask"],
)
def test_out_of_bounds_is_stopped_at_the_learners_line(grade, wrong, place):
    failed = first_failure(grade(FWD, wrong))
    line = w.line_of(wrong, "tl.load(")
    assert (
        failed.name
        == "softmax_fwd_kernel: loads and stores inside its tensors (the interpreter's bounds check)"
    )
    assert failed.value.startswith(f"tests/custom_op/wrong_solutions.py:{line}: a load outside")
    assert place in failed.value and "Mask it: rows < n_rows" in failed.message


def test_a_stray_address_is_placed_by_the_nearest_tensors_span_not_its_start(monkeypatch):
    """x[4133, 0], the row after x's last, where y starts 70 rows after x ends: it is x's (CI's allocator once
    laid them out so, and a nearest-start rule named y[-70, 544])."""
    x = kernel_watch.Region("x", base=0, itemsize=4, rows=4133, cols=600, row_stride=608)
    y = kernel_watch.Region("y", 4 * 608 * (4133 + 70), 4, 4133, 600, 624)
    monkeypatch.setattr(kernel_watch, "_regions", [x, y])
    stray, lane_on = np.array([4 * 608 * 4133]), np.array([True])
    with pytest.raises(kernel_watch.OutOfBounds) as e:
        kernel_watch._check("load", SimpleNamespace(data=stray), SimpleNamespace(data=lane_on))
    assert (e.value.place["name"], e.value.place["row"], e.value.place["col"]) == ("x", 4133, 0)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "wrong", [w.fwd_mask_one_column_past, w.fwd_no_row_mask], ids=["cols", "rows"]
)
def test_on_a_gpu_stray_stores_show_in_the_guards(grade, wrong):
    failed = first_failure(grade(FWD, wrong))
    assert failed is not None and "guard cells changed" in failed.name
    assert (
        "wrote past the end of a row" in failed.message
        or "wrote rows past the last" in failed.message
    )


def test_the_first_case_keeps_several_forward_rows_a_program_and_fewer_in_the_last():
    # on a GPU a small batch's forward takes one row a program (PROGRAMS_PER_SM); under the interpreter a program
    # takes 32 rows of 600: the first case must keep several, or a kernel that handles one row of each program's, or
    # has no row mask, would pass
    case = kernel_grading.CASES[0]
    align = softmax_launch.alignment(case.cols, case.cols + case.pad)
    (_,), constexprs = softmax_launch.one_pass_plan(case.rows, case.cols, align, 4)
    assert constexprs["ROWS"] >= 2 and case.rows % constexprs["ROWS"]


def test_stubs_are_not_started(tmp_path):
    header = labs.workspace_header("custom_op")
    stubs = header + "\n\n" + "\n\n".join(ex.stub_code() for ex in EXERCISES)
    learner = LearnerFile(stubs, "my-work/custom_op.py", header)
    worker = Worker(NativeWorker(DEVICE, tmp_path / "worker.log"), DEVICE, learner)
    try:
        for ex in (ex for ex in EXERCISES if ex.name in own_op.op_probes.EXERCISES):
            ctx = custom_op_planted.graded(tmp_path, worker, ex.name, ex.attribute, DEVICE)
            failed = first_failure(ctx)
            assert failed.value == checks.NOT_STARTED, (ex.name, failed)
    finally:
        worker.stop()


def test_wrong_answers_say_where_this_run_shows_them(tmp_path):
    ctx = LabContext("custom_op", tmp_path, RunOptions(DEVICE, 1, 0, work=tmp_path))
    facts = dict(ANSWERS)
    given = {**ANSWERS, "block_n": 600, "extern_calls": "2"}
    with contextlib.redirect_stdout(io.StringIO()):
        grade_planted(ctx, "answers", given, facts)
    failed = {c.name: c.message for c in ctx.checks if not c.passed}
    assert list(failed) == [
        "ANSWERS['block_n'] matches this run",
        "ANSWERS['extern_calls'] matches this run",
    ]
    assert "BLOCK_N in the forward kernel's launch" in failed["ANSWERS['block_n'] matches this run"]


@pytest.mark.slow
def test_a_learners_workspace_through_the_runner(tmp_path):
    """Correct kernels and fake, the rest left as stubs: those pass, these are not started, the op made of the
    learner's pieces waits on them (in one line, no check), and the answers, about that op, are not graded yet."""
    left = ("setup_context", "backward", "define_custom_op", "define_triton_op", "answers")
    stubs = [ex.stub_code() for ex in EXERCISES if ex.name in left]
    filled = [w.source_of(w.softmax_fwd_kernel, w.softmax_bwd_kernel, w.softmax_fake), *stubs]
    header = labs.workspace_header("custom_op")
    (tmp_path / "custom_op.py").write_text(header + "\n\n" + "\n\n".join(filled))
    out = tmp_path / "run"
    out.mkdir()
    cmd = lab_process.command("custom_op", out, DEVICE, work=tmp_path)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    result = json.loads((out / "result.json").read_text())
    statuses = {ex_id.split(".")[1]: r["status"] for ex_id, r in result["exercises"].items()}
    passing = {"forward_kernel", "backward_kernel", "fake"}
    expected = {
        name: checks.PASSING if name in passing else checks.NOT_STARTED for name in statuses
    }
    assert statuses == expected | {"answers": checks.NOT_GRADED}, proc.stdout[-3000:]
    assert [c["name"] for c in result["checks"] if not c["passed"] and not c.get("exercise")] == []
    waiting = [name for name in own_op.needed(DEVICE) if name in left]
    assert result["own"]["waiting"] == waiting
    assert "wait on the exercises" in (out / "summary.md").read_text()
    assert (
        "Your pieces were each graded in an operator of their own"
        in (out / "summary.md").read_text()
    )


@pytest.mark.slow
def test_a_correct_workspace_passes_every_exercise_and_check(tmp_path):
    """A learner's file with every piece written and the answers this device's run gives: every exercise passes,
    and every check of the lab, run on the op made of the learner's pieces (on CUDA too, where DEVICE is)."""
    answers = f"ANSWERS = {ANSWERS!r}\n"
    pieces = w.source_of(*w.CORRECT, w.define_custom_op, w.define_triton_op)
    header = labs.workspace_header("custom_op")
    (tmp_path / "custom_op.py").write_text(header + "\n\n" + pieces + "\n\n" + answers)
    out = tmp_path / "run"
    out.mkdir()
    proc = subprocess.run(
        lab_process.command("custom_op", out, DEVICE, work=tmp_path), capture_output=True, text=True
    )
    result = json.loads((out / "result.json").read_text())
    statuses = {ex_id: r["status"] for ex_id, r in result["exercises"].items()}
    assert set(statuses.values()) == {checks.PASSING}, (statuses, proc.stdout[-3000:])
    assert [c["name"] for c in result["checks"] if not c["passed"]] == []
    assert "ran on the op made of all your pieces" in (out / "summary.md").read_text()


@pytest.mark.slow
def test_check_one_exercise_grades_it_alone(tmp_path):
    """`check custom_op forward_kernel`: that exercise graded, the others not, and none of the op's checks run."""
    header = labs.workspace_header("custom_op")
    (tmp_path / "custom_op.py").write_text(header + "\n\n" + w.source_of(w.softmax_fwd_kernel))
    out = tmp_path / "run"
    only = ("custom_op.forward_kernel",)
    cmd = lab_process.command("custom_op", out, DEVICE, work=tmp_path, only=only)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    result = json.loads((out / "result.json").read_text())
    statuses = {ex_id: r["status"] for ex_id, r in result["exercises"].items()}
    assert statuses.pop("custom_op.forward_kernel") == checks.PASSING, proc.stdout[-3000:]
    assert set(statuses.values()) == {checks.NOT_GRADED}
    assert [c for c in result["checks"] if not c.get("exercise")] == []
    assert "Only the exercises asked for were graded" in (out / "summary.md").read_text()
