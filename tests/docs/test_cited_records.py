"""The texts beside the theory (each lab's handout, the survey's model answer, the README) quote figures from the
committed records the same way the theory texts do (tests/docs/cited_figures.py says what a citation is): every
figure inside a citation must still be in the record it links to, and a translation quotes what its source quotes.
(The theory texts' own test, test_theory.py, also names any measured figure they leave outside a citation; a
handout's prose holds shapes, sizes and limits of its own, so here only the citations are held to their records.)"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.docs.cited_figures import citations, stale, translation_drift

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [
    *sorted((ROOT / "workshop" / "labs").glob("*/README.md")),
    ROOT / "survey" / "README.md",
    ROOT / "README.md",
]
TEXTS = SOURCES + [p.with_suffix(".es.md") for p in SOURCES]
IDS = [str(p.relative_to(ROOT)) for p in TEXTS]


@pytest.mark.parametrize("doc", TEXTS, ids=IDS)
def test_every_figure_a_text_cites_is_in_the_record_it_links_to(doc):
    assert [line for c in citations(doc, ROOT) for line in stale(c)] == []


@pytest.mark.parametrize("source", SOURCES, ids=[str(p.relative_to(ROOT)) for p in SOURCES])
def test_a_translation_cites_what_its_source_cites(source):
    assert translation_drift(source.with_suffix(".es.md"), source, ROOT) == []


def test_the_handouts_cite_the_records_they_quote():
    """The autograd handout's TF32 figures and the dispatcher handout's GPU kernels are citations, in both languages."""
    for lab, record in (("autograd", "h200-run/autograd"), ("dispatcher", "h200-run/dispatcher")):
        for name in ("README.md", "README.es.md"):
            found = citations(ROOT / "workshop" / "labs" / lab / name, ROOT)
            assert any(f"benchmarks/{record}/" in c.target.as_posix() for c in found), (lab, name)


@pytest.mark.parametrize(
    "quoted, planted",
    [("[7.4e-04]", "[7.6e-04]"), ("[829x]", "[830x]")],
    ids=["a TF32 error re-recorded", "a multiplier off by one"],
)
def test_a_planted_wrong_figure_in_a_handout_is_named(tmp_path, quoted, planted):
    """The autograd handout, copied with its record beside it, and one quoted figure changed."""
    handout = tmp_path / "workshop" / "labs" / "autograd" / "README.md"
    handout.parent.mkdir(parents=True)
    record = tmp_path / "benchmarks" / "h200-run" / "autograd" / "summary.md"
    record.parent.mkdir(parents=True)
    shutil.copy(ROOT / "benchmarks" / "h200-run" / "autograd" / "summary.md", record)
    text = (ROOT / "workshop" / "labs" / "autograd" / "README.md").read_text(encoding="utf-8")
    assert text.count(quoted) == 1
    handout.write_text(text, encoding="utf-8")
    assert [line for c in citations(handout, tmp_path) for line in stale(c)] == []
    handout.write_text(text.replace(quoted, planted), encoding="utf-8")
    [problem] = [line for c in citations(handout, tmp_path) for line in stale(c)]
    assert planted.strip("[]x") in problem, problem


def test_a_code_span_naming_the_cited_file_quotes_nothing(tmp_path):
    record = tmp_path / "benchmarks" / "custom_op" / "README.md"
    record.parent.mkdir(parents=True)
    record.write_text("GB/s on the GPU's clock\n", encoding="utf-8")
    doc = tmp_path / "text.md"
    doc.write_text(
        "In [`benchmarks/custom_op/README.md`](benchmarks/custom_op/README.md); "
        "[`benchmarks/other.md`](benchmarks/custom_op/README.md).\n",
        encoding="utf-8",
    )
    named, other = citations(doc, tmp_path)
    assert stale(named) == [] and len(stale(other)) == 1
