"""Issue 41, probe 1: the 2-3% that Liger's softmax gains over ours at the judged mid shapes (4096 rows of 4,096 to
16,384) in the benchmark's CUDA-graph replay, where single launches under Nsight Compute (caches flushed) are level.

For each shape and direction, every contender below is timed three ways, in rounds (each round every contender once,
the order turned by one each round):
- "bench": exactly as benchmark.graph_ms times it: a CUDA graph of call(0), ..., call(n - 1) back to back on the
  benchmark's rotating inputs (benchmark.rotating_inputs: n input sets, >= 256 MiB), replayed REPLAYS times with
  events around each replay, the median over n. The graph is captured once per contender and replayed in each
  round; benchmark.graph_ms itself (capture and all) is also called once per contender ("graph_ms").
- "scrubbed": a graph of call(0) alone, each replay after a read-only pass over 512 MiB (torch.sum), so that the call
  starts with an L2 that holds neither its own input nor any dirty line: a single launch, as Nsight Compute's
  flushed-cache launch sees it, but with graph launch and event timing.
- "rotate4": as "bench", over 4 x as many input sets (>= 1 GiB), for some contenders.

Contenders: the benchmark's own ("ours", "liger", "copy" = torch.neg, the elementwise copy of the benchmark); copies
of our one-pass kernels (softmax_kernels._fwd_one_pass, _bwd_one_pass) with cache hints as constexpr parameters and
our plan (softmax_launch.one_pass_plan), or Liger's num_warps (liger_kernel.ops.utils.calculate_settings); and a copy
of Liger's single-block kernels without its cache modifiers. Each call allocates its output with torch.empty_like, as
the op and Liger do.

Usage: replay_probe.py warm I   (compile shape I's kernels: run every contender once)
       replay_probe.py time OUT.json
"""

import json
import statistics
import sys
import time

import torch
import triton
import triton.language as tl

from workshop.labs.custom_op.bench import benchmark
from workshop.ops import softmax_launch

SHAPES = [
    (torch.float32, (4096, 4096)),
    (torch.float32, (4096, 8192)),
    (torch.float32, (4096, 16384)),
    (torch.bfloat16, (4096, 4096)),
    (torch.bfloat16, (4096, 8192)),
    (torch.bfloat16, (4096, 16384)),
]
ROUNDS = 5
SCRUB_BYTES = 512 * 2**20


@triton.jit
def _acc(x):
    if x.dtype == tl.float64:
        return x
    else:
        return x.to(tl.float32)


@triton.jit
def fwd_hinted(
    x_ptr,
    y_ptr,
    n_rows,
    n_cols,
    x_row_stride,
    y_row_stride,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    ALIGN: tl.constexpr,
    LOAD_CM: tl.constexpr,
    LOAD_EV: tl.constexpr,
    STORE_CM: tl.constexpr,
):
    """softmax_kernels._fwd_one_pass, line for line, with the load's cache modifier and eviction policy and the
    store's cache modifier as parameters ("" = what _fwd_one_pass emits)."""
    n_cols = n_cols // ALIGN * ALIGN
    x_row_stride, y_row_stride = x_row_stride // ALIGN * ALIGN, y_row_stride // ALIGN * ALIGN
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]
    rows = rows.to(tl.int64)
    cols = tl.arange(0, BLOCK_N)[None, :]
    mask = (rows < n_rows) & (cols < n_cols)
    x = _acc(
        tl.load(
            x_ptr + rows * x_row_stride + cols,
            mask=mask,
            other=-float("inf"),
            cache_modifier=LOAD_CM,
            eviction_policy=LOAD_EV,
        )
    )
    e = tl.exp(x - tl.max(x, axis=1)[:, None])
    y = e / tl.sum(e, axis=1)[:, None]
    tl.store(
        y_ptr + rows * y_row_stride + cols,
        y.to(y_ptr.dtype.element_ty),
        mask=mask,
        cache_modifier=STORE_CM,
    )


