"""The theory texts: in the chapter's order, read first from the README, and every figure they quote still in the
committed run it links to (tests/docs/cited_figures.py says what a citation is). The Spanish texts (X.es.md) quote the
same figures from the same runs, and every text links the glossary of its language."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tests.docs.cited_figures import citations, stale, translation_drift, uncited
from tests.docs.cited_sources import source_problems
from tests.docs.theory_statements import (
    CORRECTIONS,
    DDP_ALL_GRADS,
    DDP_FIRST_BUCKET,
    DDP_GRADS_BUT_TOK_EMB,
    INFERENCE_MODE_EXCLUDES,
    TP_ACTIVATION_ALL_REDUCE,
    TP_LOSS_ALL_REDUCE,
    normalized,
    statement_problems,
)
from tests.support.doc_structure import section_items

ROOT = Path(__file__).resolve().parents[2]
# the chapter's reading order (../shared/seed/000_0922142b01f50a02.txt): four theory texts, then the labs
CHAPTER_ORDER = [
    "00-motivation.md",
    "01-dispatcher-and-aten.md",
    "02-autograd-engine.md",
    "03-compile-and-distributed.md",
]
GLOSSARY = "glossary.md"  # the terms of the texts, and how the Spanish texts say them
STYLE = (
    "style.md"  # how the Spanish edition writes (theory/style.es.md; its lint: tools/style_lint.py)
)
TEXTS = [ROOT / "theory" / name for name in CHAPTER_ORDER]
IDS = [p.name for p in TEXTS]
SPANISH = [p.with_suffix(".es.md") for p in TEXTS]
ALL_TEXTS, ALL_IDS = TEXTS + SPANISH, IDS + [p.name for p in SPANISH]


def test_the_theory_folder_holds_the_chapters_texts_the_glossary_and_the_style_guide_in_both_languages():
    english = sorted(p.name for p in (ROOT / "theory").glob("*.md") if ".es." not in p.name)
    assert english == sorted(CHAPTER_ORDER + [GLOSSARY, STYLE])
    spanish = sorted(p.name for p in (ROOT / "theory").glob("*.es.md"))
    assert spanish == sorted(name.replace(".md", ".es.md") for name in english)


@pytest.mark.parametrize("doc", ALL_TEXTS, ids=ALL_IDS)
def test_every_text_links_the_glossary_of_its_language(doc):
    glossary = GLOSSARY.replace(".md", ".es.md") if doc.name.endswith(".es.md") else GLOSSARY
    assert f"]({glossary})" in doc.read_text(encoding="utf-8")


def reading_order_problems(readme: str) -> list[str]:
    """What is wrong with the README's reading order: one paragraph (outside the table) must link the four texts
    in the chapter's order and then send the reader to the labs."""
    wanted = [f"theory/{name}" for name in CHAPTER_ORDER]
    paragraphs = [
        p
        for p in readme.split("\n\n")
        if not p.startswith("|") and all(f"]({link})" in p for link in wanted)
    ]
    if not paragraphs:
        return ["no README paragraph (outside the table) links all four theory texts"]
    reading = paragraphs[0]
    positions = [reading.index(f"]({link})") for link in wanted]
    problems = []
    if positions != sorted(positions):
        problems.append("the README must list theory 00-03 in the chapter's order")
    if "the labs" not in reading[positions[-1] :]:
        problems.append("the README must send the reader to the labs after the theory texts")
    return problems


def test_the_readme_reads_the_texts_in_order_before_the_labs():
    assert reading_order_problems((ROOT / "README.md").read_text(encoding="utf-8")) == []


GOOD_ORDER = (
    "Read [00](theory/00-motivation.md), [01](theory/01-dispatcher-and-aten.md), "
    "[02](theory/02-autograd-engine.md) and [03](theory/03-compile-and-distributed.md). Then run the labs."
)


