"""Issue 41 item 2 at the small shapes ((1024, 600) and below): the benchmark's measure_shape (device time by CUDA
graph replay, eager by do_bench) for each, every peer. Writes OUT.json."""

import json
import sys

import torch

from workshop.labs.custom_op.bench import benchmark

found = {}
for dtype in (torch.float32, torch.bfloat16):
    for shape in ((1024, 600), (256, 600), (64, 600)):
        r = benchmark.measure_shape(shape, dtype)
        found[f"{str(dtype)[6:]} {shape[0]}x{shape[1]}"] = r
        print(str(dtype)[6:], shape, {d: {k: round(v) if v else v for k, v in r[d].items()} for d in ("fwd", "bwd")}, flush=True)
        torch.cuda.empty_cache()
json.dump(found, open(sys.argv[1], "w"), indent=1)
