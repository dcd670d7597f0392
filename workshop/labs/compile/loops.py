"""Read the structure of one generated kernel: its loops (C++) or its program layout (Triton), what it loads,
stores and reduces, how it reduces (none / persistent / looped) and its launch grid. Everything here is read
from the kernel's text, so it follows whatever Inductor wrote.

The launch grid, as the indices a launch spreads over (what the learner reads in the code, before any block
size): on the CPU, for each `#pragma omp for`, the iterations of the loop(s) it splits across threads; on the
GPU, xnumel (and ynumel for a 2-D grid): Triton then runs cdiv(xnumel, XBLOCK) programs, XBLOCK being chosen
at run time by Inductor's heuristics.
"""

from __future__ import annotations

import math
import re

CPP_FOR = re.compile(
    r"for\s*\(\s*int64_t (?P<var>\w+)\s*=\s*(?:static_cast<int64_t>\()?(?P<start>-?\d+)L?\)?;"
    r"\s*\w+\s*<\s*(?:static_cast<int64_t>\()?(?P<end>[^;]+?)L?\)?;"
    r"\s*\w+\s*\+=\s*(?:static_cast<int64_t>\()?(?P<step>\d+)L?\)?\)"
)
POINTER = r"(?:in_out_ptr|in_ptr|out_ptr)\d+"
REDUCE_CPP = {
    "maximum": "max",
    "max_propagate_nan": "max",
    "max_masked_reduce": "max",  # over a row's last, partial vector
    "minimum": "min",
    "min_propagate_nan": "min",
    "min_masked_reduce": "min",
    "welford_combine": "Welford mean+variance",
    "sum_masked_reduce": "sum",
    "cascade_sum_combine": "sum",  # a float sum over more than 4096 values, in cascade for precision
    "cascade_sum_final": "sum",
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


def extent(loop: dict) -> int | None:
    """How many indices a loop (cpp_loops') covers (None when its bound is symbolic)."""
    return int(loop["end"]) - loop["start"] if loop["end"].isdigit() else None


def cpp_loops(source: str) -> list[dict]:
    """The loop nest of a C++ kernel in source order, each loop with the memory accesses of its own body lines."""
    loops: list[dict] = []
    open_loops: list[
        list
    ] = []  # [loop, brace depth at its `for` line, whether its body was entered]
    depth = 0
    pragma = (
        0  # loops the last `#pragma omp for [collapse(n)]` spans, until its first loop takes them
    )
    claimed = 0  # loops still to be marked parallel
    for line in source.splitlines():
        stripped = line.strip()
        if stripped.startswith("#pragma omp for"):
            collapse = re.search(r"collapse\((\d+)\)", stripped)
            pragma = claimed = int(collapse[1]) if collapse else 1
        match = CPP_FOR.search(stripped)
        if match and not match["var"].endswith("_tail"):  # a `_tail` loop ends a SIMD loop's lanes
            loop = {
                "var": match["var"],
                "start": int(match["start"]),
                "end": match["end"].strip(),  # a number, or a symbolic size under dynamic shapes
                # > 1: SIMD, `step` elements at once (a masked or scalar tail for the rest)
                "step": int(match["step"]),
                # under `#pragma omp for`: its iterations are split across threads
                "parallel": claimed > 0,
                "depth": len(open_loops),
                # on the loop a `#pragma omp for [collapse(n)]` stands on: how many loops it spans
                "omp_for": pragma,
                # the memory accesses of its own body lines (record_access)
                "loads": [],
                "stores": [],
                "reduces": [],
            }
            loops.append(loop)
            open_loops.append([loop, depth, False])
            pragma, claimed = 0, max(claimed - 1, 0)
        elif open_loops:
            record_access(open_loops[-1][0], stripped)
        depth += line.count("{") - line.count("}")
        for entry in open_loops:
            entry[2] = entry[2] or depth > entry[1]
        while open_loops and open_loops[-1][2] and depth <= open_loops[-1][1]:
            open_loops.pop()
    return loops


def cpp_grid(loops: list[dict]) -> list[int | None]:
    """The CPU's launch grid: for each `#pragma omp for`, the indices it splits across threads (the product of
    the loops a collapse(n) spans), in source order."""
    spans = [
        [extent(inner) for inner in loops[i : i + loop["omp_for"]]] for i, loop in enumerate(loops)
    ]
    return [
        None if None in extents else math.prod(extents)
        for loop, extents in zip(loops, spans, strict=True)
        if loop["omp_for"]
    ]


def record_access(loop: dict, line: str) -> None:
    """Add to the loop's loads, stores and reduces what one line of its body loads, stores and accumulates, each
    name once, in the order first met."""
    loads = [a or b for a, b in re.findall(rf"(?:loadu|from)\(({POINTER})|= ({POINTER})\[", line)]
    stores = [
        a or b for a, b in re.findall(rf"\.store\(({POINTER})|^({POINTER})\[[^\]]*\]\s*=", line)
    ]
    reduces = []
    if acc := re.match(r"(tmp_acc\d+)(?:_vec)?\s*=\s*(.*)", line):
        kind = next(
            (k for fn, k in REDUCE_CPP.items() if fn != "+" and fn in acc[2]),
            "sum" if "+" in acc[2] else "reduce",
        )
        reduces = [f"{kind} into {acc[1]}"]
    for seen, found in (
        (loop["loads"], loads),
        (loop["stores"], stores),
        (loop["reduces"], reduces),
    ):
        seen.extend(name for name in dict.fromkeys(found) if name not in seen)


def triton_layout(source: str) -> dict:
    """A Triton kernel's program layout, read from its text: its heuristic (pointwise / reduction /
    persistent_reduction), its size hints, xnumel, ynumel (a 2-D grid: tiled pointwise kernels), rnumel, rblock
    (a persistent reduction fixes the reduction block to cover the whole row), whether it is looped (a looped
    reduction walks the row in R0_BLOCK chunks), and the pointers it loads and stores, what it reduces."""

    def first(pattern):
        m = re.search(pattern, source)
        return m[1] if m else None

    heuristic = re.search(
        r"@triton_heuristics\.(\w+)\(\s*size_hints\s*=\s*(\{[^}]*\}|\[[^\]]*\])", source
    )
    reduces = [
        kind
        for fn, kind in REDUCE_TRITON.items()
        if re.search(
            rf"\b{re.escape(fn)}\(" if "." in fn else rf"(?:triton_helpers\.|\b){fn}\w*\(", source
        )
    ]
    return {
        "heuristic": heuristic[1] if heuristic else "unknown",
        "size_hints": heuristic[2] if heuristic else "",
        "xnumel": first(r"\bxnumel\s*=\s*(\w+)"),
        "ynumel": first(r"\bynumel\s*=\s*(\w+)"),
        "rnumel": first(r"\br0?_?numel\s*=\s*(\w+)"),
        "rblock": first(r"\bR0?_?BLOCK\s*:\s*tl\.constexpr\s*=\s*(\d+)"),
        "looped": bool(re.search(r"for r0?_?offset in", source)),
        "loads": sorted(set(re.findall(rf"tl\.load\(({POINTER})", source))),
        "stores": sorted(set(re.findall(rf"tl\.store\(({POINTER})", source))),
        "reduces": list(dict.fromkeys(reduces)),
    }


REDUCTION_KINDS = ("none", "persistent", "looped")


def kernel_structure(source: str, language: str) -> dict:
    """What one kernel's code says about how it runs:
    - reduction_kind: one of REDUCTION_KINDS;
    - reductions: what it reduces: "max", "sum", "Welford mean+variance", ...;
    - grid: the launch grid's extents (module docstring); None where symbolic;
    - C++ only: loops (cpp_loops); omp_regions, its `#pragma omp parallel` regions; simd_widths, elements per
      vectorized loop step; folds_lanes, whether a vector accumulator is folded into one number
      (`vec_reduce_all`); reread, the pointers that more than one loop loads from;
    - Triton only: layout (triton_layout)."""
    if language == "cpp":
        loops = cpp_loops(source)
        reductions = [r.split(" into ")[0] for loop in loops for r in loop["reduces"]]
        return {
            # C++ keeps no row in registers: a reduction is a loop with an accumulator (`tmp_acc`), and the
            # next loop reads the row again, which is what Triton calls a looped reduction.
            "reduction_kind": "looped" if reductions else "none",
            "reductions": list(dict.fromkeys(reductions)),
            "grid": cpp_grid(loops),
            "loops": loops,
            "omp_regions": len(re.findall(r"#pragma omp parallel(?! for)", source)),
            "simd_widths": sorted({loop["step"] for loop in loops if loop["step"] > 1}),
            "folds_lanes": "vec_reduce_all" in source,
            "reread": sorted(
                {
                    p
                    for loop in loops
                    for p in loop["loads"]
                    if sum(p in other["loads"] for other in loops) > 1
                }
            ),
        }
    t = triton_layout(source)
    kind = "looped" if t["looped"] else "persistent" if t["rblock"] else "none"
    return {
        "reduction_kind": kind,
        "reductions": t["reduces"],
        "grid": [
            int(n) if n.isdigit() else None for n in (t["xnumel"], t["ynumel"]) if n is not None
        ],
        "layout": t,
    }
