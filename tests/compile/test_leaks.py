"""No checked answer of the compile lab in what a learner reads before answering: the handouts and the exercises'
texts (statements, hints, stubs, in both languages). Each rule is shown to catch the sentences the handout used
to have (planted leaks), so that a rule that cannot fail is seen to fail.

- compile.kernel: the figures of any training-forward kernel, as the lab reads them from the recorded code
  (tests/compile/fixtures: a CPU run and a GPU softmax), may not appear: bytes read or written, grid extents.
- compile.answers: a passage (paragraph or list item) that names a question's topic may not state a value that
  question's answer takes on the CPU or on the H200.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workshop import i18n, labs
from workshop.labs.compile.generated_kernels import parse_kernels
from workshop.labs.compile.grading import run_grading
from workshop.labs.compile.grading.exercises import ANSWERS, KERNEL

LAB = Path(__file__).resolve().parents[2] / "workshop/labs/compile"
FIXTURES = Path(__file__).with_name("fixtures")
HANDOUTS = [LAB / "README.md", LAB / "README.es.md"]

# How a passage would state each ANSWERS question's answer, in either language, with the values that answer
# takes in the recorded runs (CPU, torch 2.13; H200, torch 2.11): the topic must be named in the passage, and the
# value stated next to what it counts.
TOPICS = {
    "softmax_calls": (
        r"softmax",
        [
            r"\b(?:4|four|cuatro)\s+(?:calls|times|veces|llamadas)",
            r"(?:called|llamad[oa])\s+(?:4|four|cuatro)\b",
        ],
    ),
    "extern_matmuls": (r"extern|matmul|productos? de matrices", [r"(?<![\w.,])33(?![\w.,]\d)"]),
    "optimizer_kernels": (
        r"AdamW|optimi[sz]",
        [
            r"\b(?:made|generated|gener[óa]|run|ejecución)\s+(?:\w+\s+){0,2}(?:2|5)\b",
            r"\b(?:2|5|two|five|dos|cinco)\s+(?:fused\s+|fusionados\s+)?kernels?\b",
        ],
    ),
    "default_compiles": (
        r"default|por defecto",
        [
            r"\b(?:2|two|dos)\s+(?:compiles\s+|compilaciones\s+|times\s+|veces\s+)?(?:with|con)\s+(?:the|la)",
            r"(?:default|por defecto)\W+(?:\w+\W+){0,6}(?:2|two|twice|dos)\b",
            r"(?:then|después)\s+(?:once|una vez)\s+more|una vez más",
        ],
    ),
    "item_graph_breaks": (
        r"\.item\(\)",
        [
            r"\b(?:1|one|a single|un solo)\s+(?:graph\s+)?breaks?\b",
            r"\bbreaks\s+once\b|se parte una vez",
            r"\b(?:exactly|exactamente)\s+(?:1|one|uno)\b",
        ],
    ),
}
PLANTED_ANSWER_LEAKS = [  # the sentences the handout had
    (
        "optimizer_kernels",
        "3. How many kernels does Inductor generate for the AdamW step? The H200 run made 5, the CPU run 2.",
    ),
    (
        "default_compiles",
        "- **Graph breaks and recompiles**: 4 compiles for 4 lengths static, 2 with the default, 1 with "
        "`dynamic=True`.",
    ),
    ("item_graph_breaks", "0 breaks in the MiniGPT, exactly 1 in the `.item()` variant"),
    ("item_graph_breaks", "the `.item()` variant (`breaks.py`) breaks once, since `.item()` needs"),
    (
        "default_compiles",
        "el default compila la primera longitud y después una vez más: dos compilaciones",
    ),
]


def learner_texts() -> dict[str, str]:
    """Name -> text of everything the learner reads before answering, in both languages."""
    texts = {path.name: path.read_text(encoding="utf-8") for path in HANDOUTS}
    for lang in i18n.LANGUAGES:
        with i18n.using(lang):
            # the workspace file (statements, interfaces, the questions' stub) and every hint level
            pieces = [labs.workspace_header("compile")]
            for ex in (KERNEL.localized(), ANSWERS.localized()):
                pieces += [ex.stub_code(), *ex.hints]
            texts[f"exercise texts ({lang})"] = "\n\n".join(pieces)
    return texts


def passages(text: str) -> list[str]:
    """Paragraphs and list items: where a statement and its topic stand together."""
    return [p for p in re.split(r"\n\s*\n|\n(?=\s*(?:[-*]|\d+\.) )", text) if p.strip()]


def stated_answers(text: str) -> list[tuple[str, str]]:
    """(question, passage) for each passage that names a question's topic and states a value of its answer."""
    found = []
    for passage in passages(text):
        flat = " ".join(passage.split())
        for key, (topic, statements) in TOPICS.items():
            if re.search(topic, flat, re.I) and any(re.search(st, flat, re.I) for st in statements):
                found.append((key, flat))
    return found


def kernel_figures() -> set[int]:
    """Every figure compile.kernel checks (bytes, grid extents of 100 or more) of every recorded forward kernel."""
    figures = set()
    for fixture in ("cpp_train_forward.txt", "triton_softmax.txt"):
        kernels = parse_kernels((FIXTURES / fixture).read_text(), "train/forward")
        for k in kernels:
            answer = run_grading.fields_of(k)
            figures |= {answer["bytes_read"], answer["bytes_written"], *answer["grid"]}
    return {f for f in figures if isinstance(f, int) and f >= 100}


def numbers_in(text: str) -> set[int]:
    """Whole numbers as written in either language: 62,976 and 62 976 (a no-break space) are 62976."""
    plain = re.sub(r"(?<=\d)[, \u00a0](?=\d{3}\b)", "", text)
    return {int(n) for n in re.findall(r"(?<![\w.])\d+(?![\w.]\d)", plain)}


@pytest.mark.parametrize("name", list(learner_texts()))
def test_no_answer_of_compile_answers_is_stated(name):
    assert stated_answers(learner_texts()[name]) == []


@pytest.mark.parametrize("name", list(learner_texts()))
def test_no_figure_of_a_forward_kernel_is_stated(name):
    assert numbers_in(learner_texts()[name]) & kernel_figures() == set()


@pytest.mark.parametrize("key, leak", PLANTED_ANSWER_LEAKS)
def test_the_sentences_the_handout_had_are_caught(key, leak):
    assert [k for k, _passage in stated_answers(leak)] == [key]


def test_a_forward_kernels_figures_are_caught():
    """The GELU figures of the old worked example answered the forward's gelu kernel; the softmax's as well."""
    assert numbers_in(
        "read = 180,224 B; written = 180\u00a0224 B; grid [32, 704]"
    ) & kernel_figures() == {
        180224,
        704,
    }
