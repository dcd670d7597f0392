"""Statements of the theory texts that a careful read against torch 2.13.0 found wrong, as corrected.

Each correction names the text, the old sentence (which must not come back, in either language) and the
phrases the corrected one says; docs/test_theory.py pins what each says to the committed run or to the installed
torch. Whitespace is normalized first: a reflowed paragraph is the same sentence. The texts state mechanisms,
not the figures the labs ask the learner to predict or read off a run: the figures below are the
tests'.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

# Figures the corrected sentences quote, pinned by docs/test_theory.py.
DDP_FIRST_BUCKET = 1024 * 1024  # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES
DDP_GRADS_BUT_TOK_EMB = 964448  # bytes of every gradient of the MiniGPT but the token embedding's
DDP_ALL_GRADS = 1118048
TP_TOKENS = 176  # the distributed lab's batch, in tokens
TP_ACTIVATION_ALL_REDUCE = TP_TOKENS * 64 * 4  # 45056 B
TP_LOSS_ALL_REDUCE = TP_TOKENS * 4  # 704 B: one float per token
INFERENCE_MODE_EXCLUDES = ("AutogradFunctionality", "AutogradOther", "AutogradNestedTensor")


@dataclass(frozen=True)
class Correction:
    doc: str  # the English text's name; its Spanish twin is X.es.md
    old: dict[str, str]  # language -> the wrong sentence as it stood
    new: dict[str, tuple[str, ...]]  # language -> phrases the corrected sentence says


CORRECTIONS = [
    Correction(
        "00-motivation.md",
        {
            "en": "moves gradients between processes while the backward is still running",
            "es": "mueve gradientes entre procesos mientras el backward todavía se está ejecutando",
        },
        {
            "en": (
                "can start sending the first buckets while the backward is still computing the rest",
            ),
            "es": (
                "puede empezar a enviar los primeros buckets mientras el backward todavía calcula el resto",
            ),
        },
    ),
    Correction(
        "01-dispatcher-and-aten.md",
        {
            "en": "it must first cast its inputs to bfloat16;",
            "es": "primero tiene que convertir sus entradas a bfloat16;",
        },
        {
            "en": ("(by default float16 on CUDA, bfloat16 on the CPU)",),
            "es": ("(por defecto float16 en CUDA, bfloat16 en la CPU)",),
        },
    ),
    Correction(
        "01-dispatcher-and-aten.md",
        {
            "en": "adds the autograd keys to the exclude set (one functionality bit,",
            "es": "añade las keys de autograd al conjunto de exclusión (un solo bit de funcionalidad,",
        },
        {
            "en": (
                "It adds three functionality keys to the exclude set",
                *(f"`{key}`" for key in INFERENCE_MODE_EXCLUDES),
                "it takes `ADInplaceOrView` out of the include set",
                "is what `inference_mode` saves",
            ),
            "es": (
                "Añade tres keys de funcionalidad al conjunto de exclusión",
                *(f"`{key}`" for key in INFERENCE_MODE_EXCLUDES),
                "saca `ADInplaceOrView` del conjunto de inclusión",
                "es lo que se ahorra `inference_mode`",
            ),
        },
    ),
    Correction(
        "02-autograd-engine.md",
        {
            "en": "at pytorch/pytorch revision e1253a9 (2021)",
            "es": "en la revisión e1253a9 de pytorch/pytorch (2021)",
        },
        {
            "en": (
                "https://github.com/pytorch/pytorch/blob/v2.13.0/torch/csrc/autograd/engine.cpp",
            ),
            "es": (
                "https://github.com/pytorch/pytorch/blob/v2.13.0/torch/csrc/autograd/engine.cpp",
            ),
        },
    ),
    Correction(
        "03-compile-and-distributed.md",
        {
            "en": "so communication overlaps compute.",
            "es": "de modo que la comunicación se solapa con el cálculo.",
        },
        {
            "en": (
                "one bucket, and here no overlap at all",
                "Every gradient but the token embedding's fits under the first bucket's MiB",
            ),
            "es": (
                "un solo bucket, y aquí nada de solapamiento",
                "Todos los gradientes menos el del embedding de tokens caben por debajo del MiB del primer bucket",
            ),
        },
    ),
    Correction(
        "03-compile-and-distributed.md",
        {
            "en": "so it grows with the batch and blocks the computation",
            "es": "así que crece con el batch y bloquea el cálculo",
        },
        {
            "en": (
                "the backward's all-reduce of an input gradient can run while the weight gradient's GEMM computes",
                "`loss_parallel` adds three of one float per token each",
            ),
            "es": (
                "el all-reduce de un gradiente de entrada en el backward puede ejecutarse mientras se calcula el GEMM",
                "`loss_parallel` añade tres de un float por token cada uno",
            ),
        },
    ),
    Correction(
        "03-compile-and-distributed.md",
        {"en": "for v times the messages", "es": "a cambio de v veces más mensajes"},
        {
            "en": ("grow from p-1 to vp-1", "(vp-1)/(p-1): 3 times at p = 2 and v = 2"),
            "es": ("pasan de p-1 a vp-1", "(vp-1)/(p-1): 3 veces con p = 2 y v = 2"),
        },
    ),
    Correction(
        "glossary.md",
        {
            "en": "| leaf | a tensor that requires grad and was not computed (a parameter) |",
            "es": "| leaf | un tensor que requiere gradiente y no se ha calculado (un parámetro) |",
        },
        {
            "en": (
                "| leaf | a tensor without a `grad_fn`",
                "only a leaf that requires grad (a parameter) gets an `AccumulateGrad`",
            ),
            "es": (
                "| leaf | un tensor sin `grad_fn`",
                "solo una hoja que requiere gradiente (un parámetro) recibe un nodo `AccumulateGrad`",
            ),
        },
    ),
    # a reader checked the texts against torch 2.13 (snippets in its report)
    Correction(
        "03-compile-and-distributed.md",
        {
            "en": "in-place updates and views are rewritten as pure operations",
            "es": "las actualizaciones in-place y las vistas se reescriben como operaciones puras",
        },
        {
            "en": ("views stay in the graph as view ops (`aten.view.default`)",),
            "es": (
                "las vistas siguen en el grafo como operaciones de vista (`aten.view.default`)",
            ),
        },
    ),
    Correction(
        "03-compile-and-distributed.md",
        {"en": "its kernels are inlined", "es": "sus kernels quedan integrados"},
        {
            "en": ("launched from its `call()` like Inductor's own (never fused with them)",),
            "es": ("se lanza desde su `call()` como los de Inductor (nunca fusionado con ellos)",),
        },
    ),
    Correction(
        "03-compile-and-distributed.md",
        {
            "en": "each rank receives the summed gradient of its own shard",
            "es": "cada rank recibe el gradiente sumado de su propio shard",
        },
        {
            "en": ("its own shard's gradient, averaged over the ranks",),
            "es": ("el gradiente de su propio shard, promediado entre los ranks",),
        },
    ),
    Correction(
        "00-motivation.md",
        {
            "en": "is every lab run once on 2 NVIDIA H200 GPUs",
            "es": "es cada laboratorio ejecutado una vez en 2 GPU NVIDIA H200",
        },
        {
            "en": ("the distributed lab on two, the other labs on one",),
            "es": ("el de distributed en dos, los demás en una",),
        },
    ),
    Correction(
        "02-autograd-engine.md",
        {
            "en": "for `addmm`, `mat1` and `mat2` (derivatives.yaml: `mat1: mm_mat1_backward(grad, mat2, ...)`, "
            "`mat2: mm_mat2_backward(grad, mat1, ...)`), plus scalars",
            "es": "para `addmm`, `mat1` y `mat2` (derivatives.yaml: `mat1: mm_mat1_backward(grad, mat2, ...)`, "
            "`mat2: mm_mat2_backward(grad, mat1, ...)`), más escalares",
        },
        {
            "en": ("each only when the other needs a gradient",),
            "es": ("cada uno solo cuando el otro necesita gradiente",),
        },
    ),
]


def normalized(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def language(doc: Path) -> str:
    return "es" if doc.name.endswith(".es.md") else "en"


def statement_problems(doc: Path, text: str | None = None) -> list[str]:
    """The old statements a text still makes, and the corrected phrases it lacks, one line each."""
    lang, english = language(doc), doc.name.replace(".es.md", ".md")
    body = normalized(doc.read_text(encoding="utf-8") if text is None else text)
    out = []
    for c in (c for c in CORRECTIONS if c.doc == english):
        if normalized(c.old[lang]) in body:
            out.append(f"{doc.name} still says {c.old[lang]!r}")
        out += [
            f"{doc.name} does not say {phrase!r}"
            for phrase in c.new[lang]
            if normalized(phrase) not in body
        ]
    return out
