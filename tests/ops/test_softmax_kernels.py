"""ops.softmax_kernels, each kernel against torch on rows with special values (a -inf, a row of -inf, large
values): the one-pass kernels and the long-row ones (split: partials then finish) agree with torch.softmax and
its backward, NaN where torch has NaN."""

from __future__ import annotations

import pytest
import torch

from workshop.ops import INTERPRETED, softmax_launch, triton_launch

DEVICE = "cpu" if INTERPRETED else "cuda"  # the interpreter's numpy, or the compiled kernels


def special_rows(n_cols: int) -> torch.Tensor:
    x = torch.randn(4, n_cols, device=DEVICE)
    x[1, 3] = float("-inf")  # one masked position
    x[2] = float("-inf")  # a row with nothing: NaN, as torch gives
    x[3] *= 1e4  # exp would overflow without the row's max taken out
    return x


@pytest.mark.parametrize("long_rows", [False, True])
def test_forward_and_backward_kernels_match_torch(monkeypatch, long_rows):
    if long_rows:
        monkeypatch.setattr(softmax_launch, "ONE_PASS_MAX", 8)
        monkeypatch.setattr(softmax_launch, "l2_bytes", lambda device: 0)
    x = special_rows(40)
    y, dx = torch.empty_like(x), torch.empty_like(x)
    with triton_launch.recording() as launches:
        softmax_launch.forward(x, y, 4, 40, 40, 40)
    torch.testing.assert_close(y, torch.softmax(x, -1), equal_nan=True)
    p, dy = torch.softmax(torch.randn_like(x), -1), torch.randn_like(x)
    softmax_launch.backward(p, dy, dx, 4, 40, (40, 40, 40))
    torch.testing.assert_close(dx, torch.ops.aten._softmax_backward_data(dy, p, -1, torch.float32))
    one_pass = ["_fwd_one_pass"]
    long_row = ["_fwd_partials", "_fwd_finish"] if INTERPRETED else ["_fwd_cooperative"]
    assert [la.kernel for la in launches] == (long_row if long_rows else one_pass)
