"""Lab checks whose measured value would answer an exercise: a count that ANSWERS asks for, a figure of a
kernel that KERNEL_EXPLAINED may explain. The summary's checks table shows every check's value, so these
record whether the value held (or the value coarsened so that it no longer gives the exact figure away).
A failure of one is the lab's own bug, not the learner's: its message then says what was measured.
"""

from __future__ import annotations

import math

from workshop.i18n import _
from workshop.lab_api import Check, LabContext


def check_holds(ctx: LabContext, name: str, value, expected) -> Check:
    """Passes when value == expected; records True or False, and the value only in a failure's message."""
    held = value == expected
    message = None if held else _("measured {value!r}, expected {expected!r}")
    return ctx.check_equal(
        name, held, True, message=message and message.format(value=value, expected=expected)
    )


def two_decimals(value: float, rounding) -> float:
    """value to 2 decimals, rounded down (math.floor, shown against a lower bound) or up (math.ceil, against an
    upper bound): shown against its bound, it can only fail where value does."""
    return rounding(value * 100) / 100 if math.isfinite(value) else value
