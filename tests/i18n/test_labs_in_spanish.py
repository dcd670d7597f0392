"""The labs in Spanish: a run with --lang es passes the same checks as the English one and writes its summary in
Spanish (accents intact under LANG=C); `exercises init` in Spanish writes the Spanish statements; the grading
messages come out in Spanish; every exercise's handout link resolves in both languages.

One Spanish run per lab and session (the runner's child, as `python -m workshop run --lang es` starts it); the
compile lab, whose run takes minutes on a CPU, is checked in-process instead: its summary and kernel explanation
rendered in both languages from the same made-up figures, its grading messages on saved generated code.
"""

from __future__ import annotations

import ast
import functools
import inspect
import os
import re
import subprocess
from pathlib import Path

import pytest
import torch

from tests.autograd.test_lab import SUMMARY_KEYS
from tests.compile import test_summary as compile_summary
from tests.conftest import TEST_DEVICE, read_result
from tests.support import lab_process
from tests.support.doc_structure import anchors
from workshop import engine, i18n, labs
from workshop.declarations import diagnosis, questions
from workshop.foundations.run_options import RunOptions
from workshop.i18n import templates
from workshop.lab_api import LabContext
from workshop.labs.autograd.grading.gradient_diagnosis import HAND_DIAGNOSES
from workshop.labs.compile import kernel_explanation
from workshop.labs.compile.generated_kernels import parse_kernels
from workshop.labs.compile.grading import run_grading
from workshop.labs.compile.grading.exercises import KERNEL
from workshop.labs.custom_op.grading import correctness as custom_op_correctness
from workshop.labs.custom_op.grading import exercise_grading as custom_op_grading
from workshop.labs.custom_op.grading import op_probes as custom_op_probes
from workshop.labs.custom_op.grading.own_op import shipped_pieces
from workshop.labs.dispatcher.grading.exercises import PREDICTIONS, TABLE_ENTRY
from workshop.learner import workspace
from workshop.learner.learner_code import LocalWorker, Solution

ROOT = Path(__file__).resolve().parents[2]