@pytest.mark.parametrize(
    "readme",
    [
        GOOD_ORDER.replace("theory/01-", "theory/XX-")
        .replace("theory/02-", "theory/01-")
        .replace("XX", "02"),
        "Run the labs first. " + GOOD_ORDER.replace(" Then run the labs.", ""),
        GOOD_ORDER.replace("[03](theory/03-compile-and-distributed.md)", "03"),
    ],
    ids=["01 and 02 swapped", "labs before theory", "03 not linked"],
)
def test_a_planted_wrong_reading_order_is_named(readme):
    assert reading_order_problems(GOOD_ORDER) == []
    assert len(reading_order_problems(readme)) == 1


@pytest.mark.parametrize("doc", ALL_TEXTS, ids=ALL_IDS)
def test_every_quoted_figure_is_in_the_run_it_links_to(doc):
    found = citations(doc, ROOT)
    assert found, f"{doc.name} quotes no figure from a committed run"
    assert [line for c in found for line in stale(c)] == []


@pytest.mark.parametrize("doc", ALL_TEXTS, ids=ALL_IDS)
def test_no_measured_figure_stands_without_its_run(doc):
    assert uncited(doc, ROOT) == []


@pytest.mark.parametrize("translation", SPANISH, ids=[p.name for p in SPANISH])
def test_a_translation_quotes_its_sources_figures_from_the_same_runs(translation):
    source = translation.with_name(translation.name.replace(".es.md", ".md"))
    assert translation_drift(translation, source, ROOT) == []


def _write(tmp_path: Path, text: str) -> Path:
    run = tmp_path / "benchmarks" / "run"
    run.mkdir(parents=True)
    (run / "summary.md").write_text(
        "forward 1.65x faster; dL/dW error 3.725290298461914e-08; `gemmSN_TN_kernel` ran; 5 kernels\n",
        encoding="utf-8",
    )
    doc = tmp_path / "theory" / "text.md"
    doc.parent.mkdir()
    doc.write_text(text, encoding="utf-8")
    return doc


@pytest.mark.parametrize(
    "sentence",
    [
        "The forward ran [1.65x faster, dW to 3.7e-8, 5 kernels, `gemmSN_TN_kernel`](../benchmarks/run/summary.md).",
        "Rounded the other way: [3.73e-8](../benchmarks/run/summary.md).",
    ],
    ids=["as in the file", "rounded to three digits"],
)
def test_a_figure_the_file_holds_passes(tmp_path, sentence):
    doc = _write(tmp_path, sentence)
    [citation] = citations(doc, tmp_path)
    assert stale(citation) == []


@pytest.mark.parametrize(
    "sentence, missing",
    [
        ("It ran [1.72x faster](../benchmarks/run/summary.md).", "1.72"),
        ("The error was [3.8e-8](../benchmarks/run/summary.md).", "3.8e-8"),
        ("It made [6 kernels](../benchmarks/run/summary.md).", "6"),
        ("It ran [`nvjet_sm90_tst`](../benchmarks/run/summary.md).", "nvjet_sm90_tst"),
    ],
    ids=[
        "a re-recorded speedup",
        "a re-recorded error",
        "an integer off by one",
        "a kernel renamed",
    ],
)
def test_a_planted_stale_figure_is_named(tmp_path, sentence, missing):
    doc = _write(tmp_path, sentence)
    [citation] = citations(doc, tmp_path)
    problems = stale(citation)
    assert len(problems) == 1 and missing in problems[0], problems


@pytest.mark.parametrize(
    "sentence",
    [
        "Compiled, the forward was 1.65x faster.",
        "The bubble idled 29% of the time.",
        "One all-reduce moved 1118 kB.",
        "The error was 3.7e-8 [in that run](../benchmarks/run/summary.md).",
    ],
    ids=["a multiplier", "a percentage", "a size", "a decimal outside the link"],
)
def test_a_planted_uncited_figure_is_named(tmp_path, sentence):
    doc = _write(tmp_path, sentence)
    assert len(uncited(doc, tmp_path)) == 1


