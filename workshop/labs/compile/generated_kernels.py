"""Read Inductor's generated module back into a list of GeneratedKernel records: name, kind, fused aten ops,
source lines, each call's arguments with their byte sizes, and what the kernel reads and writes per call.

Inductor's output is a Python module. Each fused kernel is defined once at the top,
    cpp_fused_<ops>_<n> = async_compile.cpp_pybinding([...], r'''<C++>''')          (CPU)
    triton_<per|red|poi>_fused_<ops>_<n> = async_compile.triton('<name>', '''<Triton>''', ...)   (GPU)
often after comments `# Topologically Sorted Source Nodes: [...], Original ATen: [...]`, and called in `call()`:
    cpp_fused_..._3(buf17, primals_12, buf14, buf16)
    triton_per_fused_..._3.run(buf17, primals_12, 704, 22, stream=stream0)
between buffer allocations `buf14 = empty_strided_cpu((8, 4, 22, 1), (88, 22, 1, 704), torch.float32)`.
These formats drift between torch versions, so every piece is optional: a missing comment falls back to the
kernel's name (Inductor names a fused kernel after its aten ops), a missing size to "unknown".

Which lines of the MiniGPT's source each kernel came from (attach_source_lines):
Every FX node Dynamo records keeps the Python stack at the moment it was traced (`node.meta["stack_trace"]`),
and AOTAutograd copies it onto the aten-level nodes it makes (backward nodes get their forward node's line).
Two ways from a kernel to those nodes:
- Inductor wrote `Source Nodes: [scores, masked_fill, att]` above the kernel (Triton does): those are Dynamo
  graph node names, so we read their stack traces directly ("source nodes").
- Otherwise (Inductor's C++ kernels carry no such comment in torch 2.13) we match by op: the lines of the
  AOT graph nodes whose (original, undecomposed) aten op is one the kernel fuses ("op match"). Shape-only
  ops (view, transpose, ...) are left out when the kernel fuses real computation: they occur on most lines.
"""

from __future__ import annotations

import ast
import functools
import math
import re
from dataclasses import asdict, dataclass, field
from itertools import takewhile

import torch

from workshop.i18n import N_

DEFINITION = re.compile(r"^(?P<name>\w+) = async_compile\.(?P<how>\w+)\(", re.MULTILINE)
SOURCE_NODES = re.compile(
    r"Source Nodes: \[(?P<nodes>[^\]]*)\](?:, Original ATen: \[(?P<aten>[^\]]*)\])?"
)
KINDS = {  # prose, shown translated (the summaries' `_(kind)`); kernels.json keeps the English
    "triton_poi": N_("pointwise"),
    "triton_per": N_("persistent reduction"),
    "triton_red": N_("looped reduction"),
    "triton_tem": N_("template (e.g. matmul)"),
    "cpp": N_("C++ loop nest"),
}
OTHER_KIND = N_("other")
FROM_COMMENT, FROM_NAME = (
    N_("Original ATen comment"),
    N_("kernel name"),
)  # where fused_ops came from
ALLOC = re.compile(
    r"^\s*(\w+) = empty_strided\w*\(\((?P<shape>[^)]*)\), \([^)]*\), (?P<dtype>torch\.\w+)"
)
REINTERPRET = re.compile(r"reinterpret_tensor\((\w+), \((?P<shape>[^)]*)\)")
ASSERT = re.compile(r"assert_size_stride\((\w+), \((?P<shape>[^)]*)\)")
ALIAS = re.compile(r"^\s*(\w+) = (\w+); del \w+")


