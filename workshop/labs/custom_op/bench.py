"""`python -m workshop bench custom_op [--out DIR]`: GB/s of our softmax, forward and backward, on a GPU.

Against torch.softmax (and aten._softmax_backward_data), the same under torch.compile (Inductor's kernels), and a
device copy of the same number of bytes: the practical bandwidth ceiling. A softmax reads and writes each
element once (2 x numel x itemsize bytes); its backward reads y and dy and writes dx (3 x numel x itemsize).
Times are medians of triton.testing.do_bench, which empties L2 before each repetition, so small shapes are
measured from memory too. Writes custom_op_bench.json (after every shape), custom_op_bench.png and
custom_op_bench.md (the targets, met or missed, shape by shape) into DIR.
"""

import platform
import time
from pathlib import Path

import torch

from workshop import atomic

SHAPES = ([(bt, 600) for bt in (4096, 32768, 262144)]  # the LM head's logits, (B*T, V)
          + [(4096, 2**k) for k in range(8, 16)]  # (4096, N), N = 256 ... 32768
          + [(256, 131072), (64, 262144)])  # long rows: big vocabularies  # fmt: skip
DTYPES = (torch.float32, torch.bfloat16)
WARMUP_MS, REP_MS = 10, 30
JSON_NAME = "custom_op_bench.json"


def gbps(n_bytes: int, ms: float) -> float:
    return n_bytes / (ms * 1e-3) / 1e9


def _timed(fn) -> float:
    import triton.testing

    return triton.testing.do_bench(fn, warmup=WARMUP_MS, rep=REP_MS, return_mode="median")


def measure_shape(shape: tuple[int, int], dtype: torch.dtype, timer=_timed) -> dict:
    """GB/s of each contender for one shape and dtype: {"fwd": {name: GB/s}, "bwd": {...}, "errors": {...}}."""
    from workshop.ops import softmax

    device = "cuda"
    x = torch.randn(shape, device=device, dtype=dtype)
    y = torch.softmax(x, -1)
    dy = torch.randn_like(y)
    numel, size = x.numel(), x.element_size()
    copy_fwd = (torch.empty(numel, device=device, dtype=dtype), torch.empty(numel, device=device, dtype=dtype))
    n3 = (3 * numel + 1) // 2  # a copy of n3 elements moves 3 x numel elements' bytes, as the backward does
    copy_bwd = (torch.empty(n3, device=device, dtype=dtype), torch.empty(n3, device=device, dtype=dtype))
    torch.compiler.reset()  # one compiled function per shape, without piling up recompilations
    compiled_fwd = torch.compile(lambda t: torch.softmax(t, -1), dynamic=False)
    compiled_bwd = torch.compile(lambda y_, dy_: torch.ops.aten._softmax_backward_data(dy_, y_, -1, dtype),
                                 dynamic=False)  # fmt: skip
    contenders = {
        "fwd": {"ours": lambda: softmax(x), "torch": lambda: torch.softmax(x, -1), "inductor": lambda: compiled_fwd(x),
                "copy": lambda: copy_fwd[1].copy_(copy_fwd[0])},  # fmt: skip
        "bwd": {"ours": lambda: torch.ops.workshop.softmax_backward(y, dy, -1),
                "torch": lambda: torch.ops.aten._softmax_backward_data(dy, y, -1, dtype),
                "inductor": lambda: compiled_bwd(y, dy), "copy": lambda: copy_bwd[1].copy_(copy_bwd[0])},  # fmt: skip
    }
    moved = {"fwd": 2 * numel * size, "bwd": 3 * numel * size}
    out = {"fwd": {}, "bwd": {}, "errors": {}}
    for direction, fns in contenders.items():
        for name, fn in fns.items():
            try:
                out[direction][name] = gbps(moved[direction], timer(fn))
            except Exception as e:  # one failing contender must not hide the other numbers
                out[direction][name] = None
                out["errors"][f"{direction}/{name}"] = f"{type(e).__name__}: {str(e)[:300]}"
    out["max_error_vs_torch"] = (softmax(x).float() - y.float()).abs().max().item()
    return out


def run_benchmark(out_dir: Path, shapes=SHAPES, dtypes=DTYPES, timer=_timed, log=print) -> dict:
    """Measures every (dtype, shape), writing the JSON after each one, then the chart and the summary."""
    from workshop.labs.custom_op import bench_report
    from workshop.ops import softmax_op

    import triton

    out_dir.mkdir(parents=True, exist_ok=True)
    doc = {
        "command": "python -m workshop bench custom_op --out " + str(out_dir),
        "device": torch.cuda.get_device_name(0),
        "versions": {"torch": torch.__version__, "triton": triton.__version__, "python": platform.python_version()},
        "registration": softmax_op.KIND,
        "timing": f"median of triton.testing.do_bench(warmup={WARMUP_MS} ms, rep={REP_MS} ms), L2 emptied each rep",
        "bytes": "fwd: 2 x numel x itemsize; bwd: 3 x numel x itemsize; copy: the same bytes, read + write",
        "results": [],
    }
    start = time.time()
    for dtype in dtypes:
        for shape in shapes:
            row = {"dtype": str(dtype).removeprefix("torch."), "shape": list(shape),
                   "input_mib": shape[0] * shape[1] * dtype.itemsize / 2**20, **measure_shape(shape, dtype, timer)}  # fmt: skip
            doc["results"].append(row)
            log(f"{row['dtype']:>8} {str(shape):>16}  fwd " + "  ".join(
                f"{k} {v:7.1f}" if v else f"{k} -" for k, v in row["fwd"].items()) + "   bwd " + "  ".join(
                f"{k} {v:7.1f}" if v else f"{k} -" for k, v in row["bwd"].items()) + f"  ({time.time() - start:.0f} s)")  # fmt: skip
            atomic.write_json(out_dir / JSON_NAME, doc)
    doc["targets"] = bench_report.evaluate(doc["results"])
    atomic.write_json(out_dir / JSON_NAME, doc)
    bench_report.write_chart(doc, out_dir / "custom_op_bench.png")
    atomic.write_text(out_dir / "custom_op_bench.md", bench_report.summary(doc))
    return doc


def main(out: Path) -> int:
    if not torch.cuda.is_available():
        raise SystemExit("error: the custom_op benchmark needs a CUDA GPU (Triton's interpreter on the CPU says "
                         "nothing about speed); run it on a GPU machine, or run the lab: "
                         "python -m workshop run custom_op --device cpu")  # fmt: skip
    run_benchmark(Path(out))
    print((Path(out) / "custom_op_bench.md").read_text())
    return 0  # a missed target is a finding, written in the summary, not a failed command
