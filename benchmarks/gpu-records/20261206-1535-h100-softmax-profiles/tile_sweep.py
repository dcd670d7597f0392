"""Issue 41: the one-pass kernels' tile (TILE_BYTES) and elements a thread (PER_THREAD) at the mid shapes where
Liger's kernel (one row a program, 4-16 warps) beats ours; each setting and Liger as a fraction of the copy of the
same bytes (sweep.measure: CUDA graphs, inputs rotating past L2). Writes OUT.json after each shape."""

import json
import sys

import torch

from workshop.labs.custom_op.bench import benchmark as bench
from workshop.labs.custom_op.bench import sweep

SETTINGS = [{}] + [
    {"TILE_BYTES": t, "PER_THREAD": p}
    for t in (2048, 4096, 8192)
    for p in (8, 16, 32)
    if (t, p) != (8192, 32)
]
SHAPES = [
    (4096, 1024),
    (4096, 8192),
    (4096, 16384),
    (4096, 600),
    (4096, 2048),
    (4096, 4096),
    (32768, 600),
]
doc = []
for dtype in (torch.bfloat16, torch.float32):
    for shape in SHAPES:
        rows = sweep.measure(shape, dtype, SETTINGS, print)
        inputs = bench.rotating_inputs(shape, dtype)
        peers = bench.contenders(inputs, dtype, ("liger", "inductor"))
        for peer in ("liger", "inductor"):
            row = {"setting": peer}
            for d in ("fwd", "bwd"):
                copy = min(bench.copy_ms(inputs, d).values())
                row[f"{d}_vs_copy"] = copy / bench.graph_ms(peers[d][peer], inputs["n"])
            print(
                f"{str(dtype):>15} {str(shape):>15} {peer:60} fwd {row['fwd_vs_copy']:.3f}"
                f"  bwd {row['bwd_vs_copy']:.3f}",
                flush=True,
            )
            rows.append(row)
        doc.append({"dtype": str(dtype), "shape": shape, "rows": rows})
        del inputs, peers
        torch.cuda.empty_cache()
        with open(sys.argv[1], "w") as out:
            json.dump(doc, out, indent=1)
