"""i18n.say: the shell scripts' messages, from the package's catalog in the environment's language, their
{NAME}s filled in; an unknown key is a usage line and exit status 2, never a message."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from workshop.i18n import say


def say_in(lang: str, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "WORKSHOP_LANG": lang}
    cmd = [sys.executable, "-m", "workshop.i18n.say", *argv]
    return subprocess.run(cmd, env=env, capture_output=True, text=True)


def test_a_message_with_its_names_filled_in(capsys, monkeypatch):
    monkeypatch.setenv("WORKSHOP_LANG", "en")
    assert say.main(["session-testing", "run=results/r1"]) == 0
    assert capsys.readouterr().out == "workshop-session: testing the run in results/r1\n"


def test_the_script_prints_it_in_the_environments_language():
    english, spanish = (
        say_in("en", "session-testing", "run=r1"),
        say_in("es", "session-testing", "run=r1"),
    )
    assert english.stdout == "workshop-session: testing the run in r1\n"
    assert spanish.returncode == 0 and "r1" in spanish.stdout and spanish.stdout != english.stdout


@pytest.mark.parametrize("argv", [[], ["no-such-key"]])
def test_an_unknown_key_is_a_usage_line(argv, capsys):
    assert say.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("usage: python -m workshop.i18n.say {session-interrupted,")
