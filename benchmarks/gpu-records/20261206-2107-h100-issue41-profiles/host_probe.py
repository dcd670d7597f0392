"""Issue 41: why torch's forward + backward step at (64, 600) measures 2-5x slower inside `python -m workshop bench
custom_op` than in a fresh process (81.8 us in ../20261206-1535 eager.json; 204.5 and 396.6 in two benchmarks).
Each stage is one fresh process (`python3 host_probe.py STAGE`), printing one JSON line; the driver
(`python3 host_probe.py all OUT.json`) runs them in turn. Every stage times the same thing, eager_cost.measure's step,
plus each step's calls alone (per block, all 5 blocks kept: the spread, not only the best)."""

import json
import subprocess
import sys
import time

STAGES = ["measure_first", "measure_after_warm", "after_peers", "cli_bench_tiny", "steps_blocks", "steps_blocks_after_measure"]


def block_times(fns: dict, blocks: int = 5, seconds: float = 0.02) -> dict:
    """us per call of each fn, every block kept (interleaved as eager_cost.per_call_us does)."""
    import torch

    def per_call(fn, n):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - start) / n

    calls = {}
    for name, fn in fns.items():
        first = per_call(fn, 1)
        second = per_call(fn, 1)
        calls[name] = max(1, min(2000, int(seconds / max(second, 1e-9))))
        calls[f"{name} first/second us"] = (round(first * 1e6, 1), round(second * 1e6, 1))
    out = {name: [] for name in fns}
    for _ in range(blocks):
        for name, fn in fns.items():
            out[name].append(round(per_call(fn, calls[name]) * 1e6, 1))
    return {"us_per_block": out, "calls": calls}


def steps() -> dict:
    import torch

    x = torch.randn(64, 600, device="cuda", requires_grad=True)
    dy = torch.randn(64, 600, device="cuda")
    xs = torch.randn(64, 600, device="cuda", requires_grad=True)
    return {
        "torch step (shared x)": lambda: torch.softmax(x, -1).backward(dy),
        "ours step (shared x)": lambda: torch.ops.workshop.softmax(x, -1).backward(dy),
        "torch step (own x)": lambda: torch.softmax(xs, -1).backward(dy),
        "torch fwd only (grad)": lambda: torch.softmax(x, -1),
    }


def stage(name: str) -> dict:
    import threading

    import torch

    from workshop.labs.custom_op import eager_cost

    found = {"stage": name}
    if name == "measure_first":
        found["step_us"] = eager_cost.measure("cuda")["step_us"]
    elif name == "measure_after_warm":
        block_times(steps())
        found["step_us"] = eager_cost.measure("cuda")["step_us"]
    elif name == "after_peers":
        from workshop.labs.custom_op.bench import benchmark

        benchmark.installed_peers()
        found["step_us"] = eager_cost.measure("cuda")["step_us"]
    elif name == "cli_bench_tiny":
        from workshop.cli.main import main
        from workshop.labs.custom_op.bench import benchmark

        benchmark.run_benchmark.__defaults__ = ([(4096, 600)], [torch.float32], print)
        main(["bench", "custom_op", "--out", "/tmp/host_probe_bench", "--lang", "en"])
        doc = json.load(open("/tmp/host_probe_bench/custom_op_bench.json"))
        found["step_us"] = doc["host"]["step_us"]
    elif name == "steps_blocks":
        found["blocks"] = block_times(steps())
    elif name == "steps_blocks_after_measure":
        eager_cost.measure("cuda")
        found["blocks"] = block_times(steps())
    found["threads"] = sorted(t.name for t in threading.enumerate())
    found["deterministic"] = torch.are_deterministic_algorithms_enabled()
    found["anomaly"] = torch.is_anomaly_enabled()
    found["grad_mode"] = torch.is_grad_enabled()
    return found


if __name__ == "__main__":
    if sys.argv[1] != "all":
        print("PROBE " + json.dumps(stage(sys.argv[1])), flush=True)
        sys.exit(0)
    results = []
    for name in STAGES + STAGES[:1]:  # the first again at the end: the machine's own drift
        done = subprocess.run([sys.executable, __file__, name], capture_output=True, text=True, timeout=120)
        line = next((l for l in done.stdout.splitlines() if l.startswith("PROBE ")), None)
        results.append(json.loads(line[6:]) if line else {"stage": name, "failed": done.stderr[-2000:]})
        print(json.dumps(results[-1])[:1500], flush=True)
        json.dump(results, open(sys.argv[2], "w"), indent=1)
