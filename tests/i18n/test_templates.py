"""i18n.templates: a summary's prose is its template's and every figure the run's: an undefined value is an error,
never a blank where a figure belongs; numbers are written as each language writes them (10,000 and 63% /
10 000 and 63 %, with no-break spaces)."""

from __future__ import annotations

import jinja2
import pytest

from workshop.i18n import templates


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "summary.md.j2").write_text(
        "{% trans n=prompts | grouped, acc=accuracy | percent(1) %}Accuracy on {{ n }} prompts: {{ acc }}."
        "{% endtrans %}\n\n{% if max_err > 1e-3 %}The error is large: {{ max_err | sci }}.\n{% endif %}"
    )
    return tmp_path


def english_percent(fraction: float, digits: int = 0, lang: str = "en") -> str:
    """Planted: writes a percentage the English way in every language."""
    return f"{100 * fraction:.{digits}f}%"


def test_every_figure_comes_from_the_run_formatted_for_its_language(folder, monkeypatch):
    values = {"prompts": 10000, "accuracy": 0.6342, "max_err": 2e-3}
    assert templates.render(folder, "en", values) == (
        "Accuracy on 10,000 prompts: 63.4%.\nThe error is large: 2.0e-03.\n"
    )
    assert "10\u00a0000 prompts: 63.4\u00a0%." in templates.render(folder, "es", values)
    monkeypatch.setattr(templates, "percent", english_percent)
    assert "63.4\u00a0%" not in templates.render(folder, "es", values)  # the check catches it


def test_a_sentence_under_its_condition_appears_only_when_the_run_shows_it(folder):
    text = templates.render(folder, "en", {"prompts": 10, "accuracy": 1.0, "max_err": 1e-6})
    assert "error is large" not in text


def test_a_missing_figure_is_an_error_not_a_blank(folder):
    with pytest.raises(jinja2.UndefinedError, match="max_err"):
        templates.render(folder, "en", {"prompts": 10, "accuracy": 1.0})


@pytest.mark.parametrize(
    "n, text",
    [(512, "512 B"), (1536, "1.5 KiB"), (64 * 600 * 4, "150.0 KiB"), (3 * 2**40, "3072.0 GiB")],
)
def test_byte_counts_as_people_read_them(n, text):
    assert templates.human_bytes(n) == text
