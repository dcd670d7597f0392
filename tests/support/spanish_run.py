"""Run a lab in Spanish through its process's own entry point (harness.child, what `python -m workshop run LAB
--lang es` starts for each lab), in this process, so that a test may first make the
lab cheaper (fewer demos, fewer replayed steps) with monkeypatch. The language in use is given back after, and
WORKSHOP_LANG, which the runner sets for the processes a lab starts: the later tests' runs stay English."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.support import lab_process
from workshop import i18n


def run_in_spanish(lab: str, out: Path) -> dict:
    """The lab's result.json after a Spanish run into `out` (created)."""
    out.mkdir(parents=True, exist_ok=True)
    before, environment = i18n.language(), os.environ.get("WORKSHOP_LANG")
    try:
        lab_process.run_here(lab, out, lang="es")
    finally:
        i18n.set_language(before)
        if environment is None:
            os.environ.pop("WORKSHOP_LANG", None)
        else:
            os.environ["WORKSHOP_LANG"] = environment
    return json.loads((out / "result.json").read_text())