# Sentences of each lab's Spanish outputs (file -> sentences), none of which depends on the device.
SPANISH = {
    "autograd": {
        "summary.md": [
            "## 1. Gradientes a mano frente a autograd",
            "| a mano frente a autograd |",
            "filas de x y b, cada elemento",
            "a su AccumulateGrad le llegaron 2 gradientes, que el motor sumó antes de ejecutarlo.",
            "en el orden que anotaron los pre-hooks",
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
            "| llega a la key Python | explicada |",
        ],
    },
    "tensor": {
        "summary.md": [
            "## Vistas: tamaños, strides, offset en el storage",
            "| expresión | tamaño | stride (elementos) | offset | comparte el storage de su base | contiguo |",
            "## El contador de versiones",
            "todas las vistas de W comparten su storage; W.t().contiguous() es una copia",  # a check's name
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
            cmd = lab_process.command(lab, out, TEST_DEVICE, lang="es")
            env = {**os.environ, "LANG": "C", "LC_ALL": "C"}
            proc = subprocess.run(
                cmd,
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
    text = templates.render(labs.folder("autograd") / "templates", "es", values)
    assert "TF32 multiplicó por 50 el error de dL/dW de autograd frente a float64" in text
    assert "compararlos entre sí esconde el error de TF32" in text
    assert "Tus funciones (las de tu espacio de trabajo)" in text and "no tiene TF32" not in text


@pytest.fixture
def spanish(monkeypatch):
    """The language as a Spanish learner sets it (WORKSHOP_LANG=es), English again afterwards."""
    monkeypatch.setenv("WORKSHOP_LANG", "es")
    i18n.set_language(None)
    assert i18n.language() == "es"
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
    workspace.init(tmp_path / "work", [lab], tmp_path / "results")
    source = (tmp_path / "work" / f"{lab}.py").read_text(encoding="utf-8")
    assert statement in " ".join(line.lstrip("# ") for line in source.splitlines())
    assert f"workshop/labs/{lab}/{handout}" in source
    namespace = {}
    exec(compile(source, f"{lab}.py", "exec"), namespace)  # still Python, stubs and all
    first = labs.exercises(lab)[0]
    stub = namespace[first.attribute]
    # a stub raises its exercise's id; the grader says "not started" with the statement (in Spanish)
    with pytest.raises(NotImplementedError, match=f"^{re.escape(first.id)}$"):
        stub(*[None] * len(inspect.signature(stub).parameters))


def test_grading_messages_come_out_in_spanish(spanish):
    want = torch.arange(15.0, dtype=torch.float64).reshape(3, 5)  # dW (V, C)
    wrong, message = diagnosis.diagnose(
        HAND_DIAGNOSES, diagnosis.Evidence("dW", want.T.clone(), want, "float64")
    )
    assert (wrong.mistake, message) == (
        "a transposed gradient",  # the name's N_() key: shown through _()
        "dW tiene forma (5, 3), se esperaba (3, 5): traspuesto: dW tiene la forma de W, (V, C), no la de "
        "su traspuesta",
    )
    prediction = diagnosis.Evidence("cpu/grad/3d.gemm_op", "aten::linear", "aten::addmm")
    _, hint = diagnosis.diagnose(PREDICTIONS.diagnoses, prediction)
    assert (
        hint
        == "Esa operación se descompone: llama a otras operaciones y no ejecuta ningún GEMM ella misma."
    )
    slot = [["aten::linear", "CPU"]], [["linear.cpp", "kernel", False]], [None]
    found, why = diagnosis.diagnose(
        TABLE_ENTRY.diagnoses, diagnosis.Evidence("entries", *slot[1:], facts={"slots": slot[0]})
    )
    assert found.mistake is None and why == (
        "1 casilla no coincide: aten::linear en CPU: la tuya es kernel (linear.cpp) y la del dispatcher "
        "es una casilla vacía. Esta casilla está vacía en la tabla real: ninguna regla pone ahí un kernel."
    )


@pytest.mark.parametrize("lang", i18n.LANGUAGES)
@pytest.mark.parametrize("lab", list(labs.all_exercises()))
def test_every_exercises_handout_link_resolves(lab, lang):
    i18n.set_language(lang)
    try:
        for ex in labs.exercises(lab):
            document, _, anchor = ex.handout_path().partition("#")
            path = ROOT / document
            assert path.is_file(), f"{ex.id}: {document}"
            assert not anchor or anchor in anchors(path.read_text(encoding="utf-8")), ex.handout
    finally:
        i18n.set_language("en")


# The compile lab in Spanish, in-process (its run takes minutes on a CPU): the summary and the kernel explanation
# rendered from made-up figures (compile/test_summary.py's), its grading messages on saved generated code.
NUMBER = re.compile(r"\d[\d.,\u00a0]*\d|\d")


def numbers(text: str) -> list[str]:
    """The text's numbers, thousands separators dropped: 8,000 in English is 8000 in Spanish, 38,400 is 38 400."""
    return sorted(re.sub(r"(?<=\d)[,\u00a0](?=\d{3})", "", n) for n in NUMBER.findall(text))


@pytest.mark.parametrize("graded", [False, True], ids=["plain", "graded"])
def test_the_spanish_compile_summary_shows_the_same_values(graded):
    shown = [] if graded else [compile_summary.explanation(compile_summary.CPP_SUM, 4096)]
    english, spanish = (
        compile_summary.summary(shown, graded, compile_summary.MADE, 10.0, lang)
        for lang in ("en", "es")
    )
    assert numbers(spanish) == numbers(english)
    assert "## Graph breaks y recompilaciones (`breaks.json`)" in spanish
    assert "el tiempo de su primera llamada se recupera al cabo de unos 8000 pasos." in spanish
    assert (
        "| paso de entrenamiento (batch 8) | 10.00 | 5.00 | 2.00x |" in spanish
    )  # a prose value, via _()
    if graded:
        assert (
            "Cuando pase tu KERNEL_EXPLAINED, `explanation.md` explicará también tu kernel"
            in spanish
        )
    else:
        assert "(nido de bucles de C++, train/forward, llamado una vez por ejecución)" in spanish


def test_the_spanish_kernel_explanation_shows_the_same_values():
    ex = [compile_summary.explanation(compile_summary.CPP_SUM, 4096)]
    english, spanish = (
        kernel_explanation.render(compile_summary.FOLDER, lang, ex) for lang in ("en", "es")
    )
    assert numbers(spanish) == numbers(english)
    assert "Operaciones de aten (según el nombre del kernel): `sum`." in spanish
    assert "fusionar estas operaciones compensa en ese factor de tráfico de memoria." in spanish
    assert "Cada acumulador vectorial se reduce a un solo número (`vec_reduce_all`)" in spanish


def test_the_kernel_exercises_grading_messages_come_out_in_spanish(spanish, tmp_path):
    fixture = ROOT / "tests/compile/fixtures/cpp_train_forward.txt"
    kernels = parse_kernels(fixture.read_text(), "train/forward")
    ctx = LabContext("compile", tmp_path, RunOptions("cpu", 1, 0))
    gelu = {  # compile/test_exercises.py's GELU_ANSWER, with another kernel's grid
        "kernel": "cpp_fused_gelu_view_6",
        "fused_ops": ["gelu", "view"],
        "bytes_read": 180224,
        "bytes_written": 180224,
        "reduction": "none",
        "grid": [8],
    }
    with ctx.grading("kernel"):
        truths, facts = run_grading.kernel_truth(gelu, kernels, [])
        engine.grade_answers(ctx, KERNEL, gelu, truths, facts)
    failed = [c for c in ctx.checks if not c.passed]
    assert [(c.name, c.message) for c in failed] == [
        (
            "KERNEL_EXPLAINED['grid'] coincide con el código del kernel",
            "ese es el grid de `cpp_fused_clone_transpose_view_2`, no el de este kernel",
        )
    ]


def test_init_in_spanish_writes_the_compile_statements(tmp_path, spanish):
    workspace.init(tmp_path / "work", ["compile"], tmp_path / "results")
    source = (tmp_path / "work" / "compile.py").read_text(encoding="utf-8")
    prose = " ".join(line.lstrip("# ") for line in source.splitlines())
    assert "Elige un kernel definido en el code/train_forward.py de tu ejecución" in prose
    assert "Rellena ANSWERS con cinco cuentas leídas de los ficheros de tu ejecución" in prose
    assert "workshop/labs/compile/README.es.md#ejercicio-1-explica-un-kernel" in source
    assert "# int: graph breaks de la variante con .item()" in source  # the stub's comments
    namespace = {}
    exec(compile(source, "compile.py", "exec"), namespace)  # still Python: two dicts of `None`
    assert set(namespace["KERNEL_EXPLAINED"].values()) == {None}
    assert set(namespace["ANSWERS"].values()) == {None}


# The custom_op lab in Spanish, in-process (its run takes minutes on a CPU): the summary rendered in both languages
# from made-up figures (lab.summary_values' keys), a fake's grading message, and init's Spanish workspace.
def error(ours: float, torch_: float) -> dict:
    return {"ours": ours, "torch": torch_, "tolerance": 1.25 * torch_}


LAUNCH = {"grid": [2], "constexprs": {"ROWS": 32, "BLOCK_N": 1024, "ALIGN": 8}}
CUSTOM_OP_SUMMARY = {
    "device": "cpu",
    "registration": "custom_op",
    "shapes": {"lm_head": [64, 600], "long": [4, 65536]},
    "dtype_errors": {"float64": error(8.9e-16, 4.4e-16), "float32": error(2.8e-07, 3.5e-07)},
    "long_rows": {"error": error(7.7e-08, 3.3e-07), "kernels": ["_fwd_partials", "_fwd_finish"]},
    "bad_inputs": {
        "integer dtype": "TypeError: workshop.softmax: x must be a floating-point tensor",
        "dim out of range": "IndexError: workshop.softmax: dim 2 is out of range",
        "mixed devices (backward)": "RuntimeError: both must be on the same device",
    },
    "census": {"custom_op": {"extern_calls": 2, "inlined_kernel_defs": 0, "modules": 2}},
    "minigpt": {
        "logits": 3.3e-06,
        "grads": 1.2e-08,
        "launches": ["_fwd_one_pass", "_bwd_one_pass"] * 2,
        "launch_counts": {"_fwd_one_pass": 2, "_bwd_one_pass": 2},
    },
    "own": {"graded": False, "waiting": [], "failed": []},
    "step_shape": [64, 600],
    "step_launches": [{"kernel": "_fwd_one_pass", **LAUNCH}, {"kernel": "_bwd_one_pass", **LAUNCH}],
    "eager": {
        "shape": [1, 600],
        "registration": "custom_op",
        "layer_us": {"kernel launch": 4321.0, "plan": 1.1, "checks, output": 3.7},
        "registrations": {
            kind: {
                "registration_us": own,
                "autograd_node_us": 8.0,
                "python_us": 4.8 + own,
                "op_us": 4326.0 + own,
                "op_grad_us": 4334.0 + own,
            }
            for kind, own in (("custom_op", 14.1), ("triton_op", 13.2), ("by hand", 6.1))
        },
        "python_us": 18.9,
        "op_us": 4340.1,
        "op_grad_us": 4348.1,
        "torch_us": 6.7,
        "triton_jit_launch_us": 4402.5,
        "step_shape": [64, 600],
        "step_us": {
            "torch.softmax": 83.0,
            "custom_op": 9123.0,
            "triton_op": 9100.0,
            "by hand": 9050.0,
        },
    },
    "trace": {"file": "eager_trace.json", "events": 812, "op_events": 24, "gpu_kernels": []},
}


@pytest.mark.parametrize(
    "launch_share, graded", [(0.996, False), (0.3, True)], ids=["interpreter", "gpu-graded"]
)
def test_the_spanish_custom_op_summary_shows_the_same_values(launch_share, graded):
    values = CUSTOM_OP_SUMMARY | {"launch_share": launch_share, "graded": graded}
    values |= {
        "by_hand_saves": 8.0,
        "side_by_side": "inductor_side_by_side.md",
        "eager_waits": False,
        "shipped_built": True,
    }
    english, spanish = (
        templates.render(labs.folder("custom_op") / "templates", lang, values)
        for lang in ("en", "es")
    )
    assert numbers(spanish) == numbers(english)
    assert "## Lo que cuesta una llamada eager, con tres registros (`eager_cost.png`)" in spanish
    assert (
        "| a mano | 6.1 | 8.0 | 4332.1 | 4340.1 | 9050 |" in spanish
    )  # a registration's name, via _()
    assert (
        "- dtype entero: `TypeError: workshop.softmax: x must be a floating-point tensor`"
        in spanish
    )
    assert "| lanzamiento del kernel | 4321.0 |" in spanish  # a layer's name, via _()
    assert "`_fwd_partials` y luego `_fwd_finish` (el registro de lanzamientos)" in spanish
    if graded:
        assert "Cada una de tus piezas se ha corregido en un operador propio" in spanish
        assert "La llamada de la op tarda 4340.1 us, 647.8 veces" in spanish
    else:
        assert "Aquí el lanzamiento del kernel es el intérprete de Triton" in spanish


def test_a_custom_op_grading_message_comes_out_in_spanish(spanish, tmp_path):
    """A fake that copies x's strides (torch.empty_like), graded as lab.grade_pieces grades it: the worker's
    facts, said in the lab's language (the worker's own code answers here in-process, as for a reference)."""
    ctx = LabContext("custom_op", tmp_path, RunOptions(TEST_DEVICE, 1, 0, work=tmp_path))
    fake = Solution(
        LocalWorker(TEST_DEVICE),
        {"references": {"fake": "tests.custom_op.wrong_solutions:fake_empty_like"}, "one": True},
    )
    with ctx.grading("fake"):
        custom_op_grading.GRADERS["fake"](ctx, fake)
    failed = [c for c in ctx.checks if not c.passed]
    assert [c.name for c in failed] == [
        "softmax_fake: salidas como las de la op real (forma, dtype, dispositivo, strides)"
    ]
    assert failed[0].message.startswith(
        "para x (4, 6) float64, dim=0, tu implementación fake da los strides (6, 1); la salida del "
        "kernel tiene (1, 4) (los de x son (6, 1)): todas las salidas de tu implementación fake tienen "
        "los strides de x, como los da torch.empty_like(x). Los kernels escriben filas a lo largo de dim"
    )


def test_init_in_spanish_writes_the_custom_op_statements(tmp_path, spanish):
    workspace.init(tmp_path / "work", ["custom_op"], tmp_path / "results")
    source = (tmp_path / "work" / "custom_op.py").read_text(encoding="utf-8")
    prose = " ".join(line.lstrip("# ") for line in source.splitlines())
    assert (
        "Escribe el kernel de Triton softmax_fwd_kernel: y = softmax(x) a lo largo de cada fila"
        in prose
    )
    assert (
        "Escribe setup_context(ctx, inputs, output), que guarda en ctx lo que necesita el backward"
        in prose
    )
    assert "workshop/labs/custom_op/README.es.md#ejercicios" in source
    assert (
        "# P8. ¿Sobre cuántos programas se ejecutó el kernel del forward" in source
    )  # the stub's comments
    namespace = {}
    # still Python: kernels, stubs and ANSWERS (compiled from its file: Triton's compiler reads a kernel's source)
    exec(compile(source, str(tmp_path / "work" / "custom_op.py"), "exec"), namespace)
    assert set(namespace["ANSWERS"].values()) == {ast.literal_eval(questions.UNFILLED)}
    with pytest.raises(NotImplementedError, match="custom_op.fake"):
        namespace["softmax_fake"](None, 0)


def test_the_custom_op_bad_input_check_reads_the_spanish_errors(spanish):
    """The op's errors come out in Spanish, so the check that each names its problem looks for Spanish words."""
    run = functools.partial(custom_op_probes.apply, custom_op_probes.build(shipped_pieces()))
    found = custom_op_correctness.bad_inputs(run, TEST_DEVICE)
    assert "x debe ser un tensor de coma flotante" in found["integer dtype"]
    assert all(custom_op_correctness.names_the_problem(case, msg) for case, msg in found.items())
    english = "TypeError: workshop.softmax: x must be a floating-point tensor"
    assert not custom_op_correctness.names_the_problem("integer dtype", english)
