"""`import torch` for the processes of a check, where it is most of the learner's wait: the lab's process and the
learner's worker each import it, at once (the worker is started first: learner/learner_code.py's Worker.begin).

The import builds a few hundred thousand objects. With Python's cyclic garbage collector off while it runs, no
collection walks them again and again (measured on the 2-core machine: 1.84 s of CPU instead of 2.03 s, median
of 8); frozen afterwards (gc.freeze), no later collection walks them either, nor the last one at exit, which took
0.6-0.9 s after a check's verdict was written.
"""

from __future__ import annotations

import gc
import importlib
import sys
import types


def import_torch() -> types.ModuleType:
    """torch, imported with the collector off, then its objects frozen (kept out of every later collection);
    already imported (a test's process), just torch."""
    if "torch" in sys.modules:
        return sys.modules["torch"]
    enabled = gc.isenabled()
    gc.disable()
    try:
        return importlib.import_module("torch")
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
