"""The labs in Spanish: a run with --lang es passes the same checks as the English one and writes its summary in
Spanish (accents intact under LANG=C); `exercises init` in Spanish writes the Spanish statements; the grading
messages come out in Spanish; every exercise's handout link resolves in both languages.

One Spanish run per lab and session (the runner's child, as `python -m workshop run --lang es` starts it); the
compile lab, whose run takes minutes on a CPU, is checked in-process instead: its summary and kernel explanation
rendered in both languages from the same made-up figures, its grading messages on saved generated code.
"""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import test_compile_summary as compile_summary
import torch
from conftest import TEST_DEVICE, read_result
from doc_structure import anchors
from test_autograd_lab import SUMMARY_KEYS

from workshop import exercise, i18n, labs, templates, workspace_init
from workshop.lab import LabContext
from workshop.labs.autograd.gradient_diagnosis import Evidence, diagnose
from workshop.labs.compile import kernel_answer, kernel_explanation
from workshop.labs.compile.generated_kernels import parse_kernels
from workshop.labs.dispatcher import decisions, trace_facts

ROOT = Path(__file__).resolve().parents[1]

# Sentences of each lab's Spanish outputs (file -> sentences), none of which depends on the device.
SPANISH = {
    "autograd": {
        "summary.md": [
            "## 1. Gradientes a mano frente a autograd",
            "| a mano frente a autograd |",
            "filas de x y b, cada elemento",
            "a su\nAccumulateGrad le llegaron 2 gradientes, que el motor sumó antes de ejecutarlo.",
            "en el orden que registraron los pre-hooks",
            "el grafo termina en un AccumulateGrad por hoja",  # a check's name, in the checks table
        ],
    },
    "dispatcher": {
        "summary.md": [
            "## torch.matmul, hasta el GEMM",
            "El conjunto de exclusión TLS tiene AutogradFunctionality, así que no hay ninguna key de autograd "
            "en juego.",
            "Dos operandos 3-D van a `aten::bmm`, un GEMM por cada elemento del batch.",
            "| escenario | llamada | dónde se decide la operación raíz |",  # the included side-by-side table
        ],
        "trace.md": [
            "## La tabla comparativa",
            "(observada cuando la función trazada entró en C++)",
            "| llega a la key Python | coincide con el dispatcher |",
        ],
    },
}


@pytest.fixture(scope="session")
def spanish_run(tmp_path_factory):
    """lab -> its folder after one run in Spanish, under LANG=C (where only UTF-8 throughout keeps the accents)."""
    done = {}

    def run(lab: str) -> Path:
        if lab not in done:
            out = tmp_path_factory.mktemp(f"{lab}-es")
            cmd = [sys.executable, "-m", "workshop.runner", lab, "--out-dir", str(out)]
            env = {**os.environ, "LANG": "C", "LC_ALL": "C"}
            proc = subprocess.run(
                [*cmd, "--device", TEST_DEVICE, "--lang", "es"],
                capture_output=True,
                text=True,
                env=env,
            )
            assert (out / "result.json").is_file(), proc.stdout + proc.stderr
            done[lab] = out
        return done[lab]

    return run


@pytest.mark.parametrize("lab", SPANISH)
def test_a_spanish_run_passes_the_same_checks(lab, spanish_run, lab_dir):
    spanish, english = read_result(spanish_run(lab)), read_result(lab_dir(lab))
    assert spanish["lang"] == "es" and spanish["passed"], [
        c for c in spanish["checks"] if not c["passed"]
    ]
    assert [c["passed"] for c in spanish["checks"]] == [c["passed"] for c in english["checks"]]
    assert [c["threshold"] for c in spanish["checks"]] == [
        c["threshold"] for c in english["checks"]
    ]
    translated = [
        es["name"]
        for es, en in zip(spanish["checks"], english["checks"], strict=True)
        if es["name"] != en["name"]
    ]
    assert len(translated) >= len(english["checks"]) // 2  # names are translated; values are not


