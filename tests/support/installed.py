"""Whether `workshop` imports in a Python started outside the repository, as the tests' own processes are: the
README's `pip install --no-deps --no-build-isolation -e .` makes it so (a bare checkout imports it only from its
root, where Python puts the current folder on the path)."""

from __future__ import annotations

import subprocess
import sys
import tempfile

NOT_INSTALLED = (
    "the workshop package does not import outside the repository: install it first, from the repository root, "
    "`pip install --no-deps --no-build-isolation -e .` (README: The two commands)"
)


def importable_elsewhere(python: tuple[str, ...] = (sys.executable,)) -> bool:
    """`import workshop` in `python`, started in an empty folder with this process's environment."""
    with tempfile.TemporaryDirectory(prefix="workshop-import-") as elsewhere:
        done = subprocess.run(
            [*python, "-c", "import workshop"], cwd=elsewhere, capture_output=True
        )
    return done.returncode == 0
