"""`python -m tools.softmax_profile fwd:bfloat16:32768x600 ...`: each case once, for a profiler.

Runs every case once to compile and warm up, then once more between cudaProfilerStart/Stop, so that

    ncu --clock-control none --profile-from-start off --section SpeedOfLight --section Occupancy \\
        --section WarpStateStats python -m tools.softmax_profile CASE ...

profiles exactly one launch of our kernels per case (benchmarks/custom_op/README.md reads its DRAM throughput,
occupancy and stall reasons).
"""

import functools
import sys

import torch

from workshop.labs.custom_op.bench import benchmark as bench


def case(spec: str):
    """'fwd:bfloat16:32768x600' -> a function that runs that call once."""
    direction, dtype, shape = spec.split(":")
    rows, cols = map(int, shape.split("x"))
    x = torch.randn(rows, cols, device="cuda", dtype=getattr(torch, dtype))
    inputs = {"x": [x], "y": [torch.softmax(x, -1)], "dy": [torch.randn_like(x)]}  # one input set
    ours = bench.contenders(inputs, x.dtype, peers=())[direction]["ours"]
    return functools.partial(ours, 0)


def main(specs: list[str]) -> int:
    calls = [case(spec) for spec in specs]
    for call in calls:
        call()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for call in calls:
        call()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
