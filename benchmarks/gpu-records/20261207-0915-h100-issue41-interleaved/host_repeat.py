"""The bench's host ratios (eager_cost.measure: best of 5 interleaved blocks) measured 5 times in one process:
how far one measurement moves. Prints one line per repeat and the medians."""

import json
import statistics

from workshop.labs.custom_op import eager_cost
from workshop.labs.custom_op.bench import report

rows = []
for repeat in range(5):
    found = eager_cost.measure("cuda")
    host = report.evaluate_host(found)
    row = {
        "op_us": found["op_us"],
        "clone_us": found["clone_custom_op_us"],
        "call_vs_clone": host["call_vs_clone"],
        "step_ours_us": found["step_us"][found["registration"]],
        "step_torch_us": found["step_us"]["torch.softmax"],
        "step_vs_torch": host["step_vs_torch"],
    }
    rows.append(row)
    print(repeat, json.dumps({k: round(v, 3) for k, v in row.items()}))
print("median", json.dumps({k: round(statistics.median(r[k] for r in rows), 3) for k in rows[0]}))
