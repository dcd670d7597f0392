"""What a wrong prediction shows: the conditions of the predictions exercise's diagnoses (grading/exercises.py
declares them, each with its message), read from how the prediction relates to this run's figures. A prediction's
evidence (declarations/diagnosis.py): its output "strategy.figure", its facts the run's row (figure_rows.FigureRow) of
each strategy that ran. None of them says the measured figure itself: the grader shows the miss ("about 2x too
low"), and a prediction stays a prediction.
"""

import functools
import itertools
import math

from workshop.i18n import N_, _
from workshop.labs.distributed.figure_rows import predicted

# a prediction passes within 10% of the run's figure: |predicted / measured - 1| <= 0.10
PREDICTION_TOLERANCE = 0.10
FP32 = 4


def off_by(predicted: float, actual: float) -> float:
    """|predicted / actual - 1|; a prediction of 0 for 0 is exact, anything else for 0 infinitely off."""
    if actual == 0:
        return 0.0 if predicted == 0 else math.inf
    return abs(predicted / actual - 1)


def prediction(evidence) -> tuple[str, str, object]:
    """(strategy, figure, the strategy's row) of a prediction."""
    strategy, figure = evidence.output.split(".")
    return strategy, figure, evidence.facts[strategy]


# A strategy other than DDP predicted with DDP's figures: what it does instead
NOT_DDP = {
    "fsdp": N_(
        "FSDP keeps 1/N of what DDP replicates, and all-gathers parameters and reduce-scatters gradients where "
        "DDP all-reduces them"
    ),
    "tp": N_(
        "tensor parallel keeps a slice of each matrix, and all-reduces activations, not gradients"
    ),
    "pp": N_(
        "pipeline parallel keeps a stage of blocks, and sends activations instead of all-reducing"
    ),
}


def ddp_figure(evidence) -> dict | None:
    """A strategy predicted with this run's DDP figure for this field (the run's DDP row)."""
    strategy, figure, _row = prediction(evidence)
    ddp = evidence.facts.get("ddp")
    if (
        strategy == "ddp"
        or ddp is None
        or ddp["n"] == 1
        or off_by(evidence.got, predicted(ddp)[figure]) > PREDICTION_TOLERANCE / 2
    ):
        return None
    return {"strategy": strategy, "figure": figure, "why": _(NOT_DDP[strategy])}


def predicted_as(figure: str, expected, tolerance: float = PREDICTION_TOLERANCE / 2):
    """A prediction of `figure` within `tolerance` of expected(this run's figure, the strategy's row) (None: not
    this strategy)."""

    def shows(evidence) -> dict | None:
        strategy, predicted, row = prediction(evidence)
        value = expected(evidence.want, row) if predicted == figure else None
        return (
            None
            if value is None or off_by(evidence.got, value) > tolerance
            else {"strategy": strategy}
        )

    return shows


def left_out(evidence) -> dict | None:
    """The logged rows ("backward allgather_base") whose leaving out explains a count or bytes, the fewest that do
    ("a or b" where several explain it equally)."""
    strategy, figure, row = prediction(evidence)
    if figure == "held_bytes":
        return None
    rows = row["collectives_rank0"]
    sizes = [r["count" if figure == "collectives" else "bytes"] for r in rows]
    for size in range(1, len(rows)):
        matches = [
            out
            for out in itertools.combinations(range(len(rows)), size)
            if off_by(evidence.got, sum(sizes) - sum(sizes[i] for i in out))
            <= PREDICTION_TOLERANCE / 2
        ]
        if matches:
            either = [", ".join(f"{rows[i]['phase']} {rows[i]['op']}" for i in m) for m in matches]
            named = functools.reduce(
                lambda a, b: _("{one} or {other}").format(one=a, other=b), either
            )
            return {"strategy": strategy, "rows": named}
    return None
