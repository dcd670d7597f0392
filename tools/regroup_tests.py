"""Move the flat tests/ into tests/<area>/ folders, each test module named for what it tests; run once, by hand.

    python tools/regroup_tests.py      # in the checkout to change (its git top level is the one changed)

What it does, in one pass, on a clean checkout (it refuses a dirty one):
1. `git mv` every tests/*.py and tests/test_compile_fixtures/ to its place in MOVES below; an __init__.py in
   tests/ and in each area makes every test module a package member (tests.compile.test_lab and
   tests.dispatcher.test_lab do not clash; pytest's default prepend import mode then puts the repository root on
   sys.path, and tests/conftest.py stays the root conftest, imported as tests.conftest).
2. Rewrites the imports of moved modules (`import lab_process`, `from conftest import ...`,
   `from test_compile_exercises import ...`) and references by name ("custom_op_wrong_solutions:fake") as
   imports and names from their package, and `parents[1]` (the repository
   root seen from tests/) as `parents[2]` in the moved files.
3. Rewrites every mention of a moved path in the repository's tracked text files (.ci/run, docker/, README*,
   handouts, benchmarks' notes, docstrings), then sorts the imports and formats tests/ with ruff.

A tests/*.py or tests/ folder that MOVES does not name stops it before anything moves (a test added since this
table was written must be given its place). A second run on a moved tree finds nothing to do.

This is a one-off migration, not a workshop command: it lives in tools/, outside the package (the package's
devtools ship in the image and each core module has a test of its name); delete it once the move is committed.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

# Where each flat module goes, relative to tests/. The areas: one per lab (minigpt also holds workshop/minigpt's
# tests), one per core package (cli, grading, harness, i18n, devtools, ops; core for workshop/*.py), docs (the
# theory texts, translations, leaks of answers into what a learner reads), layout (the tree's own rules: import
# graph, lab folders, README's Layout, test names), security (hostile hand-ins), support (helpers several areas
# import). tests/README.md says the same to a reader.
MOVES = {
    # helpers shared by several areas
    "lab_process.py": "support/lab_process.py",
    "spanish_run.py": "support/spanish_run.py",
    "learner_toy.py": "support/learner_toy.py",
    "doc_structure.py": "support/doc_structure.py",
    "autograd_hand_solutions.py": "support/autograd_hand_solutions.py",
    # minigpt: the lab and workshop/minigpt
    "test_lab_minigpt.py": "minigpt/test_lab.py",
    "test_minigpt_mutations.py": "minigpt/test_mutations.py",
    "test_model.py": "minigpt/test_model.py",
    "test_grammar.py": "minigpt/test_grammar.py",
    "test_checkpoint.py": "minigpt/test_checkpoint.py",
    # dispatcher
    "test_dispatcher_exercises.py": "dispatcher/test_exercises.py",
    "test_dispatcher_lab.py": "dispatcher/test_lab.py",
    "test_dispatcher_mutations.py": "dispatcher/test_mutations.py",
    "test_dispatcher_reimpl.py": "dispatcher/test_reimpl.py",
    "test_dispatcher_summary.py": "dispatcher/test_summary.py",
    # autograd
    "autograd_wrong_solutions.py": "autograd/wrong_solutions.py",
    "test_autograd_check_output.py": "autograd/test_check_output.py",
    "test_autograd_exercises.py": "autograd/test_exercises.py",
    "test_autograd_gradcheck.py": "autograd/test_gradcheck.py",
    "test_autograd_graph.py": "autograd/test_graph.py",
    "test_autograd_hand.py": "autograd/test_hand.py",
    "test_autograd_lab.py": "autograd/test_lab.py",
    "test_autograd_mutations.py": "autograd/test_mutations.py",
    "test_autograd_no_autograd.py": "autograd/test_no_autograd.py",
    "test_autograd_replay.py": "autograd/test_replay.py",
    # custom_op
    "custom_op_wrong_solutions.py": "custom_op/wrong_solutions.py",
    "custom_op_planted.py": "custom_op/planted.py",
    "test_custom_op_api_exercises.py": "custom_op/test_api_exercises.py",
    "test_custom_op_exercises.py": "custom_op/test_exercises.py",
    "test_custom_op_lab.py": "custom_op/test_lab.py",
    "test_custom_op_mutations.py": "custom_op/test_mutations.py",
    "test_custom_op_precision.py": "custom_op/test_precision.py",
    "test_custom_op_row_norm.py": "custom_op/test_row_norm.py",
    # compile
    "test_compile_fixtures": "compile/fixtures",
    "test_compile_breaks.py": "compile/test_breaks.py",
    "test_compile_exercises.py": "compile/test_exercises.py",
    "test_compile_handout_example.py": "compile/test_handout_example.py",
    "test_compile_kernels.py": "compile/test_kernels.py",
    "test_compile_lab.py": "compile/test_lab.py",
    "test_compile_leaks.py": "compile/test_leaks.py",
    "test_compile_mutations.py": "compile/test_mutations.py",
    "test_compile_run_grading.py": "compile/test_run_grading.py",
    "test_compile_summary.py": "compile/test_summary.py",
    # distributed
    "test_distributed.py": "distributed/test_lab.py",
    "test_distributed_check.py": "distributed/test_check.py",
    "test_distributed_exercises.py": "distributed/test_exercises.py",
    "test_distributed_launch.py": "distributed/test_launch.py",
    "test_distributed_layout.py": "distributed/test_layout.py",
    "test_distributed_mutations.py": "distributed/test_mutations.py",
    "test_distributed_slurm.py": "distributed/test_slurm.py",
    "test_distributed_statements.py": "distributed/test_statements.py",
    "test_distributed_survey_source.py": "distributed/test_survey_source.py",
    "test_distributed_survey_spanish.py": "distributed/test_survey_spanish.py",
    "test_distributed_units.py": "distributed/test_units.py",
    # cli (and the commands around it: tasks.py, docker/session.sh)
    "test_cli.py": "cli/test_main.py",
    "test_learner_commands.py": "cli/test_learner.py",
    "test_tasks.py": "cli/test_tasks.py",
    "test_container_session.py": "cli/test_container_session.py",
    # harness
    "test_results.py": "harness/test_results.py",
    "test_faults.py": "harness/test_faults.py",
    "test_lab_needs.py": "harness/test_lab_needs.py",
    "test_worker_early_start.py": "harness/test_torch_import.py",  # the check's two torch imports
    # grading
    "test_exercise_framework.py": "grading/test_exercise.py",
    "test_exercises_every_lab.py": "grading/test_every_lab.py",
    "test_sandbox_edition.py": "grading/test_edition.py",
    "test_sandbox_source.py": "grading/test_source_check.py",
    "test_sandbox_worker.py": "grading/test_worker.py",
    "test_workspace_files.py": "grading/test_workspace_init.py",
    # devtools, ops
    "test_check_loop.py": "devtools/test_check_loop.py",
    "test_gpu_record.py": "devtools/test_gpu_record.py",
    "test_ops_softmax.py": "ops/test_softmax_op.py",
    # i18n
    "test_messages.py": "i18n/test_catalogs.py",
    "test_style_lint.py": "i18n/test_style_lint.py",
    "test_language.py": "i18n/test_language.py",
    "test_spanish_edition.py": "i18n/test_spanish_edition.py",
    "test_spanish_output.py": "i18n/test_spanish_output.py",
    "test_labs_in_spanish.py": "i18n/test_labs_in_spanish.py",
    # docs: what a learner reads
    "test_theory.py": "docs/test_theory.py",
    "cited_figures.py": "docs/cited_figures.py",
    "cited_sources.py": "docs/cited_sources.py",
    "theory_statements.py": "docs/theory_statements.py",
    "test_translations.py": "docs/test_translations.py",
    "leaks.py": "docs/leaks.py",
    "test_leaks.py": "docs/test_leaks.py",
    # layout: the tree's own rules
    "test_import_graph.py": "layout/test_import_graph.py",
    "test_lab_layout.py": "layout/test_lab_layout.py",
    "test_readme_layout.py": "layout/test_readme_layout.py",
    # security: hostile hand-ins
    "test_security.py": "security/test_hand_ins.py",
    "test_security_gradebook.py": "security/test_gradebook.py",
}
STAYS = {"conftest.py", "__init__.py"}
AREAS = {new.split("/")[0] for new in MOVES.values()} | {"core"}  # core: tests of workshop/*.py
SELF = "tools/regroup_tests.py"  # its table names the old paths: never rewritten
# Mentions that name several moved files at once (a shell glob in a handout).
GLOBS = {
    "tests/test_autograd*.py": "tests/autograd/",
    "tests/test_distributed*.py": "tests/distributed/",
}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def unplaced(tests: Path) -> list[str]:
    """Flat tests/ entries that MOVES does not name: new since the table was written."""
    names = {p.name for p in tests.iterdir() if p.suffix == ".py" or p.is_dir()}
    return sorted(names - set(MOVES) - STAYS - AREAS - {"__pycache__"})


def import_rewrites() -> list[tuple[re.Pattern, str]]:
    """`import M [as A]` / `from M import` of every moved module, as imports from its package."""
    rules = []
    for old, new in [*MOVES.items(), ("conftest.py", "conftest.py")]:
        if not old.endswith(".py"):
            continue
        stem, name = old[:-3], Path(new).stem
        package = "tests." + str(Path(new).parent).replace("/", ".")
        alias = "" if name == stem else f" as {stem}"
        if stem == "conftest":
            rules.append(
                (re.compile(r"^(\s*)from conftest import", re.M), r"\1from tests.conftest import")
            )
            continue
        rules += [
            (
                re.compile(rf"^(\s*)import {stem} as (\w+)$", re.M),
                rf"\1from {package} import {name} as \2",
            ),
            (re.compile(rf"^(\s*)import {stem}$", re.M), rf"\1from {package} import {name}{alias}"),
            (re.compile(rf"^(\s*)from {stem} import", re.M), rf"\1from {package}.{name} import"),
            # a reference by name ("module:function"), resolved by pkgutil.resolve_name
            (re.compile(rf"(?<=[\"']){stem}(?=:\w)"), f"{package}.{name}"),
        ]
    return rules


def path_rewrites() -> list[tuple[re.Pattern, str]]:
    """Every mention of a moved path: tests/OLD -> tests/NEW; OLD alone (a docstring naming a neighbour) -> NEW,
    the path under tests/."""
    rules = [(re.compile(re.escape(glob)), new) for glob, new in GLOBS.items()]
    rules.append((re.compile(r'with_name\("test_compile_fixtures"\)'), 'with_name("fixtures")'))
    olds = sorted(
        MOVES, key=len, reverse=True
    )  # test_distributed_units.py before test_distributed.py
    either = "|".join(re.escape(o) for o in olds)
    moved = re.compile(rf"(?<![\w/.])(tests/)?({either})(?![\w])")
    rules.append((moved, lambda m: (m.group(1) or "") + MOVES[m.group(2)]))
    return rules


def rewrite(path: Path, rules) -> bool:
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
        return False
    new = text
    for pattern, repl in rules:
        new = pattern.sub(repl, new)
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


def main(repo: Path) -> int:
    tests = repo / "tests"
    status = git(repo, "status", "--porcelain", "--untracked-files=no").splitlines()
    # a row added to MOVES after a refusal below is the one change allowed
    if any(not line.endswith(SELF) for line in status):
        sys.exit(f"{repo} has uncommitted changes: commit or stash them first")
    if stray := unplaced(tests):
        sys.exit(
            "tests/ holds modules this script does not place; add them to MOVES in tools/regroup_tests.py: "
            + ", ".join(stray)
        )
    todo = {old: new for old, new in MOVES.items() if (tests / old).exists()}
    if missing := [
        old for old, new in MOVES.items() if old not in todo and not (tests / new).exists()
    ]:
        sys.exit(
            "MOVES names files that are neither in tests/ nor at their new place: "
            + ", ".join(missing)
        )
    if not todo:
        print("tests/ is already grouped: nothing to do")
        return 0
    for old, new in todo.items():
        (tests / new).parent.mkdir(parents=True, exist_ok=True)
        git(repo, "mv", f"tests/{old}", f"tests/{new}")
    packages = {tests} | {(tests / new).parent for new in MOVES.values() if new.endswith(".py")}
    packages |= {p.parent for p in tests.glob("*/test_*.py")}  # areas that only new modules opened
    for folder in sorted(packages):
        init = folder / "__init__.py"
        if not init.exists():
            init.write_text("")
            git(repo, "add", str(init.relative_to(repo)))

    moved = [tests / new for new in todo.values() if new.endswith(".py")]
    imports = import_rewrites()
    root_up = [(re.compile(r"(Path\(__file__\)\.resolve\(\)\.parents)\[1\]"), r"\1[2]")]
    for path in [*tests.rglob("*.py")]:
        rules = imports + (root_up if path in moved else [])
        rewrite(path, rules)
    mentions = path_rewrites()
    tracked = [name for name in git(repo, "ls-files").splitlines() if name != SELF]
    changed = [name for name in tracked if rewrite(repo / name, mentions)]
    ruff = [sys.executable, "-m", "ruff"]
    subprocess.run([*ruff, "check", "--fix", "--select", "I", "-q", "tests"], cwd=repo, check=False)
    subprocess.run([*ruff, "format", "-q", "tests"], cwd=repo, check=False)
    git(repo, "add", "-A", "tests", *changed)
    print(f"moved {len(todo)} entries into tests/<area>/; rewrote mentions in {len(changed)} files")
    print("review with `git status` / `git diff --cached -M`, then commit")
    return 0


if __name__ == "__main__":
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    if top.returncode:
        sys.exit("run it inside the git checkout whose tests/ it should move")
    sys.exit(main(Path(top.stdout.strip())))
