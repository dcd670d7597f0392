"""What one eager call of the op costs on the host, layer by layer, for the op registered three ways (custom_op,
triton_op, by hand), measured side by side with torch.softmax in one run: the handout's optional appendix.

A call `op(x)` passes through these layers, outermost first:
- the registration: the dispatcher finds the op's Autograd kernel (Python), which without a gradient to track hands
  the call back to the dispatcher, which finds the implementation (Python again); custom_op and triton_op put
  general-purpose wrappers around both (by_hand.py says which), the registration by hand does not;
- the autograd node, when x requires grad: an autograd.Function's node and the saved y;
- the implementation, the same function in all three (softmax_op.forward_kernel): checks the input, allocates the
  output;
- the plan (softmax_launch.forward): which kernel, which parameters, for this shape;
- the kernel launch (triton_launch.launch): the compiled kernel's launcher and the GPU driver; on the CPU, Triton's
  interpreter, which runs the kernel's programs one after another in numpy.

The Python layers cost microseconds while the interpreter's launch costs milliseconds, whose noise would swamp
them; so the layers are timed with the launch replaced by a function that returns at once (a "dry" call), each
layer as the difference of two rungs, one calling one more layer than the other; the launch is timed alone, and
the whole call too. Host time per call: the best of BLOCKS blocks of calls, each block ending in a synchronize.

## The trace (`record_trace`)

A torch.profiler trace of the same call, layer by layer, for Perfetto or chrome://tracing: for
torch.ops.workshop.softmax, the ladder of calls, each rung one more layer than the one before ("kernel launch",
"plan", "checks, output", then the op's registration and its autograd node), each in a range named after its layer;
inside every call, ranges around the layers it passes through (the input checks, the plan and launch, the launch
itself), placed for the trace only by wrapping those functions while it records; and the profiler's own events: the
dispatcher's `workshop::softmax`, the output's allocation, the autograd node, and on a GPU the CUDA kernels. Then a
forward + backward step of the training shape. One call each: the trace shows where time goes within a call, the
eager-cost table what each layer costs.
"""

from __future__ import annotations

import contextlib
import functools
import json
import time
from pathlib import Path
from unittest import mock

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile, record_function  # noqa: E402

from workshop.i18n import N_, _  # noqa: E402
from workshop.labs.custom_op import by_hand  # noqa: E402
from workshop.ops import (  # noqa: E402
    softmax,
    softmax_kernels,
    softmax_launch,
    softmax_op,
    triton_launch,
)

BLOCKS = 5
BLOCK_SECONDS = 0.02  # calls per block: enough to fill this, at most MAX_CALLS
MAX_CALLS = 2000
# A shape whose kernel takes less time than its call: the host's cost is all that shows.
TINY = (1, 600)
STEP = (64, 600)  # forward + backward: a training step's use of the op
COMMON_LAYERS = (N_("kernel launch"), N_("plan"), N_("checks, output"))
OWN_LAYERS = (N_("registration"), N_("autograd node"))  # each registration's own


@functools.cache
def registrations() -> dict[str, softmax_op.SoftmaxOps]:
    """The op registered three ways: torch.ops.workshop.softmax is the custom_op or the triton_op (its KIND), a
    twin the other, and the registration by hand (by_hand.py)."""
    return {
        "custom_op": softmax_op.registered_as("custom_op"),
        "triton_op": softmax_op.registered_as("triton_op"),
        by_hand.KIND: by_hand.define("workshop_by_hand::softmax"),
    }


