"""Exercise compile.kernel: the learner explains one kernel of the MiniGPT's training forward, read from their own
run's code/train_forward.py, in a dict KERNEL_EXPLAINED; graded against what the lab reads from the same code.

Kernel names are fixed for a torch version and a device, so the run that grades the answer generates the very
kernels the learner read. Each field is its own check, and a wrong value gets a message computed from it: an
element count instead of bytes, a buffer counted twice or left out, the grid of another kernel, ...
The checks record whether each field matches, not this run's figure, which would hand the answer out.
"""

from __future__ import annotations

import math

from workshop.declarations.questions import filled, require_dict
from workshop.declarations.stand_ins import real
from workshop.i18n import _, ngettext
from workshop.lab_api import LabContext
from workshop.labs.compile.generated_kernels import GeneratedKernel
from workshop.labs.compile.grading.exercises import KERNEL_FIELDS
from workshop.labs.compile.loops import REDUCTION_KINDS, KernelStructure, kernel_structure
from workshop.labs.compile.provenance import SHAPE_ONLY

FIELDS = tuple(q.key for q in KERNEL_FIELDS)  # as exercises.py declares them
GRAPH = "train/forward"  # static shapes: every buffer has a size in the code
MISSING = (
    object()
)  # a field whose key the learner's dict lacks (None is the stub's "not filled in")
REDUCTION_OPS = {  # aten ops that reduce (compared without leading underscores)
    *("softmax", "log_softmax", "native_layer_norm", "layer_norm", "sum", "mean", "amax", "amin"),
    *("max", "min", "var_mean", "nll_loss_forward", "prepare_softmax_online", "logsumexp"),
}


def fields_of(k: GeneratedKernel) -> dict:
    """KERNEL_EXPLAINED's fields for kernel `k`, read off its code as the handout describes."""
    s = kernel_structure(k.source, k.language)
    return {
        "kernel": k.name,
        "fused_ops": k.fused_ops,
        "bytes_read": k.traffic("load"),
        "bytes_written": k.traffic("store"),
        "reduction": s.reduction_kind,
        "grid": s.grid,
    }


def op_key(op: str) -> str:
    """'aten._softmax.default', 'prims.prepare_softmax_online', '_softmax' -> 'softmax', ...: how ops compare."""
    op = op.strip().removeprefix("torch.ops.").removesuffix(".default")
    return op.split(".")[-1].lstrip("_") if "." in op else op.lstrip("_")


class WhereToLook(str):
    """A message that says where to look, not which mistake was made: a field whose message names the mistake
    (a diagnosis) is reported before it."""


def names_mistake(message: str) -> bool:
    return bool(message) and not isinstance(message, WhereToLook)


def grade_kernel(ctx: LabContext, answer, kernels: list[GeneratedKernel]) -> GeneratedKernel | None:
    """Check each field of the learner's KERNEL_EXPLAINED; returns the kernel it explains when that kernel is
    in this run's training forward (None otherwise, and the other fields are not graded)."""
    answer = filled_fields(answer)
    forward = [k for k in kernels if k.graph == GRAPH]
    kernel = next((k for k in forward if k.name == answer["kernel"]), None)
    message = "" if kernel else kernel_message(answer["kernel"], kernels)
    ctx.check_equal(
        _("KERNEL_EXPLAINED['kernel'] is in this run's code/train_forward.py"),
        kernel is not None,
        True,
        message=message or None,
        diagnosis=names_mistake(message),
    )
    if kernel is None:
        return None
    structure = kernel_structure(kernel.source, kernel.language)
    others = [k for k in forward if k is not kernel]
    messages = {
        "fused_ops": fused_ops_message(answer["fused_ops"], kernel, others),
        "bytes_read": bytes_message(answer["bytes_read"], kernel, "load", others),
        "bytes_written": bytes_message(answer["bytes_written"], kernel, "store", others),
        "reduction": reduction_message(answer["reduction"], kernel, structure),
        "grid": grid_message(answer["grid"], kernel, structure, others),
    }
    for field, message in messages.items():
        ctx.check_equal(
            _("KERNEL_EXPLAINED[{field!r}] matches the kernel's code").format(field=field),
            message == "",
            True,
            message=message or None,
            diagnosis=names_mistake(message),
        )
    return kernel


def filled_fields(answer) -> dict:
    """The answer's fields, None where not filled in (the stub's placeholder, questions.UNFILLED), MISSING
    where the key is gone; NotImplementedError when none is filled in (a fresh stub). A stand-in (an exercise
    this run does not grade, a file that would not load) raises what it stands for."""
    answer = real(answer)
    require_dict("KERNEL_EXPLAINED", answer, FIELDS)
    fields = {f: answer.get(f, MISSING) for f in FIELDS}
    if not any(filled(v) and v is not MISSING for v in fields.values()):
        raise NotImplementedError
    return fields


