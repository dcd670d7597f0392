"""The distributed lab's exercises: the chapter asks for a survey, not a construction. Predict what each
strategy costs, answer the handout's questions with this run's facts, then write the one-page survey.

Graded by the one engine (engine.py) inside the lab (lab.grade_exercises): a wrong prediction or
answer is explained by the first of its exercise's diagnoses that it shows (the predictions' conditions:
prediction_misses.py); survey.grade reads the survey.
"""

import math
from pathlib import Path

from workshop.declarations.diagnosis import Diagnosis
from workshop.declarations.exercise import Exercise
from workshop.declarations.questions import Question
from workshop.i18n import N_
from workshop.labs.distributed.grading.prediction_misses import (
    FP32,
    PREDICTION_TOLERANCE,
    ddp_figure,
    left_out,
    predicted_as,
)

LAB = "distributed"

WORKSPACE_DOC = N_("""My distributed lab: predictions and answers, checked against my own run.

`python -m workshop check distributed` runs the four demos with N = --n processes (default 2), measures them,
and grades PREDICTIONS (each number within 10% of the run's) and ANSWERS (the run's facts) below, and my
survey.md beside this file. Write numbers, not expressions you have not checked: `3 * 1_118_048` is fine.
Replace each `None` with an answer; an exercise whose values are all `None` counts as not started.""")

# What each predicted figure is, per strategy (GPipe's for pp), said when a prediction is off.
PREDICTED = {
    "held_bytes": N_("bytes of params + grads + optimizer state on the rank that holds most"),
    "collectives": N_("collective calls rank 0 makes in one step (sends and receives included)"),
    "comm_bytes": N_("the buffer bytes of those calls, summed"),
}
PREDICTION_QUESTIONS = (
    Question(
        "n",
        N_('Predictions for N = n processes: set "n" to the --n you will run with.'),
        N_("the --n of this run"),
        start="2",
    ),
    *(
        Question(f"{strategy}.{figure}", "", look, "number", PREDICTION_TOLERANCE, relative=True)
        for strategy in ("ddp", "fsdp", "tp", "pp")
        for figure, look in PREDICTED.items()
    ),
)

PREDICTION_DIAGNOSES = (
    Diagnosis(
        None,
        lambda e: {"theirs": e.got},
        N_(
            "these predictions are for N={theirs}: predict for this run's N, or run with --n {theirs}"
        ),
        output="n",
    ),
    Diagnosis(None, ddp_figure, N_("{strategy}: that is DDP's figure ({figure}): {why}")),
    Diagnosis(
        None,
        predicted_as("held_bytes", lambda want, row: want / 3),
        N_(
            "{strategy}: you counted the parameters only: a rank also holds their gradients and SGD's momentum"
        ),
    ),
    Diagnosis(
        None,
        predicted_as("held_bytes", lambda want, row: want * 2 / 3),
        N_(
            "{strategy}: a rank holds three copies, parameters, gradients and momentum; you counted two"
        ),
    ),
    Diagnosis(
        None,
        predicted_as("held_bytes", lambda want, row: want / FP32),
        N_("{strategy}: that is elements, not bytes (fp32: 4 bytes each)"),
    ),
    Diagnosis(
        None,
        predicted_as(
            "held_bytes",
            lambda want, row: (
                want / row["n"] if row["strategy"] == "ddp" and row["n"] > 1 else None
            ),
        ),
        N_("{strategy}: DDP splits nothing: every rank holds the whole model and its state"),
    ),
    Diagnosis(None, left_out, N_("{strategy}: you left out {rows}")),
    Diagnosis(
        None,
        predicted_as("comm_bytes", lambda want, row: want / FP32, PREDICTION_TOLERANCE),
        N_("{strategy}: that is elements, not bytes (fp32: 4 bytes each)"),
    ),
    Diagnosis(
        None,
        predicted_as(
            "comm_bytes", lambda want, row: row["sent_bytes"] or None, PREDICTION_TOLERANCE
        ),
        N_("{strategy}: that is what rank 0 sends on the wire; give the buffers' bytes"),
    ),
)


def near(expected):
    """An answer within 1% of expected(the truth, the answers' facts): facts {"n": the run's N,
    "interleaved_idle_theory": the interleaved schedule's idle in theory at N}."""
    return lambda e: {} if math.isclose(e.got, expected(e.want, e.facts), rel_tol=0.01) else None


