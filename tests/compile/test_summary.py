"""The compile lab's generated text: a sentence about a mechanism appears only when the run's figures show it
(summary.md.j2, explanation.md.j2), rendered here from made-up figures of both kinds."""

from pathlib import Path

import pytest

from workshop.i18n import templates
from workshop.labs.compile import trace_report
from workshop.labs.compile.generated_kernels import GeneratedKernel
from workshop.labs.compile.kernel_explanation import explain, render
from workshop.labs.compile.timing import timing_report

FOLDER = Path(__file__).resolve().parents[2] / "workshop/labs/compile/templates"
FIXTURES = Path(__file__).with_name("fixtures")
FOLD = "folded into one number (`vec_reduce_all`)"
PAYS = "fusing these ops pays"


def kernel(source: str, read: int, written: int) -> GeneratedKernel:
    return GeneratedKernel(
        name="cpp_fused_sum_0",
        graph="train/forward",
        kind="C++ loop nest",
        fused_ops=["sum"],
        ops_from="kernel name",
        calls=1,
        arguments=[
            {"name": "buf0", "role": "load", "shape": [8, 64], "dtype": "float32", "nbytes": read},
            {"name": "buf1", "role": "store", "shape": [8], "dtype": "float32", "nbytes": written},
        ],
        source=source,
    )


def explanation(source: str, eager_bytes: int) -> dict:
    k = kernel(source, 2048, 32)
    return explain(k, "cpu", [{"op": "sum", "shape": [8], "nbytes": eager_bytes}])


CPP_SUM = """
#pragma omp for
for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(8L); x0+=static_cast<int64_t>(1L))
{
    tmp_acc0_vec = tmp_acc0_vec + tmp0;
    tmp_acc0 = tmp_acc0 + at::vec::vec_reduce_all<float, 1>(f, tmp_acc0_vec);
    out_ptr0[x0] = tmp_acc0;
}
"""


@pytest.mark.parametrize("intermediates, pays", [(4096, True), (0, False)])
def test_fusing_pays_only_when_the_unfused_estimate_is_larger(intermediates, pays):
    text = render(FOLDER, "en", [explanation(CPP_SUM, 32 + intermediates)])
    assert (PAYS in text) is pays
    assert ("saves no memory traffic" in text) is not pays


@pytest.mark.parametrize("folds", [True, False])
def test_the_lane_fold_is_mentioned_only_when_the_code_has_it(folds):
    source = (
        CPP_SUM
        if folds
        else CPP_SUM.replace("at::vec::vec_reduce_all<float, 1>(f, tmp_acc0_vec)", "1")
    )
    text = render(FOLDER, "en", [explanation(source, 4096)])
    assert (FOLD in text) is folds and "**looped**" in text
    assert "again: the row is not kept in registers" not in text  # one loop: nothing is read twice


def summary(shown, graded, tlparse, eager_step_ms, lang="en", revealed=None) -> str:
    """The summary of a run whose explanations `shown` are written; `revealed`: what the learner's passing answers
    reveal (nothing by default, as in a plain run)."""

    def row(what, batch, eager_ms, compiled_ms):
        return {
            "what": what,
            "batch": batch,
            "eager_ms": eager_ms,
            "compiled_ms": compiled_ms,
            "repeats": 9,
            "speedup": eager_ms / compiled_ms,
        }

    timing = timing_report(
        at_batch=[row("forward", 8, 2.0, 1.0), row("training step", 8, eager_step_ms, 5.0)],
        sweep=[row("forward", 2, 1.0, 2.0), row("forward", 8, 2.0, 1.0)],
        compile_s={"forward": 10.0, "training step": 40.0},
        cpu_threads=2,
    )
    values = {
        "device": "cpu",
        "stages": [
            {
                "name": "train",
                "dynamo": 1,
                "aot": {"forward": 1},
                "code": ["code/train_forward.py"],
                "kernels": 1,
                "compile_s": 30.0,
            },
            {
                "name": "optimizer",
                "dynamo": 1,
                "aot": {"inference": 1},
                "code": ["code/optimizer_inference.py"],
                "kernels": 7 if revealed and revealed["answers"] else None,
                "compile_s": 9.0,
            },
        ],
        "kernel_count": 8,
        "shown": shown,
        "revealed": revealed or {"explanations": [], "answers": False, "kernel": False},
        "graded": graded,
        "breaks": {
            "minigpt": {"graphs": 1, "graph_breaks": 0, "break_reasons": []},
            "item_in_forward": {
                "graphs": 5,
                "graph_breaks": 3,
                "break_reasons": [{"reason": "item()", "where": "breaks.py:31"}],
            },
        },
        "recompiles": [
            {"how": h, "lengths": [8, 12], "compiles": n, "recompile_reasons": ["size mismatch"]}
            for h, n in (("static", 6), ("default", 3))
        ],
        "lengths": [8, 12],
        "timing": timing,
        "tlparse": tlparse,
        "trace_dir": "torch_trace",
    }
    return templates.render(FOLDER, lang, values)


