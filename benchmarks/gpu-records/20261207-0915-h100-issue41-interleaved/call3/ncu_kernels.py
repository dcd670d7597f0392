"""Issue 41: why Liger's and Inductor's softmax kernels finish 1-3% before ours at rows of 600 to 16,384 in the
benchmark's interleaved rounds (gpu record 20261207-0915). Run under
`ncu --profile-from-start off --metrics ... python3 ncu_kernels.py LABELS.json`: each contender's kernel of one
call, compiled and warmed before, is profiled CALLS times (ncu flushes the caches before each: cold L2, as the
benchmark's rotation). The labels, in launch order, go to LABELS.json."""

import json
import sys

import torch

from workshop.labs.custom_op.bench import benchmark as bench

SHAPES = [
    (torch.float32, (1024, 600)),
    (torch.float32, (64, 600)),
    (torch.float32, (4096, 4096)),
    (torch.float32, (4096, 8192)),
    (torch.bfloat16, (4096, 4096)),
    (torch.bfloat16, (4096, 8192)),
]
CALLS = 3
bench.ROTATE_BYTES = 1  # one input set: ncu flushes the caches itself

labels = []
for dtype, shape in SHAPES:
    inputs = bench.rotating_inputs(shape, dtype)
    fns = bench.contenders(inputs, dtype, ("liger", "inductor"))
    for direction, by_name in fns.items():
        for name in ("ours", "liger", "inductor"):
            fn = by_name[name]
            for _ in range(3):
                fn(0)  # compile, warm
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
            for _ in range(CALLS):
                fn(0)
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
            labels += [{"dtype": str(dtype)[6:], "shape": list(shape), "direction": direction, "contender": name}] * CALLS
    with open(sys.argv[1], "w") as f:
        json.dump(labels, f, indent=1)
print(f"profiled {len(labels)} kernel launches", flush=True)