def unfilled(value) -> str:
    """Why a field cannot be graded yet (a WhereToLook), or "" when it has a value."""
    if value is MISSING:
        return WhereToLook(_("missing: add its key back (the stub has every field)"))
    if not filled(value):
        return WhereToLook(_("not filled in: replace the `None` with your answer"))
    return ""


def kernel_message(name, kernels: list[GeneratedKernel]) -> str:
    if message := unfilled(name):
        return message
    elsewhere = next((k.graph for k in kernels if k.name == name), None)
    if elsewhere:
        return _(
            "`{name}` is a kernel of code/{file}.py; explain one of code/train_forward.py (the training forward)"
        ).format(name=name, file=elsewhere.replace("/", "_"))
    # the run's device, from its code (a re-grade reads a run made earlier, perhaps on another device)
    on_cpu = any(k.language == "cpp" for k in kernels)
    device, language = ("cpu", "cpp_fused_") if on_cpu else ("cuda", "triton_")
    if isinstance(name, str) and not name.startswith(language):
        return _(
            "this run on {device} generated `{prefix}...` kernels: names depend on the device and the torch "
            "version, so copy one from your own run's code/train_forward.py"
        ).format(device=device, prefix=language)
    where = _(
        "no kernel `{name}` in this run's code/train_forward.py: copy a name from a line "
        "`<name> = async_compile...` there"
    )
    return WhereToLook(where.format(name=name))


def fused_ops_message(given, kernel: GeneratedKernel, others: list[GeneratedKernel]) -> str:
    if message := unfilled(given):
        return message
    if isinstance(given, str) or not all(isinstance(op, str) for op in given):
        return _('fused_ops must be a list of aten op names, e.g. ["mul", "gelu"]')
    given_keys = {op_key(op) for op in given}
    named = {op_key(op): op for op in kernel.fused_ops}  # as the kernel's code names them
    required = {key for key, op in named.items() if op not in SHAPE_ONLY}
    missing = [named[key] for key in sorted(required - given_keys)]
    extra = sorted(given_keys - set(named))
    # The missing ops are counted, never named: naming them would hand the answer over.
    if any(op_key(op) in REDUCTION_OPS for op in missing):
        return _(
            "your list misses the reduction this kernel fuses: its accumulating loop is in the kernel's code, "
            "and its aten op is in the kernel's name"
        )
    if missing:
        return ngettext(
            "your list misses {n} op: read every op in the kernel's name (ops joined by `_`) or in its "
            "`Original ATen` comment",
            "your list misses {n} ops: read every op in the kernel's name (ops joined by `_`) or in its "
            "`Original ATen` comment",
            len(missing),
        ).format(n=len(missing))
    if extra:
        owner = next((k.name for k in others if extra[0] in map(op_key, k.fused_ops)), None)
        where = _(" (it is fused in `{owner}`)").format(owner=owner) if owner else ""
        return _("`{op}` is not fused in this kernel{where}").format(op=extra[0], where=where)
    return ""


def bytes_message(
    given, kernel: GeneratedKernel, access: str, others: list[GeneratedKernel]
) -> str:
    """'' when `given` is the bytes the kernel reads (access="load") or writes ("store") per call; else what
    the value says about the mistake."""
    if message := unfilled(given):
        return message
    truth = kernel.traffic(access)
    if truth is None:
        return _("`{name}` has buffers of unknown size in this run: explain another kernel").format(
            name=kernel.name
        )
    if not isinstance(given, int) or isinstance(given, bool):
        return _("give a whole number of bytes (an int), not {value!r}").format(value=given)
    return "" if given == truth else bytes_mistake(given, truth, kernel, access, others)


def bytes_mistake(given: int, truth: int, kernel: GeneratedKernel, access: str, others) -> str:
    """What a wrong byte count says, from the most specific reading of it to the most general."""
    args = kernel.buffers(access)
    other = kernel.traffic("store" if access == "load" else "load")
    doubled = next((a for a in args if given == truth + a.nbytes), None)
    left_out = next((a for a in args if given == truth - a.nbytes), None)
    owner = next((k.name for k in others if given == k.traffic(access)), None)
    if access == "store" and given == 0:
        return _(
            "0 bytes written: the kernel writes its out_ptr and in_out_ptr arguments; count them"
        )
    if given == sum(math.prod(a.shape or [0]) for a in args):
        return _(
            "that is the number of elements, not bytes: multiply each buffer's element count by its element "
            "size (float32: 4 bytes, bool: 1 byte)"
        )
    if doubled:
        return _("you counted `{name}` twice: count each buffer once{alias}").format(
            name=doubled.name, alias=alias_note(kernel)
        )
    if left_out:
        both = (
            _(": an in_out_ptr is read and written, count it in both")
            if "+" in left_out.role
            else ""
        )
        return _("you left out `{name}`{both}").format(name=left_out.name, both=both)
    if given == other:
        return _("that is what the kernel {verb}: swap bytes_read and bytes_written").format(
            verb=_("writes") if access == "load" else _("reads")
        )
    if given == truth + other:
        return _("that is read and written together: give each direction on its own")
    if owner:
        return _("that is the traffic of `{owner}`, not of this kernel").format(owner=owner)
    return factor_message(given, truth, access)


