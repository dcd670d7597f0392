"""The Spanish edition's machinery (theory/style.es.md): numbers grouped as Spanish groups them in what the programs
print and in the summaries, plurals through the catalogs' plural forms, argparse's own text in Spanish, the shell
scripts' messages from the package, and the survey's grader reading the numbers the guide prescribes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from workshop import i18n
from workshop.i18n import say, templates
from workshop.labs.distributed.grading import survey_text

ROOT = Path(__file__).resolve().parents[2]
NBSP = "\u00a0"


@pytest.fixture
def spanish():
    before = i18n.language()
    i18n.set_language("es")
    yield
    i18n.set_language(before)


@pytest.mark.parametrize(
    "number, decimals, english, spanish",
    [
        (600, 0, "600", "600"),
        (1024, 0, "1,024", "1024"),
        (38400, 0, "38,400", f"38{NBSP}400"),
        (279512, 0, "279,512", f"279{NBSP}512"),
        (1118048, 0, "1,118,048", f"1{NBSP}118{NBSP}048"),
        (-1118048.25, 1, "-1,118,048.2", f"-1{NBSP}118{NBSP}048.2"),
        (0.98, 2, "0.98", "0.98"),
    ],
)
def test_grouped_writes_thousands_as_each_language_does(number, decimals, english, spanish):
    assert i18n.grouped(number, decimals, lang="en") == english
    assert i18n.grouped(number, decimals, lang="es") == spanish


def test_grouped_follows_the_language_in_use(spanish):
    assert i18n.grouped(279512) == f"279{NBSP}512"


def test_templates_group_numbers_and_space_percent_signs_in_the_templates_language(tmp_path):
    (tmp_path / "summary.md.j2").write_text("{{ n | grouped }}, {{ f | percent }}\n")
    values = {"n": 279512, "f": 0.63}
    assert templates.render(tmp_path, "en", values) == "279,512, 63%\n"
    assert templates.render(tmp_path, "es", values) == f"279{NBSP}512, 63{NBSP}%\n"


def test_a_count_takes_spanishs_singular_or_plural_from_the_catalog(spanish):
    forms = (
        "{files} already exists: choose another --to folder",
        "{files} already exist: choose another --to folder",
    )
    one = i18n.ngettext(*forms, 1).format(files="grades.csv")
    two = i18n.ngettext(*forms, 2).format(files="grades.csv, grades.md")
    assert one == "grades.csv ya existe: elige otra carpeta con --to"
    assert two == "grades.csv, grades.md ya existen: elige otra carpeta con --to"


def test_the_catalogs_declare_spanishs_two_plural_forms():
    for po in ROOT.glob("workshop/**/locale/es/LC_MESSAGES/*.po"):
        assert '"Plural-Forms: nplurals=2; plural=(n != 1);\\n"' in po.read_text(
            encoding="utf-8"
        ), po


def run_workshop(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "workshop", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), **env},
        timeout=120,
    )


def test_argparses_own_text_is_spanish_with_lang_es():
    help_text = run_workshop("check", "--help", "--lang", "es").stdout
    assert help_text.startswith("uso: python -m workshop check")
    assert "argumentos posicionales:" in help_text and "opciones:" in help_text
    assert "muestra esta ayuda y termina" in help_text
    for english in ("usage:", "positional arguments", "show this help message"):
        assert english not in help_text
    error = run_workshop("run", "--device", "gpu", "--lang", "es").stderr
    assert "error: argumento --device: opción no válida: 'gpu' (elige entre" in error


def test_argparses_own_text_stays_english_by_default():
    assert run_workshop("check", "--help").stdout.startswith("usage: python -m workshop check")


def test_the_scripts_messages_come_from_the_catalog():
    i18n_env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "workshop.i18n.say", "session-testing", "run=results/x"]
    english = subprocess.run(command, capture_output=True, text=True, env=i18n_env).stdout
    spanish = subprocess.run(
        command, capture_output=True, text=True, env={**i18n_env, "WORKSHOP_LANG": "es"}
    ).stdout
    assert english == "workshop-session: testing the run in results/x\n"
    assert spanish == "workshop-session: se comprueba con los tests la ejecución de results/x\n"
    assert set(say.MESSAGES) >= {"session-interrupted", "entrypoint-root", "slurm-job"}


def test_every_script_message_is_used_by_a_script():
    scripts = "".join(
        (ROOT / name).read_text()
        for name in ("docker/session.sh", "docker/entrypoint.sh", "slurm/distributed.sbatch")
    )
    assert 'echo "' not in scripts.replace('echo "$* |', ""), "a script prints text of its own"
    for key in say.MESSAGES:
        assert key in scripts, f"{key} is declared in workshop/i18n/say.py but no script says it"


@pytest.mark.parametrize(
    "written, value",
    [
        ("1 118 048 B", 1118048),  # the style guide's groups, with a no-break space
        ("1 118 048 B", 1118048),  # with plain spaces, as a learner types them
        ("1118048 B", 1118048),
        ("1,118,048 B", 1118048),  # the English edition's
        ("279 512.5 B", 279512.5),
    ],
)
def test_the_surveys_grader_reads_the_numbers_the_guide_prescribes(written, value):
    (quoted,) = survey_text.quoted(f"Cada rank guarda {written} en total.")
    assert quoted["values"] == (value,)


def test_a_count_before_a_quantity_is_not_a_digit_group():
    found = [q["values"] for q in survey_text.quoted("forward all_reduce x11 363 kB y x4 180 kB")]
    assert found == [(363000.0,), (180000.0,)]


def check_line(ctx_method: str, value, threshold, lang: str) -> str:
    """The line a check prints, in `lang`: made through LabContext's check method, read back as result.json has it."""
    from workshop.declarations import checks
    from workshop.declarations.checks import Check

    relation = {"check_max": "<=", "check_min": ">=", "check_equal": "=="}[ctx_method]
    check = Check("c", True, value, threshold, relation=relation)
    with i18n.using(lang):
        return checks.outcome(check.as_dict())


