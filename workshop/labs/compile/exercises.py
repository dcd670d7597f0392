"""The compile lab's exercises: explain one Inductor kernel of your run, and answer the facts of your run.

Both answers are constants in the learner's compile.py, read from the code and files a run of the lab wrote
(`python -m workshop check compile` writes one even before anything is answered). No torch import here: the
CLI imports this registry.
"""

from workshop.grading.exercise import Exercise
from workshop.grading.questions import Question
from workshop.i18n import N_

WORKSPACE_DOC = N_("""Your answers to the compile lab: python -m workshop check compile

Run `python -m workshop check compile` once: it writes the run's generated code (code/train_forward.py, ...)
under results/<run>/compile/ even before you answer. Read it, fill in the two dicts below, run check again.
Each answer is compared with what the lab reads from the code of that second run (kernel names are fixed for
a torch version and a device, so both runs generate the same kernels). explanation.md and kernels.json, the
lab's own reading of the code, are written once KERNEL_EXPLAINED passes.""")

# The fields of KERNEL_EXPLAINED (graded by kernel_answer.grade_kernel against the kernel's code).
KERNEL_FIELDS = (
    Question(
        "kernel",
        N_('str: a kernel defined in code/train_forward.py, e.g. "cpp_fused_gelu_view_6"'),
        kind="str",
    ),
    Question(
        "fused_ops",
        N_("list[str]: the aten ops it fuses (shape-only ops such as view may be left out)"),
        kind="list",
    ),
    Question(
        "bytes_read",
        N_("int: bytes of the buffers it reads per call (in_ptr*, in_out_ptr*), each once"),
    ),
    Question(
        "bytes_written",
        N_("int: bytes of the buffers it writes per call (out_ptr*, in_out_ptr*), each once"),
    ),
    Question(
        "reduction",
        N_('"none", "persistent" or "looped" (a C++ reduction loop counts as "looped")'),
        kind="str",
    ),
    Question(
        "grid",
        N_("list[int]: the bound N of each `#pragma omp for` loop (CPU), or [xnumel] (GPU)"),
        kind="list",
    ),
)

# The handout's questions whose answer is a count in this run's files (graded by the one grader).
ANSWER_QUESTIONS = (
    Question(
        "softmax_calls",
        N_("int: calls of the attention softmax kernel in call() of code/train_forward.py"),
        N_("count the lines of call() in code/train_forward.py that call the `_softmax` kernel"),
    ),
    Question(
        "extern_matmuls",
        N_("int: extern_kernels matmul calls (mm, addmm, bmm) in that call()"),
        N_(
            "count the `extern_kernels.` matmul calls (mm, addmm, bmm) in call() of code/train_forward.py"
        ),
    ),
    Question(
        "optimizer_kernels",
        N_("int: kernels defined in code/optimizer_inference.py"),
        N_(
            "count the kernel definitions (`<name> = async_compile...`) in code/optimizer_inference.py of "
            "this run: their number depends on the device"
        ),
    ),
    Question(
        "default_compiles",
        N_("int: compiles over the four sequence lengths with the default settings"),
        N_("read the default row of breaks.json's recompiles"),
    ),
    Question(
        "item_graph_breaks",
        N_("int: graph breaks of the .item() variant"),
        N_("read the .item() variant's graph_breaks in breaks.json"),
    ),
)

KERNEL = Exercise(
    lab="compile",
    name="kernel",
    title=N_("Explain one Inductor kernel of the MiniGPT's training forward"),
    statement=N_(
        "Pick one kernel defined in your run's code/train_forward.py and fill in KERNEL_EXPLAINED: its name, "
        "the aten ops it fuses, the bytes it reads and writes per call, its kind of reduction and its launch "
        "grid. Bytes are whole buffers: for each pointer argument of its first call in call(), numel x "
        "element size, from the buffer's empty_strided or assert_size_stride line (follow `# reuse` lines); "
        "read = in_ptr and in_out_ptr arguments, written = out_ptr and in_out_ptr arguments, each buffer once."
    ),
    hints=(
        N_(
            "Read the kernel's parameter list for the roles (in_ptr, out_ptr, in_out_ptr) and its call in call() "
            "for the buffers; the reduction is in the loops that keep an accumulator (C++ `tmp_acc`) or in "
            "`R0_BLOCK` / `for r0_offset` (Triton); the grid is the bound of each `#pragma omp for` loop (C++) "
            "or xnumel (Triton)."
        ),
    ),
    handout=N_("README.md#exercise-1-explain-one-kernel"),
    reference="workshop.labs.compile.kernel_answer:reference_answer",
    attribute="KERNEL_EXPLAINED",
    interface=N_(
        "dict: kernel str; fused_ops list[str]; bytes_read int; bytes_written int; "
        'reduction "none" | "persistent" | "looped"; grid list[int]'
    ),
    questions=KERNEL_FIELDS,
    from_run=True,
)

ANSWERS = Exercise(
    lab="compile",
    name="answers",
    title=N_("Facts of your run: calls, matmuls, optimizer kernels, compiles, graph breaks"),
    statement=N_(
        "Fill in ANSWERS with five counts read from your run's files: how many times call() in "
        "code/train_forward.py calls the attention softmax kernel; how many matmuls it hands to "
        "extern_kernels; how many kernels code/optimizer_inference.py defines; how many times Dynamo "
        "compiled the default (no dynamic= given) over the four sequence lengths; how many graph breaks the "
        ".item() variant has."
    ),
    hints=(
        N_(
            "Count in the files: the kernel's calls and the `extern_kernels.` lines in call(), the "
            "`async_compile` definitions of the optimizer's code; the compiles and breaks are in breaks.json."
        ),
    ),
    handout=N_("README.md#exercise-2-facts-of-your-run"),
    reference="workshop.labs.compile.run_facts:reference_answers",
    attribute="ANSWERS",
    interface=N_(
        "dict of ints: softmax_calls, extern_matmuls, optimizer_kernels, default_compiles, item_graph_breaks"
    ),
    questions=ANSWER_QUESTIONS,
    from_run=True,
)

EXERCISES = [KERNEL, ANSWERS]
