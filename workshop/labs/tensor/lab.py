"""Lab tensor: the LM head's own tensors taken apart. Each view's sizes, strides, storage offset and storage
(anatomy.py), views written with as_strided only (strided_views.py), the version counter and autograd's refusal of
a saved tensor changed in place (versions.py), then the Python dispatch key built by the learner (python_key.py): a
mode that counts FLOPs and bytes and a subclass that records ops, each checked
against what the head's shapes say and what torch's own observers see (head_costs.py).

Six exercises are graded here by the one engine (grading/exercises.py); the rest is the lab's own checks.
"""

from __future__ import annotations

import torch

from workshop import engine
from workshop.i18n import _
from workshop.lab_api import LabContext
from workshop.labs.autograd.batch import load_batch
from workshop.labs.tensor.anatomy import anatomy
from workshop.labs.tensor.grading import probes
from workshop.labs.tensor.head_costs import (
    analytic,
    backward_ops,
    gradient,
    head_leaves,
    torch_flops,
)
from workshop.labs.tensor.versions import version_facts
from workshop.labs.tensor.view_cases import view_cases

# each view exercise, and the torch view it writes with as_strided
VIEW_EXERCISES = {"narrow_view": "narrow", "diagonal_view": "diagonal", "sliding_window": "unfold"}


def prediction_truths(rows: list[dict], versions: dict) -> dict:
    """The predictions' truths, measured by this run (never copied from the instructor's answers)."""
    by = {r["expression"]: r for r in rows}
    return {
        "wt_stride": by["W.t()"]["stride"],
        "narrow_offset": by["W.narrow(0, 100, 50)"]["offset"],
        "step_stride": by["W[2::3, 16:]"]["stride"],
        "step_offset": by["W[2::3, 16:]"]["offset"],
        "expand_stride": by["b.expand(176, 600)"]["stride"],
        "sharing_w": [
            r["expression"]
            for r in rows
            if r["base"] == "W" and r["shares"] and r["expression"] != "W"
        ],
        "bumping_ops": [op for op, moved in versions["bumps"].items() if moved],
        "y_version": versions["base_version"],
        "error_at_version": versions["error_version"],
        "error_shape": versions["saved_shape"],
    }


def as_strided_only(ctx: LabContext, ex, impl, graded: engine.Graded) -> None:
    """A rule of the view exercises: the function made its view with as_strided and no other op."""
    others = sorted({op for ops in graded.seen for op in ops} - {"aten.as_strided.default"})
    ctx.check_equal(
        _("{function} makes its view with as_strided only").format(function=ex.attribute),
        others,
        [],
        message=_("{function} ran {ops}: write the view with as_strided alone").format(
            function=ex.attribute, ops=", ".join(others)
        ),
    )


def agrees_with_flop_counter(torch_counts: dict, m: int, n: int):
    """A rule of count_dispatch: its matmul FLOPs are FlopCounterMode's, but for the bias it leaves out."""

    def rule(ctx: LabContext, ex, impl, graded: engine.Graded) -> None:
        for phase, counted in torch_counts.items():
            got = graded.returned.get(phase, {}).get("counts", {})
            mine = dict(got.get("flops", {})) if isinstance(got, dict) else {}
            if "aten.addmm.default" in mine:
                mine["aten.addmm.default"] -= m * n  # FlopCounterMode counts the product alone
            ctx.check_equal(
                _(
                    "{function}: the matmuls' FLOPs = FlopCounterMode's, bias aside ({phase})"
                ).format(function=ex.attribute, phase=phase),
                {op: v for op, v in mine.items() if v},
                counted,
            )

    return rule


