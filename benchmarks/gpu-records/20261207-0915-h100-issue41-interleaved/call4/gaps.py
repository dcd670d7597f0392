"""Issue 41: where Liger's 3-5% in the benchmark's replay comes from, kernels or the gaps between them. The
benchmark's own graphs (bench.graph_timer: call(0), ..., call(n - 1) back to back on rotating inputs) of ours and
Liger's forward: first timed as the benchmark times them (interleaved_ms), then replayed REPLAYS times each,
interleaved, under torch.profiler (CUPTI): every kernel node's start and duration. Per shape and contender: the
median kernel duration, and the median gap from one kernel's end to the next one's start inside a replay."""

import json
import statistics
import sys

import torch
from torch.profiler import ProfilerActivity, profile

from workshop.labs.custom_op.bench import benchmark as bench

SHAPES = [(torch.bfloat16, (4096, 4096)), (torch.bfloat16, (4096, 8192)), (torch.float32, (4096, 8192)), (torch.float32, (4096, 4096))]
REPLAYS = 6
found = []
for dtype, shape in SHAPES:
    inputs = bench.rotating_inputs(shape, dtype)
    fns = bench.contenders(inputs, dtype, ("liger",))["fwd"]
    timers = {name: bench.graph_timer(fns[name], inputs["n"]) for name in ("ours", "liger")}
    ms = bench.interleaved_ms(timers)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(REPLAYS):
            for name in ("ours", "liger"):
                timers[name]()
    events = sorted(
        (e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA),
        key=lambda e: e.time_range.start,
    )
    row = {"dtype": str(dtype)[6:], "shape": shape, "n": inputs["n"], "bench_ms_per_call": ms}
    for name, key in (("ours", "one_pass"), ("liger", "single_block_forward")):
        ks = [e for e in events if key in e.name]
        durs = [e.time_range.end - e.time_range.start for e in ks]  # us
        gaps = [b.time_range.start - a.time_range.end for a, b in zip(ks, ks[1:])]
        inside = [g for g in gaps if g < 10]  # within a replay; between replays the host waits
        row[name] = {
            "kernels": len(ks),
            "median_kernel_us": statistics.median(durs) if durs else None,
            "median_gap_us": statistics.median(inside) if inside else None,
            "gaps_counted": len(inside),
            "replay_us_per_call": (statistics.median(durs) + (statistics.median(inside) if inside else 0)) if durs else None,
        }
    found.append(row)
    print(json.dumps(row), flush=True)
    del timers, fns, inputs
    torch.cuda.empty_cache()
json.dump(found, open(sys.argv[1], "w"), indent=1)
