"""What Inductor generates around our op when it is an opaque custom_op vs a triton_op.

We compile the same function, y = softmax(2 x) * 3 with its backward, twice: once with the op registered as a
custom_op (Inductor may only call it: `torch.ops.<ns>.softmax.default(buf0, ...)`, an extern kernel), once as a
triton_op (Inductor traces into it, finds the wrap_triton launches and writes our kernel's source into its own
output code, launching it like one of its own kernels). The excerpt is each generated module's `call` function,
where the launches happen, plus the first lines of our kernel where Inductor copied it in.
"""

import html
import re
from pathlib import Path

import torch
from torch._inductor.utils import run_and_get_code

from workshop.i18n import N_, _
from workshop.labs.compile.capture import fresh_codegen

KERNEL_NAMES = ("_fwd_one_pass", "_bwd_one_pass")  # our kernels, as softmax_kernels.py names them
# What a CPU run shows for the triton_op instead: the excerpt of an H200 run, committed.
COMMITTED_TRITON_OP = (
    Path(__file__).resolve().parents[3] / "benchmarks/custom_op/inductor_triton_op.txt"
)
NOT_ON_THE_CPU = N_(
    "Not produced on the CPU: under Triton's interpreter a triton_op cannot be compiled (see the handout).\n"
    "The H200 excerpt is committed in benchmarks/custom_op/inductor_triton_op.txt.\n"
)
SIDE_BY_SIDE = "inductor_side_by_side.md"


def compiled_step(op, dim: int = -1, around: bool = True, compiled: bool = True):
    """y = op(2x, dim) * 3 (or y = op(x, dim), not `around`: no code of Inductor's own to compile, seconds less)
    compiled with fullgraph=True (not `compiled`: run eagerly, the values a compiled one is compared with); the
    returned step(x, dy) runs it forward and backward and returns (y, dx)."""

    def f(x):
        return op(x * 2.0, dim) * 3.0 if around else op(x, dim)

    run = torch.compile(f, fullgraph=True) if compiled else f

    def step(x: torch.Tensor, dy: torch.Tensor):
        x_ = x.detach().requires_grad_()
        y = run(x_)
        (dx,) = torch.autograd.grad(y, x_, dy)
        return y.detach(), dx

    return step


def compile_and_capture(op, x: torch.Tensor, dy: torch.Tensor, dim: int = -1, around: bool = True):
    """compiled_step(op, dim, around) run once on (x, dy), its code generated afresh; returns ((y, dx), generated
    sources). Afresh (the compile lab's fresh_codegen): a hit in the FX graph or AOTAutograd cache would skip it,
    leaving nothing to show, and would replay the code of an earlier op of the same name and graph, whose autograd
    formula may have been another (a cache key holds the graph, not a custom op's Python). The caches of compiled
    kernels (C++, Triton binaries) stay on: they hold binaries, keyed by their source."""
    with fresh_codegen():
        return run_and_get_code(compiled_step(op, dim, around), x, dy)


def call_functions(text: str) -> list[str]:
    """Every `def call(...)` of a generated module (or of an excerpt of several), in order: the sequence of kernel
    launches and extern calls, each with its body."""
    lines = text.splitlines()
    found = []
    for start, line in enumerate(lines):
        if not re.match(r"\s*def call\(", line):
            continue
        indent = len(line) - len(line.lstrip())
        end = start + 1
        while end < len(lines) and (
            not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent
        ):
            end += 1
        found.append("\n".join(lines[start:end]).rstrip())
    return found


def inlined_kernels(source: str, kernel_names=KERNEL_NAMES, n_lines: int = 12) -> list[str]:
    """The first lines of each of our kernels that Inductor copied into its output code."""
    lines = source.splitlines()
    return [
        "\n".join(lines[max(0, i - 2) : i + n_lines])
        for i, line in enumerate(lines)
        if any(re.match(rf"\s*def {name}(?:_\d+)?\(", line) for name in kernel_names)
    ]


def kernel_defs(text: str, name: str) -> int:
    """Definitions of the kernel `name` in generated code: Inductor may append _<n> to a copied kernel's name
    (config.triton.unique_user_kernel_names)."""
    return len(re.findall(rf"def {name}(?:_\d+)?\(", text))


def census(sources: list[str], namespace: str, kernel_names=KERNEL_NAMES) -> dict:
    """Counts, over all generated modules, what the comparison is about (result.json's "compile" holds them)."""
    text = "\n".join(sources)
    calls = re.findall(rf"torch\.ops\.{namespace}\.softmax(?:_backward)?\.default\(", text)
    return {
        # calls of the op, an opaque extern kernel
        "extern_calls": len(calls),
        # definitions of its kernels copied in
        "inlined_kernel_defs": sum(kernel_defs(text, name) for name in kernel_names),
        # the generated modules: forward and backward
        "modules": len(sources),
    }


def excerpt(title: str, sources: list[str], kernel_names=KERNEL_NAMES) -> str:
    parts = [f"# {title}"]
    for n, source in enumerate(sources):
        which = "forward" if n == 0 else "backward"
        kernels = inlined_kernels(source, kernel_names)
        copied = (
            _("{which}: our kernels as Inductor copied them in")
            if kernels
            else _("{which}: our kernels as Inductor copied them in: none")
        )
        parts += [
            f"\n## {copied.format(which=which)}",
            *kernels,
            "\n## " + _("{which}: the generated call()").format(which=which),
            # the module's `def call(...)`: its first, the only one a generated module has
            next(iter(call_functions(source)), _("(no call() found)")),
        ]
    return "\n".join(parts) + "\n"


def side_by_side(excerpts: dict[str, str]) -> str:
    """Markdown: the generated call()s of each excerpt in a column of its own (an HTML table, which Markdown
    viewers render; without blank lines, which would end its HTML block), forward and backward one row each."""
    columns = {
        title: ["\n".join(filter(str.strip, call.splitlines())) for call in call_functions(text)]
        for title, text in excerpts.items()
    }
    head = "".join(f"<th>{html.escape(title)}</th>" for title in columns)
    lines = [f"# {_('The generated call()s side by side')}", ""]
    for n, which in enumerate((_("forward"), _("backward"))):
        cells = "".join(
            f"<td><pre>{html.escape(calls[n] if n < len(calls) else '')}</pre></td>"
            for calls in columns.values()
        )
        lines += [f"## {which}", "", f"<table><tr>{head}</tr><tr>{cells}</tr></table>", ""]
    return "\n".join(lines)
