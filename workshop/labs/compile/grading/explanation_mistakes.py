"""What a wrong field of compile.kernel's KERNEL_EXPLAINED says about the mistake, as data (Diagnosis), read in
order: the first that the learner's value shows names it.

Each message is computed from the learner's value and the kernel they picked (run_grading.kernel_truth's facts):
an element count instead of bytes, a buffer counted twice or left out, the grid of another kernel, ... None gives
this run's figure away. No torch import here: exercises.py, which the CLI imports, declares them.
"""

import math

from workshop.declarations.diagnosis import Diagnosis, Evidence
from workshop.i18n import N_, _, ngettext
from workshop.labs.compile.grading.kernel_fields import (
    as_grid,
    extents_only,
    missing_ops,
    names,
    not_fused,
    op_key,
)
from workshop.labs.compile.loops import REDUCTION_KINDS

REDUCTION_OPS = {  # aten ops that reduce (compared without leading underscores)
    *("softmax", "log_softmax", "native_layer_norm", "layer_norm", "sum", "mean", "amax", "amin"),
    *("max", "min", "var_mean", "nll_loss_forward", "prepare_softmax_online", "logsumexp"),
}
ACCESS = {
    "bytes_read": "load",
    "bytes_written": "store",
}  # how a kernel's buffers are counted for each field


def another_device(e: Evidence) -> dict | None:
    """The run's device and its kernels' prefix, when the name given is a kernel of another device's code (the
    run's device from its code: a re-grade reads a run made earlier, perhaps on another device)."""
    on_cpu = any(k.language == "cpp" for k in e.facts["kernels"])
    device, prefix = ("cpu", "cpp_fused_") if on_cpu else ("cuda", "triton_")
    return None if e.got.startswith(prefix) else {"device": device, "prefix": prefix}


def buffers(e: Evidence) -> list:
    """The kernel's buffers that the field counts (its reads, or its writes), each once."""
    return e.facts["picked"].buffers(ACCESS[e.output])


def other_way(e: Evidence) -> int:
    """The kernel's traffic the other way: its writes for bytes_read, its reads for bytes_written."""
    return e.facts["picked"].traffic("store" if ACCESS[e.output] == "load" else "load")


def buffer_off(e: Evidence, sign: int):
    """The buffer the answer counts once more (sign 1) or leaves out (sign -1), if one explains the difference."""
    return next((a for a in buffers(e) if e.got == e.want + sign * a["nbytes"]), None)


def both(buffer) -> str:
    """An in_out_ptr left out of a count: it is read and written."""
    return (
        _(": an in_out_ptr is read and written, count it in both") if "+" in buffer["role"] else ""
    )


def roles(e: Evidence) -> dict:
    """The arguments the field counts, as the kernel's parameters name them."""
    return {
        "roles": "in_ptr*, in_out_ptr*" if e.output == "bytes_read" else "out_ptr*, in_out_ptr*"
    }


def by_factor(e: Evidence, low: bool) -> dict | None:
    """A whole factor off (2, 3, 4 or 8) in the direction asked, never by how much: that would be the answer."""
    off = any((e.got * f == e.want) if low else (e.got == e.want * f) for f in (2, 3, 4, 8))
    return roles(e) if off else None


