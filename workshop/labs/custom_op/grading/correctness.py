"""Measurements of the op against torch.softmax: each sends the op its inputs (`run`: requests answered by
op_probes.apply, where the op's pieces may run) and returns the numbers that the lab compares with thresholds, computed
here from the replies and PyTorch's own results.

Shapes depend on the device: under Triton's interpreter (CPU) every program costs about 1.3 ms, so the CPU
shapes are small; the long-row cases still cross into the long-row kernels (N > ONE_PASS_MAX).
"""

from unittest import mock

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.autograd.gradcheck import GradcheckError

from workshop.i18n import N_, _
from workshop.ops import softmax_launch

# Slack on top of torch.softmax's own error (vs a float64 reference), per dtype: about one rounding of a
# probability in [0, 1].
SLACK = {torch.float64: 1e-14, torch.float32: 1e-7, torch.float16: 5e-4, torch.bfloat16: 4e-3}
LONG_ROW = softmax_launch.ONE_PASS_MAX * 8  # 262,144: a big vocabulary, cut into CHUNK-sized pieces


def shapes(device: str) -> dict[str, tuple[int, ...]]:
    if device == "cuda":
        return {
            "lm_head": (4096, 600),
            "long": (64, LONG_ROW),
            "gradcheck_long": (2, softmax_launch.ONE_PASS_MAX + 77),
        }
    return {
        "lm_head": (64, 600),
        "long": (2, LONG_ROW),
        "gradcheck_long": (1, softmax_launch.ONE_PASS_MAX + 77),
    }


class OpFailed(Exception):
    """The op raised where it had to answer (its error's text)."""


def forward(x: torch.Tensor, dim: int = -1, dy: torch.Tensor | None = None) -> dict:
    """A request for the op (op_probes.apply): y = op(x, dim), and with dy the gradient dx too."""
    return {"op": "forward", "args": [x, dim], "dy": dy}


def answered(answer: dict, key: str = "y") -> torch.Tensor:
    if "error" in answer:
        raise OpFailed(answer["error"])
    return answer[key]


def dtype_errors(
    run, device: str, shape: tuple[int, ...], seed: int, dtypes=tuple(SLACK)
) -> tuple[dict[str, dict], list[str]]:
    """Per dtype, the op's error and torch.softmax's against a float64 softmax of the same rounded input
    ({"ours", "torch": max |result - float64 softmax|, "tolerance": ours' bound, 1.25 x torch's + SLACK}); and
    the kernels the op launched. `run`: requests -> op_probes.apply's result."""
    gen = torch.Generator().manual_seed(seed)
    x64 = (torch.randn(shape, generator=gen, dtype=torch.float64) * 4).to(device)
    xs = [x64.to(dtype) for dtype in dtypes]
    result = run([forward(x) for x in xs])
    out = {}
    for dtype, x, answer in zip(dtypes, xs, result["replies"], strict=True):
        ref = torch.softmax(x.double(), -1)  # exact up to float64: the error left is the op's own
        theirs = (torch.softmax(x, -1).double() - ref).abs().max().item()
        ours = (answered(answer).double() - ref).abs().max().item()
        out[str(dtype).removeprefix("torch.")] = {
            "ours": ours,
            "torch": theirs,
            "tolerance": 1.25 * theirs + SLACK[dtype],
        }
    return out, result["launches"]


