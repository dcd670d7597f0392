"""Lab compile: torch.compile on the MiniGPT. Capture each stage's output, explain one generated kernel,
provoke a graph break and recompiles, and time eager against compiled.

Order matters: the graph-break and recompile experiments reset Dynamo, so they run before the Inductor
compiles whose compiled functions are timed afterwards.
"""

from __future__ import annotations

import copy

import torch

from workshop.lab import LabContext
from workshop.labs.compile.breaks import ItemInForward, count_compiles, explain_breaks
from workshop.labs.compile.capture import compile_and_capture
from workshop.labs.compile.explain import explain, pick_kernel
from workshop.labs.compile.kernels import parse_kernels
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


def run(ctx: LabContext) -> None:
    torch.manual_seed(ctx.seed)
    torch._logging.set_logs(recompiles=True)  # every recompile and its failed guard goes to log.txt
    if ctx.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False  # TF32 would put compiled and eager 1e-3 apart
    model = checkpoint.load(device=ctx.device)
    x, y = (t.to(ctx.device) for t in to_tensors(sample_corpus(max(SWEEP[ctx.device]), ctx.seed)))  # (N, 22)
    xb, yb = x[:BATCH], y[:BATCH]

    # ---- 3. graph breaks and recompiles (Dynamo only) ----
    breaks = {"minigpt": explain_breaks(lambda a, b: lm_loss(model(a), b), xb, yb),
              "item_in_forward": explain_breaks(ItemInForward(model), xb)}  # fmt: skip
    recompiles = [count_compiles(model, LENGTHS, 2, how) for how in ("static", "default", "dynamic", "mark_dynamic")]
    torch._dynamo.reset()
    ctx.check_equal("graph breaks in the MiniGPT's loss (torch._dynamo.explain)", breaks["minigpt"]["graph_breaks"], 0)
    ctx.check_min("graph breaks in the .item() variant", breaks["item_in_forward"]["graph_breaks"], 1)
    by_how = {r["how"]: r["compiles"] for r in recompiles}
    ctx.check_equal(f"compiles for {len(LENGTHS)} sequence lengths with dynamic=False", by_how["static"], len(LENGTHS))
    ctx.check_max(f"compiles for {len(LENGTHS)} sequence lengths with dynamic=True", by_how["dynamic"], 1)

    # ---- 1. compile and capture: training step (forward+backward, then the optimizer), inference forward ----
    compiled_model = copy.deepcopy(model)  # same weights; eager `model` is the reference

    def forward_backward(compiled_loss, a, b):
        loss = compiled_loss(a, b)
        loss.backward()
        return loss.detach()

    train_loss, loss_c, cap_train = compile_and_capture(lambda a, b: lm_loss(compiled_model(a), b), forward_backward, xb, yb)
    loss_e = lm_loss(model(xb), yb)
    loss_e.backward()
    ctx.check_max("compiled loss equals eager (abs difference)", (loss_c - loss_e.detach()).abs().item(), 1e-4)
    grad_diff = max((pc.grad - pe.grad).abs().max().item() for pc, pe in zip(compiled_model.parameters(), model.parameters()))
    grad_scale = max(p.grad.abs().max().item() for p in model.parameters())
    ctx.check_max("compiled gradients equal eager (max abs difference / max abs gradient)", grad_diff / grad_scale, 1e-3)

    opt_e = torch.optim.AdamW(model.parameters(), lr=1e-3)
    opt_c = torch.optim.AdamW(compiled_model.parameters(), lr=1e-3)
    for opt in (opt_e, opt_c):  # an eager first step creates the optimizer's state; compiling the step that
        opt.step()  # creates it would give a graph that the next step (state present) fails the guards of
    optimizer_step, _, cap_opt = compile_and_capture(lambda: opt_c.step())
    opt_e.step()

    with torch.no_grad():
        xs = xb.clone()
        torch._dynamo.mark_dynamic(xs, 0)  # one compile serves every batch size of the sweep
        forward, logits_c, cap_fwd = compile_and_capture(compiled_model, None, xs)
        logits_diff = (logits_c - compiled_model(xb)).abs().max().item()
    ctx.check_max("compiled forward logits equal eager (max abs difference)", logits_diff, 1e-3)

    captures = {"train": cap_train, "optimizer": cap_opt, "inference": cap_fwd}
    graphs_before = {stage: len(cap.dynamo) for stage, cap in captures.items()}
    for stage, cap in captures.items():
        for name, text in cap.graph_texts().items():
            ctx.write_text(f"graphs/{stage}/{name}", text)
        for kind, code in cap.code.items():
            ctx.write_text(f"code/{stage}_{kind}.py", code)
    ctx.check_min("generated code captured: training forward (chars)", len(cap_train.code.get("forward", "")), 1)
    ctx.check_min("generated code captured: training backward (chars)", len(cap_train.code.get("backward", "")), 1)

    # ---- 2. kernels and one explained ----
    kernels = []
    for stage, cap in captures.items():
        for kind, code in cap.code.items():
            found = parse_kernels(code, f"{stage}/{kind}")
            attach_source_lines(found, cap.dynamo, cap.aot.get(kind.split("_")[0], []))
            kernels += found
    ctx.write_json("kernels.json", [k.as_json() for k in kernels])
    train_forward = [k for k in kernels if k.graph == "train/forward"]
    chosen = pick_kernel(train_forward)
    facts = {}
    if chosen:
        text, facts = explain(chosen, cap_train.aot.get("forward", []), ctx.device)
        ctx.write_text("explanation.md", text)
    ctx.check_min("kernels explained", int(bool(facts.get("load_bytes"))), 1)
    ctx.check_min("forward kernels traced to a MiniGPT source line", sum(bool(k.source_lines) for k in train_forward), 1)

    # ---- 4. timing ----
    def eager_step():
        opt_e.zero_grad(set_to_none=True)
        lm_loss(model(xb), yb).backward()
        opt_e.step()

    def compiled_step():
        opt_c.zero_grad(set_to_none=True)
        train_loss(xb, yb).backward()
        optimizer_step()

    reps = REPEATS[ctx.device]
    with torch.no_grad():
        step = {"forward": {"batch": BATCH, **compare(lambda: model(xb), lambda: forward(xb), ctx.device, reps)}}
        sweep = [{"batch": b, **compare(lambda: model(x[:b]), lambda: forward(x[:b]), ctx.device, reps)} for b in SWEEP[ctx.device]]
    step["training step"] = {"batch": BATCH, **compare(eager_step, compiled_step, ctx.device, reps)}
    ctx.check_equal("Dynamo graphs per compiled function after timing (a recompile would add one)",
                    {stage: len(cap.dynamo) for stage, cap in captures.items()}, graphs_before)  # fmt: skip
    compile_s = {"forward": cap_fwd.compile_s, "training step": cap_train.compile_s + cap_opt.compile_s}
    ctx.save_figure("timing.png", plot(step, sweep, compile_s, ctx.device))
    ctx.check_max("compile time of the training step, fwd+bwd+optimizer (s)", compile_s["training step"], 300)

    timing = {"at_batch": step, "forward_sweep": sweep, "compile_s": compile_s, "forward_break_even_batch": break_even(sweep)}
    ctx.write_json("timing.json", timing)
    ctx.write_json("breaks.json", {"explain": breaks, "recompiles": recompiles})
    ctx.extra.update(torch=torch.__version__, breaks=breaks, recompiles=recompiles, timing=timing, explained=facts,
                     kernels={k: sum(1 for kn in kernels if kn.graph == k) for k in dict.fromkeys(kn.graph for kn in kernels)},
                     dynamo_graphs={s: len(c.dynamo) for s, c in captures.items()})  # fmt: skip
    ctx.summary = summary(ctx.device, breaks, recompiles, timing, facts, kernels, captures)
