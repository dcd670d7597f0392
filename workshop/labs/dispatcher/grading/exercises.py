"""The dispatcher lab's exercises: the kernel choice for one key, the walk down the key set, predictions made
before running, and the handout's checked answers. All four are graded by the one engine (engine.py)
against the real dispatcher, on the decisions and facts the run records (lab.py measures them). A wrong
prediction's diagnoses are declared here, a wrong slot's or chain's in grading/wrong_decisions.py. No torch
import here: the CLI imports this file."""

from __future__ import annotations

from collections.abc import Callable

from workshop.declarations.diagnosis import Diagnosis
from workshop.declarations.exercise import Exercise
from workshop.declarations.questions import Question
from workshop.i18n import N_
from workshop.labs.dispatcher.grading import wrong_decisions
from workshop.labs.dispatcher.scenario_list import RECORDER_KEYS, all_scenarios

WORKSPACE_DOC = N_("""Your dispatcher lab: the kernel in one slot of a dispatch table, the walk down the key
set, your predictions and your answers to the handout's questions.

`python -m workshop check dispatcher` runs the lab with what you write here and compares it with the real
dispatcher on every decision the run records (workshop/labs/dispatcher/README.md#exercises). Write PREDICTIONS
before your first run.""")

WORKSPACE_IMPORTS = """
from __future__ import annotations

from collections.abc import Callable, Iterable

from workshop.labs.dispatcher.keys import TableEntry, split_runtime_key
from workshop.labs.dispatcher.reimpl import functionality, passes_on, rank
"""

TABLE_ENTRY = Exercise(
    lab="dispatcher",
    name="table_entry",
    title=N_("the kernel in one slot of an operator's dispatch table"),
    statement=N_(
        "Write table_entry(regs, fallbacks, key): the kernel the dispatcher puts in key's slot of one "
        "operator's table, computed from what was registered for that operator (regs) and the per-key "
        "backend fallbacks. Apply the precedence of section 2 of the handout, in order: a kernel registered for "
        "exactly this key; CompositeExplicitAutograd(NonFunctional) at a dense backend key; the "
        "CompositeImplicitAutograd decomposition (at an autograd key only when the backend it wraps has no "
        "kernel of its own); the Autograd kernel at an autograd key; the key's backend fallback; else None. "
        "Graded on every slot the run's calls walked through and on GRADED_KEYS of every op they called."
    ),
    hints=(
        N_(
            "The message names the first slot you got wrong, what you put there, and the rule that decides "
            "it. Go through section 2's rules in order for that key, and return at the first that applies. "
            "`python -c \"import torch; print(torch._C._dispatch_dump('aten::linear'))\"` shows an op's "
            "registrations, `_dispatch_dump_table` its computed table."
        ),
        N_(
            "In order: regs[key] (tag 'kernel'); at a Dense key, the CompositeExplicitAutogradNonFunctional "
            "registration, else the CompositeExplicitAutograd one ('default backend kernel'); the "
            "CompositeImplicitAutograd one ('math kernel') at a Dense or NestedTensor key, or at an autograd "
            "key whose backend has no kernel of its own nor a CompositeExplicitAutograd one "
            "(AutogradNestedTensor: no NestedTensor<backend> kernel); at an autograd key, the Autograd[alias] "
            "one ('autograd kernel'); fallbacks.get(key); else None. Only the first rule keeps the "
            "registration's fallthrough flag."
        ),
        N_(
            "`f`, the key's functionality; `if key in regs: return ...` tag 'kernel', the "
            'registration\'s fallthrough; `if f == "Dense":` ... the first '
            "CompositeExplicitAutograd(NonFunctional)[alias] registration, 'default backend kernel'; "
            "`backend_has_kernel = ...` at an autograd key: the wrapped backend's own kernel, or a "
            "CompositeExplicitAutograd one; `if ...: return ...` 'math kernel'; `if ...: return ...` "
            "'autograd kernel'; else the key's fallback, or None."
        ),
    ),
    handout=N_("README.md#2-the-table-one-slot-per-key"),
    reference="workshop.labs.dispatcher.reimpl:table_entry",
    attribute="table_entry",
    interface=N_(
        "regs: {key: TableEntry} registered for the op: runtime keys ('CPU', 'NestedTensorCPU') and alias "
        "keys ('CompositeImplicitAutograd[alias]', 'CompositeExplicitAutograd[alias]', "
        "'CompositeExplicitAutogradNonFunctional[alias]', 'Autograd[alias]'). fallbacks: {key: TableEntry}, "
        "the backend fallbacks. key: a runtime key name, e.g. 'AutogradCPU'. Returns TableEntry(source, tag, "
        "fallthrough): source is the file of the registration you chose, tag one of 'kernel', 'default "
        "backend kernel', 'math kernel', 'autograd kernel', 'backend fallback'; or None for an empty slot. "
        "functionality('AutogradCPU') == 'AutogradFunctionality', functionality('NestedTensorCPU') == "
        "'NestedTensor', functionality('CPU') == 'Dense'; split_runtime_key('AutogradCPU') == "
        "('AutogradFunctionality', 'CPU')."
    ),
    diagnoses=wrong_decisions.SLOT_DIAGNOSES,
    outputs=("entries",),
    compare=wrong_decisions.differing,
    check=N_("{function}: {label}"),
)

