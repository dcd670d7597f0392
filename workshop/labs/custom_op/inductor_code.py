"""What Inductor generates around our op when it is an opaque custom_op vs a triton_op.

We compile the same function, y = softmax(2 x) * 3 with its backward, twice: once with the op registered as a
custom_op (Inductor may only call it: `torch.ops.<ns>.softmax.default(buf0, ...)`, an extern kernel), once as a
triton_op (Inductor traces into it, finds the wrap_triton launches and writes our kernel's source into its own
output code, launching it like one of its own kernels). The excerpt is each generated module's `call` function,
where the launches happen, plus the first lines of our kernel where Inductor copied it in.
"""

import re

import torch
import torch._inductor.config as inductor_config
from torch._inductor.utils import run_and_get_code

KERNEL_NAMES = ("_fwd_one_pass", "_bwd_one_pass")  # our kernels, as softmax_kernels.py names them


def compile_and_capture(op, x: torch.Tensor, dy: torch.Tensor):
    """Compiles y = op(2x) * 3 with fullgraph=True, runs forward + backward; returns ((y, dx), generated sources)."""

    def f(x):
        return op(x * 2.0, -1) * 3.0

    compiled = torch.compile(f, fullgraph=True)

    def step():
        x_ = x.detach().requires_grad_()
        y = compiled(x_)
        (dx,) = torch.autograd.grad(y, x_, dy)
        return y.detach(), dx

    # Fresh code generation: a cache hit would skip it and leave nothing to show.
    with inductor_config.patch(force_disable_caches=True):
        result, sources = run_and_get_code(step)
    return result, sources


def call_function(source: str) -> str:
    """The generated module's `def call(...)` body: the sequence of kernel launches and extern calls."""
    lines = source.splitlines()
    start = next((i for i, line in enumerate(lines) if re.match(r"\s*def call\(", line)), None)
    if start is None:
        return ""
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = start + 1
    while end < len(lines) and (
        not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent
    ):
        end += 1
    return "\n".join(lines[start:end]).rstrip()


def inlined_kernels(source: str, n_lines: int = 12) -> list[str]:
    """The first lines of each of our kernels that Inductor copied into its output code."""
    lines = source.splitlines()
    found = []
    for i, line in enumerate(lines):
        if any(re.match(rf"\s*def {name}(?:_\d+)?\(", line) for name in KERNEL_NAMES):
            found.append("\n".join(lines[max(0, i - 2) : i + n_lines]))
    return found


def census(sources: list[str], namespace: str) -> dict:
    """Counts, over all generated modules, what the comparison is about."""
    text = "\n".join(sources)
    return {
        "extern_calls": len(
            re.findall(rf"torch\.ops\.{namespace}\.softmax(?:_backward)?\.default\(", text)
        ),
        # Inductor may append _<n> to a copied kernel's name (config.triton.unique_user_kernel_names)
        "inlined_kernel_defs": sum(
            len(re.findall(rf"def {name}(?:_\d+)?\(", text)) for name in KERNEL_NAMES
        ),
        "modules": len(sources),
    }


def excerpt(title: str, sources: list[str]) -> str:
    parts = [f"# {title}"]
    for n, source in enumerate(sources):
        which = "forward" if n == 0 else "backward"
        kernels = inlined_kernels(source)
        parts += [
            f"\n## {which}: our kernels as Inductor copied them in" + ("" if kernels else ": none"),
            *kernels,
        ]
        parts += [
            f"\n## {which}: the generated call()",
            call_function(source) or "(no call() found)",
        ]
    return "\n".join(parts) + "\n"