def test_versions_formulas_and_code_are_not_figures(tmp_path):
    doc = _write(
        tmp_path,
        "Read on torch 2.13 and Python 3.11; the ring sends 2(N-1)/N of the buffer; `x.view(2, 6, 600)` and "
        "the chapter's 1e-7.",
    )
    assert uncited(doc, tmp_path) == []


SOURCE = "The forward ran [1.65x faster, `gemmSN_TN_kernel`](../benchmarks/run/summary.md)."


@pytest.mark.parametrize(
    "translation",
    [
        "El forward fue [1.7x más rápido, `gemmSN_TN_kernel`](../benchmarks/run/summary.md).",
        "El forward fue [1.65x más rápido, `gemmSN_TN_kernel`](../benchmarks/run/other.md).",
        "El forward fue 1.65x más rápido, [`gemmSN_TN_kernel`](../benchmarks/run/summary.md).",
        "El forward fue [1.65x más rápido](../benchmarks/run/summary.md), `gemmSN_TN_kernel`.",
    ],
    ids=[
        "a figure rounded again",
        "another file",
        "a figure moved out of the link",
        "a kernel dropped",
    ],
)
def test_a_planted_translation_drift_is_named(tmp_path, translation):
    source = _write(tmp_path, SOURCE)
    (source.parent.parent / "benchmarks" / "run" / "other.md").write_text(
        "1.65x `gemmSN_TN_kernel`\n"
    )
    spanish = source.with_name("text.es.md")
    spanish.write_text(
        SOURCE.replace("The forward ran", "El forward fue").replace("faster", "más rápido")
    )
    assert translation_drift(spanish, source, tmp_path) == []
    spanish.write_text(translation, encoding="utf-8")
    assert len(translation_drift(spanish, source, tmp_path)) == 1


# The statements a careful read found wrong, as corrected (tests/docs/theory_statements.py), and the figures they quote.
STATEMENT_TEXTS = ALL_TEXTS + [ROOT / "theory" / GLOSSARY, ROOT / "theory" / "glossary.es.md"]
H200 = ROOT / "benchmarks" / "h200-run"


@pytest.mark.parametrize("doc", STATEMENT_TEXTS, ids=[p.name for p in STATEMENT_TEXTS])
def test_no_text_makes_a_corrected_statement_the_old_way(doc):
    assert statement_problems(doc) == []


@pytest.mark.parametrize("correction", CORRECTIONS, ids=lambda c: f"{c.doc}: {c.old['en'][:40]}")
@pytest.mark.parametrize("lang", ["en", "es"])
def test_a_planted_old_statement_or_a_dropped_correction_is_named(correction, lang):
    doc = (
        ROOT
        / "theory"
        / (correction.doc if lang == "en" else correction.doc.replace(".md", ".es.md"))
    )
    text = doc.read_text(encoding="utf-8")
    assert statement_problems(doc, text + "\n" + correction.old[lang]) == [
        f"{doc.name} still says {correction.old[lang]!r}"
    ]
    dropped = normalized(text).replace(normalized(correction.new[lang][0]), "")
    assert statement_problems(doc, dropped) == [
        f"{doc.name} does not say {correction.new[lang][0]!r}"
    ]


def _figures(strategy_run: str) -> dict:
    rows = json.loads((H200 / "distributed" / "figures.json").read_text(encoding="utf-8"))
    return next(r for r in rows if r["run"] == strategy_run)


def _collective(row: dict, phase: str, op: str) -> dict:
    return next(c for c in row["collectives_rank0"] if c["phase"] == phase and c["op"] == op)


