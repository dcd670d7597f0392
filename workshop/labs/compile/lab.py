"""Lab compile: torch.compile on the MiniGPT. Capture each stage's output, explain one generated kernel,
provoke a graph break and recompiles, and time eager against compiled.

Order matters: the graph-break and recompile experiments reset Dynamo, so they run before the Inductor
compiles whose compiled functions are timed afterwards.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch

from workshop.lab import LabContext
from workshop.labs.compile.breaks import ItemInForward, count_compiles, explain_breaks
from workshop.labs.compile.capture import Capture, compile_and_capture
from workshop.labs.compile.explain import explain, pick_kernel
from workshop.labs.compile.kernels import Kernel, parse_kernels
from workshop.labs.compile.provenance import attach_source_lines
from workshop.labs.compile.report import summary
from workshop.labs.compile.timing import break_even, compare, plot
from workshop.minigpt import checkpoint
from workshop.minigpt.data import sample_corpus, to_tensors
from workshop.minigpt.model import lm_loss

BATCH = 8  # the batch of the captured training step
SWEEP = {"cpu": [2, 8, 32, 128], "cuda": [8, 64, 512, 4096]}  # forward batch sizes timed
REPEATS = {"cpu": 9, "cuda": 50}
LENGTHS = [8, 12, 16, 20]  # sequence lengths of the recompile experiment
LR = 1e-3


@dataclass
class Compiled:
    """The compiled functions of the training step and of the forward, with what their compiles produced."""

    train_step: object  # () -> None: compiled loss, its compiled backward, compiled AdamW step
    forward: object  # (x) -> logits, compiled with a dynamic batch dimension
    captures: dict[str, Capture]


def run(ctx: LabContext) -> None:
    torch.manual_seed(ctx.seed)
    torch._logging.set_logs(
        recompiles=True, graph_breaks=True
    )  # each recompile and graph break goes to log.txt
    if ctx.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = (
            False  # TF32 would put compiled and eager 1e-3 apart
        )
    model = checkpoint.load(ctx.checkpoint, device=ctx.device)
    x, y = (
        t.to(ctx.device) for t in to_tensors(sample_corpus(max(SWEEP[ctx.device]), ctx.seed))
    )  # (N, 22)
    xb, yb = x[:BATCH], y[:BATCH]

    breaks, recompiles = graph_breaks_and_recompiles(ctx, model, xb, yb)
    opt_e = torch.optim.AdamW(model.parameters(), lr=LR)
    compiled = compile_everything(ctx, model, opt_e, xb, yb)
    kernels, facts = kernels_and_explanation(ctx, compiled.captures)
    timing = eager_vs_compiled(ctx, model, opt_e, compiled, x, xb, yb)

    for stage, cap in compiled.captures.items():
        for name, text in cap.graph_texts().items():
            ctx.write_text(f"graphs/{stage}/{name}", text)
    ctx.write_json("kernels.json", [k.as_json() for k in kernels])
    ctx.write_json("timing.json", timing)
    ctx.write_json("breaks.json", {"explain": breaks, "recompiles": recompiles})
    ctx.extra.update(
        torch=torch.__version__,
        breaks=breaks,
        recompiles=recompiles,
        timing=timing,
        explained=facts,
        kernels={
            g: sum(k.graph == g for k in kernels) for g in dict.fromkeys(k.graph for k in kernels)
        },
        dynamo_graphs={s: len(c.dynamo) for s, c in compiled.captures.items()},
    )
    ctx.summary = summary(ctx.device, breaks, recompiles, timing, facts, kernels, compiled.captures)


def graph_breaks_and_recompiles(ctx: LabContext, model, xb, yb) -> tuple[dict, list[dict]]:
    """Dynamo only: breaks in the MiniGPT and in the .item() variant; compiles over several sequence lengths."""
    breaks = {
        "minigpt": explain_breaks(lambda a, b: lm_loss(model(a), b), xb, yb),
        "item_in_forward": explain_breaks(ItemInForward(model), xb),
    }
    recompiles = [
        count_compiles(model, LENGTHS, 2, how)
        for how in ("static", "default", "dynamic", "mark_dynamic")
    ]
    torch._dynamo.reset()
    ctx.check_equal(
        "graph breaks in the MiniGPT's loss (torch._dynamo.explain)",
        breaks["minigpt"]["graph_breaks"],
        0,
    )
    ctx.check_min(
        "graph breaks in the .item() variant", breaks["item_in_forward"]["graph_breaks"], 1
    )
    by_how = {r["how"]: r["compiles"] for r in recompiles}
    ctx.check_equal(
        f"compiles for {len(LENGTHS)} sequence lengths with dynamic=False",
        by_how["static"],
        len(LENGTHS),
    )
    ctx.check_max(
        f"compiles for {len(LENGTHS)} sequence lengths with dynamic=True", by_how["dynamic"], 1
    )
    return breaks, recompiles


def compile_everything(ctx: LabContext, model, opt_e, xb, yb) -> Compiled:
    """Compile a copy of the model's training step (forward+backward, optimizer) and its forward; check each
    against eager on the same inputs; save Inductor's code. Leaves both models one AdamW step further."""
    twin = copy.deepcopy(model)  # same weights; `model` stays eager as the reference

    def forward_backward(compiled_loss, a, b):
        loss = compiled_loss(a, b)
        loss.backward()  # runs (and at this first call, compiles) the AOT backward graph
        return loss.detach()

    loss_fn, loss_c, cap_train = compile_and_capture(
        lambda a, b: lm_loss(twin(a), b), forward_backward, xb, yb
    )
    loss_e = lm_loss(model(xb), yb)
    loss_e.backward()
    ctx.check_max(
        "compiled loss equals eager (abs difference)", (loss_c - loss_e.detach()).abs().item(), 1e-4
    )
    pairs = list(zip(twin.parameters(), model.parameters(), strict=True))
    grad_diff = max((c.grad - e.grad).abs().max().item() for c, e in pairs)
    grad_scale = max(e.grad.abs().max().item() for _, e in pairs)
    ctx.check_max(
        "compiled gradients equal eager (max abs difference / max abs gradient)",
        grad_diff / grad_scale,
        1e-3,
    )

    opt_c = torch.optim.AdamW(twin.parameters(), lr=LR)
    for opt in (
        opt_e,
        opt_c,
    ):  # an eager first step creates the optimizer's state; compiling the step that
        opt.step()  # creates it would give a graph whose guards the next step (state present) fails
    optimizer_step, _, cap_opt = compile_and_capture(lambda: opt_c.step())
    opt_e.step()

    with torch.no_grad():
        xs = xb.clone()
        torch._dynamo.mark_dynamic(xs, 0)  # one compile serves every batch size of the sweep
        forward, logits_c, cap_fwd = compile_and_capture(twin, None, xs)
        logits_diff = (logits_c - twin(xb)).abs().max().item()
    ctx.check_max("compiled forward logits equal eager (max abs difference)", logits_diff, 1e-3)

    captures = {"train": cap_train, "optimizer": cap_opt, "forward": cap_fwd}
    for stage, cap in captures.items():
        for kind, code in cap.code.items():
            ctx.write_text(f"code/{stage}_{kind}.py", code)
    ctx.check_min(
        "generated code captured: training forward (chars)",
        len(cap_train.code.get("forward", "")),
        1,
    )
    ctx.check_min(
        "generated code captured: training backward (chars)",
        len(cap_train.code.get("backward", "")),
        1,
    )

    def compiled_step():
        opt_c.zero_grad(set_to_none=True)
        loss_fn(xb, yb).backward()
        optimizer_step()

    return Compiled(compiled_step, forward, captures)


