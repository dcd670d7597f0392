"""The custom_op lab's exercises: the pieces of torch.ops.workshop.softmax that the chapter's second
Definition-of-Done item asks for (the one-pass Triton kernels, the fake implementation, the autograd
registration), and the handout's checked questions.

Each piece is graded in an operator of its own, made of the learner's piece and the reference for the rest
(learner_op.py), by the lab's checks: `python -m workshop check custom_op`.
"""

from workshop.grading.exercise import Exercise
from workshop.grading.questions import Question
from workshop.i18n import N_

LAB = "custom_op"
HANDOUT = N_("README.md#exercises")

WORKSPACE_DOC = N_("""Your custom_op lab: the softmax's Triton kernels, its fake and its autograd functions.

Replace each `raise NotImplementedError(...)` below with your code, then grade this file with
`python -m workshop check custom_op` (add `--device cuda` on a GPU). Each piece you write is registered into an
operator of its own, torch.ops.graded_<exercise>.softmax, with the reference pieces for the rest, and graded by
the lab's checks: the kernels against a float64 softmax, then gradcheck, opcheck and torch.compile of that
operator. torch.ops.workshop.softmax itself never changes. On the CPU your kernels run in Triton's interpreter:
every load and store is bounds-checked, and print() works inside a kernel. The handout:
workshop/labs/custom_op/README.md, section "Exercises".

_acc(x), imported below, is x in the accumulation type: float64 for float64 inputs and float32 for the others
(a @triton.jit helper).""")

WORKSPACE_IMPORTS = """
import torch
import triton
import triton.language as tl

from workshop.ops.softmax_kernels import _acc
"""

# The handout's checked questions (README.md, "Questions" 8-12), answered in ANSWERS from this run's summary.md,
# result.json and inductor_custom_op.txt.
QUESTIONS = (
    Question(
        "fwd_programs",
        N_(
            "Q8. How many programs did the forward kernel of the (64, 600) training step run on? (int)"
        ),
        N_("summary.md: the kernels the step launched, by the launch record"),
    ),
    Question(
        "rows_per_program",
        N_("Q9. How many rows of 600 did each of those programs take (the constexpr ROWS)? (int)"),
        N_("summary.md: ROWS in the forward kernel's launch"),
    ),
    Question(
        "block_n",
        N_("Q10. What BLOCK_N did the launch use for N = 600? (int)"),
        N_("summary.md: BLOCK_N in the forward kernel's launch"),
    ),
    Question(
        "align",
        N_(
            "Q11. What ALIGN did it use (the largest power of two up to 16 dividing N and the row strides)? "
            "(int)"
        ),
        N_("summary.md: ALIGN in the forward kernel's launch"),
    ),
    Question(
        "extern_calls",
        N_(
            "Q12. How many calls of the opaque op (forward and backward) are in inductor_custom_op.txt? (int)"
        ),
        N_("inductor_custom_op.txt: count the calls of the op's .default( in both call()s"),
    ),
)

