"""`python -m workshop bench custom_op [--out DIR]`: our softmax on a GPU, device time and eager time, judged.

Device time (GB/s): ours against the peers of PEERS (torch.softmax and aten._softmax_backward_data, the same
under torch.compile (Inductor's kernels), Liger-Kernel's Triton softmax where `liger-kernel` is installed: it is no
requirement of the workshop's), and a copy of the same number of bytes: the practical bandwidth ceiling, taken as
the faster of a memcpy (`copy_`) and an elementwise kernel (`neg`), since either alone is slow at some sizes (the
memcpy of 512 MiB of float32 ran at 2.7 TB/s where the elementwise kernel ran at 4.1). A softmax reads and writes each
element once (2 x numel x itemsize bytes); its backward reads y and dy and writes dx (3 x numel x itemsize).
Each is timed by replaying a CUDA graph of back-to-back calls, each on its own inputs, rotating through at least
ROTATE_BYTES so that no input is still in the L2 when its turn comes (HBM bandwidth, not L2); a graph leaves out
the CPU's cost of launching, and every contender is timed the same way: all of a shape's graphs are captured
first, then replayed in at least ROUNDS rounds, each once a round, in orders where each comes first and after
each other equally often (timed_in_rounds), so that a machine's passing state (clocks, another process) and what
ran just before fall on every contender alike.

Eager time (GB/s): ours and torch's, called from Python, timed by triton.testing.do_bench (which empties L2
before each call): what a program that calls the op gets, host costs included. And the host's time per call at a
tiny shape, layer by layer (eager_cost.py). Under torch.compile the op's kernel is launched from Inductor's code,
without the op's Python layers.

Writes custom_op_bench.json (after every shape), custom_op_bench.png and custom_op_bench.md (every target, met or
missed, shape by shape) into DIR.
"""

import functools
import importlib
import math
import platform
import statistics
import time
from pathlib import Path

import torch

from workshop.foundations import atomic, results
from workshop.labs.custom_op import eager_cost
from workshop.labs.custom_op.bench import report as bench_report
from workshop.ops import softmax, softmax_op

SHAPES = (
    [(bt, 600) for bt in (64, 256, 1024, 4096, 32768, 262144)]  # the LM head's logits, (B*T, V)
    + [(4096, 2**k) for k in range(8, 16)]  # (4096, N), N = 256 ... 32768
    + [(256, 131072), (64, 262144)]  # long rows: big vocabularies
)
DTYPES = (torch.float32, torch.bfloat16)
ROTATE_BYTES = 256 * 2**20  # > 5 x the L2
ROUNDS = 15  # each contender's graph replayed once a round (and its eager time measured once)
EAGER_MS = 10  # do_bench's time budget per eager measurement
HOST_ROUNDS = 3
JSON_NAME = "custom_op_bench.json"


def gbps(n_bytes: int, ms: float) -> float:
    return n_bytes / (ms * 1e-3) / 1e9


def graph_timer(call, n: int):
    """A CUDA graph of call(0), ..., call(n - 1) back to back (each on input set i), captured once; returns a
    function that replays it and gives the device ms of one call (the replay's time / n)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(
        side
    ):  # warm up (compile, allocate) outside the capture, as CUDA graphs require
        for i in range(n):
            call(i)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(n):
            call(i)

    def replay_ms() -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / n

    return replay_ms


def graph_timers(calls: dict, n: int) -> tuple[dict, dict[str, str]]:
    """graph_timer for each of {name: call}: ({name: its timer} for the calls that capture, {name: the error in one
    line} for those that raise, such as a peer that refuses the shape)."""
    timers, errors = {}, {}
    for name, call in calls.items():
        try:
            timers[name] = graph_timer(call, n)
        except Exception as e:  # one failing contender must not hide the other numbers
            first_line = (str(e).strip().splitlines() or [""])[0][:300]
            errors[name] = f"{type(e).__name__}: {first_line}"
    return timers, errors


def eager_timer(fn):
    """A function that times fn() called from Python: triton.testing.do_bench's median over about EAGER_MS."""
    import triton.testing  # after workshop.ops: on a CPU it sets TRITON_INTERPRET before triton loads

    return lambda: triton.testing.do_bench(fn, warmup=1, rep=EAGER_MS, return_mode="median")


