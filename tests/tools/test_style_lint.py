"""The Spanish edition's lint (tools/style_lint.py): each rule of the style guide catches its planted
violation, in a document, a template and a catalog; code, identifiers, URLs, quoted PyTorch errors, shapes and
the glossary's English column are never findings; --fix writes numbers as the guide does and touches nothing else.

Whether the real texts meet the guide is one check, `python -m tools.style_lint`, which CI runs.
"""

from __future__ import annotations

import io

import pytest

from tools import style_lint

NBSP = "\u00a0"

# One planted violation per rule: (the rule's name, a Spanish sentence that breaks it)
PLANTED = [
    ("number grouped with commas", "El modelo tiene 279,512 parámetros."),
    ("number grouped with commas", "Una fila de 600 se carga en 1,024 posiciones."),
    ("number grouped with points", "Cada rank guarda 1.118.048 bytes."),
    ("digit groups joined by a breakable space", "Los 38 400 elementos de W."),
    ("four digits grouped", f"Una fila de 1{NBSP}024 posiciones."),
    ("percent sign without its space", "La etapa está ociosa el 63% del paso."),
    ("coger", "Coge un operador real y desmonta el framework."),
    ("coger", "El programa cogió 8 KiB de entrada."),
    ("librería", "Triton es una librería de kernels."),
    ("parar in the present", "Inductor se para con un error."),
    ("parar in the present", "La ejecución para ahí."),
    ("plantar", "Las suites de mutaciones plantan bugs en laboratorios propios."),
    ("juzgar", "El corrector juzga la respuesta."),
    ("perfilar", "El laboratorio perfila el kernel."),
    ("informar de", "El profiler informa del tiempo de cada kernel."),
    ("se cae", "Si el proceso se cae, el laboratorio falla."),
    ("soportar", "Una llamada a una extensión de C no soportada."),
    ("a plural faked with (s)", "3 dirección(es) en total."),
    ("a plural faked with (s)", "Ejecuta el forward una vez/veces."),
    ("gerund as an adjective", "Escribe un fichero conteniendo el grafo."),
    ("gender of a kept term", "Inductor calcula la GEMM del gradiente."),
    ("gender of a kept term", "Entrena la MiniGPT de la gramática."),
    ("gender of a kept term", "Llama a un BLAS de CPU con un N pequeña."),
    ("gender of a kept term", "Registra el custom op en los ops de aten."),
    ("'la mano' as a noun", "Comparar mano contra autograd."),
    ("loss", "La loss baja en cada paso."),
    ("accuracy", "La accuracy sobre los prompts es 1.0."),
    ("Definition of Done", "Como dice la Definition of Done del currículo."),
    ("batch step", "Cada batch step tarda 3 ms."),
    ("job", "Envía el job con sbatch."),
    ("schema", "El schema del operador dice sus tipos."),
    ("launch grid", "El launch grid tiene 64 programas."),
    ("the workshop's name", "El taller de las tripas de PyTorch."),
    ("English status word", "autograd: 3 PASS, 1 FAIL"),
    ("English status word", "el ejercicio está ok"),
    ("English status word", "[autograd] graded autograd.linear_grads: not started"),
    ("status word outside the vocabulary", "OK / FALLO / PENDIENTE por ejercicio"),
    ("English sentence", "Cada rank guarda el modelo: the job inherits this environment."),
]


def rules_found(text: str, markdown: bool = True) -> set[str]:
    return {f.rule for f in style_lint.findings_in(text, "planted.es.md", markdown=markdown)}


@pytest.mark.parametrize("rule, sentence", PLANTED, ids=[f"{r}: {s[:30]}" for r, s in PLANTED])
def test_a_planted_violation_is_caught_in_a_document_and_in_a_catalog(rule, sentence):
    assert rule in rules_found(sentence)
    assert rule in rules_found(sentence, markdown=False)


def test_a_finding_names_its_file_line_rule_and_the_guides_word():
    text = "# Título\n\nLínea sin nada.\nEl modelo tiene 279,512 parámetros.\n"
    (finding,) = style_lint.findings_in(text, "README.es.md")
    assert (finding.path, finding.line, finding.rule, finding.text) == (
        "README.es.md",
        4,
        "number grouped with commas",
        "279,512",
    )
    assert str(finding).startswith(
        "README.es.md:4: number grouped with commas: '279,512': write 1024"
    )