def bytes_diagnoses(key: str) -> tuple[Diagnosis, ...]:
    """What a wrong byte count says, from the most specific reading of it to the most general (bytes_read and
    bytes_written, the same mistakes)."""
    return (
        Diagnosis(
            N_("a buffer of unknown size"),
            lambda e: {"name": e.facts["picked"].name} if math.isnan(e.want) else None,
            N_("`{name}` has buffers of unknown size in this run: explain another kernel"),
            output=key,
        ),
        Diagnosis(
            N_("bytes not an int"),
            lambda e: None if type(e.got) is int else {"value": e.got},
            N_("give a whole number of bytes (an int), not {value!r}"),
            output=key,
        ),
        *(
            [
                Diagnosis(
                    N_("nothing written"),
                    lambda e: {} if e.got == 0 else None,
                    N_(
                        "0 bytes written: the kernel writes its out_ptr and in_out_ptr arguments; count them"
                    ),
                    output=key,
                )
            ]
            if key == "bytes_written"
            else []
        ),
        Diagnosis(
            N_("the elements, not the bytes"),
            lambda e: (
                {} if e.got == sum(math.prod(a["shape"] or [0]) for a in buffers(e)) else None
            ),
            N_(
                "that is the number of elements, not bytes: multiply each buffer's element count by its element "
                "size (float32: 4 bytes, bool: 1 byte)"
            ),
            output=key,
        ),
        Diagnosis(
            N_("a buffer counted twice"),
            lambda e: (
                {"name": a["name"], "alias": alias_note(e.facts["picked"])}
                if (a := buffer_off(e, 1))
                else None
            ),
            N_("you counted `{name}` twice: count each buffer once{alias}"),
            output=key,
        ),
        Diagnosis(
            N_("a buffer left out"),
            lambda e: {"name": a["name"], "both": both(a)} if (a := buffer_off(e, -1)) else None,
            N_("you left out `{name}`{both}"),
            output=key,
        ),
        Diagnosis(
            N_("reads and writes swapped"),
            lambda e: (
                {"verb": _("writes") if e.output == "bytes_read" else _("reads")}
                if e.got == other_way(e)
                else None
            ),
            N_("that is what the kernel {verb}: swap bytes_read and bytes_written"),
            output=key,
        ),
        Diagnosis(
            N_("reads and writes added"),
            lambda e: {} if e.got == e.want + other_way(e) else None,
            N_("that is read and written together: give each direction on its own"),
            output=key,
        ),
        Diagnosis(
            N_("another kernel's traffic"),
            lambda e: next(
                (
                    {"owner": k.name}
                    for k in e.facts["others"]
                    if e.got == k.traffic(ACCESS[e.output])
                ),
                None,
            ),
            N_("that is the traffic of `{owner}`, not of this kernel"),
            output=key,
        ),
        Diagnosis(
            N_("too low by a whole factor"),
            lambda e: by_factor(e, low=True),
            N_(
                "too low by a whole factor: sum numel x element size over the {roles} arguments, each "
                "buffer once"
            ),
            output=key,
        ),
        Diagnosis(
            N_("too high by a whole factor"),
            lambda e: by_factor(e, low=False),
            N_(
                "too high by a whole factor: sum numel x element size over the {roles} arguments, each "
                "buffer once"
            ),
            output=key,
        ),
        Diagnosis(
            None,
            roles,
            N_(
                "not this kernel's bytes: for each {roles} argument of its call in call(), find its shape and "
                "dtype (empty_strided / assert_size_stride, following `# reuse`), then sum numel x element size"
            ),
            output=key,
        ),
    )


def alias_note(kernel) -> str:
    """C++ kernels may read an in_out_ptr through a second name (`auto in_ptr1 = in_out_ptr0;`)."""
    if kernel.language == "cpp" and "auto in_ptr" in kernel.source:
        return _(" (`auto in_ptrN = in_out_ptrM;` in the C++ is a second name for the same buffer)")
    return ""


