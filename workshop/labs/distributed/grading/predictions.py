"""The predictions exercise: before running, the learner predicts, for each strategy at their N, the bytes a
rank holds, the collectives rank 0 issues in one training step, and those collectives' buffer bytes. The one
grader (declarations.questions.grade_answers; the questions are declared in exercises.py) grades each number within
10% of what the run measured, says what a wrong one most likely left out (`explain`), and never the measured
figure itself: a prediction stays a prediction.

The reference (the instructor's solution) derives every number from the model's shapes, as the learner would:
PREDICTIONS = reference(n). Pipeline figures are GPipe's (1F1B has the same); the learner's constant gives N.
"""

from __future__ import annotations

import functools
import itertools
import math

from workshop.declarations.questions import Question, grade_answers
from workshop.i18n import N_, _
from workshop.lab_api import LabContext
from workshop.labs.distributed import plans
from workshop.labs.distributed.figure_rows import FigureRow
from workshop.labs.distributed.grading.exercises import PREDICTION_TOLERANCE as TOLERANCE
from workshop.labs.distributed.training import ROWS
from workshop.minigpt.grammar import MAX_SENTENCE_LEN
from workshop.minigpt.model import GPT, GPTConfig

STRATEGY_RUN = {"ddp": "ddp", "fsdp": "fsdp", "tp": "tp", "pp": "gpipe"}
FP32 = 4
SEQ = MAX_SENTENCE_LEN - 1  # tokens per sentence as the demos feed them


def param_shapes(cfg: GPTConfig = GPTConfig()) -> dict[str, tuple[int, ...]]:
    return {n: tuple(p.shape) for n, p in GPT(cfg).named_parameters()}


def tp_local_numel(name: str, shape: tuple[int, ...], n: int) -> int:
    """Elements of a parameter on one tensor-parallel rank (tp.BLOCK_PLAN, tp.HEAD_PLAN)."""
    numel = math.prod(shape)
    layer = name.rsplit(".", 1)[0].split(".", 2)[-1]  # blocks.0.attn.q_proj.weight -> attn.q_proj
    columns = layer in ("attn.q_proj", "attn.k_proj", "attn.v_proj", "mlp.fc") or name.startswith(
        "lm_head"
    )
    # a row-parallel bias is whole
    rows = layer in ("attn.out_proj", "mlp.proj") and name.endswith("weight")
    return numel // n if columns or rows else numel


def stage_bytes(shapes: dict, rank: int, p: int, cfg: GPTConfig = GPTConfig()) -> int:
    """Parameter bytes of pipeline rank `rank` of p (one stage each): its blocks, plus embeddings or head."""
    lo, hi = rank * cfg.n_layer // p, (rank + 1) * cfg.n_layer // p
    blocks = {f"blocks.{i}." for i in range(lo, hi)}
    ends = ("tok_emb", "pos_emb") if rank == 0 else ()
    ends += ("ln_f", "lm_head") if rank == p - 1 else ()
    mine = [
        s
        for name, s in shapes.items()
        if name.startswith(tuple(blocks)) or name.split(".")[0] in ends
    ]
    return FP32 * sum(math.prod(s) for s in mine)


