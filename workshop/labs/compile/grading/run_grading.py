"""Grade compile.kernel and compile.answers from a run folder's files alone, so that grading needs no compile.

Both exercises ask about what one run of the lab generated. The lab grades them through `read_run` and `grade`
right after writing these files, and a re-grade (only the learner's answers changed) runs the very same two
functions on the learner's latest run folder: seconds instead of minutes of compiling. What grading reads:
- code/<stage>_<kind>.py: Inductor's generated modules; every kernel is parsed again from them;
- breaks.json: the graph-break and recompile experiments (default_compiles, item_graph_breaks);
- grading_facts.json (FACTS_FILE): what the code does not say: the device, the model's parameter count, each
  kernel's MiniGPT source lines, the unfused results each training kernel replaces (from AOTAutograd's graphs,
  which are not kept as objects), and a digest of every file above.
A file changed since its run wrote it (notes typed into code/train_forward.py, say) is one clear line, never a
verdict on other code: the digests tell. The learner's two dicts are read in their worker process as data
(the worker protocol: no learner code runs in the lab's process); every truth they are graded against is read here, from
the files. The folder belongs to the learner, so a re-grade is the learner's quick loop; an instructor's grade runs
the lab, which writes and grades a fresh folder.

What a run reveals follows one rule: a figure that answers an exercise is written only once the learner's own
answer to it has passed (what `grade` returns). The lab's worked example, a kernel of the training backward (which no
exercise asks about), is always explained.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

from workshop import engine
from workshop.i18n import _, templates
from workshop.lab_api import LabContext
from workshop.labs.compile.generated_kernels import (
    SHAPE_ONLY,
    GeneratedKernel,
    attach_source_lines,
    extern_matmul_calls,
    parse_kernels,
)
from workshop.labs.compile.grading.exercises import ANSWER_QUESTIONS
from workshop.labs.compile.grading.kernel_fields import op_key
from workshop.labs.compile.kernel_explanation import (
    WORKED_EXAMPLE,
    eager_results,
    explain,
    pick_kernel,
    recorded,
)
from workshop.labs.compile.kernel_explanation import render as render_explanations
from workshop.labs.compile.loops import kernel_structure

FACTS_FILE = "grading_facts.json"
BREAKS_FILE = "breaks.json"
CODE_DIR = "code"
EXPLAINED = ("train/forward", "train/backward")  # the graphs whose kernels may be explained
GRAPH = "train/forward"  # compile.kernel's: static shapes, every buffer has a size in the code
REGRADE_TEMPLATE = "regrade.md.j2"


class RunFolderError(Exception):
    """A run folder grading cannot read: missing, incomplete, corrupt or changed. Its message is one line."""


@dataclass
class RunFiles:
    """What grading knows of one run, read from its folder."""

    folder: Path
    device: str
    kernels: list[GeneratedKernel]  # every kernel of code/*.py, with its MiniGPT source lines
    facts: dict[
        str, int
    ]  # count_facts: what compile.answers asks for, and what its diagnoses read besides
    eager: dict[
        str, list[dict]
    ]  # "graph/kernel" -> the unfused results it replaces (eager_results)

    def graph(self, name: str) -> list[GeneratedKernel]:
        return [k for k in self.kernels if k.graph == name]

    def explain(self, kernel: GeneratedKernel) -> dict:
        return explain(kernel, self.device, self.eager.get(f"{kernel.graph}/{kernel.name}", []))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def graded_files(folder: Path) -> list[Path]:
    return sorted((folder / CODE_DIR).glob("*.py")) + [folder / BREAKS_FILE]


def write_facts(ctx: LabContext, captures: dict, parameters: int, breaks: dict):
    """breaks.json (`breaks`: {"explain": the graph-break experiment, "recompiles": the recompile experiment's
    counts}), then grading_facts.json, once code/ is written: what a later grading reads besides them, from
    the graphs the compiles made (gone by then): each kernel's MiniGPT source lines, and the eager results each
    training kernel replaces, sized by AOTAutograd's graph (an explanation written from the run's files needs
    them). captures: stage -> what its compile produced (capture.compile_and_capture's; that module is not imported
    here: it imports Inductor, which a re-grade never needs)."""
    ctx.write_json(BREAKS_FILE, breaks)
    folder = ctx.out_dir
    lines, eager = {}, {}
    for stage, cap in captures.items():
        for kind, code in cap["code"].items():
            graph, aot = f"{stage}/{kind}", cap["aot"].get(kind.split("_")[0], [])
            kernels = parse_kernels(code, graph)
            attach_source_lines(kernels, cap["dynamo"], aot)
            for k in kernels:
                lines[f"{graph}/{k.name}"] = {"lines": k.source_lines, "from": k.lines_from}
                if graph in EXPLAINED:
                    eager[f"{graph}/{k.name}"] = eager_results(k, aot)
    ctx.write_json(
        FACTS_FILE,
        {
            "device": ctx.options.device,
            "parameter_tensors": parameters,
            "source_lines": lines,
            "eager_results": eager,
            "digests": {str(p.relative_to(folder)): digest(p) for p in graded_files(folder)},
        },
    )


def read_run(folder: Path) -> RunFiles:
    """The run folder's kernels and facts; RunFolderError (one line) when it cannot be graded."""
    facts = read_json(folder / FACTS_FILE, folder)
    try:
        check_digests(folder, facts["digests"])
        code = {
            p.stem: p.read_text(encoding="utf-8") for p in sorted((folder / CODE_DIR).glob("*.py"))
        }
        # each module's graph: 'train_forward' -> 'train/forward'; 'train_forward_1' (after a graph break) ->
        # 'train/forward_1'
        kernels = [
            k for stem, text in code.items() for k in parse_kernels(text, stem.replace("_", "/", 1))
        ]
        for k in kernels:
            where = facts["source_lines"].get(f"{k.graph}/{k.name}", {})
            k.source_lines, k.lines_from = where.get("lines", []), where.get("from", "")
        eager = {
            key: [
                {"op": r["op"], "shape": list(r["shape"]), "nbytes": r["nbytes"]} for r in results
            ]
            for key, results in facts["eager_results"].items()
        }
        breaks = read_json(folder / BREAKS_FILE, folder)
        counted = count_facts(code, kernels, breaks, facts["parameter_tensors"])
        return RunFiles(folder, facts["device"], kernels, counted, eager)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise RunFolderError(
            _("{folder} is not a complete compile run ({error}): run the lab again").format(
                folder=folder, error=f"{type(e).__name__}: {e}"
            )
        ) from e


