"""Issue 41, probe 2: why every registration's forward + backward step at (64, 600) float32 measured 35-45 us more in
the benchmark's process (custom_op 201.8, triton_op 211.4, by hand 201.0 us) than in the custom_op lab's own
eager-cost measurement on the same machine (165.1, 175.8, 165.1), in ../20261206-2202-h100.

Each stage is a fresh process (`host_probe2.py stage NAME`) that prepares the process one way, then measures the same
things, printing one JSON line:
- "measure": eager_cost.measure("cuda"), the lab's and the benchmark's own function (every registration's step_us),
  with the garbage collector's collections and their time counted while it runs (gc.callbacks);
- "split": each registration's step and torch's, 5 blocks of STEPS steps, each step's forward call and backward call
  timed apart on the host (perf_counter_ns; the backward call returns when the autograd engine is done);
- "timeline": torch.ops.workshop.softmax's step (the triton_op), with softmax_op.gradients and softmax_launch.launch
  wrapped to stamp the time: how long the backward call takes to reach our backward function (on the autograd
  engine's CUDA thread), our function's own time and its launch's, and the time after it until backward returns;
- "torch_profiler": torch.profiler (CPU) over 100 of those steps, the ops by self CPU time, and the sum per thread;
- "cprofile": cProfile over 300 steps, the functions by own time;
- "env": Python and native threads, the collector's state (objects tracked, frozen), load average.

The stages (how the process is prepared before measuring):
- fresh: nothing but the probe's own imports;
- fresh_frozen_like_lab: torch imported as the lab's process imports it (foundations.torch_import: the collector off
  during the import, then gc.freeze());
- bench_imports: what `python -m workshop bench custom_op` has done before its eager_cost.measure: the CLI's
  modules, benchmark.installed_peers() (imports liger_kernel), results.git_revision(), the device name;
- bench_imports_frozen: the same, then gc.freeze();
- bench_imports_inductor: the same, plus one torch.compile'd softmax run (Inductor imported, its workers started);
- after_sweeps: bench_imports, eager_cost.measure once, then benchmark.measure_shape over SWEEPS (every peer: CUDA
  graphs captured, Triton and Inductor kernels compiled), then everything again;
- fresh_busy_cpus: fresh, while BUSY other processes spin on the CPU (the lab in ../20261206-2202-h100 ran beside
  the gpu tests' 4 workers);
- cli_bench: `python -m workshop bench custom_op` itself (runpy, as -m does), its shapes cut to SWEEPS[:1] (its
  host measurement runs before the shapes), its JSON's host figures; then everything again in that process;
- lab: `python -m workshop run custom_op --device cuda` (the whole lab, alone), its result.json's eager figures;
- fresh_again: fresh, last (the machine's drift).

Usage: host_probe2.py all OUT.json  |  host_probe2.py stage NAME
"""

import gc
import glob
import json
import os
import statistics
import subprocess
import sys
import threading
import time

DEVICE = os.environ.get("PROBE_DEVICE", "cuda")
QUICK = bool(os.environ.get("PROBE_QUICK"))  # a dry run of the logic on a CPU
STEPS = 40 if QUICK else 300
SWEEPS = [((4096, 600), "float32"), ((4096, 4096), "bfloat16")]
BUSY = 4
pc = time.perf_counter_ns

STAGES = {
    "fresh": (),
    "fresh_frozen_like_lab": ("freeze_torch",),
    "bench_imports": ("cli", "peers", "git"),
    "bench_imports_frozen": ("cli", "peers", "git", "freeze"),
    "bench_imports_inductor": ("cli", "peers", "git", "inductor"),
    "after_sweeps": ("cli", "peers", "git", "measure_before", "sweeps"),
    "fresh_busy_cpus": (),
    "cli_bench": (),
    "lab": (),
    "fresh_again": (),
}


class GcClock:
    """The collector's collections per generation and their time, while installed (gc.callbacks)."""

    def __init__(self):
        self.count, self.ms, self._t = [0, 0, 0], [0.0, 0.0, 0.0], 0

    def __call__(self, phase, info):
        if phase == "start":
            self._t = pc()
        else:
            g = info["generation"]
            self.count[g] += 1
            self.ms[g] += (pc() - self._t) / 1e6

    def snapshot(self):
        return {"collections": list(self.count), "ms": [round(v, 2) for v in self.ms]}

    def delta(self, before):
        return {
            "collections": [a - b for a, b in zip(self.count, before["collections"], strict=True)],
            "ms": [round(a - b, 2) for a, b in zip(self.ms, before["ms"], strict=True)],
        }


