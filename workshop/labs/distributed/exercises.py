"""The distributed lab's exercises: the chapter asks for a survey, not a construction. Predict what each
strategy costs, answer the handout's questions with this run's facts, then write the one-page survey.

Graded inside the lab (lab.grade_exercises) by predictions.grade, answers.grade and survey.grade.
"""

from workshop.exercise import Exercise
from workshop.labs.distributed import survey

WORKSPACE_HEADER = '''"""My distributed lab: predictions and answers, checked against my own run.

`python -m workshop check distributed` runs the four demos with N = --n processes (default 2), measures them,
and grades PREDICTIONS (each number within 10% of the run's) and ANSWERS (the run's facts) below, and my
survey.md beside this file. Write numbers, not expressions you have not checked: `3 * 1_118_048` is fine.
Fill each `...`; an exercise whose values are all `...` counts as not started.
"""
'''

STRATEGY_FIELDS = '{"held_bytes": ..., "collectives": ..., "comm_bytes": ...}'

EXERCISES = [
    Exercise(
        lab="distributed",
        name="predictions",
        title="predict each strategy's bytes per rank and collectives per step, then run",
        statement=(
            "Before running, predict for each strategy at your N: held_bytes, the bytes of parameters, "
            "gradients and optimizer state (SGD momentum) on the rank that holds most; collectives, the "
            "collective calls rank 0 makes in one training step (a send and a receive count one each); "
            "comm_bytes, the buffer bytes of those calls summed (an all-gather's buffer is the gathered "
            "tensor, a reduce-scatter's the full input). Pipeline figures are GPipe's with m = 2N micro-batches. "
            "Each number must be within 10% of what the run measures."
        ),
        hint=(
            "The model has 279,512 fp32 parameters (1,118,048 bytes); its blocks, the FSDP units and the tensor "
            "parallel plan are in the handout's sections 1-4. Count from the code, then compare with the "
            "run's figures.json."
        ),
        handout="README.md#predict-before-you-run",
        reference="workshop.labs.distributed.predictions:reference",
        attribute="PREDICTIONS",
        interface=(
            'PREDICTIONS = {"n": N, "ddp": {...}, "fsdp": {...}, "tp": {...}, "pp": {...}}, each strategy '
            f"{STRATEGY_FIELDS}, ints (bytes, counts)"
        ),
        stub=f"""
        # Predictions for N = 2 processes: set "n" to the --n you will run with.
        PREDICTIONS = {{
            "n": 2,
            "ddp": {STRATEGY_FIELDS},
            "fsdp": {STRATEGY_FIELDS},
            "tp": {STRATEGY_FIELDS},
            "pp": {STRATEGY_FIELDS},
        }}
        """,
    ),
    Exercise(
        lab="distributed",
        name="answers",
        title="answer the handout's questions 1, 3, 4 and 5 with your run's facts",
        statement=(
            "Answer from the code and the handout, then check against your run: fsdp_backward_allgathers, the "
            "all-gathers FSDP issues in one backward (question 1); logits_gather_bytes, the bytes of the "
            "(rows, tokens, 600) fp32 logits that gathering them for the loss would build per step (question 3); "
            "gpipe_idle_theory, GPipe's idle fraction in theory at your N (question 4); interleaved_sends_rank0, "
            "the sends rank 0 makes in one interleaved-1F1B step (question 5)."
        ),
        hint="Each answer's question in the handout says where to look; figures.json has the run's figures.",
        handout="README.md#questions",
        reference="workshop.labs.distributed.answers:reference",
        attribute="ANSWERS",
        interface="ANSWERS = {key: number}: counts as ints, bytes as ints, the idle fraction as a float in [0, 1]",
        stub="""
        ANSWERS = {
            "fsdp_backward_allgathers": ...,
            "logits_gather_bytes": ...,
            "gpipe_idle_theory": ...,
            "interleaved_sends_rank0": ...,
        }
        """,
    ),
    Exercise(
        lab="distributed",
        name="survey",
        title="write the one-page survey of DDP, FSDP, TP and PP with your run's figures",
        statement=(
            "Write survey.md: one page (250-700 words of prose) that tells DDP, FSDP, tensor parallel and "
            "pipeline parallel apart, saying for each what every rank holds and what is communicated, and "
            "quoting your own run's figures. The first `check distributed` writes its template, with your "
            "run's figures in tables."
        ),
        hint=(
            "Give each strategy sentences of its own that name what a rank holds (a replica, a shard, a slice, "
            "a stage) and the collective it uses; quote bytes, times and idle fractions exactly as your tables "
            "show them."
        ),
        handout="README.md#the-survey",
        reference="workshop.labs.distributed.survey:MODEL_ANSWER",
        document="survey.md",
        stub=survey.starter([]),
    ),
]