@dataclass
class GeneratedKernel:
    name: str
    graph: str  # "forward", "backward", ... (which generated module)
    kind: str  # one of KINDS' values
    fused_ops: list[str]  # aten ops, e.g. ["_softmax", "masked_fill", "mul"]
    ops_from: str  # "Original ATen comment" or "kernel name"
    source_nodes: list[str] = field(
        default_factory=list
    )  # Dynamo graph node names, when Inductor wrote them
    source_lines: list[str] = field(default_factory=list)  # "model.py:57  scores = ..."
    lines_from: str = (
        ""  # how source_lines were found: "source nodes" or "op match" (see attach_source_lines)
    )
    calls: int = 0  # call sites in one run of the graph
    arguments: list[dict] = field(default_factory=list)  # of the first call (call_arguments)
    source: str = ""  # the kernel's own C++ or Triton text

    @property
    def language(self) -> str:
        """'cpp' (Inductor's CPU code) or 'triton' (its GPU code)."""
        return "cpp" if self.name.startswith("cpp_") else "triton"

    def buffers(self, access: str) -> list[dict]:
        """The distinct buffer arguments the kernel reads (access="load") or writes ("store"): an in_out_ptr
        is both; a buffer passed twice counts once."""
        found = {a["name"]: a for a in self.arguments if access in a["role"]}
        return list(found.values())

    def traffic(self, access: str) -> int | None:
        """Bytes of the buffers it reads or writes per call (whole buffers); None when one size is unknown."""
        sizes = [a["nbytes"] for a in self.buffers(access)]
        return None if None in sizes else sum(sizes)

    def as_json(self, arguments: bool = True) -> dict:
        """kernels.json's entry; without `arguments` (their shapes give the bytes an exercise asks for)."""
        d = asdict(self)
        d.pop("source")
        if not arguments:
            d.pop("arguments")
        return d


def parse_kernels(code: str, graph: str) -> list[GeneratedKernel]:
    """Every kernel defined in one generated module, with its first call's arguments."""
    shapes = buffer_shapes(code)
    kernels = []
    for match in DEFINITION.finditer(code):
        name = match["name"]
        if not (name.startswith(("cpp_", "triton_"))):
            continue
        source = kernel_source(code, match.end())
        comments = SOURCE_NODES.search(comment_block_before(code, match.start()))
        aten = (
            [a.strip().removeprefix("aten.") for a in comments["aten"].split(",")]
            if comments and comments["aten"]
            else []
        )
        calls = re.findall(rf"^\s*{name}(?:\.run)?\((.*)\)\s*$", code, re.MULTILINE)
        kernels.append(
            GeneratedKernel(
                name=name,
                graph=graph,
                kind=next(
                    (kind for prefix, kind in KINDS.items() if name.startswith(prefix)), OTHER_KIND
                ),
                fused_ops=aten or ops_from_name(name),
                ops_from=FROM_COMMENT if aten else FROM_NAME,
                source_nodes=[n.strip() for n in comments["nodes"].split(",") if n.strip()]
                if comments
                else [],
                calls=len(calls),
                arguments=call_arguments(calls[0], pointer_params(source), shapes) if calls else [],
                source=source,
            )
        )
    return kernels


def kernel_source(code: str, start: int) -> str:
    """The text between the first pair of triple quotes after a definition: the kernel's C++ or Triton."""
    open_at = code.find("'''", start)
    close_at = code.find("'''", open_at + 3)
    return code[open_at + 3 : close_at] if open_at >= 0 and close_at > open_at else ""


def comment_block_before(code: str, start: int) -> str:
    """The run of `#` comment lines (blank lines allowed) right above position start."""
    above = reversed(code[:start].splitlines())  # nearest line first
    block = takewhile(lambda line: not line.strip() or line.strip().startswith("#"), above)
    return "\n".join(reversed([line for line in block if line.strip()]))


@functools.cache
def ops_from_name(kernel_name: str) -> list[str]:
    """'cpp_fused__softmax_bitwise_not_masked_fill_3' -> ['_softmax', 'bitwise_not', 'masked_fill'].

    Inductor joins the fused aten op names with '_', so the split is ambiguous; we pick the split into real
    aten op names (asked of torch.ops.aten) with the fewest pieces. Unknown remainders are kept as they are.
    """
    body = re.sub(r"_\d+$", "", kernel_name)
    body = body.split("_fused_", 1)[1] if "_fused_" in body else body
    words = body.split("_")  # '_softmax' gives an empty word before 'softmax'
    best: list[list[str] | None] = [[]] + [None] * len(
        words
    )  # best[i]: fewest ops covering words[:i]
    for end in range(1, len(words) + 1):
        for begin in range(end):
            piece = "_".join(words[begin:end])
            fewer = best[begin] is not None and (
                best[end] is None or len(best[begin]) + 1 < len(best[end])
            )
            if fewer and piece and hasattr(torch.ops.aten, piece):
                best[end] = best[begin] + [piece]
    return best[-1] if best[-1] is not None else [body]


