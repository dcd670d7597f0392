"""The distributed lab's exercises: the chapter asks for a survey, not a construction. Predict what each
strategy costs, answer the handout's questions with this run's facts, then write the one-page survey.

Graded inside the lab (lab.grade_exercises) by predictions.grade, answers.grade and survey.grade.
"""

from workshop.grading.exercise import Exercise
from workshop.i18n import N_

LAB = "distributed"

WORKSPACE_HEADER = N_('''"""My distributed lab: predictions and answers, checked against my own run.

`python -m workshop check distributed` runs the four demos with N = --n processes (default 2), measures them,
and grades PREDICTIONS (each number within 10% of the run's) and ANSWERS (the run's facts) below, and my
survey.md beside this file. Write numbers, not expressions you have not checked: `3 * 1_118_048` is fine.
Fill each `...`; an exercise whose values are all `...` counts as not started.
"""
''')

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
        hint=N_(
            "The model has 279,512 fp32 parameters (1,118,048 bytes); its blocks, the FSDP units and the "
            "tensor parallel plan are in the handout's sections 1-4. Count from the code, then compare with "
            "the run's figures.json."
        ),
        handout=N_("README.md#predict-before-you-run"),
        reference="workshop.labs.distributed.predictions:reference",
        attribute="PREDICTIONS",
        interface=N_(
            'PREDICTIONS = {"n": N, "ddp": {...}, "fsdp": {...}, "tp": {...}, "pp": {...}}, each strategy '
            '{"held_bytes": int, "collectives": int, "comm_bytes": int} (bytes, counts)'
        ),
        stub=N_("""
        # Predictions for N = 2 processes: set "n" to the --n you will run with.
        PREDICTIONS = {
            "n": 2,
            "ddp": {"held_bytes": ..., "collectives": ..., "comm_bytes": ...},
            "fsdp": {"held_bytes": ..., "collectives": ..., "comm_bytes": ...},
            "tp": {"held_bytes": ..., "collectives": ..., "comm_bytes": ...},
            "pp": {"held_bytes": ..., "collectives": ..., "comm_bytes": ...},
        }
        """),
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
        hint=N_(
            "Each answer's question in the handout says where to look; figures.json has the run's figures."
        ),
        handout=N_("README.md#questions"),
        reference="workshop.labs.distributed.answers:reference",
        attribute="ANSWERS",
        interface=N_(
            "ANSWERS = {key: number}: counts and bytes as ints, the idle fraction as a float in [0, 1]"
        ),
        stub=N_("""
        ANSWERS = {
            "fsdp_backward_allgathers": ...,
            "logits_gather_bytes": ...,
            "gpipe_idle_theory": ...,
            "interleaved_sends_rank0": ...,
        }
        """),
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
        hint=N_(
            "Give each strategy sentences of its own that name what a rank holds (a replica, a shard, a "
            "slice, a stage) and the collective it uses; quote bytes, times and idle fractions exactly as "
            "your tables show them."
        ),
        handout=N_("README.md#the-survey"),
        reference="workshop.labs.distributed.survey:MODEL_ANSWER",
        document="survey.md",
        template="workshop.labs.distributed.survey:template",
    ),
]