# Why a wrong answer is wrong, where its relation to the right one says so ({name}: the question's key)
ANSWER_DIAGNOSES = tuple(
    Diagnosis(None, near(expected), message, output=key)
    for key, expected, message in (
        (
            "fsdp_backward_allgathers",
            lambda want, facts: want + 1,
            N_(
                "{name}: the root unit (embeddings, ln_f, lm_head) is not resharded after forward: it stays gathered"
            ),
        ),
        (
            "fsdp_backward_allgathers",
            lambda want, facts: 0,
            N_(
                "{name}: FSDP frees a block's gathered parameters after its forward: backward must gather them again"
            ),
        ),
        (
            "logits_gather_bytes",
            lambda want, facts: want / FP32,
            N_("{name}: that is elements, not bytes (fp32: 4 bytes each)"),
        ),
        (
            "logits_gather_bytes",
            lambda want, facts: want / facts["n"],
            N_("{name}: gathered logits hold the whole vocabulary (600 per token), not 600/N"),
        ),
        (
            "gpipe_idle_theory",
            lambda want, facts: want * 100,
            N_("{name}: give a fraction between 0 and 1, not a percent"),
        ),
        (
            "gpipe_idle_theory",
            lambda want, facts: facts["interleaved_idle_theory"],
            N_("{name}: that is the interleaved schedule's (v=2); GPipe has v=1"),
        ),
        (
            "interleaved_sends_rank0",
            lambda want, facts: want / 3,
            N_(
                "{name}: that is GPipe's count: interleaved, rank 0 holds two stages and sends from both"
            ),
        ),
        (
            "ddp_early_allreduces",
            lambda want, facts: want + 1,
            N_(
                "{name}: the last bucket's all-reduce is issued by backward's last gradient, when backward has "
                "no op left to run"
            ),
        ),
        (
            "ddp_early_allreduces",
            lambda want, facts: 0,
            N_(
                "{name}: that is the default buckets' count: small buckets fill, and are all-reduced, while "
                "backward still runs"
            ),
        ),
    )
)

ANSWER_QUESTIONS = (
    Question(
        "fsdp_backward_allgathers",
        N_("question 1: the all-gathers FSDP issues in one backward (a count)"),
        N_("count FSDP's backward all-gathers in fsdp/measurements.json (rank 0)"),
        "number",
    ),
    Question(
        "logits_gather_bytes",
        N_("question 3: the bytes of the gathered fp32 logits, per step (within 1%)"),
        N_("rows x tokens x 600 words x 4 bytes: the (8, 22, 600) fp32 logits"),
        "number",
        tolerance=0.01,
        relative=True,
    ),
    Question(
        "gpipe_idle_theory",
        N_(
            "question 4: GPipe's idle fraction in theory at your N (a fraction in [0, 1], to 0.005)"
        ),
        N_("(p - 1) / (m + p - 1), with p = N ranks and m = 2N micro-batches"),
        "number",
        tolerance=0.005,
    ),
    Question(
        "interleaved_sends_rank0",
        N_("question 5: the sends rank 0 makes in one interleaved-1F1B step (a count)"),
        N_("count rank 0's sends of interleaved_1f1b in pp/measurements.json"),
        "number",
    ),
    Question(
        "ddp_early_allreduces",
        N_(
            "question 6: with bucket_cap_mb=0.25, the all-reduces DDP issues while backward still has ops "
            "to run (a count; with the default buckets there are none)"
        ),
        N_(
            "the summary's table of DDP's all-reduces against backward (the small_buckets row), or count "
            "the buckets: a bucket closes with the gradient that takes it past 262,144 bytes"
        ),
        "number",
    ),
)


def survey_template(lab_dir: Path | None, work: Path) -> str | None:
    """Exercise.template of the survey: survey.py's, imported here only when a workspace is written."""
    from workshop.labs.distributed.grading import survey

    return survey.template(lab_dir, work)