C_TYPES = {
    "bool": "bool",
    "int64_t": "int64",
    "int32_t": "int32",
    "float": "float32",
    "double": "float64",
    "half": "float16",
    "bfloat16": "bfloat16",
}
TRITON_TYPES = {
    "i1": "bool",
    "i64": "int64",
    "i32": "int32",
    "fp32": "float32",
    "fp64": "float64",
    "fp16": "float16",
    "bf16": "bfloat16",
}


def pointer_params(source: str) -> list[tuple[str, str | None]]:
    """The kernel's parameters in order with their element dtype when the code states it:
    C++ `kernel(const bool* in_ptr0, ...)`, or Triton `def f(in_ptr0, ...)` plus its signature `'in_ptr0': '*i1'`."""
    if header := re.search(r'extern "C"[^(]*\(([^)]*)\)', source):
        params = [
            re.match(r"(?:const\s+)?([\w:]+)\s*\*?\s*(\w+)$", p.strip())
            for p in header[1].split(",")
        ]
        return [(m[2], C_TYPES.get(m[1].split("::")[-1])) for m in params if m]
    if header := re.search(r"@triton\.jit\s*\n\s*def \w+\(([^)]*)\)", source):
        names = [p.split(":")[0].strip() for p in header[1].split(",") if p.strip()]
        types = dict(re.findall(r"'(\w+)': '\*(\w+)'", source))
        return [(n, TRITON_TYPES.get(types.get(n, ""))) for n in names]
    return []


def buffer_shapes(code: str) -> dict[str, tuple[list[int], str]]:
    """name -> (shape, dtype) for every buffer the wrapper allocates, views or checks (inputs), following reuse."""
    shapes: dict[str, tuple[list[int], str]] = {}
    for line in code.splitlines():
        if m := ALLOC.match(line):
            shapes[m[1]] = (literal_shape(m["shape"]), m["dtype"].removeprefix("torch."))
        elif m := ALIAS.match(line):
            if m[2] in shapes:
                shapes[m[1]] = shapes[m[2]]
        elif (m := re.match(r"^\s*(\w+) = " + REINTERPRET.pattern, line)) and m[2] in shapes:
            shapes[m[1]] = (literal_shape(m["shape"]), shapes[m[2]][1])
        elif m := ASSERT.search(line):
            shapes.setdefault(
                m[1], (literal_shape(m["shape"]), None)
            )  # an input: dtype from the kernel's types
    return shapes


def literal_shape(text: str) -> list[int] | None:
    try:
        value = ast.literal_eval(
            f"({text},)" if text.strip() and not text.strip().endswith(",") else f"({text})"
        )
        return [int(v) for v in value]
    except (ValueError, SyntaxError, TypeError):  # symbolic sizes (s0, 8*s1) under dynamic shapes
        return None


def call_arguments(call: str, params: list[tuple[str, str | None]], shapes: dict) -> list[dict]:
    """One call's arguments, each with its role (from the kernel parameter it binds to) and its size: {"name": the
    wrapper's buffer name (buf17, primals_12) or a literal (704), "role": "load", "store", "load+store" (an
    in_out_ptr), or "" for sizes and scalars, "shape", "dtype", "nbytes": None where unknown}."""
    args = []
    for i, text in enumerate(top_level_arguments(call)):
        param, param_dtype = params[i] if i < len(params) else ("", None)
        role = {"in_out_ptr": "load+store", "in_ptr": "load", "out_ptr": "store"}.get(
            re.sub(r"\d+$", "", param), ""
        )
        arg = {"name": text, "role": role, "shape": None, "dtype": None, "nbytes": None}
        view = REINTERPRET.match(text)
        base = view[1] if view else text
        if base in shapes:
            shape, dtype = shapes[base]
            arg["shape"] = literal_shape(view["shape"]) if view else shape
            arg["dtype"] = dtype or param_dtype
            if arg["shape"] is not None and arg["dtype"]:
                itemsize = torch.empty((), dtype=getattr(torch, arg["dtype"])).element_size()
                arg["nbytes"] = math.prod(arg["shape"]) * itemsize
        args.append(arg)
    return args


