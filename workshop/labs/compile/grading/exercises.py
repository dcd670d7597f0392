"""The compile lab's exercises: explain one Inductor kernel of your run, and answer the facts of your run.

Both answers are constants in the learner's compile.py, read from the code and files a run of the lab wrote
(`python -m workshop check compile` writes one even before anything is answered). No torch import here: the
CLI imports this registry.
"""

from collections.abc import Callable

from workshop.declarations.diagnosis import Diagnosis, Evidence
from workshop.declarations.exercise import Exercise
from workshop.declarations.questions import Question
from workshop.i18n import N_
from workshop.labs.compile.grading.explanation_mistakes import KERNEL_DIAGNOSES
from workshop.labs.compile.grading.kernel_fields import as_grid, missing_ops, names, not_fused

WORKSPACE_DOC = N_("""Your answers to the compile lab: python -m workshop check compile

Run `python -m workshop check compile` once: it writes the run's generated code (code/train_forward.py, ...)
and breaks.json under results/<run>/compile/ even before you answer. Read them and fill in the two dicts
below. Then `python -m workshop check compile kernel` (or `answers`) grades a dict against the files of your
latest run, in seconds, without compiling again. explanation.md explains a kernel of the backward; the lab
adds your kernel, and kernels.json the training forward's arguments, once KERNEL_EXPLAINED passes.""")

# The fields of KERNEL_EXPLAINED, graded against the code of the kernel the learner picked (run_grading.kernel_truth);
# their checks record whether each field matches, not the kernel's figure, which would hand the answer out.
KERNEL_FIELDS = (
    Question(
        "kernel",
        N_(
            "str: the name of a kernel defined in code/train_forward.py (its `<name> = async_compile` line)"
        ),
        kind="str",
        reveals=False,
    ),
    Question(
        "fused_ops",
        N_("list[str]: the aten ops it fuses (shape-only ops such as view may be left out)"),
        kind="list",
        matches=lambda e: names(e.got) and not missing_ops(e) and not_fused(e) is None,
        reveals=False,
    ),
    Question(
        "bytes_read",
        N_("int: bytes of the buffers it reads per call (in_ptr*, in_out_ptr*), each once"),
        reveals=False,
    ),
    Question(
        "bytes_written",
        N_("int: bytes of the buffers it writes per call (out_ptr*, in_out_ptr*), each once"),
        reveals=False,
    ),
    Question(
        "reduction",
        N_('"none", "persistent" or "looped" (a C++ reduction loop counts as "looped")'),
        kind="str",
        reveals=False,
    ),
    Question(
        "grid",
        N_(
            "list[int]: the bound N of each loop right under a `#pragma omp for`, in the order of the code "
            "(CPU); [xnumel] or [xnumel, ynumel] (GPU)"
        ),
        kind="list",
        matches=lambda e: as_grid(e.got) == e.want,
        reveals=False,
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
        "read = in_ptr and in_out_ptr arguments, written = out_ptr and in_out_ptr arguments, each buffer once. "
        "The grid is a list whose order is the code's: one extent per loop right under a `#pragma omp for`, "
        "the first loop first."
    ),
    hints=(
        # a direction
        N_(
            "Start from the kernel's call in call(): its arguments, in order, are the kernel's parameters, and "
            "the parameters' names say what each buffer is for (in_ptr: read, out_ptr: written, in_out_ptr: "
            "both). Section 3 of the handout reads a kernel of another model this way, field by field."
        ),
        # the formula
        N_(
            "A buffer's bytes are its numel times its element size (float32 4, bool 1, int64 8), its shape "
            "from its empty_strided_cpu or assert_size_stride line. bytes_read adds the in_ptr and in_out_ptr "
            "buffers, bytes_written the out_ptr and in_out_ptr ones, each buffer once. reduction: looped when a "
            "loop keeps an accumulator (C++ `tmp_acc`, Triton `for r0_offset`), persistent when R0_BLOCK "
            "covers the row without such a loop, none otherwise. grid: the N of each `x0 < N` right under a "
            "`#pragma omp for`, top to bottom (CPU); xnumel (GPU)."
        ),
        # a skeleton without the key lines
        N_(
            "Fill the dict in this order, one line of the code for each field: kernel = the name before "
            "`= async_compile`; fused_ops = the ops its name joins with `_`; then, for each argument of its "
            "call, write down role, shape and dtype, and add up bytes_read and bytes_written from that table; "
            "reduction = what its loops do with `tmp_acc` (or `r0_offset`); grid = the bounds under each "
            "`#pragma omp for`, as a list in the order you met them."
        ),
    ),
    handout=N_("README.md#exercise-1-explain-one-kernel"),
    reference="workshop.labs.compile.grading.run_grading:kernel_explained",
    attribute="KERNEL_EXPLAINED",
    interface=N_(
        "dict: kernel str; fused_ops list[str]; bytes_read int; bytes_written int; "
        'reduction "none" | "persistent" | "looped"; grid list[int]'
    ),
    questions=KERNEL_FIELDS,
    from_run=True,
    diagnoses=KERNEL_DIAGNOSES,
    # the kernel is found, or the other fields are not graded; each field against the code of the kernel found
    check={
        "kernel": N_("{answer} is in this run's code/train_forward.py"),
        **{q.key: N_("{answer} matches the kernel's code") for q in KERNEL_FIELDS[1:]},
    },
)


