"""The handout's worked example (workshop/labs/custom_op/row_norm.py) does what the handout says: its kernel, its
custom_op (fake, autograd) passing opcheck, gradcheck and torch.compile, and its triton_op twin."""

import pytest
import torch

from workshop.labs.custom_op import inductor_code
from workshop.labs.custom_op.row_norm import row_norm, row_norm_visible

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def expected(x: torch.Tensor) -> torch.Tensor:
    return x / torch.linalg.vector_norm(x.double(), dim=-1, keepdim=True).to(x.dtype)


@pytest.mark.parametrize("op", [row_norm, row_norm_visible], ids=["custom_op", "triton_op"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_rows_come_out_of_unit_length(op, dtype):
    x = torch.randn(7, 37, device=DEVICE).to(dtype)
    torch.testing.assert_close(op(x), expected(x))
    padded = torch.randn(7, 45, device=DEVICE)[:, :37]  # rows 45 apart: the row stride is used
    torch.testing.assert_close(op(padded), expected(padded))


def test_custom_op_passes_opcheck_gradcheck_and_gradgradcheck():
    x = torch.randn(5, 9, dtype=torch.float64, device=DEVICE, requires_grad=True)
    assert set(torch.library.opcheck(row_norm, (x,)).values()) == {"SUCCESS"}
    assert torch.autograd.gradcheck(row_norm, (x,), fast_mode=True)
    assert torch.autograd.gradgradcheck(row_norm, (x,), fast_mode=True)


def test_custom_op_stays_opaque_under_compile():
    x, dy = torch.randn(8, 37, device=DEVICE), torch.randn(8, 37, device=DEVICE)
    (y, dx), sources = inductor_code.compile_and_capture(lambda t, dim: row_norm(t), x, dy)
    x_ = x.clone().requires_grad_()
    reference = expected(2 * x_) * 3
    (reference_dx,) = torch.autograd.grad(reference, x_, dy)
    torch.testing.assert_close(y, reference.detach())
    torch.testing.assert_close(dx, reference_dx)
    assert "torch.ops.workshop_example.row_norm.default(" in "\n".join(sources)


def test_a_bad_input_is_refused():
    with pytest.raises(ValueError, match="2-D tensor with unit stride"):
        row_norm(torch.randn(3, 4, device=DEVICE).t())


@pytest.mark.gpu
def test_gpu_triton_op_puts_the_kernel_into_inductors_code():
    x, dy = torch.randn(8, 37, device="cuda"), torch.randn(8, 37, device="cuda")
    (y, _dx), sources = inductor_code.compile_and_capture(lambda t, dim: row_norm_visible(t), x, dy)
    code = "\n".join(sources)
    assert inductor_code.kernel_defs(code, "_row_norm_kernel") >= 1
    assert "torch.ops.workshop_example.row_norm_visible.default(" not in code
    torch.testing.assert_close(y, expected(2 * x) * 3)
