"""The custom_op lab's exercises: the pieces of torch.ops.workshop.softmax that the chapter's second
Definition-of-Done item asks for (the one-pass Triton kernels, the fake implementation, the autograd
registration, the operator made with torch.library.custom_op and triton_op), and the handout's checked
questions.

Each piece is graded in an operator of its own, made of the learner's piece and the grader's own for the rest
(learner_op.py); the registrations (define_custom_op, define_triton_op) with the grader's pieces (learner_op.py,
registration_grading.py); then the lab's checks run on the op made of all the learner's pieces (own_op.py). The
mistakes that grading names are declared here as data (diagnoses=): kernel_mistakes.py for the kernels,
piece_mistakes.py for the fake, setup_context and backward.
"""

from workshop.declarations.exercise import Exercise
from workshop.declarations.questions import Question
from workshop.i18n import N_
from workshop.labs.custom_op.grading.kernel_mistakes import BACKWARD_VALUES, FORWARD_VALUES
from workshop.labs.custom_op.grading.piece_mistakes import FAKE_OUTPUT, GRADIENT, SAVED

LAB = "custom_op"
HANDOUT = N_("README.md#exercises")

WORKSPACE_DOC = N_("""Your custom_op lab: the softmax's Triton kernels, its fake and autograd functions, and its
registration as a custom_op and a triton_op.

Replace each `raise NotImplementedError(...)` below with your code, then grade this file with
`python -m workshop check custom_op` (add `--device cuda` on a GPU; `check custom_op EXERCISE` grades one).
Each piece you write is graded in an operator of its own, torch.ops.graded_<exercise>.softmax, made of your piece
and the grader's own for the rest; then the lab's checks run on the op made of all your pieces.
torch.ops.workshop.softmax itself never changes. On the CPU your kernels run in Triton's interpreter: every load
and store is bounds-checked, and print() works inside a kernel. The handout: workshop/labs/custom_op/README.md,
section "Exercises".

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
            "matrix, ROWS whole rows per program, computed in the accumulation type and stored in y's dtype. "
            "Graded on rows padded past n_cols, in float32, float64 and bfloat16, with rows of large logits, "
            "against a float64 softmax: your launches (the launch record), every element of y written and "
            "nothing outside it, what it computes in; then gradcheck, opcheck and "
            "torch.compile(fullgraph=True) of an operator that launches your kernel."
        ),
        hints=(
            N_(
                "Section 1 of the handout, on row_norm.py's kernel: the same rows, columns, mask and "
                "accumulation type. What differs is the row's reductions: which value a masked lane must load "
                "so that it changes neither the max nor the sum, and why the max is subtracted first."
            ),
            N_(
                "Per row: m = max(x), e = exp(x - m), y = e / sum(e). A masked lane loads -inf: exp(-inf - m) "
                "= 0 adds nothing to the sum, and -inf never wins the max. Reduce with axis=1 and keep the "
                "result 2-D with [:, None]."
            ),
            N_(
                "rows = ...  # (ROWS, 1) int64: this program's rows\n"
                "cols = ...  # (1, BLOCK_N)\n"
                "mask = ...  # rows and columns inside the matrix\n"
                "x = _acc(tl.load(..., mask=mask, other=...))\n"
                "e = ...  # exp of x minus its row's max\n"
                "tl.store(..., e / ..., mask=mask)"
            ),
        ),
        handout=HANDOUT,
        reference="workshop.ops.softmax_kernels:_fwd_one_pass",
        attribute="softmax_fwd_kernel",
        diagnoses=FORWARD_VALUES,
        interface=N_(
            "x_ptr, y_ptr: (n_rows, n_cols) tensors of one float dtype, unit stride along a row, row strides "
            "x_row_stride and y_row_stride (in elements). ROWS, BLOCK_N (a power of two >= n_cols), ALIGN: "
            "tl.constexpr. Grid: cdiv(n_rows, ROWS) programs; program p covers rows p * ROWS ... p * ROWS + "
            "ROWS - 1. ALIGN (a power of two dividing n_cols and both strides) is optional: the handout, "
            "section 1, says what it is for."
        ),
    ),
    Exercise(
        lab=LAB,
        name="backward_kernel",
        title=N_("the one-pass Triton backward kernel: the softmax's gradient, row by row"),
        statement=N_(
            "Write the Triton kernel softmax_bwd_kernel: dx, the gradient of the loss with respect to the "
            "softmax's input, along each row, from the forward's output y and the incoming gradient dy, "
            "computed in the accumulation type. The formula is yours to derive (the handout's section 1 "
            "works the method on row_norm). Graded like "
            "the forward kernel against a float64 backward, then gradcheck, gradgradcheck, opcheck and "
            "torch.compile(fullgraph=True) of an operator whose backward launches your kernel."
        ),
        hints=(
            N_(
                "The same rows, columns and mask as the forward. Derive dx as the handout's section 1 does "
                "for row_norm: the Jacobian dy_j/dx_i of one row, then its contraction with dy; look for one "
                "reduction per row."
            ),
            N_(
                "dy_j/dx_i = y_j (delta_ij - y_i), so dx_i = sum_j dy_j y_j (delta_ij - y_i) = y_i (dy_i - "
                "sum_j dy_j y_j). In the kernel: s = sum over the row of dy * y, kept 2-D with [:, None]; "
                "dx = y * (dy - s). Masked lanes load "
                "0 for y and dy: they add nothing to s. The rows of a right dx sum to 0."
            ),
            N_(
                "y = _acc(tl.load(..., mask=mask, other=...))\n"
                "dy = ...\n"
                "s = ...  # (ROWS, 1)\n"
                "tl.store(..., ..., mask=mask)"
            ),
        ),
        handout=HANDOUT,
        reference="workshop.ops.softmax_kernels:_bwd_one_pass",
        attribute="softmax_bwd_kernel",
        diagnoses=BACKWARD_VALUES,
        interface=N_(
            "y_ptr, dy_ptr, dx_ptr: (n_rows, n_cols) tensors of one float dtype, unit stride along a row, "
            "row strides y_row_stride, dy_row_stride, dx_row_stride. ROWS, BLOCK_N, ALIGN: as in the "
            "forward. Grid: cdiv(n_rows, ROWS) programs."
        ),
    ),
    Exercise(
        lab=LAB,
        name="fake",
        title=N_("the fake implementation: the output's shape, dtype and strides, without data"),
        statement=N_(
            "Write softmax_fake(x, dim), the op's fake implementation: a new empty tensor exactly like the one "
            "the real kernel returns, in shape, dtype, device and strides, without reading any data. The "
            "kernels write the output as rows along dim. The same function gives the backward's output from "
            "y. Graded against the real op's outputs on seven inputs, then opcheck (its fake-tensor test "
            "compares them too) and torch.compile(fullgraph=True) of a softmax over dim 0, whose generated "
            "code asserts the strides your fake announced."
        ),
        hints=(
            N_(
                "Which dimension of the output has stride 1, whatever x's layout? The kernels write each row "
                "along dim contiguously; the other dimensions keep their order."
            ),
            N_(
                "Allocate a tensor whose last dimension is dim (x's shape with dim moved last), then view it "
                "with that dimension moved back to dim: the view keeps the strides of the allocation. "
                "torch.empty_like(x) and torch.empty(x.shape) both lay the last dim innermost."
            ),
            N_(
                "moved = torch.empty(..., dtype=x.dtype, device=x.device)  # dim last\n"
                "return moved.movedim(...)"
            ),
        ),
        handout=HANDOUT,
        reference="workshop.ops.softmax_op:empty_output",
        attribute="softmax_fake",
        diagnoses=FAKE_OUTPUT,
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
            "torch.library.register_autograd calls it after the forward. The backward reads "
            "ctx.saved_tensors, one tensor, and ctx.dim. Graded "
            "with the grader's backward: what you saved, then gradcheck, opcheck and torch.compile."
        ),
        hints=(
            N_(
                "Which of the forward's tensors does the formula need, its input or its output? The handout's "
                "question 1 asks what the other choice would cost."
            ),
            N_(
                "inputs is (x, dim), output is y. Tensors go through ctx.save_for_backward (autograd then "
                "checks they were not modified in place before the backward); a plain value such as dim is an "
                "attribute of ctx."
            ),
            N_("ctx.save_for_backward(...)\nctx.dim = ..."),
        ),
        handout=HANDOUT,
        reference="workshop.ops.softmax_op:setup_context",
        attribute="setup_context",
        diagnoses=SAVED,
        interface=N_("inputs: (x, dim); output: y, x's shape. Returns None."),
    ),
    Exercise(
        lab=LAB,
        name="backward",
        title=N_("autograd: the op's gradients, one per input"),
        statement=N_(
            "Write backward(ctx, dy), which returns the op's gradients, one per input of the op (x, dim). "
            "torch.library.register_autograd calls it in the backward pass. ctx holds what setup_context "
            "saved (ctx.saved_tensors, y; ctx.dim) and ctx.ops.backward, the op's backward operator, "
            "called as ctx.ops.backward(y, dy, dim). Graded with the grader's setup_context: what you return, "
            "then gradcheck and gradgradcheck, opcheck and torch.compile."
        ),
        hints=(
            N_(
                "The backward operator runs the backward kernel; what autograd needs back is one entry per "
                "input of the op, in order."
            ),
            N_(
                "dx from the backward operator, given y, dy and dim; dim is an int and has no gradient: its "
                "entry is None, but it must be there."
            ),
            N_("... = ctx.saved_tensors  # what setup_context saved\nreturn ..., ..."),
        ),
        handout=HANDOUT,
        reference="workshop.ops.softmax_op:gradients",
        attribute="backward",
        diagnoses=GRADIENT,
        interface=N_(
            "dy: y's shape and dtype. Returns a tuple (dx, None), dx of x's shape and dtype."
        ),
    ),
    Exercise(
        lab=LAB,
        name="define_custom_op",
        title=N_("the operator: torch.library.custom_op, register_fake, register_autograd"),
        statement=N_(
            "Write define_custom_op(qualname, implementation, fake, setup_context, backward), which makes "
            "qualname an operator with torch.library.custom_op, whose body returns implementation(x, dim), "
            "registers fake as its fake implementation and backward, after setup_context, as its autograd "
            "formula, and returns the op. Its schema is read from the body's annotations: softmax(Tensor x, "
            "SymInt dim=-1) -> Tensor. Graded by what it registered (its name, that it is a custom_op, its "
            "schema, its fake, its autograd), then gradcheck, opcheck and torch.compile(fullgraph=True), "
            "where the op stays an extern call."
        ),
        hints=(
            N_(
                "The handout's section 2: the worked example row_norm.py makes its operator with the same "
                "three calls. Yours takes its pieces as arguments and has one more parameter, dim."
            ),
            N_(
                "torch.library.custom_op(qualname, mutates_args=()) decorates a function whose annotations "
                "are the schema (x: torch.Tensor, dim: int = -1, returning a torch.Tensor); what it returns "
                "has register_fake(fake) and register_autograd(backward, setup_context=setup_context)."
            ),
            # code, not prose: not a message to translate
            "@torch.library.custom_op(...)\n"
            "def softmax(x: ..., dim: ...) -> ...:\n"
            "    return ...\n"
            "softmax.register_fake(...)\n"
            "softmax.register_autograd(...)\n"
            "return softmax  # the op",
        ),
        handout=N_("README.md#2-the-operator-custom_op-register_fake-register_autograd"),
        reference="workshop.ops.softmax_op:define_custom_op",
        attribute="define_custom_op",
        interface=N_(
            'qualname: "namespace::name"; implementation(x, dim) -> y; fake(x, dim=-1) -> an empty y; '
            "setup_context(ctx, inputs, output); backward(ctx, dy) -> (dx, None). Returns the op."
        ),
    ),
    Exercise(
        lab=LAB,
        name="define_triton_op",
        title=N_("the op Inductor can see into: torch.library.triton_op, wrap_triton"),
        statement=N_(
            "Write define_triton_op(qualname, implementation, setup_context, backward): the same operator "
            "made with torch.library.triton_op, whose body returns implementation(x, dim, wrap=...) with "
            "torch.library.wrap_triton as wrap, so that each of its Triton launches goes through "
            "wrap_triton, and with backward and setup_context as its autograd formula; no fake to register. "
            "Graded by what it registered (that it is a triton_op, its schema, its launches through "
            "wrap_triton, its autograd) and gradcheck; on a GPU also opcheck and torch.compile, where "
            "Inductor's code must hold no call of the op (on the CPU a triton_op cannot be compiled: the "
            "handout, section 4)."
        ),
        hints=(
            N_(
                "The handout's section 4 and row_norm_visible in row_norm.py: the same registration as "
                "define_custom_op with triton_op in place of custom_op, and the launches wrapped."
            ),
            N_(
                "torch.library.triton_op(qualname, mutates_args=()) decorates the body; the body passes "
                "wrap=torch.library.wrap_triton to implementation. A triton_op's fake is its body run on fake "
                "tensors: register none."
            ),
            # code, not prose: not a message to translate
            "@torch.library.triton_op(...)\n"
            "def softmax(x: ..., dim: ...) -> ...:\n"
            "    return implementation(x, dim, wrap=...)\n"
            "softmax.register_autograd(...)\n"
            "return softmax  # the op",
        ),
        handout=N_("README.md#4-the-op-inductor-can-see-into-triton_op"),
        reference="workshop.ops.softmax_op:define_triton_op",
        attribute="define_triton_op",
        interface=N_(
            "qualname, setup_context, backward: as in define_custom_op; implementation(x, dim, wrap) -> y, "
            "each launch through wrap. Returns the op."
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
            N_(
                "The launch record in summary.md gives each launch's grid (its programs) and constexprs; "
                "inductor_custom_op.txt holds the generated call() of the forward and of the backward."
            ),
            N_(
                "A program's rows, BLOCK_N and ALIGN are the forward launch's constexprs; count the calls of "
                "the op's .default( in both call()s."
            ),
        ),
        handout=N_("README.md#questions"),
        reference="workshop.labs.custom_op.grading.launch_facts:ANSWERS",
        attribute="ANSWERS",
        questions=QUESTIONS,
        from_run=True,
    ),
]