@pytest.mark.parametrize("lab", SPANISH)
def test_a_spanish_run_writes_spanish_outputs(lab, spanish_run):
    for name, sentences in SPANISH[lab].items():
        text = (spanish_run(lab) / name).read_bytes().decode("utf-8")
        for sentence in sentences:
            assert sentence in text, f"{name}: {sentence!r}"
        assert "\ufffd" not in text and "Ã" not in text  # no accent lost or encoded twice


def test_the_spanish_summary_says_what_tf32_did_on_cuda(spanish_run):
    """The GPU's sentences, rendered from this run's values with a CUDA run's TF32 figures."""
    result = read_result(spanish_run("autograd"))
    tf32 = {"gradient": "dW", "autograd_off": 5e-7, "autograd_on": 2.5e-5, "growth": 50.0}
    values = {key: result[key] for key in SUMMARY_KEYS} | {
        "device": "cuda",
        "graded": True,
        "tf32": tf32 | {"hand_vs_autograd_on": 7e-7},
    }
    text = templates.render(labs.folder("autograd"), "es", values)
    assert "TF32 multiplicó por 50 el error de dL/dW de autograd frente a float64" in text
    assert "compararlos entre sí esconde el error de TF32" in text
    assert "Tus funciones (las de tu espacio de trabajo)" in text and "no tiene TF32" not in text


@pytest.fixture
def spanish(monkeypatch):
    """The language as a Spanish learner sets it (WORKSHOP_LANG=es), English again afterwards."""
    monkeypatch.setenv("WORKSHOP_LANG", "es")
    assert i18n.set_language(None) == "es"
    yield
    i18n.set_language("en")


@pytest.mark.parametrize(
    "lab, statement, handout",
    [
        (
            "autograd",
            "Calcula a mano la pérdida del LM head y su gradiente dL/dlogits.",
            "README.es.md#1-el-gradiente-de-la-entropía-cruzada",
        ),
        (
            "dispatcher",
            "Escribe table_entry(regs, fallbacks, key): el kernel que pone el dispatcher",
            "README.es.md#2-la-tabla-una-casilla-por-key",
        ),
    ],
    ids=["autograd", "dispatcher"],
)
def test_init_in_spanish_writes_the_spanish_statements(lab, statement, handout, tmp_path, spanish):
    workspace_init.init(tmp_path / "work", [lab], tmp_path / "results")
    source = (tmp_path / "work" / f"{lab}.py").read_text(encoding="utf-8")
    assert statement in " ".join(line.lstrip("# ") for line in source.splitlines())
    assert f"workshop/labs/{lab}/{handout}" in source
    namespace = {}
    exec(compile(source, f"{lab}.py", "exec"), namespace)  # still Python, stubs and all
    stub = namespace[exercise.lab_exercises(lab)[0].attribute]
    with pytest.raises(
        NotImplementedError, match=re.escape(statement[:40])
    ):  # not started, in Spanish
        stub(*[None] * len(inspect.signature(stub).parameters))


def test_grading_messages_come_out_in_spanish(spanish):
    want = torch.arange(15.0, dtype=torch.float64).reshape(3, 5)  # dW (V, C)
    wrong = diagnose(Evidence("dW", want.T.clone(), want, torch.zeros(1, 2, dtype=torch.long)))
    assert wrong == (
        "dW tiene forma (5, 3), se esperaba (3, 5): traspuesto: dW = G^T X tiene la forma de W (V, C); "
        "X^T G es su traspuesta"
    )
    hint = trace_facts.prediction_hint("gemm_op", "aten::linear", "aten::addmm")
    assert (
        hint
        == "Esa operación se descompone: llama a otras operaciones y no ejecuta ningún GEMM ella misma."
    )
    assert decisions.precedence_rule("CPU", None, None).startswith("Esta casilla está vacía")


@pytest.mark.parametrize("lang", i18n.LANGUAGES)
@pytest.mark.parametrize("lab", list(exercise.all_exercises()))
def test_every_exercises_handout_link_resolves(lab, lang):
    i18n.set_language(lang)
    try:
        for ex in exercise.lab_exercises(lab):
            document, _, anchor = ex.handout_path().partition("#")
            path = ROOT / document
            assert path.is_file(), f"{ex.id}: {document}"
            assert not anchor or anchor in anchors(path.read_text(encoding="utf-8")), ex.handout
    finally:
        i18n.set_language("en")