def layouts(run, device: str, seed: int) -> dict[str, float]:
    """Non-contiguous inputs: max |ours - torch.softmax| for each layout."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(48, 80, generator=gen).to(device)
    cube = torch.randn(6, 40, 10, generator=gen).to(device)
    cases = {
        "transposed, dim=-1 (strided rows: copied)": (x.t(), -1),
        "row-major, dim=0 (strided N: copied)": (x, 0),
        "every other column, dim=-1": (x[:, ::2], -1),
        "every other row (row stride 160, no copy)": (x[::2], -1),
        "expanded row (row stride 0, no copy)": (x[:1].expand(32, 80), -1),
        "3-d, dim=1 of a permuted view": (cube.permute(2, 0, 1), 1),
    }
    replies = run([forward(t, d) for t, d in cases.values()])["replies"]
    return {
        name: (answered(answer) - torch.softmax(t, d)).abs().max().item()
        for (name, (t, d)), answer in zip(cases.items(), replies, strict=True)
    }


def special_rows(n_cols: int, device: str) -> torch.Tensor:
    """Rows with -inf, inf and NaN in various places, and a row that is all -inf. (6, n_cols)"""
    x = torch.randn(6, n_cols, generator=torch.Generator().manual_seed(1))
    x[0, : n_cols // 2] = float("-inf")  # half masked (a causal attention row)
    x[1, :] = float("-inf")  # all masked: NaN, as torch.softmax
    x[2, n_cols - 1] = float("inf")
    x[3, n_cols // 3] = float("nan")
    x[4, ::3] = float("-inf")
    x[5, 0], x[5, n_cols - 1] = float("inf"), float("-inf")
    return x.to(device)


def special_value_mismatches(run, device: str, long_cols: int) -> dict[str, int]:
    """Rows whose result differs from torch.softmax (NaN == NaN), for a short row and a long row."""
    cases = {
        "one-pass rows": special_rows(600, device),
        "long rows": special_rows(long_cols, device),
    }
    replies = run([forward(x) for x in cases.values()])["replies"]
    return {
        # rows not all close (NaN == NaN)
        label: int(
            (
                ~torch.isclose(
                    answered(answer), torch.softmax(x, -1), rtol=1e-5, atol=1e-7, equal_nan=True
                ).all(-1)
            ).sum()
        )
        for (label, x), answer in zip(cases.items(), replies, strict=True)
    }


def empty_results(run, device: str) -> dict[str, bool]:
    """Empty tensors and 0-size dims give torch.softmax's (empty) result, forward and backward."""
    cases = {
        "(0, 5)": (torch.randn(0, 5, device=device), -1),
        "(4, 0)": (torch.randn(4, 0, device=device), -1),
        "(2, 0, 3) dim=1": (torch.randn(2, 0, 3, device=device), 1),
        "0-d": (torch.randn((), device=device), 0),
    }
    replies = run([forward(x, dim, torch.ones_like(x)) for x, dim in cases.values()])["replies"]
    out = {}
    for (name, (x, dim)), answer in zip(cases.items(), replies, strict=True):
        y, ref = answered(answer), torch.softmax(x, dim)
        dx = answered(answer, "dx")
        out[name] = y.shape == ref.shape and dx.shape == x.shape and torch.allclose(y, ref)
    return out


def bad_inputs(run, device: str) -> dict[str, str]:
    """Each bad input's error: 'TypeName: message' (or 'NO ERROR'), which must name the problem."""
    other = "meta" if device == "cpu" else "cpu"
    y = torch.rand(4, 6, device=device)
    cases = {
        N_("integer dtype"): forward(torch.arange(6, device=device)),
        N_("dim out of range"): forward(y, 2),
        # dy moved to the other device where the op runs: a meta tensor does not cross the wire (op_probes._answer)
        N_("mixed devices (backward)"): {"op": "backward", "args": [y, y, -1], "to": {1: other}},
    }
    replies = run(list(cases.values()))["replies"]
    return {
        name: answer.get("error", "NO ERROR") for name, answer in zip(cases, replies, strict=True)
    }


# The words each bad input's error must contain. The op's errors come in the learner's language, so the words
# are looked up in it too (a Spanish run's errors say "coma flotante", not "floating-point").
EXPECTED_WORDS = {
    "integer dtype": N_("floating-point"),
    "dim out of range": N_("out of range"),
    "mixed devices (backward)": N_("same device"),
}