MADE = {"index": Path("tlparse/index.html"), "reason": "", "output_code": 4}
NOT_MADE = trace_report.not_made("tlparse is not installed here (pip install tlparse==0.4.3)")


def test_the_summary_links_the_tlparse_report_or_says_why_there_is_none():
    made = summary([], False, MADE, 10.0)
    assert "[`tlparse/index.html`](tlparse/index.html)" in made and "not made" not in made
    missing = summary([], False, NOT_MADE, 10.0)
    assert "The tlparse report was not made: tlparse is not installed here" in missing
    assert "index.html" not in missing


def test_payback_is_claimed_only_when_the_compiled_step_is_faster():
    assert "earned back after about 8,000 steps" in summary([], False, MADE, 10.0)  # 40 s / 5 ms
    slower = summary([], False, MADE, 4.0)
    assert "never earned back" in slower and "earned back after" not in slower


def test_the_forward_kernels_are_explained_once_the_learners_answer_passed():
    worked = [explanation(CPP_SUM, 4096)]
    hidden = summary(worked, True, MADE, 10.0)
    assert "the lab's example is a kernel of the backward" in hidden
    assert "Once your KERNEL_EXPLAINED passes" in hidden and "See `explanation.md`" in hidden
    plain = summary(worked, False, MADE, 10.0)
    assert (
        "the lab's example is a kernel of the backward" in plain and "KERNEL_EXPLAINED" not in plain
    )
    shown = summary(
        worked * 2,
        True,
        MADE,
        10.0,
        revealed={"explanations": worked, "answers": True, "kernel": True},
    )
    assert "kernel of the backward" not in shown and "KERNEL_EXPLAINED" not in shown


ANSWERED = {  # what summary() was given for each ANSWERS question, and a sentence that would state it
    "optimizer_kernels": "optimizer_inference.py` | 7 |",
    "item_graph_breaks": "graphs 5, graph breaks 3",
    "default_compiles": "| default | 3 |",
}


@pytest.mark.parametrize("graded", [False, True], ids=["plain", "graded"])
def test_the_counts_answers_asks_for_show_only_once_the_answers_passed(graded):
    worked = [explanation(CPP_SUM, 4096)]
    hidden = summary(worked, graded, MADE, 10.0)
    assert [key for key, text in ANSWERED.items() if text in hidden] == []
    assert "| static | 6 |" in hidden, "the counts no question asks for still show"
    assert "a question of exercise compile.answers" in hidden
    shown = summary(
        worked, graded, MADE, 10.0, revealed={"explanations": [], "answers": True, "kernel": False}
    )
    assert [key for key, text in ANSWERED.items() if text not in shown] == []
    assert "a question of exercise compile.answers" not in shown


def skeleton(text: str) -> list[str]:
    """What a translation must keep: each line's Markdown kind (heading, table row, list item, code, image)."""
    kinds = (
        ("#", "heading"),
        ("|", "table"),
        ("- ", "item"),
        ("  - ", "item"),
        ("```", "code"),
        ("!", "image"),
    )
    return [
        next((kind for mark, kind in kinds if line.startswith(mark)), "text")
        for line in text.splitlines()
    ]


@pytest.mark.parametrize("graded", [False, True], ids=["plain", "graded"])
def test_one_template_per_language_lays_out_the_same_lines(graded):
    """The compile lab's templates have no Spanish twins: their {% trans %} blocks come from the catalog, and
    both languages lay out the same Markdown, line for line."""
    assert not list(FOLDER.glob("*.es.md.j2"))
    shown = [explanation(CPP_SUM, 4096)]
    english, spanish = (summary(shown, graded, MADE, 10.0, lang) for lang in ("en", "es"))
    assert skeleton(spanish) == skeleton(english) and spanish != english
    english, spanish = (render(FOLDER, lang, shown) for lang in ("en", "es"))
    assert skeleton(spanish) == skeleton(english) and "explicado" in spanish
