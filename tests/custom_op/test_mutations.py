"""Planted bugs in the custom_op lab's op, each applied by monkeypatching and each caught by one of the lab's own
checks (run section by section, on the CPU, through Triton's interpreter). The ids read "bug -> the check that
caught it".

Where Triton compiles instead (a GPU host's test process), each case runs in a child process with the
interpreter on: a bug planted by patching Python reaches an interpreted kernel at its next call, while a compiled
kernel is cached by Triton (a patched helper is never compiled in).

The subtle row: with the Triton launches replaced by torch.softmax and _softmax_backward_data every value check
still passes; only the launch record tells, and it does (see test_only_the_launch_record_sees_no_kernel_ran).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl

from tests.custom_op import wrong_solutions as w
from workshop.foundations.run_options import RunOptions
from workshop.lab_api import LabContext
from workshop.labs.custom_op import lab
from workshop.labs.custom_op.grading import correctness as cx
from workshop.labs.custom_op.grading.own_op import own_op
from workshop.ops.triton_launch import INTERPRETED

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def launches_replaced_by_torch() -> dict:
    def forward(x, y, n_rows, n_cols, x_row_stride, y_row_stride, wrap=None, one_pass=None):
        y.copy_(torch.softmax(x, -1))

    def backward(y, dy, dx, n_rows, n_cols, strides, wrap=None, one_pass=None):
        dx.copy_(torch.ops.aten._softmax_backward_data(dy, y, -1, y.dtype))

    return {
        "workshop.ops.softmax_launch.forward": forward,
        "workshop.ops.softmax_launch.backward": backward,
    }


@triton.jit
def row_stats_unscaled(m_ptr, s_ptr, row, n_chunks, CHUNKS_P2: tl.constexpr):
    """_row_stats adding up the pieces' sums without rescaling each by exp(m_i - m)."""
    pieces = tl.arange(0, CHUNKS_P2)
    in_row = pieces < n_chunks
    m_i = tl.load(m_ptr + row * n_chunks + pieces, mask=in_row, other=-float("inf"))
    s_i = tl.load(s_ptr + row * n_chunks + pieces, mask=in_row, other=0.0)
    return tl.max(m_i, axis=0), tl.sum(s_i, axis=0)


def fake_like_the_input(x, dim):
    return torch.empty_like(x)


@dataclass(frozen=True)
class Mutation:
    bug: str
    section: str  # which of the lab's sections runs (SECTIONS)
    caught_by: str  # the start of the name of the lab check that fails
    patches: object  # {"module.attribute": replacement}, or a function returning one


MUTATIONS = [
    Mutation(
        "Triton launches replaced by torch.softmax / _softmax_backward_data",
        "correctness",
        "launch record: softmax of (64, 600) in 4 dtypes ran one forward kernel each",
        launches_replaced_by_torch,
    ),
    Mutation(
        "Triton launches replaced by torch.softmax / _softmax_backward_data, graded as an exercise",
        "forward_kernel exercise",
        "softmax_fwd_kernel: launched once a call, on the plan's grid (launch record)",
        launches_replaced_by_torch,
    ),
    Mutation(
        "the fake implementation lies about strides (empty_like)",
        "autograd",
        "opcheck tests passed",
        {"workshop.ops.softmax_op.empty_output": fake_like_the_input},
    ),
    Mutation(
        "setup_context saves the input x instead of y",
        "autograd",
        "gradcheck/gradgradcheck float64 cases passed",
        {"workshop.ops.softmax_op.setup_context": w.setup_saves_x},
    ),
    Mutation(
        "the backward kernel drops the sum term",
        "autograd",
        "gradcheck/gradgradcheck float64 cases passed",
        {"workshop.ops.softmax_kernels._bwd_one_pass": w.bwd_no_sum_term},
    ),
    Mutation(
        "the forward kernel's mask drops the last column",
        "correctness",
        "float32 (64, 600): max |ours - float64 softmax|",
        {"workshop.ops.softmax_kernels._fwd_one_pass": w.fwd_mask_drops_last_column},
    ),
    Mutation(
        "the long-row split path adds the pieces' sums without rescaling them",
        "correctness",
        "float32 long rows (2, 262144) (long-row kernels): max error",
        {"workshop.ops.softmax_kernels._row_stats": row_stats_unscaled},
    ),
    Mutation(
        "the MiniGPT's use_softmax leaves F.softmax in place",
        "minigpt",
        "launch record: the MiniGPT step ran our forward and backward kernel once per attention layer",
        {"workshop.minigpt.model.GPT.use_softmax": lambda self, softmax: None},
    ),
    Mutation(
        "the profiler trace's inner layers are never wrapped in their ranges",
        "trace",
        "profiler trace: the ladder's rungs, the inner layers and the step, each a range",
        {"workshop.labs.custom_op.eager_cost.INNER": {}},
    ),
]

