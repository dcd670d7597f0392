"""The checks of an exercise graded without autograd (autograd_watch.py states what that forbids).

Two checks, made here in the lab's process from two kinds of evidence:
- the learner's source, read here (source_check.autograd_uses): autograd named in the function or in what it
  uses; a hostile learner can hide a name from a reading of the text;
- what the worker's watcher saw while the function ran, on every thread (Solution.seen): evidence gathered
  where the learner's code runs, so a hostile learner can forge it; an honest one cannot miss it.
"""

from __future__ import annotations

from workshop.i18n import _

EXAMPLES = 3  # findings named in a message


def check_no_autograd(ctx, function: str, impl) -> None:
    """Record both checks for `function`, graded through `impl` (a Solution with watch="autograd")."""
    scanned = [f"{f.what} (line {f.line})" for f in impl.scanned]
    ctx.check_max(
        _("{function}'s code names no autograd (the grader's reading of your file)").format(
            function=function
        ),
        len(scanned),
        0,
        message=_(
            "{function} names autograd: {found}. Write the formulas with plain tensor ops."
        ).format(function=function, found=", ".join(scanned[:EXAMPLES])),
    )
    ctx.check_max(
        _("{function} used no autograd: ops run by its engine or recorded for it").format(
            function=function
        ),
        impl.seen_count,
        0,
        message=_(
            "{function} used autograd: {evidence}. Write the formulas with plain tensor ops."
        ).format(function=function, evidence="; ".join(impl.seen[:EXAMPLES])),
    )