def test_interleaving_multiplies_the_sends_by_the_boundaries_between_stages():
    """(vp-1)/(p-1), not v: p from the run's ranks, m and v from the bubbles the run's formula gave."""
    gpipe, plain, interleaved = (_figures(r) for r in ("gpipe", "1f1b", "interleaved_1f1b"))
    p = plain["n"]
    m = round((p - 1) / gpipe["bubble_theory"] - (p - 1))  # (p-1)/(m+p-1)
    v = round(((p - 1) / interleaved["bubble_theory"] - (p - 1)) / m)  # (p-1)/(vm+p-1)
    sends = [_collective(r, "schedule", "send")["count"] for r in (plain, interleaved)]
    assert (p, m, v, sends) == (2, 4, 2, [4, 12])
    assert sends[1] / sends[0] == (v * p - 1) / (p - 1) != v


def test_ddp_sends_one_bucket_because_the_last_gradient_fills_the_first():
    import torch.distributed as dist

    from workshop.minigpt.model import GPT, GPTConfig

    params = list(GPT(GPTConfig()).named_parameters())
    assert params[0][0] == "tok_emb.weight"  # the forward's first layer: its gradient arrives last
    grads = [p.numel() * p.element_size() for _, p in params]
    assert (sum(grads[1:]), sum(grads)) == (DDP_GRADS_BUT_TOK_EMB, DDP_ALL_GRADS)
    assert dist._DEFAULT_FIRST_BUCKET_BYTES == DDP_FIRST_BUCKET
    assert DDP_GRADS_BUT_TOK_EMB < DDP_FIRST_BUCKET <= DDP_ALL_GRADS
    all_reduce = _collective(_figures("ddp"), "backward", "allreduce")
    assert (all_reduce["count"], all_reduce["bytes"]) == (1, DDP_ALL_GRADS)


def test_tensor_parallel_all_reduces_are_activations_and_loss_parallels_per_token_floats():
    tp = _figures("tp")
    forward, backward = (_collective(tp, phase, "all_reduce") for phase in ("forward", "backward"))
    assert forward["count"] == 8 + 3 and backward["count"] == 4 * 4 + 1
    assert forward["bytes"] == 8 * TP_ACTIVATION_ALL_REDUCE + 3 * TP_LOSS_ALL_REDUCE
    assert backward["bytes"] == backward["count"] * TP_ACTIVATION_ALL_REDUCE


def test_autocasts_default_lower_precision_is_float16_on_cuda_and_bfloat16_on_the_cpu():
    assert torch.get_autocast_dtype("cuda") == torch.float16
    assert torch.get_autocast_dtype("cpu") == torch.bfloat16


def _tls_keys(kind: str) -> set[str]:
    is_in = getattr(torch._C, f"_dispatch_tls_is_dispatch_key_{kind}")
    return {
        name
        for name, key in torch._C.DispatchKey.__members__.items()
        if not name.startswith(("StartOf", "EndOf")) and is_in(key)
    }


def test_inference_mode_excludes_three_keys_and_drops_ad_inplace_or_view_where_no_grad_changes_none():
    excluded, included = _tls_keys("excluded"), _tls_keys("included")
    with torch.no_grad():
        assert (_tls_keys("excluded"), _tls_keys("included")) == (excluded, included)
    with torch.inference_mode():
        assert _tls_keys("excluded") - excluded == set(INFERENCE_MODE_EXCLUDES)
        assert included - _tls_keys("included") == {"ADInplaceOrView"}
        made = torch.ones(2) * 2
    keys = str(torch._C._dispatch_keys(made))
    assert made.is_inference() and "Autograd" not in keys and "ADInplaceOrView" not in keys
    with pytest.raises(RuntimeError, match="version counter"):
        assert made._version is None  # never reached: an inference tensor keeps no version counter


def test_a_leaf_is_any_tensor_without_grad_fn_and_only_one_that_requires_grad_is_accumulated():
    x, w = torch.ones(3), torch.ones(3, requires_grad=True)
    assert x.is_leaf and x.grad_fn is None and w.is_leaf
    edges = (x * w).grad_fn.next_functions
    assert [type(node).__name__ if node else None for node, _ in edges] == [None, "AccumulateGrad"]