def read_json(path: Path, folder: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RunFolderError(
            _("{folder} has no {file}: it is not a finished run of the compile lab").format(
                folder=folder, file=path.name
            )
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise RunFolderError(
            _("{file} cannot be read ({error}): run the lab again").format(file=path, error=e)
        ) from None


def check_digests(folder: Path, digests: dict[str, str]) -> None:
    """Every file the run wrote for grading is there, unchanged; no code module was added."""
    written = {str(p.relative_to(folder)) for p in graded_files(folder) if p.is_file()}
    for name in sorted(set(digests) | written):
        path = folder / name
        if name not in digests or not path.is_file() or digest(path) != digests[name]:
            raise RunFolderError(
                _(
                    "{file} is not as the run wrote it: grading reads the run's own files (copy a file "
                    "before writing notes in it); run the lab again for a fresh folder"
                ).format(file=path)
            )


def count_facts(code: dict[str, str], kernels, breaks: dict, parameters: int) -> dict[str, int]:
    """The counts compile.answers asks for (its questions' keys, exercises.py), and those its diagnoses read
    besides, from the run's code and breaks.json."""
    forward_code = code["train_forward"]
    softmax = pick_kernel([k for k in kernels if k.graph == "train/forward"])
    compiles = {r["how"]: r["compiles"] for r in breaks["recompiles"]}
    return {
        # calls of the attention softmax kernel in one training forward (code/train_forward.py)
        "softmax_calls": softmax.calls,
        # extern_kernels matmul calls (mm, addmm, bmm) in that forward's call()
        "extern_matmuls": extern_matmul_calls(forward_code),
        # of which addmm (the nn.Linear layers, bias fused): for the diagnosis only
        "addmm_calls": forward_code.count("extern_kernels.addmm("),
        # kernels Inductor generated for the AdamW step (code/optimizer_inference.py)
        "optimizer_kernels": sum(k.graph.startswith("optimizer/") for k in kernels),
        # the tensors that step updates: for the diagnosis only
        "parameter_tensors": parameters,
        # Dynamo compiles over the sequence lengths with the default settings
        "default_compiles": compiles["default"],
        # the same with dynamic=False: for the diagnosis only
        "static_compiles": compiles["static"],
        # graph breaks of the MiniGPT with .item() in its forward
        "item_graph_breaks": breaks["explain"]["item_in_forward"]["graph_breaks"],
    }


def grade(ctx: LabContext, run: RunFiles) -> tuple[dict, list[dict]]:
    """Grade compile.kernel and compile.answers against `run`, then write what the answers reveal: kernels.json
    (the training forward's arguments only once compile.kernel passed) and explanation.md (the revealed kernels,
    then the worked example). result.json records the revealed explanations' figures, and the worked example by
    name only: a record keyed like KERNEL_EXPLAINED would read as an answer key.

    Returns what this run revealed: {"kernel": whether compile.kernel passed, "answers": whether compile.answers
    passed with the learner's own ANSWERS (the counts may show), "explanations": the learner's kernel and the
    lab's, explained (kernel_explanation.explain), once compile.kernel passed}; and the explanations written."""
    # the kernel the learner explains, once their answer is read (None: no kernel of the training forward)
    picks: list[GeneratedKernel | None] = []
    # the learner's constant as their worker reads it, or the reference's answer for this run (a function of the
    # run's folder: names and counts differ by device)
    engine.grade(
        ctx,
        "kernel",
        lambda answer: kernel_truth(answer, run.kernels, picks),
        reference_args=(str(run.folder),),
    )
    learners = picks[-1] if picks else None
    engine.grade(ctx, "answers", run.facts, facts=run.facts, reference_args=(str(run.folder),))
    results = ctx.exercise_results()
    passed = {
        name: ctx.graded and results[f"compile.{name}"]["passed"] for name in ("kernel", "answers")
    }
    revealed = {"explanations": [], **passed}
    if passed["kernel"]:
        lab = pick_kernel(run.graph("train/forward"))
        picked = [lab] if learners is None or learners.name == lab.name else [learners, lab]
        revealed["explanations"] = [run.explain(k) for k in picked]
    ctx.write_json(
        "kernels.json",
        [k.as_json(arguments=passed["kernel"] or k.graph != GRAPH) for k in run.kernels],
    )
    worked = worked_example(run)
    shown = revealed["explanations"] + [worked]
    ctx.write_text(
        "explanation.md", render_explanations(ctx.templates_folder, ctx.options.lang, shown)
    )
    ctx.extra.update(
        explained=[recorded(ex) for ex in revealed["explanations"]],
        worked_example=worked["kernel"].name,
    )
    return revealed, shown


def fields_of(k: GeneratedKernel) -> dict:
    """KERNEL_EXPLAINED's fields for kernel `k`, read off its code as the handout describes."""
    s = kernel_structure(k.source, k.language)
    return {
        "kernel": k.name,
        "fused_ops": k.fused_ops,
        "bytes_read": k.traffic("load"),
        "bytes_written": k.traffic("store"),
        "reduction": s["reduction_kind"],
        "grid": s["grid"],
    }


def kernel_truth(answer, kernels: list[GeneratedKernel], picks: list) -> tuple[dict, dict]:
    """compile.kernel's truths, those of the kernel the learner picked (appended to `picks`), and what its
    diagnoses read (explanation_mistakes.KERNEL_DIAGNOSES). A pick that is no kernel of the training forward fails, and
    the other fields are not graded (no truth)."""
    forward = [k for k in kernels if k.graph == GRAPH]
    name = answer.get("kernel") if isinstance(answer, dict) else None
    picked = next((k for k in forward if k.name == name), None)
    picks.append(picked)
    others = [k for k in forward if k is not picked]
    facts = {"picked": picked, "kernels": kernels, "others": others}
    if picked is None:
        return {"kernel": math.nan}, facts  # nan: no name equals it
    named = {op_key(op): op for op in picked.fused_ops}  # as the kernel's code names them
    facts |= {
        "structure": kernel_structure(picked.source, picked.language),
        "ops": named,
        "required": {key for key, op in named.items() if op not in SHAPE_ONLY},
        "grids": [(k.name, kernel_structure(k.source, k.language)["grid"]) for k in others],
    }
    # nan: bytes of a buffer whose size this run does not know (no answer equals it; a diagnosis says so)
    return {key: math.nan if v is None else v for key, v in fields_of(picked).items()}, facts


# The instructor's solutions of the two exercises: what the lab itself reads from a run's files. They cannot be
# constants: kernel names and counts differ by device and torch version. A run without a workspace grades them as
# its learner would be graded, through the same worker requests: so they take the run folder's path (a wire
# value), not its parsed kernels.


def kernel_explained(run_dir: str) -> dict:
    """KERNEL_EXPLAINED for the attention softmax kernel of the run's training forward."""
    return fields_of(pick_kernel(read_run(Path(run_dir)).graph(GRAPH)))


def answers(run_dir: str) -> dict:
    """ANSWERS: the run's own counts, those its questions ask for (they differ by device: 2 optimizer kernels on
    the CPU with torch 2.13, 5 on an H200 with torch 2.11)."""
    facts = read_run(Path(run_dir)).facts
    return {q.key: facts[q.key] for q in ANSWER_QUESTIONS}


def worked_example(run: RunFiles) -> dict:
    """The lab's own example, a kernel of the training backward: no exercise asks about it."""
    return run.explain(pick_kernel(run.graph("train/backward"), WORKED_EXAMPLE))


def regrade(ctx: LabContext, source: Path) -> dict:
    """Grade the learner's answers against the run in `source` (their latest), writing into ctx's folder what
    the answers reveal and a summary that names the run graded against. No compile: seconds."""
    revealed, shown = grade(ctx, read_run(source))
    ctx.summary = templates.render(
        ctx.templates_folder,
        ctx.options.lang,
        {"source": source, "shown": shown, "revealed": revealed, "graded": ctx.graded},
        source=REGRADE_TEMPLATE,
    )
    return revealed
