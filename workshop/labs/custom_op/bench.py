"""`python -m workshop bench custom_op [--out DIR]`: GB/s of our softmax, forward and backward, on a GPU.

Against torch.softmax (and aten._softmax_backward_data), the same under torch.compile (Inductor's kernels), and a
device copy of the same number of bytes: the practical bandwidth ceiling. A softmax reads and writes each
element once (2 x numel x itemsize bytes); its backward reads y and dy and writes dx (3 x numel x itemsize).

Timing: device time, from replaying a CUDA graph of back-to-back calls, each on its own inputs, rotating through
at least ROTATE_BYTES so that no input is still in the 50 MB L2 when its turn comes (HBM bandwidth, not L2).
A graph leaves out the CPU's cost of launching; every contender is timed the same way. That cost is real in
eager mode, and large for a Python-registered op, so it is measured too: "ours_eager" is the op called from
Python, timed by triton.testing.do_bench (which empties L2 before each call). Under torch.compile the op's kernel
is launched from Inductor's code, without that cost. Writes custom_op_bench.json (after every shape),
custom_op_bench.png and custom_op_bench.md (the targets, met or missed, shape by shape) into DIR.
"""

import math
import platform
import statistics
import time
from pathlib import Path

import torch

from workshop import atomic

SHAPES = (
    [(bt, 600) for bt in (4096, 32768, 262144)]  # the LM head's logits, (B*T, V)
    + [(4096, 2**k) for k in range(8, 16)]  # (4096, N), N = 256 ... 32768
    + [(256, 131072), (64, 262144)]
)  # long rows: big vocabularies
DTYPES = (torch.float32, torch.bfloat16)
ROTATE_BYTES = 256 * 2**20  # > 5 x the L2
REPLAYS = 15
JSON_NAME = "custom_op_bench.json"


def gbps(n_bytes: int, ms: float) -> float:
    return n_bytes / (ms * 1e-3) / 1e9