@pytest.mark.skipif(
    not torch.__version__.startswith("2.13.0"), reason="the texts cite torch 2.13.0's source"
)
@pytest.mark.parametrize("doc", ALL_TEXTS[1:4] + ALL_TEXTS[5:], ids=ALL_IDS[1:4] + ALL_IDS[5:])
def test_every_cited_source_file_and_name_is_in_the_pinned_torch(doc):
    assert source_problems(doc) == []


@pytest.mark.parametrize(
    "item, problem",
    [
        (
            "- `torch/csrc/autograd/engine.h`, `engine.cpp`: `execute_all_at_once`",
            "`execute_all_at_once` is in none of engine.h",
        ),
        (
            "- `torch/csrc/autograd/ready_queue.h`: `ReadyQueue`",
            "`torch/csrc/autograd/ready_queue.h` is not in the torch",
        ),
        (
            "- `torch/_dynamo/eval_frame.py`, `guards.py` (`GuardBuilder`), `guard_tree.py`",
            "`torch/_dynamo/guard_tree.py` is not in",
        ),
    ],
    ids=[
        "a name its files do not hold",
        "a header the wheel does not ship",
        "a relative name that is not there",
    ],
)
def test_a_planted_wrong_source_citation_is_named(tmp_path, item, problem):
    doc = tmp_path / "text.md"
    doc.write_text("## Where this is in PyTorch's source\n\n" + item + "\n", encoding="utf-8")
    [found] = source_problems(doc)
    assert problem in found, found


# The chapter's "Lecturas recomendadas": an annotated reading list at the end of each text, in both languages.
READING_HEADINGS = {"en": "Recommended reading", "es": "Lecturas recomendadas"}
# What the chapter asks the lists to hold, by a piece of each address.
REQUIRED_READINGS = {
    "the dispatcher": "devlogs/dispatcher",
    "autograd mechanics": "notes/autograd.html",
    "custom ops": "custom_ops_landing_page",
    "torch.compile": "torch.compiler_dynamo_deepdive",
    "Edward Yang's internals": "2019/05/pytorch-internals",
    "Edward Yang's dispatcher": "lets-talk-about-the-pytorch-dispatcher",
    "Triton's fused softmax": "02-fused-softmax",
    "the distributed overview": "dist_overview",
    "FSDP2": "fsdp.fully_shard",
    "the Ultra-Scale Playbook": "ultrascale-playbook",
    "minitorch": "minitorch.github.io",
    # the primary sources of the survey's and theory 03's formulas
    "the PyTorch 2 paper (Ansel et al., ASPLOS 2024)": "10.1145/3620665.3640366",
    "PyTorch Distributed / DDP (Li et al., VLDB 2020)": "arxiv.org/abs/2006.15704",
    "PyTorch FSDP (Zhao et al., VLDB 2023)": "arxiv.org/abs/2304.11277",
    "Megatron-LM (Shoeybi et al. 2019)": "arxiv.org/abs/1909.08053",
    "interleaved 1F1B (Narayanan et al. 2021)": "arxiv.org/abs/2104.04473",
    "TorchTitan (2024)": "arxiv.org/abs/2410.06511",
}
MIN_ANNOTATION_WORDS = 12


def reading_list(text: str, lang: str) -> list[tuple[list[str], str]]:
    """(the item's addresses, its words) for each item of the text's reading list."""
    return [
        (
            [c.attrs["href"] for c in item if c.type == "link_open"],
            " ".join(c.content for c in item if c.type in ("text", "code_inline")),
        )
        for item in section_items(text, (READING_HEADINGS[lang],))
    ]


