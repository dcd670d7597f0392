"""Checked answers and solution code that the learner's texts must not give away.

What the labs check, the *secrets*:
- every checked answer: the reference's ANSWERS / PREDICTIONS / KERNEL_EXPLAINED (an exercise whose attribute is a
  constant), as a constant, as the reference computes it for each N the learner may run (a function of `n`), or
  as a committed GPU record's result.json holds it (an answer read off a run: the compile lab's kernel);
- every model answer (model_answers*.md), by its passages;
- every solution body: the lines of the exercised reference functions that carry the solution.

The learner's texts: each lab's handouts (README*.md), the theory texts and glossary, each exercise's declared
text (title, statement, hints, interface, stub) in both languages, and the workspace files `exercises init`
writes.

A leak must be distinctive, so that 64, 600 or a common word never count:
- an answer's value (8, 1024 as 1,024, 0.2 as 20%, a kernel's name, a list such as (176, 600)) counts only in a
  sentence that also names what is asked: the words of its key (ALIGN, optimizer and kernels, ...);
- a solution line counts when a line of code of 20 characters or more (spaces ignored) appears as it is;
- a model answer counts when 12 words in a row of it appear as they are.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from workshop import i18n, labs

ROOT = Path(__file__).resolve().parents[2]
LABS = ROOT / "workshop" / "labs"
NS = (1, 2, 4)  # the --n a learner may run the distributed lab with
RECORDS = sorted((ROOT / "benchmarks").glob("h200*"))  # committed GPU runs: answers read off a run
# What the learner writes instead of the answer's value never counts: these fields are the exercise's frame.
FRAME = {"lab", "name", "reference", "attribute", "document", "handout", "template", "time_limit_s"}
# The words of an answer's key say what it asks; a few keys abbreviate, and texts spell them out.
SPELLED = {
    **{
        "fwd": "forward",
        "bwd": "backward",
        "db": "bias",
        "w": "weight",
        "t": "TBackward0",
        "rank0": "rank",
    },
    "sends": "send|sent|messages|mensajes|envío|envia",
}
# Where a key's words are not what its sentences say: which leaf's AccumulateGrad runs first; the constexpr ROWS
# (not any row); every field of KERNEL_EXPLAINED is about the attention softmax's kernel.
# BLOCK_N for N = 600 is said as "a row of 600 loaded as 1,024 lanes" (a word may list alternatives: a|b).
SUBJECT = {
    "first_leaf": ("AccumulateGrad", "first"),
    "rows_per_program": ("ROWS", "program"),
    "block_n": ("BLOCK_N|power|potencia|arange", "600"),
}
ALSO_NAMED = {"KERNEL_EXPLAINED": ("softmax",)}
STOP = {"of", "the", "a", "in", "per", "at", "to", "on", "for", "by", "is", "n"}
MIN_LINE = 20  # characters (without spaces) of a solution line that counts
PASSAGE = 12  # words in a row of a model answer that count


@dataclass(frozen=True)
class Secret:
    owner: str  # the lab whose check it is
    what: str  # "ANSWERS['align']", "forward_kernel's solution", "model_answers.md"
    kind: str  # "answer" (patterns: regular expressions), "code" (a line, spaces removed), "passage" (words)
    patterns: tuple[str, ...]
    subject: tuple[str, ...] = ()  # an answer's words, of which two must share its sentence


@dataclass(frozen=True)
class Leak:
    text: str  # the learner's text, relative to the repository (or "<lab> exercise <name>")
    secret: Secret
    excerpt: str

    def __str__(self) -> str:
        return f"{self.text}: {self.secret.owner} {self.secret.what}: {self.excerpt[:160]!r}"


# ---- the secrets --------------------------------------------------------------------------------------------


# A number that is a setting (N = 2), a size with its unit (32 KiB) or a question's number (question 4) is not
# the answer's value.
NOT_A_VALUE = r"(?<![\w.,])(?<!=)(?<!= )"
NO_UNIT = r"(?![\w]|[.,]\d|\s?(?:KiB|MiB|GiB|kB|MB|GB)\b)"
QUESTION_NUMBERS = re.compile(
    r"\b(?:questions?|preguntas?|Q|P)\s*\d+(?:\s*(?:,|and|y)\s*\d+)*", re.IGNORECASE
)


def _number_forms(value: float) -> list[str]:
    if isinstance(value, bool) or value in (0, 1):  # 0 and 1 say nothing on their own
        return []
    if isinstance(value, int) or float(value).is_integer():
        n = int(value)
        forms = {str(n), f"{n:,}", f"{n:,}".replace(",", " ")}
        return [rf"{NOT_A_VALUE}{re.escape(f)}{NO_UNIT}" for f in forms]
    pct = value * 100
    decimals = {f"{value:.2g}", f"{value:.3g}"}  # 0.27, 0.273
    percents = {f"{pct:.0f}", f"{pct:.1f}"}  # 27%, 27.3%
    return [rf"(?<![\w.]){re.escape(d)}(?!\d)" for d in decimals] + [
        rf"(?<![\w.]){re.escape(p)}\s?%" for p in percents
    ]


def value_patterns(value) -> list[str]:
    """The written forms of an answer's value (none for True, False, None: not distinctive)."""
    if value is None or isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return _number_forms(value)
    if (
        isinstance(value, str) and len(value.strip()) == 1
    ):  # a name such as b: as the texts write one
        return [rf"\({re.escape(value)}\)", rf"`{re.escape(value)}`"]
    if isinstance(value, str):
        return [rf"(?<![\w]){re.escape(value)}(?![\w])"] if value.strip() else []
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, (str, int)) for v in value):
        return [r"\W{1,4}".join(re.escape(str(v)) for v in value)]  # (176, 600), AutogradCPU -> CPU
    return []