CLOCK = GcClock()


def sync():
    import torch

    if DEVICE == "cuda":
        torch.cuda.synchronize()


def measured() -> dict:
    from workshop.labs.custom_op import eager_cost

    before = CLOCK.snapshot()
    t = time.time()
    found = eager_cost.measure(DEVICE)
    keep = ("step_us", "op_us", "op_grad_us", "torch_us", "clone_custom_op_us", "triton_jit_launch_us", "layer_us")
    out = {k: found[k] for k in keep}
    out["registrations"] = {
        kind: {k: round(v, 2) for k, v in r.items()} for kind, r in found["registrations"].items()
    }
    out["gc"] = CLOCK.delta(before)
    out["seconds"] = round(time.time() - t, 2)
    return out


def step_ops():
    import torch

    from workshop.labs.custom_op import eager_cost

    ops = {"torch.softmax": lambda t: torch.softmax(t, -1)}
    ops |= {kind: r.forward for kind, r in eager_cost.registrations().items()}
    x = torch.randn(64, 600, device=DEVICE, requires_grad=True)
    dy = torch.randn(64, 600, device=DEVICE)
    return ops, x, dy


def split() -> dict:
    """Each op's step, 5 blocks of STEPS, the forward call and the backward call timed apart."""
    ops, x, dy = step_ops()
    out = {}
    before = CLOCK.snapshot()
    for name, op in ops.items():
        for _ in range(20):
            op(x).backward(dy)
        sync()
        blocks = []
        for _ in range(5):
            f, b = [], []
            start = pc()
            for _ in range(STEPS):
                t0 = pc()
                y = op(x)
                t1 = pc()
                y.backward(dy)
                t2 = pc()
                del y
                f.append(t1 - t0)
                b.append(t2 - t1)
            sync()
            blocks.append(
                {
                    "us_per_step": round((pc() - start) / STEPS / 1e3, 2),
                    "fwd_median_us": round(statistics.median(f) / 1e3, 2),
                    "bwd_median_us": round(statistics.median(b) / 1e3, 2),
                    "fwd_mean_us": round(statistics.mean(f) / 1e3, 2),
                    "bwd_mean_us": round(statistics.mean(b) / 1e3, 2),
                    "bwd_p90_us": round(sorted(b)[int(0.9 * len(b))] / 1e3, 2),
                }
            )
        out[name] = {"best": min(blocks, key=lambda r: r["us_per_step"]), "blocks": blocks}
    out["gc"] = CLOCK.delta(before)
    return out


def timeline() -> dict:
    """torch.ops.workshop.softmax's step with our backward function and every launch stamped (medians over
    STEPS * 3 steps, after 20 unstamped): where the host time of a step goes, thread by thread."""
    import torch

    from workshop.ops import softmax_launch, softmax_op

    _, x, dy = step_ops()
    op = torch.ops.workshop.softmax
    cur: dict = {}
    orig_grad, orig_launch = softmax_op.gradients, softmax_launch.launch

    def grad(ctx, g):
        cur["g0"] = pc()
        cur["grad_thread"] = threading.get_native_id()
        r = orig_grad(ctx, g)
        cur["g1"] = pc()
        return r

    def launch(*args, **kwargs):
        t = pc()
        orig_launch(*args, **kwargs)
        cur.setdefault("launch", []).append((t, pc()))

    softmax_op.gradients, softmax_launch.launch = grad, launch
    rows = []
    try:
        for i in range(20 + 3 * STEPS):
            cur.clear()
            f0 = pc()
            y = op(x)
            f1 = pc()
            y.backward(dy)
            b1 = pc()
            del y
            if i >= 20 and len(cur.get("launch", ())) == 2 and "g0" in cur:
                (l0, l1), (l2, l3) = cur["launch"]
                rows.append(
                    {
                        "step": b1 - f0,
                        "fwd call": f1 - f0,
                        "fwd launch": l1 - l0,
                        "bwd call": b1 - f1,
                        "bwd: call -> our backward fn (engine, thread handoff, custom_op wrapper)": cur["g0"] - f1,
                        "bwd: our backward fn": cur["g1"] - cur["g0"],
                        "bwd: its launch": l3 - l2,
                        "bwd: our fn -> backward returns (wrapper, AccumulateGrad, handoff back)": b1 - cur["g1"],
                    }
                )
        sync()
    finally:
        softmax_op.gradients, softmax_launch.launch = orig_grad, orig_launch
    med = {k: round(statistics.median(r[k] for r in rows) / 1e3, 2) for k in rows[0]} if rows else {}
    p90 = {k: round(sorted(r[k] for r in rows)[int(0.9 * len(rows))] / 1e3, 2) for k in rows[0]} if rows else {}
    return {
        "steps": len(rows),
        "median_us": med,
        "p90_us": p90,
        "main_thread": threading.get_native_id(),
        "backward_thread": cur.get("grad_thread"),
    }


