"""A pipeline run's idle time: the theory, what the run measured, how far its timer can be trusted, and where
the idle went.

Measured idle: per step, each rank's busy time (its forward and backward chunks) over the step's span (first
start to last end on any rank), averaged over the ranks; the median over the timed steps.

Theory: with equal stage times and free communication, p ranks with v stages each and m micro-batches idle
(p-1)/(v*m + p-1) of the span. Unequal stages or any cost between chunks only add idle, so a correct
measurement sits at or above it, by no less than what the timer's resolution can hide (`timer_margin`).

Where the rest went: each chunk can start once the rank's previous chunk ended and the chunk it depends on
(the previous stage's forward of the micro-batch, or the next stage's backward) ended on its rank. The time
from that moment to the chunk's start is a fixed cost paid per chunk (the receive, the schedule's own Python):
`overhead_ms` is its median, `overhead_share` what it adds up to over a rank's chunks, as a share of the span.

The pipeline's Gantt chart (`draw`) shows the same intervals, one bar per chunk.
"""

from __future__ import annotations

import statistics

from workshop.i18n import _
from workshop.labs.distributed.measurements import Interval, Run, timed_steps


def theory(p: int, m: int, v: int = 1) -> float:
    """(p-1)/(v*m + p-1): (p-1)/(m+p-1) for GPipe and 1F1B."""
    return (p - 1) / (v * m + p - 1)


# A pipeline run's idle, as a dict (`analyse`): measured, theory, timer_margin (the most the timestamps' cost can
# move `measured`, as a fraction of the span), busy_s (all ranks' chunks, summed: the step's compute as the
# pipeline ran it, least-disturbed step), busy_cpu_s (as busy_s, in CPU seconds; 0 where the run did not measure
# them), chunk_ms (median duration of one forward or backward chunk), chunks_per_rank (2 m v), overhead_ms
# (median wait from "could start" to "started", per chunk), overhead_share (chunks_per_rank x overhead / span)
Idle = dict


def waits(ranks: list[list[Interval]], p: int) -> list[float]:
    """For every chunk of a step: seconds between the moment it could start and its start (>= 0)."""
    ends = {(iv[0], iv[1], iv[2]): iv[4] for r in ranks for iv in r}  # (kind, stage, mb) -> end
    last_stage = max(iv[1] for r in ranks for iv in r)
    out = []
    for intervals in ranks:
        previous_end = 0.0
        for kind, stage, mb, start, end in sorted(intervals, key=lambda iv: iv[3]):
            if kind == "F":
                needs = ("F", stage - 1, mb) if stage > 0 else None
            else:
                needs = ("B", stage + 1, mb) if stage < last_stage else ("F", stage, mb)
            ready = max(previous_end, ends.get(needs, 0.0))
            out.append(max(0.0, start - ready))
            previous_end = end
    return out


def analyse(run: Run, p: int) -> Idle:
    steps = timed_steps(list(range(len(run["per_rank"][0]["intervals"]))))
    by_step = [
        [r["intervals"][s] for r in run["per_rank"]] for s in steps
    ]  # [step][rank] -> intervals
    # a step's span: its first start to its last end on any rank
    spans = [
        max(iv[4] for r in ranks for iv in r) - min(iv[3] for r in ranks for iv in r)
        for ranks in by_step
    ]
    # [step][rank] -> seconds inside the rank's chunks
    busy_per_rank = [[sum(iv[4] - iv[3] for iv in r) for r in ranks] for ranks in by_step]
    fractions = [
        statistics.mean(1 - b / length for b in busy)
        for busy, length in zip(busy_per_rank, spans, strict=True)
    ]
    durations = [iv[4] - iv[3] for ranks in by_step for r in ranks for iv in r]
    delays = [wait for ranks in by_step for wait in waits(ranks, p)]
    m, v = run["microbatches"], run["stages_per_rank"]
    length = statistics.median(spans)
    resolution = max(r["timer_resolution_s"] for r in run["per_rank"])
    overhead = statistics.median(delays)
    return dict(
        measured=statistics.median(fractions),
        theory=theory(p, m, v),
        # busy: 2mv intervals of two timestamps each; span: two more. Each timestamp is late by <= resolution.
        timer_margin=(2 * (2 * m * v) + 2) * resolution / length,
        # the machine's other work only adds time to a step: the fastest step is the closest to the work's own
        # cost (the reference it is compared with is taken the same way)
        busy_s=min(sum(busy) for busy in busy_per_rank),
        busy_cpu_s=min(sum(r["busy_cpu_s"][s] for r in run["per_rank"]) for s in steps)
        if all(r["busy_cpu_s"] for r in run["per_rank"])
        else 0.0,
        chunk_ms=1e3 * statistics.median(durations),
        chunks_per_rank=2 * m * v,
        overhead_ms=1e3 * overhead,
        overhead_share=2 * m * v * overhead / length,
    )


def draw(runs: dict[str, Run], idle: dict[str, Idle]):
    """The pipeline's Gantt chart: one panel per schedule, a row per rank, a bar per forward (F) / backward (B)
    chunk of one timed step (the last one not instrumented), from the run's own timestamps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(runs), 1, figsize=(10, 1.2 + 1.5 * len(runs)), squeeze=False)
    for ax, (name, run) in zip(axes[:, 0], runs.items(), strict=True):
        step = timed_steps(list(range(len(run["per_rank"][0]["intervals"]))))[-1]
        ranks = [r["intervals"][step] for r in run["per_rank"]]
        start = min(iv[3] for r in ranks for iv in r)
        for rank, intervals in enumerate(ranks):
            for kind, stage, mb, t0, t1 in intervals:
                ax.barh(
                    rank,
                    (t1 - t0) * 1e3,
                    left=(t0 - start) * 1e3,
                    color={"F": "tab:blue", "B": "tab:orange"}[kind],
                    # an interleaved rank's second stage: lighter shade
                    alpha=0.55 if stage >= len(ranks) else 0.95,
                    edgecolor="black",
                    linewidth=0.4,
                )
                # its label at its middle
                ax.text(
                    (t0 + t1 - 2 * start) / 2 * 1e3,
                    rank,
                    f"{kind}{mb}",
                    ha="center",
                    va="center",
                    fontsize=6,
                )
        ax.set_yticks(
            range(len(ranks)), [_("rank {rank}").format(rank=r) for r in range(len(ranks))]
        )
        ax.invert_yaxis()
        ax.set_title(
            _("{name}: idle {measured:.0%} measured, {theory:.0%} in theory (step {step})").format(
                name=name, measured=idle[name]["measured"], theory=idle[name]["theory"], step=step
            ),
            fontsize=9,
        )
    axes[-1, 0].set_xlabel(
        _("ms since the step began (F = forward, B = backward, number = micro-batch)")
    )
    fig.tight_layout()
    return fig
