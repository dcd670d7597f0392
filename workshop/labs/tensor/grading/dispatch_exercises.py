"""The tensor lab's two exercises on the Python dispatch key, declared for the one engine: the body of a dispatch
mode that counts FLOPs and bytes, and the body of a tensor subclass that records the ops it sees (lab.py measures
the truths; grading/probes.py runs the learner's method in the worker). No torch import here: the CLI imports it.
"""

from __future__ import annotations

from workshop.declarations.diagnosis import Diagnosis
from workshop.declarations.exercise import Exercise
from workshop.i18n import N_

LAB = "tensor"


# ---- the dispatch key's two exercises: outputs are what the worker's probes measured (grading/probes.py) ----
def counts_error(e) -> tuple[int, int]:
    """How many ops' FLOPs or bytes differ from the shapes' (ops whose count is 0 are left out)."""
    if not isinstance(e.got, dict) or "no_result" in e.got:
        return len(e.want["flops"]) + len(e.want["bytes"]), 0
    wrong = 0
    for kind in ("flops", "bytes"):
        got = {op: n for op, n in e.got[kind].items() if n}
        wrong += len(set(got) ^ set(e.want[kind])) + sum(
            got[op] != n for op, n in e.want[kind].items() if op in got
        )
    return wrong, 0


def _counted(e, kind: str) -> dict:
    return e.got.get(kind, {}) if isinstance(e.got, dict) else {}


NO_RESULT = Diagnosis(
    N_("a mode that forgets to call func"),
    lambda e: (
        {"op": e.got["no_result"]} if isinstance(e.got, dict) and "no_result" in e.got else None
    ),
    N_(
        "{name} ({label}): your __torch_dispatch__ returned None for {op}. While the mode is active the op runs "
        "only when the method calls func(*args, **kwargs); what the method returns is the op's result."
    ),
)

COUNTS_DIAGNOSES = (
    NO_RESULT,
    Diagnosis(
        N_("FLOPs of an addmm counted without the bias"),
        lambda e: (
            {}
            if "aten.addmm.default" in e.want["flops"]
            and _counted(e, "flops").get("aten.addmm.default")
            == e.want["flops"]["aten.addmm.default"] - e.facts["m"] * e.facts["n"]
            else None
        ),
        N_(
            "{name} ({label}): your addmm FLOPs are the matrix product's alone. addmm(b, x, w) also adds b to "
            "each of the M*N outputs of the product: one more FLOP each."
        ),
    ),
    Diagnosis(
        N_("bytes counted for views"),
        lambda e: (
            {"views": sorted(set(_counted(e, "bytes")) & set(e.facts["views"]))}
            if set(_counted(e, "bytes")) & set(e.facts["views"])
            and any(
                _counted(e, "bytes")[op] for op in e.facts["views"] if op in _counted(e, "bytes")
            )
            else None
        ),
        N_(
            "{name} ({label}): you counted bytes for {views}. A view reads and writes no element: it is new "
            "sizes and strides over the same storage (func.is_view says which ops are views)."
        ),
    ),
    Diagnosis(
        N_("elements counted instead of bytes"),
        lambda e: (
            {}
            if _counted(e, "bytes")
            and all(
                _counted(e, "bytes").get(op, 0) * e.facts["element_size"] == n
                for op, n in e.want["bytes"].items()
            )
            else None
        ),
        N_("{name} ({label}): your byte counts are element counts: multiply by t.element_size()."),
    ),
    Diagnosis(
        None,
        lambda e: {
            "got": {k: {op: n for op, n in _counted(e, k).items() if n} for k in ("flops", "bytes")}
        },
        N_("{name} ({label}): your mode counted {got}: not what the shapes say."),
    ),
)