def reference(n: int, cfg: GPTConfig = GPTConfig()) -> dict:
    """The instructor's predictions at N = n: {"n": n, strategy: {field: value}}; None for a strategy that
    cannot use n ranks."""
    shapes = param_shapes(cfg)
    params = FP32 * sum(math.prod(s) for s in shapes.values())
    talks = n > 1
    # one (ROWS, T, C) tensor: a TP all-reduce, a PP send
    activation = FP32 * ROWS * SEQ * cfg.d_model
    per_token = FP32 * ROWS * SEQ  # loss_parallel's all-reduces: one number per token
    units = cfg.n_layer + 1  # FSDP: a unit per block, one for the rest (the root)
    # rank 0's shards
    padded = sum(-(-s[0] // n) * math.prod(s[1:]) for s in shapes.values()) * FP32
    root = FP32 * sum(math.prod(s) for name, s in shapes.items() if not name.startswith("blocks."))
    masks = cfg.n_layer * cfg.block_size**2  # DDP broadcasts the causal masks (bool) from rank 0
    m = plans.microbatches(n)
    return {
        "n": n,
        "ddp": {"held_bytes": 3 * params, "collectives": 2, "comm_bytes": params + masks},
        "fsdp": {
            "held_bytes": 3 * padded,
            "collectives": (3 * units - 1)
            if talks
            else 0,  # gather fwd, gather bwd but the root, scatter
            "comm_bytes": (3 * n * padded - root) if talks else 0,
        },
        "tp": None
        if plans.tp_usable(n, cfg)
        else {
            "held_bytes": 3 * FP32 * sum(tp_local_numel(k, s, n) for k, s in shapes.items()),
            "collectives": 6 * cfg.n_layer + 4
            if talks
            else 3,  # fwd 2 per block + 3 for the loss; bwd 4 + 1
            "comm_bytes": (6 * cfg.n_layer + 1) * activation + 3 * per_token
            if talks
            else 3 * per_token,
        },
        "pp": None
        if plans.pp_usable(n, cfg)
        else {
            "held_bytes": 3 * max(stage_bytes(shapes, r, n, cfg) for r in range(n)),
            "collectives": 2 * m
            if talks
            else 0,  # rank 0 sends m activations, receives m gradients
            "comm_bytes": 2 * m * activation if talks else 0,
        },
    }


def measured(figure: FigureRow) -> dict[str, float]:
    return {
        "held_bytes": figure.state_bytes_per_rank,
        "collectives": figure.calls,
        "comm_bytes": figure.comm_bytes,
    }


def off_by(predicted: float, actual: float) -> float:
    """|predicted / actual - 1|; a prediction of 0 for 0 is exact, anything else for 0 infinitely off."""
    if actual == 0:
        return 0.0 if predicted == 0 else math.inf
    return abs(predicted / actual - 1)


def grade(ctx: LabContext, predictions, figures: list[FigureRow], n: int) -> None:
    """Grade the learner's PREDICTIONS (or the reference's, reference(n)) against the figures of a run at N = n;
    a strategy that did not run at this N is not graded (its own failed check says why)."""
    by_run = {(f.strategy, f.run): f for f in figures}
    ran = {s: by_run[(s, run)] for s, run in STRATEGY_RUN.items() if (s, run) in by_run}
    truths = {"n": n, **{strategy: measured(figure) for strategy, figure in ran.items()}}
    facts = {strategy: figure.as_json() for strategy, figure in ran.items()}
    grade_answers(ctx, predictions, truths, explain=explain, facts=facts)


def explain(question: Question, value: float, actual: float, facts: dict) -> str | None:
    """What a wrong prediction most likely missed (grade_answers' explain), without the measured figure (the
    grader shows the miss: "about 2x too low"). facts: this run's figures of every strategy that ran."""
    if question.key == "n":
        return _(
            "these predictions are for N={theirs}: predict for this run's N, or run with --n {theirs}"
        ).format(theirs=value)
    strategy, name = question.path
    figures = {s: FigureRow.from_json(row) for s, row in facts.items()}
    return mixed_up(strategy, name, value, figures) or diagnosis(
        strategy, name, value, figures[strategy]
    )


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


def mixed_up(strategy: str, name: str, value: float, figures: dict[str, FigureRow]) -> str | None:
    """Names a strategy predicted with DDP's figure for this field (this run's DDP row), else None."""
    ddp = figures.get("ddp")
    if strategy == "ddp" or ddp is None or ddp.n == 1:
        return None
    if off_by(value, measured(ddp)[name]) > TOLERANCE / 2:
        return None
    return _("{strategy}: that is DDP's figure ({name}): {why}").format(
        strategy=strategy, name=name, why=_(NOT_DDP[strategy])
    )


def diagnosis(strategy: str, name: str, value: float, figure: FigureRow) -> str | None:
    """What a wrong prediction most likely missed, from how it relates to the measured figure; None where
    nothing explains it (the grader then says where to look)."""
    actual = measured(figure)[name]
    if name == "held_bytes":
        return held_diagnosis(strategy, value, actual, figure.n)
    if left_out := missing_rows(name, value, figure):
        return _("{strategy}: you left out {rows}").format(strategy=strategy, rows=left_out)
    if name == "comm_bytes" and actual and abs(value * FP32 / actual - 1) <= TOLERANCE:
        return _("{strategy}: that is elements, not bytes (fp32: 4 bytes each)").format(
            strategy=strategy
        )
    if name == "comm_bytes" and figure.sent_bytes and off_by(value, figure.sent_bytes) <= TOLERANCE:
        return _(
            "{strategy}: that is what rank 0 sends on the wire; give the buffers' bytes"
        ).format(strategy=strategy)
    return None


def missing_rows(name: str, value: float, figure: FigureRow) -> str:
    """The logged rows ("backward allgather_base") whose leaving out explains the prediction, the fewest that do
    ('' if none; "a or b" where several explain it equally)."""
    rows = figure.collectives_rank0
    sizes = [r.count if name == "collectives" else r.bytes for r in rows]
    actual = sum(sizes)
    for size in range(1, len(rows)):
        matches = [
            left_out
            for left_out in itertools.combinations(range(len(rows)), size)
            if off_by(value, actual - sum(sizes[i] for i in left_out)) <= TOLERANCE / 2
        ]
        if matches:
            either = [", ".join(f"{rows[i].phase} {rows[i].op}" for i in m) for m in matches]
            return functools.reduce(
                lambda a, b: _("{one} or {other}").format(one=a, other=b), either
            )
    return ""


def held_diagnosis(strategy: str, value: float, actual: float, n: int) -> str | None:
    """What a wrong held_bytes most likely counted, from the measured figure (None: nothing explains it)."""
    hints = [
        (
            actual / 3,
            _(
                "you counted the parameters only: a rank also holds their gradients and SGD's momentum"
            ),
        ),
        (
            actual * 2 / 3,
            _("a rank holds three copies, parameters, gradients and momentum; you counted two"),
        ),
        (actual / FP32, _("that is elements, not bytes (fp32: 4 bytes each)")),
    ]
    if n > 1 and strategy == "ddp":
        hints.append(
            (actual / n, _("DDP splits nothing: every rank holds the whole model and its state"))
        )
    return next(
        (
            _("{strategy}: {hint}").format(strategy=strategy, hint=hint)
            for expected, hint in hints
            if off_by(value, expected) <= TOLERANCE / 2
        ),
        None,
    )
