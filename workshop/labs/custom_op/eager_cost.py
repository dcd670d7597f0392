"""What one eager call of the op costs on the host, layer by layer, measured side by side with torch.softmax.

`softmax(x)` = `torch.ops.workshop.softmax(x)` passes through these layers, outermost first:
- the dispatcher, which finds the op's Autograd kernel (Python: softmax_op.forward_autograd). With a gradient to
  track, that builds the autograd node (SoftmaxFunction); without, it hands the call back to the dispatcher,
  which finds the backend kernel (Python again: forward_kernel);
- forward_kernel: checks the input, allocates the output;
- softmax_launch.forward: the plan (which kernel, which parameters) for this shape;
- triton_launch.launch: the compiled kernel's launcher and the GPU driver; on the CPU, Triton's interpreter,
  which runs the kernel's programs one after another in numpy.

The Python layers cost microseconds while the interpreter's launch costs milliseconds, whose noise would swamp
them; so the layers are timed with the launch replaced by a function that returns at once (a "dry" call), the
launch is timed alone, and the whole call is timed too. Host time per call: the best of BLOCKS blocks of calls,
each block ending in a synchronize.
"""

import time
from unittest import mock

import torch

from workshop.ops import softmax, softmax_launch, softmax_op
from workshop.ops import softmax_kernels as kernels
from workshop.ops.triton_launch import launch

BLOCKS = 5
BLOCK_SECONDS = 0.02  # calls per block: enough to fill this, at most MAX_CALLS
MAX_CALLS = 2000
TINY = (
    1,
    600,
)  # a shape whose kernel takes less time than its call: the host's cost is all that shows
STEP = (64, 600)  # forward + backward: a training step's use of the op


def per_call_us(fn, device: str) -> float:
    """Host time of one call of fn(), in microseconds: the best of BLOCKS blocks."""
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    fn()  # warm up: compile, fill the caches
    sync()
    start = time.perf_counter()
    fn()
    sync()
    calls = max(1, min(MAX_CALLS, int(BLOCK_SECONDS / max(time.perf_counter() - start, 1e-9))))
    best = float("inf")
    for _ in range(BLOCKS):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def _calls(device: str, shape=TINY) -> dict:
    """The rungs of the ladder, innermost first: each calls one more layer than the one before."""
    x = torch.randn(shape, device=device)
    x_grad = x.clone().requires_grad_()
    y = torch.empty_like(x)
    n_rows, n_cols = shape
    align = softmax_launch.alignment(n_cols)
    grid, constexprs = softmax_launch.one_pass_plan(n_rows, n_cols, align, x.element_size())
    ints = (n_rows, n_cols, n_cols, n_cols)
    return {
        "kernel launch": lambda: launch(kernels._fwd_one_pass, grid, (x, y), ints, constexprs),
        "plan": lambda: softmax_launch.forward(x, y, *ints),
        "checks, output": lambda: softmax_op.forward_kernel(x, -1),
        "dispatcher, Autograd kernel": lambda: softmax(x),
        "autograd node": lambda: softmax(x_grad),
        "torch.softmax": lambda: torch.softmax(x, -1),
        "Triton's kernel[grid]": lambda: kernels._fwd_one_pass[grid](x, y, *ints, **constexprs),
    }


def _dry_launch(*args, **kwargs) -> None:
    """Stands in for triton_launch.launch: returns at once, so that only the Python layers are timed."""


def measure(device: str) -> dict:
    """Host us per call: each layer's own cost, the whole op (with and without grad), torch.softmax's call, the
    same launch through Triton's own kernel[grid], and a forward + backward step, ours and torch's."""
    calls = _calls(device)
    names = ["plan", "checks, output", "dispatcher, Autograd kernel", "autograd node"]
    with mock.patch.object(softmax_launch, "launch", _dry_launch):
        dry = {name: per_call_us(calls[name], device) for name in names}
    layers = {"kernel launch": per_call_us(calls["kernel launch"], device)}
    layers.update(
        {name: dry[name] - dry[names[i - 1]] if i else dry[name] for i, name in enumerate(names)}
    )
    x = torch.randn(STEP, device=device, requires_grad=True)
    dy = torch.randn(STEP, device=device)
    return {
        "shape": list(TINY),
        "layer_us": layers,
        "op_us": per_call_us(calls["dispatcher, Autograd kernel"], device),
        "op_grad_us": per_call_us(calls["autograd node"], device),
        "torch_us": per_call_us(calls["torch.softmax"], device),
        "triton_jit_launch_us": per_call_us(calls["Triton's kernel[grid]"], device),
        "step_shape": list(STEP),
        "step_us": {
            "torch.softmax": per_call_us(lambda: torch.softmax(x, -1).backward(dy), device),
            "workshop.ops.softmax": per_call_us(lambda: softmax(x).backward(dy), device),
        },
    }
