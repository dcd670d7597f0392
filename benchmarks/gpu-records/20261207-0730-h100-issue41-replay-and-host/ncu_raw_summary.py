"""Summarize `ncu --csv --page raw --metrics ...` output of ncu_replay.py: one row per profiled graph replay, labelled
from LABELS.json (in node mode, the graph's n kernel results summed: durations and bytes added, hit rates from the
summed sectors).

Usage: ncu_raw_summary.py NCU.csv LABELS.json graph|node > summary.csv
"""

import csv
import json
import sys

log, labels_path, mode = sys.argv[1:4]
labels = json.load(open(labels_path))
with open(log, encoding="utf-8", errors="replace") as f:
    lines = f.read().splitlines()
start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
rows = list(csv.reader(lines[start:]))
header, data = rows[0], [r for r in rows[2:] if r and r[0].isdigit()]
results = [dict(zip(header, r, strict=False)) for r in data]


def num(d, key):
    v = d.get(key, "").replace(",", "")
    try:
        return float(v)
    except ValueError:
        return float("nan")


SUMS = [
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_sectors_op_read.sum",
    "lts__t_sectors_op_write.sum",
    "lts__t_sectors_op_read_lookup_hit.sum",
    "lts__t_sectors_op_write_lookup_hit.sum",
]


def hit_rate(group, s, op):
    """L2 hit % of the op's sectors: from the summed sector counts where ncu gave them, else the results' own
    lts__t_sector_op_<op>_hit_rate.pct weighted by their sectors (or plain mean)."""
    hits, total = s[f"lts__t_sectors_op_{op}_lookup_hit.sum"], s[f"lts__t_sectors_op_{op}.sum"]
    if hits == hits and total == total and total > 0:
        return round(100 * hits / total, 1)
    pcts = [num(g, f"lts__t_sector_op_{op}_hit_rate.pct") for g in group]
    weights = [num(g, f"lts__t_sectors_op_{op}.sum") for g in group]
    if all(w == w for w in weights) and sum(weights) > 0:
        return round(sum(p * w for p, w in zip(pcts, weights)) / sum(weights), 1)
    return round(sum(pcts) / len(pcts), 1)


out = csv.writer(sys.stdout)
out.writerow(
    ["direction", "contender", "dtype", "shape", "n", "results", "us per call", "DRAM MB read per call",
     "DRAM MB written per call", "L2 read hit %", "L2 write hit %", "kernel"]
)
i = 0
for label in labels:
    k = label["n"] if mode == "node" else 1
    group = results[i : i + k]
    i += k
    if not group:
        break
    s = {m: sum(num(g, m) for g in group) for m in SUMS}
    n = label["n"]
    # durations: ncu reports gpu__time_duration in ns (or us/ms per the units row; ns here with --print-units base)
    out.writerow(
        [
            label["direction"],
            label["contender"],
            label["dtype"],
            "x".join(map(str, label["shape"])),
            n,
            len(group),
            round(s["gpu__time_duration.sum"] / 1000 / n, 2),
            round(s["dram__bytes_read.sum"] / 1e6 / n, 1),
            round(s["dram__bytes_write.sum"] / 1e6 / n, 1),
            hit_rate(group, s, "read"),
            hit_rate(group, s, "write"),
            group[0].get("Kernel Name", "")[:60],
        ]
    )
print(f"# {len(results)} results, {i} used", file=sys.stderr)
