"""The handout's worked example (section 3, "Reading one kernel") is what Inductor generates: the backward of a
small MLP that is not the MiniGPT, compiled here (about 20 s of g++), read the way the lab reads kernels. The
handout's call() lines are in the generated code and its figures are the ones read from it."""

import re
from pathlib import Path

import pytest
import torch

from workshop.labs.compile.capture import compile_and_capture
from workshop.labs.compile.generated_kernels import parse_kernels
from workshop.labs.compile.loops import kernel_structure

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "workshop/labs/compile"
PINNED = re.search(r"^torch==(\S+)", (ROOT / "requirements-pinned.txt").read_text(), re.M)[1]
pytestmark = [
    pytest.mark.slow,
    # another release writes other code (torch 2.11 on the GPU hosts: other lines, other loops)
    pytest.mark.skipif(
        torch.__version__.split("+")[0] != PINNED,
        reason=f"the handout quotes the code of the pinned torch {PINNED}; this is torch {torch.__version__}",
    ),
]
KERNEL = "cpp_fused_gelu_gelu_backward_sum_view_1"


@pytest.fixture(scope="module")
def backward_code() -> str:
    """Linear(48, 96), GELU, Linear(96, 48) on a (5, 12, 48) input: the generated backward module."""
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(48, 96), torch.nn.GELU(), torch.nn.Linear(96, 48))

    def loss(x):
        return mlp(x).square().mean()

    def forward_backward(compiled, x):
        compiled(x).backward()

    _fn, _out, capture = compile_and_capture(loss, forward_backward, torch.randn(5, 12, 48))
    return capture["code"]["backward"]


def code_block(handout: str) -> list[str]:
    """The lines of the worked example's call() excerpt: the first code block after 'Reading one kernel'."""
    section = re.split(r"### (?:Reading one kernel|Leer un kernel)", handout)[1]
    return section.split("```")[1].strip().splitlines()


@pytest.mark.parametrize("handout", ["README.md", "README.es.md"])
def test_the_handouts_call_lines_are_inductors(backward_code, handout):
    lines = {line.strip() for line in backward_code.splitlines()}
    assert [ln for ln in code_block((LAB / handout).read_text()) if ln.strip() not in lines] == []


def test_the_handouts_figures_are_read_from_the_code(backward_code):
    (kernel,) = [k for k in parse_kernels(backward_code, "backward") if k.name == KERNEL]
    structure = kernel_structure(kernel.source, kernel.language)
    assert (kernel.traffic("load"), kernel.traffic("store")) == (46080, 23424)
    assert (structure["reduction_kind"], structure["grid"]) == ("looped", [5760, 96])
    assert [(a["name"], a["role"]) for a in kernel.arguments] == [
        ("buf4", "load+store"),
        ("addmm", "load"),
        ("buf6", "store"),
    ]
