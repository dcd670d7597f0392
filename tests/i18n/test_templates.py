"""i18n.templates: a summary's prose is its template's and every figure the run's: an undefined value is an error,
never a blank where a figure belongs; a translated twin is used where one exists; numbers are written as each
language writes them (63% / 63 %, with a no-break space)."""

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


def test_every_figure_comes_from_the_run_formatted_for_its_language(folder):
    values = {"prompts": 1000, "accuracy": 0.6342, "max_err": 2e-3}
    assert templates.render(folder, "en", values) == (
        "Accuracy on 1,000 prompts: 63.4%.\nThe error is large: 2.0e-03.\n"
    )
    spanish = templates.render(folder, "es", values)
    assert "63.4\u00a0%" in spanish or "63,4\u00a0%" in spanish


def test_a_sentence_under_its_condition_appears_only_when_the_run_shows_it(folder):
    text = templates.render(folder, "en", {"prompts": 10, "accuracy": 1.0, "max_err": 1e-6})
    assert "error is large" not in text


def test_a_missing_figure_is_an_error_not_a_blank(folder):
    with pytest.raises(jinja2.UndefinedError, match="max_err"):
        templates.render(folder, "en", {"prompts": 10, "accuracy": 1.0})


def test_a_translated_twin_is_used_where_it_exists(folder):
    assert templates.template_name(folder, "es") == "summary.md.j2"
    (folder / "summary.es.md.j2").write_text("Precisión: {{ accuracy | percent }}\n")
    assert templates.template_name(folder, "es") == "summary.es.md.j2"
    assert templates.render(folder, "es", {"accuracy": 0.5}) == "Precisión: 50\u00a0%\n"
    assert templates.template_name(folder, "en") == "summary.md.j2"


@pytest.mark.parametrize(
    "n, text",
    [(512, "512 B"), (1536, "1.5 KiB"), (64 * 600 * 4, "150.0 KiB"), (3 * 2**40, "3072.0 GiB")],
)
def test_byte_counts_as_people_read_them(n, text):
    assert templates.human_bytes(n) == text
