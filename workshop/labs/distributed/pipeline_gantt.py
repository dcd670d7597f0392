"""The pipeline's Gantt chart: one panel per schedule, a row per rank, a bar per forward (F) / backward (B)
chunk of one timed step (the last one not instrumented), from the run's own timestamps."""

from __future__ import annotations

from workshop.i18n import _
from workshop.labs.distributed.measurements import Run, timed_steps
from workshop.labs.distributed.pipeline_idle import Idle


def draw(runs: dict[str, Run], idle: dict[str, Idle]):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(runs), 1, figsize=(10, 1.2 + 1.5 * len(runs)), squeeze=False)
    colors = {"F": "tab:blue", "B": "tab:orange"}
    for ax, (name, run) in zip(axes[:, 0], runs.items(), strict=True):
        step = timed_steps(list(range(len(run.per_rank[0].intervals))))[-1]
        ranks = [r.intervals[step] for r in run.per_rank]
        start = min(iv[3] for r in ranks for iv in r)
        for rank, intervals in enumerate(ranks):
            for kind, stage, mb, t0, t1 in intervals:
                second = stage >= len(ranks)  # an interleaved rank's second stage: lighter shade
                ax.barh(
                    rank,
                    (t1 - t0) * 1e3,
                    left=(t0 - start) * 1e3,
                    color=colors[kind],
                    alpha=0.55 if second else 0.95,
                    edgecolor="black",
                    linewidth=0.4,
                )
                middle = (t0 + t1 - 2 * start) / 2 * 1e3
                ax.text(middle, rank, f"{kind}{mb}", ha="center", va="center", fontsize=6)
        ax.set_yticks(
            range(len(ranks)), [_("rank {rank}").format(rank=r) for r in range(len(ranks))]
        )
        ax.invert_yaxis()
        title = _("{name}: idle {measured:.0%} measured, {theory:.0%} in theory (step {step})")
        ax.set_title(
            title.format(
                name=name, measured=idle[name].measured, theory=idle[name].theory, step=step
            ),
            fontsize=9,
        )
    axes[-1, 0].set_xlabel(
        _("ms since the step began (F = forward, B = backward, number = micro-batch)")
    )
    fig.tight_layout()
    return fig
