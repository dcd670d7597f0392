"""Issue 41: Nsight Compute on the shapes where a peer's kernel beats ours (one launch each, everything warmed
first; the profiler runs only around each case, right after its warm-up). Run under ncu --profile-from-start off."""

import torch

from workshop.labs.custom_op.bench import benchmark

CASES = [  # (dtype, shape, peers): the judged mid shapes where Liger wins, then the small ones
    (torch.bfloat16, (4096, 1024), ("liger", "inductor")),
    (torch.bfloat16, (4096, 600), ("liger", "inductor")),
    (torch.bfloat16, (4096, 256), ("liger", "inductor")),
    (torch.float32, (4096, 1024), ("liger", "inductor")),
    (torch.float32, (4096, 8192), ("liger", "inductor")),
    (torch.bfloat16, (4096, 16384), ("liger", "inductor")),
    (torch.float32, (4096, 4096), ("liger",)),
    (torch.bfloat16, (4096, 4096), ("liger",)),
    (torch.float32, (1024, 600), ("liger", "inductor")),
    (torch.bfloat16, (1024, 600), ("liger", "inductor")),
    (torch.bfloat16, (64, 600), ("liger", "inductor")),
]
for dtype, shape, peers in CASES:
    inputs = benchmark.rotating_inputs(shape, dtype)
    fns = benchmark.contenders(inputs, dtype, peers)
    runs = []
    for direction in ("fwd", "bwd"):
        src, dst = inputs["copy"][direction][0]
        calls = {name: (lambda f=fn: f(0)) for name, fn in fns[direction].items()}
        calls["copy"] = lambda s=src, d=dst: torch.neg(s, out=d)
        for name, call in calls.items():
            for _ in range(3):  # compile, autotune, warm
                call()
            runs.append((f"{direction} {name} {str(dtype)[6:]} {shape[0]}x{shape[1]}", call))
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for label, call in runs:
        torch.cuda.nvtx.range_push(label)
        call()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    torch.cuda.profiler.stop()
