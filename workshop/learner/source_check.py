"""What the lab's process reads in the learner's file before any of it runs: the harness's own evidence.

The learner's <lab>.py is text to the lab's process: it is parsed here (never imported) and checked for
- imports: only those of the file's header (the imports `exercises init` wrote): `import X` allows module X,
  `from X import a` allows name a of X, nothing else;
- reach past the exercise's interface: eval/exec/compile/__import__/getattr and friends, the attributes that lead
  to other modules or to the interpreter's insides (`__globals__`, `__subclasses__`, `sys`, `modules`, `_C`, ...);
- where each graded name comes from: defined in the file (def, class, assignment), not imported (a learner
  function that is the workshop's own reference is refused);
- for an exercise graded without autograd (autograd_watch.py states what that forbids), the names of autograd in
  the function and in every module-level definition it uses.
A name built at run time escapes a reading of the text: these checks stop a shortcut taken in plain sight and
the honest mistake; the worker's process boundary is what stops the rest.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

# Names that hand out other modules, the interpreter's state, or dynamic attribute access.
REACHING_NAMES = frozenset(
    [
        "eval",
        "exec",
        "compile",
        "__import__",
        "globals",
        "vars",
        "locals",
        "getattr",
        "setattr",
        "delattr",
        "open",
        "breakpoint",
        "input",
        "memoryview",
        "__builtins__",
        "__loader__",
        "__spec__",
    ]
)
REACHING_ATTRIBUTES = frozenset(
    [
        "__globals__",
        "__builtins__",
        "__subclasses__",
        "__bases__",
        "__base__",
        "__mro__",
        "__class__",
        "__dict__",
        "__code__",
        "__closure__",
        "__func__",
        "__self__",
        "__module__",
        "__getattribute__",
        "__import__",
        "__loader__",
        "__spec__",
        "__wrapped__",
        "__reduce__",
        "__reduce_ex__",
        "__setattr__",
        "__delattr__",
        "__traceback__",
        "tb_frame",
        "tb_next",
        "f_back",
        "f_globals",
        "f_locals",
        "f_builtins",
        "f_code",
        "gi_frame",
        "cr_frame",
        "ag_frame",
        "sys",
        "os",
        "modules",
        "builtins",
        "importlib",
        "ctypes",
        "subprocess",
        "multiprocessing",
        "threading",
        "_thread",
        "signal",
        "socket",
        "shutil",
        "_C",
        "_dynamo",
    ]
)
# Autograd as source text spells it, an attribute or keyword (autograd_watch.py, rules 1-2; rule 3: any
# attribute holding "backward").
AUTOGRAD_NAMES = frozenset(
    [
        "autograd",
        "func",
        "functorch",
        "vjp",
        "jvp",
        "jacrev",
        "jacfwd",
        "hessian",
        "requires_grad_",
        "enable_grad",
        "set_grad_enabled",
        "grad",
        "grad_fn",
        "requires_grad",
    ]
)


@dataclass(frozen=True)
class Finding:
    line: int
    what: str  # the construct, as the file writes it: "import math", "eval", ".__globals__", "torch.func"


def imports(tree: ast.AST) -> list[tuple[int, str, str | None]]:
    """(line, module, name) of each import: name None for `import module`; a relative module starts with dots."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            found += [(node.lineno, module, alias.name) for alias in node.names]
    return found


def allowed_imports(header: str) -> set[tuple[str, str | None]]:
    """(module, None) for each `import module`, (module, name) for each `from module import name`."""
    return {(module, name) for _, module, name in imports(ast.parse(header)) if module[0] != "."}


def file_findings(source: str, header: str) -> list[Finding]:
    """Everything in the file that keeps it from being run (SyntaxError propagates: the caller says where)."""
    tree, allowed = ast.parse(source), allowed_imports(header)
    found = [
        Finding(line, f"import {module}" if name is None else f"from {module} import {name}")
        for line, module, name in imports(tree)
        if (module, name) not in allowed
    ]
    # names that reach past the exercise, and attributes that do
    found += [
        Finding(node.lineno, node.id)
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and node.id in REACHING_NAMES
    ]
    found += [
        Finding(node.lineno, f".{node.attr}")
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in REACHING_ATTRIBUTES
    ]
    return sorted(set(found), key=lambda f: (f.line, f.what))


def top_level(tree: ast.Module) -> dict[str, list[ast.AST]]:
    """Module-level name -> the statements that bind it (def, class, assignment, import), in the file's order: the
    learner's file's here, a reference's module's in the learner edition (grading/edition.py)."""
    bound: dict[str, list[ast.AST]] = {}
    for node in tree.body:
        names = []
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names = [node.name]
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = [(alias.asname or alias.name).split(".")[0] for alias in node.names]
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [
                n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)
            ]
        for name in names:
            bound.setdefault(name, []).append(node)
    return bound


def imported_as(source: str, name: str) -> ast.AST | None:
    """The import statement that binds module-level `name`, when that is how the file defines it."""
    statements = top_level(ast.parse(source)).get(name, [])
    return next((s for s in statements if isinstance(s, ast.Import | ast.ImportFrom)), None)


def uses(source: str, name: str) -> list[ast.AST]:
    """The module-level statements `name` depends on: its own, and transitively every module-level name they
    mention (a helper function, a constant computed at import)."""
    bound = top_level(ast.parse(source))
    todo, seen = [name], set()
    while todo:
        current = todo.pop()
        if current in bound and current not in seen:
            seen.add(current)
            todo += [n.id for s in bound[current] for n in ast.walk(s) if isinstance(n, ast.Name)]
    # each statement once (`a, b = ...` binds two names)
    return list(dict.fromkeys(s for current in seen for s in bound[current]))


def autograd_uses(source: str, name: str) -> list[Finding]:
    """The spelled uses of autograd (rules 1-3 of autograd_watch.py) in `name` and what it uses."""
    found = set()
    for statement in uses(source, name):
        if isinstance(statement, ast.Import | ast.ImportFrom):
            continue  # the header's imports (Node, for the engine exercises) are not a use
        for node in ast.walk(statement):
            # attributes and keywords only: a learner's own variable may well be called `grad`
            word = (
                node.attr
                if isinstance(node, ast.Attribute)
                else node.arg
                if isinstance(node, ast.keyword)
                else None
            )
            if word and (word in AUTOGRAD_NAMES or "backward" in word):
                found.add(Finding(node.lineno, word))
    return sorted(found, key=lambda f: (f.line, f.what))