EXERCISES = [
    Exercise(
        lab=LAB,
        name="forward_kernel",
        title=N_("the one-pass Triton forward kernel: y = softmax(x) over rows"),
        statement=N_(
            "Write the Triton kernel softmax_fwd_kernel: y = softmax(x) along each row of a (n_rows, n_cols) "
            "matrix, ROWS whole rows per program. Mask the rows past n_rows and the columns past n_cols "
            "(load -inf there, so that they add nothing), subtract each row's max before exp, divide by the "
            "row's sum and store in y's dtype. Graded on rows padded past n_cols, in float32, float64 and "
            "bfloat16, with rows of large logits, against a float64 softmax: your launches (the launch "
            "record), every element of y written and nothing outside it; then gradcheck, opcheck and "
            "torch.compile(fullgraph=True) of an operator that launches your kernel."
        ),
        hints=(
            N_(
                "rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None], as int64 (row * stride may pass "
                "2**31); cols = tl.arange(0, BLOCK_N)[None, :]; mask = (rows < n_rows) & (cols < n_cols). "
                "tl.max and tl.sum with axis=1 reduce each row; [:, None] keeps them 2-D. Accumulate with _acc. "
                "The handout's section 2 reads _fwd_one_pass line by line."
            ),
        ),
        handout=HANDOUT,
        reference="workshop.ops.softmax_kernels:_fwd_one_pass",
        attribute="softmax_fwd_kernel",
        interface=N_(
            "x_ptr, y_ptr: (n_rows, n_cols) tensors of one float dtype, unit stride along a row, row strides "
            "x_row_stride and y_row_stride (in elements). ROWS, BLOCK_N (a power of two >= n_cols), ALIGN: "
            "tl.constexpr. Grid: cdiv(n_rows, ROWS) programs. Program p covers rows p * ROWS ... p * ROWS + "
            "ROWS - 1 and columns 0 ... BLOCK_N - 1; element (r, c) of x is at x_ptr + r * x_row_stride + c. "
            "ALIGN (a power of two dividing n_cols and both strides) is optional: see _fwd_one_pass."
        ),
    ),
    Exercise(
        lab=LAB,
        name="backward_kernel",
        title=N_("the one-pass Triton backward kernel: dx = y * (dy - sum(dy * y))"),
        statement=N_(
            "Write the Triton kernel softmax_bwd_kernel: dx = y * (dy - sum(dy * y)) along each row, from the "
            "forward's output y and the incoming gradient dy. The same rows, columns and masks as the forward; "
            "masked lanes load 0. Graded like the forward kernel against a float64 backward, then gradcheck, "
            "gradgradcheck, opcheck and torch.compile(fullgraph=True) of an operator whose backward launches "
            "your kernel."
        ),
        hints=(
            N_(
                "Load y and dy (other=0.0) in the accumulation type, s = tl.sum(dy * y, axis=1)[:, None], then "
                "dx = y * (dy - s). The sum term is what makes the rows of dx sum to 0: softmax's outputs always "
                "sum to 1. The handout's section 2 derives the formula."
            ),
        ),
        handout=HANDOUT,
        reference="workshop.ops.softmax_kernels:_bwd_one_pass",
        attribute="softmax_bwd_kernel",
        interface=N_(
            "y_ptr, dy_ptr, dx_ptr: (n_rows, n_cols) tensors of one float dtype, unit stride along a row, "
            "row strides y_row_stride, dy_row_stride, dx_row_stride. ROWS, BLOCK_N, ALIGN: as in the "
            "forward. Grid: cdiv(n_rows, ROWS) programs. The same rows, columns and masks as "
            "softmax_fwd_kernel; masked lanes load 0 (they add nothing to the sum)."
        ),
    ),
    Exercise(
        lab=LAB,
        name="fake",
        title=N_("the fake implementation: the output's shape, dtype and strides, without data"),
        statement=N_(
            "Write softmax_fake(x, dim), the op's fake implementation: the output's shape, dtype, device and "
            "strides, without data. Given a fake x and dim (checked, in [0, x.dim())), return an empty tensor "
            "exactly like the one the real kernel returns: "
            "x's shape, dtype and device, laid out with dim as the innermost (unit-stride) dimension and the "
            "other dimensions in their order, because the kernels write rows along dim. The same function "
            "gives the backward's output from y. Graded against the real op's outputs on seven inputs, then "
            "opcheck (its fake-tensor test compares them too) and torch.compile(fullgraph=True) of a softmax "
            "over dim 0, whose generated code asserts the strides your fake announced."
        ),
        hints=(
            N_(
                "Allocate with dim moved last, torch.empty(x.movedim(dim, -1).shape, dtype=x.dtype, "
                "device=x.device), then move it back: .movedim(-1, dim) is a view with the right strides. "
                "torch.empty_like(x) copies x's strides, which are wrong for dim 0 or a transposed x."
            ),
        ),
        handout=HANDOUT,
        reference="workshop.ops.softmax_op:empty_output",
        attribute="softmax_fake",
        interface=N_(
            "x: a FakeTensor, any shape (0-d included), a float dtype; dim: int in [0, max(x.dim(), 1)). "
            "Returns a new empty tensor; nothing may read x's data."
        ),
    ),
    Exercise(
        lab=LAB,
        name="setup_context",
        title=N_("autograd: what the forward saves for the backward"),
        statement=N_(
            "Write setup_context(ctx, inputs, output), which saves on ctx what the op's backward needs: "
            "torch.library.register_autograd calls it after the forward. The backward computes "
            "dx = y * (dy - sum(dy * y, dim)): save y, the output (not the input x), with "
            "ctx.save_for_backward, and dim as ctx.dim. Graded with the reference backward, which reads "
            "ctx.saved_tensors and ctx.dim: what you saved, then gradcheck, opcheck and torch.compile."
        ),
        hints=(
            N_(
                "inputs is (x, dim), output is y. Tensors go through ctx.save_for_backward (autograd then checks "
                "they were not modified in place before the backward); plain values such as dim are attributes."
            ),
        ),
        handout=HANDOUT,
        reference="workshop.ops.softmax_op:setup_context",
        attribute="setup_context",
        interface=N_("inputs: (x, dim); output: y, x's shape. Returns None."),
    ),
    Exercise(
        lab=LAB,
        name="backward",
        title=N_("autograd: the op's gradients, one per input"),
        statement=N_(
            "Write backward(ctx, dy), which returns the op's gradients, one per input: (dx, None) for "
            "(x, dim). torch.library.register_autograd calls it in the backward pass. ctx holds what "
            "setup_context saved (ctx.saved_tensors == (y,), ctx.dim) and ctx.ops.backward, the op's backward "
            "operator: ctx.ops.backward(y, dy, dim) runs the backward kernel. Graded with the reference "
            "setup_context: what you return, then gradcheck and gradgradcheck, opcheck and torch.compile."
        ),
        hints=(
            N_(
                "(y,) = ctx.saved_tensors; return ctx.ops.backward(y, dy, ctx.dim), None. dim is an int: it has "
                "no gradient, but its place in the tuple must be there."
            ),
        ),
        handout=HANDOUT,
        reference="workshop.ops.softmax_op:gradients",
        attribute="backward",
        interface=N_(
            "dy: y's shape and dtype. Returns a tuple (dx, None), dx of x's shape and dtype."
        ),
    ),
    Exercise(
        lab=LAB,
        name="answers",
        title=N_("the handout's checked questions, answered from this run"),
        statement=N_(
            "Answer the handout's checked questions (8 to 12) in ANSWERS, from this run's summary.md, "
            "result.json and inductor_custom_op.txt."
        ),
        hints=(
            N_(
                "Each failed answer says where this run shows it; README.md, Questions, says what is asked."
            ),
        ),
        handout=N_("README.md#questions"),
        reference="workshop.labs.custom_op.launch_facts:ANSWERS",
        attribute="ANSWERS",
        questions=QUESTIONS,
        from_run=True,
    ),
]
