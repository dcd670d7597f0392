"""Summarize an ncu --csv --page details log: one row per kernel with the figures that say what limits it."""

import collections
import csv
import sys

METRICS = {
    "gpu__time_duration.sum": "us",
    "dram__bytes_read.sum": "MB read",
    "dram__bytes_write.sum": "MB written",
    "DRAM Throughput": "DRAM %",
    "L2 Cache Throughput": "L2 %",
    "Compute (SM) Throughput": "SM %",
    "Grid Size": "grid",
    "Block Size": "block",
    "Registers Per Thread": "regs",
    "Waves Per SM": "waves",
    "Theoretical Occupancy": "occ. theor. %",
    "Achieved Occupancy": "occ. achieved %",
    "Warp Cycles Per Issued Instruction": "cycles/issue",
    "L2 Hit Rate": "L2 hit %",
}
with open(sys.argv[1], encoding="utf-8", errors="replace") as log:
    rows = list(csv.reader(log))
hdr = None
kern = collections.OrderedDict()
for r in rows:
    if r and r[0] == "ID":
        hdr = r
        continue
    if not hdr or len(r) < 17:
        continue
    d = dict(zip(hdr, r + [""] * (len(hdr) - len(r)), strict=True))
    key = d["ID"]
    k = kern.setdefault(key, {"kernel": d["Kernel Name"], "rules": []})
    name = d["Metric Name"]
    if name in METRICS:
        v = d["Metric Value"].replace(",", "")
        if name == "gpu__time_duration.sum":
            v = f"{float(v) / 1000:.1f}"
        elif name.startswith("dram__bytes"):
            v = f"{float(v) / 1e6:.1f}"
        k[METRICS[name]] = v
    if d["Rule Description"] and d["Estimated Speedup"]:
        k["rules"].append(
            f"{d['Rule Name']} ({d['Estimated Speedup']}%): {d['Rule Description'][:160]}"
        )
cols = ["kernel"] + list(METRICS.values())
w = csv.writer(sys.stdout)
w.writerow(cols + ["rules"])
for k in kern.values():
    if "FillFunctor" in k["kernel"] or (
        "inductor" in k["kernel"] and "vectorized_elementwise" in k["kernel"]
    ):
        continue
    w.writerow([k.get(c, "") for c in cols] + [" | ".join(k["rules"])])
