"""ncu raw CSV + labels.json -> one line per (dtype, shape, direction, contender): the median of each metric."""
import csv, json, statistics, sys

rows = list(csv.reader(open(sys.argv[1])))
start = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
head = rows[start]
data = [r for r in rows[start + 2 :] if len(r) == len(head)]
labels = json.load(open(sys.argv[2]))
metrics = [m for m in head if "__" in m and m not in ("device__attribute_display_name",)]
metrics = [m for m in sys.argv[3].split(",") if m in head] if len(sys.argv) > 3 else metrics
assert len(data) == len(labels), (len(data), len(labels))
groups = {}
for label, r in zip(labels, data):
    key = (label["dtype"], "x".join(map(str, label["shape"])), label["direction"], label["contender"])
    groups.setdefault(key, []).append(r)
print("dtype,shape,direction,contender,kernel," + ",".join(metrics))
for key, launches in groups.items():
    def med(m):
        try:
            return f"{statistics.median(float(r[head.index(m)].replace(',', '')) for r in launches):.4g}"
        except ValueError:
            return "?"
    print(",".join(key) + "," + launches[0][head.index("Kernel Name")][:40] + "," + ",".join(med(m) for m in metrics))