def profiles() -> dict:
    import cProfile
    import io
    import pstats

    import torch

    _, x, dy = step_ops()
    op = torch.ops.workshop.softmax

    def steps(n):
        for _ in range(n):
            op(x).backward(dy)
        sync()

    steps(20)
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        steps(100)
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=22, max_name_column_width=70)
    per_thread: dict = {}
    for e in prof.events():
        per_thread.setdefault(str(e.thread), 0.0)
        per_thread[str(e.thread)] += e.self_cpu_time_total
    profiler = cProfile.Profile()
    profiler.enable()
    steps(300)
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(25)
    lines = [l for l in text.getvalue().splitlines() if l.strip()]
    return {
        "torch_profiler_100_steps": table,
        "torch_profiler_self_us_per_thread_per_step": {k: round(v / 100, 2) for k, v in per_thread.items()},
        "cprofile_300_steps": "\n".join(lines[:40]),
    }


def env() -> dict:
    return {
        "python_threads": sorted(t.name for t in threading.enumerate()),
        "native_threads": len(os.listdir("/proc/self/task")),
        "gc_enabled": gc.isenabled(),
        "gc_frozen": gc.get_freeze_count(),
        "gc_tracked": len(gc.get_objects()),
        "gc_threshold": gc.get_threshold(),
        "gc_count": gc.get_count(),
        "loadavg": os.getloadavg(),
        "cpus": len(os.sched_getaffinity(0)),
        "switch_interval": sys.getswitchinterval(),
    }


def everything(found: dict) -> dict:
    found["env_before"] = env()
    found["measure"] = measured()
    found["split"] = split()
    found["timeline"] = timeline()
    found["profiles"] = profiles()
    found["env"] = env()
    return found


def sweeps() -> float:
    import torch

    from workshop.labs.custom_op.bench import benchmark

    t = time.time()
    for shape, dtype in SWEEPS:
        benchmark.measure_shape(shape, getattr(torch, dtype))
        torch.cuda.empty_cache()
    return round(time.time() - t, 1)


def stage(name: str) -> dict:
    gc.callbacks.append(CLOCK)
    steps = STAGES[name]
    found: dict = {"stage": name, "prepared": list(steps)}
    t = time.time()
    if "freeze_torch" in steps:
        from workshop.foundations import torch_import

        torch_import.import_torch()
    import torch

    if "cli" in steps:
        import workshop.cli.main  # noqa: F401  what `python -m workshop` imports
    if "peers" in steps:
        from workshop.labs.custom_op.bench import benchmark

        found["skipped_peers"] = benchmark.installed_peers()
    if "git" in steps:
        from workshop.foundations import results

        found["commit"] = results.git_revision()
        found["device"] = torch.cuda.get_device_name(0) if DEVICE == "cuda" else "cpu"
    if "inductor" in steps:
        f = torch.compile(lambda v: torch.softmax(v, -1), dynamic=False)
        f(torch.randn(64, 600, device=DEVICE))
    if "freeze" in steps:
        gc.freeze()
    found["prepare_s"] = round(time.time() - t, 1)
    if "measure_before" in steps:
        found["measure_before"] = measured()
    if "sweeps" in steps:
        found["sweeps_s"] = sweeps()
        found["sweeps"] = [f"{dtype} {shape}" for shape, dtype in SWEEPS]
    return everything(found)