@triton.jit
def bwd_hinted(
    y_ptr,
    dy_ptr,
    dx_ptr,
    n_rows,
    n_cols,
    y_row_stride,
    dy_row_stride,
    dx_row_stride,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    ALIGN: tl.constexpr,
    Y_CM: tl.constexpr,
    DY_CM: tl.constexpr,
    LOAD_EV: tl.constexpr,
    STORE_CM: tl.constexpr,
):
    """softmax_kernels._bwd_one_pass, line for line, with the hints as parameters."""
    n_cols = n_cols // ALIGN * ALIGN
    y_row_stride, dy_row_stride = y_row_stride // ALIGN * ALIGN, dy_row_stride // ALIGN * ALIGN
    dx_row_stride = dx_row_stride // ALIGN * ALIGN
    rows = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)[None, :]
    mask = (rows < n_rows) & (cols < n_cols)
    y = _acc(
        tl.load(
            y_ptr + rows * y_row_stride + cols,
            mask=mask,
            other=0.0,
            cache_modifier=Y_CM,
            eviction_policy=LOAD_EV,
        )
    )
    dy = _acc(
        tl.load(
            dy_ptr + rows * dy_row_stride + cols,
            mask=mask,
            other=0.0,
            cache_modifier=DY_CM,
            eviction_policy=LOAD_EV,
        )
    )
    dx = y * (dy - tl.sum(dy * y, axis=1)[:, None])
    tl.store(
        dx_ptr + rows * dx_row_stride + cols,
        dx.to(dx_ptr.dtype.element_ty),
        mask=mask,
        cache_modifier=STORE_CM,
    )


@triton.jit
def liger_fwd_plain(Y_ptr, Y_row_stride, X_ptr, X_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    """liger_kernel.ops.softmax._softmax_single_block_forward_kernel without its cache modifiers (.ca load, .cs
    store)."""
    row_id = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols
    x = tl.load(X_ptr + row_id * X_row_stride + offs, mask=mask, other=-float("inf"))
    m = tl.max(x, axis=0)
    e = tl.exp(x - m)
    d = tl.sum(e, axis=0)
    y = e / d
    tl.store(Y_ptr + row_id * Y_row_stride + offs, y, mask=mask)


@triton.jit
def liger_bwd_plain(
    dy_ptr, dy_stride, y_ptr, y_stride, dx_ptr, dx_stride, n_cols, BLOCK_SIZE: tl.constexpr
):
    """liger_kernel.ops.softmax._softmax_single_block_backward_kernel without its cache modifiers (.ca load of y,
    .wb store)."""
    row_id = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols
    dy = tl.load(dy_ptr + row_id * dy_stride + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + row_id * y_stride + offs, mask=mask, other=0.0)
    dot = tl.sum(dy * y, axis=0)
    dx = y * (dy - dot)
    tl.store(dx_ptr + row_id * dx_stride + offs, dx, mask=mask)


def liger_warps(n_cols: int) -> int:
    from liger_kernel.ops.utils import calculate_settings

    return calculate_settings(n_cols)[1]


# name: (load cache modifier, load eviction policy, store cache modifier, Liger's warps?)
FWD_VARIANTS = {
    "ours kernel copy": ("", "", "", False),
    "ours + .cs store": ("", "", ".cs", False),
    "ours + liger hints (.ca load, .cs store)": (".ca", "", ".cs", False),
    "ours + evict_first load + .cs store": ("", "evict_first", ".cs", False),
    "ours + evict_first load": ("", "evict_first", "", False),
    "ours + liger warps": ("", "", "", True),
    "ours + liger hints + liger warps": (".ca", "", ".cs", True),
}
# name: (y's cache modifier, dy's, load eviction policy, store cache modifier, Liger's warps?)
BWD_VARIANTS = {
    "ours kernel copy": ("", "", "", "", False),
    "ours + liger hints (.ca y, .wb store)": (".ca", "", "", ".wb", False),
    "ours + .cs store": ("", "", "", ".cs", False),
    "ours + evict_first loads + .cs store": ("", "", "evict_first", ".cs", False),
    "ours + evict_first loads": ("", "", "evict_first", "", False),
    "ours + liger warps": ("", "", "", "", True),
}
ROTATE4 = ("ours", "liger", "copy")  # and the best hinted variant, picked per direction below


def contenders(inputs: dict, dtype, shape) -> dict:
    """{direction: {name: call(i)}}."""
    from liger_kernel.ops.softmax import calculate_settings

    xs, ys, dys = inputs["x"], inputs["y"], inputs["dy"]
    n_rows, n_cols = shape
    itemsize = dtype.itemsize
    align = softmax_launch.alignment(n_cols)
    fgrid, fconst = softmax_launch.one_pass_plan(n_rows, n_cols, align, itemsize)
    bgrid, bconst = softmax_launch.one_pass_plan(n_rows, n_cols, align, itemsize, backward=True)
    lblock, lwarps = calculate_settings(n_cols)
    ours = benchmark.contenders(inputs, dtype, ["liger"])
    out = {"fwd": dict(ours["fwd"]), "bwd": dict(ours["bwd"])}
    fpairs, bpairs = inputs["copy"]["fwd"], inputs["copy"]["bwd"]
    out["fwd"]["copy"] = lambda i: torch.neg(fpairs[i][0], out=fpairs[i][1])
    out["bwd"]["copy"] = lambda i: torch.neg(bpairs[i][0], out=bpairs[i][1])

    def fwd_variant(lcm, lev, scm, lw):
        const = dict(fconst, num_warps=lwarps) if lw else fconst

        def call(i):
            x = xs[i]
            y = torch.empty_like(x)
            fwd_hinted[fgrid](x, y, n_rows, n_cols, n_cols, n_cols, **const, LOAD_CM=lcm, LOAD_EV=lev, STORE_CM=scm)
            return y

        return call

    def bwd_variant(ycm, dycm, lev, scm, lw):
        const = dict(bconst, num_warps=lwarps) if lw else bconst

        def call(i):
            y, dy = ys[i], dys[i]
            dx = torch.empty_like(y)
            bwd_hinted[bgrid](
                y, dy, dx, n_rows, n_cols, n_cols, n_cols, n_cols, **const, Y_CM=ycm, DY_CM=dycm, LOAD_EV=lev, STORE_CM=scm
            )
            return dx

        return call

    for name, v in FWD_VARIANTS.items():
        out["fwd"][name] = fwd_variant(*v)
    for name, v in BWD_VARIANTS.items():
        out["bwd"][name] = bwd_variant(*v)

    def liger_fwd(i):
        x = xs[i]
        y = torch.empty_like(x)
        liger_fwd_plain[(n_rows,)](y, n_cols, x, n_cols, n_cols, BLOCK_SIZE=lblock, num_warps=lwarps)
        return y

    def liger_bwd(i):
        y, dy = ys[i], dys[i]
        dx = torch.empty_like(dy)
        liger_bwd_plain[(n_rows,)](dy, n_cols, y, n_cols, dx, n_cols, n_cols, BLOCK_SIZE=lblock, num_warps=lwarps)
        return dx

    out["fwd"]["liger without hints"] = liger_fwd
    out["bwd"]["liger without hints"] = liger_bwd
    return out


def capture(call, n: int):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(n):
            call(i)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(n):
            call(i)
    return graph


def replay_ms(graph, n: int, scrub=None) -> float:
    """benchmark.graph_ms's timing of a captured graph: REPLAYS replays, each between two events, median / n;
    with `scrub`, a read of that tensor before each replay (outside the events)."""
    times = []
    for _ in range(benchmark.REPLAYS):
        if scrub is not None:
            scrub.sum()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / n)
    return statistics.median(times)