WALK = Exercise(
    lab="dispatcher",
    name="walk",
    title=N_("the keys one call walks, down to the kernel that does the work"),
    statement=N_(
        "Write walk(entry, tensor_keys, include, exclude): the keys one operator call walks through, highest "
        "priority first, ending at the key whose kernel does the work. The keys in play are the tensor keys "
        "plus the TLS include set, minus the TLS exclude set (excluding a key removes its whole "
        "functionality: AutogradFunctionality removes AutogradCPU and AutogradCUDA), minus the keys whose "
        "slot is a fallthrough. The key of highest rank wins; if its kernel passes the call on, the walk "
        "continues with the keys in play below it, else it ends there. Graded on every call of the run, "
        "whole chains compared with the real dispatcher's."
    ),
    hints=(
        N_(
            "The message names the first call whose chain differs and what the difference says: an excluded "
            "key, a fallthrough not dropped, a chain that stops too early or goes on too far. Section 3's "
            "three steps, in order, are the whole walk."
        ),
        N_(
            "Keys in play = (tensor_keys | include), less every key whose functionality(k) is that of a key "
            "in exclude, less the keys whose entry(k) is a fallthrough. Then repeat: the key of highest "
            "rank(k) joins the chain; if passes_on(key, entry(key)), keep only the keys ranked below it and "
            "go on, else stop."
        ),
        N_(
            "`gone = ...` the functionalities of the excluded keys; `in_play = ...` (tensor_keys | "
            "include), less gone, less the fallthrough slots; `chain = []`; `while in_play:` `key = "
            "...` the highest rank; `chain.append(key)`; `if ...: break`, where its kernel does the "
            "work; `in_play = ...` the keys ranked below key; `return chain`."
        ),
    ),
    handout=N_("README.md#3-the-walk-down-the-key-set"),
    reference="workshop.labs.dispatcher.reimpl:walk",
    attribute="walk",
    interface=N_(
        "entry(key) -> TableEntry | None: the kernel in key's slot of this op's real table. tensor_keys, "
        "include, exclude: sets of key names, e.g. {'CPU', 'AutogradCPU', 'ADInplaceOrView', 'AutocastCPU'}, "
        "{'PythonTLSSnapshot', 'Python'}, {'AutogradFunctionality'}. Returns a list of key names, e.g. "
        "['AutogradCPU', 'ADInplaceOrView', 'CPU']. rank(key) orders keys (bigger wins); "
        "passes_on(key, entry(key)) says whether the kernel hands the call on."
    ),
    diagnoses=wrong_decisions.CHAIN_DIAGNOSES,
    outputs=("chains",),
    compare=wrong_decisions.differing,
    check=N_("{function}: {label}"),
)


# Per CPU scenario: the key whose kernel first does real work, and the aten op that does the GEMM (trace.md).
PREDICTION_LOOK = {
    "handled_at": N_("trace.md: the end of the traced call's chain, past the recorder's keys"),
    "gemm_op": N_("trace.md: the op down the calls whose kernel calls BLAS"),
}
PREDICTION_QUESTIONS = tuple(
    Question(f"{sc['name']}.{field}", "", look, kind="str")
    for sc in all_scenarios(["cpu"])
    for field, look in PREDICTION_LOOK.items()
)

ANSWER_LOOK = N_("that question's section of the handout, and the rows of trace.md it names")
ANSWER_QUESTIONS = (
    Question(
        "addmm_ADInplaceOrView_kernel",
        N_(
            "question 1: how aten::addmm's ADInplaceOrView slot is tagged in its table "
            '(a tag, e.g. "kernel")'
        ),
        ANSWER_LOOK,
        kind="str",
    ),
    Question(
        "addmm_ADInplaceOrView_fallthrough",
        N_("question 1: is that slot a fallthrough? (True or False)"),
        ANSWER_LOOK,
        kind="bool",
    ),
    Question(
        "inference_result_keys",
        N_(
            "question 2: the key set of cpu/inference_mode/3d's result, a tensor made inside "
            "inference_mode (a list of key names)"
        ),
        ANSWER_LOOK,
        kind="names",
    ),
    Question(
        "addmm_chain_without_recorder",
        N_(
            "question 3: the keys aten::addmm (cpu/grad/3d) would walk without the lab's recorder, in order "
            "(a list of key names)"
        ),
        ANSWER_LOOK,
        kind="list",
    ),
    Question(
        "autocast_key_excluded_for_addmm",
        N_(
            "question 4: the key in aten::addmm's TLS exclude set that keeps autocast away "
            "(cpu/autocast_bf16/3d; a key name)"
        ),
        ANSWER_LOOK,
        kind="names",
    ),
    Question(
        "matmul_3d_last_op",
        N_(
            "question 6: the op that gives torch.matmul's 3-D result its (B, T, 600) shape back "
            '(cpu/matmul/3d; "aten::...")'
        ),
        ANSWER_LOOK,
        kind="str",
    ),
)