def cli_bench() -> dict:
    """`python -m workshop bench custom_op --out /tmp/probe_bench`, run as -m runs it, with the shapes cut."""
    import runpy

    import torch

    from workshop.labs.custom_op.bench import benchmark

    gc.callbacks.append(CLOCK)
    shape, dtype = SWEEPS[0]
    benchmark.run_benchmark.__defaults__ = ([shape], [getattr(torch, dtype)], print)
    sys.argv = ["workshop", "bench", "custom_op", "--out", "/tmp/probe_bench"]
    t = time.time()
    try:
        runpy.run_module("workshop", run_name="__main__", alter_sys=True)
    except SystemExit as e:
        code = e.code
    doc = json.load(open("/tmp/probe_bench/custom_op_bench.json"))
    found = {"stage": "cli_bench", "exit": code, "bench_s": round(time.time() - t, 1), "shapes": [f"{dtype} {shape}"]}
    host = doc["host"]
    found["bench_host"] = {
        k: host[k] for k in ("step_us", "op_us", "op_grad_us", "torch_us", "clone_custom_op_us", "layer_us")
    }
    found["gc_during_bench"] = CLOCK.snapshot()
    return everything(found)


def lab() -> dict:
    t = time.time()
    done = subprocess.run(
        [sys.executable, "-m", "workshop", "run", "custom_op", "--device", DEVICE, "--n", "1", "--out", "/tmp/probe_lab"],
        capture_output=True,
        text=True,
        timeout=170,
    )
    found = {"stage": "lab", "exit": done.returncode, "seconds": round(time.time() - t, 1)}
    paths = glob.glob("/tmp/probe_lab/**/custom_op/result.json", recursive=True)
    if not paths:
        found["failed"] = (done.stdout + done.stderr)[-3000:]
        return found
    doc = json.load(open(sorted(paths)[-1]))

    def find(d):
        if isinstance(d, dict):
            if "step_us" in d and "registrations" in d:
                return d
            for v in d.values():
                r = find(v)
                if r is not None:
                    return r
        return None

    eager = find(doc) or {}
    found["lab_eager"] = {
        k: eager.get(k) for k in ("step_us", "op_us", "op_grad_us", "torch_us", "clone_custom_op_us", "layer_us")
    }
    found["lab_result"] = sorted(paths)[-1]
    return found


def short(r: dict) -> str:
    m = r.get("measure") or {}
    bits = [r.get("stage", "?")]
    if "lab_eager" in r:
        m = r["lab_eager"]
    if "bench_host" in r:
        bits.append("bench's own: " + json.dumps({k: round(v, 1) for k, v in r["bench_host"]["step_us"].items()}))
    if m.get("step_us"):
        bits.append("step_us " + json.dumps({k: round(v, 1) for k, v in m["step_us"].items()}))
    if m.get("gc"):
        bits.append(f"gc {m['gc']}")
    if r.get("split"):
        bits.append(
            "split(fwd/bwd median) "
            + json.dumps({k: (v["best"]["fwd_median_us"], v["best"]["bwd_median_us"]) for k, v in r["split"].items() if k != "gc"})
        )
    if r.get("timeline"):
        bits.append("timeline " + json.dumps(r["timeline"]["median_us"]))
    if r.get("env"):
        bits.append(f"tracked {r['env']['gc_tracked']} frozen {r['env']['gc_frozen']} threads {r['env']['native_threads']}")
    if r.get("failed"):
        bits.append("FAILED " + r["failed"][-800:])
    return " | ".join(bits)


def run_all(path: str, only=None) -> None:
    results = []
    for name in only or STAGES:
        hogs = []
        if name == "fresh_busy_cpus":
            hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(BUSY)]
            time.sleep(1)
        try:
            if name == "lab":
                found = lab()
            else:
                done = subprocess.run(
                    [sys.executable, __file__, "stage", name], capture_output=True, text=True, timeout=150
                )
                line = next((l for l in done.stdout.splitlines() if l.startswith("PROBE ")), None)
                found = json.loads(line[6:]) if line else {"stage": name, "failed": (done.stdout + done.stderr)[-3000:]}
        except subprocess.TimeoutExpired as e:
            found = {"stage": name, "failed": f"timeout: {e}"}
        finally:
            for h in hogs:
                h.kill()
                h.wait()
        results.append(found)
        print(short(found), flush=True)
        with open(path, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    if sys.argv[1] == "all":
        run_all(sys.argv[2], sys.argv[3].split(",") if len(sys.argv) > 3 else None)
    elif sys.argv[1] == "stage":
        name = sys.argv[2]
        found = cli_bench() if name == "cli_bench" else stage(name)
        print("PROBE " + json.dumps(found), flush=True)
