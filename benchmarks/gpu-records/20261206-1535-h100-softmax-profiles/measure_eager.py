"""Host time of eager calls of torch.ops.workshop.softmax (its KIND) and its custom_op twin against torch.softmax and
a trivial custom_op (returns x.clone(), autograd passes the gradient through): a forward call at (1, 600) and a
forward + backward step at (64, 600), float32, best of eager_cost.BLOCKS interleaved blocks; then a profile of the
op's step. Run from a checkout's root: python3 measure_eager.py OUT.json"""

import cProfile
import functools
import gc
import io
import json
import pstats
import sys
from pathlib import Path

import torch
import triton.testing
from torch.profiler import ProfilerActivity, profile

from workshop.labs.custom_op import eager_cost
from workshop.ops import softmax_op


@torch.library.custom_op("trivial::clone", mutates_args=())
def trivial(x: torch.Tensor) -> torch.Tensor:
    return x.clone()


trivial.register_fake(lambda x: torch.empty_like(x))
trivial.register_autograd(lambda ctx, g: g)

x1 = torch.randn(1, 600, device="cuda")
x = torch.randn(64, 600, device="cuda", requires_grad=True)
dy = torch.randn(64, 600, device="cuda")
ops = {kind: softmax_op.registered_as(kind).forward for kind in ("triton_op", "custom_op")}
calls = {
    "fwd torch.softmax": lambda: torch.softmax(x1, -1),
    "fwd trivial custom_op": lambda: trivial(x1),
    **{f"fwd {kind}": functools.partial(f, x1, -1) for kind, f in ops.items()},
    "step torch.softmax": lambda: torch.softmax(x, -1).backward(dy),
    "step trivial custom_op": lambda: trivial(x).backward(dy),
    **{f"step {kind}": eager_cost._step(f, x, dy) for kind, f in ops.items()},
}
us = {}
for _round in range(2):  # the best of two rounds of interleaved blocks
    for name, t in eager_cost.per_call_us(calls, "cuda").items():
        us[name] = min(us.get(name, float("inf")), t)
kind = softmax_op.KIND
found = {
    "kind": kind,
    "us": us,
    "fwd_over_trivial": us[f"fwd {kind}"] / us["fwd trivial custom_op"],
    "step_over_torch": us[f"step {kind}"] / us["step torch.softmax"],
    "layers": eager_cost.measure("cuda"),
}
steps = {name: fn for name, fn in calls.items() if name.startswith("step")}
gc.disable()  # the same steps without the cyclic garbage collector: what it costs them
found["us_no_gc"] = eager_cost.per_call_us(steps, "cuda")
gc.enable()
# The backward alone at (32768, 600) float32, as autograd.grad from Python (do_bench median, L2 emptied each call):
# ours, torch's and Liger's autograd Functions; GB/s of y, dy read and dx written.
big = torch.randn(32768, 600, device="cuda", requires_grad=True)
big_dy = torch.randn_like(big)
forwards = {"ours": ops[kind], "torch": lambda t: torch.softmax(t, -1)}
try:
    from liger_kernel.ops.softmax import LigerSoftmaxFunction

    forwards["liger"] = LigerSoftmaxFunction.apply
except ImportError as e:
    found["liger"] = repr(e)
found["bwd_autograd_grad_gbps"] = {}
for name, forward in forwards.items():
    out = forward(big)
    ms = triton.testing.do_bench(
        lambda o=out: torch.autograd.grad(o, big, big_dy, retain_graph=True), return_mode="median"
    )
    found["bwd_autograd_grad_gbps"][name] = 3 * big.numel() * 4 / (ms * 1e-3) / 1e9
fn = calls[f"step {kind}"]
stats = io.StringIO()
profiler = cProfile.Profile()
profiler.enable()
for _ in range(300):
    fn()
torch.cuda.synchronize()
profiler.disable()
pstats.Stats(profiler, stream=stats).sort_stats("tottime").print_stats(20)
found["cprofile"] = stats.getvalue()
with profile(activities=[ProfilerActivity.CPU]) as prof:
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
found["profile"] = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25)
Path(sys.argv[1]).write_text(json.dumps(found, indent=1))
print(
    json.dumps(
        {k: v for k, v in found.items() if k not in ("profile", "layers", "cprofile")}, indent=1
    )
)
print(found["profile"])
print(found["cprofile"])
