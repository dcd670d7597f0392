"""ncu's raw CSV (one row a kernel launch, in launch order) + labels.json -> ncu_kernels.csv: one line per
(dtype, shape, direction, contender), the median of each metric over its launches.
Usage: python3 summarize.py ncu_raw.csv.gz labels.json > ncu_kernels.csv"""

import csv
import gzip
import json
import statistics
import sys

METRICS = [
    "gpu__time_duration.sum",
    "smsp__inst_executed.sum",
    "launch__registers_per_thread",
    "launch__grid_size",
    "launch__block_size",
    "launch__waves_per_multiprocessor",
    "launch__occupancy_limit_registers",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
]
rows = list(csv.reader(gzip.open(sys.argv[1], "rt")))
start = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
head = rows[start]
data = [r for r in rows[start + 2 :] if len(r) == len(head)]  # the row after the header holds the units
labels = json.load(open(sys.argv[2]))
assert len(data) == len(labels), (len(data), len(labels))
groups = {}
for label, r in zip(labels, data):
    key = (label["dtype"], "x".join(map(str, label["shape"])), label["direction"], label["contender"])
    groups.setdefault(key, []).append(r)
print("dtype,shape,direction,contender,kernel," + ",".join(METRICS))
for key, launches in groups.items():
    cells = [
        f"{statistics.median(float(r[head.index(m)].replace(',', '')) for r in launches):.4g}" for m in METRICS
    ]
    print(",".join(key) + "," + launches[0][head.index("Kernel Name")] + "," + ",".join(cells))
