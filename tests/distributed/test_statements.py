"""The distributed texts' statements that a run or torch itself can settle, pinned to what settles them: DDP's
one bucket, tensor parallel's all-reduce sizes, what a ring collective sends. The handouts (English and Spanish),
the survey's model answers and the instructors' model answers say them so; the overstatements they replaced are
gone."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch.distributed as dist

from workshop.labs.distributed import collectives, figure_rows
from workshop.labs.distributed.grading import survey
from workshop.minigpt.model import GPT, GPTConfig

FOLDER = Path(survey.__file__).parents[1]  # the lab's
REPO = FOLDER.parents[2]
HANDOUT = {"en": FOLDER / "README.md", "es": FOLDER / "README.es.md"}
TEXTS = [
    *HANDOUT.values(),
    REPO / "survey" / "README.md",
    REPO / "survey" / "README.es.md",
    FOLDER / "grading" / "model_answers.md",
    FOLDER / "grading" / "model_answers.es.md",
    FOLDER / "ddp.py",
]
RUN = figure_rows.read(survey.COMMITTED_RUNS[0])  # CPU, N=2


def written(n: int, lang: str) -> str:
    """A number as each edition writes it: 1,118,048 in English, 1 118 048 in Spanish (4 digits: 1024)."""
    if lang == "en":
        return f"{n:,}"
    return str(n) if n < 10_000 else f"{n:,}".replace(",", " ")


def test_ddp_puts_the_whole_model_in_its_first_bucket_because_tok_emb_arrives_last():
    grads = {n: p.numel() * p.element_size() for n, p in GPT(GPTConfig()).named_parameters()}
    total, last, cap = (
        sum(grads.values()),
        grads["tok_emb.weight"],
        dist._DEFAULT_FIRST_BUCKET_BYTES,
    )
    assert (total, last, cap) == (1_118_048, 153_600, 1_048_576)
    assert total - last < cap <= total  # only the last gradient takes the first bucket past its cap
    for lang, path in HANDOUT.items():
        text = " ".join(path.read_text().split())
        for n in (total, last, cap, total - last):
            assert written(n, lang) in text, (path.name, n)


def test_tensor_parallel_all_reduces_carry_an_activation_or_one_number_per_token():
    rows, tokens, d_model, fp32 = 8, 22, GPTConfig().d_model, 4
    activation, per_token = rows * tokens * d_model * fp32, rows * tokens * fp32
    assert (activation, per_token) == (45_056, 704)
    tp = next(f for f in RUN if f["run"] == "tp")
    # forward: 2 per block and loss_parallel's 3; backward: 4 per block and the LM head's input gradient
    assert collectives.total(tp["collectives_rank0"], "allreduce", "forward") == (
        11,
        8 * activation + 3 * per_token,
    )
    assert collectives.total(tp["collectives_rank0"], "allreduce", "backward") == (
        17,
        17 * activation,
    )
    for lang, path in HANDOUT.items():
        text = " ".join(path.read_text().split())
        assert f"{written(activation, lang)} bytes" in text and f"{per_token} bytes" in text


@pytest.mark.parametrize("n", [2, 4, 8])
def test_a_ring_sends_n_minus_1_over_n_of_a_gather_or_scatter_and_twice_that_of_an_all_reduce(n):
    def per_buffer_byte(op):  # one call of op whose buffer is 1 byte
        return collectives.sent_bytes({"op": op, "bytes": 1}, n)

    for op in ("allgather", "reducescatter"):
        assert per_buffer_byte(op) == (n - 1) / n
    assert per_buffer_byte("allreduce") == 2 * (n - 1) / n


OVERSTATED = [
    "overlapped with the rest of backward",
    "launched while the rest of backward still runs",
    "25 MB cap",
    "no computation can hide",
    "sends each byte of its buffer once",
    "sends twice its buffer's worth",
    "solapado con el resto del backward",
    "se lanza mientras el resto del backward sigue",
    "ningún cálculo puede esconder",
    "envía una vez cada byte de su buffer",
    "envía dos veces lo que ocupa su buffer",
]


@pytest.mark.parametrize("path", TEXTS, ids=[str(p.relative_to(REPO)) for p in TEXTS])
def test_the_overstatements_are_gone(path):
    text = " ".join(path.read_text().split())
    assert [s for s in OVERSTATED if s in text] == []
