"""The answers exercise: the handout's questions whose answer is a fact of the run, answered in the learner's
ANSWERS dict and graded by the one grader (declarations.questions.grade_answers; the questions are declared in
exercises.py) against this run. (The open questions have model answers for instructors in grading/model_answers.md.)
The reference derives each answer from the model's shapes and the demos' settings.
"""

from __future__ import annotations

import math

from workshop.declarations.questions import Question, grade_answers
from workshop.i18n import _
from workshop.lab_api import LabContext
from workshop.labs.distributed import collectives, pipeline_idle, plans
from workshop.labs.distributed.figure_rows import FigureRow
from workshop.labs.distributed.measurements import Measurements
from workshop.labs.distributed.training import ROWS
from workshop.minigpt.grammar import MAX_SENTENCE_LEN
from workshop.minigpt.model import GPT, GPTConfig


def reference(n: int, cfg: GPTConfig = GPTConfig()) -> dict:
    m = plans.microbatches(n)
    interleaves = plans.schedules_for(n, cfg)["interleaved_1f1b"] is None
    return {
        # every block again; the root stays gathered
        "fsdp_backward_allgathers": cfg.n_layer if n > 1 else 0,
        "logits_gather_bytes": ROWS * (MAX_SENTENCE_LEN - 1) * cfg.vocab_size * 4,  # (B, T, V) fp32
        "gpipe_idle_theory": pipeline_idle.theory(n, m),
        # rank 0 holds stages 0 and N: m activations forward from each, m gradients back from stage N
        "interleaved_sends_rank0": (3 * m if n > 1 else 0) if interleaves else None,
        # every bucket but the last: that one is closed by backward's last gradient
        "ddp_early_allreduces": buckets(int(plans.BUCKET_CAP_MB["small_buckets"] * 2**20), cfg) - 1,
    }


def buckets(cap_bytes: int, cfg: GPTConfig = GPTConfig()) -> int:
    """DDP's buckets for this model: gradients in the order backward produces them (the parameters' reverse
    order, here), each bucket closed by the gradient that takes it to its cap."""
    count, filled = 0, 0
    for p in reversed(list(GPT(cfg).parameters())):
        filled += p.numel() * p.element_size()
        if filled >= cap_bytes:
            count, filled = count + 1, 0
    return count + (filled > 0)


def facts(figures: list[FigureRow], tp: Measurements | None) -> dict:
    """This run's answers, from its figures (None where the run did not measure it)."""
    by_run = {f.run: f for f in figures}
    fsdp, gpipe, interleaved, small = (
        by_run.get(k) for k in ("fsdp", "gpipe", "interleaved_1f1b", "small_buckets")
    )
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
        "ddp_early_allreduces": small.issued_early()[0] if small else None,
    }


def grade(ctx: LabContext, answers, run_facts: dict, n: int) -> None:
    """Grade the learner's ANSWERS (or the reference's, reference(n)) against the facts of a run at N = n."""
    grade_answers(ctx, answers, run_facts, explain=explain, facts={"n": n})


def explain(question: Question, value: float, actual: float, facts: dict) -> str | None:
    """Why a wrong answer is wrong, where its relation to the right one says so (grade_answers' explain)."""
    key, n = question.key, facts["n"]
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
                pipeline_idle.theory(n, plans.microbatches(n), 2),
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
        "ddp_early_allreduces": [
            (
                actual + 1,
                _(
                    "the last bucket's all-reduce is issued by backward's last gradient, when backward has "
                    "no op left to run"
                ),
            ),
            (
                0,
                _(
                    "that is the default buckets' count: small buckets fill, and are all-reduced, while "
                    "backward still runs"
                ),
            ),
        ],
    }
    return next((f"{key}: {why}" for expected, why in known[key] if near(expected)), None)
