"""Lab custom_op: a Triton softmax made into a PyTorch operator, then checked the ways PyTorch checks its own.

Correctness against torch.softmax (dtypes, layouts, -inf/inf/NaN, empty tensors, bad input), gradcheck and
opcheck, torch.compile with zero graph breaks, the op inside the MiniGPT's attention, and what Inductor generates
around an opaque custom_op vs a triton_op. The benchmark is separate: `python -m workshop bench custom_op` (GPU).
"""

import functools
import time

import torch

from workshop.lab import LabContext
from workshop.labs.custom_op import correctness as cx
from workshop.labs.custom_op import eager_cost, inductor_code
from workshop.minigpt import checkpoint
from workshop.minigpt.data import train_tensors
from workshop.minigpt.model import lm_loss
from workshop.ops import softmax, softmax_op, triton_launch


@functools.cache
def extern_softmax():
    """The same kernels registered as an opaque custom_op, under the lab's own namespace (for the comparison)."""
    return softmax_op.define("workshop_lab::softmax", "custom_op").forward


def check_correctness(ctx: LabContext, shapes: dict) -> dict:
    found = {"dtype_errors": cx.dtype_errors(ctx.device, shapes["lm_head"], ctx.seed)}
    for dtype, e in found["dtype_errors"].items():
        name = (
            f"{dtype} {shapes['lm_head']}: max |ours - float64 softmax| (<= 1.25 x torch's + slack)"
        )
        ctx.check_max(name, e["ours"], e["tolerance"])
    long = cx.dtype_errors(ctx.device, shapes["long"], ctx.seed, (torch.float32,))["float32"]
    found["long_row_error"] = long
    ctx.check_max(
        f"float32 long rows {shapes['long']} (long-row kernels): max error",
        long["ours"],
        long["tolerance"],
    )
    found["layouts"] = cx.layouts(ctx.device, ctx.seed)
    ctx.check_max(
        "non-contiguous inputs (6 layouts): max |ours - torch.softmax|",
        max(found["layouts"].values()),
        1e-6,
    )
    found["special_values"] = cx.special_value_mismatches(ctx.device, shapes["long"][1] // 4)
    ctx.check_equal(
        "rows with -inf/inf/NaN/all -inf that differ from torch.softmax",
        sum(found["special_values"].values()),
        0,
    )
    found["empty"] = cx.empty_results(ctx.device)
    ctx.check_equal(
        "empty tensors / 0-size dims give torch's empty result",
        sum(found["empty"].values()),
        len(found["empty"]),
    )
    found["bad_inputs"] = cx.bad_inputs(ctx.device)
    clear = sum(cx.EXPECTED_WORDS[k] in msg for k, msg in found["bad_inputs"].items())
    ctx.check_equal(
        "bad inputs rejected with an error naming the problem", clear, len(found["bad_inputs"])
    )
    return found


def check_autograd(ctx: LabContext, shapes: dict) -> dict:
    found = {"gradcheck": cx.gradchecks(ctx.device, shapes["gradcheck_long"])}
    ctx.check_equal(
        "gradcheck/gradgradcheck float64 cases passed",
        sum(found["gradcheck"].values()),
        len(found["gradcheck"]),
    )
    found["opcheck"] = cx.opchecks(ctx.device)
    ok = sum(v == "SUCCESS" for r in found["opcheck"].values() for v in r.values())
    ctx.check_equal(
        "opcheck tests passed (3 inputs x schema/autograd/fake/aot)",
        ok,
        sum(len(r) for r in found["opcheck"].values()),
    )
    return found


def check_compile(ctx: LabContext) -> dict:
    """torch.compile(fullgraph=True) vs eager, graph breaks, and the generated code for both registrations."""
    gen = torch.Generator().manual_seed(ctx.seed)
    x = torch.randn(8, 600, generator=gen).to(ctx.device)
    dy = torch.randn(8, 600, generator=gen).to(ctx.device)
    explained = torch._dynamo.explain(lambda t: softmax(t * 2.0, -1) * 3.0)(x)
    ctx.check_equal("torch.compile: graph breaks", explained.graph_break_count, 0)

    x_ = x.clone().requires_grad_()
    eager_y = softmax(x_ * 2.0, -1) * 3.0
    (eager_dx,) = torch.autograd.grad(eager_y, x_, dy)
    kinds = {softmax_op.KIND: (torch.ops.workshop.softmax, "workshop")}
    if (
        ctx.device == "cuda"
    ):  # the opaque flavor for comparison; under the interpreter only it works at all
        kinds["custom_op"] = (extern_softmax(), "workshop_lab")
    found = {}
    for kind, (op, namespace) in kinds.items():
        (y, dx), sources = inductor_code.compile_and_capture(op, x, dy)
        err = max((y - eager_y).abs().max().item(), (dx - eager_dx).abs().max().item())
        ctx.check_max(f"compiled ({kind}) vs eager: max |difference| of y and dx", err, 1e-5)
        found[kind] = inductor_code.census(sources, namespace)
        ctx.write_text(
            f"inductor_{kind}.txt",
            inductor_code.excerpt(f"Inductor's code around a {kind}", sources),
        )
    ctx.check_min(
        "custom_op: Inductor calls the op as an opaque extern kernel (calls)",
        found["custom_op"]["extern_calls"],
        2,
    )
    if "triton_op" in found:
        ctx.check_min(
            "triton_op: our kernels' source inlined into Inductor's code (defs)",
            found["triton_op"]["inlined_kernel_defs"],
            2,
        )
        ctx.check_equal("triton_op: extern calls left", found["triton_op"]["extern_calls"], 0)
    else:
        ctx.write_text(
            "inductor_triton_op.txt",
            "Not produced on the CPU: under Triton's interpreter a triton_op "
            "cannot be compiled (see the handout).\nThe H200 excerpt is committed in "
            "benchmarks/custom_op/inductor_triton_op.txt.\n",
        )
    return found


def check_minigpt(ctx: LabContext) -> dict:
    """Our op in every attention block: logits and gradients vs the model with F.softmax."""
    torch.backends.cuda.matmul.allow_tf32 = False  # TF32 would blur a 1e-5 comparison on the GPU
    model = checkpoint.load(ctx.checkpoint, device=ctx.device)
    x, y = (t[:16].to(ctx.device) for t in train_tensors())  # (16, T) tokens and targets

    def logits_and_grads():
        model.zero_grad()
        logits = model(x)  # (16, T, 600)
        lm_loss(logits, y).backward()
        return logits.detach(), [p.grad.clone() for p in model.parameters()]

    ref_logits, ref_grads = logits_and_grads()
    model.use_softmax(softmax)
    logits, grads = logits_and_grads()
    found = {
        "logits": (logits - ref_logits).abs().max().item(),
        "grads": max((a - b).abs().max().item() for a, b in zip(grads, ref_grads, strict=True)),
    }
    ctx.check_max(
        "MiniGPT with our softmax: max |logits - logits with F.softmax|", found["logits"], 1e-5
    )
    ctx.check_max(
        "MiniGPT with our softmax: max |grad - grad with F.softmax|", found["grads"], 1e-5
    )
    return found


def measure_eager(ctx: LabContext) -> dict:
    """What one eager call costs, layer by layer (eager_cost.py), and which kernels one training step launched."""
    found = eager_cost.measure(ctx.device)
    ctx.save_figure("eager_cost.png", eager_cost.figure(found, ctx.device))
    x = torch.randn(eager_cost.STEP, device=ctx.device, requires_grad=True)
    with triton_launch.recording() as launches:
        softmax(x).backward(torch.ones_like(x))
    found["step_launches"] = [
        {"kernel": launch.kernel, "grid": list(launch.grid), "constexprs": launch.constexprs}
        for launch in launches
    ]
    return found


def run(ctx: LabContext) -> None:
    torch.manual_seed(ctx.seed)
    shapes = cx.shapes(ctx.device)
    found = {
        "registration": softmax_op.KIND,
        "shapes": {k: list(v) for k, v in shapes.items()},
        "seconds": {},
    }
    sections = {
        "correctness": lambda: check_correctness(ctx, shapes),
        "autograd": lambda: check_autograd(ctx, shapes),
        "compile": lambda: check_compile(ctx),
        "minigpt": lambda: check_minigpt(ctx),
        "eager": lambda: measure_eager(ctx),
    }
    for name, section in sections.items():
        start = time.perf_counter()
        found[name] = section()
        found["seconds"][name] = round(time.perf_counter() - start, 1)
        print(f"section {name}: {found['seconds'][name]} s", flush=True)
    ctx.extra.update(found)
    ctx.render_summary(
        registration=found["registration"],
        shapes=found["shapes"],
        dtype_errors=found["correctness"]["dtype_errors"],
        bad_inputs=found["correctness"]["bad_inputs"],
        census=found["compile"],
        minigpt=found["minigpt"],
        eager=found["eager"],
        launch_share=eager_cost.launch_share(found["eager"]),
    )