def names_the_problem(case: str, message: str) -> bool:
    """Whether the error of bad input `case` names its problem, in the language it was raised in."""
    return _(EXPECTED_WORDS[case]) in message


PASSED = "passed"


def first_line(error: BaseException) -> str:
    """'GradcheckError: Jacobian mismatch for output 0 with respect to input 0,': an error in one line."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")


def gradchecks(op, device: str, long_shape: tuple[int, ...] | None = None) -> dict[str, str]:
    """torch.autograd.gradcheck of `op` in float64 (fast_mode: one random direction; the full Jacobian would take
    minutes under the interpreter), on one-pass shapes contiguous and strided and, given `long_shape`, long rows;
    and gradgradcheck. Case -> PASSED, or the error's first line."""
    gen = torch.Generator().manual_seed(2)

    def leaf(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float64).to(device).requires_grad_()

    cases = {
        "(4, 7) dim=-1": (lambda t: op(t, -1), leaf(4, 7)),
        "(3, 4, 5) dim=1": (lambda t: op(t, 1), leaf(3, 4, 5)),
        "(6, 14)[:, ::2] dim=0 (strided)": (lambda t: op(t[:, ::2], 0), leaf(6, 14)),
    }
    if long_shape:
        cases[f"{long_shape} dim=-1 (long rows)"] = (lambda t: op(t, -1), leaf(*long_shape))
    out = {
        name: _passed(lambda fn=fn, x=x: torch.autograd.gradcheck(fn, (x,), fast_mode=True))
        for name, (fn, x) in cases.items()
    }
    out["(4, 7) gradgradcheck"] = _passed(
        lambda: torch.autograd.gradgradcheck(lambda t: op(t, -1), (leaf(4, 7),), fast_mode=True)
    )
    return out


def _passed(check) -> str:
    try:
        with NO_SLOW_MODE_ON_FAILURE:
            check()
    except GradcheckError as e:
        return first_line(e)
    return PASSED


# A failing fast-mode gradcheck recomputes both full Jacobians for its error message: for the long-row case,
# (32845, 32845) under the interpreter, about 20 minutes. The lab keeps only the message's first line, so that
# part of the message is left out (`_run_slow_mode_and_get_error`, private to torch.autograd.gradcheck since torch
# 1.9, the same in 2.11 and 2.13). A torch that renamed it gets the full message, slowly (create=True: the patch
# then adds a name nothing calls).
NO_SLOW_MODE_ON_FAILURE = mock.patch(
    "torch.autograd.gradcheck._run_slow_mode_and_get_error", lambda *args, **kwargs: "", create=True
)


def opchecks(ops, device: str) -> dict[str, dict[str, str]]:
    """torch.library.opcheck of a registration's operators (softmax_op.SoftmaxOps; its backward operator where it
    has one): schema, autograd registration, fake tensor, AOT dispatch. Case -> test -> "SUCCESS", or the error's
    first line."""
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(6, 40, generator=gen).to(device)
    y = torch.softmax(x, -1)
    cases = {
        "softmax contiguous": (ops.forward, (x.requires_grad_(), -1)),
        "softmax strided, dim=0": (ops.forward, (x.detach()[:, ::2].requires_grad_(), 0)),
    }
    if ops.backward is not None:
        cases["softmax_backward"] = (ops.backward, (y, torch.randn_like(y), -1))
    out = {}
    for name, (op, args) in cases.items():
        tests = torch.library.opcheck(op, args, raise_exception=False)
        if tests.get("test_faketensor") == "SUCCESS":
            tests["test_faketensor"] = fake_strides(op, args)
        out[name] = {t: r if r == "SUCCESS" else first_line(r) for t, r in tests.items()}
    return out


