"""The theory texts: in the chapter's order, read first from the README, and every figure they quote still in the
committed run it links to (tests/cited_figures.py says what a citation is). The Spanish texts (X.es.md) quote the
same figures from the same runs, and every text links the glossary of its language."""

from __future__ import annotations

from pathlib import Path

import pytest
from cited_figures import citations, stale, translation_drift, uncited

ROOT = Path(__file__).resolve().parents[1]
# the chapter's reading order (../shared/seed/000_0922142b01f50a02.txt): four theory texts, then the labs
CHAPTER_ORDER = [
    "00-motivation.md",
    "01-dispatcher-and-aten.md",
    "02-autograd-engine.md",
    "03-compile-and-distributed.md",
]
GLOSSARY = "glossary.md"  # the terms of the texts, and how the Spanish texts say them
TEXTS = [ROOT / "theory" / name for name in CHAPTER_ORDER]
IDS = [p.name for p in TEXTS]
SPANISH = [p.with_suffix(".es.md") for p in TEXTS]
ALL_TEXTS, ALL_IDS = TEXTS + SPANISH, IDS + [p.name for p in SPANISH]


def test_the_theory_folder_holds_the_chapters_texts_and_the_glossary_in_both_languages():
    english = sorted(p.name for p in (ROOT / "theory").glob("*.md") if ".es." not in p.name)
    assert english == sorted(CHAPTER_ORDER + [GLOSSARY])
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
