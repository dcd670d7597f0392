"""Read the structure of one generated kernel: its loops (C++) or its program layout (Triton), what it loads,
stores and reduces. Everything here is read from the kernel's text, so it follows whatever Inductor wrote.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

CPP_FOR = re.compile(
    r"for\s*\(\s*int64_t (?P<var>\w+)\s*=\s*(?:static_cast<int64_t>\()?(?P<start>-?\d+)L?\)?;"
    r"\s*\w+\s*<\s*(?:static_cast<int64_t>\()?(?P<end>[^;]+?)L?\)?;"
    r"\s*\w+\s*\+=\s*(?:static_cast<int64_t>\()?(?P<step>\d+)L?\)?\)"
)
POINTER = r"(?:in_out_ptr|in_ptr|out_ptr)\d+"
REDUCE_CPP = {
    "maximum": "max",
    "max_propagate_nan": "max",
    "minimum": "min",
    "min_propagate_nan": "min",
    "welford_combine": "Welford mean+variance",
    "sum_masked_reduce": "sum",
    "+": "sum",
}
REDUCE_TRITON = {
    "max2": "max",
    "tl.max": "max",
    "min2": "min",
    "tl.min": "min",
    "tl.sum": "sum",
    "welford": "Welford mean+variance",
    "tl.reduce": "reduce",
}


@dataclass
class Loop:
    var: str
    start: int
    end: str  # a number, or a symbolic size under dynamic shapes
    step: int
    parallel: bool  # under `#pragma omp for`: its iterations are split across threads
    depth: int
    loads: list[str] = field(default_factory=list)
    stores: list[str] = field(default_factory=list)
    reduces: list[str] = field(default_factory=list)

    def describe(self) -> str:
        head = f"{'omp parallel ' if self.parallel else ''}for {self.var} in [{self.start}, {self.end})"
        if self.step > 1:
            head += f" step {self.step} (SIMD: {self.step} elements at once, a tail for the rest)"
        body = [
            f"loads {', '.join(self.loads)}" if self.loads else "",
            f"reduces {', '.join(self.reduces)}" if self.reduces else "",
            f"stores {', '.join(self.stores)}" if self.stores else "",
        ]
        return (
            "  " * self.depth + head + (": " + "; ".join(b for b in body if b) if any(body) else "")
        )


def cpp_loops(source: str) -> list[Loop]:
    """The loop nest of a C++ kernel in source order, each loop with the memory accesses of its own body lines."""
    loops: list[Loop] = []
    open_loops: list[
        list
    ] = []  # [loop, brace depth at its `for` line, whether its body has been entered]
    depth, pending_omp = 0, False
    for line in source.splitlines():
        stripped = line.strip()
        if stripped.startswith("#pragma omp for"):
            pending_omp = True
        match = CPP_FOR.search(stripped)
        if match and not match["var"].endswith(
            "_tail"
        ):  # a `_tail` loop finishes a SIMD loop's last lanes
            loop = Loop(
                match["var"],
                int(match["start"]),
                match["end"].strip(),
                int(match["step"]),
                pending_omp,
                len(open_loops),
            )
            loops.append(loop)
            open_loops.append([loop, depth, False])
            pending_omp = False
        elif open_loops:
            record_access(open_loops[-1][0], stripped)
        depth += line.count("{") - line.count("}")
        for entry in open_loops:
            entry[2] = entry[2] or depth > entry[1]
        while open_loops and open_loops[-1][2] and depth <= open_loops[-1][1]:
            open_loops.pop()
    return loops


def record_access(loop: Loop, line: str) -> None:
    for ptr in re.findall(rf"(?:loadu|from)\(({POINTER})|= ({POINTER})\[", line):
        name = ptr[0] or ptr[1]
        if name not in loop.loads:
            loop.loads.append(name)
    for ptr in re.findall(rf"\.store\(({POINTER})|^({POINTER})\[[^\]]*\]\s*=", line):
        name = ptr[0] or ptr[1]
        if name not in loop.stores:
            loop.stores.append(name)
    if acc := re.match(r"(tmp_acc\d+)(?:_vec)?\s*=\s*(.*)", line):
        kind = next(
            (k for fn, k in REDUCE_CPP.items() if fn != "+" and fn in acc[2]),
            "sum" if "+" in acc[2] else "reduce",
        )
        entry = f"{kind} into {acc[1]}"
        if entry not in loop.reduces:
            loop.reduces.append(entry)


@dataclass
class TritonLayout:
    heuristic: str  # pointwise / reduction / persistent_reduction
    size_hints: str
    xnumel: str | None
    rnumel: str | None
    rblock: str | None  # a persistent reduction fixes the reduction block to cover the whole row
    looped: bool  # a looped reduction walks the row in R0_BLOCK chunks
    loads: list[str]
    stores: list[str]
    reduces: list[str]


def triton_layout(source: str) -> TritonLayout:
    def first(pattern):
        m = re.search(pattern, source)
        return m[1] if m else None

    heuristic = re.search(
        r"@triton_heuristics\.(\w+)\(\s*size_hints\s*=\s*(\{[^}]*\}|\[[^\]]*\])", source
    )
    reduces = []
    for fn, kind in REDUCE_TRITON.items():
        if re.search(
            rf"\b{re.escape(fn)}\(" if "." in fn else rf"(?:triton_helpers\.|\b){fn}\w*\(", source
        ):
            reduces.append(kind)
    return TritonLayout(
        heuristic=heuristic[1] if heuristic else "unknown",
        size_hints=heuristic[2] if heuristic else "",
        xnumel=first(r"\bxnumel\s*=\s*(\w+)"),
        rnumel=first(r"\br0?_?numel\s*=\s*(\w+)"),
        rblock=first(r"\bR0?_?BLOCK\s*:\s*tl\.constexpr\s*=\s*(\d+)"),
        looped=bool(re.search(r"for r0?_?offset in", source)),
        loads=sorted(set(re.findall(rf"tl\.load\(({POINTER})", source))),
        stores=sorted(set(re.findall(rf"tl\.store\(({POINTER})", source))),
        reduces=list(dict.fromkeys(reduces)),
    )
