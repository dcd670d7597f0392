"""What a kernel computes in for half-precision input (custom_op/grading/kernel_watch.py): on the CPU the
interpreter's arithmetic, watched; on a GPU the compiled kernel's Triton IR. Both read here from the same two
kernels, one summing in its input's dtype and one in float32; the IR also from kernels compiled for an sm_90 target
in a process without the interpreter (no GPU needed), so the CPU's tests read the IR a GPU would."""

import os
import subprocess
import sys
import textwrap

import pytest
import torch
import triton
import triton.language as tl

from workshop.labs.custom_op.grading import kernel_watch
from workshop.ops import INTERPRETED
from workshop.ops.triton_launch import launch, recording

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

KERNELS = textwrap.dedent(
    """
    import triton
    import triton.language as tl


    @triton.jit
    def sums_in_input_dtype(x_ptr, y_ptr, N: tl.constexpr):
        cols = tl.arange(0, N)[None, :]
        x = tl.load(x_ptr + cols)
        tl.store(y_ptr + cols, x * tl.sum(x * x, axis=1)[:, None])


    @triton.jit
    def sums_in_float32(x_ptr, y_ptr, N: tl.constexpr):
        cols = tl.arange(0, N)[None, :]
        x = tl.load(x_ptr + cols).to(tl.float32)
        tl.store(y_ptr + cols, x * tl.sum(x * x, axis=1)[:, None])
    """
)


@pytest.fixture(scope="module")
def kernels_file(tmp_path_factory):
    """The kernels as a module of their own: @triton.jit reads its function's source from a file."""
    path = tmp_path_factory.mktemp("precision") / "precision_kernels.py"
    path.write_text(KERNELS)
    return path


def run(kernel) -> dict[str, list[str]]:
    x = torch.linspace(-1, 1, 16, device=DEVICE).to(torch.bfloat16)
    with recording() as launches, kernel_watch.watched() as watched:
        launch(kernel, (1,), (x, torch.empty_like(x)), (), {"N": 16})
    return kernel_watch.half_arithmetic(watched, launches)


@pytest.fixture(scope="module", autouse=True)
def kernels_importable(kernels_file):
    sys.path.insert(0, str(kernels_file.parent))
    yield
    sys.path.remove(str(kernels_file.parent))


@pytest.mark.parametrize(
    "kernel, expected",
    [("sums_in_input_dtype", {"bfloat16": ["add", "multiply"]}), ("sums_in_float32", {})],
)
def test_what_a_kernel_computes_in_is_read_from_what_it_does(kernel, expected):
    import precision_kernels

    assert run(getattr(precision_kernels, kernel)) == expected


COMPILE_FOR_SM90 = """
import triton
from triton.backends.compiler import GPUTarget
import precision_kernels
for name in ("sums_in_input_dtype", "sums_in_float32"):
    source = triton.compiler.ASTSource(
        fn=getattr(precision_kernels, name),
        signature={"x_ptr": "*bf16", "y_ptr": "*bf16", "N": "constexpr"},
        constexprs={"N": 16},
    )
    print(triton.compile(source, target=GPUTarget("cuda", 90, 32)).asm["ttir"])
    print("=====")
"""


def test_the_ir_of_kernels_compiled_for_a_gpu_says_the_same(kernels_file):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(kernels_file.parent)
    out = subprocess.run(
        [sys.executable, "-c", COMPILE_FOR_SM90], env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-2000:]
    in_input_dtype, in_float32 = out.stdout.split("=====")[:2]
    assert kernel_watch.ttir_half_arithmetic(in_input_dtype) == {"bfloat16": {"add", "multiply"}}
    assert kernel_watch.ttir_half_arithmetic(in_float32) == {}


def test_the_ir_reader_on_the_lines_it_looks_for():
    ttir = """
    %5 = arith.mulf %3, %4 : tensor<4x1024xbf16> loc(#loc1)
      %9 = arith.addf %arg6, %arg7 : f16 loc(#loc2)
    %6 = arith.truncf %5 : tensor<4x1024xf32> to tensor<4x1024xbf16> loc(#loc3)
    %7 = arith.subf %1, %2 : tensor<4x1024xf32> loc(#loc4)
    """
    assert kernel_watch.ttir_half_arithmetic(ttir) == {
        "bfloat16": {"multiply"},
        "float16": {"add"},
    }


@pytest.mark.skipif(not INTERPRETED, reason="Triton's interpreter: CPU only")
def test_the_interpreters_bfloat16_arithmetic_is_detected_as_it_is():
    @triton.jit
    def doubled(x_ptr, y_ptr):
        x = tl.load(x_ptr)
        tl.store(y_ptr, x + x)

    x = torch.tensor([0.5], dtype=torch.bfloat16)
    y = torch.empty_like(x)
    doubled[(1,)](x, y)
    assert kernel_watch.interpreter_breaks_bfloat16() == (y.item() != 1.0)
