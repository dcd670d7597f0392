"""storage.png: each view of the LM head drawn as the storage indices its first elements read, so that sizes,
strides and offset can be seen: a transpose walks the storage by columns, a narrow starts further in, an expand
reads the same elements again (stride 0), a copy has a storage of its own."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from workshop.labs.tensor.anatomy import storage_indices

CORNER = (4, 6)  # the rows and columns of each view drawn: its top-left corner


def draw(rows: list[dict], title: str):
    """One panel per 2-D view: its top-left CORNER, each cell the storage index it reads (the colour too)."""
    flat = [r for r in rows if len(r["size"]) == 2]
    fig, axes = plt.subplots(2, (len(flat) + 1) // 2, figsize=(4 * ((len(flat) + 1) // 2), 6.5))
    for ax, row in zip(axes.flat, flat, strict=False):
        shown = [min(s, c) for s, c in zip(row["size"], CORNER, strict=True)]
        index = storage_indices(shown, row["stride"], row["offset"])  # (rows, cols)
        ax.imshow(index.numpy(), cmap="viridis", aspect="auto")
        for (i, j), value in zip(
            ((i, j) for i in range(shown[0]) for j in range(shown[1])),
            index.flatten().tolist(),
            strict=True,
        ):
            ax.text(j, i, str(value), ha="center", va="center", fontsize=7, color="white")
        storage = "" if row["shares"] else " (copy)"
        ax.set_title(
            f"{row['expression']}{storage}\nsize {row['size']} stride {row['stride']} "
            f"offset {row['offset']}",
            fontsize=8,
        )
        ax.set_xticks([])
        ax.set_yticks([])
    for ax in list(axes.flat)[len(flat) :]:
        ax.axis("off")
    fig.suptitle(title)
    fig.tight_layout()
    return fig