def alias_note(kernel: GeneratedKernel) -> str:
    """C++ kernels may read an in_out_ptr through a second name (`auto in_ptr1 = in_out_ptr0;`)."""
    if kernel.language == "cpp" and "auto in_ptr" in kernel.source:
        return _(" (`auto in_ptrN = in_out_ptrM;` in the C++ is a second name for the same buffer)")
    return ""


def factor_message(given: int, truth: int, access: str) -> str:
    """A whole factor off says which way, never by how much: the factor times the answer given is the answer."""
    roles = "in_ptr*, in_out_ptr*" if access == "load" else "out_ptr*, in_out_ptr*"
    for factor in (2, 3, 4, 8):
        if given * factor == truth or given == truth * factor:
            low = _(
                "too low by a whole factor: sum numel x element size over the {roles} arguments, each "
                "buffer once"
            )
            high = _(
                "too high by a whole factor: sum numel x element size over the {roles} arguments, each "
                "buffer once"
            )
            return (low if given < truth else high).format(roles=roles)
    where = _(
        "not this kernel's bytes: for each {roles} argument of its call in call(), find its shape and dtype "
        "(empty_strided / assert_size_stride, following `# reuse`), then sum numel x element size"
    )
    return WhereToLook(where.format(roles=roles))


def reduction_message(given, kernel: GeneratedKernel, s: KernelStructure) -> str:
    if message := unfilled(given):
        return message
    if given not in REDUCTION_KINDS:
        return _("reduction must be one of {kinds}, not {value!r}").format(
            kinds=", ".join(f'"{k}"' for k in REDUCTION_KINDS), value=given
        )
    if given == s.reduction_kind:
        return ""
    if given == "none":
        return _(
            "this kernel reduces ({what}): look for `tmp_acc` (C++) or `tl.sum` / `max2` (Triton)"
        ).format(what=", ".join(s.reductions))
    if s.reduction_kind == "none":
        return _("this kernel keeps no accumulator: every element is computed on its own")
    if kernel.language == "cpp":
        return _(
            "C++ kernels keep no row in registers: a reduction is a loop with an accumulator (`tmp_acc`), and "
            "the next loop reads the row again, as Triton's looped reductions do"
        )
    if given == "looped":
        return _(
            "there is no `for r0_offset` loop: R0_BLOCK covers the whole row, so it is persistent"
        )
    return _(
        "the kernel walks each row in a `for r0_offset in range(...)` loop: that is a looped reduction"
    )


def grid_message(
    given, kernel: GeneratedKernel, s: KernelStructure, others: list[GeneratedKernel]
) -> str:
    if message := unfilled(given):
        return message
    given = [given] if isinstance(given, int) else given
    if not isinstance(given, (list, tuple)) or not all(isinstance(g, int) for g in given):
        return _("grid must be a list of ints, e.g. [5760, 96]")
    if list(given) == s.grid:
        return ""
    if len(given) > 1 and sorted(given) == sorted(g for g in s.grid if g is not None):
        return order_message(kernel)
    for other in others:
        if list(given) == kernel_structure(other.source, other.language).grid:
            return _("that is the grid of `{other}`, not of this kernel").format(other=other.name)
    if kernel.language == "triton":
        return _(
            "give xnumel (the indices the grid spreads over, read at the top of the kernel), not a count of "
            "programs: XBLOCK is chosen at run time"
        )
    if len(given) != len(s.grid):
        return ngettext(
            "this kernel has {n} `#pragma omp for` loop: give its extent",
            "this kernel has {n} `#pragma omp for` loops: give one extent each, in the order the loops "
            "appear in its code",
            len(s.grid),
        ).format(n=len(s.grid))
    return WhereToLook(
        _(
            "give the extent of each loop right under a `#pragma omp for` (`x0 < N`, indices, not iterations "
            "of a SIMD step), in the order the loops appear in the kernel's code"
        )
    )


def order_message(kernel: GeneratedKernel) -> str:
    """The right extents in another order: the grid is a list, and its order is the code's."""
    if kernel.language == "triton":
        return _("the extents are right but their order is not: xnumel first, then ynumel")
    return _(
        "the extents are right but their order is not: the grid lists the `#pragma omp for` loops in the "
        "order they appear in the kernel's code, top to bottom"
    )
