"""ops.triton_launch: one call launches a kernel whatever the path, and `recording()` collects each eager
launch (kernel, grid, constexprs), nested recordings included; outside one nothing is collected."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from workshop.ops import INTERPRETED, triton_launch

DEVICE = "cpu" if INTERPRETED else "cuda"


@triton.jit
def add_one(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)


def run(n: int = 40):
    x = torch.arange(n, dtype=torch.float32, device=DEVICE)
    y = torch.empty_like(x)
    triton_launch.launch(add_one, (triton.cdiv(n, 16),), (x, y), (n,), {"BLOCK": 16})
    return x, y


def test_a_launch_runs_the_kernel_and_is_recorded_with_its_parameters():
    with triton_launch.recording() as launches:
        x, y = run()
    torch.testing.assert_close(y, x + 1)
    assert [(la.kernel, la.grid, la.constexprs) for la in launches] == [
        ("add_one", (3,), {"BLOCK": 16})
    ]


def test_an_outer_recording_sees_the_inner_ones_and_none_collects_outside():
    with triton_launch.recording() as outer:
        run()
        with triton_launch.recording() as inner:
            run()
    assert len(inner) == 1 and len(outer) == 2 and triton_launch._recorded is None
    run()
    assert len(outer) == 2