@pytest.mark.parametrize(
    "method, value, threshold, english, spanish",
    [
        (
            "check_max",
            0.0003,
            0.0001,
            "c: 0.0003 (at most 0.0001)",
            "c: 0.0003 (como mucho 0.0001)",
        ),
        ("check_min", 1.0, 0.98, "c: 1 (at least 0.98)", "c: 1 (al menos 0.98)"),
        ("check_equal", True, True, "c: True (expected True)", "c: sí (esperado: sí)"),
        ("check_equal", False, True, "c: False (expected True)", "c: no (esperado: sí)"),
    ],
)
def test_a_check_says_what_it_expects_never_a_threshold_for_an_exact_value(
    method, value, threshold, english, spanish
):
    assert check_line(method, value, threshold, "en") == english
    assert check_line(method, value, threshold, "es") == spanish


def test_the_check_methods_record_their_relation(tmp_path):
    from workshop.foundations.run_options import RunOptions
    from workshop.lab_api import LabContext

    ctx = LabContext("toy", tmp_path, RunOptions(device="cpu"))
    made = [ctx.check_max("a", 1.0, 2.0), ctx.check_min("b", 1.0, 2.0), ctx.check_equal("c", 1, 1)]
    assert [c.as_dict()["relation"] for c in made] == ["<=", ">=", "=="]


def test_a_hidden_secret_and_an_old_result_read_as_what_they_are():
    from workshop.declarations import checks
    from workshop.declarations.checks import Check

    hidden = checks.masked(Check("prediction", False, 10, 20, secret=True, relation="=="))
    with i18n.using("es"):
        line = checks.outcome(hidden.as_dict())
        old = checks.outcome({"name": "c", "value": 3.0, "threshold": 2.0})  # no relation recorded
    assert "esperado" not in line and line.startswith("prediction: ")
    assert old == "c: 3 (umbral: 2)"
    assert checks.bound({"threshold": 0.98, "relation": ">="}) == ">= 0.98"


COMMANDS = [[], ["list"], ["run"], ["report"], ["train"], ["bench"], ["exercises", "init"]]
COMMANDS += [["exercises", "list"], ["check"], ["grade"]]
ENGLISH_VALUE_NAMES = re.compile(
    r"\b(?:WORK|OUT|N_PROCS|CHECKPOINT|SECONDS|RUN|FILE|FOLDER|NAME|PATH|EXERCISE|SEED|STEPS)\b"
)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "workshop")
def test_every_commands_help_is_spanish_with_lang_es(command):
    from tools import style_lint

    shown = run_workshop(*command, "--help", "--lang", "es").stdout
    assert shown.startswith("uso: "), shown
    found = [
        f
        for f in style_lint.findings_in(shown, "help", markdown=False)
        if f.rule == "English sentence"
    ]
    assert found == [] and not ENGLISH_VALUE_NAMES.search(shown), (found, shown)