def top_level_arguments(call: str) -> list[str]:
    """'buf1, reinterpret_tensor(buf2, (8, 4), (4, 1), 0), 704, stream=stream0' -> the positional arguments,
    split at the commas outside brackets; keywords (stream=...) dropped."""
    parts, depth, current = [], 0, ""
    for ch in call:
        depth += (ch in "([") - (ch in ")]")
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    parts.append(current.strip())
    return [p for p in parts if p and "=" not in p.split("(")[0]]


EXTERN_MATMUL = re.compile(r"\bextern_kernels\.(?:mm|addmm|bmm|baddbmm)\(")


def extern_matmul_calls(code: str) -> int:
    """Matmul calls the generated module hands to a library (MKL/oneDNN, cuBLAS) instead of generating them."""
    return len(EXTERN_MATMUL.findall(code))


FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in \w+\n\s*(?P<code>[^\n]*)')
SHAPE_ONLY = {
    "view",
    "_unsafe_view",
    "reshape",
    "transpose",
    "permute",
    "t",
    "expand",
    "slice",
    "clone",
    "select",
    "unsqueeze",
    "squeeze",
    "alias",
    "detach",
    "arange",
}
BY_SOURCE_NODES, BY_OP_MATCH = (
    N_("source nodes"),
    N_("op match"),
)  # kernel.lines_from, shown translated
MODEL_DIR = "workshop/minigpt/"  # the code whose lines we want; frames in torch itself are skipped


def source_line(node: torch.fx.Node) -> str | None:
    """'model.py:57  scores = ...': the innermost frame of the node's stack trace inside the MiniGPT package."""
    frames = [
        m
        for m in FRAME.finditer(node.meta.get("stack_trace") or "")
        if MODEL_DIR in m["file"].replace("\\", "/")
    ]
    if not frames:
        return None
    last = frames[-1]
    return f"{last['file'].rsplit('/', 1)[-1]}:{last['line']}  {last['code'].strip()}"


def op_name(node: torch.fx.Node) -> str | None:
    """The aten op a node stands for: the op before decomposition (meta['original_aten'], the name Inductor puts
    in kernel names: a softmax decomposed into amax/sub/exp/sum/div is still `_softmax`), else its own target."""
    if node.op != "call_function":
        return None
    for target in (node.meta.get("original_aten"), node.target):
        if isinstance(target, torch._ops.OpOverload):
            return target._overloadpacket.__name__
    return getattr(node.target, "__name__", None)


def attach_source_lines(
    kernels: list[GeneratedKernel],
    dynamo: list[torch.fx.GraphModule],
    aot: list[torch.fx.GraphModule],
) -> None:
    """Fill kernel.source_lines (sorted, unique) in place, and record how they were found in kernel.lines_from."""
    by_name = {n.name: source_line(n) for gm in dynamo for n in gm.graph.nodes}
    by_op: dict[str, set[str]] = {}
    for gm in aot:
        for node in gm.graph.nodes:
            if (op := op_name(node)) and (line := source_line(node)):
                by_op.setdefault(op, set()).add(line)
    for k in kernels:
        if k.source_nodes:
            lines = {by_name.get(n) for n in k.source_nodes} - {None}
            k.lines_from = BY_SOURCE_NODES
        else:
            ops = [op for op in k.fused_ops if op not in SHAPE_ONLY] or k.fused_ops
            lines = set().union(*(by_op.get(op, set()) for op in ops))
            k.lines_from = BY_OP_MATCH
        k.source_lines = sorted(lines, key=line_number)


def line_number(line: str) -> tuple[str, int]:
    file, _, rest = line.partition(":")
    return file, int(rest.split()[0]) if rest.split() and rest.split()[0].isdigit() else 0
