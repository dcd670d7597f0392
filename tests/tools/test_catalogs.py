"""The message catalogs: the tool that keeps them (tools/catalogs.py) finds every way they drift.

Whether the real catalogs are complete is one check, `python -m tools.catalogs check`, which CI runs.
"""

from __future__ import annotations

import io

import pytest

# The catalog tool needs Babel, pinned in requirements-pinned.txt and the image; a machine that only runs the
# workshop (the GPU hosts: no registry to install from) reads the compiled catalogs without it.
pytest.importorskip("babel", reason="Babel (the catalog tool's library) is not installed here")

from tools import catalogs
from workshop import i18n  # noqa: E402

CODE = """
from workshop.i18n import N_, _

TITLE = N_("the gradients by hand")


def report(lab, n):
    print(_("{lab}: {n} checks passed").format(lab=lab, n=n))
"""


@pytest.fixture
def toy_area(tmp_path, monkeypatch):
    code = tmp_path / "toy"
    code.mkdir()
    (code / "messages.py").write_text(CODE)
    monkeypatch.setattr(catalogs, "PACKAGE", tmp_path)
    return catalogs.Area("toy", code, code / "locale")


def translate(area, translations: dict[str, str]) -> None:
    catalog = catalogs.update(area, "es")
    for message in catalog:
        if message.id in translations:
            message.string = translations[message.id]
    buf = io.BytesIO()
    catalogs.pofile.write_po(buf, catalog, width=100, sort_by_file=True)
    area.po("es").write_bytes(buf.getvalue())
    area.mo("es").write_bytes(catalogs.compiled(catalog))


SPANISH = {
    "the gradients by hand": "los gradientes a mano",
    "{lab}: {n} checks passed": "{lab}: {n} comprobaciones superadas",
}


def test_a_complete_catalog_has_no_problems(toy_area):
    translate(toy_area, SPANISH)
    assert catalogs.problems(toy_area, "es") == []


def test_a_missing_catalog_is_named(toy_area):
    assert "missing (2 messages to translate" in catalogs.problems(toy_area, "es")[0]


def test_an_untranslated_message_is_named_with_its_place(toy_area):
    translate(toy_area, {"the gradients by hand": SPANISH["the gradients by hand"]})
    (problem,) = catalogs.problems(toy_area, "es")
    assert "toy/messages.py:8" in problem and "no es translation" in problem


def test_a_translation_that_drops_a_placeholder_is_named(toy_area):
    translate(toy_area, {**SPANISH, "{lab}: {n} checks passed": "{lab}: comprobaciones superadas"})
    (problem,) = catalogs.problems(toy_area, "es")
    assert "placeholders" in problem


def test_a_stale_compiled_catalog_is_named(toy_area):
    translate(toy_area, SPANISH)
    toy_area.mo("es").write_bytes(b"")
    assert any("not compiled from its .po" in p for p in catalogs.problems(toy_area, "es"))


def test_a_message_gone_from_the_code_is_named(toy_area):
    translate(toy_area, SPANISH)
    (toy_area.code / "messages.py").write_text(CODE.replace("the gradients by hand", "gradients"))
    found = catalogs.problems(toy_area, "es")
    assert any("no longer in the code" in p for p in found) and any(
        "'gradients'" in p for p in found
    )


def test_the_runtime_reads_the_compiled_catalog(toy_area, monkeypatch):
    translate(toy_area, SPANISH)
    monkeypatch.setattr(i18n, "LOCALE_DIR", toy_area.locale)
    monkeypatch.setattr(i18n, "DOMAIN", "toy")
    try:
        i18n.set_language("es")
        assert i18n._("the gradients by hand") == "los gradientes a mano"
        assert i18n._("not in the catalog") == "not in the catalog"
    finally:
        i18n.set_language("en")


def test_placeholders_are_format_fields_not_a_code_stubs_braces():
    """An exercise's stub (`ANSWERS = {...}` with translated comments) has no placeholders to keep."""
    stub = 'ANSWERS = {\n    # Q1. How many nodes? (int)\n    "graph_nodes": None,\n}\n'
    assert catalogs.PLACEHOLDER.findall(stub) == []
    fields = "{n} of {rel:.2g} at {key!r}, {}"
    assert catalogs.PLACEHOLDER.findall(fields) == ["{n}", "{rel:.2g}", "{key!r}", "{}"]