def subject_of(name: str, path: tuple[str, ...]) -> tuple[str, ...]:
    if path and path[-1] in SUBJECT:
        return SUBJECT[path[-1]]
    words = [w for part in path for w in re.split(r"[_/]", str(part)) if w]
    words = [SPELLED.get(w, w) for w in words if w.lower() not in STOP and not w.isdigit()]
    return (*words, *ALSO_NAMED.get(name, ())) if words else ()


def flatten(value, path: tuple[str, ...] = ()):
    """(key path, leaf value) of a nested dict of answers."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from flatten(inner, (*path, str(key)))
    else:
        yield path, value


def answer_secrets(owner: str, name: str, answers) -> list[Secret]:
    out = []
    for path, value in flatten(answers):
        patterns, subject = value_patterns(value), subject_of(name, path)
        if patterns and subject:
            what = name + "".join(f"[{p!r}]" for p in path)
            out.append(Secret(owner, what, "answer", tuple(patterns), subject))
    return out


def reference_answers(ex) -> list:
    """The reference's answers: the constant, or the function of N called for each N a learner may run."""
    ref = ex.load_reference()
    if isinstance(ref, dict):
        return [ref]
    if callable(ref) and list(inspect.signature(ref).parameters)[:1] == ["n"]:
        return [ref(n) for n in NS]
    return []  # computed from a run's artifacts: read off the committed runs (recorded_answers)


def _compile_answers(result: dict) -> dict:
    """The compile lab's answers as its result.json records them: the kernel it explains, and the counts."""
    # explained: the kernels a run revealed (one is explained only once the learner's answer passes; a plain run
    # reveals none): the first one's fields
    explained, kernels = next(iter(result.get("explained", [])), {}), result.get("kernels", {})
    counts = {r.get("how"): r.get("compiles") for r in result.get("recompiles", [])}
    return {
        **{
            f: explained.get(f)
            for f in ("kernel", "fused_ops", "bytes_read", "bytes_written", "reduction", "grid")
        },
        "softmax_calls": explained.get("calls_per_run"),
        "optimizer_kernels": kernels.get("optimizer/inference")
        if isinstance(kernels, dict)
        else None,
        "default_compiles": counts.get("default"),
        "item_graph_breaks": result.get("breaks", {})
        .get("item_in_forward", {})
        .get("graph_breaks"),
    }


# The exercises whose reference computes its answers from a run's artifacts: their fields in _compile_answers.
RECORDED = {
    ("compile", "KERNEL_EXPLAINED"): (
        "kernel",
        "fused_ops",
        "bytes_read",
        "bytes_written",
        "reduction",
        "grid",
    ),
    ("compile", "ANSWERS"): (
        "softmax_calls",
        "optimizer_kernels",
        "default_compiles",
        "item_graph_breaks",
    ),
}


def recorded_answers(ex) -> list[dict]:
    """Answers read off a run, as the committed GPU runs' result.json records them."""
    fields = RECORDED.get((ex.lab, ex.attribute), ())
    results = [record / ex.lab / "result.json" for record in RECORDS]
    found = [
        _compile_answers(json.loads(r.read_text(encoding="utf-8"))) for r in results if r.is_file()
    ]
    return [{f: answers[f] for f in fields} for answers in found] if fields else []


def is_answer(ex) -> bool:
    return bool(ex.attribute) and ex.attribute.isupper()  # ANSWERS, PREDICTIONS, KERNEL_EXPLAINED