def predicted(field: str, condition: Callable[[object, object], bool]):
    """A diagnosis of PREDICTIONS: shows when the wrong prediction is of `field` (its key ends in it) and
    condition(yours, this run's) holds; its message may name yours as {key}. The messages give the rule to
    apply again, never the answer (a prediction must stay one until it is right)."""
    return lambda e: (
        {"key": e.got} if e.output.endswith(f".{field}") and condition(e.got, e.want) else None
    )


PREDICTIONS = Exercise(
    lab="dispatcher",
    name="predictions",
    title=N_("predict, before running: who handles the call, and which op does the GEMM"),
    statement=N_(
        "Before you run the lab, predict for each CPU scenario the key whose kernel first does real work on "
        "the traced call's root op (aten::linear or aten::matmul: the end of its chain; PythonTLSSnapshot "
        "and Python only hand the call on to the lab's recorder), and the aten op that finally does the "
        "GEMM. Write them in PREDICTIONS; they are graded against your run's trace."
    ),
    hints=(
        N_(
            "Scenarios are described in the handout's 'Run it' section. Section 5 works the same question for "
            "F.layer_norm: apply its steps to each scenario's tensor keys and TLS sets. A composite op runs no "
            "GEMM itself."
        ),
    ),
    handout=N_("README.md#exercises"),
    reference="workshop.labs.dispatcher.grading.reference_answers:PREDICTIONS",
    attribute="PREDICTIONS",
    interface=N_(
        "{scenario name: {'handled_at': key name, 'gemm_op': 'aten::...'}}, e.g. "
        "'cpu/grad/3d': {'handled_at': 'SomeKeyName', 'gemm_op': 'aten::some_op'}."
    ),
    questions=PREDICTION_QUESTIONS,
    diagnoses=(
        Diagnosis(
            N_("a decomposed op as the GEMM"),
            predicted("gemm_op", lambda yours, run: yours in ("aten::linear", "aten::matmul")),
            N_("That op is decomposed: it calls other ops and runs no GEMM itself."),
        ),
        Diagnosis(
            N_("the bias added apart from the GEMM"),
            predicted("gemm_op", lambda yours, run: (yours, run) == ("aten::mm", "aten::addmm")),
            N_("Where does the bias go? A GEMM op can add it itself: beta*b + alpha*x W^T."),
        ),
        Diagnosis(
            N_("a batched GEMM for a 2-D weight"),
            predicted("gemm_op", lambda yours, run: (yours, run) == ("aten::bmm", "aten::mm")),
            N_("The weight is 2-D, the same for every batch entry: does the product need a batch?"),
        ),
        Diagnosis(
            None,
            predicted("gemm_op", lambda yours, run: True),
            N_("Follow the calls in trace.md down to the op whose kernel calls BLAS."),
        ),
        Diagnosis(
            N_("a key of the lab's recorder as the handler"),
            predicted("handled_at", lambda yours, run: yours in RECORDER_KEYS),
            N_("{key} only hands the call on (the lab's recorder); the chain goes on below it."),
        ),
        Diagnosis(
            None,
            predicted(
                "handled_at", lambda yours, run: str(run).startswith(("Autocast", "Autograd"))
            ),
            N_(
                "List the keys in play for this scenario (tensor keys, TLS include and exclude, "
                "fallthroughs), rank them, and read the winner's slot for the root op (handout, sections 2 "
                "and 5)."
            ),
        ),
        Diagnosis(
            None,
            predicted("handled_at", lambda yours, run: str(yours).startswith("Autograd")),
            N_("This scenario's TLS exclude set removes every autograd key (inference_mode)."),
        ),
        Diagnosis(
            None,
            predicted("handled_at", lambda yours, run: True),
            N_("Walk the three steps of the handout for this scenario's keys and TLS sets."),
        ),
    ),
    from_run=True,
)

ANSWERS = Exercise(
    lab="dispatcher",
    name="answers",
    title=N_("the handout's questions whose answer is a fact of the run"),
    statement=N_(
        "Answer the handout's checked questions (README.md, Questions) in ANSWERS: each key names its "
        "question. They are graded against this run's trace."
    ),
    hints=(N_("Each question names the rows of trace.md that answer it."),),
    handout=N_("README.md#questions"),
    reference="workshop.labs.dispatcher.grading.reference_answers:ANSWERS",
    attribute="ANSWERS",
    interface=N_(
        "A dict of key names, kernel tags, booleans and lists of key names, as the comments say."
    ),
    questions=ANSWER_QUESTIONS,
    from_run=True,
)

EXERCISES = [TABLE_ENTRY, WALK, PREDICTIONS, ANSWERS]