@functools.cache
def clone_op():
    """The floor of a call through the chapter's API: a custom_op whose body only clones its input, so that its
    call costs torch.library's layers and a copy, nothing of ours. The benchmark's target for one forward call of
    ours is at most 1.2 x this one's (bench/report.py)."""

    @torch.library.custom_op("workshop_eager::clone", mutates_args=())
    def clone(x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    return clone


def per_call_us(fns: dict, device: str) -> dict[str, float]:
    """Host time of one call of each fn(), in microseconds: the best of BLOCKS blocks of calls, the functions'
    blocks interleaved (a machine that gets busier for a while slows them all, not one)."""
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def seconds_per_call(fn, n: int) -> float:
        """n calls of fn() ending in a synchronize: the time per call."""
        start = time.perf_counter()
        for _call in range(n):
            fn()
        sync()
        return (time.perf_counter() - start) / n

    def calls_filling(fn) -> int:
        """How many calls of fn() fill BLOCK_SECONDS (at most MAX_CALLS), after one that compiles and fills the
        caches. Counted, not worked out from one call: a function's first calls in a process can be a hundred
        times slower than the rest (torch's first forward + backward steps on an H100: 22.9 and 9.2 ms, then
        75 us), and a block sized from one of them held 2 calls, whose time was mostly the GPU's tail and the
        synchronize (benchmarks/gpu-records/20261206-2107-h100-issue41-profiles)."""
        fn()
        n, start = 0, time.perf_counter()
        while n < MAX_CALLS and time.perf_counter() - start < BLOCK_SECONDS:
            fn()
            n += 1
        sync()
        return max(1, n)

    calls = {name: calls_filling(fn) for name, fn in fns.items()}
    best = dict.fromkeys(fns, float("inf"))
    for _block in range(BLOCKS):
        for name, fn in fns.items():
            best[name] = min(best[name], seconds_per_call(fn, calls[name]))
    return {name: t * 1e6 for name, t in best.items()}


def ladder(device: str, shape=TINY) -> dict:
    """The rungs of the ladder, innermost first: each calls one more layer than the one before. The common rungs
    once, then each registration's two (`"<kind>: registration"`, `"<kind>: autograd node"`)."""
    x = torch.randn(shape, device=device)
    x_grad = x.clone().requires_grad_()
    y = torch.empty_like(x)
    n_rows, n_cols = shape
    align = softmax_launch.alignment(n_cols)
    grid, constexprs = softmax_launch.one_pass_plan(n_rows, n_cols, align, x.element_size())
    ints = (n_rows, n_cols, n_cols, n_cols)
    rungs = {
        "kernel launch": lambda: triton_launch.launch(
            softmax_kernels._fwd_one_pass, grid, (x, y), ints, constexprs
        ),
        "plan": lambda: softmax_launch.forward(x, y, *ints),
        "checks, output": lambda: softmax_op.forward_kernel(x, -1),
    }
    for kind, ops in registrations().items():
        rungs |= {
            f"{kind}: registration": functools.partial(ops.forward, x),
            f"{kind}: autograd node": functools.partial(ops.forward, x_grad),
        }
    rungs["torch.softmax"] = lambda: torch.softmax(x, -1)
    rungs["custom_op clone"] = functools.partial(clone_op(), x)
    rungs["Triton's kernel[grid]"] = lambda: softmax_kernels._fwd_one_pass[grid](
        x, y, *ints, **constexprs
    )
    return rungs


def measure(device: str) -> dict:
    """Host us per call: the common layers' own costs, each registration's own layers and whole call (with and
    without grad) and forward + backward step, torch.softmax's call and step, a custom_op that only clones
    (clone_op), and the launch through Triton's own kernel[grid]. `op_us`, `op_grad_us` and `python_us` are
    torch.ops.workshop.softmax's (its KIND)."""
    rungs = ladder(device)
    # a launch that returns at once, in place of triton_launch.launch: only the Python layers are timed
    with mock.patch.object(softmax_launch, "launch", lambda *args, **kwargs: None):
        dry = per_call_us({k: f for k, f in rungs.items() if k not in ("kernel launch",)}, device)
    x = torch.randn(STEP, device=device, requires_grad=True)
    dy = torch.randn(STEP, device=device)
    steps = {"torch.softmax": lambda t: torch.softmax(t, -1)} | {
        kind: ops.forward for kind, ops in registrations().items()
    }
    # The whole calls: each rung but the two whose layers only the dry run can tell apart, and each step.
    whole = per_call_us(
        {k: f for k, f in rungs.items() if k not in ("plan", "checks, output")}
        | {f"step {name}": lambda op=op: op(x).backward(dy) for name, op in steps.items()},
        device,
    )
    found = {
        "shape": list(TINY),
        "registration": softmax_op.KIND,
        "layer_us": {
            "kernel launch": whole["kernel launch"],
            "plan": dry["plan"],
            "checks, output": dry["checks, output"] - dry["plan"],
        },
        # Each registration's own layers (dry), its Python layers in all (dry, without grad) and its whole calls.
        "registrations": {
            kind: {
                "registration_us": dry[f"{kind}: registration"] - dry["checks, output"],
                "autograd_node_us": dry[f"{kind}: autograd node"] - dry[f"{kind}: registration"],
                "python_us": dry[f"{kind}: registration"],
                "op_us": whole[f"{kind}: registration"],  # the op, whole
                "op_grad_us": whole[f"{kind}: autograd node"],  # the op, whole, with grad
            }
            for kind in registrations()
        },
        "torch_us": whole["torch.softmax"],
        "clone_custom_op_us": whole["custom_op clone"],
        "triton_jit_launch_us": whole["Triton's kernel[grid]"],
        "step_shape": list(STEP),
        "step_us": {name: whole[f"step {name}"] for name in steps},
    }
    public = found["registrations"][softmax_op.KIND]
    return found | {key: public[key] for key in ("op_us", "op_grad_us", "python_us")}


def launch_share(found: dict) -> float:
    """The kernel launch's share of the public op's call without autograd, from its parts: the launch and the
    Python layers, each timed alone (a difference of two noisy totals could say anything when the launch is
    slow)."""
    launch_us = found["layer_us"]["kernel launch"]
    return launch_us / (launch_us + found["python_us"])


def by_hand_saves(found: dict) -> float:
    """How much less a call's Python layers took registered by hand than as torch.ops.workshop.softmax is."""
    costs = found["registrations"]
    return costs[found["registration"]]["python_us"] - costs[by_hand.KIND]["python_us"]


def figure(found: dict, device: str):
    """Each layer's cost per call: the common layers once, each registration's own layers and whole call, and
    the whole calls of torch.softmax and of a custom_op that only clones for scale (log axis: on the CPU the
    interpreter's milliseconds and the layers' microseconds share it)."""
    # a color for each registration: custom_op, triton_op, by hand
    colors = dict(zip(found["registrations"], ("tab:blue", "tab:orange", "tab:green"), strict=True))
    bars = [(_(name), us, "tab:gray") for name, us in found["layer_us"].items()]
    own = {
        "registration_us": _("registration"),
        "autograd_node_us": _("autograd node"),
        "op_us": _("the op, whole call"),
    }
    for kind, costs in found["registrations"].items():
        bars += [(f"{_(kind)}: {label}", costs[key], colors[kind]) for key, label in own.items()]
    bars.append((_("torch.softmax (whole call)"), found["torch_us"], "black"))
    # the floor of a call through torch.library: what any custom_op costs before its body does anything
    bars.append(
        (_("a custom_op that only clones (whole call)"), found["clone_custom_op_us"], "dimgray")
    )
    names, values, bar_colors = zip(*bars[::-1], strict=True)
    fig, ax = plt.subplots(figsize=(8, 5))
    ax.barh(names, [max(v, 1e-3) for v in values], color=bar_colors)
    for i, v in enumerate(values):
        ax.annotate(
            f"{v:.1f} us", (max(v, 1e-3), i), xytext=(3, 0), textcoords="offset points", va="center"
        )
    ax.set(
        xscale="log",
        xlabel=_("host time per call (us, log scale)"),
        title=_("one eager call at {shape} on {device}, registered three ways").format(
            shape=tuple(found["shape"]), device=device
        ),
    )
    ax.set_xlim(right=max(values) * 5)  # room for the labels
    fig.tight_layout()
    return fig


TRACE = "eager_call_trace.json"
# The public op's rungs (ladder): the layers inside it, then its registration and its autograd node.
RUNGS = (
    *COMMON_LAYERS,
    *(f"{softmax_op.KIND}: {layer}" for layer in OWN_LAYERS),
)
STEP_RANGE = "forward + backward step"
# Inner layers, by the function that is each one's entry, and the name its range gets in the trace.
INNER = {
    (softmax_op, "check_input"): "layer: input checks",
    (softmax_launch, "forward"): "layer: plan + kernel launch",
    (softmax_launch, "launch"): "layer: kernel launch",
}
RANGES = (
    *(f"rung {i}: {name}" for i, name in enumerate(RUNGS, start=1)),
    *INNER.values(),
    STEP_RANGE,
)


def record_trace(path: Path, device: str) -> dict:
    """Profile the ladder and a step into `path` (Chrome trace JSON); what the exported trace holds: its ranges
    and the op's events, and the GPU kernels, by name."""
    rungs = ladder(device)
    x = torch.randn(STEP, device=device, requires_grad=True)
    for name in RUNGS:
        rungs[name]()  # warm: the trace shows calls, not first-call compilation
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with (
        profile(activities=activities, record_shapes=True) as prof,
        contextlib.ExitStack() as patches,
    ):
        for (
            owner,
            attr,
        ), name in INNER.items():  # each inner layer's function, wrapped in its range
            ranged = record_function(name)(getattr(owner, attr))
            patches.enter_context(mock.patch.object(owner, attr, ranged))
        for rung, name in zip(RANGES, RUNGS, strict=False):
            with record_function(rung):
                rungs[name]()
        with record_function(STEP_RANGE):
            softmax(x).backward(torch.ones_like(x))
        if device == "cuda":
            torch.cuda.synchronize()
    prof.export_chrome_trace(str(path))
    events = json.loads(Path(path).read_text())["traceEvents"]  # what the exported file holds
    names = [e.get("name", "") for e in events]
    return {
        "file": Path(path).name,
        "events": len(events),
        # the ranges the lab placed (rungs, inner layers, the step), each name once
        "ranges": [r for r in RANGES if r in names],
        "op_events": names.count("workshop::softmax"),  # the dispatcher's workshop::softmax events
        # names of the CUDA kernels in it (none on the CPU)
        "gpu_kernels": sorted({e["name"] for e in events if e.get("cat") == "kernel"}),
    }
