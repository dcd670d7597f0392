"""A check (one measured value against its threshold) and the verdicts made of checks: a lab passes when it
recorded checks and every one passed; an exercise is passing, failing, not started or not graded.

A check knows how its value meets its threshold (`relation`): at most (<=), at least (>=) or exactly (==), so
that it reads as what it is: "0.0003 (at most 0.0001)", "True (expected True)", never a "threshold" of True.

Labs make checks through LabContext.check_* and LabContext.record (workshop/lab_api.py, which also exports Check).
Two marks change how a failing check is reported:
- `diagnosis`: the check names the mistake (the pad rows have a gradient, the grid's extents are swapped). An
  exercise reports its highest-ranked failing check (`reported`): a failing diagnosis before any raw comparison.
- `secret`: the threshold is a truth the learner predicts or answers. While the check fails, what is recorded,
  printed and written (result.json, summary.md, the grade table) is the direction and size of the miss
  (`miss`: "about 2x too low", "off by one, too high", "wrong choice") and never the value, until it passes or
  the learner asks to see it (`check --show`); `masked` makes that copy.
"""

from __future__ import annotations

import dataclasses
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
    # it names the mistake: reported before raw comparisons (see the docstring)
    diagnosis: bool = False
    secret: bool = False  # its threshold is an answer: shown only as the miss while it fails
    # how the value meets the threshold: "<=" (at most), ">=" (at least), "==", "" (hidden: a secret's)
    relation: str = "=="

    def as_dict(self) -> dict:
        """The check as result.json holds it: its exercise, message (a failing check's) and diagnosis mark only
        where it has them."""
        return {
            "name": self.name,
            "passed": bool(self.passed),
            "value": as_json(self.value),
            "threshold": as_json(self.threshold),
            "relation": self.relation,
            **({"exercise": self.exercise} if self.exercise else {}),
            **({"message": self.message} if self.message and not self.passed else {}),
            **({"diagnosis": True} if self.diagnosis else {}),
        }


def as_json(value):
    """A check's value or threshold as result.json holds it: a set sorted (its printed order changes from one
    process to the next), NaN and infinities as text (JSON has none)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, set | frozenset):
        return sorted(value)
    return value


def masked(check: Check) -> Check:
    """A failing secret check as it may be shown: its value the miss, its threshold hidden."""
    if not check.secret or check.passed:
        return check
    return dataclasses.replace(
        check,
        value=miss(check.value, check.threshold),
        threshold=_("hidden until it passes (check --show)"),
        relation="",
    )


def miss(value, truth) -> str:
    """How far `value` is from `truth`, without saying `truth`: the direction and the size of the miss."""
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (value, truth))
    if not numbers:
        return _("wrong choice")
    if not math.isfinite(value):
        return _("not a finite number")
    high = value > truth
    if isinstance(value, int) and isinstance(truth, int) and abs(value - truth) == 1:
        return _("off by one, too high") if high else _("off by one, too low")
    if truth == 0:
        return _("too high") if high else _("too low")
    ratio = value / truth
    if ratio <= 0:
        return _("the wrong sign")
    factor = max(ratio, 1 / ratio)
    if factor >= 1.5:
        size = _("about {factor}x too high") if high else _("about {factor}x too low")
        return size.format(factor=_rounded(factor))
    size = _("about {percent}% too high") if high else _("about {percent}% too low")
    return size.format(percent=_rounded(100 * abs(ratio - 1)))


def _rounded(x: float) -> str:
    """Two significant digits below 10, whole numbers above: 2.5, 0.31, 12, 1000."""
    return f"{x:.2g}" if x < 10 else f"{x:.0f}"


def written(value) -> str:
    """A check's value or threshold written whole: as text; None (no mistake named, nothing expected), True and
    False as words of the language in use, never Python's "None", "True", "False" in a Spanish line."""
    if value is None:
        return _("none")
    if isinstance(value, bool):
        # i18n: a check's value or threshold that is a yes/no fact, e.g. "registered: True (expected True)"
        return _("True") if value else _("False")
    return str(value)


def value_text(value) -> str:
    """A check's value or threshold as a line shows it: floats to 3 significant digits, the rest written whole."""
    return f"{value:.3g}" if isinstance(value, float) else written(value)


def outcome(check: dict) -> str:
    """A check (as result.json has it) in one line, "name: value (what it expects)", in the language in use:
    "at most 0.0001", "at least 0.98", "expected True"; a check recorded before checks had a relation:
    "threshold 2.0"; a secret check's hidden threshold says so itself (relation "")."""
    wording = {
        "<=": N_("at most {threshold}"),
        ">=": N_("at least {threshold}"),
        "==": N_("expected {threshold}"),
        "": "{threshold}",
    }.get(check.get("relation"), N_("threshold {threshold}"))
    return _("{name}: {value} ({expected})").format(
        name=check["name"],
        value=value_text(check["value"]),
        expected=_(wording).format(threshold=value_text(check["threshold"])),
    )


def bound(check: dict, text=value_text) -> str:
    """A check's threshold in a table cell: "<= 0.0001", ">= 0.98", or the expected value itself (`text`
    writes the threshold: value_text's 3 digits, or str where the value beside it is written whole)."""
    sign = {"<=": "<= ", ">=": ">= "}.get(check.get("relation"), "")
    return sign + text(check["threshold"])


def reported(checks: list[Check]) -> Check | None:
    """The failing check an exercise reports: the first failing diagnosis, else the first failing check."""
    failing = [c for c in checks if not c.passed]
    return next((c for c in failing if c.diagnosis), failing[0] if failing else None)


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