COUNT_DISPATCH = Exercise(
    lab=LAB,
    name="count_dispatch",
    title=N_("a dispatch mode that counts the LM head's FLOPs and bytes"),
    statement=N_(
        "Write count_dispatch(self, func, types, args=(), kwargs=None), the __torch_dispatch__ of a "
        "TorchDispatchMode that counts what each aten op costs: run the op, add its FLOPs to "
        "self.flops[str(func)] and the bytes it reads and writes to self.bytes[str(func)] (both Counters), and "
        "return the op's result. FLOPs: 2*M*K*N for a matrix product (M, K) @ (K, N) (aten.mm), M*N more for "
        "aten.addmm, which also adds its bias; 0 for the other ops. Bytes: the sizes in bytes of every tensor "
        "among the op's arguments and results, 0 for a view (func.is_view). Graded on the LM head's forward and "
        "backward against the counts its shapes give, and against torch.utils.flop_counter.FlopCounterMode."
    ),
    hints=(
        N_(
            "The mode's method stands in for the op: nothing runs unless it calls func, and the caller gets "
            "what it returns. The handout's section 4 builds another mode (one that counts calls) the same way."
        ),
        N_(
            "For aten.mm.default, args are (a (M, K), b (K, N)); for aten.addmm.default, (bias, a (M, K), b (K, "
            "N)). A tensor t holds t.numel() * t.element_size() bytes. tree_leaves((args, kwargs, out)) lists "
            "every argument and result."
        ),
        N_(
            "`kwargs = kwargs or {}`; `out = ...` the op run; `name = str(func)`; then one branch per matmul op "
            "(compare func with torch.ops.aten.mm.default, then with the addmm one) adding its FLOPs to "
            "self.flops[name]; for an op that is no view (func.is_view), the tensors' bytes summed into "
            "self.bytes[name]; `return out`."
        ),
    ),
    handout=N_("README.md#4-a-dispatch-mode-of-your-own"),
    reference="workshop.labs.tensor.python_key:count_dispatch",
    attribute="count_dispatch",
    interface=N_(
        "self: the CountingMode, with self.flops and self.bytes (collections.Counter). func: the aten op (an "
        "OpOverload: str(func) is 'aten.mm.default'). args, kwargs: its arguments. Returns the op's result."
    ),
    outputs=("counts",),
    shown={"counts": N_("FLOPs and bytes")},
    compare=counts_error,
    check=N_("{function}: {output} of the head's {label} = its shapes'"),
    diagnoses=COUNTS_DIAGNOSES,
)


def log_error(e) -> tuple[int, int]:
    """1 when the ops recorded are not the reference mode's, in order."""
    return int(not isinstance(e.got, dict) or e.got.get("log") != e.want["log"]), 0


LOG_DIAGNOSES = (
    NO_RESULT,
    Diagnosis(
        N_("func called on the wrapper itself"),
        lambda e: {} if isinstance(e.got, dict) and e.got.get("recursion") else None,
        N_(
            "{name} ({label}): your __torch_dispatch__ called itself until Python's recursion limit: func was "
            "called on the wrapper tensors, whose ops come straight back to the class. Unwrap them (t.elem) "
            "first."
        ),
    ),
    Diagnosis(
        N_("results not wrapped again"),
        lambda e: (
            {"n": len(e.got["log"])}
            if isinstance(e.got, dict)
            and e.got.get("log") is not None
            and len(e.got["log"]) < len(e.want["log"])
            else None
        ),
        N_(
            "{name} ({label}): you recorded {n} ops, fewer than ran: an op reaches the class only when one of its "
            "arguments is an instance of it. Wrap func's tensor results in cls, so that the next op reaches you."
        ),
    ),
    Diagnosis(
        None,
        lambda e: {"got": e.got.get("log")} if isinstance(e.got, dict) else None,
        N_("{name} ({label}): you recorded {got}: not the ops the reference mode saw."),
    ),
)

RECORD_DISPATCH = Exercise(
    lab=LAB,
    name="record_dispatch",
    title=N_("a tensor subclass that records every aten op of the head's backward"),
    statement=N_(
        "Write record_dispatch(cls, func, types, args=(), kwargs=None), the __torch_dispatch__ classmethod of a "
        "wrapper tensor subclass (each instance t holds a plain tensor, t.elem): append str(func) to cls.log, "
        "run func on the plain tensors inside the arguments, and return its tensor results wrapped in cls "
        "(cls(t) wraps t). Graded on the LM head's backward with x, W, b and the incoming gradient wrapped: "
        "cls.log must list the aten ops a reference dispatch mode sees in the same backward, in order."
    ),
    hints=(
        N_(
            "An op calls the class's __torch_dispatch__ when one of its arguments is an instance: unwrap, run, "
            "wrap again. The handout's section 5 builds another subclass (one that counts its instances) the same way."
        ),
        N_(
            "tree_map_only(cls, lambda t: t.elem, (args, kwargs)) unwraps every instance wherever it sits; "
            "tree_map_only(torch.Tensor, cls, out) wraps every tensor of the result."
        ),
        N_(
            "`cls.log.append(...)`; `args, kwargs = ...` unwrapped (kwargs may be None); `out = ...` the op run "
            "on them; `return ...` its tensors wrapped in cls."
        ),
    ),
    handout=N_("README.md#5-a-tensor-subclass-of-your-own"),
    reference="workshop.labs.tensor.python_key:record_dispatch",
    attribute="record_dispatch",
    interface=N_(
        "cls: the subclass, with cls.log (a list of str) and cls(t) to wrap a plain tensor t. func: the aten op "
        "(str(func) is 'aten.mm.default'). args, kwargs: its arguments, instances of cls among them. Returns "
        "the op's result, each tensor wrapped in cls."
    ),
    outputs=("ops",),
    shown={"ops": N_("the ops recorded")},
    compare=log_error,
    check=N_("{function}: {output} = a reference mode's ({label})"),
    diagnoses=LOG_DIAGNOSES,
)
