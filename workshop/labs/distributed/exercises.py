"""The distributed lab's exercises: the chapter asks for a survey, not a construction. Predict what each
strategy costs, answer the handout's questions with this run's facts, then write the one-page survey.

Graded inside the lab (lab.grade_exercises) by predictions.grade, answers.grade and survey.grade.
"""

from workshop.grading.exercise import Exercise
from workshop.grading.questions import Question
from workshop.i18n import N_

LAB = "distributed"

WORKSPACE_DOC = N_("""My distributed lab: predictions and answers, checked against my own run.

`python -m workshop check distributed` runs the four demos with N = --n processes (default 2), measures them,
and grades PREDICTIONS (each number within 10% of the run's) and ANSWERS (the run's facts) below, and my
survey.md beside this file. Write numbers, not expressions you have not checked: `3 * 1_118_048` is fine.
Fill each `...`; an exercise whose values are all `...` counts as not started.""")

# a prediction passes within 10% of the run's figure: |predicted / measured - 1| <= 0.10
PREDICTION_TOLERANCE = 0.10
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
)

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
                "The model has 279,512 fp32 parameters (1,118,048 bytes); its blocks, the FSDP units and the "
                "tensor parallel plan are in the handout's sections 1-4. Count from the code, then compare with "
                "the run's figures.json."
            ),
        ),
        handout=N_("README.md#predict-before-you-run"),
        reference="workshop.labs.distributed.predictions:reference",
        attribute="PREDICTIONS",
        interface=N_(
            'A dict: "n", the N you predict for, then for each strategy (ddp, fsdp, tp, pp) a dict of its '
            "held_bytes, collectives and comm_bytes, as numbers (bytes, counts)."
        ),
        questions=PREDICTION_QUESTIONS,
        from_run=True,
    ),
    Exercise(
        lab=LAB,
        name="answers",
        title=N_("answer the handout's questions 1, 3, 4 and 5 with your run's facts"),
        statement=N_(
            "Answer from the code and the handout, then check against your run: fsdp_backward_allgathers, "
            "the all-gathers FSDP issues in one backward (question 1); logits_gather_bytes, the bytes of the "
            "(rows, tokens, 600) fp32 logits that gathering them for the loss would build per step (question "
            "3); gpipe_idle_theory, GPipe's idle fraction in theory at your N (question 4); "
            "interleaved_sends_rank0, the sends rank 0 makes in one interleaved-1F1B step (question 5)."
        ),
        hints=(
            N_(
                "Each answer's question in the handout says where to look; figures.json has the run's figures."
            ),
        ),
        handout=N_("README.md#questions"),
        reference="workshop.labs.distributed.answers:reference",
        attribute="ANSWERS",
        interface=N_(
            "A dict of numbers: counts and bytes as ints, the idle fraction as a float in [0, 1]."
        ),
        questions=ANSWER_QUESTIONS,
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
                "Give each strategy sentences of its own that name what a rank holds (a replica, a shard, a "
                "slice, a stage) and the collective it uses; quote bytes, times and idle fractions exactly as "
                "your tables show them."
            ),
        ),
        handout=N_("README.md#the-survey"),
        reference="workshop.labs.distributed.survey:MODEL_ANSWER",
        document="survey.md",
        template="workshop.labs.distributed.survey:template",
        from_run=True,
    ),
]