def solution_lines(ex) -> list[str]:
    """The reference function's lines that carry the solution: code, not its signature, docstring or comments,
    of MIN_LINE characters or more, spaces removed."""
    ref = ex.load_reference()
    ref = getattr(ref, "fn", ref)  # a @triton.jit kernel's Python function
    if not inspect.isfunction(ref):
        return []
    source = inspect.getsource(ref)
    doc = ref.__doc__ or ""
    body = source.split(":\n", 1)[1] if ":\n" in source else ""  # past the signature
    lines = []
    for line in body.replace(doc, "").splitlines():
        code = re.sub(r"\s+", "", line.split("#", 1)[0])
        if len(code) >= MIN_LINE and code not in ('""""""', "''''''"):
            lines.append(code)
    return lines


def code_secrets(owner: str, ex) -> list[Secret]:
    return [Secret(owner, f"{ex.name}'s solution", "code", (line,)) for line in solution_lines(ex)]


def model_answer_secrets(lab: str) -> list[Secret]:
    out = []
    for path in sorted((LABS / lab).rglob("model_answers*.md")):  # grading/ holds them
        words = re.findall(r"\w+", path.read_text(encoding="utf-8").lower())
        passages = {" ".join(words[i : i + PASSAGE]) for i in range(len(words) - PASSAGE + 1)}
        out += [Secret(lab, path.name, "passage", (f" {p} ",)) for p in sorted(passages)]
    return out


def secrets() -> list[Secret]:
    """Every checked answer, model answer and solution body of every lab."""
    out = []
    for lab, exercises in labs.all_exercises().items():
        for ex in exercises:
            if is_answer(ex):
                found = reference_answers(ex) or recorded_answers(ex)
                out += [s for answers in found for s in answer_secrets(lab, ex.attribute, answers)]
            elif ex.attribute:
                out += code_secrets(lab, ex)
        out += model_answer_secrets(lab)
    return list(dict.fromkeys(out))


# ---- the learner's texts ------------------------------------------------------------------------------------


@functools.cache
def exercise_texts() -> dict[str, list[str]]:
    """Each exercise's declared text, in English and in Spanish: every text field but its frame; its stub (code)
    by lines, the rest by sentences."""
    out = {}
    for lang in ("en", "es"):
        i18n.set_language(lang)
        try:
            for lab, exercises in labs.all_exercises().items():
                for ex in exercises:
                    units = []
                    for f in dataclasses.fields(ex):
                        texts = strings([getattr(ex, f.name)]) if f.name not in FRAME else []
                        units += [
                            u
                            for s in texts
                            for u in (s.splitlines() if f.name == "stub" else sentences(s))
                        ]
                    out[f"{lab} exercise {ex.name} ({lang})"] = units
        finally:
            i18n.set_language("en")
    return out


def strings(values) -> list[str]:
    """The text among values: strings, the strings of tuples (an exercise's hints, step by step), and what a
    declared question says (its text, where to look), translated."""
    out = []
    for value in values:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, (tuple, list)):
            out += strings(value)
        elif hasattr(value, "text") and hasattr(value, "look"):  # a grading Question
            out += [i18n._(s) for s in (value.text, value.look) if s]
    return out


def workspace_texts(tmp: Path) -> dict[str, str]:
    """The files `python -m workshop exercises init` writes, in English and in Spanish."""
    out = {}
    for lang in ("en", "es"):
        work = tmp / f"work-{lang}"
        cmd = [sys.executable, "-m", "workshop", "exercises", "init", str(work), "--lang", lang]
        proc = subprocess.run(
            [*cmd, "--out", str(tmp / "results")], capture_output=True, text=True, cwd=ROOT
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        for file in sorted(
            p for p in work.rglob("*") if p.is_file() and not p.name.startswith(".")
        ):
            text = file.read_text(encoding="utf-8")
            units = markdown_units(text) if file.suffix == ".md" else text.splitlines()
            out[f"workspace ({lang}) {file.relative_to(work)}"] = units
    return out


@functools.cache
def document_texts() -> dict[str, list[str]]:
    docs = sorted(LABS.glob("*/README*.md")) + sorted((ROOT / "theory").glob("*.md"))
    return {str(p.relative_to(ROOT)): markdown_units(p.read_text(encoding="utf-8")) for p in docs}


# ---- finding them -------------------------------------------------------------------------------------------

BLOCK_END = re.compile(r"\n\s*\n|\n(?=\s*(?:[-*|]|\d+\.)\s)")  # paragraphs, list items, table rows
LIST_MARKER = re.compile(r"^\s*(?:[-*]|\d+\.)\s+")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(\[*¿¡])")


FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)


def sentences(text: str) -> list[str]:
    """Sentences, list items and table rows (without their list markers: "2." is no sentence)."""
    blocks = (LIST_MARKER.sub("", block) for block in BLOCK_END.split(text))
    return [s for block in blocks for s in SENTENCE_END.split(block) if s.strip()]


def markdown_units(text: str) -> list[str]:
    """A Markdown text's sentences, list items and table rows, and each line of its code blocks."""
    code = [line for block in FENCE.findall(text) for line in block.splitlines() if line.strip()]
    return sentences(FENCE.sub("\n\n", text)) + code


