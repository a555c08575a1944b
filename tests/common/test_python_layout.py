# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The layout rules of python/ovs_daqring (Documentation/internals/
python.rst), read from the code's own syntax trees: no module over 1000
lines, no function over 150, no import circle (function-local imports
included), no import that runs up the floors (a library never imports an
entry point), no private name imported from another package."""

import ast
import os
from typing import Dict, List, Optional, Set, Tuple

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
PACKAGE = os.path.join(TOP, "python", "ovs_daqring")

MODULE_LINES_MAX = 1000
FUNCTION_LINES_MAX = 150

# The floors, from the bottom: a module may import from its own floor and
# below.  Modules of the package's top level not named here are floor 0.
FLOORS = {
    "daqctl": 1,
    "fabric": 2,
    "incast": 3,
    "metrics": 3,
    "bench": 4,
    "cmd": 5,
}


def modules() -> Dict[str, str]:
    """Every module of the package: dotted name -> path."""
    found = {}
    for d, _, files in os.walk(PACKAGE):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(d, f)
            rel = os.path.relpath(path, os.path.dirname(PACKAGE))
            name = rel[:-3].replace(os.sep, ".")
            if name.endswith(".__init__"):
                name = name[:-len(".__init__")]
            found[name] = path
    return found


def parse(path: str) -> ast.Module:
    with open(path, encoding="utf-8") as f:
        return ast.parse(f.read(), path)


def imports(name: str, path: str, tree: ast.Module,
            known: Set[str]) -> List[Tuple[str, Optional[str], int]]:
    """(module imported, name taken from it or None, line) for every
    import of the package's own modules in TREE, anywhere in it."""
    package = name if path.endswith("__init__.py") else \
        name.rpartition(".")[0]
    found: List[Tuple[str, Optional[str], int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in known:
                    found.append((a.name, None, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                mod = base + ("." + node.module if node.module else "")
            else:
                mod = node.module or ""
            if not (mod == "ovs_daqring" or mod.startswith("ovs_daqring.")):
                continue
            for a in node.names:
                sub = mod + "." + a.name
                if sub in known:
                    found.append((sub, None, node.lineno))
                elif mod in known:
                    found.append((mod, a.name, node.lineno))
    return found


def floor(name: str) -> int:
    parts = name.split(".")
    return FLOORS.get(parts[1], 0) if len(parts) > 1 else 0


def package_of(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 2 else ""


def graph() -> Tuple[Dict[str, List[Tuple[str, Optional[str], int]]],
                     Dict[str, str]]:
    mods = modules()
    known = set(mods)
    return ({n: imports(n, p, parse(p), known) for n, p in mods.items()},
            mods)


def test_module_lengths() -> None:
    long = []
    for name, path in sorted(modules().items()):
        with open(path, encoding="utf-8") as f:
            n = sum(1 for _ in f)
        if n > MODULE_LINES_MAX:
            long.append("%s: %d lines" % (name, n))
    assert not long, "modules over %d lines: %s" % (MODULE_LINES_MAX,
                                                    ", ".join(long))


def test_function_lengths() -> None:
    long = []
    for name, path in sorted(modules().items()):
        for node in ast.walk(parse(path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > FUNCTION_LINES_MAX:
                    long.append("%s:%d %s(): %d lines"
                                % (name, node.lineno, node.name, n))
    assert not long, "functions over %d lines: %s" % (FUNCTION_LINES_MAX,
                                                      "; ".join(long))


def test_no_import_runs_up() -> None:
    up = []
    edges, _ = graph()
    for name, found in sorted(edges.items()):
        for mod, _, line in found:
            if floor(mod) > floor(name):
                up.append("%s:%d imports %s" % (name, line, mod))
    assert not up, "imports that run up the floors: %s" % "; ".join(up)


def test_no_private_name_across_packages() -> None:
    private = []
    edges, _ = graph()
    for name, found in sorted(edges.items()):
        for mod, taken, line in found:
            if (taken and taken.startswith("_")
                    and package_of(mod) != package_of(name)):
                private.append("%s:%d takes %s from %s"
                               % (name, line, taken, mod))
    assert not private, "private names across packages: %s" % \
        "; ".join(private)


def test_no_import_circle() -> None:
    edges, _ = graph()
    succ = {n: sorted({m for m, _, _ in found if m != n})
            for n, found in edges.items()}
    # A module's package __init__ is imported with it: an arrow to a
    # package's __init__ from inside that package is not a circle.
    for n in succ:
        succ[n] = [m for m in succ[n] if not n.startswith(m + ".")]
    state: Dict[str, int] = {}
    stack: List[str] = []
    circles: List[str] = []

    def visit(n: str) -> None:
        state[n] = 1
        stack.append(n)
        for m in succ.get(n, []):
            if state.get(m) == 1:
                circles.append(" -> ".join(stack[stack.index(m):] + [m]))
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(succ):
        if n not in state:
            visit(n)
    assert not circles, "import circles: %s" % "; ".join(circles)