def answered(value: Callable[[dict], int]) -> Callable[[Evidence], dict | None]:
    """A diagnosis's condition: the answer is value(the run's facts); its message needs no values."""
    return lambda e: {} if e.got == value(e.facts) else None


# What a wrong count says about the mistake, read in order (the first that the answer shows names it), from the
# run's facts (run_grading.count_facts), some of which no question asks for (addmm_calls, parameter_tensors,
# static_compiles). Each message names the mistake and where to look; none gives the count.
ANSWER_DIAGNOSES = (
    Diagnosis(
        N_("the softmax kernel counted once"),
        answered(lambda f: 1),
        N_(
            "the kernel is defined once but called once per transformer block: count its calls in call()"
        ),
        output="softmax_calls",
    ),
    Diagnosis(
        N_("addmm only"),
        answered(lambda f: f["addmm_calls"]),
        N_(
            "you counted addmm (the Linear layers) only: the attention's two bmm per block are matmuls too"
        ),
        output="extern_matmuls",
    ),
    Diagnosis(
        N_("bmm only"),
        answered(lambda f: f["extern_matmuls"] - f["addmm_calls"]),
        N_("you counted bmm only: every nn.Linear is an extern addmm (or mm) call too"),
        output="extern_matmuls",
    ),
    Diagnosis(
        N_("one kernel per parameter"),
        answered(lambda f: f["parameter_tensors"]),
        N_(
            "one kernel per parameter is what an unfused loop would launch; Inductor fuses the updates: "
            "count the kernel definitions in code/optimizer_inference.py"
        ),
        output="optimizer_kernels",
    ),
    Diagnosis(
        N_("the static count"),
        answered(lambda f: f["static_compiles"]),
        N_(
            "that is what dynamic=False does (a compile per length); the default does not stay static when "
            "the length changes: read its row in breaks.json"
        ),
        output="default_compiles",
    ),
    Diagnosis(
        N_("dynamic from the start"),
        answered(lambda f: 1),
        N_(
            "the default does not start dynamic: its first compile is for the first length's static shapes; "
            "read what the next lengths did in its row of breaks.json"
        ),
        output="default_compiles",
    ),
    Diagnosis(
        N_("graphs counted, not breaks"),
        answered(lambda f: f["item_graph_breaks"] + 1),
        N_("that counts graphs, not breaks: a break is where a graph ends and the next begins"),
        output="item_graph_breaks",
    ),
    Diagnosis(
        N_("no break counted"),
        answered(lambda f: 0),
        N_(
            "`.item()` needs a tensor's value while tracing: Dynamo ends the graph there; see breaks.json"
        ),
        output="item_graph_breaks",
    ),
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
        # a direction
        N_(
            "Each count is in this run's files: code/train_forward.py (the softmax kernel's calls and the "
            "extern matmuls, both in call()), code/optimizer_inference.py (its kernels) and breaks.json (the "
            "compiles and the graph breaks)."
        ),
        # the formula
        N_(
            "softmax_calls: the lines of call() that call the kernel whose name holds `_softmax`; "
            "extern_matmuls: the lines of call() that call extern_kernels.mm, .addmm or .bmm; "
            "optimizer_kernels: the `<name> = async_compile` lines of the optimizer's module; "
            "default_compiles: `compiles` in breaks.json's recompiles entry whose `how` is default; "
            "item_graph_breaks: `graph_breaks` of item_in_forward in breaks.json's explain."
        ),
        # a skeleton without the key lines
        N_(
            "Count with the shell or Python, one line per answer, e.g. `grep -c 'PATTERN' "
            "code/train_forward.py` with the kernel's name followed by `(` for softmax_calls and "
            "`extern_kernels\\.(mm|addmm|bmm)\\(` with grep -cE for extern_matmuls; "
            "`json.load(open('breaks.json'))` for the two Dynamo counts: find the entries named in the "
            "previous hint."
        ),
    ),
    handout=N_("README.md#exercise-2-facts-of-your-run"),
    reference="workshop.labs.compile.grading.run_grading:answers",
    attribute="ANSWERS",
    interface=N_(
        "dict of ints: softmax_calls, extern_matmuls, optimizer_kernels, default_compiles, item_graph_breaks"
    ),
    questions=ANSWER_QUESTIONS,
    from_run=True,
    diagnoses=ANSWER_DIAGNOSES,
)

EXERCISES = [KERNEL, ANSWERS]