# What a wrong field of KERNEL_EXPLAINED says about the mistake, read in order (the first that the answer shows
# names it), from the kernel the learner picked and the run's other kernels (run_grading.kernel_truth's facts).
# None gives this run's figure away; a message that says where to look names no mistake.
KERNEL_DIAGNOSES = (
    Diagnosis(
        N_("a kernel of another graph"),
        lambda e: next(
            (
                {"name": e.got, "file": k.graph.replace("/", "_")}
                for k in e.facts["kernels"]
                if k.name == e.got
            ),
            None,
        ),
        N_(
            "`{name}` is a kernel of code/{file}.py; explain one of code/train_forward.py (the training forward)"
        ),
        output="kernel",
    ),
    Diagnosis(
        N_("a kernel name from another device"),
        another_device,
        N_(
            "this run on {device} generated `{prefix}...` kernels: names depend on the device and the torch "
            "version, so copy one from your own run's code/train_forward.py"
        ),
        output="kernel",
    ),
    Diagnosis(
        None,
        lambda e: {"name": e.got},
        N_(
            "no kernel `{name}` in this run's code/train_forward.py: copy a name from a line "
            "`<name> = async_compile...` there"
        ),
        output="kernel",
    ),
    Diagnosis(
        N_("fused_ops not a list of names"),
        lambda e: None if names(e.got) else {},
        N_('fused_ops must be a list of aten op names, e.g. ["mul", "gelu"]'),
        output="fused_ops",
    ),
    # The missing ops are counted, never named: naming them would hand the answer over.
    Diagnosis(
        N_("the reduction left out"),
        lambda e: {} if any(op_key(op) in REDUCTION_OPS for op in missing_ops(e)) else None,
        N_(
            "your list misses the reduction this kernel fuses: its accumulating loop is in the kernel's code, "
            "and its aten op is in the kernel's name"
        ),
        output="fused_ops",
    ),
    Diagnosis(
        N_("ops left out"),
        lambda e: {"n": len(missing)} if (missing := missing_ops(e)) else None,
        lambda values: ngettext(
            "your list misses {n} op: read every op in the kernel's name (ops joined by `_`) or in its "
            "`Original ATen` comment",
            "your list misses {n} ops: read every op in the kernel's name (ops joined by `_`) or in its "
            "`Original ATen` comment",
            values["n"],
        ),
        output="fused_ops",
    ),
    Diagnosis(
        N_("an op the kernel does not fuse"),
        not_fused,
        N_("`{op}` is not fused in this kernel{where}"),
        output="fused_ops",
    ),
    *bytes_diagnoses("bytes_read"),
    *bytes_diagnoses("bytes_written"),
    Diagnosis(
        N_("reduction not one of the kinds"),
        lambda e: (
            None
            if e.got in REDUCTION_KINDS
            else {"kinds": ", ".join(f'"{k}"' for k in REDUCTION_KINDS), "value": e.got}
        ),
        N_("reduction must be one of {kinds}, not {value!r}"),
        output="reduction",
    ),
    Diagnosis(
        N_("a reduction missed"),
        lambda e: (
            {"what": ", ".join(e.facts["structure"]["reductions"])} if e.got == "none" else None
        ),
        N_("this kernel reduces ({what}): look for `tmp_acc` (C++) or `tl.sum` / `max2` (Triton)"),
        output="reduction",
    ),
    Diagnosis(
        N_("a reduction where there is none"),
        lambda e: {} if e.facts["structure"]["reduction_kind"] == "none" else None,
        N_("this kernel keeps no accumulator: every element is computed on its own"),
        output="reduction",
    ),
    Diagnosis(
        N_("a persistent C++ reduction"),
        lambda e: {} if e.facts["picked"].language == "cpp" else None,
        N_(
            "C++ kernels keep no row in registers: a reduction is a loop with an accumulator (`tmp_acc`), and "
            "the next loop reads the row again, as Triton's looped reductions do"
        ),
        output="reduction",
    ),
    Diagnosis(
        N_("a persistent reduction taken for a looped one"),
        lambda e: {} if e.got == "looped" else None,
        N_("there is no `for r0_offset` loop: R0_BLOCK covers the whole row, so it is persistent"),
        output="reduction",
    ),
    Diagnosis(
        N_("a looped reduction taken for a persistent one"),
        lambda e: {},
        N_(
            "the kernel walks each row in a `for r0_offset in range(...)` loop: that is a looped reduction"
        ),
        output="reduction",
    ),
    Diagnosis(
        N_("grid not a list of ints"),
        lambda e: None if as_grid(e.got) is not None else {},
        N_("grid must be a list of ints, e.g. [5760, 96]"),
        output="grid",
    ),
    # The right extents in another order: the grid is a list, and its order is the code's.
    Diagnosis(
        N_("the grid's extents in another order"),
        lambda e: {} if e.facts["picked"].language == "triton" and extents_only(e) else None,
        N_("the extents are right but their order is not: xnumel first, then ynumel"),
        output="grid",
    ),
    Diagnosis(
        N_("the grid's extents in another order"),
        lambda e: {} if extents_only(e) else None,
        N_(
            "the extents are right but their order is not: the grid lists the `#pragma omp for` loops in the "
            "order they appear in the kernel's code, top to bottom"
        ),
        output="grid",
    ),
    Diagnosis(
        N_("another kernel's grid"),
        lambda e: next(
            ({"other": name} for name, grid in e.facts["grids"] if as_grid(e.got) == grid), None
        ),
        N_("that is the grid of `{other}`, not of this kernel"),
        output="grid",
    ),
    Diagnosis(
        N_("a count of programs for xnumel"),
        lambda e: {} if e.facts["picked"].language == "triton" else None,
        N_(
            "give xnumel (the indices the grid spreads over, read at the top of the kernel), not a count of "
            "programs: XBLOCK is chosen at run time"
        ),
        output="grid",
    ),
    Diagnosis(
        N_("an extent per loop"),
        lambda e: (
            {"n": len(e.facts["structure"]["grid"])}
            if len(as_grid(e.got)) != len(e.facts["structure"]["grid"])
            else None
        ),
        lambda values: ngettext(
            "this kernel has {n} `#pragma omp for` loop: give its extent",
            "this kernel has {n} `#pragma omp for` loops: give one extent each, in the order the loops "
            "appear in its code",
            values["n"],
        ),
        output="grid",
    ),
    Diagnosis(
        None,
        lambda e: {},
        N_(
            "give the extent of each loop right under a `#pragma omp for` (`x0 < N`, indices, not iterations "
            "of a SIMD step), in the order the loops appear in the kernel's code"
        ),
        output="grid",
    ),
)