CLEAN = [
    "El LM head es `nn.Linear(64, 600)`: sus pesos tienen forma (600, 64).",
    "Una forma (64, 600) y una lista [1,2,3] no son miles.",
    "```python\nx = torch.randn(1,024)  # una entrada de 1024 elementos\ncoger = 1,118,048\n```",
    "Lee [el resumen](https://example.org/a,b/1,024/loss) y https://example.org/1,024/schema.",
    "Falla con \"Could not run 'aten::mm' with arguments from the 'Meta' backend\".",
    'Falla con "element 0 of tensors does not require grad and does not have a\ngrad_fn".',
    "| término en inglés | qué es | en español |\n|---|---|---|\n| loss of the job | la pérdida | pérdida |",
    '<span lang="en">The workshop in English: the default, whatever the locale says.</span>',
    "El laboratorio se detiene; para el laboratorio distribuido, usa `--n 2`; no para macOS.",
    "Tiene 1024 posiciones, 38\u00a0400 elementos y 1\u00a0118\u00a0048 bytes; el 63\u00a0% del paso.",
    "El taller usa HTTP(S) y la derivada de exp(a) es exp(a); p(a) es una probabilidad.",
    "x11 363 kB y buf12 256 B: un recuento y después una cantidad.",
    "{{ n | grouped }} parámetros ({% if passed %}superado{% else %}no superado{% endif %})",
    "Tu `lm_head` y `torch.compile` y aten::addmm y --lang es: identificadores.",
    "3 de 5 comprobaciones superadas; el ejercicio está sin empezar.",
    "El GEMM del MiniGPT, una biblioteca BLAS, la GPU, las keys, una custom op y un N pequeño: a mano.",
]


@pytest.mark.parametrize("text", CLEAN, ids=[t[:40] for t in CLEAN])
def test_code_identifiers_urls_quotes_shapes_and_the_guides_own_forms_are_not_findings(text):
    assert style_lint.findings_in(text, "clean.es.md") == []


def test_fix_writes_numbers_and_percent_as_the_guide_does_and_leaves_code_alone():
    text = (
        "Tiene 279,512 parámetros (1,118,048 bytes), 1,024 posiciones, 1.118.048 B y 38 400 "
        "elementos; ociosa el 63%.\n```\nx = 1,024  # 279,512 parámetros\n```\n`1,024` y 0.98 y 1.68 MB\n"
    )
    assert style_lint.fixed(text) == (
        f"Tiene 279{NBSP}512 parámetros (1{NBSP}118{NBSP}048 bytes), 1024 posiciones, 1{NBSP}118{NBSP}048 B "
        f"y 38{NBSP}400 elementos; ociosa el 63{NBSP}%.\n```\nx = 1,024  # 279{NBSP}512 parámetros\n```\n"
        "`1,024` y 0.98 y 1.68 MB\n"
    )
    assert style_lint.findings_in(style_lint.fixed(text), "fixed.es.md") == []


babel = pytest.importorskip(
    "babel", reason="Babel (the catalog tool's library) is not installed here"
)


def write_catalog(path, entries: list[tuple]) -> None:
    from babel.messages import Catalog, pofile

    catalog = Catalog(locale="es", domain="toy")
    for msgid, msgstr in entries:
        catalog.add(msgid, msgstr)
    buf = io.BytesIO()
    pofile.write_po(buf, catalog, width=100)
    path.write_bytes(buf.getvalue())


def test_a_catalogs_spanish_strings_are_read_and_its_untranslated_entries_named(tmp_path):
    po = tmp_path / "toy.po"
    write_catalog(
        po,
        [
            ("{n} address(es) in all", "{n} dirección(es) en total"),
            ("source nodes", "source nodes"),
            ("the loss", "la pérdida"),
            ("{n} exercises passing", "{n} ejercicios superados"),
            (
                "torch.compile: graph breaks",
                "torch.compile: graph breaks",
            ),  # the glossary keeps them
            (
                ("{n} lab passed", "{n} labs passed"),
                ("{n} laboratorio superado", "{n} laboratorio(s) ok"),
            ),
        ],
    )
    found = {(f.rule, f.text) for f in style_lint.lint([po])}
    assert found == {
        ("a plural faked with (s)", "ón(es)"),
        ("untranslated", "source nodes"),
        ("a plural faked with (s)", "io(s)"),
        ("English status word", "ok"),
    }


def test_fix_rewrites_a_catalogs_spanish_strings_and_recompiles_it(tmp_path):
    po = tmp_path / "toy.po"
    write_catalog(po, [("{n:,} parameters", "279,512 parámetros, el 63%")])
    assert style_lint.fix_files([po]) == [po]
    assert f"279{NBSP}512 parámetros, el 63{NBSP}%" in po.read_text(encoding="utf-8")
    assert po.with_suffix(".mo").is_file()
    assert style_lint.lint([po]) == []


def test_known_findings_are_counted_not_failed_and_new_ones_fail(tmp_path, capsys):
    doc = tmp_path / "doc.es.md"
    doc.write_text("Coge el kernel.\n", encoding="utf-8")
    known = tmp_path / "known.txt"
    assert style_lint.main([str(doc), "--known", str(known), "--write-known"]) == 0
    doc.write_text("Coge el kernel.\nUna librería.\n", encoding="utf-8")
    assert style_lint.main([str(doc), "--known", str(known)]) == 1
    assert "librería" in capsys.readouterr().out


def test_every_spanish_text_is_found_and_none_of_the_tests_planted_ones():
    texts = {str(p.relative_to(style_lint.ROOT)) for p in style_lint.spanish_texts()}
    assert {
        "README.es.md",
        "theory/style.es.md",
        "workshop/i18n/locale/es/LC_MESSAGES/workshop.po",
    } <= texts
    assert any(t.endswith("/dispatcher.po") for t in texts)  # where a template's Spanish is
    assert not any(t.startswith("tests/") for t in texts)
