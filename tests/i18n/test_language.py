"""The learner's language: Spanish by --lang es or by the locale, English by default; a run keeps its language
(manifest, summaries, REPORT.md), and accents reach the screen and the files intact under any locale.

The suite itself runs in English (conftest.py pins WORKSHOP_LANG=en); these tests ask for Spanish. They assert on
the core's own messages (the labs' texts are translated in their own catalogs).
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from workshop import i18n
from workshop.cli import runs
from workshop.cli.main import build_parser
from workshop.foundations import results

ROOT = Path(__file__).resolve().parents[2]
# The environment of a shell whose only language setting is `settings` (no WORKSHOP_LANG, LC_ALL, ...).
LANGUAGE_VARIABLES = ("WORKSHOP_LANG", "LC_ALL", "LC_MESSAGES", "LANG")
ASCII_ONLY = {"LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}


def workshop(*args: str, **settings: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in LANGUAGE_VARIABLES} | settings
    env["COLUMNS"] = "100"
    return subprocess.run(
        [sys.executable, "-m", "workshop", *args], capture_output=True, env=env, timeout=600
    )


def text(out: subprocess.CompletedProcess) -> str:
    """What the command printed, decoded as UTF-8 (so that a wrong encoding shows as a mismatch)."""
    return (out.stdout + out.stderr).decode("utf-8")


@pytest.fixture(autouse=True)
def english_afterwards():
    """main(["--lang", "es", ...]) leaves Spanish in use in this process: the next test gets English."""
    yield
    i18n.set_language("en")


@pytest.mark.parametrize(
    "args, settings",
    [
        (["--lang", "es"], {"LANG": "C.UTF-8"}),
        ([], {"LANG": "es_ES.UTF-8"}),
        ([], {"WORKSHOP_LANG": "es"}),
    ],
    ids=["--lang es", "LANG=es_ES.UTF-8", "WORKSHOP_LANG=es"],
)
def test_spanish_is_asked_for_by_option_locale_or_variable(args, settings):
    listing = workshop("list", *args, **settings)
    assert listing.returncode == 0, text(listing)
    assert "el MiniGPT de la gramática: carga el checkpoint" in text(listing)  # the labs' titles
    helped = workshop("run", "--help", *args, **settings)
    assert "carpeta raíz de los resultados (por defecto ./results)" in text(helped)


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"LANG": "C.UTF-8"},
        {"LANG": "fr_FR.UTF-8"},
        {"WORKSHOP_LANG": "en", "LANG": "es_ES.UTF-8"},
    ],
    ids=["no locale", "C.UTF-8", "French", "WORKSHOP_LANG=en over LANG"],
)
def test_english_by_default(settings):
    out = workshop("run", "--help", **settings)
    assert "results root (default ./results)" in text(out)


@pytest.mark.parametrize("first", [["--lang", "es"], ["--lang=es"]], ids=["--lang es", "--lang=es"])
def test_the_language_may_come_before_the_command(first):
    listing = workshop(*first, "list", LANG="C.UTF-8")
    assert listing.returncode == 0 and "el MiniGPT de la gramática" in text(listing), text(listing)
    args = build_parser().parse_args([*first, "run", "--", "minigpt"])
    assert (args.lang, args.labs) == ("es", ["minigpt"])


def test_an_unknown_language_is_one_line():
    out = workshop("list", "--lang", "fr")
    assert out.returncode == 2 and "argument --lang: invalid choice: 'fr'" in text(out)


def test_a_run_in_spanish_under_the_c_locale(tmp_path):
    """--lang es under LANG=C (Python's UTF-8 there): the run's screen (in Spanish only), manifest, summary and
    REPORT.md."""
    run = workshop(
        "run", "minigpt", "--device", "cpu", "--out", str(tmp_path), "--lang", "es", LANG="C"
    )
    shown = text(run)
    assert run.returncode == 0, shown
    assert "minigpt: empieza (laboratorio 1 de 1)\n" in shown
    assert re.search(r"^minigpt: superado, \d+ comprobaciones, [\d.]+ s$", shown, re.M), shown
    assert "laboratorios superados: 1 de 1" in shown
    # One word per status, and no English sentence (i18n/test_spanish_output.py's detectors, which read the catalogs
    # with Babel: where it is installed), on this run rather than on a second run of the lab.
    assert re.search(r"\bsuperado\b", shown) and "superada" not in shown
    if importlib.util.find_spec("babel") is not None:
        from tests.i18n.test_spanish_output import english_in

        assert english_in(shown) == []
    run_dir = (tmp_path / "latest").resolve()
    assert run.stdout.decode("utf-8").endswith(f"informe: {run_dir / 'REPORT.md'}\n"), shown
    assert json.loads((run_dir / "manifest.json").read_text())["lang"] == "es"
    assert json.loads((run_dir / "minigpt" / "result.json").read_text())["lang"] == "es"
    summary = (run_dir / "minigpt" / "summary.md").read_bytes().decode("utf-8")
    assert summary.startswith("# Laboratorio `minigpt`: superado\n")
    assert "## Comprobaciones\n\n| | comprobación | valor | esperado |\n" in summary
    assert re.search(r"^\| superado \| ", summary, re.M)

    # REPORT.md in the run's language, whatever the language of the command that writes it.
    report = workshop("report", str(run_dir), LANG="C.UTF-8")
    assert report.returncode == 0 and "wrote " in text(report)
    written = (run_dir / "REPORT.md").read_bytes().decode("utf-8")
    assert written.startswith(f"# Ejecución del taller {run_dir.name}\n")
    assert "| laboratorio | superado | segundos |" in written and "| sí |" in written
    assert "# Laboratorio `minigpt`: superado" in written

    # ...unless told otherwise; and on a terminal that shows only ASCII, a '?' for what it cannot show.
    english = workshop("report", str(run_dir), "--lang", "en", **ASCII_ONLY)
    assert english.returncode == 0
    assert (run_dir / "REPORT.md").read_text(encoding="utf-8").startswith("# Workshop run ")
    ascii_only = workshop("report", str(run_dir), **ASCII_ONLY)
    assert ascii_only.returncode == 0, text(ascii_only)
    assert (run_dir / "REPORT.md").read_text(encoding="utf-8").startswith("# Ejecución del taller")


def test_an_ascii_only_terminal_gets_question_marks_not_a_crash():
    out = workshop("run", "--help", "--lang", "es", **ASCII_ONLY)
    assert out.returncode == 0, out.stderr
    assert b"carpeta ra?z de los resultados" in out.stdout


def test_a_run_records_english_by_default(lab_dir):
    manifest = json.loads((lab_dir("minigpt").parent / "manifest.json").read_text())
    assert manifest["lang"] == "en"


def test_the_summary_frame_and_the_failing_checks_in_spanish(tmp_path):
    """The frame the runner writes around a lab's summary, with a failed check and an exercise."""
    from rich.console import Console

    from workshop.harness import child
    from workshop.lab_api import Check

    checks = [Check("a", True, 1.0, 2.0), Check("b", False, 3.0, 2.0)]
    exercises = {
        "toy.double": {
            "status": "not started",
            "failed_check": {"name": "b", "value": 3.0, "threshold": 2.0, "relation": "<="},
            "hint": "h",
        }
    }
    # A UTF-8 terminal, and one that shows only ASCII (cli.main.main makes its streams replace what they cannot show).
    utf8 = Console(width=100, file=io.StringIO())
    ascii_only = io.TextIOWrapper(io.BytesIO(), encoding="ascii", errors="replace")
    with i18n.using("es"):
        (tmp_path / "toy").mkdir()
        child.write_result(
            tmp_path / "toy", "toy", "cpu", checks, 1.0, "S.", {"exercises": exercises}
        )
        frame = (tmp_path / "toy" / "summary.md").read_bytes().decode("utf-8")
        failing = [c for c in results.read_result(tmp_path / "toy")["checks"] if not c["passed"]]
        utf8.print(runs.failing_checks(failing))
        Console(width=100, file=ascii_only).print(runs.failing_checks(failing))
    assert frame.startswith("# Laboratorio `toy`: **no superado**\n\nS.\n\n## Ejercicios\n\n")
    assert "| toy.double | sin empezar | b: 3 (como mucho 2) | h |" in frame
    assert "| **no superado** | b | 3.0 | 2.0 |" in frame
    table = utf8.file.getvalue()
    assert all(
        word in table for word in ("comprobación", "valor", "esperado", "superado", "no superado")
    )
    ascii_only.flush()
    assert b"comprobaci?n" in ascii_only.buffer.getvalue()


def test_i18n_using_restores_the_language_in_use():
    i18n.set_language("en")
    with i18n.using("es"):
        assert i18n._("expected") == "esperado"
    assert i18n._("expected") == "expected"


def test_compose_passes_the_language_into_every_service():
    """Each service's environment merges the x-language block (WORKSHOP_LANG, else the host's LC_ALL/LANG)."""
    compose = (ROOT / "compose.yaml").read_text()
    assert "WORKSHOP_LANG: ${WORKSHOP_LANG:-${LC_ALL:-${LANG:-}}}" in compose
    services = compose.split("\nservices:\n", 1)[1].split("\nvolumes:\n", 1)[0]
    blocks = re.split(r"\n(?=  [\w-]+:\n)", services.strip("\n"))
    assert len(blocks) >= 5
    for block in blocks:
        assert "    environment:\n      <<: *language" in block, block.splitlines()[0]


def test_a_given_run_not_in_english_is_not_what_the_tests_check(tmp_path, monkeypatch):
    """A learner's Spanish session (docker/session.sh) still runs the suite: on English runs of its own."""
    from tests.conftest import LabRuns

    (tmp_path / "manifest.json").write_text(json.dumps({"n_procs": 2, "lang": "es"}))
    monkeypatch.setenv("WORKSHOP_RUN_DIR", str(tmp_path))
    runs = LabRuns(tmp_path / "own")
    assert runs.given and runs.given_n == 2 and not runs.given_in_english