def reading_problems(text: str, lang: str) -> list[str]:
    items = reading_list(text, lang)
    if not items:
        return [f"no '{READING_HEADINGS[lang]}' list"]
    out = []
    for urls, words in items:
        if not urls or not all(u.startswith(("https://", "http://")) for u in urls):
            out.append(f"an item that links no published reading: {words[:60]!r}")
        elif len(words.split(":", 1)[-1].split()) < MIN_ANNOTATION_WORDS:
            out.append(f"an item without its note (what it gives, for which part): {urls[0]}")
    return out


@pytest.mark.parametrize("doc", ALL_TEXTS, ids=ALL_IDS)
def test_every_text_ends_with_an_annotated_reading_list(doc):
    lang = "es" if doc.name.endswith(".es.md") else "en"
    assert reading_problems(doc.read_text(encoding="utf-8"), lang) == []


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_reading_lists_hold_what_the_chapter_asks_for(lang):
    texts = TEXTS if lang == "en" else SPANISH
    urls = [
        u
        for doc in texts
        for us, _ in reading_list(doc.read_text(encoding="utf-8"), lang)
        for u in us
    ]
    assert [
        what for what, piece in REQUIRED_READINGS.items() if not any(piece in u for u in urls)
    ] == []


GOOD_READINGS = (
    "## Recommended reading\n\nOptional.\n\n- [PyTorch internals](http://blog.ezyang.com/2019/05/pytorch-internals/),"
    " Edward Z. Yang (2019): the map of the codebase: tensors, strides, dispatch, autograd, and which folders hold"
    " what.\n\nNext: [01](01-dispatcher-and-aten.md).\n"
)


@pytest.mark.parametrize(
    "planted, problem",
    [
        (
            GOOD_READINGS.replace("Recommended reading", "Further reading"),
            "no 'Recommended reading' list",
        ),
        (
            GOOD_READINGS.replace(
                ": the map of the codebase: tensors, strides, dispatch, autograd, and which", "."
            ),
            "without its note",
        ),
        (
            GOOD_READINGS.replace(
                "http://blog.ezyang.com/2019/05/pytorch-internals/", "internals.md"
            ),
            "links no published",
        ),
    ],
    ids=["no list", "an item without its note", "a local file instead of a reading"],
)
def test_a_planted_bad_reading_list_is_named(planted, problem):
    assert reading_problems(GOOD_READINGS, "en") == []
    [found] = reading_problems(planted, "en")
    assert problem in found, found


# The worked examples the texts give instead of the labs' own cases, as torch runs them.
def test_theory_02s_walk_runs_in_the_order_it_says():
    """loss = (tanh(a) * c).sum(): Sum, Mul, then AccumulateGrad(c) before TanhBackward0, AccumulateGrad(a) last."""
    a, c = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    loss = (torch.tanh(a) * c).sum()
    order, stack, seen = [], [loss.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        name = type(node).__name__ + {id(a): "(a)", id(c): "(c)"}.get(
            id(getattr(node, "variable", None)), ""
        )
        node.register_prehook(lambda grads, name=name: order.append(name))
        stack += [n for n, _ in node.next_functions]
    loss.backward()
    walk = [
        "SumBackward0",
        "MulBackward0",
        "AccumulateGrad(c)",
        "TanhBackward0",
        "AccumulateGrad(a)",
    ]
    assert order == walk
    text = normalized((ROOT / "theory" / "02-autograd-engine.md").read_text(encoding="utf-8"))
    assert (
        "`TanhBackward0` and `AccumulateGrad(c)`: the `AccumulateGrad` has the largest number"
        in text
    )


@pytest.mark.skipif(
    not torch.__version__.startswith("2.13."), reason="the text prints torch 2.13's ops"
)
def test_theory_01s_matmul_example_prints_what_the_text_says():
    from torch.profiler import profile

    x, v = torch.randn(6, 64), torch.randn(64)
    with profile() as prof:
        torch.matmul(x, v)
    printed = [e.name for e in prof.events()]
    for doc in (TEXTS[1], SPANISH[1]):
        assert f"# torch 2.13, CPU: {printed}" in doc.read_text(encoding="utf-8")
