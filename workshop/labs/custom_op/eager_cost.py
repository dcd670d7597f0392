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

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

from workshop.i18n import N_, _  # noqa: E402
from workshop.ops import softmax, softmax_launch, softmax_op  # noqa: E402
from workshop.ops import softmax_kernels as kernels  # noqa: E402
from workshop.ops.triton_launch import launch  # noqa: E402

BLOCKS = 5
BLOCK_SECONDS = 0.02  # calls per block: enough to fill this, at most MAX_CALLS
MAX_CALLS = 2000
# A shape whose kernel takes less time than its call: the host's cost is all that shows.
TINY = (1, 600)
STEP = (64, 600)  # forward + backward: a training step's use of the op


def per_call_us(fns: dict, device: str) -> dict[str, float]:
    """Host time of one call of each fn(), in microseconds: the best of BLOCKS blocks of calls, the functions'
    blocks interleaved (a machine that gets busier for a while slows them all, not one)."""
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    calls = {}
    for name, fn in fns.items():
        fn()  # warm up: compile, fill the caches
        sync()
        start = time.perf_counter()
        fn()
        sync()
        calls[name] = max(
            1, min(MAX_CALLS, int(BLOCK_SECONDS / max(time.perf_counter() - start, 1e-9)))
        )
    best = dict.fromkeys(fns, float("inf"))
    for _block in range(BLOCKS):
        for name, fn in fns.items():
            start = time.perf_counter()
            for _call in range(calls[name]):
                fn()
            sync()
            best[name] = min(best[name], (time.perf_counter() - start) / calls[name])
    return {name: t * 1e6 for name, t in best.items()}


def ladder(device: str, shape=TINY) -> dict:
    """The rungs of the ladder, innermost first: each calls one more layer than the one before."""
    x = torch.randn(shape, device=device)
    x_grad = x.clone().requires_grad_()
    y = torch.empty_like(x)
    n_rows, n_cols = shape
    align = softmax_launch.alignment(n_cols)
    grid, constexprs = softmax_launch.one_pass_plan(n_rows, n_cols, align, x.element_size())
    ints = (n_rows, n_cols, n_cols, n_cols)
    return {
        N_("kernel launch"): lambda: launch(kernels._fwd_one_pass, grid, (x, y), ints, constexprs),
        N_("plan"): lambda: softmax_launch.forward(x, y, *ints),
        N_("checks, output"): lambda: softmax_op.forward_kernel(x, -1),
        N_("dispatcher, Autograd kernel"): lambda: softmax(x),
        N_("autograd node"): lambda: softmax(x_grad),
        "torch.softmax": lambda: torch.softmax(x, -1),
        "Triton's kernel[grid]": lambda: kernels._fwd_one_pass[grid](x, y, *ints, **constexprs),
    }


def _dry_launch(*args, **kwargs) -> None:
    """Stands in for triton_launch.launch: returns at once, so that only the Python layers are timed."""


def measure(device: str) -> dict:
    """Host us per call: each layer's own cost, the whole op (with and without grad), torch.softmax's call, the
    same launch through Triton's own kernel[grid], and a forward + backward step, ours and torch's."""
    calls = ladder(device)
    layers = ["plan", "checks, output", "dispatcher, Autograd kernel", "autograd node"]
    with mock.patch.object(softmax_launch, "launch", _dry_launch):
        dry = per_call_us({name: calls[name] for name in layers}, device)
    x = torch.randn(STEP, device=device, requires_grad=True)
    dy = torch.randn(STEP, device=device)
    whole = per_call_us(
        {
            "kernel launch": calls["kernel launch"],
            "op": calls["dispatcher, Autograd kernel"],
            "op with grad": calls["autograd node"],
            "torch.softmax": calls["torch.softmax"],
            "Triton's kernel[grid]": calls["Triton's kernel[grid]"],
            "step torch.softmax": lambda: torch.softmax(x, -1).backward(dy),
            "step workshop.ops.softmax": lambda: softmax(x).backward(dy),
        },
        device,
    )
    own = {name: dry[name] - (dry[layers[i - 1]] if i else 0.0) for i, name in enumerate(layers)}
    return {
        "shape": list(TINY),
        "layer_us": {"kernel launch": whole["kernel launch"], **own},
        # the op without autograd, from its parts: the launch, and the Python layers timed without it
        "python_us": dry["dispatcher, Autograd kernel"],
        "op_us": whole["op"],
        "op_grad_us": whole["op with grad"],
        "torch_us": whole["torch.softmax"],
        "triton_jit_launch_us": whole["Triton's kernel[grid]"],
        "step_shape": list(STEP),
        "step_us": {
            "torch.softmax": whole["step torch.softmax"],
            "workshop.ops.softmax": whole["step workshop.ops.softmax"],
        },
    }


def launch_share(found: dict) -> float:
    """The kernel launch's share of the op's call without autograd, from its parts: the launch and the Python
    layers, each timed alone (a difference of two noisy totals could say anything when the launch is slow)."""
    launch = found["layer_us"]["kernel launch"]
    return launch / (launch + found["python_us"])


def figure(found: dict, device: str):
    """Each layer's cost per call, and torch.softmax's whole call for scale (log axis: on the CPU the
    interpreter's milliseconds and the layers' microseconds share it)."""
    layers = found["layer_us"]
    names = [*map(_, layers), _("torch.softmax (whole call)")]
    values = [*layers.values(), found["torch_us"]]
    fig, ax = plt.subplots(figsize=(8, 3.6))
    colors = ["tab:blue"] * len(layers) + ["tab:gray"]
    ax.barh(names[::-1], [max(v, 1e-3) for v in values[::-1]], color=colors[::-1])
    for i, v in enumerate(values[::-1]):
        ax.annotate(
            f"{v:.1f} us", (max(v, 1e-3), i), xytext=(3, 0), textcoords="offset points", va="center"
        )
    ax.set_xscale("log")
    ax.set_xlim(right=max(values) * 5)  # room for the labels
    ax.set_xlabel(_("host time per call (us, log scale)"))
    ax.set_title(
        _("one call of workshop.ops.softmax at {shape} on {device}: {us:.1f} us in all").format(
            shape=tuple(found["shape"]), device=device, us=found["op_us"]
        )
    )
    fig.tight_layout()
    return fig
