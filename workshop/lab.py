"""What a lab is (LabSpec), and what it gets when it runs (LabContext): checks, artifacts, summary.

A lab is one package under workshop/labs/ whose __init__.py defines `LAB = LabSpec(...)`. The spec is cheap to
import (no torch); `entry` names the function that does the work, imported only in the lab's own process.
That function takes a LabContext, records checks with ctx.check_*(), writes artifacts with ctx.write_*(), and
sets ctx.summary; the runner turns that into result.json and summary.md.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass, field
from pathlib import Path

from workshop import atomic


@dataclass(frozen=True)
class LabSpec:
    name: str
    order: int  # position in a full run
    title: str  # one line for `python -m workshop list`
    entry: str  # "module:function", called with a LabContext
    bench: str | None = None  # optional "module:function" for `python -m workshop bench NAME`

    def load(self, what: str = "entry"):
        module, _, function = getattr(self, what).partition(":")
        return getattr(importlib.import_module(module), function)


@dataclass
class Check:
    name: str
    passed: bool
    value: object
    threshold: object

    def as_dict(self) -> dict:
        value = self.value
        if isinstance(value, float) and not math.isfinite(value):
            value = str(value)  # JSON has no NaN/inf
        return {
            "name": self.name,
            "passed": bool(self.passed),
            "value": value,
            "threshold": self.threshold,
        }


@dataclass
class LabContext:
    name: str
    out_dir: Path  # results/<run-id>/<lab>/, already created and empty
    device: str  # "cpu" or "cuda"
    n_procs: int  # --n: processes for the distributed demos
    seed: int
    checks: list[Check] = field(default_factory=list)
    summary: str = (
        ""  # Markdown: what the learner should look at; the runner appends the checks table
    )
    extra: dict = field(default_factory=dict)  # merged into result.json

    # ---- checks: each compares a measured value with a threshold, so each one can fail ----
    def check_max(self, name: str, value: float, threshold: float) -> Check:
        """Passes when value <= threshold (errors, times). NaN fails."""
        value = float(value)
        return self._add(Check(name, value <= threshold, value, threshold))

    def check_min(self, name: str, value: float, threshold: float) -> Check:
        """Passes when value >= threshold (accuracies, bandwidths). NaN fails."""
        value = float(value)
        return self._add(Check(name, value >= threshold, value, threshold))

    def check_equal(self, name: str, value, expected) -> Check:
        return self._add(Check(name, value == expected, value, expected))

    def _add(self, check: Check) -> Check:
        self.checks.append(check)
        mark = "ok  " if check.passed else "FAIL"
        print(
            f"[{self.name}] {mark} {check.name}: {check.value!r} (threshold {check.threshold!r})",
            flush=True,
        )
        return check

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    # ---- artifacts, all written atomically under out_dir ----
    def path(self, name: str) -> Path:
        return self.out_dir / name

    def write_json(self, name: str, obj) -> Path:
        return atomic.write_json(self.path(name), obj)

    def write_text(self, name: str, text: str) -> Path:
        return atomic.write_text(self.path(name), text)

    def save_figure(self, name: str, fig) -> Path:
        return atomic.save_figure(self.path(name), fig)