# The compile lab in Spanish, in-process (its run takes minutes on a CPU): the summary and the kernel explanation
# rendered from made-up figures (test_compile_summary's), its grading messages on saved generated code.
NUMBER = re.compile(r"\d[\d.,]*\d|\d")


def numbers(text: str) -> list[str]:
    return sorted(NUMBER.findall(text))


@pytest.mark.parametrize("graded", [False, True], ids=["plain", "graded"])
def test_the_spanish_compile_summary_shows_the_same_values(graded):
    shown = [] if graded else [compile_summary.explanation(compile_summary.CPP_SUM, 4096)]
    english, spanish = (
        compile_summary.summary(shown, graded, compile_summary.MADE, 10.0, lang)
        for lang in ("en", "es")
    )
    assert numbers(spanish) == numbers(english)
    assert "## Graph breaks y recompilaciones (`breaks.json`)" in spanish
    assert "el tiempo de su primera\nllamada se recupera al cabo de unos 8,000 pasos." in spanish
    assert (
        "| paso de entrenamiento (batch 8) | 10.00 | 5.00 | 2.00x |" in spanish
    )  # a prose value, via _()
    if graded:
        assert "se escriben cuando pasa tu KERNEL_EXPLAINED (ejercicio compile.kernel)" in spanish
    else:
        assert "(nido de bucles de C++, train/forward, llamado 1 vez/veces" in spanish


def test_the_spanish_kernel_explanation_shows_the_same_values():
    ex = [compile_summary.explanation(compile_summary.CPP_SUM, 4096)]
    english, spanish = (
        kernel_explanation.render(compile_summary.FOLDER, lang, ex) for lang in ("en", "es")
    )
    assert numbers(spanish) == numbers(english)
    assert "Operaciones de aten (según el nombre del kernel): `sum`." in spanish
    assert "fusionar estas\noperaciones compensa en ese factor de tráfico de memoria." in spanish
    assert "Cada acumulador vectorial se reduce a un solo número (`vec_reduce_all`)" in spanish


def test_the_kernel_exercises_grading_messages_come_out_in_spanish(spanish, tmp_path):
    fixture = ROOT / "tests/test_compile_fixtures/cpp_train_forward.txt"
    kernels = parse_kernels(fixture.read_text(), "train/forward")
    ctx = LabContext("compile", tmp_path, "cpu", 1, 0)
    gelu = {  # test_compile_exercises' GELU_ANSWER, with another kernel's grid
        "kernel": "cpp_fused_gelu_view_6",
        "fused_ops": ["gelu", "view"],
        "bytes_read": 180224,
        "bytes_written": 180224,
        "reduction": "none",
        "grid": [8],
    }
    with ctx.grading("kernel"):
        kernel_answer.grade_kernel(ctx, gelu, kernels)
    failed = [c for c in ctx.checks if not c.passed]
    assert [(c.name, c.message) for c in failed] == [
        (
            "KERNEL_EXPLAINED['grid'] coincide con el código del kernel",
            "ese es el grid de `cpp_fused_clone_transpose_view_2`, no el de este kernel",
        )
    ]


def test_init_in_spanish_writes_the_compile_statements(tmp_path, spanish):
    workspace_init.init(tmp_path / "work", ["compile"], tmp_path / "results")
    source = (tmp_path / "work" / "compile.py").read_text(encoding="utf-8")
    prose = " ".join(line.lstrip("# ") for line in source.splitlines())
    assert "Elige un kernel definido en el code/train_forward.py de tu ejecución" in prose
    assert "Rellena ANSWERS con cinco cuentas leídas de los ficheros de tu ejecución" in prose
    assert "workshop/labs/compile/README.es.md#ejercicio-1-explica-un-kernel" in source
    assert "# int: graph breaks de la variante con .item()" in source  # the stub's comments
    namespace = {}
    exec(compile(source, "compile.py", "exec"), namespace)  # still Python: two dicts of `...`
    assert set(namespace["KERNEL_EXPLAINED"].values()) == {...}
    assert set(namespace["ANSWERS"].values()) == {...}
