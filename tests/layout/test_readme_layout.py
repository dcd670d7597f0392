"""The README's Layout (and the Spanish README's, the same block) matches the tree: every module and folder of
the package's core and of the developers' tools/ is named there, and every core module it names exists."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORE = (
    "workshop",
    "workshop/cli",
    "workshop/foundations",
    "workshop/declarations",
    "workshop/learner",
    "workshop/harness",
    "workshop/grading",
    "workshop/i18n",
    "tools",
)
PYTHON_OWN = {"__pycache__", "__init__.py", "__main__.py", "locale"}
HEADINGS = {"README.md": "## Layout", "README.es.md": "## Estructura del repositorio"}


def layout_block(readme: str) -> str:
    """The code block of the README's Layout section."""
    text = (ROOT / readme).read_text(encoding="utf-8")
    section = text[text.index(HEADINGS[readme]) :]
    return section.split("```")[1]


def unnamed(block: str, folders=CORE, root: Path = ROOT) -> list[str]:
    words = set(re.findall(r"[\w.]+", block))
    return [
        f"{folder}/{p.name}"
        for folder in folders
        for p in sorted((root / folder).iterdir())
        if p.name not in PYTHON_OWN
        and p.name not in words
        and p.name.removesuffix(".py") not in words
    ]


def named_but_gone(block: str, root: Path = ROOT) -> list[str]:
    """Core modules the block names (`name.py` under a core folder's line) that the tree lacks."""
    gone, folder = [], None
    for line in block.splitlines():
        head = re.match(
            r"  (\w+)(/|\.py)\s", line
        )  # a folder of the package, or a module at its top
        if head or not line.startswith(" "):
            folder = (
                ("workshop/" + head.group(1) if head[2] == "/" else "workshop") if head else None
            )
        if folder in CORE:
            gone += [
                f"{folder}/{m}"
                for m in re.findall(r"\b(\w+\.py)\b", line)
                if not (root / folder / m).exists()
            ]
    return gone


@pytest.mark.parametrize("readme", sorted(HEADINGS))
def test_the_layout_names_every_core_module_and_nothing_gone(readme):
    block = layout_block(readme)
    assert unnamed(block) == []
    assert named_but_gone(block) == []


def test_a_module_left_out_or_gone_is_caught(tmp_path):
    """The planted case: a module the block does not name, and one it names that was renamed."""
    (tmp_path / "workshop" / "harness").mkdir(parents=True)
    for name in ("runner.py", "newcomer.py", "__init__.py"):
        (tmp_path / "workshop" / "harness" / name).write_text("")
    block = "workshop/   the package\n  harness/           runner.py (the parent); retention.py (old runs)\n"
    assert unnamed(block, ("workshop/harness",), tmp_path) == ["workshop/harness/newcomer.py"]
    assert named_but_gone(block, tmp_path) == ["workshop/harness/retention.py"]
