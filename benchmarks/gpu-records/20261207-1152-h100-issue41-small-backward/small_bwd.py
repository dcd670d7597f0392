"""Issue 41: why Inductor's softmax backward is 1-2.5% ahead of ours over rows of 600, up to 1,024 rows
(gpu record 20261207-0915, every sweep). Inductor compiles its kernel for the shape (600 a constant), indexes in
int32 and runs one warp a row; ours is one kernel for every row length, int64 rows, at least 4 warps. This probe
takes those apart: copies of our _bwd_one_pass that differ in one thing each, timed as the benchmark times (CUDA
graphs over rotating inputs, balanced rounds) beside ours, Inductor and Liger.
Usage: python3 small_bwd.py time OUT.json | python3 small_bwd.py ncu LABELS.json (under ncu) | code DIR"""

import json
import statistics
import sys

import torch
import triton
import triton.language as tl

from workshop.labs.custom_op.bench import benchmark as bench

SHAPES = [(r, 600) for r in (64, 256, 1024, 4096)]
DTYPES = (torch.float32, torch.bfloat16)


@triton.jit
def bwd_variant(
    y_ptr,
    dy_ptr,
    dx_ptr,
    n_rows,
    n_cols,
    row_stride,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    NR: tl.constexpr,
    NC: tl.constexpr,  # the shape, used where SPEC
    SPEC: tl.constexpr,
    I64: tl.constexpr,
    FMA: tl.constexpr,
):
    if SPEC:
        nr = NR
        nc = NC
        stride = NC
    else:
        nr = n_rows
        nc = n_cols // 8 * 8
        stride = row_stride // 8 * 8
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]
    if I64:
        rows = rows.to(tl.int64)
    cols = tl.arange(0, BLOCK_N)[None, :]
    mask = (rows < nr) & (cols < nc)
    y = tl.load(y_ptr + rows * stride + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + rows * stride + cols, mask=mask, other=0.0).to(tl.float32)
    if FMA:  # Inductor's form: y * dy - y * s, the product kept
        p = y * dy
        dx = p - y * tl.sum(p, axis=1)[:, None]
    else:
        dx = y * (dy - tl.sum(dy * y, axis=1)[:, None])
    tl.store(dx_ptr + rows * stride + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)


VARIANTS = {  # name: (SPEC, I64, FMA, num_warps, ROWS)
    "copy_of_ours": (0, 1, 0, 4, 1),
    "w1": (0, 1, 0, 1, 1),
    "i32_w1": (0, 0, 0, 1, 1),
    "spec_i32": (1, 0, 0, 4, 1),
    "spec_i32_w1": (1, 0, 0, 1, 1),
    "spec_i32_fma_w1": (1, 0, 1, 1, 1),
}


def variant_call(name, ys, dys, dxs, shape):
    spec, i64, fma, warps, rows = VARIANTS[name]
    n_rows, n_cols = shape
    grid = (triton.cdiv(n_rows, rows),)

    def call(i):  # the output allocated in the call, as ours, Inductor's and Liger's are
        dx = torch.empty_like(ys[i])
        bwd_variant[grid](
            ys[i],
            dys[i],
            dx,
            n_rows,
            n_cols,
            n_cols,
            ROWS=rows,
            BLOCK_N=1024,
            NR=n_rows,
            NC=n_cols,
            SPEC=spec,
            I64=i64,
            FMA=fma,
            num_warps=warps,
        )
        return dx

    return call


def shipped_call(warps, ys, shape):
    """Our _bwd_one_pass itself (three row strides, ALIGN), launched by Triton's own path with `warps` warps."""
    from workshop.ops import softmax_kernels

    n_rows, n_cols = shape

    def call(i):
        dx = torch.empty_like(ys[i])
        softmax_kernels._bwd_one_pass[(n_rows,)](
            ys[i], dys_of[id(ys)][i], dx, n_rows, n_cols, n_cols, n_cols, n_cols,
            ROWS=1, BLOCK_N=1024, ALIGN=8, num_warps=warps,
        )
        return dx

    return call


dys_of = {}


