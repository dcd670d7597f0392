"""What a learner and an instructor see in Spanish: `check autograd`, `grade` and `invoke lab --dry-run` with
--lang es print no English sentence and one word per status (`run minigpt`'s screen is checked with these
detectors on the run i18n/test_language.py makes under the C locale).

Each command runs once, as a learner types it (for `check`, a fresh workspace with one exercise written wrong, so
that not-started, failing and passing lines all print), and English is found two ways in all it prints: the
edition's lint (tools/style_lint.py, the rules of theory/style.es.md: two English function words in a
line, an English status word or one outside the status vocabulary, a number grouped the English way), and any
message of the catalogs printed as its English source (a message left out of `_()` or missing its translation).
PyTorch's own names and the errors it quotes are code or quoted there, and the lint leaves them out.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

# The catalogs are read with Babel (pinned in requirements-pinned.txt and the image; the GPU hosts lack it)
pofile = pytest.importorskip("babel.messages.pofile", reason="Babel is not installed here")

from tools import style_lint  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
LANGUAGE_VARIABLES = ("WORKSHOP_LANG", "LC_ALL", "LC_MESSAGES", "LANG")
# The rules whose finding in a program's output is English or a status said two ways
OUTPUT_RULES = {
    "English sentence",
    "English status word",
    "status word outside the vocabulary",
    "number grouped with commas",
}
# A message's English between its placeholders and markup: {run}, %(prog)s, [bold]
PLACEHOLDER = re.compile(r"\{[^{}]*\}|%\(\w+\)[sdr]|%[sdr]|\[/?[a-z ]+\]")
# The learner's linear_grads with every gradient's sign flipped: a diagnosed failure
SIGN_FLIPPED = (
    "    G = dlogits.flatten(0, 1)  # (M, V)\n"
    "    return -(G.T @ x.flatten(0, 1)), -G.sum(0), -(dlogits @ W)\n"
)


def run(command: list[str], cwd: Path, **env: str) -> str:
    base = {k: v for k, v in os.environ.items() if k not in LANGUAGE_VARIABLES}
    base |= {"PYTHONPATH": str(ROOT), "COLUMNS": "100", **env}
    out = subprocess.run(command, cwd=cwd, capture_output=True, env=base, timeout=900)
    return (out.stdout + out.stderr).decode("utf-8")


def catalog_english() -> set[str]:
    """The English of every Spanish catalog's messages: each stretch between placeholders of three words or more
    that its translation does not keep (a name like "LM head + weight decay" stays in both)."""
    stretches = set()
    for path in ROOT.glob("workshop/**/locale/es/LC_MESSAGES/*.po"):
        with path.open("rb") as po:
            for message in pofile.read_po(po):
                sources = message.id if isinstance(message.id, tuple) else (message.id,)
                translations = (
                    message.string if isinstance(message.string, tuple) else (message.string,)
                )
                for source in sources if message.id and any(translations) else ():
                    for stretch in PLACEHOLDER.split(source):
                        stretch = " ".join(stretch.split())
                        if len(re.findall(r"[A-Za-z]{2,}", stretch)) >= 3 and not any(
                            stretch in t for t in translations
                        ):
                            stretches.add(stretch)
    return stretches


CATALOG_ENGLISH = catalog_english()


def english_in(output: str) -> list[str]:
    found = style_lint.findings_in(output, "output", markdown=False)
    english = [f"{f.rule}: {f.text!r}" for f in found if f.rule in OUTPUT_RULES]
    joined = " ".join(output.split())  # a message wrapped at the terminal's width is still found
    return english + [f"a catalog's English: {s!r}" for s in sorted(CATALOG_ENGLISH) if s in joined]


def workshop(*args: str, cwd: Path, **env: str) -> str:
    return run([sys.executable, "-m", "workshop", *args, "--lang", "es"], cwd, **env)


@pytest.fixture(scope="module")
def learner(tmp_path_factory):
    """A learner's folder: `exercises init` of the autograd lab, linear_grads written wrong, then `check
    autograd`, all in Spanish."""
    home = tmp_path_factory.mktemp("learner")
    printed = workshop("exercises", "init", "--lab", "autograd", cwd=home)
    work = home / "my-work" / "autograd.py"
    stub = '    raise NotImplementedError("autograd.linear_grads")\n'
    work.write_text(work.read_text(encoding="utf-8").replace(stub, SIGN_FLIPPED), encoding="utf-8")
    printed += workshop("check", "autograd", "--device", "cpu", cwd=home)
    return home, printed


def test_the_english_detectors_catch_a_planted_english_line(learner):
    """The Spanish output with English planted in it: a sentence, then a status the catalog translates ("changed
    since last check") that has too few English function words for the lint."""
    _, printed = learner
    sentence = "the lab stopped before its checks ran"
    assert english_in(printed + f"\n  {sentence}\n") == [f"English sentence: {sentence!r}"]
    planted = "\n  changed since last check  autograd.linear_grads\n"
    assert english_in(printed + planted) == ["a catalog's English: 'changed since last check'"]


def test_check_autograd_in_spanish_prints_no_english(learner):
    _, printed = learner
    assert "sin empezar" in printed and "ejercicios superados: 0 de" in printed, printed
    assert "no superado  autograd.linear_grads" in printed and "el signo cambiado" in printed
    assert re.search(r"\bsuperado\b", printed)
    assert english_in(printed) == []


def test_grade_in_spanish_prints_and_writes_no_english(learner):
    home, _ = learner
    printed = workshop("grade", "results", "--device", "cpu", "--to", "grades", cwd=home)
    table = (home / "grades" / "grades.md").read_text(encoding="utf-8")
    assert "sin empezar" in table, printed
    assert english_in(printed) == [] and english_in(table) == []
    header = (home / "grades" / "grades.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    assert header[:2] == ["alumno", "ejercicios superados"]  # a count, never under a status word
    assert {"revisión de git", "árbol modificado", "dispositivo", "observaciones"} <= set(header)


def test_grade_where_no_sandbox_can_run_says_why_in_spanish(learner, tmp_path):
    """grade on a machine with neither docker nor bubblewrap (the image, where `docker compose run --rm test` runs
    this suite): its line on the sandbox it cannot use says why in Spanish, as every other line it prints."""
    home, _ = learner
    bare = tmp_path / "bin"  # a PATH with neither docker nor bwrap on it
    bare.mkdir()
    printed = workshop(
        "grade", "results", "--device", "cpu", "--to", "bare", cwd=home, PATH=str(bare)
    )
    assert (
        "docker no está instalado" in printed and "bubblewrap (bwrap) no está instalado" in printed
    ), printed
    assert english_in(printed) == []
    # the reason as the image printed it before it was translated: caught
    planted = printed.replace(
        "bubblewrap (bwrap) no está instalado", "bubblewrap (bwrap) is not installed"
    )
    assert english_in(planted) != []


def test_invoke_lab_dry_run_in_spanish_prints_no_english(tmp_path):
    pytest.importorskip("invoke", reason="invoke is not installed here")
    from tests.cli.test_tasks import FAKE_DOCKER, FAKE_NVIDIA_SMI

    for name, script in (("docker", FAKE_DOCKER), ("nvidia-smi", FAKE_NVIDIA_SMI)):
        (tmp_path / name).write_text(script)
        (tmp_path / name).chmod(0o755)
    command = [sys.executable, "-m", "invoke", "lab", "--dry-run", "--lang", "es"]
    printed = run(command, ROOT, PATH=str(tmp_path))
    assert "se ejecuta en la CPU" in printed, printed
    assert english_in(printed) == []