def fake_strides(op, args) -> str | BaseException:
    """The op's output on fake tensors (its fake, or a triton_op's body) against its output on real ones: their
    sizes and strides must agree. opcheck's fake-tensor test compares them on torch 2.13, but torch 2.11's passed
    a fake that copied x's strides (empty_like) where the kernel's output has others (x[:, ::2], dim=0: (20, 1)
    against (1, 6))."""
    real = op(*args)
    try:
        with FakeTensorMode() as mode:
            fake = op(*(mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args))
    except Exception as error:  # the fake cannot run: the test's failure, as in opcheck's own
        return error
    if (fake.shape, fake.stride()) != (real.shape, real.stride()):
        return AssertionError(
            f"Stride mismatch: the fake gives {tuple(fake.shape)} with strides {fake.stride()}, "
            f"the kernel {tuple(real.shape)} with strides {real.stride()}"
        )
    return "SUCCESS"


def check(ctx, run, forward_kernel: str, shapes: dict) -> dict:
    """In the lab's process, the measurements above as the lab's checks of the op, which `run` asks (requests ->
    op_probes.apply's result) and whose one-pass forward kernel is named `forward_kernel`: its values against
    torch.softmax per dtype, long rows, layouts, special values, empty tensors, and its errors for bad input.
    Raises OpFailed where the op raised instead of replying."""
    errors, launches = dtype_errors(run, ctx.options.device, shapes["lm_head"], ctx.options.seed)
    found = {"dtype_errors": errors}
    ctx.check_equal(
        _("launch record: softmax of {shape} in 4 dtypes ran one forward kernel each").format(
            shape=shapes["lm_head"]
        ),
        launches,
        [forward_kernel] * 4,
    )
    for dtype, e in errors.items():
        ctx.check_max(
            _("{dtype} {shape}: max |ours - float64 softmax| (<= 1.25 x torch's + slack)").format(
                dtype=dtype, shape=shapes["lm_head"]
            ),
            e["ours"],
            e["tolerance"],
        )
    found["long_rows"] = check_long_rows(ctx, run, shapes["long"])
    found["layouts"] = layouts(run, ctx.options.device, ctx.options.seed)
    ctx.check_max(
        _("non-contiguous inputs (6 layouts): max |ours - torch.softmax|"),
        max(found["layouts"].values()),
        1e-6,
    )
    found["special_values"] = special_value_mismatches(
        run, ctx.options.device, shapes["long"][1] // 4
    )
    ctx.check_equal(
        _("rows with -inf/inf/NaN/all -inf that differ from torch.softmax"),
        sum(found["special_values"].values()),
        0,
    )
    found["empty"] = empty_results(run, ctx.options.device)
    ctx.check_equal(
        _("empty tensors / 0-size dims give torch's empty result"),
        sum(found["empty"].values()),
        len(found["empty"]),
    )
    found["bad_inputs"] = bad_inputs(run, ctx.options.device)
    clear = sum(names_the_problem(k, msg) for k, msg in found["bad_inputs"].items())
    ctx.check_equal(
        _("bad inputs rejected with an error naming the problem"), clear, len(found["bad_inputs"])
    )
    return found


def check_long_rows(ctx, run, shape: tuple[int, int]) -> dict:
    """Rows past one program: the long-row kernels the plan picks for a float32 forward of rows this long (split
    in two, or cooperative), read from the launch record, and their error."""
    errors, launches = dtype_errors(
        run, ctx.options.device, shape, ctx.options.seed, (torch.float32,)
    )
    long = errors["float32"]
    n_rows, n_cols = shape
    plan = softmax_launch.long_row_plan(
        n_cols, n_rows * n_cols * 4, torch.device(ctx.options.device)
    )
    kernels = ["_fwd_cooperative"] if plan[0] == "cooperative" else ["_fwd_partials", "_fwd_finish"]
    ctx.check_equal(
        _("launch record: float32 long rows {shape} ran the long-row kernels").format(shape=shape),
        launches,
        kernels,
    )
    ctx.check_max(
        _("float32 long rows {shape} (long-row kernels): max error").format(shape=shape),
        long["ours"],
        long["tolerance"],
    )
    return {"error": long, "kernels": launches}
