"""Translations keep their source's structure, and every link in the documents resolves.

English is the source. A document's translation sits beside it with the language before the suffix
(README.es.md) and must keep what a learner acts on: headings, numbered questions, code, tables, images, link
targets (tests/support/doc_structure.py). Prose is free. A summary template has no translation beside it: one template
serves every language, its prose translated through the lab's catalog (workshop/i18n/templates.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.doc_structure import broken_links, links_past_a_twin, source_of, structure

ROOT = Path(__file__).resolve().parents[2]
SKIP = {".venv", ".git", "results", "my-work", ".pytest_cache", "node_modules"}


def documents(pattern: str) -> list[Path]:
    return sorted(p for p in ROOT.glob(pattern) if not SKIP & set(p.relative_to(ROOT).parts))


TRANSLATIONS = documents("**/*.es.md")


@pytest.mark.parametrize("translation", TRANSLATIONS, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_translation_has_its_sources_structure(translation):
    source = source_of(translation, "es")
    assert source.is_file(), f"{translation.relative_to(ROOT)} has no English source {source.name}"
    assert structure(translation).differences(structure(source)) == []


@pytest.mark.parametrize("translation", TRANSLATIONS, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_translation_links_the_twins_in_its_language(translation):
    assert links_past_a_twin(translation, "es") == []


def test_a_planted_link_past_a_twin_is_named(tmp_path):
    for name in ("README.md", "README.es.md", "other.md", "other.es.md", "lab.md"):
        (tmp_path / name).write_text("# Title\n", encoding="utf-8")
    spanish = tmp_path / "README.es.md"
    spanish.write_text(
        "[otro](other.es.md), [lab](lab.md), [inglés](README.md)\n", encoding="utf-8"
    )
    assert (
        links_past_a_twin(spanish, "es") == []
    )  # no lab.es.md yet; the switch line links the source
    spanish.write_text("[otro](other.md#title)\n", encoding="utf-8")
    assert links_past_a_twin(spanish, "es") == ["other.md#title: link other.es.md instead"]


@pytest.mark.parametrize("doc", documents("**/*.md"), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc):
    assert broken_links(doc) == []


SAMPLE = """# A lab

## Run it

```
python -m workshop run autograd  # every lab runs in its own process
```

See [the theory](../theory/02-autograd-engine.md) and ![the graph](graph.png).

| a | b |
|---|---|
| 1 | 2 |

## Questions

1. What does the first node save?
2. Why is the order topological?
"""


@pytest.mark.parametrize(
    "drift, expected",
    [
        (lambda t: t.replace("\n## Questions\n", "\n", 1), "headings"),
        (lambda t: t.replace("\n1. ", "\n", 1), "numbered"),
        (lambda t: t.replace("```\n", "```\nextra line\n", 1), "code"),
        (lambda t: t.replace("](../", "](../../", 1), "links"),
    ],
    ids=["a heading removed", "a question removed", "a command changed", "a link moved"],
)
def test_a_planted_drift_is_caught(tmp_path, drift, expected):
    source = SAMPLE
    drifted = drift(source)
    assert drifted != source, "the drift must change the document"
    (tmp_path / "README.md").write_text(source, encoding="utf-8")
    (tmp_path / "README.es.md").write_text(drifted, encoding="utf-8")
    differences = structure(tmp_path / "README.es.md").differences(
        structure(tmp_path / "README.md")
    )
    assert any(d.startswith(expected) for d in differences), differences


def translated_twins(root: Path) -> list[str]:
    """The templates under `root` that repeat another template in one language (summary.es.md.j2 beside
    summary.md.j2) instead of sharing it through the catalogs."""
    found = root.glob("**/*.md.j2")
    return sorted(
        str(p.relative_to(root)) for p in found if re.search(r"\.[a-z]{2}\.md\.j2$", p.name)
    )


def test_no_template_has_a_translated_twin():
    assert translated_twins(ROOT / "workshop") == []


def test_a_planted_translated_twin_is_named(tmp_path):
    (tmp_path / "templates").mkdir()
    for name in ("summary.md.j2", "summary.es.md.j2", "trace.md.j2"):
        (tmp_path / "templates" / name).write_text("{% trans %}Run{% endtrans %}\n")
    assert translated_twins(tmp_path) == ["templates/summary.es.md.j2"]


def test_a_faithful_translation_passes(tmp_path):
    spanish = (
        SAMPLE.replace("# A lab", "# Un laboratorio")
        .replace("## Run it", "## Ejecútalo")
        .replace("every lab runs in its own process", "cada laboratorio corre en su propio proceso")
        .replace(
            "See [the theory](../theory/02-autograd-engine.md)",
            "Lee [la teoría](../theory/02-autograd-engine.es.md)",
        )
        .replace("![the graph]", "![el grafo]")
        .replace("## Questions", "## Preguntas")
        .replace("What does the first node save?", "¿Qué guarda el primer nodo?")
        .replace("Why is the order topological?", "¿Por qué el orden es topológico?")
    )
    (tmp_path / "README.md").write_text(SAMPLE, encoding="utf-8")
    (tmp_path / "README.es.md").write_text(spanish, encoding="utf-8")
    assert structure(tmp_path / "README.es.md").differences(structure(tmp_path / "README.md")) == []