EXERCISES = [
    Exercise(
        lab=LAB,
        name="predictions",
        title=N_("predict each strategy's bytes per rank and collectives per step, then run"),
        statement=N_(
            "Before running, predict for each strategy at your N: held_bytes, the bytes of parameters, "
            "gradients and optimizer state (SGD momentum) on the rank that holds most; collectives, the "
            "collective calls rank 0 makes in one training step (a send and a receive count one each); "
            "comm_bytes, the buffer bytes of those calls summed (an all-gather's buffer is the gathered "
            "tensor, a reduce-scatter's the full input). Pipeline figures are GPipe's with m = 2N "
            "micro-batches. Each number must be within 10% of what the run measures."
        ),
        hints=(
            N_(
                "Ask of each strategy what one rank keeps (the whole model, a 1/N shard of every tensor, a "
                "slice of each matrix, a stage of blocks) and which collective calls one step makes, on which "
                "tensors. A rank keeps three tensors per parameter: the parameter, its gradient and SGD's "
                "momentum. The handout's sections 1-4 and workshop/minigpt/model.py have what you need."
            ),
            N_(
                "held_bytes: 3 x the parameter bytes the rank keeps (the whole model: 279,512 fp32 parameters, "
                "1,118,048 bytes; FSDP rounds each tensor's dim 0 up to a multiple of N, then keeps 1/N). "
                "collectives: DDP, a broadcast of the buffers in forward and an all-reduce per bucket; FSDP, an "
                "all-gather per unit in forward, one per block in backward, a reduce-scatter per unit; tensor "
                "parallel, two all-reduces per block in forward and loss_parallel's three, four per block in "
                "backward and the LM head's one; the pipeline's rank 0 (GPipe), m sends and m receives. "
                "comm_bytes: the full tensor of each call (an all-gather's gathered tensor, a reduce-scatter's "
                "input), summed."
            ),
            N_(
                "Name the pieces first: P, the model's parameter bytes; the causal masks' bytes (4 blocks of "
                "32 x 32 bools); one activation, (8, 22, 64) fp32; one number per token, (8, 22) fp32; m = 2N. "
                "Then each figure is a short sum of them: DDP's comm_bytes is P plus the masks; FSDP's is N "
                "times the padded shards, once per pass, less the root's second gather; tensor parallel's is "
                "its activation-sized all-reduces plus three of one number per token; the pipeline's is one "
                "activation per send and per receive. Fill in the counts from step 2."
            ),
        ),
        handout=N_("README.md#predict-before-you-run"),
        reference="workshop.labs.distributed.grading.derived_answers:predictions",
        attribute="PREDICTIONS",
        interface=N_(
            'A dict: "n", the N you predict for, then for each strategy (ddp, fsdp, tp, pp) a dict of its '
            "held_bytes, collectives and comm_bytes, as numbers (bytes, counts)."
        ),
        questions=PREDICTION_QUESTIONS,
        diagnoses=PREDICTION_DIAGNOSES,
        from_run=True,
    ),
    Exercise(
        lab=LAB,
        name="answers",
        title=N_("answer the handout's questions 1, 3, 4, 5 and 6 with your run's facts"),
        statement=N_(
            "Answer from the code and the handout, then check against your run: fsdp_backward_allgathers, "
            "the all-gathers FSDP issues in one backward (question 1); logits_gather_bytes, the bytes of the "
            "(rows, tokens, 600) fp32 logits that gathering them for the loss would build per step (question "
            "3); gpipe_idle_theory, GPipe's idle fraction in theory at your N (question 4); "
            "interleaved_sends_rank0, the sends rank 0 makes in one interleaved-1F1B step (question 5); "
            "ddp_early_allreduces, the all-reduces DDP issues with small buckets while backward still has "
            "ops to run (question 6)."
        ),
        hints=(
            N_(
                "Each question in the handout names what to look at: a count of calls in a demo's "
                "measurements.json, the size of a tensor, the pipeline's idle formula, DDP's buckets."
            ),
            N_(
                "fsdp_backward_allgathers: the units freed after forward, gathered again (the root stays "
                "gathered); logits_gather_bytes: rows x tokens x vocabulary x 4 bytes; gpipe_idle_theory: "
                "(p - 1) / (m + p - 1) with p = N and m = 2N; interleaved_sends_rank0: what rank 0's two "
                "stages send forward, and what its later stage sends back; ddp_early_allreduces: DDP's buckets "
                "less the one backward's last gradient closes."
            ),
            N_(
                "Read the counts off your run: fsdp/measurements.json, rank 0's collectives in phase backward "
                "(op allgather_base); the summary's table of collectives for pp/interleaved_1f1b (send); the "
                "summary's table of DDP's all-reduces against backward (the small_buckets row). Compute the "
                "other two with the formulas of step 2, at your N."
            ),
        ),
        handout=N_("README.md#questions"),
        reference="workshop.labs.distributed.grading.derived_answers:answers",
        attribute="ANSWERS",
        interface=N_(
            "A dict of numbers: counts and bytes as ints, the idle fraction as a float in [0, 1]."
        ),
        questions=ANSWER_QUESTIONS,
        diagnoses=ANSWER_DIAGNOSES,
        from_run=True,
    ),
    Exercise(
        lab=LAB,
        name="survey",
        title=N_("write the one-page survey of DDP, FSDP, TP and PP with your run's figures"),
        statement=N_(
            "Write survey.md: one page (250-700 words of prose) that tells DDP, FSDP, tensor parallel and "
            "pipeline parallel apart, saying for each what every rank holds and what is communicated, and "
            "quoting your own run's figures. Its template, with your run's figures in tables, is written by "
            "`exercises init` after a run of the lab, or else by the first `check distributed`."
        ),
        hints=(
            N_(
                "Give each strategy sentences of its own that say what one rank keeps and what each of its "
                "collectives carries (parameters, gradients or activations); quote bytes, times and idle "
                "fractions exactly as your tables show them."
            ),
            N_(
                "Per strategy: what a rank keeps (a replica, a 1/N shard, a slice of each matrix, a stage of "
                "blocks) with its bytes from the first table; then which collective moves what (an all-gather "
                "of the parameters, a reduce-scatter of the gradients, an all-reduce of the activations, a "
                "send of activations), when (forward, backward) and how much, from the second table. Keep "
                "250-700 words of prose (290-820 in Spanish): tables and headings do not count."
            ),
            N_(
                "A section per strategy, about four sentences each: what a rank keeps, with its figure; what "
                "crosses the wire, naming the collective and what it carries; when and how much; one cost or "
                "limit (memory, traffic, idle time). Then a paragraph on which strategy to pick when."
            ),
        ),
        handout=N_("README.md#the-survey"),
        reference="workshop.labs.distributed.grading.survey:MODEL_ANSWER",
        document="survey.md",
        template=survey_template,
        from_run=True,
    ),
]