def _names(text: str, word: str) -> bool:
    """The text names the word (or one of its alternatives, a|b): as a word or the start of one (compile:
    compiled, compiles), not as an attribute (softmax.default); a word with capitals (ROWS) only as written."""
    for alternative in word.split("|"):
        stem = (
            alternative[: max(4, min(len(alternative), 6))] if len(alternative) > 3 else alternative
        )
        flags = 0 if alternative != alternative.lower() else re.IGNORECASE
        if re.search(rf"(?<![\w.]){re.escape(stem)}", text, flags):
            return True
    return False


SHORT = 12  # words: a sentence this short continues the one before (The H200 run made 5, the CPU run 2.)


def _answer_in(before: str, sentence: str, secret: Secret) -> bool:
    """The answer's value in the sentence, with its subject: most of its words, in the sentence, or for a short
    sentence with a number in the one before. Not counted as subject: the value itself (AutocastCPU does not
    name autocast), the key written as an identifier (a list of the keys to answer names the questions),
    question numbers."""
    if not any(re.search(p, QUESTION_NUMBERS.sub(" ", sentence)) for p in secret.patterns):
        return False
    numeric = secret.patterns[0].startswith(NOT_A_VALUE)
    window = f"{before} {sentence}" if numeric and len(sentence.split()) < SHORT else sentence
    key = secret.what.rsplit("[", 1)[-1].strip("]'")
    for p in secret.patterns:
        window = re.sub(p, " ", window)
    window = window.replace(key, " ") if "_" in key else window
    words = secret.subject
    need = len(words) if len(words) <= 2 else len(words) - 1
    return sum(_names(window, w) for w in words) >= need


def leaks_in(
    name: str, units: list[str], found: list[Secret], skeleton: bool = False
) -> list[Leak]:
    """The secrets a text's units (sentences, lines) give away: a solution line anywhere in it, spaces and
    backticks ignored; a model answer's passage anywhere, words only; an answer in one sentence. A hint may give
    a skeleton of the solution without its key lines (`skeleton`): there a solution leaks when half its lines or
    more are given."""
    texts = {
        "code": re.sub(r"[\s`]+", "", "".join(units)),
        "passage": " " + " ".join(re.findall(r"\w+", " ".join(units).lower())) + " ",
    }
    windows = list(zip(["", *units[:-1]], units, strict=True))  # each sentence with the one before
    out = []
    for secret in found:
        if secret.kind in texts and secret.patterns[0] in texts[secret.kind]:
            out.append(Leak(name, secret, secret.patterns[0].strip()))
        elif secret.kind == "answer":
            hit = next((s for b, s in windows if _answer_in(b, s, secret)), None)
            if hit is not None:
                out.append(Leak(name, secret, " ".join(hit.split())))
    if skeleton:
        lines = Counter((s.owner, s.what) for s in found if s.kind == "code")
        given = Counter(
            (leak.secret.owner, leak.secret.what) for leak in out if leak.secret.kind == "code"
        )
        out = [
            leak
            for leak in out
            if leak.secret.kind != "code"
            or 2 * given[leak.secret.owner, leak.secret.what]
            >= lines[leak.secret.owner, leak.secret.what]
        ]
    return out


# ---- a run's files: data to read, never an answer key --------------------------------------------------------


def question_keys() -> dict[str, set[str]]:
    """Lab -> the keys of its answers dicts (ANSWERS, PREDICTIONS, KERNEL_EXPLAINED), as the references hold them."""
    out: dict[str, set[str]] = {}
    for lab, exercises in labs.all_exercises().items():
        for ex in (ex for ex in exercises if is_answer(ex)):
            for answers in reference_answers(ex) or recorded_answers(ex):
                out.setdefault(lab, set()).update(
                    p[-1] for p, _ in flatten(answers) if p and p[-1] != "n"
                )
    return out


def _keyed_by(data, keys: set[str]) -> bool:
    """A mapping (anywhere in the JSON) whose keys are two or more of the questions' keys."""
    if isinstance(data, dict):
        return len(keys & set(data)) >= 2 or any(_keyed_by(v, keys) for v in data.values())
    if isinstance(data, list):
        return any(_keyed_by(v, keys) for v in data)
    return False


def answer_keys_in_run(lab_dir: Path, keys: set[str]) -> list[str]:
    """The files of a lab's run folder that map question keys to values: an answer key, not data to read."""
    out = []
    for file in sorted(
        p for p in lab_dir.rglob("*.json") if p.is_file() and p.stat().st_size < 20_000_000
    ):
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
        if _keyed_by(data, keys):
            out.append(str(file.relative_to(lab_dir)))
    return out
