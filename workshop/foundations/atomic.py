"""Atomic file writes: write a temporary file beside the target, then rename it over (os.replace).

A reader sees the old file or the new one, never half of one, even if the writer is killed mid-way.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from pathlib import Path


def write_bytes(path: str | Path, data: bytes) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(
            fd, 0o644
        )  # mkstemp makes 0600; results are for everyone who reads the run folder
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path


def write_text(path: str | Path, text: str) -> Path:
    return write_bytes(path, text.encode())


def write_json(path: str | Path, obj) -> Path:
    return write_text(path, json.dumps(obj, indent=2, default=str) + "\n")


def save_figure(path: str | Path, fig) -> Path:
    """Save a matplotlib figure atomically (format from the suffix) and close it."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format=Path(path).suffix.lstrip("."), dpi=120, bbox_inches="tight")
    plt.close(fig)
    return write_bytes(path, buf.getvalue())


def save_torch(path: str | Path, obj) -> Path:
    import torch

    buf = io.BytesIO()
    torch.save(obj, buf)
    return write_bytes(path, buf.getvalue())
