"""A check (one measured value against its threshold) and the verdicts made of checks: a lab passes when it
recorded checks and every one passed; an exercise is passing, failing, not started or not graded.

Labs make checks through LabContext.check_* (workshop/lab.py, which also exports Check).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from workshop.i18n import N_, _

# How an exercise stands after a graded run (result.json "exercises" -> status). Stored in English, as keys;
# translated where shown: _(status).
PASSING, FAILING = N_("passing"), N_("failing")
NOT_STARTED, NOT_GRADED = N_("not started"), N_("not graded")


@dataclass
class Check:
    name: str
    passed: bool
    value: object
    threshold: object
    exercise: str | None = None  # the id of the exercise this check grades
    message: str | None = None  # on failure: what the value says about the mistake, and what to do

    def as_dict(self) -> dict:
        value = self.value
        if isinstance(value, float) and not math.isfinite(value):
            value = str(value)  # JSON has no NaN/inf
        out = {
            "name": self.name,
            "passed": bool(self.passed),
            "value": value,
            "threshold": self.threshold,
        }
        if self.exercise:
            out["exercise"] = self.exercise
        if self.message and not self.passed:
            out["message"] = self.message
        return out


def all_passed(checks: list[Check]) -> bool:
    """A lab (or an exercise) passes when it recorded checks and every one passed."""
    return bool(checks) and all(c.passed for c in checks)


def exercise_status(checks: list[Check]) -> str:
    """How an exercise stands after its checks: not graded, passing, not started (a stub), or failing."""
    failed = next((c for c in checks if not c.passed), None)
    if not checks:
        return NOT_GRADED
    if failed is None:
        return PASSING
    # A stub's check records "not started" as its value, in the run's language.
    return NOT_STARTED if failed.value == _(NOT_STARTED) else FAILING