def balanced_orders(n: int) -> list[list[int]]:
    """Orders of range(n) in which each index comes first equally often and comes directly after each other index
    equally often: a Williams design, n orders (2n where n is odd, each order then also reversed)."""
    # the first order: 0, 1, n-1, 2, n-2, ...; the others add 1, 2, ... to it (mod n)
    first = [0] + [(k + 1) // 2 if k % 2 else n - k // 2 for k in range(1, n)]
    orders = [[(i + shift) % n for i in first] for shift in range(n)]
    return orders + [order[::-1] for order in orders] if n % 2 else orders


def timed_in_rounds(timers: dict) -> dict[str, list[float]]:
    """{name: what its timer() gave in each of at least ROUNDS rounds}: every timer once a round, the rounds'
    orders balanced_orders, repeated. A contender's time depends on what ran just before it: each timed once in a
    fixed order, the first of a (shape, direction) read 12-14% fewer GB/s than its own median in 8 of 12 cases
    (benchmarks/gpu-records/20261207-0730-h100-issue41-replay-and-host); in rounds whose order only turned, each
    kept the same predecessor, and Liger, always after Inductor, read 3-5% ahead of ours, always after a copy,
    where the two alternating were level (20261207-0915-h100-issue41-interleaved)."""
    names = list(timers)
    orders = balanced_orders(len(names))
    samples = {name: [] for name in names}
    for turn in range(math.ceil(ROUNDS / len(orders)) * len(orders)):
        for index in orders[turn % len(orders)]:
            samples[names[index]].append(timers[names[index]]())
    return samples


def rotating_inputs(shape: tuple[int, int], dtype: torch.dtype, device: str = "cuda") -> dict:
    """Enough input sets to rotate through ROTATE_BYTES: x, y = softmax(x), dy, and (src, dst) pairs for copies
    of the forward's and the backward's bytes."""
    numel = shape[0] * shape[1]
    # Input sets to rotate through.
    n = max(1, math.ceil(ROTATE_BYTES / (2 * numel * dtype.itemsize)))
    randn = functools.partial(torch.randn, device=device, dtype=dtype)
    xs = [randn(shape) for _ in range(n)]
    n3 = (3 * numel + 1) // 2  # a copy of n3 elements moves the backward's 3 x numel elements
    return {
        "n": n,
        "x": xs,
        "y": [torch.softmax(x, -1) for x in xs],
        "dy": [randn(shape) for _ in range(n)],
        "copy": {
            d: [(randn(k), randn(k)) for _ in range(n)] for d, k in (("fwd", numel), ("bwd", n3))
        },
    }


def copy_calls(inputs: dict, direction: str) -> dict:
    """{name: fn(i)}: moving the direction's bytes of input set i by a memcpy and by an elementwise kernel."""
    pairs = inputs["copy"][direction]
    return {
        "memcpy": lambda i: pairs[i][1].copy_(pairs[i][0]),
        "elementwise": lambda i: torch.neg(pairs[i][0], out=pairs[i][1]),
    }


def _torch(dtype: torch.dtype):
    return (
        lambda x: torch.softmax(x, -1),
        lambda y, dy: torch.ops.aten._softmax_backward_data(dy, y, -1, dtype),
    )


def _inductor(dtype: torch.dtype):
    torch.compiler.reset()  # one compiled function per shape, without piling up recompilations
    fwd, bwd = _torch(dtype)
    return torch.compile(fwd, dynamic=False), torch.compile(bwd, dynamic=False)


def _liger(dtype: torch.dtype):
    # Liger's own Triton kernels (not its dispatcher, which may pick another backend). Its autograd Function's
    # backward launches _softmax_backward with the settings its forward chose: calculate_settings(row length),
    # and the single-block kernel, the only one its forward launches (it refuses rows over one block, 65536).
    from liger_kernel.ops import softmax as liger

    def bwd(y, dy):
        return liger._softmax_backward(dy, y, *liger.calculate_settings(y.shape[-1]), False)

    return liger.LigerSoftmaxFunction.apply, bwd


PEERS = {  # name: (the module it needs, its (fwd(x), bwd(y, dy)) for a dtype), each over the last dim
    "torch": ("torch", _torch),
    "inductor": ("torch", _inductor),
    "liger": ("liger_kernel.ops.softmax", _liger),
}


def installed_peers(log=print) -> dict[str, str]:
    """{name: why it is skipped} for each peer whose module does not import, each said in one line."""
    skipped = {}
    for name, (module, _) in PEERS.items():
        try:
            importlib.import_module(module)
        except ImportError as e:
            skipped[name] = f"not installed ({type(e).__name__}: {e})"
            log(f"peer {name}: skipped, {skipped[name]}")
    return skipped


def contenders(inputs: dict, dtype: torch.dtype, peers) -> dict:
    """{direction: {name: fn(i)}}, each a call on input set i: ours and each of `peers` (names in PEERS)."""
    xs, ys, dys = inputs["x"], inputs["y"], inputs["dy"]
    out = {
        "fwd": {"ours": lambda i: softmax(xs[i])},
        "bwd": {"ours": lambda i: torch.ops.workshop.softmax_backward(ys[i], dys[i], -1)},
    }
    for name in peers:
        fwd, bwd = PEERS[name][1](dtype)
        out["fwd"][name] = lambda i, f=fwd: f(xs[i])
        out["bwd"][name] = lambda i, f=bwd: f(ys[i], dys[i])
    return out


def max_error_vs_torch(inputs: dict) -> float:
    """max |ours - torch.softmax| on the first input set of rotating_inputs."""
    return (softmax(inputs["x"][0]).float() - inputs["y"][0].float()).abs().max().item()


def measure_shape(
    shape: tuple[int, int], dtype: torch.dtype, peers=tuple(PEERS), device: str = "cuda"
) -> dict:
    """GB/s of each contender for one shape and dtype, device and eager time:
    {"fwd": {name: GB/s}, "bwd": {...}, "copy_gbps": {direction: {memcpy, elementwise}}, "errors": {...}}; a
    contender that raises (a peer that refuses the shape) is None, its error in one line."""
    numel = shape[0] * shape[1]
    moved = {"fwd": 2 * numel * dtype.itemsize, "bwd": 3 * numel * dtype.itemsize}
    inputs = rotating_inputs(shape, dtype, device)
    out = {"fwd": {}, "bwd": {}, "copy_gbps": {}, "quartiles": {}, "errors": {}}
    out["input_sets"] = inputs["n"]
    for direction, fns in contenders(inputs, dtype, peers).items():
        # every contender's graph captured first, then all timed in the same rounds
        copies = {k: graph_timer(f, inputs["n"]) for k, f in copy_calls(inputs, direction).items()}
        timers, errors = graph_timers(fns, inputs["n"])
        out[direction] |= dict.fromkeys(errors)  # a contender that raised: None, its error below
        out["errors"] |= {f"{direction}/{name}": error for name, error in errors.items()}
        timers |= {
            f"{name}_eager": eager_timer(functools.partial(fns[name], 0))
            for name in ("ours", "torch")
            if name in timers
        }
        found = {
            name: [gbps(moved[direction], ms) for ms in samples]
            for name, samples in timed_in_rounds(
                {f"copy {k}": timer for k, timer in copies.items()} | timers
            ).items()
        }
        copy_gbps = {k: statistics.median(found.pop(f"copy {k}")) for k in copies}
        out["copy_gbps"][direction] = copy_gbps
        out[direction]["copy"] = max(copy_gbps.values())
        out[direction] |= {name: statistics.median(rounds) for name, rounds in found.items()}
        # the rounds' spread: [lower, upper] quartile of each contender's GB/s
        out["quartiles"][direction] = {
            name: statistics.quantiles(rounds, n=4)[::2] for name, rounds in found.items()
        }
    out["max_error_vs_torch"] = max_error_vs_torch(inputs)
    return out  # the inputs die with this frame; the caller empties the cache


def run_benchmark(out_dir: Path, shapes=SHAPES, dtypes=DTYPES, log=print) -> dict:
    """Measures every (dtype, shape), writing the JSON after each one, then the chart and the summary."""
    import triton  # as in eager_timer

    out_dir.mkdir(parents=True, exist_ok=True)
    doc = {
        "command": "python -m workshop bench custom_op --out " + str(out_dir),
        "commit": results.git_revision(),
        "device": torch.cuda.get_device_name(0),
        "versions": {
            "torch": torch.__version__,
            "triton": triton.__version__,
            "python": platform.python_version(),
        },
        "registration": softmax_op.KIND,
        "timing": f"device time: median of >= {ROUNDS} replays of a CUDA graph of back-to-back calls on inputs "
        f"rotating through >= {ROTATE_BYTES >> 20} MiB (cold L2); *_eager: called from Python, "
        f"triton.testing.do_bench median over {EAGER_MS} ms (L2 emptied each call); every contender of a "
        "(shape, direction) timed once a round, each first and after each other equally often",
        "bytes": "fwd: 2 x numel x itemsize; bwd: 3 x numel x itemsize; copy: the same bytes, read + write, "
        "the faster of a memcpy and an elementwise kernel",
        "peers": list(PEERS),
        "skipped_peers": installed_peers(log),
        "results": [],
    }
    start = time.time()
    for dtype in dtypes:
        for shape in shapes:
            row = {
                "dtype": str(dtype).removeprefix("torch."),
                "shape": list(shape),
                "input_mib": shape[0] * shape[1] * dtype.itemsize / 2**20,
                **measure_shape(shape, dtype, [p for p in PEERS if p not in doc["skipped_peers"]]),
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
            for name, error in row["errors"].items():
                log(f"{row['dtype']:>8} {str(shape):>16}  {name} skipped: {error}")
            atomic.write_json(out_dir / JSON_NAME, doc)
    doc["host"], doc["host_rounds"] = host_costs(log)
    return write_report(doc, out_dir)


def host_costs(log=print) -> tuple[dict, list[dict]]:
    """The host's costs (eager_cost.measure) in HOST_ROUNDS rounds: the round whose step ratio is the median, and
    every round's ratios. One round can be far off: the bench's first, before its shapes, read torch's forward +
    backward step at 602.7 us, where five rounds in the next process read 78.8-90.3 us
    (benchmarks/gpu-records/20261207-0915-h100-issue41-interleaved)."""
    rounds = []
    for turn in range(HOST_ROUNDS):
        found = eager_cost.measure("cuda")
        rounds.append((bench_report.evaluate_host(found), found))
        log(
            f"host round {turn + 1}: op {found['op_us']:.1f} us, a clone custom_op "
            f"{found['clone_custom_op_us']:.1f} us; step ours / torch's {rounds[-1][0]['step_vs_torch']:.2f}"
        )
    rounds.sort(key=lambda r: r[0]["step_vs_torch"])
    return rounds[len(rounds) // 2][1], [ratios for ratios, _ in rounds]


def write_report(doc: dict, out_dir: Path) -> dict:
    """The verdicts into the JSON, then the chart and the summary: after the last shape and the host's rounds, or
    from the JSON of a run stopped before them (the shapes it measured, and no host figures)."""
    doc["targets"] = bench_report.evaluate(doc["results"])
    if "host" in doc:
        doc["host_targets"] = bench_report.evaluate_host(doc["host"])
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