def graph_ms(calls: list) -> float:
    """Median device time of one call: a CUDA graph of all `calls` back to back, replayed REPLAYS times."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(
        side
    ):  # warm up (compile, allocate) outside the capture, as CUDA graphs require
        for call in calls:
            call()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for call in calls:
            call()
    times = []
    for _ in range(REPLAYS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / len(calls))
    del graph
    return statistics.median(times)


def eager_ms(fn) -> float:
    import triton.testing

    return triton.testing.do_bench(fn, warmup=10, rep=30, return_mode="median")


def measure_shape(shape: tuple[int, int], dtype: torch.dtype) -> dict:
    """GB/s of each contender for one shape and dtype: {"fwd": {name: GB/s}, "bwd": {...}, "errors": {...}}."""
    from workshop.ops import softmax

    numel, size = shape[0] * shape[1], dtype.itemsize
    moved = {"fwd": 2 * numel * size, "bwd": 3 * numel * size}
    n = max(1, math.ceil(ROTATE_BYTES / moved["fwd"]))  # input sets to rotate through

    def randn(*s):
        return torch.randn(*s, device="cuda", dtype=dtype)

    xs = [randn(shape) for _ in range(n)]
    ys = [torch.softmax(x, -1) for x in xs]
    dys = [randn(shape) for _ in range(n)]
    n3 = (3 * numel + 1) // 2  # a copy of n3 elements moves the backward's 3 x numel elements
    copies = {
        d: [(randn(k), randn(k)) for _ in range(n)] for d, k in (("fwd", numel), ("bwd", n3))
    }  # (src, dst)

    def copy(direction, i):
        src, dst = copies[direction][i]
        return dst.copy_(src)

    torch.compiler.reset()  # one compiled function per shape, without piling up recompilations
    inductor_fwd = torch.compile(lambda t: torch.softmax(t, -1), dynamic=False)
    inductor_bwd = torch.compile(
        lambda y, dy: torch.ops.aten._softmax_backward_data(dy, y, -1, dtype), dynamic=False
    )
    ours_bwd = torch.ops.workshop.softmax_backward
    torch_bwd = torch.ops.aten._softmax_backward_data
    contenders = {
        "fwd": {
            "ours": lambda i: softmax(xs[i]),
            "torch": lambda i: torch.softmax(xs[i], -1),
            "inductor": lambda i: inductor_fwd(xs[i]),
            "copy": lambda i: copy("fwd", i),
        },
        "bwd": {
            "ours": lambda i: ours_bwd(ys[i], dys[i], -1),
            "torch": lambda i: torch_bwd(dys[i], ys[i], -1, dtype),
            "inductor": lambda i: inductor_bwd(ys[i], dys[i]),
            "copy": lambda i: copy("bwd", i),
        },
    }
    out = {"fwd": {}, "bwd": {}, "errors": {}, "input_sets": n}
    for direction, fns in contenders.items():
        for name, fn in list(fns.items()) + [("ours_eager", None)]:
            try:
                if name == "ours_eager":
                    ms = eager_ms(lambda f=fns["ours"]: f(0))
                else:
                    ms = graph_ms([lambda i=i, f=fn: f(i) for i in range(n)])
                out[direction][name] = gbps(moved[direction], ms)
            except Exception as e:  # one failing contender must not hide the other numbers
                out[direction][name] = None
                out["errors"][f"{direction}/{name}"] = f"{type(e).__name__}: {str(e)[:300]}"
    out["max_error_vs_torch"] = (softmax(xs[0]).float() - ys[0].float()).abs().max().item()
    return out  # the inputs die with this frame; the caller empties the cache


def run_benchmark(out_dir: Path, shapes=SHAPES, dtypes=DTYPES, log=print) -> dict:
    """Measures every (dtype, shape), writing the JSON after each one, then the chart and the summary."""
    import triton

    from workshop.labs.custom_op import bench_report
    from workshop.ops import softmax_op

    out_dir.mkdir(parents=True, exist_ok=True)
    doc = {
        "command": "python -m workshop bench custom_op --out " + str(out_dir),
        "device": torch.cuda.get_device_name(0),
        "versions": {
            "torch": torch.__version__,
            "triton": triton.__version__,
            "python": platform.python_version(),
        },
        "registration": softmax_op.KIND,
        "timing": f"device time: median of {REPLAYS} replays of a CUDA graph of back-to-back calls on inputs rotating "
        f"through >= {ROTATE_BYTES >> 20} MiB (cold L2); ours_eager: the op called from Python, "
        "triton.testing.do_bench median (L2 emptied each call)",
        "bytes": "fwd: 2 x numel x itemsize; bwd: 3 x numel x itemsize; copy: the same bytes, read + write",
        "results": [],
    }
    start = time.time()
    for dtype in dtypes:
        for shape in shapes:
            mib = shape[0] * shape[1] * dtype.itemsize / 2**20
            row = {
                "dtype": str(dtype).removeprefix("torch."),
                "shape": list(shape),
                "input_mib": mib,
                **measure_shape(shape, dtype),
            }
            torch.cuda.empty_cache()  # the shape's inputs are gone: give their memory back
            doc["results"].append(row)
            cells = {
                d: "  ".join(f"{k} {v:7.1f}" if v else f"{k} -" for k, v in row[d].items())
                for d in ("fwd", "bwd")
            }
            log(
                f"{row['dtype']:>8} {str(shape):>16}  fwd {cells['fwd']}   bwd {cells['bwd']}"
                f"  ({time.time() - start:.0f} s)"
            )
            atomic.write_json(out_dir / JSON_NAME, doc)
    doc["targets"] = bench_report.evaluate(doc["results"])
    atomic.write_json(out_dir / JSON_NAME, doc)
    bench_report.write_chart(doc, out_dir / "custom_op_bench.png")
    atomic.write_text(out_dir / "custom_op_bench.md", bench_report.summary(doc))
    return doc


def main(out: Path) -> int:
    if not torch.cuda.is_available():
        raise SystemExit(
            "error: the custom_op benchmark needs a CUDA GPU (Triton's interpreter on the CPU says "
            "nothing about speed); run it on a GPU machine, or run the lab: "
            "python -m workshop run custom_op --device cpu"
        )
    run_benchmark(Path(out))
    print((Path(out) / "custom_op_bench.md").read_text())
    return 0  # a missed target is a finding, written in the summary, not a failed command
