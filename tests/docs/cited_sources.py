"""The files and names a theory text cites from PyTorch's source, found in the installed torch.

Each theory text ends with "Where this is in PyTorch's source": a list whose items name files (`c10/core/
DispatchKeySet.h`, `torch/_dynamo/guards.py`, a name relative to the item's previous path: `symbolic_convert.py`)
and, in other code spans, what to read in them (`computeDispatchKeySet`, `Engine::execute`). The torch wheel
ships the Python sources and the C++ headers (`torch/include/`), and torchgen ships `native_functions.yaml` and
`derivatives.yaml`; it does not ship the `.cpp` files. So a cited file must be in the wheel unless it is a `.cpp`
file, and each cited name must be in one of its item's shipped files: a function whose body is in a `.cpp` file is
found where its header declares it.
"""

from __future__ import annotations

import re
from pathlib import Path

import torch
import torchgen

from tests.support.doc_structure import section_items

SOURCES_HEADINGS = (
    "Where this is in PyTorch's source",
    "Dónde está esto en el código fuente de PyTorch",
)
PATH = re.compile(r"^[\w./*-]+(?:\.(?:h|cpp|py|yaml)|/)$")
ROOTS = (
    "c10/",
    "aten/",
    "torch/",
    "tools/",
)  # the top folders of pytorch/pytorch a full path starts with
TORCH = Path(torch.__file__).parent
PACKAGED = Path(torchgen.__file__).parent / "packaged"


def installed(path: str) -> Path | None:
    """Where the wheels put a file or folder of pytorch/pytorch's tree, or None when they do not ship it."""
    tail = path.removeprefix("aten/src/").removeprefix("tools/")
    for candidate in (
        TORCH / "include" / path,
        TORCH / "include" / tail,
        PACKAGED / tail,
        TORCH.parent / path,
    ):
        if candidate.exists():
            return candidate
    return None


def source_items(doc: Path) -> list[list[str]]:
    """The code spans of each list item of the text's sources section, in order."""
    items = section_items(doc.read_text(encoding="utf-8"), SOURCES_HEADINGS)
    return [[c.content for c in item if c.type == "code_inline"] for item in items]


def _resolve(spans: list[str]) -> tuple[list[str], list[Path], list[str]]:
    """(paths as written, resolved to full repository paths), the shipped files among them, and the names."""
    paths, names, folder = [], [], ""
    for span in spans:
        if not PATH.match(span):
            names.append(span)
            continue
        if span.startswith(ROOTS):  # a full path; the item's next relative names are in its folder
            folder = span if span.endswith("/") else span.rsplit("/", 1)[0] + "/"
            paths.append(span)
        else:
            paths.append(folder + span)
    shipped = [p for p in (installed(path) for path in paths) if p is not None and p.is_file()]
    return paths, shipped, names


def source_problems(doc: Path) -> list[str]:
    """Cited files the wheels do not ship (but .cpp files), and cited names none of the item's files holds."""
    items = source_items(doc)
    if not items:
        return [f"{doc.name}: no list of source files under {' / '.join(SOURCES_HEADINGS)}"]
    out = []
    for spans in items:
        paths, shipped, names = _resolve(spans)
        out += [
            f"{doc.name}: `{path}` is not in the torch {torch.__version__} wheel"
            for path in paths
            if installed(path) is None and not path.endswith(".cpp")
        ]
        texts = [file.read_text(encoding="utf-8", errors="replace") for file in shipped]
        for name in names:
            word = name.rsplit("::", 1)[-1]  # Engine::execute is declared as execute( in its class
            if texts and not any(word in text for text in texts):
                out.append(
                    f"{doc.name}: `{name}` is in none of {', '.join(p.name for p in shipped)}"
                )
    return out