def calls(shape, dtype, inputs):
    ys, dys = inputs["y"], inputs["dy"]
    dxs = [torch.empty_like(y) for y in ys]
    fns = bench.contenders(inputs, dtype, ("inductor", "liger"))["bwd"]
    fns |= {name: variant_call(name, ys, dys, dxs, shape) for name in VARIANTS}
    dys_of[id(ys)] = dys
    fns |= {f"shipped_w{w}": shipped_call(w, ys, shape) for w in (4, 1)}
    ref = torch.ops.aten._softmax_backward_data(dys[0], ys[0], -1, dtype).float()
    errors = {name: (fn(0).float() - ref).abs().max().item() for name, fn in fns.items()}
    return fns, errors


def time_all(out_path):
    doc = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__}
    doc["variants"] = VARIANTS
    doc["cases"] = []
    for dtype in DTYPES:
        for shape in SHAPES:
            inputs = bench.rotating_inputs(shape, dtype)
            fns, errors = calls(shape, dtype, inputs)
            timers, refused = bench.graph_timers(fns, inputs["n"])
            samples = bench.timed_in_rounds(timers)
            moved = 3 * shape[0] * shape[1] * dtype.itemsize
            gb = {k: [bench.gbps(moved, ms) for ms in v] for k, v in samples.items()}
            med = {k: statistics.median(v) for k, v in gb.items()}
            q = {k: statistics.quantiles(v, n=4)[::2] for k, v in gb.items()}
            case = {
                "dtype": str(dtype)[6:],
                "shape": shape,
                "gbps": med,
                "quartiles": q,
                "max_error": errors,
                "refused": refused,
                "us": {k: statistics.median(v) * 1e3 for k, v in samples.items()},
            }
            doc["cases"].append(case)
            ind = med["inductor"]
            line = " ".join(f"{k}={v / ind:.3f}" for k, v in sorted(med.items(), key=lambda kv: -kv[1]))
            print(f"{case['dtype']} {shape}: vs inductor {line}", flush=True)
            with open(out_path, "w") as f:
                json.dump(doc, f, indent=1)


def ncu_launches(labels_path):
    labels = []
    for dtype in DTYPES:
        for shape in [(1024, 600), (256, 600)]:
            bench.ROTATE_BYTES = 1
            inputs = bench.rotating_inputs(shape, dtype)
            fns, _ = calls(shape, dtype, inputs)
            for name in ("ours", "inductor", "shipped_w4", "shipped_w1", *VARIANTS):
                for _ in range(3):
                    fns[name](0)
                torch.cuda.synchronize()
                torch.cuda.profiler.start()
                for _ in range(3):
                    fns[name](0)
                torch.cuda.synchronize()
                torch.cuda.profiler.stop()
                labels += [
                    {"dtype": str(dtype)[6:], "shape": list(shape), "direction": "bwd", "contender": name}
                ] * 3
    with open(labels_path, "w") as f:
        json.dump(labels, f, indent=1)
    print(f"profiled {len(labels)} launches", flush=True)


def code(out_dir):
    """Inductor's Triton source for the backward at (1024, 600) float32 and bfloat16, and the PTX of ours and of
    the variants, to compare instruction by instruction."""
    from torch._inductor.utils import run_and_get_code

    for dtype, shape in [(d, (r, 600)) for d in DTYPES for r in (1024, 256)]:
        tag = f"{str(dtype)[6:]} {shape}"
        inputs = bench.rotating_inputs(shape, dtype)
        torch.compiler.reset()
        f = torch.compile(
            lambda y, dy: torch.ops.aten._softmax_backward_data(dy, y, -1, dtype), dynamic=False
        )
        _, sources = run_and_get_code(f, inputs["y"][0], inputs["dy"][0])
        text = "\n\n".join(sources)
        start = text.find("@triton.jit")
        print(f"=== Inductor {tag}", text[start - 300 : text.find("def call", start)], sep="\n", flush=True)
    print("code written", flush=True)


if __name__ == "__main__":
    {"time": time_all, "ncu": ncu_launches, "code": code}[sys.argv[1]](sys.argv[2])