def check(out: dict, inputs: dict) -> dict:
    """max |variant - torch| on input set 0, per direction and name (each variant must compute the same thing)."""
    x, y, dy = inputs["x"][0], inputs["y"][0], inputs["dy"][0]
    ref = {
        "fwd": y.float(),
        "bwd": torch.ops.aten._softmax_backward_data(dy, y, -1, y.dtype).float(),
    }
    errors = {}
    for d, fns in out.items():
        for name, fn in fns.items():
            if name == "copy":
                continue
            errors[f"{d} {name}"] = (fn(0).float() - ref[d]).abs().max().item()
    return errors


def warm(index: int) -> None:
    dtype, shape = SHAPES[index]
    inputs = benchmark.rotating_inputs(shape, dtype)
    for fns in contenders(inputs, dtype, shape).values():
        for fn in fns.values():
            fn(0)
    torch.cuda.synchronize()
    print(f"warm {index} {dtype} {shape} done", flush=True)


def gbps(moved, ms):
    return moved / (ms * 1e-3) / 1e9 if ms else None


def time_all(path: str) -> None:
    doc = {
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "replays": benchmark.REPLAYS,
        "rounds": ROUNDS,
        "rows": [],
    }
    scrub = torch.randn(SCRUB_BYTES // 4, device="cuda")
    started = time.time()
    for dtype, shape in SHAPES:
        numel = shape[0] * shape[1]
        moved = {"fwd": 2 * numel * dtype.itemsize, "bwd": 3 * numel * dtype.itemsize}
        inputs = benchmark.rotating_inputs(shape, dtype)
        n = inputs["n"]
        fns = contenders(inputs, dtype, shape)
        row = {
            "dtype": str(dtype)[6:],
            "shape": list(shape),
            "input_sets": n,
            "errors": check(fns, inputs),
            "fwd": {},
            "bwd": {},
        }
        for d, calls in fns.items():
            names = list(calls)
            graph_ms = {name: benchmark.graph_ms(calls[name], n) for name in names}
            graphs = {name: capture(calls[name], n) for name in names}
            ones = {name: capture(calls[name], 1) for name in names}
            bench = {name: [] for name in names}
            scrubbed = {name: [] for name in names}
            for r in range(ROUNDS):
                order = names[r % len(names):] + names[: r % len(names)]
                for name in order:
                    bench[name].append(replay_ms(graphs[name], n))
                    scrubbed[name].append(replay_ms(ones[name], 1, scrub))
            for name in names:
                row[d][name] = {
                    "graph_ms_gbps": gbps(moved[d], graph_ms[name]),
                    "bench_gbps": [gbps(moved[d], ms) for ms in bench[name]],
                    "scrubbed_gbps": [gbps(moved[d], ms) for ms in scrubbed[name]],
                    "bench_vs_liger": [b / a for a, b in zip(bench[name], bench["liger"], strict=True)],
                    "scrubbed_vs_liger": [b / a for a, b in zip(scrubbed[name], scrubbed["liger"], strict=True)],
                }
            del graphs, ones
        # rotate4: 4 x the input sets
        big = benchmark.ROTATE_BYTES
        benchmark.ROTATE_BYTES = 4 * big
        try:
            inputs4 = benchmark.rotating_inputs(shape, dtype)
        finally:
            benchmark.ROTATE_BYTES = big
        fns4 = contenders(inputs4, dtype, shape)
        n4 = inputs4["n"]
        row["input_sets_rotate4"] = n4
        for d, calls in fns4.items():
            best = max(
                (name for name in calls if name.startswith("ours +")),
                key=lambda name: statistics.median(row[d][name]["bench_gbps"]),
            )
            names = [*ROTATE4, best]
            graphs = {name: capture(calls[name], n4) for name in names}
            times = {name: [] for name in names}
            for r in range(ROUNDS):
                for name in names[r % len(names):] + names[: r % len(names)]:
                    times[name].append(replay_ms(graphs[name], n4))
            for name in names:
                row[d][name]["rotate4_gbps"] = [gbps(moved[d], ms) for ms in times[name]]
                row[d][name]["rotate4_vs_liger"] = [
                    b / a for a, b in zip(times[name], times["liger"], strict=True)
                ]
            del graphs
        del inputs, inputs4, fns, fns4
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        doc["rows"].append(row)
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
        print(f"{row['dtype']} {shape} done at {time.time() - started:.0f} s", flush=True)
    summary(doc)


def summary(doc: dict) -> None:
    """A table per direction: median GB/s over the rounds, bench / scrubbed / rotate4, and ours / liger."""
    med = statistics.median
    for row in doc["rows"]:
        print(f"\n{row['dtype']} {row['shape']} (input sets {row['input_sets']}, rotate4 {row.get('input_sets_rotate4')})")
        for d in ("fwd", "bwd"):
            for name, v in row[d].items():
                r4 = v.get("rotate4_gbps")
                print(
                    f"  {d} {name:42s} bench {med(v['bench_gbps']):7.1f} [{min(v['bench_gbps']):.0f}-{max(v['bench_gbps']):.0f}]"
                    f" /liger {med(v['bench_vs_liger']):.3f}  scrubbed {med(v['scrubbed_gbps']):7.1f} /liger {med(v['scrubbed_vs_liger']):.3f}"
                    + (f"  rot4 {med(r4):7.1f} /liger {med(v['rotate4_vs_liger']):.3f}" if r4 else "")
                )
        bad = {k: e for k, e in row["errors"].items() if not e < 2e-2}
        print("  max errors:", max(row["errors"].values()), "over 2e-2:", bad)


if __name__ == "__main__":
    if sys.argv[1] == "warm":
        warm(int(sys.argv[2]))
    else:
        time_all(sys.argv[2])