SECTIONS = {
    "forward_kernel exercise": lambda ctx: lab.grade_pieces(ctx, ("forward_kernel",)),
    "correctness": lambda ctx: lab.check_correctness(ctx, own_op(ctx), cx.shapes("cpu")),
    "autograd": lambda ctx: lab.check_autograd(ctx, own_op(ctx), cx.shapes("cpu")),
    "minigpt": lambda ctx: lab.check_minigpt(ctx, own_op(ctx)),
    "trace": lambda ctx: lab.check_trace(ctx),
}


def run_section(tmp_path, section: str) -> LabContext:
    ctx = LabContext("custom_op", tmp_path, RunOptions("cpu", 1, 0))
    with contextlib.redirect_stdout(io.StringIO()):
        SECTIONS[section](ctx)
    return ctx


def failed(ctx: LabContext) -> list[str]:
    return [c.name for c in ctx.checks if not c.passed]


def failed_here(tmp_path: Path, section: str, mutation: int | None) -> list[str]:
    """The lab checks that fail when `section` runs in this process with MUTATIONS[mutation] planted (or none)."""
    patches = {} if mutation is None else patches_of(MUTATIONS[mutation])
    with pytest.MonkeyPatch.context() as mp:
        for target, replacement in patches.items():
            mp.setattr(target, replacement)
        return failed(run_section(tmp_path, section))


def failed_in_the_interpreter(tmp_path: Path, section: str, mutation: int | None) -> list[str]:
    """failed_here in a child process with Triton's interpreter on (MUTATIONS[mutation]'s patches, or none)."""
    code = (
        "import json, sys\nfrom pathlib import Path\nfrom tests.custom_op import test_mutations as m\n"
        "mutation = json.loads(sys.argv[3])\n"
        "print(json.dumps(m.failed_here(Path(sys.argv[1]), sys.argv[2], mutation)))"
    )
    env = os.environ | {
        "TRITON_INTERPRET": "1",
        "CUDA_VISIBLE_DEVICES": "",
        "PYTHONPATH": str(ROOT),
    }
    child = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path), section, json.dumps(mutation)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    assert child.returncode == 0, child.stdout + child.stderr
    return json.loads(child.stdout.splitlines()[-1])


def patches_of(mutation: Mutation) -> dict:
    return mutation.patches() if callable(mutation.patches) else mutation.patches


def failed_checks(tmp_path: Path, section: str, mutation: int | None = None) -> list[str]:
    """The checks that fail in `section` with MUTATIONS[mutation] planted, where Triton interprets the kernels."""
    if INTERPRETED:
        return failed_here(tmp_path, section, mutation)
    return failed_in_the_interpreter(tmp_path, section, mutation)


@pytest.mark.parametrize(
    "mutation", range(len(MUTATIONS)), ids=[f"{m.bug} -> {m.caught_by}" for m in MUTATIONS]
)
def test_the_lab_catches_the_planted_bug(mutation, tmp_path):
    names = failed_checks(tmp_path, MUTATIONS[mutation].section, mutation)
    assert any(name.startswith(MUTATIONS[mutation].caught_by) for name in names), names


def test_only_the_launch_record_sees_no_kernel_ran(tmp_path):
    """The subtle row: the values are torch's own, so every value check passes; the launch record does not."""
    names = failed_checks(
        tmp_path, "correctness", 0
    )  # MUTATIONS[0]: the launches replaced by torch's
    assert names and all(name.startswith("launch record:") for name in names), names


@pytest.mark.parametrize("section", ["correctness", "autograd", "trace"])
def test_without_a_bug_the_sections_pass(section, tmp_path):
    names = failed_checks(tmp_path, section)
    assert names == [], names


def test_the_child_process_catches_a_planted_bug_as_this_one_does(tmp_path):
    """The GPU hosts' way (failed_in_the_interpreter), run here too so that a CPU machine tests it: the planted
    mask bug fails the same check in the child."""
    mutation = next(i for i, m in enumerate(MUTATIONS) if "mask drops the last column" in m.bug)
    names = failed_in_the_interpreter(tmp_path, MUTATIONS[mutation].section, mutation)
    assert any(name.startswith(MUTATIONS[mutation].caught_by) for name in names), names


@torch.library.custom_op("workshop_tests::column_major_copy", mutates_args=())
def column_major_copy(x: torch.Tensor) -> torch.Tensor:
    """x's values in column-major order: (rows, cols) with strides (1, rows)."""
    return x.t().contiguous().t()


def test_the_fakes_strides_are_compared_on_every_torch():
    """correctness.fake_strides, the check opcheck's fake test leaves out on torch 2.11 (there the planted
    empty_like fake above passed opcheck): a fake that copies x's strides is named, a truthful one passes."""
    from workshop.labs.custom_op.grading import correctness

    x = torch.randn(3, 5)
    column_major_copy.register_fake(lambda x: torch.empty_like(x))  # (5, 1): not the kernel's
    lying = correctness.fake_strides(column_major_copy, (x,))
    assert "Stride mismatch" in str(lying), lying
    column_major_copy.register_fake(lambda x: x.new_empty_strided(x.shape, (1, x.shape[0])))
    assert correctness.fake_strides(column_major_copy, (x,)) == "SUCCESS"
