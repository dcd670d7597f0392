"""The answers exercise: the handout's questions whose answer is a fact of the run, answered in the learner's
ANSWERS dict and checked against this run. (The open questions have model answers for instructors in
model_answers.md.) The reference derives each answer from the model's shapes and the demos' settings.
"""

from __future__ import annotations

import math

from workshop.i18n import N_, _
from workshop.lab import LabContext
from workshop.labs.distributed import collectives, idle, pp
from workshop.labs.distributed.figures import Figure
from workshop.labs.distributed.records import Measurements
from workshop.labs.distributed.training import ROWS
from workshop.minigpt.grammar import MAX_SENTENCE_LEN
from workshop.minigpt.model import GPTConfig

QUESTIONS = {  # key -> (handout question, how exact the answer must be: relative for sizes, absolute else)
    "fsdp_backward_allgathers": ("1", 0.0),
    "logits_gather_bytes": ("3", 0.01),
    "gpipe_idle_theory": ("4", 0.005),
    "interleaved_sends_rank0": ("5", 0.0),
}


def reference(n: int, cfg: GPTConfig = GPTConfig()) -> dict:
    m = pp.microbatches(n)
    interleaves = pp.schedules_for(n, cfg)["interleaved_1f1b"] is None
    return {
        "fsdp_backward_allgathers": cfg.n_layer
        if n > 1
        else 0,  # every block again; the root stays gathered
        "logits_gather_bytes": ROWS * (MAX_SENTENCE_LEN - 1) * cfg.vocab_size * 4,  # (B, T, V) fp32
        "gpipe_idle_theory": idle.theory(n, m),
        # rank 0 holds stages 0 and N: m activations forward from each, m gradients back from stage N
        "interleaved_sends_rank0": (3 * m if n > 1 else 0) if interleaves else None,
    }


def facts(figures: list[Figure], tp: Measurements | None) -> dict:
    """This run's answers, from its figures (None where the run did not measure it)."""
    by_run = {f.run: f for f in figures}
    fsdp, gpipe, interleaved = (by_run.get(k) for k in ("fsdp", "gpipe", "interleaved_1f1b"))
    vocab = tp.lm_head_local_shape[0] * tp.world_size if tp else None
    return {
        "fsdp_backward_allgathers": collectives.total(
            fsdp.collectives_rank0, "allgather", "backward"
        )[0]
        if fsdp
        else None,
        "logits_gather_bytes": tp.rows_per_chunk * tp.seq_len * vocab * 4 if tp else None,
        "gpipe_idle_theory": gpipe.bubble_theory if gpipe else None,
        "interleaved_sends_rank0": collectives.total(interleaved.collectives_rank0, "send")[0]
        if interleaved
        else None,
    }


WHERE = {  # where the run shows each answer
    "fsdp_backward_allgathers": N_(
        "count FSDP's backward all-gathers in fsdp/measurements.json (rank 0)"
    ),
    "logits_gather_bytes": N_("rows x tokens x 600 words x 4 bytes: the (8, 22, 600) fp32 logits"),
    "gpipe_idle_theory": N_("(p - 1) / (m + p - 1), with p = N ranks and m = 2N micro-batches"),
    "interleaved_sends_rank0": N_(
        "count rank 0's sends of interleaved_1f1b in pp/measurements.json"
    ),
}


def grade(ctx: LabContext, answers, run_facts: dict) -> None:
    answers = answers(ctx.n_procs) if callable(answers) else answers  # the reference derives them
    if not isinstance(answers, dict):
        raise TypeError(_("ANSWERS must be a dict, not {kind}").format(kind=type(answers).__name__))
    if answers and all(v is Ellipsis for v in answers.values()):
        raise NotImplementedError  # the template, untouched: not started
    for key, (question, tolerance) in QUESTIONS.items():
        actual, value = run_facts[key], answers.get(key)
        if actual is None:  # not measured at this N (e.g. no interleaving with 4 ranks)
            continue
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        error = (
            (abs(value / actual - 1) if tolerance and actual else abs(value - actual))
            if ok
            else math.inf
        )
        ctx.check_max(
            _("answers: {key} (question {question}) matches the run").format(
                key=key, question=question
            ),
            error,
            tolerance,
            message=hint(key, value, actual, ctx.n_procs)
            if ok
            else _("give ANSWERS['{key}'] as a number").format(key=key),
        )


def hint(key: str, value: float, actual: float, n: int) -> str:
    """Why a wrong answer is wrong, where its relation to the right one says so; else where to look."""
    near = lambda x: math.isclose(value, x, rel_tol=0.01)  # noqa: E731
    known = {
        "fsdp_backward_allgathers": [
            (
                actual + 1,
                _(
                    "the root unit (embeddings, ln_f, lm_head) is not resharded after forward: it stays gathered"
                ),
            ),
            (
                0,
                _(
                    "FSDP frees a block's gathered parameters after its forward: backward must gather them again"
                ),
            ),
        ],
        "logits_gather_bytes": [
            (actual / 4, _("that is elements, not bytes (fp32: 4 bytes each)")),
            (actual / n, _("gathered logits hold the whole vocabulary (600 per token), not 600/N")),
        ],
        "gpipe_idle_theory": [
            (actual * 100, _("give a fraction between 0 and 1, not a percent")),
            (
                idle.theory(n, pp.microbatches(n), 2),
                _("that is the interleaved schedule's (v=2); GPipe has v=1"),
            ),
        ],
        "interleaved_sends_rank0": [
            (
                actual / 3,
                _(
                    "that is GPipe's count: interleaved, rank 0 holds two stages and sends from both"
                ),
            ),
        ],
    }
    why = next((why for expected, why in known[key] if near(expected)), _(WHERE[key]))
    return f"{key}: {why}"