def kernels_and_explanation(
    ctx: LabContext, captures: dict[str, Capture]
) -> tuple[list[Kernel], dict]:
    """Every generated kernel with its ops and source lines; one training-forward kernel explained."""
    kernels = []
    for stage, cap in captures.items():
        for kind, code in cap.code.items():
            found = parse_kernels(code, f"{stage}/{kind}")
            attach_source_lines(found, cap.dynamo, cap.aot.get(kind.split("_")[0], []))
            kernels += found
    train_forward = [k for k in kernels if k.graph == "train/forward"]
    chosen = pick_kernel(train_forward)
    facts = {}
    if chosen:
        text, facts = explain(chosen, captures["train"].aot.get("forward", []), ctx.device)
        ctx.write_text("explanation.md", text)
    ctx.check_min(
        "kernels explained (with bytes read from the code)", int(bool(facts.get("load_bytes"))), 1
    )
    ctx.check_min(
        "forward kernels traced to a MiniGPT source line",
        sum(bool(k.source_lines) for k in train_forward),
        1,
    )
    return kernels, facts


def eager_vs_compiled(ctx: LabContext, model, opt_e, compiled: Compiled, x, xb, yb) -> dict:
    """Median times of forward (at BATCH and over the sweep) and of the training step; no compile may recur."""

    def eager_step():
        opt_e.zero_grad(set_to_none=True)
        lm_loss(model(xb), yb).backward()
        opt_e.step()

    graphs_before = {stage: len(cap.dynamo) for stage, cap in compiled.captures.items()}
    reps = REPEATS[ctx.device]

    def forward_at(batch: int) -> dict:
        xs = x[:batch]
        return {
            "batch": batch,
            **compare(lambda: model(xs), lambda: compiled.forward(xs), ctx.device, reps),
        }

    with torch.no_grad():
        at_batch = {"forward": forward_at(BATCH)}
        sweep = [forward_at(b) for b in SWEEP[ctx.device]]
    at_batch["training step"] = {
        "batch": BATCH,
        **compare(eager_step, compiled.train_step, ctx.device, reps),
    }
    ctx.check_equal(
        "Dynamo graphs per compiled function after timing (a recompile would add one)",
        {stage: len(cap.dynamo) for stage, cap in compiled.captures.items()},
        graphs_before,
    )
    caps = compiled.captures
    compile_s = {
        "forward": caps["forward"].compile_s,
        "training step": caps["train"].compile_s + caps["optimizer"].compile_s,
    }
    ctx.check_max(
        "compile time of the training step, fwd+bwd+optimizer (s)", compile_s["training step"], 300
    )
    ctx.save_figure("timing.png", plot(at_batch, sweep, compile_s, ctx.device))
    return {
        "cpu_threads": torch.get_num_threads() if ctx.device == "cpu" else None,
        "at_batch": at_batch,
        "forward_sweep": sweep,
        "compile_s": compile_s,
        "forward_break_even_batch": break_even(sweep),
    }