def grade_dispatch(ctx: LabContext, x, W, b, G) -> dict:
    """count_dispatch and record_dispatch on the head's forward and backward; returns what the truths were."""
    m, k, n = x.shape[:-1].numel(), x.shape[-1], W.shape[0]
    costs = analytic(m, k, n, x.element_size())
    # FlopCounterMode's first use imports torch._dynamo (about 3 s): a whole run checks the learner's mode against
    # it; `check tensor count_dispatch` against the shapes' counts alone, which the whole run checks against it
    whole = not ctx.options.only
    flop_counter = torch_flops(head_leaves(x, W, b), G) if whole else {}
    shared = {
        "m": m,
        "n": n,
        "element_size": x.element_size(),
        "views": ["aten.view.default", "aten.t.default", "aten.detach.default"],
    }
    engine.grade(
        ctx,
        "count_dispatch",
        [engine.Case(p, (p, x, W, b, G), {"counts": c}, shared) for p, c in costs.items()],
        call=probes.count_head,
        rules=(agrees_with_flop_counter(flop_counter, m, n),) if whole else (),
    )
    ops = backward_ops(head_leaves(x, W, b), G) if ctx.wants("record_dispatch") else []
    engine.grade(
        ctx,
        "record_dispatch",
        [engine.Case("backward", (x, W, b, G), {"ops": {"log": ops}})],
        call=probes.record_head,
    )
    return {
        "costs": costs,
        "flop_counter": flop_counter,
        "ops": ops,
        "shapes": {"m": m, "k": k, "n": n},
    }


def check_lab(ctx: LabContext, rows: list[dict], versions: dict, found: dict):
    """The lab's own checks: what the chapter says of views, counters and observers holds on this run."""
    by = {r["expression"]: r for r in rows}
    ctx.check_equal(
        _("every view of W shares its storage; W.t().contiguous() is a copy"),
        [r["expression"] for r in rows if r["base"] == "W" and not r["shares"]],
        ["W.t().contiguous()"],
    )
    ctx.check_equal(
        _("b.expand repeats b's storage: a stride of 0"), by["b.expand(176, 600)"]["stride"][0], 0
    )
    ctx.check_equal(
        _("a view's in-place ops move its base's counter: y._version = v._version"),
        versions["base_version"],
        versions["view_version"],
    )
    ctx.check_min(
        _("autograd refused the saved x changed in place: its version moved"),
        versions["error_version"],
        1,
    )
    bias = {"forward": found["shapes"]["m"] * found["shapes"]["n"], "backward": 0}
    for phase, costs in found["costs"].items():
        ctx.check_equal(
            _("FlopCounterMode's count = the shapes' matmul FLOPs ({phase})").format(phase=phase),
            sum(found["flop_counter"][phase].values()),
            sum(costs["flops"].values()) - bias[phase],
        )
    ctx.check_equal(
        _("the head's backward runs two mm and one sum (a reference mode's trace)"),
        [op for op in found["ops"] if op in ("aten.mm.default", "aten.sum.dim_IntList")],
        ["aten.mm.default", "aten.mm.default", "aten.sum.dim_IntList"],
    )


def run(ctx: LabContext) -> None:
    """The whole lab; a check of named exercises (`check tensor EXERCISE`) runs only what they need."""
    batch = load_batch(ctx.options.device)
    x = batch.hidden.detach()  # (B, T, 64): the head's input
    W, b = batch.head.weight.detach(), batch.head.bias.detach()  # (600, 64), (600,)
    rows, versions = anatomy(W, b, x), version_facts(x, W, b)
    engine.grade(ctx, "predictions", prediction_truths(rows, versions))
    for name, view in VIEW_EXERCISES.items():
        cases = view_cases(view, W, ctx.options.seed) if ctx.wants(name) else []
        engine.grade(ctx, name, cases, call=probes.strided_call, rules=(as_strided_only,))
    G = gradient(x, W, ctx.options.seed)  # (B, T, 600): the incoming gradient of the head's output
    found = grade_dispatch(ctx, x, W, b, G)
    if ctx.options.only:  # the lab's own checks, the figure, the summary: a whole run's
        ctx.summary = _(
            "Graded only {exercises}; the whole lab runs with `python -m workshop check {lab}`."
        ).format(exercises=", ".join(ctx.options.only), lab=ctx.name)
        return
    found["ops"] = found["ops"] or backward_ops(head_leaves(x, W, b), G)
    check_lab(ctx, rows, versions, found)
    # matplotlib costs ~1 s to import: only a whole run draws
    from workshop.labs.tensor.storage_draw import draw

    ctx.save_figure(
        "storage.png", draw(rows, _("The LM head's views: storage index of each element"))
    )
    values = {
        "views": rows,
        "versions": versions,
        **found,
        "torch": torch.__version__,
    }
    ctx.extra.update(values)
    ctx.render_summary(**values, graded=ctx.graded)
